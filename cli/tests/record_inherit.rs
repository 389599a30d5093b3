//! Programs stay attached while the recorded workload's children come and go.
//!
//! Regression: events that follow a workload (`inherit`) used to carry the program, and
//! since Linux 6.10 an inherited copy of such an event takes the program too; when the child
//! exits, freeing the copy took the program off the uprobe for every event
//! (`perf_event_detach_bpf_prog`), so the probe kept producing samples but the program never
//! ran again (runtime/src/attach.rs, "The program never rides an inherited event"). Here a
//! shell workload starts children that exit *before* the probed program runs, and every
//! uprobe sample must still come with the output its program sent (`"type":"pair"`):
//! as a workload (`-- sh -c ...`) and as a followed process (`-p PID`).
#![cfg(target_arch = "x86_64")]
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{fixture, skip, sluice};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How many times the program calls each function per run.
const CALLS: usize = 3;

/// Builds `tests/dwarf/types.c` (gcc, -O0) into a fresh directory: (directory, binary).
fn build(tag: &str) -> Option<(PathBuf, PathBuf)> {
    if !rustix::process::geteuid().is_root() {
        skip("record with uprobes needs root");
        return None;
    }
    let dir = std::env::temp_dir().join(format!(
        "sluice-record-inherit-{}-{tag}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join(format!("types_{tag}"));
    let built = Command::new("gcc")
        .args(["-g", "-O0", "-no-pie", "-o"])
        .arg(&bin)
        .arg(common::repo().join("tests/dwarf/types.c"))
        .status();
    if !built.is_ok_and(|s| s.success()) {
        skip("gcc is needed to build tests/dwarf/types.c");
        return None;
    }
    Some((dir, bin))
}

/// `--event` mappings for the five programs of dwarf_types.o (`p_local` at `block` too:
/// five uprobes, as in the report; it reads three registers, so three arguments).
fn events(bin: &Path) -> Vec<String> {
    let b = bin.display();
    vec![
        format!("p_small=uprobe/{b}:small(sc, uc, ss, us)"),
        format!("p_wide=uprobe/{b}:wide(i, u, l, ul)"),
        format!("p_chain=uprobe/{b}:chain(o->in->c, o->in->us, o->in->l, $err)"),
        format!("p_block=uprobe/{b}:block(n, g_total, $err)"),
        format!("p_local=uprobe/{b}:block(n, n, $err)"),
    ]
}

/// (paired samples, unpaired samples) of the uprobes in `--json` output.
fn count(out: &str) -> (usize, usize) {
    let pairs = out
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"pair\""))
        .count();
    let lone = out
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"sample\"") && l.contains("\"event\":\"sluice:"))
        .count();
    (pairs, lone)
}

#[test]
fn workload_children_that_exit_first_leave_every_program_running() {
    let Some((dir, bin)) = build("workload") else {
        return;
    };
    // `(true)` forks a child that exits before the pipeline starts; `echo |` forks
    // another that exits while the probed program runs.
    let workload = format!("(true); (true); echo | {} {CALLS}", bin.display());
    let fixture = fixture("dwarf_types.o");
    let events = events(&bin);
    let mut args = vec!["record", "--json", "-e", &fixture];
    for e in &events {
        args.extend(["--event", e]);
    }
    args.extend(["--", "sh", "-c", &workload]);
    let (code, out, err) = sluice(&args);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("probes removed 5"), "{err}");
    let (pairs, lone) = count(&out);
    assert_eq!(lone, 0, "samples without their program's output:\n{out}");
    assert_eq!(pairs, 5 * CALLS, "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A child killed when the test ends, passed or failed.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn followed_process_children_that_exit_first_leave_every_program_running() {
    let Some((dir, bin)) = build("pid") else {
        return;
    };
    // A shell that, again and again, starts a child that exits, then the probed program
    // (another child); sluice follows it with -p from the middle of its life.
    let script = format!(
        "while :; do (true); echo | {} {CALLS} >/dev/null; sleep 0.05; done",
        bin.display()
    );
    let mut target = Killed(
        Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let out_file = dir.join("out.json");
    let events = events(&bin);
    let fixture = fixture("dwarf_types.o");
    let mut args = vec!["record", "--json", "-o", out_file.to_str().unwrap(), "-e"];
    args.push(&fixture);
    for e in &events {
        args.extend(["--event", e]);
    }
    let pid = target.0.id().to_string();
    args.extend(["-p", &pid]);
    let rec = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Several rounds of the program, each after children of the followed shell exited.
    let small = |out: &str| out.matches("_small\",").count();
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let out = std::fs::read_to_string(&out_file).unwrap_or_default();
        if small(&out) >= 4 * CALLS {
            break;
        }
        assert!(Instant::now() < until, "too few samples:\n{out}");
        std::thread::sleep(Duration::from_millis(20));
    }
    target.0.kill().unwrap();
    target.0.wait().unwrap();
    let done = rec.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{err}");
    let out = std::fs::read_to_string(&out_file).unwrap();
    let (pairs, lone) = count(&out);
    // The run may stop in the middle of a round: a call whose output arrived without its
    // sample is impossible (the output is written first), the other way round is the bug.
    assert_eq!(lone, 0, "samples without their program's output:\n{out}");
    assert!(pairs >= 5 * 4 * CALLS, "{pairs} pairs:\n{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}
