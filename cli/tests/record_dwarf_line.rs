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

use common::{fixture, repo, required, skip, sluice};
use sluice_core::probe::{self, Section};
use sluice_runtime::debuginfo::DebugInfo;
use std::collections::BTreeSet;
use std::process::Command;

/// Loop iterations.
const CALLS: usize = 5;

/// The line of the `report(...)` call relative to `walk`'s first line, as `FUNC:LINE` counts.
fn probed_line() -> usize {
    let src = std::fs::read_to_string(repo().join("tests/dwarf/line.c")).unwrap();
    let line_of = |needle: &str| src.lines().position(|l| l.contains(needle)).unwrap();
    line_of("/* probed line */") - line_of("long walk(")
}

/// The text between `"key":` and the closing bracket `close`.
fn member<'a>(line: &'a str, key: &str, close: char) -> &'a str {
    let k = format!("\"{key}\":");
    let at = line
        .find(&k)
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        + k.len();
    let rest = &line[at..];
    &rest[..=rest.find(close).unwrap()]
}

fn run(cc: &str, opt: &str) {
    if !rustix::process::geteuid().is_root() {
        skip("record at a :LINE place needs root");
        return;
    }
    let dir = std::env::temp_dir().join(format!(
        "sluice-record-line-{}-{cc}-O{opt}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join(format!("line_{cc}_O{opt}"));
    let built = Command::new(cc)
        .args(["-g", &format!("-O{opt}"), "-no-pie", "-o"])
        .arg(&bin)
        .arg(repo().join("tests/dwarf/line.c"))
        .status();
    if !built.is_ok_and(|s| s.success()) {
        if cc == "clang" && !required() {
            eprintln!("SKIPPED: clang is not installed (CI installs it)");
        } else {
            skip(&format!("{cc} is needed to build tests/dwarf/line.c"));
        }
        return;
    }
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

    let event = format!("p_words={spec}");
    let workload = format!("echo | {b} {CALLS}");
    let (code, out, err) = sluice(&[
        "record",
        "--json",
        "-e",
        &fixture("dwarf_words.o"),
        "--event",
        &event,
        "--",
        "sh",
        "-c",
        &workload,
    ]);
    assert_eq!(code, 0, "{cc} -O{opt}: {err}");
    assert!(
        err.contains(&format!("probes removed {}", sites.len())),
        "{cc} -O{opt}: {err}"
    );
    assert!(
        !out.lines().any(|l| l.starts_with("{\"type\":\"sample\"")),
        "{cc} -O{opt}: a sample left unpaired:\n{out}"
    );
    // What the program printed per iteration: i total n.
    let printed: Vec<Vec<String>> = out
        .lines()
        .filter_map(|l| l.strip_prefix("hit "))
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect();
    assert_eq!(printed.len(), CALLS, "{cc} -O{opt}: printed\n{out}");
    let mut hits = 0usize;
    for l in out.lines().filter(|l| l.starts_with("{\"type\":\"pair\"")) {
        let ip = member(l, "ip", ',').trim_matches(|c| c == '"' || c == ',');
        let ip = u64::from_str_radix(ip.trim_start_matches("0x"), 16).unwrap();
        assert!(
            addresses.contains(&ip),
            "{cc} -O{opt}: a hit at {ip:#x}, not a site of walk:{line} {addresses:x?}: {l}"
        );
        let fields: Vec<String> = member(l, "fields", '}')
            .trim_matches(|c| c == '{' || c == '}')
            .split(',')
            .filter(|kv| !kv.starts_with("\"__probe_ip\""))
            .map(|kv| kv.split_once(':').unwrap().1.to_owned())
            .collect();
        let words: Vec<String> = member(l, "words", ']')
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .map(str::to_owned)
            .collect();
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
