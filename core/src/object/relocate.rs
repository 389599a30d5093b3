//! Relocations: classified and validated at open, re-read from the REL table when a
//! program is written out.

use super::patch::{entry_of, Image, PatchKind};
use super::{MapDef, MapTarget, Object, Parts, Program};
use crate::elf::{Class, Rel, Symbol, SHT_NOBITS, SHT_PROGBITS};
use crate::error::{Error, Result, SectionRef};
use crate::insn::{opcode, Insn};

/// `src_reg` of an `ld_imm64` whose immediate is a map file descriptor.
#[doc(alias = "BPF_PSEUDO_MAP_FD")]
pub const PSEUDO_MAP_FD: u8 = 1;
/// `src_reg` of an `ld_imm64` whose immediate is a map fd and whose second slot's
/// immediate an offset into the map's (only) value: global data.
#[doc(alias = "BPF_PSEUDO_MAP_VALUE")]
pub const PSEUDO_MAP_VALUE: u8 = 2;
/// `src_reg` of a `call` to a BPF function (bpf-to-bpf call); the immediate is relative.
#[doc(alias = "BPF_PSEUDO_CALL")]
pub const PSEUDO_CALL: u8 = 1;
/// `src_reg` of an `ld_imm64` loading the address of a BPF function (callbacks).
#[doc(alias = "BPF_PSEUDO_FUNC")]
pub const PSEUDO_FUNC: u8 = 4;

/// `R_BPF_64_64`: 64-bit immediate of `ld_imm64`.
pub const R_BPF_64_64: u32 = 1;
/// `R_BPF_64_32`: call immediate (bpf-to-bpf call).
pub const R_BPF_64_32: u32 = 10;

/// What a relocation of a program refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RelocKind {
    /// A map (legacy `maps` section or BTF-defined `.maps`), by index in [`Object::maps`].
    Map {
        /// Map index.
        map: u32,
    },
    /// Code in an executable section (bpf-to-bpf call or function address).
    Code {
        /// Section of the callee.
        section: u32,
    },
    /// Global data (`.rodata`, `.data`, `.bss` ...).
    Data {
        /// Section of the data.
        section: u32,
    },
    /// A symbol in another section (BTF-defined `.maps`, ...).
    Other {
        /// Section of the symbol.
        section: u32,
    },
    /// An undefined symbol (`extern`: kfuncs, `.kconfig`).
    Extern,
}

/// One relocation of a program, validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Reloc {
    /// Index in its REL section.
    pub index: u32,
    /// Instruction index it patches.
    pub insn: u32,
    /// ELF relocation type.
    pub r_type: u32,
    /// Symbol index.
    pub sym: u32,
    /// The symbol's value (`st_value`): offset of the variable or function in its section.
    pub sym_value: u64,
    /// What it refers to.
    pub kind: RelocKind,
}

