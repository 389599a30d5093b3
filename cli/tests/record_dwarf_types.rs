//! `sluice record` end to end with C variables of every integer width and sign:
//! `tests/dwarf/types.c` compiled with gcc and clang, `-O0` and `-O2`, probed by the
//! programs of `tests/bpf/dwarf_types.o`, each of which sends the values its DWARF-built
//! prologue passed in r2..r5 through a perf event array and returns 1, so the kernel's own
//! uprobe sample (its fetch-args, from the same DWARF) is recorded too. The JSON output
//! pairs the two per hit (`"type":"pair"`); for every hit:
//! BPF words == kernel fetch-args == what the program printed, signedness and width
//! included (`-3` as `signed char` arrives as -3, 250 as `unsigned char` as 250).
//!
//! Specs: parameters at `FUNC` (after the function's prologue, where perf puts it, so the
//! `-O0` frame slots are written), a chain through two struct pointers, a global, and a
//! local of a lexical block at the first address of the line that passes it on (found
//! through the same DWARF as `FUNC:LINE`).
//!
//! The binaries are linked `-no-pie`, so a global is read at its link-time address; globals
//! of PIEs and shared libraries (read relative to the probed address) are covered by
//! `record_dwarf_pie.rs`, other PIE arguments by `record_dwarf.rs`.
#![cfg(target_arch = "x86_64")]
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{build_traced, fixture, json_member as member, record_dir, repo, sluice};
use sluice_core::dwarf::{DebugSections, Resolver};
use sluice_core::elf::Elf;
use sluice_core::probe::{self, Section};
use sluice_runtime::tracefs::uprobe_offset;
use std::path::Path;

/// How many times the program calls each function.
const CALLS: usize = 3;

/// The line of `sink(sq);` relative to `block`'s first line, as `FUNC:LINE` counts.
fn local_line() -> usize {
    let src = std::fs::read_to_string(repo().join("tests/dwarf/types.c")).unwrap();
    let line_of = |needle: &str| src.lines().position(|l| l.contains(needle)).unwrap();
    line_of("sink(sq);") - line_of("long block(")
}

/// The byte offset into `block` of the first address of `sink(sq);`, through the DWARF.
fn local_offset(bin: &Path) -> Result<u64, String> {
    let bytes = std::fs::read(bin).unwrap();
    let elf = Elf::parse(&bytes).unwrap();
    let sections = DebugSections::load(&elf).unwrap();
    let r = Resolver::new(&elf, &sections).unwrap();
    let spec = format!("block:{} sq", local_line());
    let Ok(Section::Probe(p)) = probe::parse(&spec) else {
        panic!("{spec}")
    };
    let sites = r.resolve_spec(&p).map_err(|e| format!("{spec}: {e}"))?;
    let at = sites.first().unwrap().file_offset.unwrap();
    Ok(at - uprobe_offset(bin, "block", 0).unwrap())
}

/// The values of JSON object text `{"a":1,"b":-2}` in order, as text.
fn object_values(obj: &str) -> Vec<(String, String)> {
    obj.trim_matches(|c| c == '{' || c == '}')
        .split(',')
        .filter(|kv| !kv.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once(':').unwrap();
            (k.trim_matches('"').to_owned(), v.to_owned())
        })
        .collect()
}

/// One hit as the output shows it: the function, the kernel's fetch-args (name, value) in
/// order, and the words the BPF program sent.
struct Hit {
    func: String,
    fields: Vec<(String, String)>,
    words: Vec<String>,
}

fn hits(out: &str) -> Vec<Hit> {
    out.lines()
        .filter(|l| l.starts_with("{\"type\":\"pair\""))
        .map(|l| {
            let event = member(l, "event", ',');
            let func = event
                .trim_end_matches([',', '"'])
                .rsplit('_')
                .next()
                .unwrap()
                .to_owned();
            let fields = object_values(member(l, "fields", '}'))
                .into_iter()
                .filter(|(k, _)| k != "__probe_ip")
                .collect();
            let words = member(l, "words", ']')
                .trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .map(str::to_owned)
                .collect();
            Hit {
                func,
                fields,
                words,
            }
        })
        .collect()
}

