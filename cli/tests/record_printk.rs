//! `bpf_trace_printk` lines in line with the samples, both ways sluice reads them:
//!
//! - programs outside perf's handlers (`tests/record/printk.o`, a raw tracepoint) through
//!   the `bpf_trace:bpf_trace_printk` perf event: one line per exec of the workload,
//!   naming its own pid, in time order, none of a noise process's;
//! - a program on a perf tracepoint (`tests/record/who.o`) through sluice's private ftrace
//!   instance (`instances/sluice-PID`), whose removal on every way a run ends is checked
//!   here: the workload's exit, SIGINT, SIGTERM, SIGHUP, a closed stdout; SIGKILL leaves it,
//!   and `sluice probes --clean` removes it (the kernel refuses while a run has it open).
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{repo, skip, sluice, tracefs};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn root() -> bool {
    let me = rustix::process::geteuid().is_root();
    if !me {
        skip("record needs root");
    }
    me
}

/// `(time in ns, pid, event, rest)` of a text line.
fn timed(line: &str) -> (u64, u32, String, String) {
    let mut w = line.split_whitespace();
    let _comm = w.next().unwrap();
    let pid = w
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let _cpu = w.next();
    let (s, us) = w
        .next()
        .unwrap()
        .trim_end_matches(':')
        .split_once('.')
        .unwrap();
    let ns = (s.parse::<u64>().unwrap() * 1_000_000 + us.parse::<u64>().unwrap()) * 1000;
    let event = w.next().unwrap().trim_end_matches(':').to_owned();
    (ns, pid, event, w.collect::<Vec<_>>().join(" "))
}

#[test]
fn printk_of_a_raw_tracepoint_comes_through_perf() {
    if !root() {
        return;
    }
    let _g = serial();
    let mut noise = Command::new("sh")
        .args(["-c", "while :; do /bin/true; done"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let printk = repo().join("tests/record/printk.o").display().to_string();
    let workload = "/bin/true; /bin/true; /bin/echo x >/dev/null; /bin/sleep 0.2";
    let (code, out, err) = sluice(&["-v", "record", "-e", &printk, "--", "sh", "-c", workload]);
    let _ = noise.kill();
    let _ = noise.wait();
    assert_eq!(code, 0, "{err}");
    let lines: Vec<_> = out.lines().map(timed).collect();
    assert_eq!(lines.len(), 5, "{out}");
    for (_, pid, event, text) in &lines {
        assert_eq!(event, "bpf_trace:bpf_trace_printk", "{out}");
        assert_eq!(*text, format!("who exec {pid}"), "{out}");
    }
    let pids: std::collections::BTreeSet<u32> = lines.iter().map(|l| l.1).collect();
    assert_eq!(pids.len(), 5, "{out}");
    assert!(lines.windows(2).all(|w| w[0].0 <= w[1].0), "{out}");
    assert!(
        err.contains("bpf_trace_printk lines of other programs on this system show too"),
        "{err}"
    );
    assert!(!err.contains("ftrace instance"), "{err}");
}

/// The instance of the run of `pid`.
fn instance(pid: u32) -> PathBuf {
    tracefs().join(format!("instances/sluice-{pid}"))
}

/// `sluice record -e who.o -- sh -c WORK`, stdout piped, once its instance exists.
fn start(work: &str) -> Child {
    let who = repo().join("tests/record/who.o");
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["record", "-e"])
        .arg(&who)
        .args(["--", "sh", "-c", work])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while !instance(child.id()).exists() {
        assert!(Instant::now() < until, "no instance made");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn signal(child: &Child, sig: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, sig).unwrap();
}

#[test]
fn the_ftrace_instance_goes_on_every_exit() {
    if !root() {
        return;
    }
    let _g = serial();
    use rustix::process::Signal;
    // The workload's end: its lines shown, the instance gone.
    let child = start("sleep 0.3; /bin/true");
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    // sh, sleep, true.
    assert_eq!(
        text.matches("bpf_trace:bpf_trace_printk: who exec").count(),
        3,
        "{text}"
    );
    assert!(!instance(pid).exists(), "after the workload's end");
    for sig in [Signal::INT, Signal::TERM, Signal::HUP] {
        let child = start("sleep 30");
        let pid = child.id();
        signal(&child, sig);
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{sig:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!instance(pid).exists(), "after {sig:?}");
    }
    // A reader that went away (`| head`): a write ends the run, cleanly. Lines reach the
    // pipe 64 KiB at a time: 1000 execs make more.
    let mut child = start("sleep 0.3; for i in $(seq 1000); do /bin/true; done; sleep 30");
    let pid = child.id();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "closed stdout: {err}");
    assert!(err.contains("output closed"), "{err}");
    assert!(!instance(pid).exists(), "after a closed stdout");
    // SIGKILL leaves it; --clean removes it, not a running run's.
    let mut killed = start("sleep 3");
    let (pid, live) = (killed.id(), start("sleep 30"));
    signal(&killed, Signal::KILL);
    let _ = killed.wait();
    assert!(instance(pid).exists(), "SIGKILL removes nothing");
    let (code, out, err) = sluice(&["probes", "--clean"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("removed ftrace instance sluice-{pid}")),
        "{out}"
    );
    assert!(!instance(pid).exists(), "after --clean");
    assert!(
        instance(live.id()).exists(),
        "--clean removed a running run's"
    );
    signal(&live, Signal::TERM);
    let live_pid = live.id();
    let _ = live.wait_with_output();
    assert!(!instance(live_pid).exists());
}
