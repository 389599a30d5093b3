//! The open phase on crafted objects: every field reported, every malformation a clear
//! error naming where, never a panic.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;
use common::*;
use sluice_core::object::ObjectStorage;
use sluice_core::object::{MapLayout, RelocKind, PSEUDO_MAP_FD};
use sluice_core::{Error, Insn, Object};

#[test]
fn legacy_object_reports_everything() {
    let bytes = legacy_object(16, 3, "kprobe/sys_write");
    let obj = open(&bytes).unwrap();
    assert_eq!(obj.license(), Some("GPL"));
    assert_eq!(obj.version(), Some(0x0004_0000));
    assert_eq!(obj.maps().len(), 3);
    for (i, m) in obj.maps().iter().enumerate() {
        assert_eq!(m.name, format!("map{i}"));
        assert_eq!(
            (m.map_type, m.key_size, m.value_size, m.max_entries),
            (1 + i as u32, 4, 8, 16 + i as u32)
        );
        assert_eq!(m.map_flags, None);
        assert_eq!(m.layout, MapLayout::Seed16);
    }
    let p = &obj.programs()[0];
    assert_eq!(obj.programs().len(), 1);
    assert_eq!(p.section_name, "kprobe/sys_write");
    assert_eq!(p.name, Some("prog_fn"));
    assert_eq!(p.insn_count(), 8);
    assert_eq!((p.reloc_count(), p.map_reloc_count()), (3, 3));
    let relocs: Vec<_> = obj.relocations(0).collect();
    assert_eq!(
        relocs.iter().map(|r| (r.insn, r.kind)).collect::<Vec<_>>(),
        vec![
            (0, RelocKind::Map { map: 0 }),
            (2, RelocKind::Map { map: 1 }),
            (4, RelocKind::Map { map: 2 }),
        ]
    );
}

#[test]
fn relocate_patches_map_fds_behind_a_prologue() {
    let bytes = legacy_object(16, 3, "kprobe/sys_write");
    let obj = open(&bytes).unwrap();
    let prologue = [Insn::new(0xbf, 6, 1, 0, 0), Insn::new(0xbf, 1, 6, 0, 0)];
    let mut out = [Insn::default(); 16];
    let n = obj.relocate(0, &prologue, &[10, 11, 12], &mut out).unwrap();
    assert_eq!(n, 10);
    assert_eq!(&out[..2], &prologue);
    for (slot, fd) in [(2, 10), (4, 11), (6, 12)] {
        assert_eq!(out[slot].code(), 0x18);
        assert_eq!(
            (out[slot].src(), out[slot].imm(), out[slot + 1].imm()),
            (PSEUDO_MAP_FD, fd, 0),
            "slot {slot}"
        );
    }
    assert_eq!(out[8].code(), 0xb7);
    assert_eq!(out[9].code(), 0x95);
    // Without a prologue, the same patches at the program's own indices.
    let n = obj.relocate(0, &[], &[10, 11, 12], &mut out).unwrap();
    assert_eq!(n, 8);
    assert_eq!((out[2].src(), out[2].imm()), (PSEUDO_MAP_FD, 11));
    // Too small a buffer, a missing fd, no such program: errors, not truncation.
    let mut small = [Insn::default(); 9];
    assert_eq!(
        obj.relocate(0, &prologue, &[1, 2, 3], &mut small),
        Err(Error::Capacity {
            what: "instructions in the output buffer",
            limit: 9
        })
    );
    assert!(matches!(
        obj.relocate(0, &[], &[1, 2], &mut out),
        Err(Error::Usage { value: 2, .. })
    ));
    assert!(matches!(
        obj.relocate(1, &[], &[1, 2, 3], &mut out),
        Err(Error::Usage { value: 1, .. })
    ));
}

