//! Per-CPU open, attach and release on the syscall fake ([`crate::sys::fake`]): no kernel.

use crate::attach::{open_bpf_output, open_tracepoint, Error, EventOptions, Scope};
use crate::load::{Map, MapSpec};
use crate::ring::RingConfig;
use crate::sys::fake::{self, Call, Cmd, FdWatch, PerfIoctl, Reply, Request, Seen};
use rustix::io::Errno;
use sluice_core::perf::abi::{
    attr_flags, map_type, perf_type, PerfEventAttr, PERF_COUNT_SW_BPF_OUTPUT, PERF_FLAG_FD_CLOEXEC,
};
use std::cell::RefCell;
use std::error::Error as _;
use std::os::fd::{AsFd, AsRawFd};
use std::rc::Rc;

/// What the fake handed out and saw.
#[derive(Default)]
struct Kernel {
    /// `(cpu, pid, attr)` of each open, and the watch on the fd it returned.
    opened: Vec<(i32, i32, PerfEventAttr, FdWatch)>,
    /// At each DISABLE: whether some opened fd was closed already.
    closed_before_disable: bool,
}

type Shared = Rc<RefCell<Kernel>>;

/// A fake kernel: perf_event_open answers `open(cpu)` (a watched fd when `None`),
/// SET_BPF answers `set_bpf(index of the event's fd among the opened)`, other ioctls 0.
fn fake_kernel(
    open: impl Fn(i32) -> Option<Errno> + 'static,
    set_bpf: impl Fn(usize) -> Option<Errno> + 'static,
) -> (fake::Fake, Shared) {
    let k: Shared = Rc::default();
    let kk = Rc::clone(&k);
    let f = fake::install(move |call| match call {
        Call::PerfEventOpen(o) => {
            if let Some(e) = open(o.cpu) {
                return Err(e);
            }
            assert_eq!(o.flags, PERF_FLAG_FD_CLOEXEC);
            let (reply, watch) = fake::watched_fd();
            kk.borrow_mut().opened.push((o.cpu, o.pid, *o.attr, watch));
            Ok(reply)
        }
        Call::PerfIoctl(PerfIoctl { fd, request }) => {
            let mut k = kk.borrow_mut();
            match request {
                Request::SetBpf { .. } => {
                    let i = k.opened.iter().position(|o| o.3.raw() == fd).unwrap();
                    if let Some(e) = set_bpf(i) {
                        return Err(e);
                    }
                }
                Request::Disable if k.opened.iter().any(|o| o.3.is_closed()) => {
                    k.closed_before_disable = true;
                }
                _ => {}
            }
            Ok(Reply::Value(0))
        }
        other => panic!("unexpected {other:?}"),
    });
    (f, k)
}

fn prog() -> std::fs::File {
    std::fs::File::open("/dev/null").unwrap()
}

/// One event per CPU asked for, each with the CPU's number, every task, the
/// tracepoint's id, disabled, one sample per hit.
#[test]
fn opens_one_event_per_cpu() {
    let (fake, k) = fake_kernel(|_| None, |_| None);
    let events = open_tracepoint(
        "sched:sched_switch",
        316,
        &[0, 2, 5],
        &EventOptions::default(),
    )
    .unwrap();
    let cpus: Vec<u32> = events.events().iter().map(|e| e.cpu).collect();
    assert_eq!(cpus, [0, 2, 5]);
    for (cpu, pid, attr, _) in &k.borrow().opened {
        assert!([0, 2, 5].contains(cpu));
        assert_eq!(*pid, -1);
        assert_eq!((attr.type_, attr.config), (perf_type::TRACEPOINT, 316));
        assert_eq!(attr.sample_period, 1);
        assert_ne!(attr.flags & attr_flags::DISABLED, 0);
        assert_eq!(attr.flags & attr_flags::INHERIT, 0);
    }
    assert!(events.anchor().is_none());
    assert_eq!(
        fake.seen(),
        [
            Seen::PerfEventOpen { pid: -1, cpu: 0 },
            Seen::PerfEventOpen { pid: -1, cpu: 2 },
            Seen::PerfEventOpen { pid: -1, cpu: 5 },
        ]
    );
    drop(events);
    let k = k.borrow();
    assert!(k.opened.iter().all(|o| o.3.is_closed()));
    assert!(!k.closed_before_disable);
    // Dropping disabled each event once.
    assert_eq!(
        fake.count_of(|s| matches!(
            s,
            Seen::PerfIoctl(PerfIoctl {
                request: Request::Disable,
                ..
            })
        )),
        3
    );
}

