//! `sluice probes`: a probe left by a `SIGKILL`ed run is listed as dead and removed by
//! `--clean`; nothing else removes it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use common::{fixture, probes_of};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Both tests run `probes --clean`, which removes every dead probe of the machine: one test's
/// clean would take the other's SIGKILLed leftover before it is listed.
static CLEANS: Mutex<()> = Mutex::new(());

/// A function of this binary for the uprobe (called once so the linker keeps it).
#[no_mangle]
#[inline(never)]
pub extern "C" fn sluice_probes_test_target(v: u64) -> u64 {
    std::hint::black_box(v) + 1
}

#[test]
fn clean_removes_the_leftover_of_a_killed_run() {
    let _one = CLEANS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !rustix::process::geteuid().is_root() {
        assert!(
            std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
            "needs root (SLUICE_REQUIRE_KERNEL=1)"
        );
        eprintln!(
            "\n*** SKIPPED kernel test clean_removes_the_leftover_of_a_killed_run: not root ***\n"
        );
        return;
    }
    let exe = std::env::current_exe().unwrap();
    std::hint::black_box(sluice_probes_test_target(std::hint::black_box(1)));
    let fixture = fixture("record_filter.o");
    let spec = format!(
        "arg_at_least=uprobe/{}:sluice_probes_test_target",
        exe.display()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "record",
            "-e",
            fixture.as_str(),
            "--event",
            &spec,
            "--",
            "sleep",
            "3",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let until = Instant::now() + Duration::from_secs(20);
    while probes_of(pid).is_empty() {
        assert!(Instant::now() < until, "no probe appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL: no handler runs
    child.wait().unwrap();
    assert_eq!(probes_of(pid).len(), 1, "a SIGKILLed run leaves its probe");

    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("probes")
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    let line = listing
        .lines()
        .find(|l| l.contains(&format!("sluice/p_{pid}_")))
        .expect(&listing);
    assert!(
        line.starts_with(&format!("{pid} ")) && line.contains(" dead "),
        "{line}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["probes", "--clean"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("removed sluice/p_{pid}_")), "{said}");
    assert!(probes_of(pid).is_empty());
}

/// Two runs in two PID namespaces are both pid 1 there: their probes must still have names
/// of their own (before, the second run's definition collided with the first's), and a
/// `--clean` meanwhile must leave both (they are in use), whatever pid 1 means here.
#[test]
fn runs_in_two_pid_namespaces_keep_their_own_probes() {
    let _one = CLEANS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !rustix::process::geteuid().is_root() {
        assert!(
            std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
            "needs root (SLUICE_REQUIRE_KERNEL=1)"
        );
        eprintln!("\n*** SKIPPED kernel test runs_in_two_pid_namespaces_keep_their_own_probes: not root ***\n");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let fixture = fixture("record_filter.o");
    let spec = format!(
        "arg_at_least=uprobe/{}:sluice_probes_test_target",
        exe.display()
    );
    let ns_probes = || {
        std::fs::read_to_string("/sys/kernel/tracing/uprobe_events")
            .unwrap_or_default()
            .lines()
            .filter(|l| {
                l.contains("sluice/p_1_")
                    && l.contains("_ns")
                    && l.contains(&*exe.display().to_string())
            })
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let run = || {
        Command::new("unshare")
            .args(["-pf", "--mount-proc", env!("CARGO_BIN_EXE_sluice")])
            .args([
                "record",
                "-e",
                fixture.as_str(),
                "--event",
                &spec,
                "--",
                "sleep",
                "3",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (run(), run());
    let until = Instant::now() + Duration::from_secs(20);
    while ns_probes().len() < 2 {
        assert!(
            Instant::now() < until,
            "two probes never appeared: {:?}",
            ns_probes()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let both = ns_probes();
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["probes", "--clean"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ns_probes(), both, "--clean removed a probe in use");
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(err.contains("probes removed 1"), "{err}");
    }
    assert!(ns_probes().is_empty(), "{:?}", ns_probes());
}
