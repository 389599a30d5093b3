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