impl<'a> Parts<'a> {
    /// Classifies and checks one relocation of program `p` (its offset is relative to
    /// the section; the instruction index in the result is relative to the program).
    #[inline]
    pub(super) fn classify(
        &self,
        maps: &[MapDef<'_>],
        p: &Program<'_>,
        index: u32,
        rel: Rel,
        sym: &Symbol,
    ) -> Result<Reloc> {
        let bad = |what| Error::BadReloc {
            section: self.elf.section_ref(p.section_index),
            index,
            insn: rel.offset / 8,
            what,
        };
        if rel.offset % 8 != 0 {
            return Err(bad("offset is not on an instruction boundary"));
        }
        let rel_off = rel
            .offset
            .checked_sub(u64::from(p.offset))
            .ok_or_else(|| bad("offset before the program"))?;
        let insn_index = rel_off / 8;
        let count = p.insn_count() as u64;
        if insn_index >= count {
            return Err(bad("offset past the end of the program"));
        }
        let insn = p.insn(insn_index as usize).unwrap_or_default();
        let shndx = u32::from(sym.shndx);
        let kind = match self.map_target(maps, shndx, sym.value) {
            MapTarget::None if shndx == 0 => RelocKind::Extern,
            MapTarget::None => self.non_map_kind(shndx),
            MapTarget::Bad(what) => return Err(bad(what)),
            MapTarget::Map(map) | MapTarget::Value(map) => {
                if insn.code() != opcode::LD_IMM64 {
                    return Err(bad("map relocation on an instruction that is not ld_imm64"));
                }
                if insn_index + 1 >= count {
                    return Err(bad("ld_imm64 is missing its second slot"));
                }
                if Some(shndx) == self.maps_section || Some(shndx) == self.btf_maps_section {
                    RelocKind::Map { map }
                } else {
                    RelocKind::Data { section: shndx }
                }
            }
        };
        Ok(Reloc {
            index,
            insn: insn_index as u32,
            r_type: rel.r_type,
            sym: rel.sym,
            sym_value: sym.value,
            kind,
        })
    }
}

impl Parts<'_> {
    /// The kind of a relocation against a symbol of section `shndx` (not 0, not the
    /// `maps` section).
    #[inline]
    pub(super) fn non_map_kind(&self, shndx: u32) -> RelocKind {
        match self.elf.section(shndx) {
            Some(sh) if sh.is_exec() => RelocKind::Code { section: shndx },
            Some(sh) if sh.sh_type == SHT_PROGBITS || sh.sh_type == SHT_NOBITS => {
                let elf = &self.elf;
                if elf.section_name_starts_with(&sh, b".rodata")
                    || elf.section_name_starts_with(&sh, b".data")
                    || elf.section_name_starts_with(&sh, b".bss")
                {
                    RelocKind::Data { section: shndx }
                } else {
                    RelocKind::Other { section: shndx }
                }
            }
            Some(_) => RelocKind::Other { section: shndx },
            // Reserved indices (SHN_ABS, SHN_COMMON ...) or past the table.
            None => RelocKind::Other { section: shndx },
        }
    }
}

impl<'a, 's> Object<'a, 's> {
    /// The relocations of program `prog` (an index into [`Object::programs`]), re-read
    /// from the REL table. They were validated at open, so none is skipped.
    pub fn relocations(&self, prog: usize) -> impl Iterator<Item = Reloc> + use<'a, 's> {
        let parts = self.parts;
        let maps = self.maps;
        let p = self.programs.get(prog).copied();
        let (table, first, end) = match p {
            Some(Program {
                rel_section: Some(rel),
                rel_first,
                rel_end,
                ..
            }) => (Some(parts.rel_table_of(rel)), rel_first, rel_end),
            _ => (None, 0, 0),
        };
        let symbols = parts.symbols;
        (first..end).filter_map(move |i| {
            let (p, table, symbols) = (p?, table?, symbols?);
            let rel = table.get(i)?;
            let start = u64::from(p.offset);
            if rel.offset < start || rel.offset >= start + p.code.len() as u64 {
                return None; // another program of the same section
            }
            let sym = symbols.get(rel.sym)?;
            parts.classify(maps, &p, i, rel, &sym).ok()
        })
    }

