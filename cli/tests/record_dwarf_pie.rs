//! `sluice record` reading C globals of position-independent files: a PIE executable and a
//! shared library, each compiled by the test with gcc and clang at `-O0` and `-O2`.
//!
//! A global's DWARF location (`DW_OP_addr`) is its link-time address; a PIE or a library is
//! loaded elsewhere (ASLR). The prologue reads the global at the probed instruction's address
//! (the uprobe's `pt_regs` ip) plus the global's link-time distance from the probe site, as the
//! kernel's `@+FILEOFFSET` fetch-arg does. The program of `tests/bpf/dwarf_words.o` sends its
//! four values (`n, GLOBAL, n, $err`) through a perf event array and returns 1; for every hit:
//! BPF words == the uprobe's fetch-args == what the program printed, `$err` is 0, and the hit's
//! address is not the link-time one (the file really was relocated). A global of a PIE at a
//! return probe is refused with a message naming it.
//!
//! The resolved spec `sluice prologue --emit` writes for the same probe (the global as the
//! uprobe tracer's `@+FILEOFFSET`) is recorded the same way, with the same checks: a spec
//! `record --event` takes back, whose prologue reads the global where the kernel does.
#![cfg(target_arch = "x86_64")]
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{compile, fixture, pair_hit, record_dir, record_words, repo, sluice, PairHit};
use sluice_core::probe::{self, Section};
use sluice_runtime::probe::debuginfo::DebugInfo;
use std::path::Path;

/// How many calls the program makes.
const CALLS: usize = 3;

/// Records `spec` (four values: `n, GLOBAL, n, $err`) on `probed` while `workload` runs and
/// checks every hit against `printed` (`n global` per call, in order); then the same with the
/// resolved spec `prologue --emit` writes for it (`emitted` in `dir`).
fn check(probed: &Path, spec: &str, workload: &str, printed_prefix: &str, label: &str) {
    check_recorded(probed, spec, spec, workload, printed_prefix, label);
    let dir = probed.parent().unwrap();
    let file = dir.join("emitted.specs");
    let f = file.display().to_string();
    let (code, _, err) = sluice(&["prologue", "--emit", &f, spec]);
    assert_eq!(code, 0, "{label}: --emit: {err}");
    let emitted = std::fs::read_to_string(&file).unwrap();
    let emitted = emitted.trim_end();
    assert_eq!(emitted.lines().count(), 1, "{label}: {emitted}");
    assert!(
        emitted.contains("=@+0x"),
        "{label}: the global as @+FILEOFFSET: {emitted}"
    );
    check_recorded(
        probed,
        spec,
        &format!("@{f}"),
        workload,
        printed_prefix,
        &format!("{label}, emitted {emitted}"),
    );
}

/// [`check`] of one recording: `recorded` (a spec, or `@FILE`) given to `record`, the site
/// found from `spec`.
fn check_recorded(
    probed: &Path,
    spec: &str,
    recorded: &str,
    workload: &str,
    printed_prefix: &str,
    label: &str,
) {
    let Ok(Section::Probe(parsed)) = probe::parse(spec) else {
        panic!("{spec}")
    };
    let sites = DebugInfo::open(probed, None)
        .unwrap()
        .sites(&parsed)
        .unwrap();
    assert_eq!(sites.len(), 1, "{label}: {sites:#?}");
    let link_address = sites[0].address;
    let out = record_words(recorded, workload, 1, label);
    let printed: Vec<Vec<String>> = out
        .lines()
        .filter_map(|l| l.strip_prefix(printed_prefix))
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    assert_eq!(printed.len(), CALLS, "{label}: printed\n{out}");
    let pairs: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"pair\""))
        .collect();
    assert_eq!(pairs.len(), CALLS, "{label}: hits\n{out}");
    for (k, (l, want)) in pairs.iter().zip(&printed).enumerate() {
        let PairHit { ip, fields, words } = pair_hit(l);
        assert_ne!(ip, link_address, "{label} #{k}: the file was not relocated");
        // n, the global, n again: the kernel's three fetch-args and the first three words.
        let expect = [want[0].as_str(), want[1].as_str(), want[0].as_str()];
        assert_eq!(fields, expect, "{label} #{k}: fetch-args vs printed");
        assert_eq!(words[..3], expect, "{label} #{k}: BPF vs printed");
        assert_eq!(
            words[3], "0",
            "{label} #{k}: $err (a failed read of the global)"
        );
    }
    eprintln!(
        "{label}: {CALLS} hits at {:#x} + load bias, BPF == fetch-args == printed",
        link_address
    );
}