/// EPERM or EACCES on the first CPU (`perf_event_paranoid`, no `CAP_PERFMON`): the open
/// error naming `perf_event_open`, the event and the CPU, with what it needs; the errno
/// is its source; nothing else is opened.
#[test]
fn eperm_on_perf_event_open_is_the_permission_error() {
    for errno in [Errno::PERM, Errno::ACCESS] {
        let (fake, k) = fake_kernel(move |_| Some(errno), |_| None);
        let e = open_tracepoint("sched:sched_switch", 316, &[0, 1], &EventOptions::default())
            .unwrap_err();
        assert!(
            matches!(&e, Error::Open { what, cpu: 0, errno: got }
                if what == "sched:sched_switch" && *got == errno),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "perf_event_open of sched:sched_switch on CPU 0: {errno} (needs root, or \
                 CAP_PERFMON and kernel.perf_event_paranoid <= -1 for system-wide events)"
            )
        );
        let source = e.source().and_then(|s| s.downcast_ref::<Errno>());
        assert_eq!(source, Some(&errno));
        assert_eq!(fake.seen(), [Seen::PerfEventOpen { pid: -1, cpu: 0 }]);
        assert!(k.borrow().opened.is_empty());
    }
    // Another refusal gets no such hint.
    let (_fake, _k) = fake_kernel(|_| Some(Errno::NOENT), |_| None);
    let e = open_tracepoint("sched:sched_switch", 316, &[0], &EventOptions::default()).unwrap_err();
    assert!(!e.to_string().contains("perf_event_paranoid"), "{e}");
}

/// The same for the bpf-output events of a perf event array: the open error names the
/// map, and no event fd is stored in it.
#[test]
fn eperm_on_a_bpf_output_event_names_the_map() {
    let fake = fake::install(|call| match call {
        Call::Bpf(b) if b.cmd == Cmd::MapCreate => Ok(fake::fd()),
        Call::PerfEventOpen(o) => {
            assert_eq!(
                (o.attr.type_, o.attr.config, o.pid),
                (perf_type::SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT, -1)
            );
            Err(Errno::PERM)
        }
        other => panic!("unexpected {other:?}"),
    });
    let map = Map::create(
        &MapSpec {
            name: "events".into(),
            map_type: map_type::PERF_EVENT_ARRAY,
            key_size: 4,
            value_size: 4,
            max_entries: 4,
            map_flags: 0,
        },
        None,
    )
    .unwrap();
    let e = open_bpf_output(&map, &[2, 3], &RingConfig::default()).unwrap_err();
    assert!(
        matches!(&e, Error::Open { what, cpu: 2, errno: Errno::PERM }
            if what == "bpf-output of map 'events'"),
        "{e:?}"
    );
    assert!(e.to_string().contains("perf_event_paranoid"), "{e}");
    assert_eq!(
        fake.seen(),
        [
            Seen::Bpf(Cmd::MapCreate),
            Seen::PerfEventOpen { pid: -1, cpu: 2 }
        ]
    );
}

/// A refusal on the second CPU names that CPU, and the first CPU's event is
/// disabled and closed before the error returns.
#[test]
fn a_refused_second_cpu_releases_the_first() {
    for errno in [Errno::EXIST, Errno::BUSY] {
        let (fake, k) = fake_kernel(move |cpu| (cpu == 3).then_some(errno), |_| None);
        let e = open_tracepoint(
            "syscalls:sys_enter_openat",
            9,
            &[1, 3],
            &EventOptions::default(),
        )
        .unwrap_err();
        assert!(
            matches!(&e, Error::Open { what, cpu: 3, errno: got }
                if what == "syscalls:sys_enter_openat" && *got == errno),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!("perf_event_open of syscalls:sys_enter_openat on CPU 3: {errno}")
        );
        let k = k.borrow();
        assert_eq!(k.opened.len(), 1);
        assert!(k.opened[0].3.is_closed(), "CPU 1's event leaked");
        let first = k.opened[0].3.raw();
        assert_eq!(
            fake.seen(),
            [
                Seen::PerfEventOpen { pid: -1, cpu: 1 },
                Seen::PerfEventOpen { pid: -1, cpu: 3 },
                Seen::PerfIoctl(PerfIoctl {
                    fd: first,
                    request: Request::Disable
                }),
            ]
        );
    }
}

