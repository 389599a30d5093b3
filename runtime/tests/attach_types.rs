//! Kernel tests of the attach types beyond tracefs: `tp_btf/` and `raw_tp/` through BPF
//! links, a uprobe through the uprobe PMU (nothing in tracefs while it runs), and the
//! refusals said in the kernel's terms (`fentry/` where the kernel makes no trampoline,
//! `kprobe.multi/` without `CONFIG_FPROBE`, a function not in the kernel's BTF). Oracles:
//! what the programs counted for a workload that makes a known number of calls, tracefs'
//! `uprobe_events`, the kernel's own configuration.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use sluice_runtime::load::UpdateMode;
use sluice_runtime::session::{ObjectSource, Session, SessionOptions, SourceKind};
use sluice_runtime::tracefs::Tracefs;

static SERIAL: Mutex<()> = Mutex::new(());

/// Slots of `hits` in attach_types.c.
const HIT_EXEC: u32 = 0;
const HIT_SYS_ENTER: u32 = 1;
const HIT_EXIT: u32 = 2;
const HIT_UPROBE: u32 = 3;
const HIT_ANY_EXEC: u32 = 4;

fn object(name: &str) -> ObjectSource {
    ObjectSource {
        name: name.into(),
        bytes: common::fixture(name),
    }
}

fn hits(s: &Session, slot: u32) -> u64 {
    s.objects()[0]
        .map("hits")
        .unwrap()
        .get::<u32, u64>(&slot)
        .unwrap()
        .unwrap_or(0)
}

fn set_target(s: &Session, pid: u32) {
    s.objects()[0]
        .map("target_tgid")
        .unwrap()
        .update(&0u32, &pid, UpdateMode::Any)
        .unwrap();
}

#[test]
fn tp_btf_and_raw_tp_count_a_spawned_child() {
    if !common::kernel("tp_btf_and_raw_tp_count_a_spawned_child") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let s =
        Session::start(&[object("attach_types.o")], &SessionOptions::default()).expect("session");
    // The title program is left out; the three others ride BPF links, without events.
    assert_eq!(s.skipped().len(), 1, "{:?}", s.skipped());
    let hooks: Vec<&str> = s
        .sources()
        .iter()
        .filter(|x| matches!(x.kind, SourceKind::Hook { .. }))
        .map(|x| x.name.as_str())
        .collect();
    assert_eq!(
        hooks,
        [
            "tp_btf/sched_process_exec",
            "raw_tp/sys_enter",
            "raw_tp/sched_process_exit"
        ]
    );
    assert!(s.probe_names().is_empty());
    // A 64-bit child (a 32-bit test binary's own syscalls are compat ones): once running
    // (its own exec done: it says so), it waits for a line, then execs /bin/true.
    let mut child = Command::new("/bin/sh")
        .args(["-c", "echo ready; read x; exec /bin/true"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut ready,
    )
    .unwrap();
    assert_eq!(ready, "ready\n");
    set_target(&s, child.id());
    let any_before = hits(&s, HIT_ANY_EXEC);
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    assert!(child.wait().unwrap().success());
    let (exec, enter, exit) = (
        hits(&s, HIT_EXEC),
        hits(&s, HIT_SYS_ENTER),
        hits(&s, HIT_EXIT),
    );
    eprintln!(
        "child {}: tp_btf exec {exec}, raw_tp sys_enter {enter}, raw_tp exit {exit}; execs \
         system-wide meanwhile {}",
        child.id(),
        hits(&s, HIT_ANY_EXEC) - any_before
    );
    assert_eq!(exec, 1, "one exec of the child");
    assert_eq!(exit, 1, "one thread of the child exited");
    // read(2) and execve(2) at least, and /bin/true's own start-up.
    assert!(enter >= 3, "{enter}");
    assert!(hits(&s, HIT_ANY_EXEC) > any_before);
    drop(s);
}

/// The function the uprobe test probes.
#[no_mangle]
#[inline(never)]
pub extern "C" fn sluice_attach_uprobe_target(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(3))
}

