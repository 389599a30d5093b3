//! The fake's own tests: what a test scripts is what the typed wrappers see.

use super::*;
use crate::sys::bpf::{self, LogRequest, ProgLoad};
use crate::sys::perf_event;
use sluice_core::perf::abi::{map_type, perf_type, prog_type, PERF_FLAG_FD_CLOEXEC};
use std::os::fd::AsFd;

fn prog<'a>(insns: &'a [[u8; 8]]) -> ProgLoad<'a> {
    ProgLoad {
        prog_type: prog_type::TRACEPOINT,
        insns,
        license: c"GPL",
        kern_version: 0,
        name: [0; 16],
        prog_flags: 0,
        expected_attach_type: 7,
        attach_btf_id: 0,
        attach_btf_obj: None,
        btf: None,
    }
}

/// `exit` with r0 = 0: `mov r0, 0; exit`.
const INSNS: [[u8; 8]; 2] = [[0xb7, 0, 0, 0, 0, 0, 0, 0], [0x95, 0, 0, 0, 0, 0, 0, 0]];

#[test]
fn eperm_reaches_map_create() {
    let fake = install(|call| match call {
        Call::Bpf(b) => {
            let a = b.map_create().unwrap();
            assert_eq!(
                (a.map_type, a.key_size, a.value_size),
                (map_type::HASH, 4, 8)
            );
            Err(Errno::PERM)
        }
        other => panic!("unexpected {other:?}"),
    });
    let attr = MapCreateAttr {
        map_type: map_type::HASH,
        key_size: 4,
        value_size: 8,
        max_entries: 1,
        ..MapCreateAttr::default()
    };
    assert_eq!(bpf::map_create(&attr).unwrap_err(), Errno::PERM);
    assert_eq!(fake.seen(), [Seen::Bpf(Cmd::MapCreate)]);
}

#[test]
fn fd_answers_become_owned_fds() {
    let (reply, watch) = watched_fd();
    let mut reply = Some(reply);
    let fake = install(move |_| Ok(reply.take().unwrap()));
    let attr = MapCreateAttr {
        map_type: map_type::ARRAY,
        key_size: 4,
        value_size: 4,
        max_entries: 1,
        ..MapCreateAttr::default()
    };
    let map = bpf::map_create(&attr).unwrap();
    assert_eq!(map.as_fd().as_raw_fd(), watch.raw());
    assert!(!watch.is_closed());
    drop(map);
    assert!(watch.is_closed());
    assert_eq!(fake.count(), 1);
}

/// The kernel's answer to a log too small: as much as fits, NUL-terminated,
/// `log_true_size` set, `ENOSPC`.
#[test]
fn prog_load_fills_the_log_and_says_enospc() {
    let log = b"0: (b7) r0 = 0\n1: (95) exit\nprocessed 2 insns\n";
    let fake = install(move |call| match call {
        Call::Bpf(mut b) => {
            let a = b.prog_load().unwrap();
            assert_eq!(a.prog_type, prog_type::TRACEPOINT);
            assert_eq!(a.expected_attach_type, 7);
            assert_eq!((a.log_level, a.log_size, a.insn_cnt), (2, 16, 2));
            assert_eq!(a.attach_btf_id, 0);
            assert!(!b.write_log(log));
            Err(Errno::NOSPC)
        }
        other => panic!("unexpected {other:?}"),
    });
    let mut buf = [0xffu8; 16];
    let (r, true_size) = bpf::prog_load(
        &prog(&INSNS),
        Some(LogRequest {
            buf: &mut buf,
            level: 2,
        }),
    );
    assert_eq!(r.unwrap_err(), Errno::NOSPC);
    assert_eq!(true_size as usize, log.len() + 1);
    assert_eq!(&buf[..15], &log[..15]);
    assert_eq!(buf[15], 0);
    assert_eq!(fake.count_of(|s| *s == Seen::Bpf(Cmd::ProgLoad)), 1);
}

#[test]
fn prog_info_is_written_back() {
    let fake = install(|call| match call {
        Call::Bpf(mut b) => {
            assert_eq!(b.obj_info().unwrap().bpf_fd, 0);
            b.write_info(&ProgInfoRaw {
                id: 42,
                prog_type: prog_type::KPROBE,
                ..ProgInfoRaw::default()
            });
            Ok(Reply::Value(0))
        }
        other => panic!("unexpected {other:?}"),
    });
    // SAFETY: fd 0 is only borrowed for the faked call, which never reaches it.
    let stdin = unsafe { std::os::fd::BorrowedFd::borrow_raw(0) };
    let info = bpf::prog_info(stdin).unwrap();
    assert_eq!((info.id, info.prog_type), (42, prog_type::KPROBE));
    assert_eq!(fake.seen(), [Seen::Bpf(Cmd::ObjGetInfoByFd)]);
}

