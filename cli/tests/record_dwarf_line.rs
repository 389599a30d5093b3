//! `sluice record` at a `FUNC:LINE` place: `uprobe/BIN:walk:LINE(i, total, n, $err)` on the
//! line inside a loop of `tests/dwarf/line.c` (gcc and clang, `-O0` and `-O2`) where the
//! locals hold that iteration's values. The program of `tests/bpf/dwarf_words.o` sends the
//! four values its prologue passed through a perf event array and returns 1, so the uprobe's
//! own sample (its fetch-args, from the same DWARF) comes with it. For every hit: its address
//! is a site of the line (as the resolver places it, which `perf probe` agrees with, see
//! `cli/tests/line_oracle.rs`), and BPF words == fetch-args == what the program printed for
//! that iteration; every iteration is hit once.
#![cfg(target_arch = "x86_64")]
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{build_traced, pair_hit, record_dir, record_words, repo, PairHit};
use sluice_core::probe::{self, Section};
use sluice_runtime::probe::debuginfo::DebugInfo;
use std::collections::BTreeSet;

/// Loop iterations.
const CALLS: usize = 5;

/// The line of the `report(...)` call relative to `walk`'s first line, as `FUNC:LINE` counts.
fn probed_line() -> usize {
    let src = std::fs::read_to_string(repo().join("tests/dwarf/line.c")).unwrap();
    let line_of = |needle: &str| src.lines().position(|l| l.contains(needle)).unwrap();
    line_of("/* probed line */") - line_of("long walk(")
}

fn run(cc: &str, opt: &str) {
    let Some(dir) = record_dir("line", cc, opt) else {
        return;
    };
    let Some(bin) = build_traced(cc, opt, &dir, "line") else {
        return;
    };
    let b = bin.display().to_string();
    let line = probed_line();
    let spec = format!("uprobe/{b}:walk:{line}(i, total, n, $err)");
    let Ok(Section::Probe(parsed)) = probe::parse(&spec) else {
        panic!("{spec}")
    };
    // The line's sites, as the resolver places them.
    let sites = DebugInfo::open(&bin, None).unwrap().sites(&parsed).unwrap();
    assert!(!sites.is_empty(), "{cc} -O{opt}");
    assert!(sites.iter().all(|s| !s.inlined), "{cc} -O{opt}: {sites:#?}");
    let addresses: BTreeSet<u64> = sites.iter().map(|s| s.address).collect();

    let workload = format!("echo | {b} {CALLS}");
    let out = record_words(&spec, &workload, sites.len(), &format!("{cc} -O{opt}"));
    // What the program printed per iteration: i total n.
    let printed: Vec<Vec<String>> = out
        .lines()
        .filter_map(|l| l.strip_prefix("hit "))
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    assert_eq!(printed.len(), CALLS, "{cc} -O{opt}: printed\n{out}");
    let mut hits = 0usize;
    for l in out.lines().filter(|l| l.starts_with("{\"type\":\"pair\"")) {
        let PairHit { ip, fields, words } = pair_hit(l);
        assert!(
            addresses.contains(&ip),
            "{cc} -O{opt}: a hit at {ip:#x}, not a site of walk:{line} {addresses:x?}: {l}"
        );
        let want = printed
            .get(hits)
            .unwrap_or_else(|| panic!("{cc} -O{opt}: more hits than iterations\n{out}"));
        assert_eq!(&fields, want, "{cc} -O{opt} #{hits}: fetch-args vs printed");
        assert_eq!(
            &words[..3],
            &want[..],
            "{cc} -O{opt} #{hits}: BPF vs printed"
        );
        assert_eq!(words[3], "0", "{cc} -O{opt} #{hits}: $err");
        hits += 1;
    }
    assert_eq!(hits, CALLS, "{cc} -O{opt}: one hit per iteration\n{out}");
    // The values did change from hit to hit: the probe is inside the loop, not at its entry.
    let totals: BTreeSet<&String> = printed.iter().map(|p| &p[1]).collect();
    assert_eq!(totals.len(), CALLS, "{cc} -O{opt}: {printed:?}");
    eprintln!(
        "{cc} -O{opt}: walk:{line} at {addresses:x?} ({}), {hits} hits, BPF == fetch-args == \
         printed",
        sites[0].fetch_args.join(" ")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gcc_o0_line_in_a_loop() {
    run("gcc", "0");
}

#[test]
fn gcc_o2_line_in_a_loop() {
    run("gcc", "2");
}

#[test]
fn clang_o0_line_in_a_loop() {
    run("clang", "0");
}

#[test]
fn clang_o2_line_in_a_loop() {
    run("clang", "2");
}
