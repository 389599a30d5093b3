//! `sluice record` as a user runs it: the embedded demo, a filter object with a uprobe on
//! this test binary, text and `--json` lines, `-p PID` on this very process (threads made
//! before and after), `-C CPUS`, `-o FILE`, and every way a run can end (normal, SIGINT,
//! SIGTERM, SIGHUP, an error mid-way), after each of which no probe of the run is left in
//! tracefs.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use common::{fixture, probes_of, sluice, tracefs};
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
    // The record decoded by the object's BTF (struct etc_path), not guessed as text.
    assert!(out.contains("bpf-output:paths: path=\"/etc/"), "{out}");
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
                .split("\"fields\":{\"path\":\"")
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
    let summary = err
        .lines()
        .find(|l| l.starts_with("sluice record:"))
        .expect(&err);
    assert!(
        summary.contains(&format!("stopped: signal {}", sig.as_raw())),
        "{summary}"
    );
    assert!(summary.contains("probes removed 1;"), "{summary}");
    assert!(probes_of(pid).is_empty(), "{:?}", probes_of(pid));
}

#[test]
fn sigint_sigterm_and_sighup_end_the_run_and_remove_every_probe() {
    if !kernel("sigint_sigterm_and_sighup_end_the_run_and_remove_every_probe") {
        return;
    }
    let _serial = serial();
    // All three: disable, drain, remove the probes, print the summary, exit 0.
    record_then_signal(rustix::process::Signal::INT, 0);
    record_then_signal(rustix::process::Signal::TERM, 0);
    record_then_signal(rustix::process::Signal::HUP, 0);
}

/// Opens `path` every millisecond until `stop`; returns the thread's tid once running.
fn opener(
    path: &'static str,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (std::thread::JoinHandle<()>, u32) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        // "PID/task/TID"
        let me = std::fs::read_link("/proc/thread-self").unwrap();
        let tid = me.file_name().unwrap().to_str().unwrap().parse().unwrap();
        tx.send(tid).unwrap();
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            drop(std::fs::File::open(path));
            std::thread::sleep(Duration::from_millis(1));
        }
    });
    (h, rx.recv().unwrap())
}

