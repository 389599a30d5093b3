//! Test helpers: a tiny ELF writer to craft (mal)formed objects, and fixture discovery.
#![allow(
    dead_code,
    clippy::needless_range_loop,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use sluice_core::object::ObjectStorage;
use sluice_core::{Error, Object};
use std::path::PathBuf;

/// One section to write.
#[derive(Clone)]
pub struct Sec {
    pub name: String,
    pub ty: u32,
    pub flags: u64,
    pub data: Vec<u8>,
    pub link: u32,
    pub info: u32,
    pub entsize: u64,
}

impl Sec {
    pub fn new(name: &str, ty: u32, flags: u64, data: Vec<u8>) -> Self {
        Sec {
            name: name.into(),
            ty,
            flags,
            data,
            link: 0,
            info: 0,
            entsize: 0,
        }
    }
    pub fn prog(name: &str, insns: &[[u8; 8]]) -> Self {
        Sec::new(name, 1, 0x6, insns.concat())
    }
}

/// Builds an ELF64 little-endian ET_REL EM_BPF object. Section 0 (NULL) is implicit;
/// the section name table is appended last.
pub fn build(secs: &[Sec]) -> Vec<u8> {
    build_with(secs, 1, 247, 1)
}

pub fn build_with(secs: &[Sec], e_type: u16, machine: u16, data_enc: u8) -> Vec<u8> {
    let mut shstr = vec![0u8];
    let mut names = vec![];
    for s in secs.iter().map(|s| s.name.as_str()).chain([".shstrtab"]) {
        names.push(shstr.len() as u32);
        shstr.extend_from_slice(s.as_bytes());
        shstr.push(0);
    }
    let mut out = vec![0u8; 64];
    let mut offsets = vec![];
    let mut all: Vec<Sec> = secs.to_vec();
    all.push(Sec::new(".shstrtab", 3, 0, shstr));
    for s in &all {
        while out.len() % 8 != 0 {
            out.push(0);
        }
        offsets.push(out.len() as u64);
        out.extend_from_slice(&s.data);
    }
    while out.len() % 8 != 0 {
        out.push(0);
    }
    let shoff = out.len() as u64;
    out.extend_from_slice(&[0u8; 64]); // NULL section
    for (i, s) in all.iter().enumerate() {
        let mut h = vec![];
        h.extend_from_slice(&names[i].to_le_bytes());
        h.extend_from_slice(&s.ty.to_le_bytes());
        h.extend_from_slice(&s.flags.to_le_bytes());
        h.extend_from_slice(&0u64.to_le_bytes());
        h.extend_from_slice(&offsets[i].to_le_bytes());
        h.extend_from_slice(&(s.data.len() as u64).to_le_bytes());
        h.extend_from_slice(&s.link.to_le_bytes());
        h.extend_from_slice(&s.info.to_le_bytes());
        h.extend_from_slice(&8u64.to_le_bytes());
        h.extend_from_slice(&s.entsize.to_le_bytes());
        out.extend_from_slice(&h);
    }
    let shnum = (all.len() + 1) as u16;
    out[..4].copy_from_slice(b"\x7fELF");
    out[4] = 2;
    out[5] = data_enc;
    out[6] = 1;
    out[16..18].copy_from_slice(&e_type.to_le_bytes());
    out[18..20].copy_from_slice(&machine.to_le_bytes());
    out[20..24].copy_from_slice(&1u32.to_le_bytes());
    out[40..48].copy_from_slice(&shoff.to_le_bytes());
    out[52..54].copy_from_slice(&64u16.to_le_bytes());
    out[58..60].copy_from_slice(&64u16.to_le_bytes());
    out[60..62].copy_from_slice(&shnum.to_le_bytes());
    out[62..64].copy_from_slice(&(shnum - 1).to_le_bytes());
    out
}

/// An Elf64_Sym.
pub fn sym(name: u32, info: u8, shndx: u16, value: u64, size: u64) -> Vec<u8> {
    let mut v = vec![];
    v.extend_from_slice(&name.to_le_bytes());
    v.push(info);
    v.push(0);
    v.extend_from_slice(&shndx.to_le_bytes());
    v.extend_from_slice(&value.to_le_bytes());
    v.extend_from_slice(&size.to_le_bytes());
    v
}

