//! A full stdout nobody reads does not make `record` deaf: with its output a pipe that is
//! never read, the run still ends on `SIGTERM` within a few seconds, removes its probe,
//! ends its workload, prints its summary and says how many records it could not write
//! (exit status 1: the output is incomplete). Before, a blocked `write(2)` was retried
//! for ever. The same for perf's pipe format on stdout (`--perf-data -`), which wrote
//! through plain stdout and hung the same way.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Read as _;
use std::os::fd::AsFd as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A run left behind by a failed assertion is ended (its probe with it).
struct EndOnPanic(u32);

impl Drop for EndOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Some(pid) = rustix::process::Pid::from_raw(self.0 as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
            }
        }
    }
}

#[test]
fn sigterm_ends_a_run_whose_stdout_is_full_and_unread() {
    blocked_run("blocked", &[], &|err| {
        let said = err
            .lines()
            .find(|l| l.contains("stdout was not being read when the run stopped"))
            .unwrap_or_else(|| panic!("the blocked output is not reported: {err}"));
        assert!(
            said.contains(" lines, and ") && said.ends_with("were not written"),
            "{said}"
        );
    });
}

#[test]
fn sigterm_ends_a_run_whose_perf_data_pipe_is_full_and_unread() {
    blocked_run("blocked-perf", &["--perf-data", "-"], &|err| {
        assert!(
            err.lines().any(|l| l.contains(
                "writing the perf.data output: the output is not being read (writes blocked)"
            )),
            "the blocked perf.data output is not reported: {err}"
        );
    });
}

/// `record` of a workload that hits its probe without end, stdout a pipe never read, with
/// `extra` arguments; after SIGTERM, `said` checks what stderr says of the output.
fn blocked_run(tag: &str, extra: &[&str], said: &dyn Fn(&str)) {
    let Some(dir) = common::record_dir(tag, "cc", "2") else {
        return;
    };
    let bin = dir.join("lost_count");
    let src = common::repo().join("tests/record/lost_count.c");
    if !common::compile(
        "cc",
        &[
            "-O2",
            "-o",
            &bin.display().to_string(),
            &src.display().to_string(),
        ],
    ) {
        return;
    }
    // The pipe's read end stays open here and is never read.
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["record"])
        .args(extra)
        .args([
            "-e",
            &common::fixture("lost_count.o"),
            "--event",
            &format!("on_hit=uprobe/{}:lost_count_target", bin.display()),
            "--",
            &bin.display().to_string(),
            "1000000000",
        ])
        .stdout(std::fs::File::from(write))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let _guard = EndOnPanic(pid);
    // Until the pipe is full (its 16 pages hold up to 64 KiB, less when writes end
    // mid-page) and stays so: sluice is blocked on it.
    let started = Instant::now();
    let mut last = 0;
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let n = rustix::io::ioctl_fionread(read.as_fd()).unwrap();
        if n >= 32768 && n == last {
            break;
        }
        last = n;
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the pipe never filled ({n} bytes)"
        );
        assert!(child.try_wait().unwrap().is_none(), "record ended early");
    }
    assert_eq!(
        common::probes_of(pid).len(),
        1,
        "the probe is there while blocked"
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let signalled = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if signalled.elapsed() > Duration::from_secs(10) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("record did not end within 10 s of SIGTERM with its stdout full");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = signalled.elapsed();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    eprintln!("ended {took:?} after SIGTERM: {status}\n{err}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(status.code(), Some(1), "{err}");
    let summary = err
        .lines()
        .find(|l| l.starts_with("sluice record: "))
        .unwrap_or_else(|| panic!("no summary: {err}"));
    assert!(summary.contains("stopped: signal 15"), "{summary}");
    assert!(summary.contains("probes removed 1"), "{summary}");
    said(&err);
    assert!(
        common::probes_of(pid).is_empty(),
        "{:?}",
        common::probes_of(pid)
    );
    // The workload was ended too: nothing runs the binary any more.
    let left: Vec<_> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            let exe = std::fs::read_link(p.join("exe")).ok()?;
            (exe == bin).then_some(p)
        })
        .collect();
    assert!(left.is_empty(), "workload left running: {left:?}");
    drop(read);
    std::fs::remove_dir_all(&dir).unwrap();
}