fn run(cc: &str, opt: &str) {
    let Some(dir) = record_dir("types", cc, opt) else {
        return;
    };
    let Some(bin) = build_traced(cc, opt, &dir, "types") else {
        return;
    };
    let b = bin.display().to_string();
    let off = local_offset(&bin).unwrap_or_else(|e| panic!("{cc} -O{opt}: the local: {e}"));
    let fixture = fixture("dwarf_types.o");
    let workload = format!("echo | {b} {CALLS}");
    let record = |local: &str| {
        let events = [
            format!("p_small=uprobe/{b}:small(sc, uc, ss, us)"),
            format!("p_wide=uprobe/{b}:wide(i, u, l, ul)"),
            format!("p_chain=uprobe/{b}:chain(o->in->c, o->in->us, o->in->l, $err)"),
            format!("p_block=uprobe/{b}:block(n, g_total, $err)"),
            format!("p_local=uprobe/{b}:block+{off}({local}, $err)"),
        ];
        let mut args = vec!["record", "--json", "-e", &fixture];
        for e in &events {
            args.extend(["--event", e]);
        }
        args.extend(["--", "sh", "-c", &workload]);
        sluice(&args)
    };
    // The parameter `n` beside the local: optimised code may keep only its entry value
    // there, which the resolver refuses by name; then the local is fetched twice (p_local
    // reads three registers: the prologue must fill them).
    let (mut code, mut out, mut err) = record("sq, n");
    let mut local_names = &["sq", "n"][..];
    if code != 0 && err.contains("variable 'n' at") && err.contains("cannot be fetched") {
        eprintln!(
            "{cc} -O{opt}: `n` is unavailable at the local's line, as the resolver says: {}",
            err.trim_end()
        );
        (code, out, err) = record("sq, sq");
        local_names = &["sq", "sq_2"][..];
    }
    assert_eq!(code, 0, "{cc} -O{opt}: {err}");
    assert!(err.contains("probes removed 5"), "{err}");
    assert!(
        !out.lines().any(|l| l.starts_with("{\"type\":\"sample\"")),
        "{cc} -O{opt}: a sample left unpaired:\n{out}"
    );
    // What the program printed, per function, in call order.
    let printed = |func: &str| -> Vec<Vec<String>> {
        out.lines()
            .filter_map(|l| l.strip_prefix(&format!("{func} ")))
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .collect()
    };
    let hits = hits(&out);
    let mut checked = 0;
    for (func, names, expect) in [
        ("small", &["sc", "uc", "ss", "us"][..], printed("small")),
        ("wide", &["i", "u", "l", "ul"][..], printed("wide")),
        ("chain", &["c", "us", "l"][..], printed("chain")),
        (
            "block",
            &["n", "g_total"][..],
            printed("block")
                .into_iter()
                .map(|v| v[..2].to_vec())
                .collect(),
        ),
        (
            "local",
            local_names,
            printed("block")
                .into_iter()
                .map(|v| {
                    let second = if local_names[1] == "n" { &v[0] } else { &v[2] };
                    vec![v[2].clone(), second.clone()]
                })
                .collect(),
        ),
    ] {
        assert_eq!(expect.len(), CALLS, "{cc} -O{opt} {func}: printed\n{out}");
        // p_block and p_local are both on `block`: tell them apart by their fields.
        let mine: Vec<&Hit> = hits
            .iter()
            .filter(|h| {
                let f = if func == "local" { "block" } else { func };
                h.func == f && h.fields.first().map(|(n, _)| n.as_str()) == Some(names[0])
            })
            .collect();
        assert_eq!(mine.len(), CALLS, "{cc} -O{opt} {func}: hits\n{out}");
        for (k, (hit, want)) in mine.iter().zip(&expect).enumerate() {
            let got_names: Vec<&str> = hit.fields.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(got_names, names, "{cc} -O{opt} {func} #{k}");
            let kernel: Vec<&str> = hit.fields.iter().map(|(_, v)| v.as_str()).collect();
            let bpf: Vec<&str> = hit.words.iter().map(String::as_str).collect();
            assert_eq!(
                kernel, *want,
                "{cc} -O{opt} {func} #{k}: fetch-args vs printed"
            );
            assert_eq!(
                &bpf[..names.len()],
                &kernel[..],
                "{cc} -O{opt} {func} #{k}: BPF vs fetch-args"
            );
            // $err, where the spec has it, is 0: every read succeeded.
            if bpf.len() > names.len() && func != "small" && func != "wide" {
                assert_eq!(bpf[names.len()], "0", "{cc} -O{opt} {func} #{k}: $err");
            }
            checked += 1;
        }
    }
    assert_eq!(checked, 5 * CALLS);
    // Sign and width, spelled out for the first call.
    assert_eq!(printed("small")[0][..2], ["-3", "250"]);
    eprintln!("{cc} -O{opt}: {checked} hits, BPF == fetch-args == printed");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gcc_o0_bpf_values_equal_fetch_args_equal_printed() {
    run("gcc", "0");
}

#[test]
fn gcc_o2_bpf_values_equal_fetch_args_equal_printed() {
    run("gcc", "2");
}

#[test]
fn clang_o0_bpf_values_equal_fetch_args_equal_printed() {
    run("clang", "0");
}

#[test]
fn clang_o2_bpf_values_equal_fetch_args_equal_printed() {
    run("clang", "2");
}
