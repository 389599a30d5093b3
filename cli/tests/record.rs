//! `sluice record` as a user runs it: the embedded demo, a filter object with a uprobe on
//! this test binary, text and `--json` lines, and every way a run can end (normal, SIGINT,
//! SIGTERM, an error mid-way), after each of which no probe of the run is left in tracefs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Sessions on the same tracepoint share its program list (the kernel runs every attached
/// program and emits a sample only if all accept): one recording at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn kernel(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    assert!(
        std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
        "{test}: needs root (SLUICE_REQUIRE_KERNEL=1)"
    );
    eprintln!("\n*** SKIPPED kernel test {test}: not root ***\n");
    false
}

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/bpf")
        .join(name)
        .display()
        .to_string()
}

fn sluice(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn tracefs() -> PathBuf {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("uprobe_events").exists())
        .expect("tracefs mounted (sluice mounts it when needed)")
}

/// Lines of uprobe_events naming a sluice event made by `pid`.
fn probes_of(pid: u32) -> Vec<String> {
    let text = std::fs::read_to_string(tracefs().join("uprobe_events")).unwrap();
    let tag = format!("sluice/p_{pid}_");
    text.lines()
        .filter(|l| l.contains(&tag))
        .map(str::to_owned)
        .collect()
}

#[test]
fn default_record_runs_the_embedded_demo_on_sleep() {
    if !kernel("default_record_runs_the_embedded_demo_on_sleep") {
        return;
    }
    let _serial = serial();
    let (code, out, err) = sluice(&["record"]);
    assert_eq!(code, 0, "{err}");
    let summary = err
        .lines()
        .find(|l| l.starts_with("sluice record:"))
        .expect(&err);
    assert!(summary.contains("stopped: workload exited"), "{summary}");
    assert!(summary.contains("lost 0"), "{summary}");
    // `sleep` is dynamically linked on this host: the loader opens /etc/ld.so.cache.
    // Every line is the workload's: the embedded filter keeps others out.
    for l in out.lines() {
        assert!(l.trim_start().starts_with("sleep "), "{l}");
    }
    assert!(
        out.lines()
            .any(|l| l.contains("syscalls:sys_enter_openat: __syscall_nr=")),
        "{out}"
    );
    assert!(out.contains("bpf-output:paths: map=paths size="), "{out}");
    assert!(out.contains("str=\"/etc/"), "{out}");
}

#[test]
fn json_lines_parse_and_carry_the_fields() {
    if !kernel("json_lines_parse_and_carry_the_fields") {
        return;
    }
    let _serial = serial();
    // The filter accepts opens under /etc/: sh opens exactly the two files named.
    let (code, out, err) = sluice(&[
        "record",
        "--json",
        "--",
        "sh",
        "-c",
        "exec 3</etc/hostname 4</etc/passwd; :",
    ]);
    assert_eq!(code, 0, "{err}");
    let mut opens = Vec::new();
    let mut paths = Vec::new();
    for l in out.lines().filter(|l| l.starts_with('{')) {
        assert!(l.ends_with('}'), "{l}");
        assert!(l.contains("\"type\":\"sample\""), "{l}");
        for key in ["\"pid\":", "\"tid\":", "\"cpu\":", "\"time\":", "\"comm\":"] {
            assert!(l.contains(key), "{key} in {l}");
        }
        if l.contains("\"event\":\"syscalls:sys_enter_openat\"") {
            assert!(l.contains("\"fields\":{\"__syscall_nr\":"), "{l}");
            assert!(l.contains("\"filename\":\"0x"), "{l}");
            opens.push(l.to_owned());
        } else if l.contains("\"event\":\"bpf-output:paths\"") {
            let s = l
                .split("\"str\":\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            paths.push(s.to_owned());
        }
    }
    assert!(paths.contains(&"/etc/hostname".to_owned()), "{paths:?}");
    assert!(paths.contains(&"/etc/passwd".to_owned()), "{paths:?}");
    assert_eq!(
        opens.len(),
        paths.len(),
        "one sample and one output per accepted open"
    );
    let summary = err
        .lines()
        .find(|l| l.starts_with("sluice record:"))
        .unwrap();
    assert!(
        summary.contains(&format!("syscalls:sys_enter_openat {}", opens.len())),
        "{summary}"
    );
}

/// A function of this binary for the uprobe (called once so the linker keeps it).
#[no_mangle]
#[inline(never)]
pub extern "C" fn sluice_cli_uprobe_target(v: u64) -> u64 {
    std::hint::black_box(v) ^ 1
}

/// Starts `sluice record` with a uprobe on this binary around `sleep 30`, waits for its
/// probe, sends `sig`, and checks it ends quickly and leaves nothing.
fn record_then_signal(sig: rustix::process::Signal, want_code: i32) {
    let exe = std::env::current_exe().unwrap();
    std::hint::black_box(sluice_cli_uprobe_target(std::hint::black_box(1)));
    let spec = format!(
        "arg_at_least=uprobe/{}:sluice_cli_uprobe_target",
        exe.display()
    );
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "record",
            "-e",
            &fixture("record_filter.o"),
            "--event",
            &spec,
            "--",
            "sleep",
            "30",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let until = Instant::now() + Duration::from_secs(20);
    while probes_of(pid).is_empty() {
        assert!(Instant::now() < until, "sluice never made its probe");
        std::thread::sleep(Duration::from_millis(20));
    }
    let t0 = Instant::now();
    rustix::process::kill_process(rustix::process::Pid::from_raw(pid as i32).unwrap(), sig)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{sig:?}: ended in {:?}: {err}", t0.elapsed());
    assert_eq!(out.status.code(), Some(want_code), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(err.contains("stopped: signal"), "{err}");
    assert!(probes_of(pid).is_empty(), "{:?}", probes_of(pid));
}

#[test]
fn sigint_and_sigterm_end_the_run_and_remove_every_probe() {
    if !kernel("sigint_and_sigterm_end_the_run_and_remove_every_probe") {
        return;
    }
    let _serial = serial();
    record_then_signal(rustix::process::Signal::INT, 0);
    record_then_signal(rustix::process::Signal::TERM, 128 + 15);
}

#[test]
fn an_error_mid_way_leaves_nothing_and_never_runs_the_workload() {
    if !kernel("an_error_mid_way_leaves_nothing_and_never_runs_the_workload") {
        return;
    }
    let _serial = serial();
    let exe = std::env::current_exe().unwrap();
    std::hint::black_box(sluice_cli_uprobe_target(std::hint::black_box(1)));
    let spec = format!(
        "arg_at_least=uprobe/{}:sluice_cli_uprobe_target",
        exe.display()
    );
    let marker = std::env::temp_dir().join(format!("sluice-cli-midway-{}", std::process::id()));
    // The first object makes a probe and attaches; the second fails the verifier.
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "record",
            "-e",
            &fixture("record_filter.o"),
            "--event",
            &spec,
            "-e",
            &fixture("bad_verifier.o"),
            "--",
            "touch",
            marker.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&child.stderr);
    assert_eq!(child.status.code(), Some(1), "{err}");
    assert!(err.contains("verifier"), "{err}");
    assert!(
        !marker.exists(),
        "the workload must not run after a failed set-up"
    );
    let text = std::fs::read_to_string(tracefs().join("uprobe_events")).unwrap();
    assert!(!text.contains("sluice_cli_uprobe_target"), "{text}");
}
