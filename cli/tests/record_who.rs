//! Who produced a sample (`runtime::tasks`): names from the kernel's COMM/FORK/EXIT
//! records and the recorded process tree.
//!
//! The workload is a shell that forks children which exec and exit at once; the filter
//! (`tests/record/who.c`) samples every successful exec and sends the exec'ing pid to a
//! bpf-output ring, which is opened system-wide. A noise process execs `/bin/true` in a
//! loop on the same machine meanwhile. Oracles: each exec's sample is named by the binary
//! it exec'd (the children are gone before their samples print: `/proc` cannot name
//! them), exactly one per exec; every bpf-output sample shown carries its own pid in its
//! data and is one of the workload's; the noise's are left out and counted.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{repo, skip, sluice};
use std::process::{Command, Stdio};

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `(comm, pid, event, rest)` of a text line.
fn fields(line: &str) -> (String, u32, String, String) {
    let mut w = line.split_whitespace();
    let comm = w.next().unwrap().to_owned();
    let pid = w
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let _cpu = w.next();
    let _time = w.next();
    let event = w.next().unwrap().trim_end_matches(':').to_owned();
    (comm, pid, event, w.collect::<Vec<_>>().join(" "))
}

#[test]
fn exited_children_keep_their_names_and_other_processes_are_left_out() {
    if !rustix::process::geteuid().is_root() {
        skip("record needs root");
        return;
    }
    let _g = serial();
    let noise = Command::new("sh")
        .args(["-c", "while :; do /bin/true; done"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let obj = repo().join("tests/record/who.o").display().to_string();
    let workload = "/bin/true; /bin/true; /bin/true; /bin/echo x >/dev/null; /bin/sleep 0.2";
    let (code, out, err) = sluice(&["record", "-e", &obj, "--", "sh", "-c", workload]);
    let mut noise = noise;
    let _ = noise.kill();
    let _ = noise.wait();
    assert_eq!(code, 0, "{err}");
    let lines: Vec<_> = out.lines().map(fields).collect();
    let execs: Vec<&(String, u32, String, String)> = lines
        .iter()
        .filter(|l| l.2 == "syscalls:sys_exit_execve")
        .collect();
    // The shell's own exec, then each child's, named by the binary it became.
    let names: Vec<&str> = execs.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(
        names,
        ["sh", "true", "true", "true", "echo", "sleep"],
        "{out}"
    );
    let tree: std::collections::BTreeSet<u32> = execs.iter().map(|l| l.1).collect();
    assert_eq!(tree.len(), 6, "{out}");
    // bpf-output: one per exec of the tree, its data its own pid, named as its exec.
    let outputs: Vec<_> = lines.iter().filter(|l| l.2 == "bpf-output:out").collect();
    assert_eq!(outputs.len(), 6, "{out}");
    for (comm, pid, _, rest) in &outputs {
        let hex = rest.split("data=").nth(1).unwrap();
        let bytes: Vec<u8> = (0..4)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        assert_eq!(u32::from_le_bytes(bytes.try_into().unwrap()), *pid, "{out}");
        assert!(tree.contains(pid), "{pid} is not the workload's: {out}");
        let exec = execs.iter().find(|l| l.1 == *pid).unwrap();
        assert_eq!(*comm, exec.0, "{out}");
    }
    assert!(!out.contains(" :"), "a pid without a name: {out}");
    // The noise exec'd all along: its bpf-output samples were left out, and counted.
    let left: u64 = err
        .split(&[';', '\n'][..])
        .map(str::trim)
        .find_map(|p| p.strip_suffix(" samples from outside the process tree not shown"))
        .unwrap_or_else(|| panic!("{err}"))
        .parse()
        .unwrap();
    assert!(left > 0, "{err}");
}

/// `(time, event, pid, rest)` of a text line: the time in µs.
fn timed(line: &str) -> (u64, String, u32, String) {
    let (_, pid, event, rest) = fields(line);
    let time = line
        .split_whitespace()
        .nth(3)
        .unwrap()
        .trim_end_matches(':');
    let (s, us) = time.split_once('.').unwrap();
    let us = s.parse::<u64>().unwrap() * 1_000_000 + us.parse::<u64>().unwrap();
    (us, event, pid, rest)
}

/// `printk.o` prints `who exec PID` at every exec (a raw tracepoint); `who.o` samples every
/// exec and prints the same (a perf tracepoint: the kernel drops its lines from perf, so
/// every line is read from sluice's ftrace instance). Oracles: two printk lines per exec of
/// the workload, each naming its own pid, both just before that exec's sample, all in time
/// order; the noise's left out (by the instance's pid filter); the instance gone at the end.
#[test]
fn printk_lines_come_in_time_order_with_the_exec_samples() {
    if !rustix::process::geteuid().is_root() {
        skip("record needs root");
        return;
    }
    let _g = serial();
    let noise = Command::new("sh")
        .args(["-c", "while :; do /bin/true; done"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let who = repo().join("tests/record/who.o").display().to_string();
    let printk = repo().join("tests/record/printk.o").display().to_string();
    let workload = "/bin/true; /bin/true; /bin/echo x >/dev/null; /bin/sleep 0.2";
    let (code, out, err) = sluice(&[
        "-v", "record", "-e", &who, "-e", &printk, "--", "sh", "-c", workload,
    ]);
    let mut noise = noise;
    let _ = noise.kill();
    let _ = noise.wait();
    assert_eq!(code, 0, "{err}");
    let lines: Vec<_> = out
        .lines()
        .map(timed)
        .filter(|l| l.1 == "bpf_trace:bpf_trace_printk" || l.1 == "syscalls:sys_exit_execve")
        .collect();
    // printk(p) twice, exec(p) for the shell and each child, in that order and in time order.
    assert_eq!(lines.len(), 3 * 5, "{out}");
    for hit in lines.chunks(3) {
        let exec = &hit[2];
        assert_eq!(exec.1, "syscalls:sys_exit_execve", "{out}");
        for printk in &hit[..2] {
            assert_eq!(printk.1, "bpf_trace:bpf_trace_printk", "{out}");
            assert_eq!(printk.2, exec.2, "{out}");
            assert_eq!(printk.3, format!("who exec {}", printk.2), "{out}");
        }
    }
    let pids: std::collections::BTreeSet<u32> = lines.iter().map(|l| l.2).collect();
    assert_eq!(pids.len(), 5, "{out}");
    assert!(lines.windows(2).all(|w| w[0].0 <= w[1].0), "{out}");
    // Every printk line shown is one of these (none of the noise's).
    assert_eq!(
        out.matches("bpf_trace:bpf_trace_printk:").count(),
        10,
        "{out}"
    );
    assert!(err.contains("read from an ftrace instance"), "{err}");
    assert!(!err.contains("stay in trace_pipe"), "{err}");
}
