//! The record issue's uprobe test: a C program the test compiles with `cc -g` calls a function
//! with a pseudo-random sequence; the BPF filter passes only calls whose first argument is a
//! magic value (fetched by the typed-argument prologue), so `sluice record` prints exactly as
//! many samples as the program reports magic calls.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{fixture, repo, skip, sluice};
use std::process::Command;

#[test]
fn only_calls_with_the_magic_argument_reach_user_space() {
    if !rustix::process::geteuid().is_root() {
        skip("record needs root");
        return;
    }
    let dir = std::env::temp_dir().join(format!("sluice-record-magic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("magic");
    let built = Command::new("cc")
        .args(["-g", "-O1", "-o"])
        .arg(&bin)
        .arg(repo().join("tests/record/magic.c"))
        .status();
    if !built.is_ok_and(|s| s.success()) {
        skip("cc is needed to build tests/record/magic.c");
        return;
    }
    let b = bin.display().to_string();
    let spec = format!("magic=uprobe/{b}:magic_target(unsigned long)");
    for (n, seed) in [("3000", "1"), ("5000", "12345")] {
        let (code, out, err) = sluice(&[
            "record",
            "--json",
            "-e",
            &fixture("record_magic.o"),
            "--event",
            &spec,
            "--",
            &b,
            n,
            seed,
        ]);
        assert_eq!(code, 0, "{err}");
        let reported: u64 = out
            .lines()
            .find_map(|l| l.strip_prefix("magic "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("the program's report is missing:\n{out}"));
        let samples: Vec<&str> = out
            .lines()
            .filter(|l| l.starts_with("{\"type\":\"sample\""))
            .collect();
        assert!(reported > 0 && reported < n.parse().unwrap(), "{reported}");
        assert_eq!(
            samples.len() as u64,
            reported,
            "one sample per magic call:\n{err}"
        );
        assert!(
            samples.iter().all(|l| l.contains("_magic_target\"")),
            "{out}"
        );
        assert!(err.contains("lost 0"), "{err}");
        assert!(err.contains("probes removed 1"), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
