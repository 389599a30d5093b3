//! `sluice record` on a function inlined into two callers: one probe and one loaded program
//! (with its own prologue) per inlined instance, all removed at the end.
//!
//! `tests/dwarf/inline.c` (gcc and clang, `-O0` and `-O2`) inlines `scale(x, factor, tag)`
//! into `left(a, f, t)` and `right(f, t, a)`; at `-O2` the two instances find the same
//! parameters in different registers, so a program attached with the other site's prologue
//! would read wrong values. The program of `tests/bpf/dwarf_words.o` sends the four values
//! its prologue passed (`x, factor, tag, $err`) through a perf event array and returns 1, so
//! the uprobe's own sample (its fetch-args) comes with it. For every hit: the caller the
//! sample's address lies in (per `nm`) is the caller that printed the values, and BPF words
//! == fetch-args == printed; both instances are hit.
//!
//! The same holds for the resolved specs `sluice prologue --emit` writes (one a line, a
//! site each), given back as one `--event p_words=SPEC` per line or as `--event
//! p_words=@FILE`: one program per spec, each attached at its own site.
#![cfg(target_arch = "x86_64")]
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{build_traced, pair_hit, record_dir, record_words, record_words_at, sluice, PairHit};
use sluice_core::probe::{self, Section};
use sluice_runtime::probe::debuginfo::DebugInfo;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// How many times the program calls each caller.
const CALLS: usize = 3;

/// Function symbols of `bin` per `nm`: (address, name), ascending.
fn functions(bin: &Path) -> Vec<(u64, String)> {
    let out = Command::new("nm").arg(bin).output().unwrap();
    assert!(out.status.success(), "nm {}", bin.display());
    let mut v: Vec<(u64, String)> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (addr, kind, name) = (f.next()?, f.next()?, f.next()?);
            matches!(kind, "T" | "t")
                .then(|| Some((u64::from_str_radix(addr, 16).ok()?, name.to_owned())))?
        })
        .collect();
    v.sort();
    v
}

/// The function `address` lies in: the last symbol at or below it.
fn caller_of(funcs: &[(u64, String)], address: u64) -> &str {
    let i = funcs.partition_point(|(a, _)| *a <= address);
    &funcs[i - 1].1
}

/// A hit's kernel fetch-args and BPF words, as text.
type Hit = (Vec<String>, Vec<String>);

/// Checks the output of a recording of both instances (`site_caller`: each site's caller):
/// every hit at a site, each site hit [`CALLS`] times, and per caller, in call order, the
/// kernel's fetch-args and the program's words equal to what the caller printed, `$err` 0.
fn check_hits(out: &str, site_caller: &BTreeMap<u64, String>, label: &str) {
    // What the program printed, per caller, in call order: x factor tag.
    let printed = |caller: &str| -> Vec<Vec<String>> {
        out.lines()
            .filter_map(|l| l.strip_prefix(&format!("{caller} ")))
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .collect()
    };
    let mut by_caller: BTreeMap<String, Vec<Hit>> = BTreeMap::new();
    let mut sites_hit: BTreeMap<u64, usize> = BTreeMap::new();
    for l in out.lines().filter(|l| l.starts_with("{\"type\":\"pair\"")) {
        let PairHit { ip, fields, words } = pair_hit(l);
        let caller = site_caller
            .get(&ip)
            .unwrap_or_else(|| panic!("{label}: a hit at {ip:#x}, no site there: {l}"));
        *sites_hit.entry(ip).or_default() += 1;
        by_caller
            .entry(caller.clone())
            .or_default()
            .push((fields, words));
    }
    assert_eq!(sites_hit.len(), 2, "{label}: both instances hit\n{out}");
    assert!(sites_hit.values().all(|&n| n == CALLS), "{sites_hit:?}");
    for caller in ["left", "right"] {
        let want = printed(caller);
        let got = &by_caller[caller];
        assert_eq!(want.len(), CALLS, "{label} {caller}: printed\n{out}");
        assert_eq!(got.len(), CALLS, "{label} {caller}: hits\n{out}");
        for (k, ((fields, words), want)) in got.iter().zip(&want).enumerate() {
            assert_eq!(fields, want, "{label} {caller} #{k}: fetch-args vs printed");
            assert_eq!(
                &words[..3],
                &want[..],
                "{label} {caller} #{k}: BPF vs printed"
            );
            assert_eq!(words[3], "0", "{label} {caller} #{k}: $err");
        }
    }
}

