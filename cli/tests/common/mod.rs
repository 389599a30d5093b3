//! Helpers of the CLI tests: run the built `sluice`, find fixtures, skip loudly.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the built `sluice` with `args`: exit code (-1 when killed by a signal), stdout,
/// stderr.
pub fn sluice(args: &[&str]) -> (i32, String, String) {
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

/// The repository's root (the workspace above `cli/`).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The path of fixture `tests/bpf/NAME`, as an argument.
pub fn fixture(name: &str) -> String {
    repo().join("tests/bpf").join(name).display().to_string()
}

/// Whether a missing tool or kernel feature must fail the test (`SLUICE_REQUIRE_KERNEL=1`).
pub fn required() -> bool {
    std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() == Ok("1")
}

/// Says why a test does not run, or fails when [`required`].
pub fn skip(what: &str) {
    assert!(!required(), "{what} (SLUICE_REQUIRE_KERNEL=1)");
    eprintln!("SKIPPED: {what}");
}

/// The tracefs mount (sluice mounts it when needed).
pub fn tracefs() -> PathBuf {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("uprobe_events").exists())
        .expect("tracefs mounted (sluice mounts it when needed)")
}

/// Lines of uprobe_events naming a sluice event made by `pid`.
pub fn probes_of(pid: u32) -> Vec<String> {
    let text = std::fs::read_to_string(tracefs().join("uprobe_events")).unwrap();
    let tag = format!("sluice/p_{pid}_");
    text.lines()
        .filter(|l| l.contains(&tag))
        .map(str::to_owned)
        .collect()
}
