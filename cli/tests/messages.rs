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

/// As a user who may not read tracefs (it is root's, mode 0700), `record` says so, not
/// "tracefs not found".
#[test]
fn tracefs_unreadable_is_said_as_such() {
    if !rustix::process::geteuid().is_root() {
        common::skip("tracefs_unreadable_is_said_as_such: needs root to become another user");
        return;
    }
    let readable_by_others = std::fs::metadata("/sys/kernel/tracing")
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o005 != 0)
        .unwrap_or(true);
    if readable_by_others {
        eprintln!("SKIPPED tracefs_unreadable_is_said_as_such: tracefs is readable by all here");
        return;
    }
    // A copy every user can run, run as nobody.
    let dir = std::env::temp_dir().join(format!("sluice-nobody-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("sluice");
    std::fs::copy(env!("CARGO_BIN_EXE_sluice"), &bin).unwrap();
    for p in [&dir, &bin] {
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args(["record", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("not readable by this user"), "{err}");
    assert!(!err.contains("not found"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A program the verifier refuses: its log once, after one line naming object and program,
/// with `-v` too (it was printed twice, three times with `-v`).
#[test]
fn the_verifier_log_is_printed_once() {
    if !rustix::process::geteuid().is_root() {
        common::skip("the_verifier_log_is_printed_once: not root");
        return;
    }
    for v in [&[][..], &["-v"][..]] {
        let mut args: Vec<&str> = v.to_vec();
        let bad = fixture("bad_verifier.o");
        args.extend(["record", "-e", &bad, "--", "true"]);
        let (code, _, err) = sluice(&args);
        assert_eq!(code, 1, "{err}");
        assert!(
            err.lines().any(|l| l.starts_with("sluice: ")
                && l.contains("the verifier refused program 'null_deref'")),
            "{err}"
        );
        assert_eq!(
            err.matches("R0 invalid mem access 'map_value_or_null'")
                .count(),
            1,
            "{v:?}: {err}"
        );
    }
}

/// `--event NAME=SPEC` for a program no object has is bad input naming it and listing the
/// programs the objects have; it is checked before anything is made (no root needed).
#[test]
fn an_event_for_a_program_no_object_has_lists_the_programs() {
    let (words, filter) = (fixture("dwarf_words.o"), fixture("record_filter.o"));
    let (code, _, err) = sluice(&[
        "record",
        "-e",
        &words,
        "--event",
        "nope=uprobe//bin/true:0x10",
        "--",
        "true",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--event nope: no such program")
            && err.contains("p_words (uprobe//sluice/dwarf_words:f(a, b, c, d))"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // Over several objects: every object's programs, each with its object.
    let (code, _, err) = sluice(&[
        "record",
        "-e",
        &words,
        "-e",
        &filter,
        "--event",
        "p_words=uprobe//bin/true:0x10",
        "--event",
        "nope=kprobe/vfs_read",
        "--",
        "true",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--event nope: no such program"), "{err}");
    assert!(
        err.contains(&format!(
            "p_words (uprobe//sluice/dwarf_words:f(a, b, c, d)) in {words}"
        )),
        "{err}"
    );
    assert!(
        err.contains("arg_at_least (") && err.contains(&format!(" in {filter}")),
        "{err}"
    );
}

/// `--event PROG=@FILE` reads the specs of FILE; a file that cannot be read, or that holds
/// no spec, is bad input naming it.
#[test]
fn an_event_spec_file_must_hold_specs() {
    let dir = std::env::temp_dir().join(format!("sluice-event-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.specs");
    std::fs::write(&empty, "\n# nothing\n\n").unwrap();
    let missing = dir.join("missing.specs");
    for (file, says) in [(&empty, "no spec in the file"), (&missing, "cannot read")] {
        let event = format!("p_words=@{}", file.display());
        let (code, _, err) = sluice(&["record", "--event", &event, "--", "true"]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(&format!("--event @{}: {says}", file.display())),
            "{err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
