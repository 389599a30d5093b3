//! `sluice record` with probes whose arguments are C variables: the probe sits where the
//! DWARF-built prologue was computed (`FUNC` alone is after the function's prologue, as perf
//! places it), so the kernel's own fetch-args, created beside the program's, read exactly
//! the values the traced program passed and prints.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{fixture, repo, skip, sluice};
use std::process::Command;

/// The traced program's report: one `(a_ops, bytes, offset, chunk)` per call.
fn printed(stdout: &str) -> Vec<(u64, u64, i64, i64)> {
    stdout
        .lines()
        .filter(|l| l.starts_with("0x"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                u64::from_str_radix(f[0].trim_start_matches("0x"), 16).unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

/// The integer field `name` of a JSON sample line (the CLI's own flat format).
fn field(line: &str, name: &str) -> i64 {
    let key = format!("\"{name}\":");
    let at = line
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {line}"))
        + key.len();
    let rest = &line[at..];
    let end = rest.find([',', '}']).unwrap();
    rest[..end].parse().unwrap()
}

fn run(opt: &str) {
    if !rustix::process::geteuid().is_root() {
        skip("record with DWARF arguments needs root");
        return;
    }
    let dir =
        std::env::temp_dir().join(format!("sluice-record-dwarf-{}-O{opt}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join(format!("chain_O{opt}"));
    let built = Command::new("gcc")
        .args(["-g", &format!("-O{opt}"), "-o"])
        .arg(&bin)
        .arg(repo().join("tests/dwarf/chain.c"))
        .status();
    if !built.is_ok_and(|s| s.success()) {
        skip("gcc is needed to build tests/dwarf/chain.c");
        return;
    }
    let b = bin.display().to_string();
    let chain = format!(
        "chain=uprobe/{b}:generic_perform_write(file->f_mapping->a_ops, bytes, offset, $err)"
    );
    let local = format!("local=uprobe/{b}:sink(v, v, $err)");
    let workload = format!("echo | {b} 4660 100 200 22136 300 -5 48879 7 1000000");
    let (code, out, err) = sluice(&[
        "record",
        "--json",
        "-e",
        &fixture("dwarf_chain.o"),
        "--event",
        &chain,
        "--event",
        &local,
        "--",
        "sh",
        "-c",
        &workload,
    ]);
    assert_eq!(code, 0, "{err}");
    let calls = printed(&out);
    assert_eq!(calls.len(), 3, "{out}");
    let samples: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("\"type\":\"sample\""))
        .collect();
    let writes: Vec<&&str> = samples
        .iter()
        .filter(|l| l.contains("_generic_perform_write\""))
        .collect();
    let sinks: Vec<&&str> = samples.iter().filter(|l| l.contains("_sink\"")).collect();
    assert_eq!(writes.len(), calls.len(), "{out}");
    assert_eq!(sinks.len(), calls.len(), "{out}");
    for ((w, s), (a_ops, bytes, offset, chunk)) in writes.iter().zip(&sinks).zip(&calls) {
        assert_eq!(field(w, "a_ops") as u64, *a_ops, "{w}");
        assert_eq!(field(w, "bytes") as u64, *bytes, "{w}");
        assert_eq!(field(w, "offset"), *offset, "{w}");
        assert_eq!(field(s, "v"), *chunk, "{s}");
    }
    assert!(err.contains("probes removed 2"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dwarf_arguments_at_o0_are_fetched_where_the_prologue_was_built() {
    run("0");
}

#[test]
fn dwarf_arguments_at_o2_are_fetched_where_the_prologue_was_built() {
    run("2");
}
