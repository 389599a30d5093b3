//! The verifier's own listing (log level 2) of every loaded fixture program equals our
//! disassembly (`sluice_core::disasm`) of the instructions we handed it, line for line.
//!
//! The one allowed difference: a map load (`ld_imm64` with `BPF_PSEUDO_MAP_FD`, or
//! `BPF_PSEUDO_MAP_VALUE` for global data) shows the
//! fd in our listing and the kernel's map pointer in the verifier's, so only `rN = 0x` is
//! compared there.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use sluice_core::disasm::Listing;
use sluice_core::insn::opcode::PSEUDO_MAP_FD;
use sluice_core::object::PSEUDO_MAP_VALUE;
use sluice_core::object::{Object, ObjectStorage};
use sluice_runtime::{load, LoadOptions};
use std::collections::BTreeMap;

/// `N: (xx) text` lines of a verifier log, by index, states after `;` dropped. Accepts the
/// liveness listing form (`   N: .1..6..... (xx) text`, Linux 6.15+) and the walk form.
fn verifier_lines(log: &str) -> (BTreeMap<usize, String>, bool) {
    let mut out = BTreeMap::new();
    let full = log.contains("Live regs before insn:");
    for line in log.lines() {
        let t = line.trim_start();
        let Some((idx, rest)) = t.split_once(": ") else {
            continue;
        };
        let Ok(idx) = idx.parse::<usize>() else {
            continue;
        };
        // Liveness form: a 10-character register mask, then the instruction.
        let rest = match rest.split_once(' ') {
            Some((mask, r))
                if mask.len() == 10 && mask.bytes().all(|b| b == b'.' || b.is_ascii_digit()) =>
            {
                r
            }
            _ => rest,
        };
        if !rest.starts_with('(') || rest.get(3..5) != Some(") ") {
            continue; // a state line such as `7: R1=0 R10=fp0`
        }
        let text = rest.split(';').next().unwrap().trim_end().to_string();
        if let Some(prev) = out.insert(idx, text.clone()) {
            assert_eq!(prev, text, "the verifier printed insn {idx} two ways");
        }
    }
    (out, full)
}

#[test]
fn verifier_listing_equals_our_disassembly() {
    if !common::kernel("verifier_listing_equals_our_disassembly") {
        return;
    }
    let mut programs = 0;
    let mut lines = 0;
    // pinned.o pins its map: in a folder of this run, removed at the end.
    let pins = PinRoot(std::path::PathBuf::from(format!(
        "/sys/fs/bpf/sluice-listing-test-{}",
        std::process::id()
    )));
    for path in common::fixtures() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let mut storage = ObjectStorage::new();
        let obj = Object::open(&bytes, &mut storage).unwrap();
        let mut opts = LoadOptions::default();
        // Same zeroing prologue as the load test, for programs that read arguments.
        opts.prologues = obj
            .programs()
            .iter()
            .map(|p| {
                if p.section_name.contains(['(', ' ']) {
                    (2..=5)
                        .map(|r| sluice_core::Insn::new(0xb7, r, 0, 0, 0))
                        .collect()
                } else {
                    Vec::new()
                }
            })
            .collect();
        opts.pin_root = Some(pins.0.clone());
        let Ok(l) = load(&obj, &opts) else {
            continue; // bad_verifier.o, and what the core cannot relocate yet (kernel.rs checks both)
        };
        for (i, p) in l.programs().iter().enumerate() {
            let log = l.verifier_log(i, 2).unwrap();
            let (kernel, full) = verifier_lines(&String::from_utf8_lossy(&log));
            let ours: BTreeMap<usize, (String, bool)> = Listing::new(p.insns())
                .iter()
                .map(|f| {
                    let insn = f.insn();
                    (
                        f.index(),
                        (
                            f.to_string(),
                            insn.is_ld_imm64()
                                && (insn.src() == PSEUDO_MAP_FD || insn.src() == PSEUDO_MAP_VALUE),
                        ),
                    )
                })
                .collect();
            assert!(
                !kernel.is_empty(),
                "{name}/{}: no listing in\n{}",
                p.name(),
                String::from_utf8_lossy(&log)
            );
            if full {
                let a: Vec<_> = kernel.keys().collect();
                let b: Vec<_> = ours.keys().collect();
                assert_eq!(a, b, "{name}/{}: instruction indexes differ", p.name());
            }
            for (idx, theirs) in &kernel {
                let (mine, map_load) = ours.get(idx).unwrap_or_else(|| {
                    panic!("{name}/{}: kernel lists {idx}, we do not", p.name())
                });
                if *map_load {
                    let cut = |s: &str| s.split_once(" = 0x").map(|(a, _)| a.to_string());
                    assert_eq!(
                        cut(mine),
                        cut(theirs),
                        "{name}/{} insn {idx}: ours `{mine}`, kernel `{theirs}`",
                        p.name()
                    );
                    assert!(cut(mine).is_some());
                } else {
                    assert_eq!(mine, theirs, "{name}/{} insn {idx}", p.name());
                }
                lines += 1;
            }
            programs += 1;
        }
    }
    eprintln!("verifier listing: {programs} programs, {lines} instructions compared");
    assert!(programs >= 15, "only {programs} programs compared");
}

/// A folder of pins, removed with what it holds when dropped.
struct PinRoot(std::path::PathBuf);

impl Drop for PinRoot {
    fn drop(&mut self) {
        if let Ok(entries) = std::fs::read_dir(&self.0) {
            for e in entries.flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}
