//! Our ELF views against GNU readelf: every section, symbol and relocation of every
//! fixture equals the committed golden, and the golden equals what `readelf` prints today
//! (when readelf is installed; CI installs it and sets `SLUICE_REQUIRE_KERNEL=1`, which
//! here also makes a missing readelf an error).
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use sluice_core::elf::{Elf, SHT_REL, SHT_SYMTAB};
use std::path::{Path, PathBuf};
use std::process::Command;

fn golden_dir() -> PathBuf {
    common::repo().join("tests/golden/readelf")
}

/// Our view in the golden's format.
fn ours(bytes: &[u8]) -> String {
    let elf = Elf::parse(bytes).unwrap();
    let mut s = String::new();
    for (i, sh) in elf.sections() {
        s += &format!(
            "section\t{i}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            elf.section_name(&sh),
            sh.sh_type,
            sh.flags,
            sh.offset,
            sh.size,
            sh.link,
            sh.info,
            sh.entsize,
            sh.addralign
        );
    }
    let symtab = elf
        .sections()
        .find(|(_, sh)| sh.sh_type == SHT_SYMTAB)
        .map(|(i, _)| i)
        .unwrap();
    let syms = elf.symbol_table(symtab).unwrap();
    for (i, sym) in syms.iter() {
        let name = if sym.kind() == 3 {
            ""
        } else {
            syms.name(&sym).unwrap()
        };
        s += &format!(
            "symbol\t{i}\t{}\t{}\t{}\t{}\t{}\t{name}\n",
            sym.value,
            sym.size,
            sym.kind(),
            sym.bind(),
            sym.shndx
        );
    }
    for (i, sh) in elf.sections() {
        if sh.sh_type != SHT_REL {
            continue;
        }
        let t = elf.rel_table(i, &syms).unwrap();
        for (_, r) in t.iter() {
            s += &format!("reloc\t{i}\t{}\t{}\t{}\n", r.offset, r.r_type, r.sym);
        }
    }
    s
}

fn golden_of(obj: &Path) -> String {
    let name = obj.file_stem().unwrap().to_str().unwrap();
    std::fs::read_to_string(golden_dir().join(format!("{name}.tsv"))).unwrap()
}

#[test]
fn sections_symbols_relocations_equal_readelf_goldens() {
    let mut checked = 0;
    for obj in common::all_fixtures() {
        let bytes = std::fs::read(&obj).unwrap();
        let golden = golden_of(&obj);
        let ours = ours(&bytes);
        for (n, (a, b)) in ours.lines().zip(golden.lines()).enumerate() {
            assert_eq!(a, b, "{}: line {}", obj.display(), n + 1);
        }
        assert_eq!(
            ours.lines().count(),
            golden.lines().count(),
            "{}",
            obj.display()
        );
        checked += ours.lines().count();
    }
    assert!(checked > 500, "only {checked} lines compared");
}

#[test]
fn goldens_are_what_readelf_prints_now() {
    let script = golden_dir().join("extract.sh");
    let have = Command::new("readelf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
            "readelf is required (CI installs binutils)"
        );
        eprintln!("!!! SKIPPED: readelf not installed; goldens not re-derived");
        return;
    }
    for obj in common::all_fixtures() {
        let out = Command::new("sh").arg(&script).arg(&obj).output().unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            obj.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            golden_of(&obj),
            "{}: golden is stale",
            obj.display()
        );
    }
}