#[test]
fn every_known_map_layout_reports_its_fields() {
    for (size, layout) in [
        (16, MapLayout::Seed16),
        (20, MapLayout::Flags20),
        (24, MapLayout::Inner24),
        (28, MapLayout::Iproute28),
        (36, MapLayout::Iproute36),
    ] {
        let bytes = legacy_object(size, 2, "socket");
        let obj = open(&bytes).unwrap_or_else(|e| panic!("{size}: {e}"));
        let m = &obj.maps()[1];
        assert_eq!(m.layout, layout);
        assert_eq!(m.words().len(), size / 4);
        assert_eq!(m.map_flags, (size >= 20).then_some(7));
        assert_eq!(m.inner_map_idx, (size == 24).then_some(8));
        assert_eq!(m.id, (size >= 28).then_some(8));
        assert_eq!(m.pinning, (size >= 28).then_some(9));
        assert_eq!(m.inner_id, (size == 36).then_some(10));
        assert_eq!(m.inner_idx, (size == 36).then_some(11));
    }
    for size in [12, 32, 40] {
        let bytes = legacy_object(size, 2, "socket");
        let r = open(&bytes);
        match r {
            Err(Error::BadMapDef {
                def_size,
                maps: 2,
                section,
            }) => {
                assert_eq!(def_size, size as u64);
                assert_eq!(section.name(), "maps");
            }
            other => panic!("{size}: {other:?}"),
        }
    }
}

#[test]
fn header_rules() {
    let good = legacy_object(16, 1, "socket");
    let mut exec = good.clone();
    exec[16] = 2; // ET_EXEC
    assert!(matches!(
        open(&exec),
        Err(Error::BadHeader {
            offset: 16,
            value: 2,
            ..
        })
    ));
    let mut x86 = good.clone();
    x86[18] = 62;
    assert!(matches!(
        open(&x86),
        Err(Error::BadHeader {
            offset: 18,
            value: 62,
            ..
        })
    ));
    let mut none = good.clone();
    none[18] = 0; // EM_NONE: what LLVM wrote in 2015
    assert!(open(&none).is_ok());
    let mut be = good.clone();
    be[5] = 2;
    assert_eq!(
        open(&be).err(),
        Some(Error::ByteOrder {
            object_little: false
        })
    );
    let mut magic = good.clone();
    magic[1] = b'X';
    assert!(matches!(
        open(&magic),
        Err(Error::BadHeader { offset: 0, .. })
    ));
    let mut class = good.clone();
    class[4] = 9;
    assert!(matches!(
        open(&class),
        Err(Error::BadHeader {
            offset: 4,
            value: 9,
            ..
        })
    ));
    assert!(matches!(open(&[]), Err(Error::Truncated { .. })));
    // A 32-bit ELF file is refused as such, not read as an object without programs.
    let mut elf32 = good.clone();
    elf32[4] = 1;
    assert!(matches!(
        open(&elf32),
        Err(Error::BadHeader {
            offset: 4,
            value: 1,
            what,
        }) if what.contains("ELFCLASS32")
    ));
}

/// Program sections that cannot hold code, and REL tables that name no section, are
/// reported with the section, not dropped.
#[test]
fn malformed_program_sections_are_reported() {
    let what = |extra: Vec<Sec>| match open(&with_sections(extra)) {
        Err(Error::BadSection { section, what }) => (section.name().to_owned(), what),
        other => panic!("{other:?}"),
    };
    let (name, w) = what(vec![Sec::new("kprobe/odd", 1, 6, vec![0; 12])]);
    assert_eq!(name, "kprobe/odd");
    assert!(w.contains("multiple of 8"), "{w}");
    let (name, w) = what(vec![Sec::new("kprobe/bss", 8, 6, vec![0; 16])]);
    assert_eq!(name, "kprobe/bss");
    assert!(w.contains("SHT_NOBITS"), "{w}");
    let mut rel = Sec::new(".relsocket", 9, 0, rel(0, 1, 1));
    rel.info = 77;
    rel.entsize = 16;
    let (name, w) = what(vec![rel]);
    assert_eq!(name, ".relsocket");
    assert!(w.contains("sh_info"), "{w}");
}

