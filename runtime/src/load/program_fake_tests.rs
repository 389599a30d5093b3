//! The program-load errno paths of [`program`] and [`prog_info`] on the syscall fake
//! ([`crate::sys::fake`]): no kernel. The old-kernel paths set the kernel release the
//! runtime sees ([`fake::set_kernel_release`]), so they hold on any host.

use crate::error::Error;
use crate::load::{prog_info, program, LoadLog, ProgramLoad, DEFAULT_LOG_SIZE, MAX_LOG_SIZE};
use crate::sys::bpf::ProgBtf;
use crate::sys::fake::{self, Call, Cmd, Reply, Seen};
use rustix::io::Errno;
use sluice_core::perf::abi::{prog_type, ProgInfoRaw, ProgLoadAttr, BPF_TAG_SIZE};
use sluice_core::Insn;
use std::cell::RefCell;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::rc::Rc;

const INSNS: [Insn; 2] = [Insn::mov64_imm(0, 0), Insn::exit()];

/// What the session's loader asks for: no log first, a level-1 log of the default size to
/// explain a refusal.
const ON_FAILURE: LoadLog = LoadLog::OnFailure {
    level: 1,
    size: DEFAULT_LOG_SIZE,
};

fn prog(prog_type: u32) -> ProgramLoad<'static> {
    ProgramLoad {
        name: "probe",
        prog_type,
        insns: &INSNS,
        license: "GPL",
        kern_version: 0,
        btf: None,
        attach: Default::default(),
    }
}

/// Loads `p` as `log` says and returns the error, dropping a returned fd.
fn refusal(p: &ProgramLoad<'_>, log: &LoadLog) -> Error {
    match program(p, log) {
        Ok((fd, log)) => panic!("loaded: {fd:?}, log {log:?}"),
        Err(e) => e,
    }
}

/// A verifier log of `n` bytes, lines numbered so a cut shows.
fn long_log(n: usize) -> Vec<u8> {
    let mut log = Vec::with_capacity(n + 16);
    let mut i = 0;
    while log.len() < n {
        log.extend_from_slice(format!("{i}: R0=scalar() R1=ctx()\n").as_bytes());
        i += 1;
    }
    log.truncate(n);
    log
}

/// The PROG_LOAD attrs the fake saw, in order.
type Loads = Rc<RefCell<Vec<ProgLoadAttr>>>;