/// An Elf64_Rel.
pub fn rel(offset: u64, sym: u32, ty: u32) -> Vec<u8> {
    let mut v = offset.to_le_bytes().to_vec();
    v.extend_from_slice(&(((sym as u64) << 32) | ty as u64).to_le_bytes());
    v
}

/// Little-endian instruction bytes.
pub fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> [u8; 8] {
    let o = off.to_le_bytes();
    let i = imm.to_le_bytes();
    [code, dst | (src << 4), o[0], o[1], i[0], i[1], i[2], i[3]]
}

/// A string table from names; returns (bytes, offsets).
pub fn strtab(names: &[&str]) -> (Vec<u8>, Vec<u32>) {
    let mut v = vec![0u8];
    let mut offs = vec![];
    for n in names {
        offs.push(v.len() as u32);
        v.extend_from_slice(n.as_bytes());
        v.push(0);
    }
    (v, offs)
}

/// The committed fixtures `tests/bpf/*.o`, sorted. Panics when there are none: a test
/// over no fixture would assert nothing.
pub fn fixtures() -> Vec<PathBuf> {
    let dir = repo().join("tests/bpf");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "o"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no fixtures in {}", dir.display());
    v
}

/// Every fixture object: [`fixtures`], then the big-endian one
/// (`tests/bpf/big_endian/no_version_be.o`).
pub fn all_fixtures() -> Vec<PathBuf> {
    let mut v = fixtures();
    v.push(repo().join("tests/bpf/big_endian/no_version_be.o"));
    v
}

/// The repository's root (the workspace above `core/`).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Opens an object whose storage lives for the rest of the run (tests only).
pub fn open(bytes: &[u8]) -> Result<Object<'_, '_>, Error> {
    Object::open(bytes, Box::leak(Box::new(ObjectStorage::new())))
}

/// A legacy object: `maps` section with `n` maps of `def_size` bytes, a program that loads
/// each map, a symbol table and the REL section. Section order:
/// 1 license, 2 version, 3 maps, 4 prog, 5 .symtab, 6 .strtab, 7 .relprog.
pub fn legacy_object(def_size: usize, n: usize, prog_name: &str) -> Vec<u8> {
    let mut maps = vec![];
    for i in 0..n {
        let mut def = vec![0u8; def_size];
        for (w, v) in [1u32 + i as u32, 4, 8, 16 + i as u32, 7, 8, 9, 10, 11]
            .iter()
            .enumerate()
        {
            if (w + 1) * 4 <= def_size {
                def[w * 4..w * 4 + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        maps.extend(def);
    }
    let mut insns = vec![];
    for _ in 0..n {
        insns.push(insn(0x18, 1, 0, 0, 0));
        insns.push(insn(0, 0, 0, 0, 0));
    }
    insns.push(insn(0xb7, 0, 0, 0, 0));
    insns.push(insn(0x95, 0, 0, 0, 0));
    let map_names: Vec<String> = (0..n).map(|i| format!("map{i}")).collect();
    let mut names: Vec<&str> = map_names.iter().map(|s| s.as_str()).collect();
    names.push("prog_fn");
    let (strs, offs) = strtab(&names);
    let mut syms = sym(0, 0, 0, 0, 0);
    for i in 0..n {
        syms.extend(sym(
            offs[i],
            0x11,
            3,
            (i * def_size) as u64,
            def_size as u64,
        ));
    }
    syms.extend(sym(offs[n], 0x12, 4, 0, insns.len() as u64 * 8));
    let mut rels = vec![];
    for i in 0..n {
        rels.extend(rel((i * 16) as u64, 1 + i as u32, 1));
    }
    let mut symtab = Sec::new(".symtab", 2, 0, syms);
    symtab.link = 6;
    symtab.entsize = 24;
    let mut relsec = Sec::new(&format!(".rel{prog_name}"), 9, 0, rels);
    relsec.link = 5;
    relsec.info = 4;
    relsec.entsize = 16;
    build(&[
        Sec::new("license", 1, 3, b"GPL\0".to_vec()),
        Sec::new("version", 1, 3, 0x0004_0000u32.to_le_bytes().to_vec()),
        Sec::new("maps", 1, 3, maps),
        Sec::prog(prog_name, &insns),
        symtab,
        Sec::new(".strtab", 3, 0, strs),
        relsec,
    ])
}