fn with_sections(extra: Vec<Sec>) -> Vec<u8> {
    let mut secs = vec![
        Sec::new("license", 1, 3, b"GPL\0".to_vec()),
        Sec::prog("socket", &[insn(0xb7, 0, 0, 0, 0), insn(0x95, 0, 0, 0, 0)]),
    ];
    secs.extend(extra);
    build(&secs)
}

#[test]
fn license_and_version_rules() {
    let obj = with_sections(vec![]);
    let o = open(&obj).unwrap();
    assert_eq!((o.license(), o.version()), (Some("GPL"), None));
    for bad in [vec![1u8, 2, 3], vec![1, 2, 3, 4, 5], vec![]] {
        let b = with_sections(vec![Sec::new("version", 1, 3, bad.clone())]);
        let r = open(&b);
        match r {
            Err(Error::BadSection { section, what }) => {
                assert_eq!(section.name(), "version");
                assert!(what.contains("exactly 4 bytes"), "{what}");
            }
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    let b = build(&[Sec::new("license", 1, 3, b"GPL".to_vec())]);
    assert!(matches!(
        open(&b),
        Err(Error::BadSection {
            what: "license is not NUL-terminated",
            ..
        })
    ));
}

#[test]
fn unknown_sections_are_tolerated() {
    let b = with_sections(vec![
        Sec::new(".BTF", 1, 0, vec![0x9f, 0xeb, 1, 0]),
        Sec::new(".eh_frame", 1, 2, vec![0; 24]),
        Sec::new(".debug_info", 1, 0, vec![1, 2, 3]),
        Sec::new(".empty_exec", 1, 6, vec![]),
        Sec::new(".bss", 8, 3, vec![]),
    ]);
    let o = open(&b).unwrap();
    assert_eq!(o.programs().len(), 1);
    assert_eq!(o.programs()[0].section_name, "socket");
}

/// An object with one program `p` (5 insns: ld_imm64 at 0, mov at 2, ld_imm64 at 3) and
/// one 16-byte map, with a relocation given by the caller.
fn reloc_object(relocs: Vec<u8>, map_sym_value: u64) -> Vec<u8> {
    let insns = [
        insn(0x18, 1, 0, 0, 0),
        insn(0, 0, 0, 0, 0),
        insn(0xb7, 0, 0, 0, 0),
        insn(0x18, 1, 0, 0, 0),
        insn(0, 0, 0, 0, 0),
        insn(0x95, 0, 0, 0, 0),
    ];
    let (strs, offs) = strtab(&["m", "p"]);
    let mut syms = sym(0, 0, 0, 0, 0);
    syms.extend(sym(offs[0], 0x11, 2, 0, 16));
    syms.extend(sym(offs[1], 0x12, 3, 0, 48));
    // Symbol 3: an unnamed local pointing into the maps section at `map_sym_value`.
    syms.extend(sym(0, 0x00, 2, map_sym_value, 0));
    let mut symtab = Sec::new(".symtab", 2, 0, syms);
    symtab.link = 5;
    symtab.entsize = 24;
    let mut relsec = Sec::new(".relsocket", 9, 0, relocs);
    relsec.link = 4;
    relsec.info = 3;
    relsec.entsize = 16;
    build(&[
        Sec::new("license", 1, 3, b"GPL\0".to_vec()),
        Sec::new("maps", 1, 3, vec![1; 16]),
        Sec::prog("socket", &insns),
        symtab,
        Sec::new(".strtab", 3, 0, strs),
        relsec,
    ])
}

#[test]
fn relocation_errors_name_section_index_and_instruction() {
    assert!(open(&reloc_object(rel(24, 1, 1), 0)).is_ok());
    let cases: [(Vec<u8>, u64, u32, u64, &str); 6] = [
        (
            [rel(0, 1, 1), rel(16, 1, 1)].concat(),
            0,
            1,
            2,
            "map relocation on an instruction that is not ld_imm64",
        ),
        (
            rel(12, 1, 1),
            0,
            0,
            1,
            "offset is not on an instruction boundary",
        ),
        (
            rel(48, 1, 1),
            0,
            0,
            6,
            "offset is outside every program of the section",
        ),
        (
            rel(0, 9, 1),
            0,
            0,
            0,
            "symbol index outside the symbol table",
        ),
        (rel(0, 3, 1), 16, 0, 0, "map index out of range"),
        (
            [rel(0, 1, 1), rel(24, 1, 99)].concat(),
            0,
            1,
            3,
            "relocation type is neither R_BPF_64_64 (1) nor R_BPF_64_32 (10)",
        ),
    ];
    for (relocs, map_value, index, insn_at, what) in cases {
        match open(&reloc_object(relocs, map_value)) {
            Err(Error::BadReloc {
                section,
                index: i,
                insn,
                what: w,
            }) => {
                assert_eq!((i, insn, w), (index, insn_at, what));
                assert_eq!(section.name(), "socket");
                let text = Error::BadReloc {
                    section,
                    index: i,
                    insn,
                    what: w,
                }
                .to_string();
                assert!(
                    text.contains("'socket'") && text.contains(&format!("relocation #{i}")),
                    "{text}"
                );
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    // ld_imm64 in the last slot has no second half.
    let insns = [insn(0xb7, 0, 0, 0, 0), insn(0x18, 1, 0, 0, 0)];
    let (strs, offs) = strtab(&["m"]);
    let mut syms = sym(0, 0, 0, 0, 0);
    syms.extend(sym(offs[0], 0x11, 2, 0, 16));
    let mut symtab = Sec::new(".symtab", 2, 0, syms);
    symtab.link = 5;
    symtab.entsize = 24;
    let mut relsec = Sec::new(".relsocket", 9, 0, rel(8, 1, 1));
    relsec.link = 4;
    relsec.info = 3;
    relsec.entsize = 16;
    let b = build(&[
        Sec::new("license", 1, 3, b"GPL\0".to_vec()),
        Sec::new("maps", 1, 3, vec![1; 16]),
        Sec::prog("socket", &insns),
        symtab,
        Sec::new(".strtab", 3, 0, strs),
        relsec,
    ]);
    assert!(matches!(
        open(&b),
        Err(Error::BadReloc {
            what: "ld_imm64 is missing its second slot",
            insn: 1,
            ..
        })
    ));
}

#[test]
fn capacity_is_an_error_not_a_truncation() {
    let bytes = legacy_object(16, 3, "socket");
    assert_eq!(
        Object::open(&bytes, &mut ObjectStorage::<4, 2>::with_capacities()).err(),
        Some(Error::Capacity {
            what: "maps",
            limit: 2
        })
    );
    assert!(Object::open(&bytes, &mut ObjectStorage::<1, 3>::with_capacities()).is_ok());
    let two = with_sections(vec![Sec::prog("xdp", &[insn(0x95, 0, 0, 0, 0)])]);
    assert_eq!(
        Object::open(&two, &mut ObjectStorage::<1, 1>::with_capacities()).err(),
        Some(Error::Capacity {
            what: "programs",
            limit: 1
        })
    );
    assert_eq!(
        Object::open(&two, &mut ObjectStorage::<2, 1>::with_capacities())
            .unwrap()
            .programs()
            .len(),
        2
    );
}

#[test]
fn several_programs_in_one_section_split_at_their_symbols() {
    let insns = [
        insn(0xb7, 0, 0, 0, 0),
        insn(0x95, 0, 0, 0, 0),
        insn(0x18, 1, 0, 0, 0),
        insn(0, 0, 0, 0, 0),
        insn(0x95, 0, 0, 0, 0),
    ];
    let (strs, offs) = strtab(&["m", "first", "second"]);
    let mut syms = sym(0, 0, 0, 0, 0);
    syms.extend(sym(offs[0], 0x11, 2, 0, 16));
    syms.extend(sym(offs[2], 0x12, 3, 16, 24)); // out of order on purpose
    syms.extend(sym(offs[1], 0x12, 3, 0, 16));
    let mut symtab = Sec::new(".symtab", 2, 0, syms);
    symtab.link = 5;
    symtab.entsize = 24;
    let mut relsec = Sec::new(".relxdp", 9, 0, rel(16, 1, 1));
    relsec.link = 4;
    relsec.info = 3;
    relsec.entsize = 16;
    let b = build(&[
        Sec::new("license", 1, 3, b"GPL\0".to_vec()),
        Sec::new("maps", 1, 3, vec![1; 16]),
        Sec::prog("xdp", &insns),
        symtab,
        Sec::new(".strtab", 3, 0, strs),
        relsec,
    ]);
    let o = open(&b).unwrap();
    let names: Vec<_> = o
        .programs()
        .iter()
        .map(|p| (p.name, p.offset, p.insn_count(), p.reloc_count()))
        .collect();
    assert_eq!(
        names,
        vec![(Some("first"), 0, 2, 0), (Some("second"), 16, 3, 1)]
    );
    let r: Vec<_> = o.relocations(1).collect();
    assert_eq!(
        (r.len(), r[0].insn),
        (1, 0),
        "relocation index is relative to the program"
    );
    let mut out = [Insn::default(); 3];
    o.relocate(1, &[], &[42], &mut out).unwrap();
    assert_eq!((out[0].src(), out[0].imm()), (PSEUDO_MAP_FD, 42));
}

/// A function symbol far past its section (offset, or offset plus size, beyond 4 GiB) is
/// the same error on every target: a 32-bit `usize` must not make it another one.
#[test]
fn a_function_past_its_section_is_one_error_on_every_target() {
    let insns = [insn(0xb7, 0, 0, 0, 0), insn(0x95, 0, 0, 0, 0)];
    for (value, size) in [(1u64 << 32, 16u64), (0, 1 << 32), (8, u64::MAX - 7)] {
        let (strs, offs) = strtab(&["f"]);
        let mut syms = sym(0, 0, 0, 0, 0);
        syms.extend(sym(offs[0], 0x12, 2, value, size));
        let mut symtab = Sec::new(".symtab", 2, 0, syms);
        symtab.link = 4;
        symtab.entsize = 24;
        let b = build(&[
            Sec::new("license", 1, 3, b"GPL\0".to_vec()),
            Sec::prog("xdp", &insns),
            symtab,
            Sec::new(".strtab", 3, 0, strs),
        ]);
        let what = if value.checked_add(size).is_none() {
            "function size too large"
        } else {
            "function extends past the end of its section"
        };
        assert_eq!(
            open(&b).unwrap_err(),
            Error::BadSymbol { index: 1, what },
            "value {value:#x} size {size:#x}"
        );
    }
}

/// Two function symbols at the same offset of one section (an alias with another size,
/// as real objects have): both are programs, and a relocation inside both belongs to the
/// one the previous relocation belonged to, the first at the start of the table.
#[test]
fn a_relocation_inside_aliased_functions_belongs_to_the_first() {
    let insns = [
        insn(0x18, 1, 0, 0, 0),
        insn(0, 0, 0, 0, 0),
        insn(0x18, 1, 0, 0, 0),
        insn(0, 0, 0, 0, 0),
        insn(0x95, 0, 0, 0, 0),
    ];
    let (strs, offs) = strtab(&["m", "short", "long"]);
    let mut syms = sym(0, 0, 0, 0, 0);
    syms.extend(sym(offs[0], 0x11, 2, 0, 16));
    syms.extend(sym(offs[1], 0x12, 3, 0, 32));
    syms.extend(sym(offs[2], 0x12, 3, 0, 40));
    let mut symtab = Sec::new(".symtab", 2, 0, syms);
    symtab.link = 5;
    symtab.entsize = 24;
    let mut relsec = Sec::new(".relxdp", 9, 0, [rel(0, 1, 1), rel(16, 1, 1)].concat());
    relsec.link = 4;
    relsec.info = 3;
    relsec.entsize = 16;
    let b = build(&[
        Sec::new("license", 1, 3, b"GPL\0".to_vec()),
        Sec::new("maps", 1, 3, vec![1; 16]),
        Sec::prog("xdp", &insns),
        symtab,
        Sec::new(".strtab", 3, 0, strs),
        relsec,
    ]);
    let o = open(&b).unwrap();
    let got: Vec<_> = o
        .programs()
        .iter()
        .map(|p| (p.name, p.insn_count(), p.reloc_count()))
        .collect();
    assert_eq!(got, vec![(Some("short"), 4, 2), (Some("long"), 5, 0)]);
    let mut out = [Insn::default(); 5];
    assert_eq!(o.relocate(0, &[], &[42], &mut out), Ok(4));
    assert_eq!((out[2].src(), out[2].imm()), (PSEUDO_MAP_FD, 42));
    assert_eq!(o.relocate(1, &[], &[42], &mut out), Ok(5));
    assert_eq!(
        (out[2].src(), out[2].imm()),
        (0, 0),
        "the long alias has no relocation"
    );
}

/// A global data section whose name is not UTF-8 (found by the `object` fuzz target) is an
/// error naming the section, not a map without a name.
#[test]
fn a_data_section_name_that_is_not_utf8_is_an_error() {
    let b = with_sections(vec![Sec::new(".rodata.\u{7f}", 1, 2, vec![1; 8])]);
    assert!(open(&b).is_ok());
    let mut bad = b.clone();
    let at = bad.windows(9).position(|w| w == b".rodata.\x7f").unwrap() + 8;
    bad[at] = 0xff;
    let e = open(&bad).unwrap_err();
    assert!(
        matches!(
            e,
            sluice_core::Error::BadSection {
                what: "global data section name is not valid UTF-8",
                ..
            }
        ),
        "{e:?}"
    );
}

/// Deterministic pseudo-random corruption: no input panics; truncations all fail cleanly.
#[test]
fn truncations_and_corruptions_never_panic() {
    let objects = [
        legacy_object(16, 3, "kprobe/sys_write"),
        legacy_object(36, 2, "socket"),
        reloc_object(rel(24, 1, 1), 0),
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    // One storage reused by every open (a fresh one per open would add up to GBs).
    let mut storage = ObjectStorage::new();
    for bytes in &objects {
        for len in 0..bytes.len() {
            let cut = &bytes[..len];
            if let Ok(o) = Object::open(cut, &mut storage) {
                // A cut in the trailing section table padding cannot open: the table is last.
                panic!(
                    "truncated to {len} bytes still opened with {} programs",
                    o.programs().len()
                );
            }
        }
        for _ in 0..20_000 {
            let mut b = bytes.clone();
            for _ in 0..1 + rnd() % 4 {
                let at = (rnd() % b.len() as u64) as usize;
                b[at] = rnd() as u8;
            }
            // A fresh storage per mutated buffer (on the stack, freed each round).
            let mut storage = ObjectStorage::new();
            let r = Object::open(&b, &mut storage);
            if let Ok(o) = r {
                let mut out = [Insn::default(); 64];
                for p in 0..o.programs().len() {
                    let _ = o.relocate(p, &[], &[3; 8], &mut out);
                    let _ = o.relocations(p).count();
                }
            };
        }
    }
}