/// JSON lines of `file` so far.
fn lines_of(file: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn wait_for_line(file: &std::path::Path, what: &str, pred: impl Fn(&str) -> bool) {
    let until = Instant::now() + Duration::from_secs(20);
    while !lines_of(file).iter().any(|l| pred(l)) {
        assert!(
            Instant::now() < until,
            "no line with {what} in {:?}",
            lines_of(file)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn pid_follows_every_thread_old_and_new_into_a_file_until_sighup() {
    if !kernel("pid_follows_every_thread_old_and_new_into_a_file_until_sighup") {
        return;
    }
    let _serial = serial();
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let me = std::process::id();
    let out_file = std::env::temp_dir().join(format!("sluice-cli-pid-{me}.json"));
    let stop = Arc::new(AtomicBool::new(false));
    // A thread that exists before sluice starts (not the main thread: only the
    // /proc/PID/task listing finds it).
    let (old, old_tid) = opener("/etc/hostname", stop.clone());
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["record", "--json", "-o", out_file.to_str().unwrap(), "-p"])
        .arg(me.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let tid_is = |tid: u32| move |l: &str| l.contains(&format!("\"tid\":{tid},"));
    wait_for_line(&out_file, "the old thread's opens", tid_is(old_tid));
    // A thread made after the events were opened: `inherit` brings it in.
    let (new, new_tid) = opener("/etc/passwd", stop.clone());
    wait_for_line(&out_file, "the new thread's opens", tid_is(new_tid));
    wait_for_line(&out_file, "/etc/passwd", |l| {
        l.contains("\"fields\":{\"path\":\"/etc/passwd\"}")
    });
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::HUP,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    stop.store(true, Ordering::Relaxed);
    old.join().unwrap();
    new.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(out.stdout.is_empty(), "-o: nothing on stdout");
    let summary = err
        .lines()
        .find(|l| l.starts_with("sluice record:"))
        .expect(&err);
    assert!(summary.contains("stopped: signal 1"), "{summary}");
    assert!(summary.contains("probes removed 0;"), "{summary}");
    let lines = lines_of(&out_file);
    std::fs::remove_file(&out_file).unwrap();
    // Every sample is this process's, and the summary counts what the file holds.
    for l in &lines {
        assert!(l.contains(&format!("\"pid\":{me},")), "{l}");
    }
    let opens = lines
        .iter()
        .filter(|l| l.contains("\"event\":\"syscalls:sys_enter_openat\""))
        .count();
    assert!(
        [",", ";"]
            .iter()
            .any(|end| summary.contains(&format!("syscalls:sys_enter_openat {opens}{end}"))),
        "{summary} vs {opens} lines"
    );
    // The lost count has one entry per online CPU.
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let cpus = online.trim().split(['-', ',']).count().max(1);
    let lost = summary.split("lost ").nth(1).expect(summary);
    assert_eq!(lost.matches("cpu").count(), cpus, "{summary}");
}

#[test]
fn pid_of_a_process_that_exits_ends_the_run() {
    if !kernel("pid_of_a_process_that_exits_ends_the_run") {
        return;
    }
    let _serial = serial();
    // The process opens /etc/hostname every 20 ms until killed.
    let mut target = Command::new("sh")
        .args(["-c", "while :; do exec 3</etc/hostname; sleep 0.02; done"])
        .spawn()
        .unwrap();
    let pid = target.id();
    let mut rec = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["record", "-p", &pid.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once its opens come through, end the target.
    let mut stdout = rec.stdout.take().unwrap();
    let mut first = [0u8; 1];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    target.kill().unwrap();
    target.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut rec.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(rec.wait().unwrap().code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("stopped: process {pid} exited")),
        "{err}"
    );
    assert!(rest.contains("/etc/hostname"), "{rest}");
}

#[test]
fn cpu_list_keeps_samples_to_those_cpus() {
    if !kernel("cpu_list_keeps_samples_to_those_cpus") {
        return;
    }
    let _serial = serial();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let last: u32 = online
        .trim()
        .rsplit(['-', ','])
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let run = |rec_cpu: u32, work_cpu: u32| {
        sluice(&[
            "record",
            "--json",
            "-C",
            &rec_cpu.to_string(),
            "--",
            "taskset",
            "-c",
            &work_cpu.to_string(),
            "sh",
            "-c",
            "exec 3</etc/hostname",
        ])
    };
    // Workload on the CPU recorded: its opens arrive, all from that CPU.
    let (code, out, err) = run(last, last);
    assert_eq!(code, 0, "{err}");
    let samples: Vec<&str> = out.lines().filter(|l| l.starts_with('{')).collect();
    assert!(samples.iter().any(|l| l.contains("/etc/hostname")), "{out}");
    for l in &samples {
        assert!(l.contains(&format!("\"cpu\":{last},")), "{l}");
    }
    let summary = err
        .lines()
        .find(|l| l.starts_with("sluice record:"))
        .unwrap();
    assert!(
        summary.contains(&format!("lost 0 (cpu{last} 0);")),
        "{summary}"
    );
    if last > 0 {
        // Workload elsewhere: nothing.
        let (code, out, err) = run(last, 0);
        assert_eq!(code, 0, "{err}");
        assert!(!out.contains("/etc/hostname"), "{out}");
    }
    // A CPU that is not online: a usage error, nothing loaded.
    let (code, _, err) = sluice(&["record", "-C", "4095", "--", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("CPU 4095 is not online"), "{err}");
    let (code, _, err) = sluice(&["record", "-C", "3-1", "--", "true"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn option_conflicts_are_usage_errors() {
    for args in [
        &["record", "-p", "1", "--", "true"][..],
        &["record", "-p", "1", "-a"],
        &["record", "-p", "zero"],
        &["record", "-C", ""],
    ] {
        let (code, _, err) = sluice(args);
        assert_eq!(code, 2, "{args:?}: {err}");
    }
    let (code, _, err) = sluice(&["record", "-o", "/nonexistent-dir/x", "--", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot create"), "{err}");
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

/// A uprobe target that is no regular file is refused at once, as bad input: `/dev/zero`
/// used to be read until memory ran out, and a FIFO blocked the run for good, deaf to
/// Ctrl-C (issue 14, item 9). So is an object that is no regular file.
#[test]
fn uprobe_targets_and_objects_must_be_regular_files() {
    // Each run's filter shares its tracepoints with the others' (see `serial`).
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("sluice-fifo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("fifo");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
    let fifo_s = fifo.display().to_string();
    for (target, says) in [
        ("/dev/zero", "a character device"),
        (fifo_s.as_str(), "a FIFO"),
    ] {
        let (code, _, err) = sluice(&["inspect", target]);
        assert_eq!((code, err.contains(says)), (2, true), "{err}");
        if !rustix::process::geteuid().is_root() {
            common::skip("uprobe_targets_and_objects_must_be_regular_files (record)");
            continue;
        }
        let spec = format!("arg_at_least=uprobe/{target}:main");
        let (code, _, err) = sluice(&[
            "record",
            "-e",
            &fixture("record_filter.o"),
            "--event",
            &spec,
            "--",
            "true",
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!("{target}: cannot probe \"main\"")) && err.contains(says),
            "{err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// stdout whose reader is gone before the first write: a pipe with its read end closed.
fn closed_pipe() -> std::process::Stdio {
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    drop(read);
    std::process::Stdio::from(write)
}

/// A closed stdout ends a command quietly (exit 0, as `SIGPIPE` would), never a panic or an
/// abort (exit 134); a closed stderr silences messages and ends nothing (issue 14, item 7).
#[test]
fn closed_stdout_or_stderr_is_no_panic() {
    let insns = fixture("insns.o");
    let cases: [&[&str]; 5] = [
        &["inspect", &insns],
        &["inspect", "--disasm", &insns],
        &["--help"],
        &["--version"],
        &[
            "prologue",
            "kprobe/vfs_read(void *, char *buf, unsigned long count)",
        ],
    ];
    for args in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(args)
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // An error with stderr closed: the exit code still says it, nothing aborts.
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["inspect", "/nonexistent.o"])
        .stdout(Stdio::null())
        .stderr(closed_pipe())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `record ... 2>&1 | head -1`: once the reader is gone, the run ends as after Ctrl-C —
/// drained, probes removed, the workload ended, exit 0 — instead of aborting on the closed
/// stderr (exit 134) with its probe and workload left behind (issue 14, item 7).
#[test]
fn record_ends_cleanly_when_its_reader_goes() {
    if !rustix::process::geteuid().is_root() {
        common::skip("record_ends_cleanly_when_its_reader_goes: not root");
        return;
    }
    // Each run's filter shares its tracepoints with the others' (see `serial`).
    let _serial = serial();
    use std::io::BufRead as _;
    // Opens of a file under /etc/ from the workload itself (the demo filter's), endlessly.
    let marker = format!("sluice_epipe_{}", std::process::id());
    let script = format!("{marker}=1; while :; do read x </etc/hostname; done");
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    let write2 = write.try_clone().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["record", "--", "sh", "-c", &script])
        .stdout(Stdio::from(write))
        .stderr(Stdio::from(write2))
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut reader = std::io::BufReader::new(std::fs::File::from(read));
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    assert!(first.contains("bpf-output"), "{first}");
    drop(reader); // `head -1` exits
    let until = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > until {
            let _ = child.kill();
            let _ = Command::new("pkill").args(["-f", &marker]).status();
            panic!("record did not end when its stdout closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(probes_of(pid).is_empty());
    let left = Command::new("pgrep")
        .args(["-f", &marker])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "workload left: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}

/// A line reaches its reader while the run goes on (the output is written whenever the
/// session waits for more), not only once 64 lines have gathered or the run ends: one
/// open, then a workload that sleeps.
#[test]
fn a_lone_line_reaches_its_reader_while_the_run_goes_on() {
    if !rustix::process::geteuid().is_root() {
        common::skip("a_lone_line_reaches_its_reader_while_the_run_goes_on: not root");
        return;
    }
    let _serial = serial();
    use std::io::BufRead as _;
    // The workload marks its end: a line read before the mark came while it ran.
    let done = std::env::temp_dir().join(format!("sluice-lone-{}", std::process::id()));
    let _ = std::fs::remove_file(&done);
    let script = format!("read x </etc/hostname; sleep 4; : > {}", done.display());
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["record", "--", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    let ended = done.exists();
    assert!(first.contains("bpf-output"), "{first}");
    assert!(
        !ended,
        "the first line came only after the workload had ended"
    );
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(done.exists());
    let _ = std::fs::remove_file(&done);
}

/// `-o FILE` (issue 14, item 8): a symbolic link of another user is not followed (a link
/// planted in /tmp overwrote a root-owned file), one of root's or the user's is
/// (`/dev/stdout`); a run that fails before recording leaves an earlier file as it was.
#[test]
fn output_file_is_created_late_and_never_through_a_foreign_link() {
    if !rustix::process::geteuid().is_root() {
        common::skip("output_file_is_created_late_and_never_through_a_foreign_link: not root");
        return;
    }
    // Each run's filter shares its tracepoints with the others' (see `serial`).
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("sluice-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let victim = dir.join("victim");
    std::fs::write(&victim, b"precious\n").unwrap();
    let link = dir.join("planted");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    // The link belongs to user 65534 (nobody), as if another user had made it.
    rustix::fs::chownat(
        rustix::fs::CWD,
        &link,
        Some(rustix::fs::Uid::from_raw(65534)),
        None,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
    let link_s = link.display().to_string();
    let (code, _, err) = sluice(&["record", "-o", &link_s, "--", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("symbolic link of user 65534"), "{err}");
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious\n");
    // A run that fails at load keeps the earlier output.
    let kept = dir.join("kept.txt");
    std::fs::write(&kept, b"earlier run\n").unwrap();
    let kept_s = kept.display().to_string();
    let (code, _, err) = sluice(&[
        "record",
        "-e",
        &fixture("bad_verifier.o"),
        "-o",
        &kept_s,
        "--",
        "true",
    ]);
    assert_ne!(code, 0, "{err}");
    assert_eq!(std::fs::read(&kept).unwrap(), b"earlier run\n");
    // Root's own link is followed.
    let own = dir.join("own");
    let target = dir.join("target.txt");
    std::os::unix::fs::symlink(&target, &own).unwrap();
    let (code, _, err) = sluice(&["record", "-o", &own.display().to_string(), "--", "true"]);
    assert_eq!(code, 0, "{err}");
    assert!(target.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A workload that ignores `SIGINT` and `SIGTERM`, with a child of its own that does too,
/// is ended as a whole at Ctrl-C — the shell, its child, and an orphan whose parent already
/// exited — not only the direct child (issue 14, item 11).
#[test]
fn ctrl_c_ends_the_whole_workload_tree() {
    if !kernel("ctrl_c_ends_the_whole_workload_tree") {
        return;
    }
    // Each run's filter shares its tracepoints with the others' (see `serial`).
    let _serial = serial();
    let marker = format!("sluice_tree_{}", std::process::id());
    // Sleeps of this run only (another run's test may be on the machine at the same time).
    let (s0, s1) = (
        format!("300.{}", std::process::id()),
        format!("301.{}", std::process::id()),
    );
    // The shell ignores both signals, starts a child that ignores them (inherited), and
    // an orphan (its parent subshell exits at once).
    let script = format!(
        "{marker}=1; trap '' INT TERM; sleep {s0} & (sleep {s1} &) ; while :; do sleep 1; done"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["record", "--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let sluice_pid = child.id();
    let tree = || {
        let out = Command::new("ps")
            .args(["-e", "-o", "pid=,args="])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains(&marker) || l.contains(&s0) || l.contains(&s1))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let until = Instant::now() + Duration::from_secs(20);
    while tree().len() < 3 {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("the workload never started its children: {:?}", tree());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(sluice_pid as i32).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let left = tree();
    if !left.is_empty() {
        let _ = Command::new("pkill").args(["-f", &s0]).status();
        let _ = Command::new("pkill").args(["-f", &s1]).status();
        let _ = Command::new("pkill").args(["-f", &marker]).status();
    }
    assert!(left.is_empty(), "left running: {left:?}");
}

/// A program compiled to take a probe's four arguments (tests/bpf/dwarf_words.o), attached
/// by a spec that passes none: one error naming the program, the argument it misses and
/// `--event`, exit 2, the verifier log after it (issue 14, item 6).
#[test]
fn a_program_given_no_arguments_is_told_how() {
    if !kernel("a_program_given_no_arguments_is_told_how") {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let event = format!("p_words=uprobe/{}:sluice_cli_uprobe_target", exe.display());
    let (code, _, err) = sluice(&[
        "record",
        "-e",
        &fixture("dwarf_words.o"),
        "--event",
        &event,
        "--",
        "true",
    ]);
    assert_eq!(code, 2, "{err}");
    let first = err.lines().next().unwrap();
    assert!(
        first.contains("program 'p_words'")
            && first.contains("its argument 4")
            && first.contains("--event p_words=SPEC"),
        "{first}"
    );
    assert!(err.contains("R5 !read_ok"), "the log follows: {err}");
}
