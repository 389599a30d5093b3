//! Helpers of the BTF tests: section extraction, a printer in `bpftool btf dump`'s raw
//! format, fixture and golden discovery, a BTF builder for crafted input.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use sluice_core::btf::{Btf, Kind, Type};
use sluice_core::elf::Elf;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

#[path = "../common/mod.rs"]
mod common;
#[allow(unused_imports)] // not every BTF test uses both
pub use common::{all_fixtures as fixtures, repo};

pub fn golden_dir() -> PathBuf {
    repo().join("tests/golden/btf")
}

pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(repo().join("tests/bpf").join(name)).unwrap()
}

/// The named peers whose `.BTF`/`.BTF.ext` were copied to `tests/golden/btf/peers`.
pub fn peers() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(golden_dir().join("peers"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "btf"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

pub fn peer(name: &str, ext: &str) -> Option<Vec<u8>> {
    std::fs::read(golden_dir().join("peers").join(format!("{name}.{ext}"))).ok()
}

/// Bytes of section `name` of an ELF object, with the ELF views of the core.
pub fn section<'a>(elf_bytes: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let elf = Elf::parse(elf_bytes).unwrap();
    let found = elf
        .sections()
        .find(|(_, sh)| elf.section_name(sh) == name)
        .map(|(_, sh)| elf.section_data(&sh));
    found
}

/// Parses a `.BTF` section into a leaked index (tests only).
pub fn parse(bytes: &[u8]) -> Btf<'_> {
    let n = Btf::count_types(bytes).unwrap();
    let index = Box::leak(vec![0u32; n as usize].into_boxed_slice());
    Btf::parse(bytes, index).unwrap()
}

pub fn vmlinux() -> Option<&'static [u8]> {
    std::fs::read("/sys/kernel/btf/vmlinux")
        .ok()
        .map(|v| &*Box::leak(v.into_boxed_slice()))
}

/// Whether oracles that need the host (bpftool, the kernel's BTF, root) must be there.
pub fn required() -> bool {
    std::env::var_os("SLUICE_REQUIRE_KERNEL").is_some_and(|v| v == "1")
}

/// Skips loudly, or fails under `SLUICE_REQUIRE_KERNEL=1`.
pub fn skip(test: &str, why: &str) {
    assert!(!required(), "{test}: {why} (SLUICE_REQUIRE_KERNEL=1)");
    eprintln!("\n*** {test}: SKIPPED: {why} ***\n");
}

pub fn bpftool_dump(path: &str) -> Option<String> {
    let out = Command::new("bpftool")
        .args(["btf", "dump", "file", path])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).unwrap())
}

fn name_or_anon(t: &Type<'_>) -> String {
    if t.name().is_empty() {
        "(anon)".into()
    } else {
        t.name().into()
    }
}

fn linkage(l: u32) -> &'static str {
    match l {
        0 => "static",
        1 => "global",
        2 => "extern",
        _ => "(unknown)",
    }
}

/// One type in `bpftool btf dump file X` (raw) format.
pub fn dump_type(btf: &Btf<'_>, t: &Type<'_>, s: &mut String) {
    write!(s, "[{}] {} '{}'", t.id(), t.kind().name(), name_or_anon(t)).unwrap();
    match t.kind() {
        Kind::Int => {
            let i = t.int().unwrap();
            let enc = match i.encoding {
                0 => "(none)",
                1 => "SIGNED",
                2 => "CHAR",
                4 => "BOOL",
                _ => "UNKN",
            };
            write!(
                s,
                " size={} bits_offset={} nr_bits={} encoding={enc}",
                t.size().unwrap(),
                i.offset,
                i.bits
            )
            .unwrap();
        }
        Kind::Ptr
        | Kind::Const
        | Kind::Volatile
        | Kind::Restrict
        | Kind::Typedef
        | Kind::TypeTag => {
            write!(s, " type_id={}", t.ref_type().unwrap()).unwrap();
        }
        Kind::Array => {
            let a = t.array().unwrap();
            write!(
                s,
                " type_id={} index_type_id={} nr_elems={}",
                a.elem_type, a.index_type, a.nelems
            )
            .unwrap();
        }
        Kind::Struct | Kind::Union => {
            write!(s, " size={} vlen={}", t.size().unwrap(), t.vlen()).unwrap();
            for m in t.members() {
                let n = if m.name.is_empty() { "(anon)" } else { m.name };
                write!(
                    s,
                    "\n\t'{n}' type_id={} bits_offset={}",
                    m.type_id, m.bit_offset
                )
                .unwrap();
                if m.bitfield_size != 0 {
                    write!(s, " bitfield_size={}", m.bitfield_size).unwrap();
                }
            }
        }
        Kind::Enum | Kind::Enum64 => {
            let signed = t.enum_is_signed();
            write!(
                s,
                " encoding={} size={} vlen={}",
                if signed { "SIGNED" } else { "UNSIGNED" },
                t.size().unwrap(),
                t.vlen()
            )
            .unwrap();
            for v in t.enum_values() {
                let val = match (t.kind(), signed) {
                    (Kind::Enum, true) => (v.raw as u32 as i32).to_string(),
                    (Kind::Enum, false) => (v.raw as u32).to_string(),
                    (_, true) => format!("{}LL", v.raw as i64),
                    (_, false) => format!("{}ULL", v.raw),
                };
                write!(s, "\n\t'{}' val={val}", v.name).unwrap();
            }
        }
        Kind::Fwd => {
            write!(
                s,
                " fwd_kind={}",
                if t.kind_flag() { "union" } else { "struct" }
            )
            .unwrap();
        }
        Kind::Func => {
            write!(
                s,
                " type_id={} linkage={}",
                t.ref_type().unwrap(),
                linkage(t.linkage().unwrap())
            )
            .unwrap();
        }
        Kind::FuncProto => {
            write!(
                s,
                " ret_type_id={} vlen={}",
                t.ref_type().unwrap(),
                t.vlen()
            )
            .unwrap();
            for p in t.params() {
                let n = if p.name.is_empty() { "(anon)" } else { p.name };
                write!(s, "\n\t'{n}' type_id={}", p.type_id).unwrap();
            }
        }
        Kind::Var => {
            write!(
                s,
                " type_id={}, linkage={}",
                t.ref_type().unwrap(),
                linkage(t.linkage().unwrap())
            )
            .unwrap();
        }
        Kind::Datasec => {
            write!(s, " size={} vlen={}", t.size().unwrap(), t.vlen()).unwrap();
            for v in t.datasec_vars() {
                let vt = btf.ty(v.type_id).unwrap();
                write!(
                    s,
                    "\n\ttype_id={} offset={} size={} ({} '{}')",
                    v.type_id,
                    v.offset,
                    v.size,
                    vt.kind().name(),
                    vt.name()
                )
                .unwrap();
            }
        }
        Kind::Float => write!(s, " size={}", t.size().unwrap()).unwrap(),
        Kind::DeclTag => write!(
            s,
            " type_id={} component_idx={}",
            t.ref_type().unwrap(),
            t.decl_tag_component().unwrap()
        )
        .unwrap(),
    }
    s.push('\n');
}