    /// Writes `prologue`, program `prog`'s instructions and those of every subprogram it
    /// calls (transitively, each once, in libbpf's order: depth first, appended at the
    /// end) into `out`, linked for the kernel:
    ///
    /// - map loads: `src_reg = BPF_PSEUDO_MAP_FD`, `imm = map_fds[map]`;
    /// - global data (`.rodata`, `.data`, `.bss`) and `.kconfig` externs:
    ///   `src_reg = BPF_PSEUDO_MAP_VALUE`, `imm = map_fds[map]`, the second slot's `imm` =
    ///   the symbol's value plus the instruction's original `imm`;
    /// - bpf-to-bpf calls and function addresses: `imm = target - (insn + 1)`.
    ///
    /// `map_fds` is indexed like [`Object::maps`]. Relocation indices shift by
    /// `prologue.len()`; [`Object::linked_len`] says how long the result is and
    /// [`Object::link_layout`] where each subprogram went. Returns the number of
    /// instructions written.
    ///
    /// # Errors
    /// [`Error::Usage`] for a program index past the object, a map without an fd in
    /// `map_fds`; [`Error::Capacity`] when `out` is too small or the program calls more
    /// than [`super::MAX_LINKED`] functions; [`Error::Unsupported`] for relocations of
    /// kinds this version does not link (kfuncs, ksyms, other sections);
    /// [`Error::BadReloc`] for a call whose target is no function of the object.
    pub fn relocate(
        &self,
        prog: usize,
        prologue: &[Insn],
        map_fds: &[i32],
        out: &mut [Insn],
    ) -> Result<usize> {
        let p = self.programs.get(prog).ok_or(Error::Usage {
            what: "no such program",
            value: prog as u64,
        })?;
        if p.map_reloc_count != p.reloc_count {
            // Calls or externs: linked at open, or the linker proper.
            if let Some(n) = self.relocate_linked(p, prologue, map_fds, out) {
                return Ok(n);
            }
            return self.link_into(prog, prologue, map_fds, out);
        }
        let total = prologue.len() + p.insn_count();
        let limit = out.len() as u32;
        let dst = out.get_mut(..total).ok_or(Error::Capacity {
            what: "instructions in the output buffer",
            limit,
        })?;
        if p.maps_needed as usize > map_fds.len() {
            for r in self.relocations(prog) {
                self.link_map(r, map_fds, None)?;
            }
        }
        // A call inside the program's own section needs no relocation: noticed at open
        // (with call lists), or as the instructions are copied.
        if self.parts.calls_ready && p.pseudo_call {
            if let Some(n) = self.relocate_linked(p, prologue, map_fds, out) {
                return Ok(n);
            }
            return self.link_into(prog, prologue, map_fds, out);
        }
        let (head, body) = dst.split_at_mut(prologue.len());
        // No prologue is the usual case: no call to copy nothing.
        if !prologue.is_empty() {
            head.copy_from_slice(prologue);
        }
        if self.parts.calls_ready {
            self.copy_insns(p, body);
        } else {
            let calls = crate::insn::decode_native_calls(body, p.code);
            if calls {
                return self.link_into(prog, prologue, map_fds, out);
            }
        }
        if p.map_reloc_count != 0 {
            if self.parts.patches_ready {
                // Only map and global data loads, every fd there (checked above).
                let first = p.patch_first as usize;
                let patches = self.patches.get(first..first + p.reloc_count as usize);
                for x in patches.unwrap_or_default() {
                    let (src, map, value) = match x.kind {
                        PatchKind::MapFd { map } => (PSEUDO_MAP_FD, map, None),
                        PatchKind::MapValue { map, value } => (PSEUDO_MAP_VALUE, map, Some(value)),
                        _ => continue,
                    };
                    let fd = map_fds.get(map as usize).copied().unwrap_or_default();
                    patch_ld(body, x.at as usize, src, fd, value.map(u64::from));
                }
            } else if self.parts.elf.header().class == Class::Elf64 {
                self.patch_maps::<true>(p, map_fds, body);
            } else {
                self.patch_maps::<false>(p, map_fds, body);
            }
        }
        Ok(total)
    }

    /// [`Object::relocate`] of a function linked at open (see [`Image`]): a root or a
    /// closed function. `None` for any other, and unless it succeeds as the linker would
    /// (the linker then tells the error).
    #[inline(never)]
    fn relocate_linked(
        &self,
        p: &Program<'_>,
        prologue: &[Insn],
        map_fds: &[i32],
        out: &mut [Insn],
    ) -> Option<usize> {
        if !self.parts.calls_ready {
            return None;
        }
        let entry = self.patches.get(entry_of(p)?)?;
        match entry.kind {
            PatchKind::Root => self.relocate_root(p, prologue, map_fds, out),
            PatchKind::Part { .. } if p.links() => Image::of(entry)
                .filter(|img| img.closed)
                .and_then(|img| self.relocate_part(&img, prologue, map_fds, out)),
            _ => None,
        }
    }

    /// [`Object::relocate`] of a closed function (see [`Image`]): its part of the
    /// layout. `None` when the output is too small or an fd is missing (the linker tells
    /// which).
    #[inline(never)]
    fn relocate_part(
        &self,
        img: &Image,
        prologue: &[Insn],
        map_fds: &[i32],
        out: &mut [Insn],
    ) -> Option<usize> {
        let (head, body) = out.split_at_mut_checked(prologue.len())?;
        let len = img.len as usize;
        self.put_image(img, map_fds, body.get_mut(..len)?)?;
        if !prologue.is_empty() {
            head.copy_from_slice(prologue);
        }
        Some(prologue.len() + len)
    }