/// `EEXIST` from the second event on is the program already on the tracepoint's list.
#[test]
fn eexist_after_the_first_cpu_is_expected() {
    let (fake, _k) = fake_kernel(|_| None, |i| (i > 0).then_some(Errno::EXIST));
    let events = open_tracepoint(
        "sched:sched_switch",
        316,
        &[0, 1, 2],
        &EventOptions::default(),
    )
    .unwrap();
    let p = prog();
    events.set_bpf("on_switch", p.as_fd()).unwrap();
    let prog_fd = p.as_raw_fd();
    let set: Vec<Seen> = fake
        .seen()
        .into_iter()
        .filter(|s| {
            matches!(
                s,
                Seen::PerfIoctl(PerfIoctl {
                    request: Request::SetBpf { .. },
                    ..
                })
            )
        })
        .collect();
    assert_eq!(set.len(), 3);
    assert!(set.iter().all(|s| matches!(
        s,
        Seen::PerfIoctl(PerfIoctl { request: Request::SetBpf { prog }, .. }) if *prog == prog_fd
    )));
}

/// Any other refusal on the second CPU, or `EEXIST` on the first, is an error naming
/// the CPU; the events are all still released in order.
#[test]
fn set_bpf_refusals_name_the_cpu() {
    for (bad, errno, cpu) in [
        (1, Errno::BUSY, 4),
        (0, Errno::EXIST, 2),
        (1, Errno::INVAL, 4),
    ] {
        let (_fake, k) = fake_kernel(|_| None, move |i| (i == bad).then_some(errno));
        let events =
            open_tracepoint("sched:sched_switch", 316, &[2, 4], &EventOptions::default()).unwrap();
        let p = prog();
        let e = events.set_bpf("on_switch", p.as_fd()).unwrap_err();
        assert!(
            matches!(&e, Error::SetBpf { program, cpu: c, errno: got, .. }
                if program == "on_switch" && *c == cpu && *got == errno),
            "{e:?}"
        );
        let msg = e.to_string();
        assert!(msg.contains(&format!("(CPU {cpu})")), "{msg}");
        assert_eq!(
            msg.contains("wrong program type"),
            errno == Errno::INVAL,
            "{msg}"
        );
        drop(events);
        let k = k.borrow();
        assert!(k.opened.iter().all(|o| o.3.is_closed()));
        assert!(!k.closed_before_disable);
    }
}

/// With `inherit` the program rides one extra event (same task, any CPU, no inherit),
/// and only that one gets SET_BPF.
#[test]
fn inherited_events_leave_the_program_to_the_anchor() {
    let (fake, k) = fake_kernel(|_| None, |_| None);
    let opts = EventOptions {
        scope: Scope::Task {
            pid: 4321,
            on_exec: true,
        },
        ..EventOptions::default()
    };
    let events = open_tracepoint("sched:sched_switch", 316, &[0, 1], &opts).unwrap();
    {
        let k = k.borrow();
        let opened: Vec<(i32, i32)> = k.opened.iter().map(|o| (o.0, o.1)).collect();
        assert_eq!(opened, [(0, 4321), (1, 4321), (-1, 4321)]);
        let want = attr_flags::DISABLED | attr_flags::INHERIT | attr_flags::ENABLE_ON_EXEC;
        assert_eq!(k.opened[0].2.flags & want, want);
        assert_eq!(k.opened[2].2.flags, attr_flags::DISABLED);
        assert_eq!(k.opened[2].2.wakeup_events, 0);
    }
    let anchor = events.anchor().unwrap().as_raw_fd();
    assert_eq!(anchor, k.borrow().opened[2].3.raw());
    let p = prog();
    events.set_bpf("on_switch", p.as_fd()).unwrap();
    let set: Vec<i32> = fake
        .seen()
        .into_iter()
        .filter_map(|s| match s {
            Seen::PerfIoctl(PerfIoctl {
                fd,
                request: Request::SetBpf { .. },
            }) => Some(fd),
            _ => None,
        })
        .collect();
    assert_eq!(set, [anchor]);
    drop(events);
    assert!(k.borrow().opened.iter().all(|o| o.3.is_closed()));
}

