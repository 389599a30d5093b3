//! The disassembler against the kernel verifier's own listing.
//!
//! `tests/golden/disasm/*.hex` are hand-encoded programs and `*.log` what the verifier
//! of Linux 6.18 printed for them at `log_level` 2 (see that folder's README for how they
//! were captured). Every line must match exactly.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sluice_core::disasm::{validate, InsnFmt, Listing};
use sluice_core::insn::opcode::is_known;
use sluice_core::Insn;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/disasm")
}

struct Program {
    insns: Vec<Insn>,
    kfuncs: HashMap<i32, String>,
    /// `# fixture: OBJECT SECTION`: the program was copied from a fixture object.
    fixture: Option<(String, String)>,
}

fn read_hex(path: &Path) -> Program {
    let text = std::fs::read_to_string(path).unwrap();
    let mut insns = Vec::new();
    let mut kfuncs = HashMap::new();
    let mut fixture = None;
    for line in text.lines() {
        if let Some(f) = line.strip_prefix("# fixture:") {
            let (obj, sec) = f.trim().split_once(' ').unwrap();
            fixture = Some((obj.to_owned(), sec.to_owned()));
        }
        if let Some(k) = line.strip_prefix("# kfunc:") {
            let mut it = k.split_whitespace();
            let id = it.next().unwrap().parse().unwrap();
            kfuncs.insert(id, it.next().unwrap().to_owned());
        }
        let hex = line.split('#').next().unwrap().trim();
        if hex.is_empty() {
            continue;
        }
        assert_eq!(hex.len(), 16, "{}: bad line {line:?}", path.display());
        let mut b = [0u8; 8];
        for (i, byte) in b.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
        }
        let insn = Insn::from_bytes(b, true);
        assert_eq!(insn.to_bytes(true), b, "round trip of {hex}");
        insns.push(insn);
    }
    Program {
        insns,
        kfuncs,
        fixture,
    }
}

fn read_log(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn listings_match_the_kernel_verifier() {
    let mut programs = 0;
    let mut lines = 0;
    let mut failures = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(golden_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "hex"))
        .collect();
    paths.sort();
    for hex in &paths {
        let prog = read_hex(hex);
        let want = read_log(&hex.with_extension("log"));
        let names = |id: i32, _off: i16| prog.kfuncs.get(&id).map(String::as_str);
        let listing = Listing::new(&prog.insns).kfunc_names(&names);
        let mut text = String::new();
        write!(text, "{listing}").unwrap();
        let got: Vec<&str> = text.lines().collect();
        assert_eq!(
            got.len(),
            want.len(),
            "{}: line count\n{text}",
            hex.display()
        );
        for (g, w) in got.iter().zip(&want) {
            if g != w {
                failures.push(format!("{}:\n  ours:   {g}\n  kernel: {w}", hex.display()));
            }
        }
        // every instruction of the program appears once (ld_imm64 taking two slots)
        let covered: usize = listing.iter().map(|l| l.insn().slots()).sum();
        assert_eq!(covered, prog.insns.len(), "{}", hex.display());
        programs += 1;
        lines += want.len();
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(programs >= 10, "only {programs} golden programs found");
    eprintln!("disasm golden: {programs} programs, {lines} lines identical to the kernel's");
}

/// The goldens copied from fixture objects are still what `Object::open` reads there
/// (regenerate them with `programs.py` when the fixtures are rebuilt).
#[test]
fn fixture_goldens_match_the_fixtures() {
    let mut n = 0;
    for entry in std::fs::read_dir(golden_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "hex") {
            continue;
        }
        let prog = read_hex(&path);
        let Some((obj, section)) = &prog.fixture else {
            continue;
        };
        let bytes = std::fs::read(golden_dir().join("../../..").join(obj)).unwrap();
        let mut storage = sluice_core::object::ObjectStorage::new();
        let object = sluice_core::object::Object::open(&bytes, &mut storage).unwrap();
        let found: Vec<Insn> = object
            .programs()
            .iter()
            .filter(|p| p.section_name == section)
            .flat_map(|p| p.insns())
            .collect();
        assert_eq!(
            found,
            prog.insns,
            "{}: {obj} {section} changed",
            path.display()
        );
        n += 1;
    }
    assert!(n >= 2, "fixture goldens missing");
}

/// Programs the verifier accepted decode cleanly; the `rejected` one does not.
#[test]
fn accepted_programs_validate() {
    for entry in std::fs::read_dir(golden_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "log") || path.file_name().unwrap() == "opcodes.txt"
        {
            continue;
        }
        let header = std::fs::read_to_string(&path).unwrap();
        let accepted = header.lines().next().unwrap().contains("load accepted");
        let prog = read_hex(&path.with_extension("hex"));
        if accepted {
            assert_eq!(validate(&prog.insns), Ok(()), "{}", path.display());
        }
    }
    let rejected = read_hex(&golden_dir().join("rejected.hex"));
    assert!(validate(&rejected.insns).is_err());
}

/// Every opcode byte: our `is_known` agrees with the kernel's opcode checks, and each
/// opcode the kernel prints (all other fields zero) prints the same here.
#[test]
fn every_opcode_byte_matches_the_kernel() {
    let text = std::fs::read_to_string(golden_dir().join("opcodes.txt")).unwrap();
    let mut seen = 0;
    let mut failures = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (code, what) = line.split_once(' ').unwrap();
        let code = u8::from_str_radix(code, 16).unwrap();
        assert_eq!(usize::from(code), seen, "opcodes.txt out of order");
        seen += 1;
        let insns = [Insn::new(code, 0, 0, 0, 0), Insn::default()];
        match what {
            "unknown" | "reserved" => {
                if is_known(code) {
                    failures.push(format!("{code:02x}: kernel says {what}, is_known says yes"));
                }
                assert!(validate(&insns).is_err(), "{code:02x} validated");
            }
            printed => {
                if !is_known(code) {
                    failures.push(format!("{code:02x}: kernel accepts it, is_known says no"));
                }
                let ours = format!("{}", InsnFmt::new(&insns, 0).unwrap());
                if ours != printed {
                    failures.push(format!("{code:02x}: ours {ours:?}, kernel {printed:?}"));
                }
            }
        }
    }
    assert_eq!(seen, 256);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