    /// [`Object::relocate`] of a root (see [`Image`]): copied and patched, then at each of
    /// its calls of a function not appended yet that function's part of the layout is
    /// appended, and each call is set to where its function lies. `None` unless it
    /// succeeds as the linker would: the output is too small, an fd is missing, a
    /// relocation of the root fails, a part is open or overlaps one appended before (the
    /// linker tells which).
    #[inline(never)]
    fn relocate_root(
        &self,
        p: &Program<'_>,
        prologue: &[Insn],
        map_fds: &[i32],
        out: &mut [Insn],
    ) -> Option<usize> {
        let (head, body) = out.split_at_mut_checked(prologue.len())?;
        let n = p.insn_count();
        let (mine, rest) = body.split_at_mut_checked(n)?;
        crate::insn::decode_native(mine, p.code);
        if p.reloc_count != 0 {
            self.apply_patches(p, map_fds, mine).ok()?;
        }
        // The parts to append, in order: each one's image and where it starts after the
        // root. Its calls are set as they are met.
        let mut parts: heapless::Vec<(Image, u32), 16> = heapless::Vec::new();
        let mut total = 0u32;
        let first = p.call_first as usize;
        for c in self.patches.get(first..first + p.call_len as usize)? {
            let PatchKind::Call {
                program,
                offset,
                ld,
            } = c.kind
            else {
                continue;
            };
            let entry = self.programs.get(program as usize).and_then(entry_of)?;
            let entry = self.patches.get(entry)?;
            let at = entry.at;
            let inside = parts.iter().find(|(x, _)| at >= x.at && at - x.at < x.len);
            let start = match inside {
                Some((x, pos)) => pos + (at - x.at),
                None => {
                    // Appended whole, as the linker's walk would place it: closed, within
                    // its depth, holding no part appended before.
                    let t = Image::of(entry)?;
                    let deep = t.height as usize >= super::MAX_CALL_DEPTH;
                    let holds = parts
                        .iter()
                        .any(|(x, _)| x.at >= t.at && x.at - t.at < t.len);
                    if !t.closed || deep || holds {
                        return None;
                    }
                    parts.push((t, total)).ok()?;
                    total += t.len;
                    total - t.len
                }
            };
            let rel = i64::from(n as u32 + start + offset) - i64::from(c.at + 1);
            let slot = mine.get_mut(c.at as usize)?;
            slot.set_imm(rel as i32);
            if ld {
                slot.set_src(PSEUDO_FUNC);
            }
        }
        let rest = rest.get_mut(..total as usize)?;
        for (t, pos) in &parts {
            let pos = *pos as usize;
            self.put_image(t, map_fds, rest.get_mut(pos..pos + t.len as usize)?)?;
        }
        if !prologue.is_empty() {
            head.copy_from_slice(prologue);
        }
        Some(prologue.len() + n + total as usize)
    }

    /// Writes the part of the layout `img` into `dst` (its length) and patches its map
    /// and global data loads; `None` when an fd is missing.
    #[inline]
    fn put_image(&self, img: &Image, map_fds: &[i32], dst: &mut [Insn]) -> Option<()> {
        let from = img.at as usize;
        dst.copy_from_slice(self.insns.get(from..from + dst.len())?);
        let first = img.patches as usize;
        for x in self.patches.get(first..first + img.npatches as usize)? {
            if let PatchKind::Fd { map } = x.kind {
                let fd = *map_fds.get(map as usize)?;
                dst.get_mut((x.at - img.at) as usize)?.set_imm(fd);
            }
        }
        Some(())
    }

    /// Writes the instructions of `p` into `slots` (as many as it holds): copied from the
    /// decoded-instruction cache, or decoded.
    #[inline]
    pub(super) fn copy_insns(&self, p: &Program<'_>, slots: &mut [Insn]) {
        let n = p.insn_count();
        let first = p.cached as usize;
        let cached = self.insns.get(first..first.saturating_add(n));
        match (cached, slots.get_mut(..n)) {
            (Some(from), Some(to)) => to.copy_from_slice(from),
            _ => crate::insn::decode_native(slots, p.code),
        }
    }

