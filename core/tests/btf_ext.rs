//! `.BTF.ext` of every fixture and peer: func_info against the ELF symbol table (the FUNC
//! named at each offset is the function symbol there), line_info against the sources,
//! core_relo counts against libbpf's (37 in `btf_core.o`); malformed lists are errors.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::type_complexity
)]

mod btf_common;

use btf_common::*;
use sluice_core::btf::{BtfError, BtfExt, CoreReloKind, Kind};
use sluice_core::elf::{Elf, SHT_SYMTAB, STT_FUNC};

#[test]
fn fixtures_func_info_names_the_symbols() {
    let mut checked = 0;
    let mut lines = 0;
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let (Some(b), Some(e)) = (section(&bytes, ".BTF"), section(&bytes, ".BTF.ext")) else {
            continue;
        };
        let btf = parse(b);
        let ext = BtfExt::parse(e, &btf).unwrap();
        let elf = Elf::parse(&bytes).unwrap();
        let symtab = elf
            .sections()
            .find(|(_, sh)| sh.sh_type == SHT_SYMTAB)
            .unwrap()
            .0;
        let syms = elf.symbol_table(symtab).unwrap();
        for sec in ext.func_info() {
            let shndx = elf
                .sections()
                .find(|(_, sh)| elf.section_name(sh) == sec.name())
                .unwrap()
                .0;
            for fi in sec.records() {
                let f = btf.ty(fi.type_id).unwrap();
                assert_eq!(f.kind(), Kind::Func);
                let sym = syms
                    .iter()
                    .map(|(_, s)| s)
                    .find(|s| {
                        s.kind() == STT_FUNC
                            && u32::from(s.shndx) == shndx
                            && s.value == u64::from(fi.insn_off)
                    })
                    .unwrap_or_else(|| {
                        panic!(
                            "{}: no symbol at {}:{}",
                            path.display(),
                            sec.name(),
                            fi.insn_off
                        )
                    });
                assert_eq!(syms.name(&sym).unwrap(), f.name());
                checked += 1;
            }
        }
        // Each line record's text is that line of the source file it names.
        for sec in ext.line_info() {
            let mut last = None;
            for li in sec.records() {
                let file = btf.string(li.file_name_off).unwrap();
                let src = std::fs::read_to_string(repo().join("tests/bpf").join(file)).unwrap();
                let text = btf.string(li.line_off).unwrap();
                if li.line() > 0 {
                    let line = src.lines().nth(li.line() as usize - 1).unwrap();
                    assert_eq!(line, text, "{file}:{}", li.line());
                }
                assert!(
                    last.is_none_or(|l| l <= li.insn_off),
                    "line_info offsets go back"
                );
                last = Some(li.insn_off);
                lines += 1;
            }
        }
    }
    assert!(checked >= 20, "{checked} func_info records");
    assert!(lines >= 200, "{lines} line_info records");
}

#[test]
fn peers_ext_parses() {
    for name in peers() {
        let b = peer(&name, "btf").unwrap();
        let Some(e) = peer(&name, "btfext") else {
            continue;
        };
        let btf = parse(&b);
        let ext = BtfExt::parse(&e, &btf).unwrap_or_else(|err| panic!("{name}: {err}"));
        let n: usize = ext.func_info().map(|s| s.records().len()).sum();
        assert!(n > 0, "{name}");
        assert!(ext.line_info().count() > 0);
    }
}

#[test]
fn core_relo_records_of_the_fixture() {
    let obj = fixture("btf_core.o");
    let btf = parse(section(&obj, ".BTF").unwrap());
    let ext = BtfExt::parse(section(&obj, ".BTF.ext").unwrap(), &btf).unwrap();
    let secs: Vec<_> = ext.core_relos().collect();
    assert_eq!(secs.len(), 1);
    assert_eq!(secs[0].name(), "kprobe/do_nanosleep");
    let relos: Vec<_> = secs[0].records().collect();
    assert_eq!(relos.len(), 37);
    let first = relos[0];
    assert_eq!(first.kind, CoreReloKind::FieldByteOffset);
    assert_eq!(btf.string(first.access_str_off), Some("0:0"));
    assert_eq!(btf.ty(first.type_id).unwrap().name(), "task_struct");
    assert!(ext.core_relos().section("kprobe/do_nanosleep").is_some());
    assert!(ext.core_relos().section(".text").is_none());
}

fn ext_bytes(lists: &[(u32, &[u32])]) -> Vec<u8> {
    // header (32 bytes) then func_info, line_info, core_relo lists.
    let mut body: Vec<u8> = vec![];
    let mut offs = vec![];
    for (_, words) in lists {
        offs.push((body.len() as u32, words.len() as u32 * 4));
        for w in *words {
            body.extend_from_slice(&w.to_le_bytes());
        }
    }
    let mut v = vec![0x9f, 0xeb, 1, 0];
    v.extend_from_slice(&32u32.to_le_bytes());
    for i in 0..3 {
        let (o, l) = offs.get(i).copied().unwrap_or((0, 0));
        v.extend_from_slice(&o.to_le_bytes());
        v.extend_from_slice(&l.to_le_bytes());
    }
    v.extend_from_slice(&body);
    v
}

#[test]
fn malformed_ext() {
    let obj = fixture("btf_core.o");
    let btf = parse(section(&obj, ".BTF").unwrap());
    let good = section(&obj, ".BTF.ext").unwrap();
    // Every truncation is an error, never a panic.
    for n in 0..good.len() {
        assert!(BtfExt::parse(&good[..n], &btf).is_err(), "cut at {n}");
    }
    let func = btf.types().find(|t| t.kind() == Kind::Func).unwrap().id();
    let sec = btf
        .types()
        .find(|t| t.kind() == Kind::Func)
        .unwrap()
        .name_off();
    let ok = ext_bytes(&[(0, &[8, sec, 1, 0, func])]);
    assert!(BtfExt::parse(&ok, &btf).is_ok());
    let cases: &[(&[u32], &str)] = &[
        (
            &[4, sec, 1, 0, func],
            "record size too small or not a multiple of 4",
        ),
        (&[8, sec, 0], "section block with no records"),
        (
            &[8, 0xffff_fff0, 1, 0, func],
            "section name offset outside the string section, empty or not UTF-8",
        ),
        (&[8, sec, 1, 0, 1], "func_info type is not a FUNC"),
    ];
    for &(words, what) in cases {
        match BtfExt::parse(&ext_bytes(&[(0, words)]), &btf) {
            Err(BtfError::BadExt { what: w, .. }) => assert_eq!(w, what),
            r => panic!("{words:?}: {r:?}"),
        }
    }
    assert!(matches!(
        BtfExt::parse(&ext_bytes(&[(0, &[8, sec, 5, 0, func])]), &btf),
        Err(BtfError::Truncated { .. })
    ));
}