fn uprobe_events_of(func: &str) -> Vec<String> {
    let t = Tracefs::find().unwrap();
    std::fs::read_to_string(t.root().join("uprobe_events"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(func) || l.contains(&std::process::id().to_string()))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_uprobe_through_the_pmu_counts_every_call_and_leaves_no_tracefs_entry() {
    if !common::kernel("a_uprobe_through_the_pmu_counts_every_call_and_leaves_no_tracefs_entry") {
        return;
    }
    if sluice_runtime::kernel::hooks::probe_pmu("uprobe").is_none() {
        assert!(!common::required(), "this kernel has no uprobe PMU");
        eprintln!("SKIPPED: no uprobe PMU");
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const CALLS: u64 = 1000;
    std::hint::black_box(sluice_attach_uprobe_target(std::hint::black_box(1)));
    let exe = std::env::current_exe().unwrap();
    let mut opts = SessionOptions::default();
    opts.events.insert(
        "on_uprobe".into(),
        format!("uprobe/{}:sluice_attach_uprobe_target", exe.display()),
    );
    let s = Session::start(&[object("attach_types.o")], &opts).expect("session");
    let src = s
        .sources()
        .iter()
        .find(|x| matches!(&x.kind, SourceKind::Hook { program } if program == "on_uprobe"))
        .unwrap_or_else(|| panic!("{:?}", s.sources()));
    assert!(src.name.starts_with("uprobe "), "{}", src.name);
    assert!(s.probe_names().is_empty(), "{:?}", s.probe_names());
    set_target(&s, std::process::id());
    let f: extern "C" fn(u64) -> u64 = std::hint::black_box(sluice_attach_uprobe_target);
    for i in 0..CALLS {
        std::hint::black_box(f(i));
    }
    // While it runs: no uprobe event in tracefs for this function or process.
    let during = uprobe_events_of("sluice_attach_uprobe_target");
    let counted = hits(&s, HIT_UPROBE);
    eprintln!("uprobe PMU: {CALLS} calls, {counted} counted; uprobe_events: {during:?}");
    assert!(during.is_empty(), "{during:?}");
    assert_eq!(counted, CALLS);
    drop(s);
    assert!(uprobe_events_of("sluice_attach_uprobe_target").is_empty());
}

#[test]
fn fentry_where_the_kernel_makes_no_trampoline_is_said_so() {
    if !common::kernel("fentry_where_the_kernel_makes_no_trampoline_is_said_so") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    match Session::start(&[object("attach_refused.o")], &SessionOptions::default()) {
        // A kernel with BPF trampolines (the amd64 guest) attaches it.
        Ok(s) => {
            eprintln!("fentry/do_unlinkat attached: {:?}", s.sources());
            assert!(s.sources().iter().any(
                |x| x.name == "fentry/do_unlinkat" && matches!(x.kind, SourceKind::Hook { .. })
            ));
        }
        Err(e) => {
            let m = e.to_string();
            eprintln!("fentry refused: {m}");
            assert!(
                m.contains("cannot attach program 'on_unlinkat' to fentry/do_unlinkat: "),
                "{m}"
            );
            // Not only an errno, and no capability to add: we are root.
            let reason = m.split("fentry/do_unlinkat: ").nth(1).unwrap();
            assert!(!reason.starts_with('('), "{m}");
            assert!(!m.contains("needs CAP_"), "{m}");
            assert!(
                m.contains("trampoline") || m.contains("not traceable"),
                "{m}"
            );
        }
    }
}

#[test]
fn kprobe_multi_without_fprobe_is_refused_naming_it() {
    if !common::kernel("kprobe_multi_without_fprobe_is_refused_naming_it") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let fprobe = sluice_runtime::kernel::hooks::config_set("CONFIG_FPROBE");
    match Session::start(&[object("attach_multi.o")], &SessionOptions::default()) {
        // A kernel with CONFIG_FPROBE attaches both (guest_kprobe.rs counts what they see).
        Ok(s) => {
            assert_ne!(fprobe, Some(false), "attached without CONFIG_FPROBE");
            let names: Vec<&str> = s.sources().iter().map(|x| x.name.as_str()).collect();
            assert_eq!(names, ["kprobe.multi/*getpgid", "kretprobe.multi/*getpgid"]);
        }
        Err(e) => {
            let m = e.to_string();
            eprintln!("CONFIG_FPROBE {fprobe:?}: {m}");
            assert!(
                m.contains("cannot attach program 'on_entry' to kprobe.multi/*getpgid: "),
                "{m}"
            );
            assert!(m.contains("CONFIG_FPROBE"), "{m}");
            assert_ne!(fprobe, Some(true), "{m}");
            if fprobe == Some(false) {
                assert!(m.contains("which this one is not"), "{m}");
            }
        }
    }
}

#[test]
fn a_function_not_in_the_kernels_btf_is_named() {
    if !common::kernel("a_function_not_in_the_kernels_btf_is_named") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let e = Session::start(&[object("attach_nofunc.o")], &SessionOptions::default())
        .expect_err("no such function");
    let m = e.to_string();
    assert!(
        m.contains(
            "cannot attach program 'on_nothing' (fentry/sluice_no_such_function_in_any_kernel): \
             no 'sluice_no_such_function_in_any_kernel' in the kernel's BTF (/sys/kernel/btf/vmlinux"
        ),
        "{m}"
    );
}