    /// Patches every map load of `p` (all checked: at open, and every fd above) in its
    /// instructions `body`, reading the REL table natively.
    fn patch_maps<const WIDE: bool>(&self, p: &Program<'_>, map_fds: &[i32], body: &mut [Insn]) {
        let parts = &self.parts;
        let (Some(rel), Some(symbols)) = (p.rel_section, parts.symbols) else {
            return;
        };
        let (rels, syms) = (parts.rel_table_of(rel).data(), symbols.data());
        let start = u64::from(p.offset);
        let end = start + p.code.len() as u64;
        for i in p.rel_first..p.rel_end {
            let Some((offset, sym)) = super::raw_rel::<WIDE>(rels, i) else {
                continue;
            };
            if offset < start || offset >= end {
                continue; // another program of the same section
            }
            let Some((shndx, value)) = super::raw_sym::<WIDE>(syms, sym) else {
                continue;
            };
            let at = ((offset - start) / 8) as usize;
            match parts.map_target(self.maps, u32::from(shndx), value) {
                MapTarget::Map(m) => {
                    if let Some(&fd) = map_fds.get(m as usize) {
                        patch_ld(body, at, PSEUDO_MAP_FD, fd, None);
                    }
                }
                MapTarget::Value(m) => {
                    if let Some(&fd) = map_fds.get(m as usize) {
                        patch_ld(body, at, PSEUDO_MAP_VALUE, fd, Some(value));
                    }
                }
                MapTarget::None | MapTarget::Bad(_) => {}
            }
        }
    }

    /// Checks one relocation and, given the output, patches its map load or global data
    /// address. Calls are linked elsewhere; externs of `.kconfig` are patched by the
    /// caller, which knows their offsets.
    pub(super) fn link_map(
        &self,
        r: Reloc,
        map_fds: &[i32],
        body: Option<&mut [Insn]>,
    ) -> Result<()> {
        let (map, value) = match r.kind {
            RelocKind::Map { map } => (map, None),
            RelocKind::Data { section } => {
                match self.parts.map_target(self.maps, section, r.sym_value) {
                    MapTarget::Value(map) => (map, Some(r.sym_value)),
                    _ => return Ok(()),
                }
            }
            _ => return Ok(()),
        };
        let fd = *map_fds.get(map as usize).ok_or(Error::Usage {
            what: "no fd given for map",
            value: map.into(),
        })?;
        if let Some(body) = body {
            let src = if value.is_some() {
                PSEUDO_MAP_VALUE
            } else {
                PSEUDO_MAP_FD
            };
            patch_ld(body, r.insn as usize, src, fd, value);
        }
        Ok(())
    }

    pub(super) fn unsupported(&self, what: &'static str, p: &Program<'_>, insn: u64) -> Error {
        // The program's section name is its section's: no lookup.
        Error::Unsupported {
            what,
            section: SectionRef::new(p.section_index, p.section_name),
            at: insn,
        }
    }
}