fn pie_executable(cc: &str, opt: &str) {
    let Some(dir) = record_dir("pie-exe", cc, opt) else {
        return;
    };
    let bin = dir.join(format!("types_{cc}_O{opt}"));
    let src = repo().join("tests/dwarf/types.c");
    let o = format!("-O{opt}");
    if !compile(
        cc,
        &[
            "-g",
            &o,
            "-fPIE",
            "-pie",
            "-o",
            bin.to_str().unwrap(),
            src.to_str().unwrap(),
        ],
    ) {
        return;
    }
    let b = bin.display().to_string();
    // `block n g_total sq`: the program prints n and g_total as `block` sees them.
    check(
        &bin,
        &format!("uprobe/{b}:block(n, g_total, n, $err)"),
        &format!("echo | {b} {CALLS}"),
        "block ",
        &format!("PIE {cc} -O{opt}"),
    );
    // At a return probe, where the registers no longer say where the file is: refused,
    // naming the variable.
    let event = format!("p_words=uretprobe/{b}:block(g_total, g_total, g_total, $err)");
    let (code, _, err) = sluice(&[
        "record",
        "-e",
        &fixture("dwarf_words.o"),
        "--event",
        &event,
        "--",
        "true",
    ]);
    assert_ne!(code, 0, "{err}");
    assert!(
        err.contains("'g_total'") && err.contains("position-independent"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

fn shared_library(cc: &str, opt: &str) {
    let Some(dir) = record_dir("pie-lib", cc, opt) else {
        return;
    };
    let lib = dir.join(format!("libpic_{cc}_O{opt}.so"));
    let main = dir.join(format!("pic_main_{cc}_O{opt}"));
    let o = format!("-O{opt}");
    let lib_src = repo().join("tests/dwarf/pic_lib.c");
    let main_src = repo().join("tests/dwarf/pic_main.c");
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    let lib_name = format!("-lpic_{cc}_O{opt}");
    let built = compile(
        cc,
        &[
            "-g",
            &o,
            "-shared",
            "-fPIC",
            "-o",
            lib.to_str().unwrap(),
            lib_src.to_str().unwrap(),
        ],
    ) && compile(
        cc,
        &[
            "-g",
            &o,
            "-o",
            main.to_str().unwrap(),
            main_src.to_str().unwrap(),
            "-L",
            dir.to_str().unwrap(),
            &lib_name,
            &rpath,
        ],
    );
    if !built {
        return;
    }
    check(
        &lib,
        &format!("uprobe/{}:lib_add(n, lib_total, n, $err)", lib.display()),
        &format!("echo | {} {CALLS}", main.display()),
        "lib_add ",
        &format!("shared library {cc} -O{opt}"),
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gcc_o0_pie_global() {
    pie_executable("gcc", "0");
}

#[test]
fn gcc_o2_pie_global() {
    pie_executable("gcc", "2");
}

#[test]
fn clang_o0_pie_global() {
    pie_executable("clang", "0");
}

#[test]
fn clang_o2_pie_global() {
    pie_executable("clang", "2");
}

#[test]
fn gcc_o0_shared_library_global() {
    shared_library("gcc", "0");
}

#[test]
fn gcc_o2_shared_library_global() {
    shared_library("gcc", "2");
}

#[test]
fn clang_o0_shared_library_global() {
    shared_library("clang", "0");
}

#[test]
fn clang_o2_shared_library_global() {
    shared_library("clang", "2");
}
