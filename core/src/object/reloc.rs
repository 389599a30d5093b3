//! Relocations of code: what each one refers to ([`RelocKind`]) and what relocating does
//! for it ([`Action`], one table for every kind), checked once at open (by the pass that
//! writes the relocation table, see `table`) and re-read from the REL table by
//! [`Object::relocations`](super::Object::relocations).

use super::maps::MapDef;
use super::parts::{MapTarget, Parts};
use super::programs::Program;
use crate::elf::{Symbol, SHT_NOBITS, SHT_PROGBITS};
use crate::insn::opcode;

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
    /// A map (legacy `maps` section or BTF-defined `.maps`), by index in
    /// [`Object::maps`](super::Object::maps).
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

/// What relocating does for one relocation, by what it refers to:
///
/// | refers to | action |
/// |---|---|
/// | a map | `ld_imm64`: `src_reg = BPF_PSEUDO_MAP_FD`, `imm = fd` |
/// | global data with a map | `ld_imm64`: `src_reg = BPF_PSEUDO_MAP_VALUE`, `imm = fd`, second `imm` = value + `imm` |
/// | an extern | a `.kconfig` variable's slot as global data, anything else refused |
/// | another section | refused |
/// | code, data without a map | nothing (calls are linked by the walk) |
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Action {
    /// Map `map`'s fd.
    MapFd(u32),
    /// An address in global data map `map`.
    MapValue(u32),
    /// An extern, linked by name.
    Extern,
    /// Refused.
    Refuse,
    /// Nothing to patch.
    Nothing,
}

impl<'a> Parts<'a> {
    /// A relocation at byte `offset` of its section, against `sym`, of program `p`, whose
    /// instructions hold the offset: checked (in this order: alignment, the map it names,
    /// the instruction a map load patches) and classified; `Err` is what is wrong.
    #[inline]
    pub(super) fn classify(
        &self,
        maps: &[MapDef<'_>],
        p: &Program<'_>,
        offset: u64,
        sym: &Symbol,
    ) -> core::result::Result<(RelocKind, Action), &'static str> {
        if offset % 8 != 0 {
            return Err("offset is not on an instruction boundary");
        }
        let shndx = u32::from(sym.shndx);
        Ok(match self.map_target(maps, shndx, sym.value) {
            MapTarget::None if shndx == 0 => (RelocKind::Extern, Action::Extern),
            MapTarget::None => match self.non_map_kind(shndx) {
                k @ RelocKind::Other { .. } => (k, Action::Refuse),
                k => (k, Action::Nothing),
            },
            MapTarget::Bad(what) => return Err(what),
            MapTarget::Map(map) | MapTarget::Value(map) => {
                let at = offset.wrapping_sub(u64::from(p.offset)) / 8;
                let code = p.code.get(at as usize * 8).copied();
                if code != Some(opcode::LD_IMM64) {
                    return Err("map relocation on an instruction that is not ld_imm64");
                }
                if at + 1 >= p.insn_count() as u64 {
                    return Err("ld_imm64 is missing its second slot");
                }
                if Some(shndx) == self.maps_section || Some(shndx) == self.btf_maps_section {
                    (RelocKind::Map { map }, Action::MapFd(map))
                } else {
                    (RelocKind::Data { section: shndx }, Action::MapValue(map))
                }
            }
        })
    }

    /// The kind of a relocation against a symbol of section `shndx` (not 0, no map).
    #[inline]
    fn non_map_kind(&self, shndx: u32) -> RelocKind {
        match self.elf.section(shndx) {
            Some(sh) if sh.is_exec() => RelocKind::Code { section: shndx },
            Some(sh) if sh.sh_type == SHT_PROGBITS || sh.sh_type == SHT_NOBITS => {
                let name = self.elf.shstrtab().tail(sh.name);
                if name.starts_with(b".rodata")
                    || name.starts_with(b".data")
                    || name.starts_with(b".bss")
                {
                    RelocKind::Data { section: shndx }
                } else {
                    RelocKind::Other { section: shndx }
                }
            }
            // Another type, a reserved index (SHN_ABS, SHN_COMMON ...) or past the table.
            _ => RelocKind::Other { section: shndx },
        }
    }

    /// The relocations of program `p` (validated at open), re-read from its REL table in
    /// table order.
    pub(super) fn relocs_of<'x>(
        &'x self,
        maps: &'x [MapDef<'a>],
        p: &'x Program<'a>,
    ) -> impl Iterator<Item = Reloc> + use<'x, 'a> {
        let table = p
            .rel_section
            .map(|rel| crate::elf::RelTable::validated(&self.elf, rel));
        let range = if table.is_some() {
            p.rel_first..p.rel_end
        } else {
            0..0
        };
        let start = u64::from(p.offset);
        let end = start + p.code.len() as u64;
        range.filter_map(move |i| {
            let rel = table.as_ref()?.get(i)?;
            if rel.offset < start || rel.offset >= end {
                return None; // another program of the same section
            }
            let sym = self.symbols.as_ref()?.get(rel.sym)?;
            let (kind, _) = self.classify(maps, p, rel.offset, &sym).ok()?;
            Some(Reloc {
                index: i,
                insn: ((rel.offset - start) / 8) as u32,
                r_type: rel.r_type,
                sym: rel.sym,
                sym_value: sym.value,
                kind,
            })
        })
    }
}