/// Patches the `ld_imm64` at `at`: `src_reg`, `imm = fd`, and the second slot's `imm`:
/// `value` plus the original first `imm` (global data), or 0 (a map fd).
#[inline]
pub(super) fn patch_ld(body: &mut [Insn], at: usize, src: u8, fd: i32, value: Option<u64>) {
    let mut orig = 0;
    if let Some(slot) = body.get_mut(at) {
        orig = slot.imm();
        slot.set_src(src);
        slot.set_imm(fd);
    }
    if let Some(next) = body.get_mut(at + 1) {
        next.set_imm(match value {
            Some(v) => (v as i64).wrapping_add(i64::from(orig)) as i32,
            None => 0,
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
    use super::*;
    use crate::object::ObjectStorage;

    /// The linker proper, which walks every relocation in table order and every
    /// instruction: what the fast path of `relocate` must agree with.
    fn reference(
        o: &Object<'_, '_>,
        prog: usize,
        map_fds: &[i32],
        out: &mut [Insn],
    ) -> Result<usize> {
        o.link_into_reference(prog, &[], map_fds, out)
    }

    /// Every fixture object, plus those of `SLUICE_EXTRA_OBJS=DIR`: path and bytes.
    fn objects() -> std::vec::Vec<(std::path::PathBuf, std::vec::Vec<u8>)> {
        let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/bpf");
        let mut dirs = std::vec![dir];
        dirs.extend(std::env::var_os("SLUICE_EXTRA_OBJS").map(std::path::PathBuf::from));
        dirs.iter()
            .flat_map(|d| std::fs::read_dir(d).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "o"))
            .map(|p| {
                let bytes = std::fs::read(&p).unwrap();
                (p, bytes)
            })
            .collect()
    }

    /// Every program of every fixture (calls, global data, BTF maps, legacy maps),
    /// with no fds, too few and enough: the same answer and the same instructions.
    /// `SLUICE_EXTRA_OBJS=DIR` adds the objects of another folder (the peers' benchmark
    /// objects, say).
    #[test]
    fn relocate_answers_as_the_table_walk_does() {
        let mut checked = 0;
        for (path, bytes) in objects() {
            let mut storage = std::boxed::Box::new(ObjectStorage::new());
            let Ok(o) = Object::open(&bytes, &mut storage) else {
                continue;
            };
            for prog in 0..o.programs().len() {
                for fds in [
                    &[][..],
                    &[7][..],
                    &[7, 8, 9, 10, 11, 12, 13, 14][..],
                    &[3; 128][..],
                ] {
                    let mut a = std::vec![Insn::default(); 1 << 16];
                    let mut b = a.clone();
                    let got = o.relocate(prog, &[], fds, &mut a);
                    let want = reference(&o, prog, fds, &mut b);
                    assert_eq!(got, want, "{} program {prog}", path.display());
                    if let Ok(n) = got {
                        assert_eq!(a[..n], b[..n], "{} program {prog}", path.display());
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 10, "{checked}");
    }

    /// `linking.o` (tests/bpf/linking.c) holds each shape the layout of the functions
    /// called tells apart: parts that are closed or not, roots whose parts append at once,
    /// one inside a part appended before, one holding a part appended before, one open.
    /// The roots and closed functions that can take the shortcut take it, the others fall
    /// back to the linker, and every answer is the linker's.
    #[test]
    fn the_layout_serves_the_functions_it_can() {
        use crate::object::patch::{entry_of, Image};
        let path =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/bpf/linking.o");
        let bytes = std::fs::read(path).unwrap();
        let mut storage = std::boxed::Box::new(ObjectStorage::new());
        let o = Object::open(&bytes, &mut storage).unwrap();
        assert!(o.parts.calls_ready);
        let index = |name: &str| {
            o.programs()
                .iter()
                .position(|p| p.name == Some(name))
                .unwrap()
        };
        let image = |name: &str| {
            let p = &o.programs()[index(name)];
            Image::of(&o.patches[entry_of(p).unwrap()])
        };
        // mid_a is laid out first, with leaf inside its part: mid_b refers outside.
        for (name, closed) in [
            ("mid_a", true),
            ("leaf", true),
            ("mid_b", false),
            ("c1", true),
            ("c2", true),
            ("c3", true),
            ("bump", true),
            ("step", true),
        ] {
            assert_eq!(image(name).map(|i| i.closed), Some(closed), "{name}");
        }
        let fds = [3, 4, 5, 6, 7, 8];
        let mut a = std::vec![Insn::default(); 1024];
        let mut b = a.clone();
        for (name, shortcut) in [
            ("first_inside", true),
            ("first_leaf", false),
            ("shared", false),
            ("chained", true),
            ("chained_too", true),
            ("looped", true),
        ] {
            let prog = index(name);
            let p = &o.programs()[prog];
            let n = reference(&o, prog, &fds, &mut b).unwrap();
            let got = o.relocate_root(p, &[], &fds, &mut a);
            assert_eq!(got.is_some(), shortcut, "{name}");
            if let Some(m) = got {
                assert_eq!((m, &a[..m]), (n, &b[..n]), "{name}");
            }
            assert_eq!(o.relocate(prog, &[], &fds, &mut a), Ok(n), "{name}");
            assert_eq!(a[..n], b[..n], "{name}");
        }
        for name in ["mid_a", "leaf", "c1", "c2", "c3", "bump", "step"] {
            let prog = index(name);
            let n = reference(&o, prog, &fds, &mut b).unwrap();
            let img = image(name).unwrap();
            assert_eq!(o.relocate_part(&img, &[], &fds, &mut a), Some(n), "{name}");
            assert_eq!(a[..n], b[..n], "{name}");
        }
        // Without enough fds or room, the shortcut steps aside for the linker's error.
        let chained = index("chained_too");
        let p = &o.programs()[chained];
        assert_eq!(o.relocate_root(p, &[], &fds[..1], &mut a), None);
        assert!(o.relocate(chained, &[], &fds[..1], &mut a).is_err());
        assert_eq!(o.relocate_root(p, &[], &fds, &mut a[..8]), None);
        assert!(matches!(
            o.relocate(chained, &[], &fds, &mut a[..8]),
            Err(Error::Capacity { .. })
        ));
    }

    /// The patch table, call lists and decoded-instruction cache are shortcuts: with a
    /// storage that has no room for them (or too little, so they stop part way), every
    /// program relocates, links and lays out exactly as with them. Every fixture, plus
    /// `SLUICE_EXTRA_OBJS=DIR`.
    #[test]
    fn the_patch_table_answers_as_rereading_does() {
        use crate::object::LinkedPart;
        let mut checked = 0;
        for (path, bytes) in objects() {
            let mut full = std::boxed::Box::new(ObjectStorage::new());
            let mut none =
                std::boxed::Box::new(ObjectStorage::<256, 128, 16384, 0, 0>::with_capacities());
            let mut some =
                std::boxed::Box::new(ObjectStorage::<256, 128, 16384, 7, 5>::with_capacities());
            let (Ok(a), Ok(b), Ok(c)) = (
                Object::open(&bytes, &mut full),
                Object::open(&bytes, &mut none),
                Object::open(&bytes, &mut some),
            ) else {
                continue;
            };
            assert_eq!(a.programs().len(), b.programs().len());
            assert_eq!(a.maps(), b.maps());
            let pro = [Insn::default(); 2];
            for prog in 0..a.programs().len() {
                let (pa, pb) = (&a.programs()[prog], &b.programs()[prog]);
                assert_eq!(
                    (
                        pa.section_name,
                        pa.name,
                        pa.offset,
                        pa.reloc_count(),
                        pa.map_reloc_count()
                    ),
                    (
                        pb.section_name,
                        pb.name,
                        pb.offset,
                        pb.reloc_count(),
                        pb.map_reloc_count()
                    )
                );
                for fds in [&[][..], &[7][..], &[3; 128][..]] {
                    for (prologue, cap) in [(&[][..], 1 << 16), (&pro[..], 1 << 16), (&pro[..], 20)]
                    {
                        let mut out = [
                            std::vec![Insn::default(); cap],
                            std::vec![Insn::default(); cap],
                            std::vec![Insn::default(); cap],
                        ];
                        let [oa, ob, oc] = &mut out;
                        let ra = a.relocate(prog, prologue, fds, oa);
                        let rb = b.relocate(prog, prologue, fds, ob);
                        let rc = c.relocate(prog, prologue, fds, oc);
                        let at = std::format!("{} program {prog}", path.display());
                        assert_eq!(ra, rb, "{at}");
                        assert_eq!(ra, rc, "{at}");
                        if let Ok(n) = ra {
                            assert_eq!(oa[..n], ob[..n], "{at}");
                            assert_eq!(oa[..n], oc[..n], "{at}");
                        }
                    }
                }
                assert_eq!(a.linked_len(prog), b.linked_len(prog));
                let mut la = [LinkedPart::default(); 64];
                let mut lb = [LinkedPart::default(); 64];
                let na = a.link_layout(prog, &mut la);
                assert_eq!(na, b.link_layout(prog, &mut lb));
                if let Ok(n) = na {
                    assert_eq!(la[..n], lb[..n]);
                }
                checked += 1;
            }
        }
        assert!(checked > 10, "{checked}");
    }
}
