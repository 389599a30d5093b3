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
#![cfg(target_arch = "x86_64")]
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{build_traced, pair_hit, record_dir, record_words, PairHit};
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

fn run(cc: &str, opt: &str) {
    let Some(dir) = record_dir("inline", cc, opt) else {
        return;
    };
    let Some(bin) = build_traced(cc, opt, &dir, "inline") else {
        return;
    };
    let b = bin.display().to_string();
    let spec = format!("uprobe/{b}:scale(x, factor, tag, $err)");
    // Where the two instances are (the resolver's answer; which caller holds each is nm's).
    let Ok(Section::Probe(parsed)) = probe::parse(&spec) else {
        panic!("{spec}")
    };
    let sites = DebugInfo::open(&bin, None).unwrap().sites(&parsed).unwrap();
    assert_eq!(sites.len(), 2, "{cc} -O{opt}: {sites:#?}");
    assert!(sites.iter().all(|s| s.inlined));
    let funcs = functions(&bin);
    let mut site_caller: BTreeMap<u64, String> = BTreeMap::new();
    for s in &sites {
        site_caller.insert(s.address, caller_of(&funcs, s.address).to_owned());
    }
    let mut callers: Vec<&str> = site_caller.values().map(String::as_str).collect();
    callers.sort_unstable();
    assert_eq!(callers, ["left", "right"], "{cc} -O{opt}");
    if opt == "2" {
        // The point of two programs: each instance reads other registers.
        assert_ne!(sites[0].fetch_args, sites[1].fetch_args, "{cc} -O{opt}");
    }

    let workload = format!("echo | {b} {CALLS}");
    let out = record_words(&spec, &workload, 2, &format!("{cc} -O{opt}"));
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
            .unwrap_or_else(|| panic!("{cc} -O{opt}: a hit at {ip:#x}, no site there: {l}"));
        *sites_hit.entry(ip).or_default() += 1;
        by_caller
            .entry(caller.clone())
            .or_default()
            .push((fields, words));
    }
    assert_eq!(sites_hit.len(), 2, "{cc} -O{opt}: both instances hit");
    assert!(sites_hit.values().all(|&n| n == CALLS), "{sites_hit:?}");
    for caller in ["left", "right"] {
        let want = printed(caller);
        let got = &by_caller[caller];
        assert_eq!(want.len(), CALLS, "{cc} -O{opt} {caller}: printed\n{out}");
        assert_eq!(got.len(), CALLS, "{cc} -O{opt} {caller}: hits\n{out}");
        for (k, ((fields, words), want)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                fields, want,
                "{cc} -O{opt} {caller} #{k}: fetch-args vs printed"
            );
            assert_eq!(
                &words[..3],
                &want[..],
                "{cc} -O{opt} {caller} #{k}: BPF vs printed"
            );
            assert_eq!(words[3], "0", "{cc} -O{opt} {caller} #{k}: $err");
        }
    }
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