/// The two instances of `scale` in `bin` (the resolver's answer), each with the caller
/// that holds it (nm's answer).
fn site_callers(bin: &Path, spec: &str, label: &str) -> BTreeMap<u64, String> {
    let Ok(Section::Probe(parsed)) = probe::parse(spec) else {
        panic!("{spec}")
    };
    let sites = DebugInfo::open(bin, None).unwrap().sites(&parsed).unwrap();
    assert_eq!(sites.len(), 2, "{label}: {sites:#?}");
    assert!(sites.iter().all(|s| s.inlined));
    let funcs = functions(bin);
    let mut site_caller: BTreeMap<u64, String> = BTreeMap::new();
    for s in &sites {
        site_caller.insert(s.address, caller_of(&funcs, s.address).to_owned());
    }
    let mut callers: Vec<&str> = site_caller.values().map(String::as_str).collect();
    callers.sort_unstable();
    assert_eq!(callers, ["left", "right"], "{label}");
    if label.ends_with("-O2") {
        // The point of two programs: each instance reads other registers.
        assert_ne!(sites[0].fetch_args, sites[1].fetch_args, "{label}");
    }
    site_caller
}

fn run(cc: &str, opt: &str) {
    let Some(dir) = record_dir("inline", cc, opt) else {
        return;
    };
    let Some(bin) = build_traced(cc, opt, &dir, "inline") else {
        return;
    };
    let b = bin.display().to_string();
    let spec = format!("uprobe/{b}:scale(x, factor, tag, $err)");
    let site_caller = site_callers(&bin, &spec, &format!("{cc} -O{opt}"));
    let workload = format!("echo | {b} {CALLS}");
    let out = record_words(&spec, &workload, 2, &format!("{cc} -O{opt}"));
    check_hits(&out, &site_caller, &format!("{cc} -O{opt}"));
    eprintln!(
        "{cc} -O{opt}: 2 instances ({}), {} hits each, BPF == fetch-args == printed",
        site_caller
            .iter()
            .map(|(a, c)| format!("{c} {a:#x}"))
            .collect::<Vec<_>>()
            .join(", "),
        CALLS
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `prologue --emit` writes a resolved spec per instance; recording them (an `--event` for
/// each line, then `--event PROG=@FILE`) attaches the program at both instances, each with
/// its own prologue: both callers' hits, right values.
fn emitted(cc: &str, opt: &str) {
    let Some(dir) = record_dir("inline-emit", cc, opt) else {
        return;
    };
    let Some(bin) = build_traced(cc, opt, &dir, "inline") else {
        return;
    };
    let b = bin.display().to_string();
    let label = format!("{cc} -O{opt}");
    let spec = format!("uprobe/{b}:scale(x, factor, tag, $err)");
    let site_caller = site_callers(&bin, &spec, &label);
    let file = dir.join("scale.specs");
    let f = file.display().to_string();
    let (code, _, err) = sluice(&["prologue", "--emit", &f, &spec]);
    assert_eq!(code, 0, "{label}: {err}");
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{label}: one spec per instance:\n{text}");
    for l in &lines {
        // Resolved: a raw file offset, every variable a fetch-arg.
        assert!(l.starts_with(&format!("uprobe/{b}:0x")), "{label}: {l}");
        assert!(!l.contains("(x,") && l.contains("x=%"), "{label}: {l}");
    }
    let workload = format!("echo | {b} {CALLS}");
    let out = record_words_at(&lines, &workload, 2, &format!("{label} --event x2"));
    check_hits(&out, &site_caller, &format!("{label} --event x2"));
    let from_file = format!("@{f}");
    let out = record_words_at(&[&from_file], &workload, 2, &format!("{label} @FILE"));
    check_hits(&out, &site_caller, &format!("{label} @FILE"));
    eprintln!("{label}: the two emitted specs, given back, recorded both instances");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gcc_o2_emitted_specs_record_both_instances() {
    emitted("gcc", "2");
}

#[test]
fn clang_o2_emitted_specs_record_both_instances() {
    emitted("clang", "2");
}

#[test]
fn gcc_o0_each_inlined_instance_has_its_program() {
    run("gcc", "0");
}

#[test]
fn gcc_o2_each_inlined_instance_has_its_program() {
    run("gcc", "2");
}

#[test]
fn clang_o0_each_inlined_instance_has_its_program() {
    run("clang", "0");
}

#[test]
fn clang_o2_each_inlined_instance_has_its_program() {
    run("clang", "2");
}