/// The whole BTF in bpftool's raw format.
pub fn dump(btf: &Btf<'_>) -> String {
    let mut s = String::new();
    for t in btf.types() {
        dump_type(btf, &t, &mut s);
    }
    s
}

/// A `.BTF` section builder for crafted (mal)formed input.
#[derive(Clone, Default)]
pub struct Builder {
    pub types: Vec<u32>,
    pub strings: Vec<u8>,
    pub big: bool,
}

pub const fn info(kind: u32, vlen: u32, kflag: bool) -> u32 {
    ((kflag as u32) << 31) | (kind << 24) | vlen
}

impl Builder {
    pub fn new() -> Self {
        Builder {
            types: vec![],
            strings: vec![0],
            big: false,
        }
    }
    pub fn name(&mut self, s: &str) -> u32 {
        let off = self.strings.len() as u32;
        self.strings.extend_from_slice(s.as_bytes());
        self.strings.push(0);
        off
    }
    /// Appends raw words (one type record); returns the id it gets if each call adds one.
    pub fn words(&mut self, w: &[u32]) -> &mut Self {
        self.types.extend_from_slice(w);
        self
    }
    pub fn int(&mut self, name: &str, size: u32, signed: bool) -> &mut Self {
        let n = self.name(name);
        let enc = if signed { 1 << 24 } else { 0 };
        self.words(&[n, info(1, 0, false), size, enc | (size * 8)])
    }
    pub fn ptr(&mut self, to: u32) -> &mut Self {
        self.words(&[0, info(2, 0, false), to])
    }
    pub fn typedef(&mut self, name: &str, to: u32) -> &mut Self {
        let n = self.name(name);
        self.words(&[n, info(8, 0, false), to])
    }
    pub fn modifier(&mut self, kind: u32, to: u32) -> &mut Self {
        self.words(&[0, info(kind, 0, false), to])
    }
    pub fn array(&mut self, elem: u32, index: u32, n: u32) -> &mut Self {
        self.words(&[0, info(3, 0, false), 0, elem, index, n])
    }
    /// Members: (name, type, bit offset, bitfield size).
    pub fn composite(
        &mut self,
        union: bool,
        name: &str,
        size: u32,
        members: &[(&str, u32, u32, u32)],
    ) -> &mut Self {
        let n = self.name(name);
        let kflag = members.iter().any(|m| m.3 != 0);
        let kind = if union { 5 } else { 4 };
        let mut w = vec![n, info(kind, members.len() as u32, kflag), size];
        for &(mn, ty, off, bits) in members {
            let mn = if mn.is_empty() { 0 } else { self.name(mn) };
            w.extend_from_slice(&[mn, ty, if kflag { (bits << 24) | off } else { off }]);
        }
        self.words(&w)
    }
    pub fn enum32(&mut self, name: &str, signed: bool, values: &[(&str, i32)]) -> &mut Self {
        let n = self.name(name);
        let mut w = vec![n, info(6, values.len() as u32, signed), 4];
        for &(vn, v) in values {
            let vn = self.name(vn);
            w.extend_from_slice(&[vn, v as u32]);
        }
        self.words(&w)
    }
    pub fn enum64(&mut self, name: &str, signed: bool, values: &[(&str, u64)]) -> &mut Self {
        let n = self.name(name);
        let mut w = vec![n, info(19, values.len() as u32, signed), 8];
        for &(vn, v) in values {
            let vn = self.name(vn);
            w.extend_from_slice(&[vn, v as u32, (v >> 32) as u32]);
        }
        self.words(&w)
    }
    pub fn bytes(&self) -> Vec<u8> {
        let put = |v: &mut Vec<u8>, x: u32| {
            if self.big {
                v.extend_from_slice(&x.to_be_bytes())
            } else {
                v.extend_from_slice(&x.to_le_bytes())
            }
        };
        let mut v = vec![];
        if self.big {
            v.extend_from_slice(&[0xeb, 0x9f, 1, 0]);
        } else {
            v.extend_from_slice(&[0x9f, 0xeb, 1, 0]);
        }
        let tlen = self.types.len() as u32 * 4;
        for x in [24, 0, tlen, tlen, self.strings.len() as u32] {
            put(&mut v, x);
        }
        for &x in &self.types {
            put(&mut v, x);
        }
        v.extend_from_slice(&self.strings);
        v
    }
}