/// Installs a fake answering each PROG_LOAD with `answer(n, call)` (n counts from 0), and
/// records the attrs.
fn fake_loads(
    mut answer: impl FnMut(usize, &mut fake::Bpf<'_>) -> Result<Reply, Errno> + 'static,
) -> (fake::Fake, Loads) {
    let loads: Loads = Rc::default();
    let seen = Rc::clone(&loads);
    let f = fake::install(move |call| match call {
        Call::Bpf(mut b) if b.cmd == Cmd::ProgLoad => {
            let n = seen.borrow().len();
            seen.borrow_mut().push(b.prog_load().unwrap());
            answer(n, &mut b)
        }
        other => panic!("unexpected {other:?}"),
    });
    (f, loads)
}

/// The `log_size` of each attempt.
fn log_sizes(loads: &[ProgLoadAttr]) -> Vec<usize> {
    loads.iter().map(|a| a.log_size as usize).collect()
}

/// A program the kernel takes at once: its fd, no log, one call without a log buffer.
#[test]
fn a_first_load_that_succeeds_returns_no_log() {
    let (reply, watch) = fake::watched_fd();
    let mut reply = Some(reply);
    let (fake, loads) = fake_loads(move |_, _| Ok(reply.take().unwrap()));
    let (fd, log) = program(&prog(prog_type::KPROBE), &ON_FAILURE).unwrap();
    assert!(log.is_empty());
    assert_eq!(fd.as_raw_fd(), watch.raw());
    assert_eq!(fake.count(), 1);
    let a = loads.borrow()[0];
    assert_eq!((a.log_level, a.log_size, a.log_buf), (0, 0, 0));
    assert_eq!((a.prog_type, a.insn_cnt), (prog_type::KPROBE, 2));
    assert_eq!(a.prog_btf_fd, 0);
    drop(fd);
    assert!(watch.is_closed());
}

/// EPERM: the permission error naming `bpf(BPF_PROG_LOAD)`, after the fast path without a
/// log and one retry with a log (at level 1 even when 0 was asked for).
#[test]
fn eperm_is_a_permission_error() {
    for level in [0, 1] {
        let (fake, loads) = fake_loads(|_, _| Err(Errno::PERM));
        let log = LoadLog::OnFailure {
            level,
            size: DEFAULT_LOG_SIZE,
        };
        let e = refusal(&prog(prog_type::KPROBE), &log);
        assert!(
            matches!(
                e,
                Error::Permission {
                    call: "bpf(BPF_PROG_LOAD)",
                    errno: Errno::PERM,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("CAP_BPF"), "{e}");
        assert_eq!(fake.seen(), [Seen::Bpf(Cmd::ProgLoad); 2]);
        let loads = loads.borrow();
        assert_eq!(
            (loads[0].log_level, loads[0].log_size, loads[0].log_buf),
            (0, 0, 0)
        );
        assert_eq!(loads[1].log_level, 1);
        assert_eq!(loads[1].log_size as usize, DEFAULT_LOG_SIZE);
        assert_eq!(
            (loads[1].prog_type, loads[1].insn_cnt),
            (prog_type::KPROBE, 2)
        );
        assert_eq!(&loads[1].prog_name[..6], b"probe\0");
    }
}

/// EPERM with a log asked for from the start: one call, the same permission error.
#[test]
fn eperm_with_a_log_is_a_permission_error_too() {
    let (fake, _) = fake_loads(|_, _| Err(Errno::ACCESS));
    let log = LoadLog::Always {
        level: 2,
        size: DEFAULT_LOG_SIZE,
    };
    let e = refusal(&prog(prog_type::KPROBE), &log);
    assert!(
        matches!(
            e,
            Error::Permission {
                call: "bpf(BPF_PROG_LOAD)",
                errno: Errno::ACCESS,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(fake.count(), 1);
}

/// No `bpf()` at all (before 3.18, or under qemu-user): unsupported, not retried.
#[test]
fn enosys_is_unsupported() {
    let (fake, _) = fake_loads(|_, _| Err(Errno::NOSYS));
    let e = refusal(&prog(prog_type::KPROBE), &ON_FAILURE);
    assert!(
        matches!(
            &e,
            Error::Unsupported { feature, min_kernel: "3.18", errno: Errno::NOSYS }
                if feature == "bpf() system call"
        ),
        "{e:?}"
    );
    assert_eq!(fake.count(), 1);
}

/// EINVAL without a log on a kernel older than the program type: unsupported, naming the
/// type and the release it needs.
fn assert_unsupported(e: &Error, t: u32) {
    let min = prog_type::min_kernel(t).unwrap();
    assert!(
        matches!(e, Error::Unsupported { feature, min_kernel, errno: Errno::INVAL }
            if *feature == format!("program type {t}") && *min_kernel == min),
        "{t}: {e:?}"
    );
}

/// EINVAL without a log on a kernel that has the type: the verifier's plain refusal.
fn assert_plain_refusal(e: &Error) {
    assert!(
        matches!(e, Error::Verifier { program, errno: Errno::INVAL, log }
            if program == "probe" && log.is_empty()),
        "{e:?}"
    );
}

/// EINVAL (no log) on an old kernel: a type newer than the kernel is unsupported, one the
/// kernel has is the plain refusal; on a new kernel every type is the plain refusal.
#[test]
fn einval_on_an_old_kernel_is_unsupported() {
    // 4.4: SOCKET_FILTER (3.19) and KPROBE (4.1) exist; TRACEPOINT (4.7) and 32 (5.9) not.
    let rows = [
        (prog_type::SOCKET_FILTER, false),
        (prog_type::KPROBE, false),
        (prog_type::TRACEPOINT, true),
        (32, true),
    ];
    for (release, old) in [("4.4.0", true), ("6.18.0", false)] {
        let _release = fake::set_kernel_release(release);
        for (t, newer_than_4_4) in rows {
            let (fake, loads) = fake_loads(|_, _| Err(Errno::INVAL));
            let e = refusal(&prog(t), &ON_FAILURE);
            if old && newer_than_4_4 {
                assert_unsupported(&e, t);
            } else {
                assert_plain_refusal(&e);
            }
            // Either way the refusal was asked to explain itself once.
            assert_eq!(fake.count(), 2, "{release} {t}");
            assert_eq!(log_sizes(&loads.borrow()), [0, DEFAULT_LOG_SIZE]);
        }
    }
}

/// A release the runtime cannot read counts as older than every known type; a type the
/// table does not know is never unsupported, whatever the kernel.
#[test]
fn einval_on_an_unknown_kernel_or_type() {
    let release = fake::set_kernel_release("garbage");
    let (fake, _) = fake_loads(|_, _| Err(Errno::INVAL));
    assert_unsupported(
        &refusal(&prog(prog_type::KPROBE), &ON_FAILURE),
        prog_type::KPROBE,
    );
    drop((fake, release));
    for release in ["4.4.0", "6.18.0"] {
        let _release = fake::set_kernel_release(release);
        let (_fake, _) = fake_loads(|_, _| Err(Errno::INVAL));
        assert_plain_refusal(&refusal(&prog(999), &ON_FAILURE));
    }
}

/// With a log, EINVAL is the verifier's refusal even for a type newer than the kernel.
#[test]
fn einval_with_a_log_is_the_verifier() {
    let _release = fake::set_kernel_release("4.4.0");
    let (_fake, _) = fake_loads(|_, b| {
        let _ = b.write_log(b"unknown func bpf_foo#999\n");
        Err(Errno::INVAL)
    });
    let e = refusal(&prog(32), &ON_FAILURE);
    assert!(
        matches!(
            e,
            Error::Verifier {
                errno: Errno::INVAL,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(e.verifier_log(), Some(&b"unknown func bpf_foo#999\n"[..]));
}

/// A log too small: the kernel fills it, says `ENOSPC` and (6.4+) the size it needed; the
/// loader retries once at that size and returns the whole log.
#[test]
fn enospc_retries_at_the_size_the_kernel_reports() {
    let log = long_log(5000);
    let full = log.clone();
    let (fake, loads) = fake_loads(move |_, b| {
        if b.write_log(&log) {
            Err(Errno::ACCESS)
        } else {
            Err(Errno::NOSPC)
        }
    });
    let e = refusal(
        &prog(prog_type::KPROBE),
        &LoadLog::Always {
            level: 2,
            size: 300,
        },
    );
    match &e {
        Error::Verifier {
            program,
            errno,
            log,
        } => {
            assert_eq!((program.as_str(), *errno), ("probe", Errno::ACCESS));
            assert_eq!(log, &full);
        }
        other => panic!("{other:?}"),
    }
    let sizes: Vec<(u32, u32)> = loads
        .borrow()
        .iter()
        .map(|a| (a.log_level, a.log_size))
        .collect();
    assert_eq!(sizes, [(2, 300), (2, 5001)]);
    assert_eq!(fake.count(), 2);
}

/// Before 6.4 the kernel reports no size: the buffer doubles until the log fits, and a load
/// that then succeeds returns its fd and the whole log.
#[test]
fn enospc_doubles_without_log_true_size() {
    let log = long_log(2000);
    let full = log.clone();
    let (_fake, loads) = fake_loads(move |_, b| {
        let fits = b.write_log(&log);
        b.set_log_true_size(0);
        if fits {
            Ok(fake::fd())
        } else {
            Err(Errno::NOSPC)
        }
    });
    let (fd, got) = program(
        &prog(prog_type::KPROBE),
        &LoadLog::Always {
            level: 1,
            size: 100,
        },
    )
    .unwrap();
    assert_eq!(got, full);
    drop(fd);
    // 100 is raised to the 256-byte floor first.
    assert_eq!(log_sizes(&loads.borrow()), [256, 512, 1024, 2048]);
}

/// The growth stops at MAX_LOG_SIZE: a log that never fits ends as the verifier error with
/// what the last buffer held.
#[test]
fn enospc_stops_at_the_largest_buffer() {
    let (_fake, loads) = fake_loads(|_, b| {
        let _ = b.write_log(b"0: x\n");
        b.set_log_true_size(u32::MAX);
        Err(Errno::NOSPC)
    });
    let e = refusal(
        &prog(prog_type::KPROBE),
        &LoadLog::Always {
            level: 1,
            size: MAX_LOG_SIZE / 2,
        },
    );
    assert!(
        matches!(
            e,
            Error::Verifier {
                errno: Errno::NOSPC,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(e.verifier_log(), Some(&b"0: x\n"[..]));
    assert_eq!(log_sizes(&loads.borrow()), [MAX_LOG_SIZE / 2, MAX_LOG_SIZE]);
}

/// The whole fallback of [`LoadLog::OnFailure`]: no log, then a log that is too small, then
/// the full log in the error.
#[test]
fn on_failure_falls_back_to_a_growing_log() {
    let log = long_log(DEFAULT_LOG_SIZE + 10);
    let full = log.clone();
    let (fake, loads) = fake_loads(move |n, b| {
        if n == 0 {
            return Err(Errno::ACCESS);
        }
        if b.write_log(&log) {
            Err(Errno::ACCESS)
        } else {
            Err(Errno::NOSPC)
        }
    });
    let e = refusal(&prog(prog_type::KPROBE), &ON_FAILURE);
    assert_eq!(e.verifier_log(), Some(&full[..]));
    assert_eq!(
        log_sizes(&loads.borrow()),
        [0, DEFAULT_LOG_SIZE, DEFAULT_LOG_SIZE + 11]
    );
    assert_eq!(fake.count(), 3);
}

/// A first load refused and the retry with a log taken (a transient refusal): the fd, and
/// no log, as for a first load that succeeds.
#[test]
fn on_failure_retry_that_succeeds_returns_no_log() {
    let (fake, loads) = fake_loads(|n, b| {
        if n == 0 {
            Err(Errno::AGAIN)
        } else {
            let _ = b.write_log(b"processed 2 insns\n");
            Ok(fake::fd())
        }
    });
    let (fd, log) = program(&prog(prog_type::KPROBE), &ON_FAILURE).unwrap();
    drop(fd);
    assert!(log.is_empty(), "{log:?}");
    assert_eq!(log_sizes(&loads.borrow()), [0, DEFAULT_LOG_SIZE]);
    assert_eq!(fake.count(), 2);
}

/// Kernels before 4.15 refuse a program name with E2BIG: loaded again without one.
#[test]
fn e2big_retries_without_a_name() {
    let (_fake, loads) = fake_loads(|n, _| {
        if n == 0 {
            Err(Errno::TOOBIG)
        } else {
            Ok(fake::fd())
        }
    });
    let (fd, log) = program(&prog(prog_type::KPROBE), &ON_FAILURE).unwrap();
    assert!(log.is_empty());
    drop(fd);
    let names: Vec<[u8; 16]> = loads.borrow().iter().map(|a| a.prog_name).collect();
    assert_eq!(&names[0][..6], b"probe\0");
    assert_eq!(names[1], [0; 16]);
}

/// E2BIG that is not the name: the nameless retry is refused too, then the load is
/// explained with a log, named again.
#[test]
fn e2big_without_a_name_falls_back_to_the_log() {
    let (fake, loads) = fake_loads(|_, _| Err(Errno::TOOBIG));
    let e = refusal(&prog(prog_type::KPROBE), &ON_FAILURE);
    assert!(
        matches!(
            e,
            Error::Verifier {
                errno: Errno::TOOBIG,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(fake.count(), 3);
    let loads = loads.borrow();
    let named: Vec<bool> = loads.iter().map(|a| a.prog_name[0] != 0).collect();
    assert_eq!(named, [true, false, true]);
    assert_eq!(log_sizes(&loads), [0, 0, DEFAULT_LOG_SIZE]);
}

/// The program's BTF rides every attempt: the fast path and the retry with a log.
#[test]
fn btf_reaches_every_attempt() {
    let btf: OwnedFd = std::fs::File::open("/dev/null").unwrap().into();
    let func_info = [[0u32, 3]];
    let line_info = [[0u32, 1, 2, 0], [1, 1, 5, 0]];
    let p = ProgramLoad {
        btf: Some(ProgBtf {
            fd: btf.as_fd(),
            func_info: &func_info,
            line_info: &line_info,
        }),
        ..prog(prog_type::KPROBE)
    };
    let (_fake, loads) = fake_loads(|_, _| Err(Errno::ACCESS));
    let _ = refusal(&p, &ON_FAILURE);
    let loads = loads.borrow();
    assert_eq!(loads.len(), 2);
    for a in loads.iter() {
        assert_eq!(a.prog_btf_fd as i32, btf.as_raw_fd());
        assert_eq!((a.func_info_cnt, a.func_info_rec_size), (1, 8));
        assert_eq!((a.line_info_cnt, a.line_info_rec_size), (2, 16));
    }
}

#[test]
fn prog_info_reads_what_the_kernel_wrote() {
    let _fake = fake::install(|call| match call {
        Call::Bpf(mut b) if b.cmd == Cmd::ObjGetInfoByFd => {
            let mut name = [0u8; 16];
            name[..5].copy_from_slice(b"probe");
            b.write_info(&ProgInfoRaw {
                id: 7,
                prog_type: prog_type::KPROBE,
                tag: [0xab; BPF_TAG_SIZE],
                xlated_prog_len: 16,
                name,
                ..ProgInfoRaw::default()
            });
            Ok(Reply::Value(0))
        }
        other => panic!("unexpected {other:?}"),
    });
    let f = std::fs::File::open("/dev/null").unwrap();
    let info = prog_info(f.as_fd()).unwrap();
    assert_eq!(
        (info.id, info.xlated_insns, info.name.as_str()),
        (7, 2, "probe")
    );
    assert_eq!(info.tag_hex(), "abababababababab");
}

/// `EINVAL` from `BPF_OBJ_GET_INFO_BY_FD`: unsupported before 4.13, a plain error naming
/// the call from 4.13 on.
#[test]
fn prog_info_einval_on_old_and_new_kernels() {
    let f = std::fs::File::open("/dev/null").unwrap();
    for (release, old) in [("4.12.14", true), ("4.13.0", false)] {
        let _release = fake::set_kernel_release(release);
        let _fake = fake::install(|_| Err(Errno::INVAL));
        let e = prog_info(f.as_fd()).unwrap_err();
        if old {
            assert!(
                matches!(&e, Error::Unsupported { feature, min_kernel: "4.13", errno: Errno::INVAL }
                    if feature == "BPF_OBJ_GET_INFO_BY_FD"),
                "{e:?}"
            );
        } else {
            assert!(
                matches!(
                    e,
                    Error::Syscall {
                        call: "bpf(BPF_OBJ_GET_INFO_BY_FD)",
                        errno: Errno::INVAL,
                        ..
                    }
                ),
                "{e:?}"
            );
        }
    }
}