/// A refused anchor is an open error of "the event without inherit", and the per-CPU
/// events are released.
#[test]
fn a_refused_anchor_releases_the_events() {
    let (_fake, k) = fake_kernel(|cpu| (cpu == -1).then_some(Errno::MFILE), |_| None);
    let opts = EventOptions {
        scope: Scope::Task {
            pid: 4321,
            on_exec: false,
        },
        ..EventOptions::default()
    };
    let e = open_tracepoint("sched:sched_switch", 316, &[0, 1], &opts).unwrap_err();
    assert!(
        matches!(&e, Error::Open { what, cpu: u32::MAX, errno: Errno::MFILE }
            if what == "sched:sched_switch (the event without inherit)"),
        "{e:?}"
    );
    let k = k.borrow();
    assert_eq!(k.opened.len(), 2);
    assert!(k.opened.iter().all(|o| o.3.is_closed()));
}

/// An ENABLE refusal names the CPU.
#[test]
fn enable_refusal_names_the_cpu() {
    let k: Shared = Rc::default();
    let kk = Rc::clone(&k);
    let _fake = fake::install(move |call| match call {
        Call::PerfEventOpen(_) => {
            let (reply, watch) = fake::watched_fd();
            kk.borrow_mut()
                .opened
                .push((0, 0, PerfEventAttr::default(), watch));
            Ok(reply)
        }
        Call::PerfIoctl(PerfIoctl {
            fd,
            request: Request::Enable,
        }) if fd == kk.borrow().opened[1].3.raw() => Err(Errno::NODEV),
        Call::PerfIoctl(_) => Ok(Reply::Value(0)),
        other => panic!("unexpected {other:?}"),
    });
    let events =
        open_tracepoint("sched:sched_switch", 316, &[6, 7], &EventOptions::default()).unwrap();
    let e = events.enable().unwrap_err();
    assert!(
        matches!(
            e,
            Error::Enable {
                cpu: 7,
                errno: Errno::NODEV,
                ..
            }
        ),
        "{e:?}"
    );
}

/// `PERF_FORMAT_LOST` from Linux 6.0 on (an unknown `read_format` bit is `EINVAL` before):
/// with it, the lost count of a CPU's ring is read from every event writing into it;
/// without it there is none to read.
#[test]
fn lost_counts_need_perf_format_lost() {
    use sluice_core::perf::record::read_format;
    for (release, format) in [("6.18.0", read_format::LOST), ("5.15.0", 0)] {
        let _r = fake::set_kernel_release(release);
        let f = fake::install(|call| match call {
            Call::PerfEventOpen(_) => Ok(fake::fd()),
            Call::PerfIoctl(PerfIoctl {
                request: Request::ReadLost,
                ..
            }) => Ok(Reply::Value(40)),
            Call::PerfIoctl(_) => Ok(Reply::Value(0)),
            other => panic!("unexpected {other:?}"),
        });
        let events = open_tracepoint("g:e", 5, &[0, 1], &EventOptions::default()).unwrap();
        assert_eq!(events.attr().read_format, format, "{release}");
        let lost = events.lost_on(1);
        if format == 0 {
            assert_eq!(lost, None, "{release}");
            assert_eq!(
                f.count_of(|s| matches!(
                    s,
                    Seen::PerfIoctl(PerfIoctl {
                        request: Request::ReadLost,
                        ..
                    })
                )),
                0
            );
        } else {
            assert_eq!(lost, Some(40), "{release}: one event on CPU 1");
            assert_eq!(events.lost_on(7), Some(0), "no event on CPU 7");
        }
        drop(events);
        drop(f);
    }
}
