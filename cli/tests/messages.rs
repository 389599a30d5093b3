//! Messages and exit codes as users meet them (issue 14, item 12): every subcommand's
//! `--help`, grammar errors as bad input, one clean line per error.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{fixture, sluice};

#[test]
fn every_subcommand_has_help() {
    for cmd in ["record", "inspect", "prologue", "probes"] {
        for flag in ["--help", "-h"] {
            let (code, out, err) = sluice(&[cmd, flag]);
            assert_eq!(code, 0, "{cmd} {flag}: {err}");
            let first = out.lines().nth(1).unwrap_or_default();
            assert!(
                first.starts_with("  sluice ") && first.contains(cmd),
                "{cmd} {flag}: {out}"
            );
            assert!(
                ["record", "inspect", "prologue", "probes"]
                    .iter()
                    .filter(|c| **c != cmd)
                    .all(|c| !out.contains(&format!("] {c} "))
                        && !out.contains(&format!("sluice {c} "))),
                "{cmd} {flag}: another command's usage: {out}"
            );
        }
    }
    // After `--`, `--help` belongs to the workload.
    let (code, out, _) = sluice(&["record", "--duration", "0", "--", "--help"]);
    assert!(!out.contains("usage:"), "{code}: {out}");
}

#[test]
fn cpu_list_errors_say_it_once() {
    let (code, _, err) = sluice(&["record", "-C", "x", "--", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(!err.contains(": :"), "{err}");
    assert!(err.contains("-C x: not a CPU number"), "{err}");
}

#[test]
fn a_spec_that_does_not_parse_is_bad_input() {
    if !rustix::process::geteuid().is_root() {
        common::skip("a_spec_that_does_not_parse_is_bad_input: not root");
        return;
    }
    let (code, _, err) = sluice(&[
        "record",
        "-e",
        &fixture("record_filter.o"),
        "--event",
        "arg_at_least=kprobe/vfs_read(((",
        "--",
        "true",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unbalanced '('"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}