/// The cpu argument (and the others) as the wrapper passed them, and a counter.
#[test]
fn perf_event_open_arguments_are_visible() {
    let fake = install(|call| match call {
        Call::PerfEventOpen(o) => {
            assert_eq!((o.attr.type_, o.attr.config), (perf_type::TRACEPOINT, 77));
            assert_eq!((o.pid, o.group_fd, o.flags), (-1, -1, PERF_FLAG_FD_CLOEXEC));
            if o.cpu == 3 {
                Err(Errno::NODEV)
            } else {
                Ok(fd())
            }
        }
        Call::PerfIoctl(PerfIoctl {
            request: Request::Id,
            ..
        }) => Ok(Reply::Value(9)),
        Call::PerfIoctl(_) => Ok(Reply::Value(0)),
        other => panic!("unexpected {other:?}"),
    });
    let mut attr = PerfEventAttr::new(perf_type::TRACEPOINT, 77);
    let ev = perf_event::perf_event_open(&mut attr, -1, 2, None, PERF_FLAG_FD_CLOEXEC).unwrap();
    let e = perf_event::perf_event_open(&mut attr, -1, 3, None, PERF_FLAG_FD_CLOEXEC);
    assert_eq!(e.unwrap_err(), Errno::NODEV);
    perf_event::enable(ev.as_fd()).unwrap();
    assert_eq!(perf_event::id(ev.as_fd()).unwrap(), 9);
    perf_event::set_output(ev.as_fd(), ev.as_fd()).unwrap();
    let raw = ev.as_raw_fd();
    assert_eq!(
        fake.seen(),
        [
            Seen::PerfEventOpen { pid: -1, cpu: 2 },
            Seen::PerfEventOpen { pid: -1, cpu: 3 },
            Seen::PerfIoctl(PerfIoctl {
                fd: raw,
                request: Request::Enable
            }),
            Seen::PerfIoctl(PerfIoctl {
                fd: raw,
                request: Request::Id
            }),
            Seen::PerfIoctl(PerfIoctl {
                fd: raw,
                request: Request::SetOutput { target: raw }
            }),
        ]
    );
    assert_eq!(fake.count(), 5);
}

/// Without a fake, or after it dropped, calls reach the kernel again.
#[test]
fn uninstalled_means_the_kernel() {
    drop(install(|_| Err(Errno::PERM)));
    assert!(!installed());
    let f = std::fs::File::open("/dev/null").unwrap();
    assert_eq!(perf_event::enable(f.as_fd()).unwrap_err(), Errno::NOTTY);
}

#[test]
#[should_panic(expected = "answer with Reply::Fd")]
fn an_fd_call_needs_a_real_fd() {
    let _fake = install(|_| Ok(Reply::Value(3)));
    let attr = MapCreateAttr::default();
    let _ = bpf::map_create(&attr);
}

/// `PERF_EVENT_IOC_QUERY_BPF`: the ids the fake writes come back, at most as many as the
/// kernel says there are; an errno passes through.
#[test]
fn query_bpf_returns_the_ids_written() {
    let fake = install(|call| match call {
        Call::QueryBpf { ids, .. } => {
            assert_eq!(ids.len(), perf_event::QUERY_BPF_MAX);
            ids[0] = 41;
            ids[1] = 7;
            Ok(Reply::Value(2))
        }
        other => panic!("unexpected {other:?}"),
    });
    let f = std::fs::File::open("/dev/null").unwrap();
    assert_eq!(perf_event::query_bpf(f.as_fd()).unwrap(), (vec![41, 7], 2));
    assert_eq!(
        fake.seen(),
        [Seen::PerfIoctl(PerfIoctl {
            fd: f.as_raw_fd(),
            request: Request::QueryBpf
        })]
    );
    drop(fake);
    let _fake = install(|_| Err(Errno::PERM));
    assert_eq!(perf_event::query_bpf(f.as_fd()).unwrap_err(), Errno::PERM);
}

/// More programs than room: the ids listed, and the full count.
#[test]
fn query_bpf_caps_the_list_and_keeps_the_count() {
    let _fake = install(|call| match call {
        Call::QueryBpf { ids, .. } => {
            ids.iter_mut().zip(1..).for_each(|(s, v)| *s = v);
            Ok(Reply::Value(70))
        }
        other => panic!("unexpected {other:?}"),
    });
    let f = std::fs::File::open("/dev/null").unwrap();
    let (ids, total) = perf_event::query_bpf(f.as_fd()).unwrap();
    assert_eq!(total, 70);
    assert_eq!(ids, (1..=64).collect::<Vec<u32>>());
}

/// The lost count of an event, and `BPF_PROG_GET_FD_BY_ID` with the id in its attr.
#[test]
fn read_lost_and_prog_get_fd_by_id() {
    let fake = install(|call| match call {
        Call::PerfIoctl(PerfIoctl {
            request: Request::ReadLost,
            ..
        }) => Ok(Reply::Value(5221)),
        Call::Bpf(b) if b.cmd == Cmd::Other(13) => {
            assert_eq!(&b.attr_bytes()[..4], &77u32.to_ne_bytes());
            assert!(b.attr_bytes()[4..].iter().all(|&x| x == 0));
            Ok(fd())
        }
        other => panic!("unexpected {other:?}"),
    });
    let f = std::fs::File::open("/dev/null").unwrap();
    assert_eq!(perf_event::read_lost(f.as_fd()).unwrap(), 5221);
    assert!(bpf::prog_get_fd_by_id(77).is_ok());
    assert_eq!(fake.count(), 2);
    drop(fake);
    let _fake = install(|_| Err(Errno::NOENT));
    assert_eq!(bpf::prog_get_fd_by_id(78).unwrap_err(), Errno::NOENT);
}
