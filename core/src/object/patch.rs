//! What relocating does to each function, worked out once at open: the patch of every
//! relocation (a map's fd, an address in global data, an extern, a refusal) and the code
//! references (bpf-to-bpf calls, function addresses) with the function and instruction
//! each lands on.
//!
//! Without them, [`Object::relocate`](super::Object::relocate) re-reads a function's REL
//! entries and symbols, finds each map again and rescans the instructions for calls every
//! time the function is written out: once per program that calls it. With them, writing a
//! function out is a copy and a loop over its patches, and linking a program follows its
//! call lists. They live in the caller's [`ObjectStorage`](super::ObjectStorage) (capacity
//! `L`); an object that needs more, or whose tables are unusual (a function's REL entries
//! not one run, a call that resolves to no function), is relocated by re-reading as
//! before: the table is a shortcut, never a limit.
//!
//! Beyond the patches, every function called is linked once at open into the
//! decoded-instruction cache (the layout, see [`Image`]): a subprogram relocated on its own
//! is then a copy of its part of the layout, and a program appends the parts of the
//! functions it calls, whatever the number of programs calling them.

use super::{MapDef, MapTarget, Parts, Program, RelocKind};
use crate::elf::{SHF_EXECINSTR, SHT_PROGBITS, SHT_REL};
use crate::error::{Error, Result};
use crate::insn::{opcode, Insn, INSN_SIZE};
use heapless::vec::VecView;

/// Default capacity of the patch table: an object's relocations of code, its code
/// references, and per function called its image and its loads in the layout (the peers'
/// `large` object has 1,000 entries; Debian's libbpf-tools at most 355).
pub const DEFAULT_PATCHES: usize = 2048;

/// Default capacity of the decoded-instruction cache (8 bytes each): the functions other
/// functions call (`.text` subprograms) are linked once at open, and relocating copies
/// them into every program that calls them (the peers' `globals` object has 97 such
/// instructions, Debian's libbpf-tools at most 690; without room the linker walks, and
/// decodes each function as it goes).
pub const DEFAULT_INSNS: usize = 1024;

/// One patch of a function's instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Patch {
    /// Instruction index in the function.
    pub(crate) at: u32,
    pub(crate) kind: PatchKind,
}

/// What a [`Patch`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PatchKind {
    /// `ld_imm64` of map `map`'s fd.
    MapFd { map: u32 },
    /// `ld_imm64` of an address in global data map `map`: the second slot's `imm` is
    /// `value` (the symbol's, low 32 bits: all the `imm` holds) plus the first's.
    MapValue { map: u32, value: u32 },
    /// A use of undefined symbol `sym` (`.kconfig` variable, ksym, kfunc).
    Extern { sym: u32 },
    /// A relocation against a section that is neither code, maps nor global data.
    Other,
    /// Nothing to patch here (data without a map).
    Nothing,
    /// A reference to code (linked through the call lists): section `section`, symbol
    /// value `value`.
    Code { section: u32, value: u32 },
    /// A code reference: a call (`ld: false`) or function address (`ld: true`) landing
    /// on instruction `offset` of function `program`.
    Call { program: u32, offset: u32, ld: bool },
    /// In the layout (see [`Image`]): the `imm` of a map or global data load, map `map`'s
    /// fd (its `src_reg` and second slot are set there already).
    Fd { map: u32 },
    /// Just before a function's call list: its part of the layout (see [`Image`]), from
    /// [`Patch::at`] in the decoded-instruction cache.
    Part {
        /// Its height, plus [`CLOSED`] when nothing in the part refers outside it.
        meta: u8,
        npatches: u16,
        len: u32,
        patches: u32,
    },
    /// Just before a function's call list: it is a root (see [`Image`]).
    Root,
}

/// The patch table being filled by [`collect`], and what it learned.
pub(crate) struct PatchTable<'p> {
    pub(crate) patches: &'p mut VecView<Patch>,
    /// Every relocation has its patch (the table did not fill up).
    pub(crate) ready: bool,
    /// Every REL table of code is in offset order.
    pub(crate) sorted: bool,
    /// Some REL table has two entries in a row at the same offset.
    pub(crate) dup: bool,
}

/// `u32` at `at` of `b`, native byte order (0 past the end).
#[inline(always)]
fn rd32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|w| w.first_chunk::<4>())
        .map_or(0, |w| u32::from_ne_bytes(*w))
}

/// `u64` at `at` of `b`, native byte order (0 past the end).
#[inline(always)]
fn rd64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .and_then(|w| w.first_chunk::<8>())
        .map_or(0, |w| u64::from_ne_bytes(*w))
}

/// A field of a section header that is 64 bits wide in ELF64 (at `at64`) and 32 in
/// ELF32 (at `at32`).
#[inline(always)]
fn word<const WIDE: bool>(h: &[u8], at64: usize, at32: usize) -> u64 {
    if WIDE {
        rd64(h, at64)
    } else {
        rd32(h, at32).into()
    }
}

#[cold]
#[inline(never)]
fn bad_reloc(parts: &Parts<'_>, target: u32, index: u32, offset: u64, what: &'static str) -> Error {
    Error::BadReloc {
        section: parts.elf.section_ref(target),
        index,
        insn: offset / 8,
        what,
    }
}

#[cold]
#[inline(never)]
fn bad_table(parts: &Parts<'_>, index: u32, what: &'static str) -> Error {
    Error::BadSection {
        section: parts.elf.section_ref(index),
        what,
    }
}

/// The pass over every REL table of code (in `parts.rel_lo..parts.rel_hi`, section
/// order; `WIDE`: ELF64 records, else ELF32): validates every relocation (each entry
/// belongs to the program whose instructions contain its offset, and the checks of
/// `Parts::classify`, in its order); records per program its REL section, the range of
/// its entries in that table and its counts, and each entry's patch in the patch table
/// (entry `i` of a table at the table's base plus `i`).
#[inline(never)]
pub(crate) fn collect<'a, const WIDE: bool>(
    parts: &Parts<'a>,
    programs: &mut [Program<'_>],
    maps: &[MapDef<'a>],
    out: &mut PatchTable<'_>,
) -> Result<()> {
    let elf = &parts.elf;
    let hsize = if WIDE { 64 } else { 40 };
    let headers = elf.section_table();
    // `index` may be any `sh_info`: checked, as `index * hsize` may not fit a 32-bit
    // `usize` (the checks cost nothing where it always fits).
    let header = |index: u32| {
        let at = (index as usize).checked_mul(hsize)?;
        headers.get(at..at.checked_add(hsize)?)
    };
    let (syms, nsyms, symtab) = match parts.symbols {
        Some(s) => (s.data(), s.len(), Some(s.section)),
        None => (&[][..], 0, None),
    };
    // Where the search for a table's programs starts (tables usually come in the order
    // of their sections).
    let mut lo = 0usize;
    let mut symbols = Symbols::EMPTY;
    let pass = Pass {
        parts,
        maps,
        syms,
        nsyms,
    };
    for index in parts.rel_lo..parts.rel_hi {
        let Some(h) = header(index) else {
            continue;
        };
        if rd32(h, 4) != SHT_REL {
            continue;
        }
        let target = rd32(h, if WIDE { 44 } else { 28 });
        let exec = header(target).is_some_and(|t| {
            rd32(t, 4) == SHT_PROGBITS && word::<WIDE>(t, 8, 8) & SHF_EXECINSTR != 0
        });
        if !exec {
            continue;
        }
        // The programs of the target section: a contiguous run (programs are sorted).
        let first = if programs.get(lo).is_some_and(|p| p.section_index == target)
            && (lo == 0
                || programs
                    .get(lo - 1)
                    .is_some_and(|p| p.section_index < target))
        {
            lo
        } else {
            programs.partition_point(|p| p.section_index < target)
        };
        let count = programs
            .get(first..)
            .unwrap_or_default()
            .iter()
            .take_while(|p| p.section_index == target)
            .count();
        lo = first + count;
        let Some(section_programs) = programs.get_mut(first..lo).filter(|s| !s.is_empty()) else {
            continue; // an executable section too small to be a program
        };
        // The checks of `RelTable::checked_header`, in its order.
        let Some(symtab) = symtab else {
            return Err(bad_table(
                parts,
                index,
                "relocations without a symbol table",
            ));
        };
        if rd32(h, if WIDE { 40 } else { 24 }) != symtab {
            return Err(bad_table(parts, index, "sh_link is not the symbol table"));
        }
        let ent: u64 = if WIDE { 16 } else { 8 };
        let (entsize, size) = (word::<WIDE>(h, 56, 36), word::<WIDE>(h, 32, 20));
        if (entsize != 0 && entsize != ent) || size % ent != 0 {
            return Err(bad_table(
                parts,
                index,
                "relocation entry size does not match the ELF class",
            ));
        }
        // The section pass checked every section's extent.
        let start = word::<WIDE>(h, 24, 16) as usize;
        let data = elf
            .data()
            .get(start..start.saturating_add(size as usize))
            .unwrap_or_default();
        if u32::try_from(data.len() as u64 / ent).is_err() {
            return Err(bad_table(parts, index, "too many relocations"));
        }
        pass.rel_table::<WIDE>(index, target, section_programs, data, out, &mut symbols)?;
    }
    Ok(())
}

/// What the pass over the REL tables keeps from table to table.
struct Pass<'x, 'a> {
    parts: &'x Parts<'a>,
    maps: &'x [MapDef<'a>],
    syms: &'a [u8],
    nsyms: u32,
}

/// The patch of a relocation against symbol `sym` (its section and value read from
/// `syms`), as [`Parts::map_target`] and [`Parts::non_map_kind`] tell it: `Err` when the
/// symbol lies in a maps section where no map is; `Ok(None)` for code whose value does
/// not fit 32 bits (the call lists are then left to the linker's scan).
#[inline(always)]
fn symbol_patch<const WIDE: bool>(
    parts: &Parts<'_>,
    maps: &[MapDef<'_>],
    syms: &[u8],
    sym: u32,
) -> core::result::Result<Option<PatchKind>, &'static str> {
    let (shndx, value) = super::raw_sym::<WIDE>(syms, sym).unwrap_or_default();
    let shndx = u32::from(shndx);
    Ok(Some(match parts.map_target(maps, shndx, value) {
        MapTarget::Map(map) => PatchKind::MapFd { map },
        MapTarget::Value(map) => PatchKind::MapValue {
            map,
            value: value as u32,
        },
        MapTarget::Bad(what) => return Err(what),
        MapTarget::None if shndx == 0 => PatchKind::Extern { sym },
        MapTarget::None => match parts.non_map_kind(shndx) {
            RelocKind::Code { section } => match u32::try_from(value) {
                Ok(value) => PatchKind::Code { section, value },
                Err(_) => return Ok(None),
            },
            RelocKind::Other { .. } => PatchKind::Other,
            _ => PatchKind::Nothing,
        },
    }))
}

/// The patches of the symbols relocations named last, by symbol index (a patch depends
/// only on the symbol; an object's relocations name a few symbols many times).
struct Symbols {
    /// Per slot a patch whose [`Patch::at`] is its symbol's index inverted (0: none, the
    /// index `u32::MAX` being past every symbol table).
    slots: [Patch; SYMBOLS],
    /// Some symbol is code whose value does not fit 32 bits.
    wide: bool,
}

/// Slots of [`Symbols`] (the peers' `large` object names 50 maps).
const SYMBOLS: usize = 64;

impl Symbols {
    /// No symbol yet: all zero bytes (a constant, set in one go; built field by field it
    /// was a loop and a copy).
    const EMPTY: Symbols = Symbols {
        slots: [Patch {
            at: 0,
            kind: PatchKind::MapFd { map: 0 },
        }; SYMBOLS],
        wide: false,
    };

    /// Puts the patch of a relocation against symbol `sym` (see [`symbol_patch`]) in its
    /// slot; `wide` goes true for code whose value does not fit 32 bits.
    #[inline(never)]
    fn miss<const WIDE: bool>(
        &mut self,
        pass: &Pass<'_, '_>,
        sym: u32,
    ) -> core::result::Result<(), &'static str> {
        let (parts, maps, syms) = (pass.parts, pass.maps, pass.syms);
        let kind = match symbol_patch::<WIDE>(parts, maps, syms, sym)? {
            Some(kind) => kind,
            None => {
                self.wide = true;
                PatchKind::Nothing
            }
        };
        let slot = sym as usize % SYMBOLS;
        if let Some(s) = self.slots.get_mut(slot) {
            *s = Patch { at: !sym, kind };
        }
        Ok(())
    }
}

/// The last program of `programs` (those of one section) starting at or before byte
/// `offset`, if it holds it.
#[inline(never)]
fn program_at(programs: &[Program<'_>], offset: u64) -> Option<usize> {
    let after = programs.partition_point(|p| u64::from(p.offset) <= offset);
    after.checked_sub(1).filter(|&c| {
        programs.get(c).is_some_and(|p| {
            let s = u64::from(p.offset);
            offset >= s && offset < s + p.code.len() as u64
        })
    })
}

impl Pass<'_, '_> {
    /// The entries of REL table `index` (its bytes `data`), whose programs are `programs`.
    /// What changes per entry stays in registers; a symbol not yet seen is looked up out
    /// of line ([`Symbols::miss`]), a new program in [`enter`] (inlined: out of line it
    /// cost more per table than it saved). An entry's patch is a copy of its symbol's at
    /// its instruction; its program's count of entries is written per run.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn rel_table<const WIDE: bool>(
        &self,
        index: u32,
        target: u32,
        programs: &mut [Program<'_>],
        data: &[u8],
        out: &mut PatchTable<'_>,
        symbols: &mut Symbols,
    ) -> Result<()> {
        let ent = if WIDE { 16 } else { 8 };
        let n = data.len() / ent;
        let (parts, nsyms) = (self.parts, self.nsyms);
        let patches = &mut *out.patches;
        let base = patches.len();
        // Whether an entry's offset is not past the previous one's (`next`: one past it):
        // then whether the table is out of order or has two entries in a row at one offset
        // is told at the end.
        let (mut not_past, mut next) = (false, 0u64);
        // The current program: none at the start.
        let mut at_prog = At {
            cur: usize::MAX,
            start: 0,
            code: &[],
        };
        for (j, e) in (0u32..).zip(data.chunks_exact(ent)) {
            let (offset, sym) = if WIDE {
                (rd64(e, 0), (rd64(e, 8) >> 32) as u32)
            } else {
                (rd32(e, 0).into(), rd32(e, 4) >> 8)
            };
            if sym >= nsyms {
                return Err(bad_reloc(
                    parts,
                    target,
                    j,
                    offset,
                    "symbol index outside the symbol table",
                ));
            }
            let mut rel_off = offset.wrapping_sub(at_prog.start);
            if rel_off >= at_prog.code.len() as u64 {
                at_prog = enter(parts, index, target, programs, &at_prog, offset, j, base)?;
                rel_off = offset.wrapping_sub(at_prog.start);
            }
            // Inside a program: no overflow.
            if offset < next {
                mark(&mut not_past);
            }
            next = offset + 1;
            if offset % 8 != 0 {
                return Err(bad_reloc(
                    parts,
                    target,
                    j,
                    offset,
                    "offset is not on an instruction boundary",
                ));
            }
            let slot = sym as usize % SYMBOLS;
            if symbols.slots.get(slot).is_none_or(|p| p.at != !sym) {
                symbols
                    .miss::<WIDE>(self, sym)
                    .map_err(|what| bad_reloc(parts, target, j, offset, what))?;
            }
            let Some(cached) = symbols.slots.get(slot) else {
                break;
            };
            let at = (rel_off / 8) as u32;
            if let PatchKind::MapFd { map } | PatchKind::MapValue { map, .. } = cached.kind {
                let code = at_prog.code;
                if code.get(rel_off as usize).copied() != Some(opcode::LD_IMM64) {
                    return Err(bad_reloc(
                        parts,
                        target,
                        j,
                        offset,
                        "map relocation on an instruction that is not ld_imm64",
                    ));
                }
                if u64::from(at) + 1 >= code.len() as u64 / 8 {
                    return Err(bad_reloc(
                        parts,
                        target,
                        j,
                        offset,
                        "ld_imm64 is missing its second slot",
                    ));
                }
                if let Some(p) = programs.get_mut(at_prog.cur) {
                    p.map_reloc_count += 1;
                    p.maps_needed = p.maps_needed.max(map + 1);
                }
            }
            if let Ok(p) = patches.push_mut(Patch {
                at,
                kind: PatchKind::Nothing,
            }) {
                // The symbol's patch copied whole (one move), then its instruction.
                core::slice::from_mut(p).copy_from_slice(core::slice::from_ref(cached));
                p.at = at;
            }
        }
        if let Some(p) = programs.get_mut(at_prog.cur) {
            p.reloc_count = p.reloc_count.wrapping_add(n as u32);
            p.rel_end = n as u32;
        }
        // Every entry's patch was pushed: the table is ready if all fit (else it is not
        // used, and what it holds does not matter).
        out.ready &= !symbols.wide && patches.len() == base + n;
        if not_past {
            let mut prev = None;
            for e in data.chunks_exact(ent) {
                let offset = if WIDE { rd64(e, 0) } else { rd32(e, 0).into() };
                out.sorted &= prev.is_none_or(|p| offset >= p);
                out.dup |= prev == Some(offset);
                prev = Some(offset);
            }
        }
        Ok(())
    }
}

/// Sets `flag` (out of line: the flag then stays in memory, not in a register).
#[cold]
#[inline(never)]
fn mark(flag: &mut bool) {
    *flag = true;
}

/// The program of a run of REL entries: its index (`usize::MAX`: none), start in its
/// section and code.
struct At<'c> {
    cur: usize,
    start: u64,
    code: &'c [u8],
}

/// Entry `j` of REL table `index` (at byte `offset`) is not in the program of the one
/// before (`prev`): that program's run ends (its count of entries grows by `j`), and the
/// entry's program is found (the first program is tried first at the start), its REL
/// section noted (a second one is an error), at its first entry where its entries and
/// patches (from `base`) start, and its count of entries less `j` (the run's end adds
/// the index one past its last entry).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn enter<'c>(
    parts: &Parts<'_>,
    index: u32,
    target: u32,
    programs: &mut [Program<'c>],
    prev: &At<'_>,
    offset: u64,
    j: u32,
    base: usize,
) -> Result<At<'c>> {
    if let Some(p) = programs.get_mut(prev.cur) {
        p.reloc_count = p.reloc_count.wrapping_add(j);
        p.rel_end = j;
    }
    let holds = j == 0
        && programs.first().is_some_and(|p| {
            let s = u64::from(p.offset);
            offset >= s && offset < s + p.code.len() as u64
        });
    let cur = if holds {
        0
    } else {
        program_at(programs, offset).ok_or_else(|| {
            bad_reloc(
                parts,
                target,
                j,
                offset,
                "offset is outside every program of the section",
            )
        })?
    };
    let Some(prog) = programs.get_mut(cur) else {
        return Ok(At {
            cur,
            start: 0,
            code: &[],
        });
    };
    match prog.rel_section {
        Some(r) if r != index => {
            return Err(bad_table(
                parts,
                index,
                "second REL section for the same program",
            ))
        }
        Some(_) => {}
        None => {
            prog.rel_section = Some(index);
            prog.rel_first = j;
            prog.patch_first = base as u32 + j;
        }
    }
    prog.reloc_count = prog.reloc_count.wrapping_sub(j);
    Ok(At {
        cur,
        start: u64::from(prog.offset),
        code: prog.code,
    })
}

/// Whether every function with relocations has its REL entries as one run of its table
/// (`rel_first..rel_end` holds only its own), so its patches are one run of the table.
pub(crate) fn contiguous(programs: &[Program<'_>]) -> bool {
    programs
        .iter()
        .all(|p| p.reloc_count == 0 || p.rel_end - p.rel_first == p.reloc_count)
}

/// The opcode and the source register of an instruction as its first two bytes read as
/// a native `u16` and masked with [`HEAD_MASK`] (the register nibbles' order follows the
/// machine's byte order, which is the object's).
const fn head(op: u8, src: u8) -> u16 {
    if cfg!(target_endian = "little") {
        op as u16 | ((src as u16) << 12)
    } else {
        ((op as u16) << 8) | src as u16
    }
}

/// Keeps the opcode and the source register of an instruction's first two bytes.
const HEAD_MASK: u16 = head(0xff, 0xf);
/// A bpf-to-bpf call.
const HEAD_CALL: u16 = head(opcode::JMP | opcode::CALL, super::PSEUDO_CALL);
/// An `ld_imm64` of a function's address.
const HEAD_FUNC: u16 = head(opcode::LD_IMM64, super::PSEUDO_FUNC);

/// One pass over every function's instructions at open: appends its code references to
/// the patch table as the linker's scan would find them (its call list: `call_first`,
/// `call_len`) and notes whether it holds a bpf-to-bpf call (`Program::pseudo_call`).
/// Returns whether the call lists are complete: `false` when the table fills up or a
/// reference resolves to no function (the linker then scans, and reports the error where
/// it always did).
///
/// Only a bpf-to-bpf call, an `ld_imm64` of a function and an `ld_imm64` whose first
/// relocation is against code can be a code reference (what `code_target` takes): the
/// calls and `ld_imm64` of each block of 8 instructions are found on their opcode alone
/// (one table load an instruction, no branch), and only those few are looked at further.
#[inline(never)]
pub(crate) fn scan_functions(programs: &mut [Program<'_>], patches: &mut VecView<Patch>) -> bool {
    if programs.len() > super::MAX_LINKED {
        return false; // more than the linker's start table holds: it scans
    }
    let mut finder = Finder {
        section: None,
        lo: 0,
        hi: 0,
        last: [(0, 0, u32::MAX, 0); 32],
    };
    for i in 0..programs.len() {
        let Some(p) = programs.get(i) else {
            return false;
        };
        // The function's image (see `Image`) goes just before its call list.
        if patches
            .push(Patch {
                at: 0,
                kind: PatchKind::Nothing,
            })
            .is_err()
        {
            return false;
        }
        let first = patches.len();
        let mut f = Function {
            code: p.code,
            section: p.section_index,
            offset: p.offset,
            pseudo_call: false,
        };
        // Its patches `k..run_end` (one run, in offset order) when it has relocations
        // other than map loads (which may name code): `k` finds the first at an
        // instruction.
        let others = p.reloc_count != p.map_reloc_count;
        let mut k = p.patch_first as usize;
        let run_end = k + p.reloc_count as usize;
        // Only a bpf-to-bpf call or an `ld_imm64` can be a code reference, and only
        // these two opcodes are looked at further: a call, a function's address, or a
        // load whose first relocation is against code; the rest (helper calls, map and
        // data loads) are told apart on their first bytes and their patch.
        let mut visit =
            |at: usize, op: u8, regs: u8, f: &mut Function<'_>, patches: &mut VecView<Patch>| {
                let h = u16::from_ne_bytes([op, regs]) & HEAD_MASK;
                if h != HEAD_CALL && op != opcode::LD_IMM64 {
                    return true;
                }
                // A slot holding a bpf-to-bpf call (second slots included: what
                // `relocate` looks for).
                f.pseudo_call |= h == HEAD_CALL;
                let mut rel = None;
                if others {
                    while let Some(x) = patches.get(k).filter(|_| k < run_end) {
                        if x.at as usize >= at {
                            if x.at as usize == at {
                                rel = Some(x.kind);
                            }
                            break;
                        }
                        k += 1;
                    }
                }
                let target = match rel {
                    Some(PatchKind::Code { section, value }) => {
                        Some(u64::from(section) << 32 | u64::from(value))
                    }
                    // A map or data load: no code; a call against a symbol that is not
                    // code, refused unless it is the second slot of an `ld_imm64`.
                    Some(_) => {
                        return h != HEAD_CALL || f.second_slot(at);
                    }
                    None if h != HEAD_CALL && h != HEAD_FUNC => return true,
                    None => None,
                };
                f.reference(programs, patches, &mut finder, at, h, target)
            };
        // Blocks of 8 instructions: the calls and loads of a block as a bit mask, without
        // a branch per instruction, each then looked at in turn.
        let mut blocks = f.code.chunks_exact(8 * INSN_SIZE);
        let mut at = 0;
        for b in &mut blocks {
            let Some(b) = b.first_chunk::<{ 8 * INSN_SIZE }>() else {
                continue;
            };
            let mut mask = maybe_code8(b);
            while mask != 0 {
                let j = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let op = b.get(j * INSN_SIZE).copied().unwrap_or_default();
                let regs = b.get(j * INSN_SIZE + 1).copied().unwrap_or_default();
                if !visit(at + j, op, regs, &mut f, patches) {
                    return false;
                }
            }
            at += 8;
        }
        // The last few of a longer function: its last whole block, shifted.
        let rest = blocks.remainder();
        let last = f.code.len().checked_sub(8 * INSN_SIZE);
        if let Some(b) = last
            .filter(|_| !rest.is_empty())
            .and_then(|l| f.code.get(l..)?.first_chunk::<{ 8 * INSN_SIZE }>())
        {
            let skip = 8 - rest.len() / INSN_SIZE;
            let mut mask = maybe_code8(b) >> skip;
            while mask != 0 {
                let j = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                let op = b.get((skip + j) * INSN_SIZE).copied().unwrap_or_default();
                let regs = b
                    .get((skip + j) * INSN_SIZE + 1)
                    .copied()
                    .unwrap_or_default();
                if !visit(at + j, op, regs, &mut f, patches) {
                    return false;
                }
            }
        } else {
            for s in rest.chunks_exact(INSN_SIZE) {
                let (op, regs) = match *s {
                    [op, regs, ..] => (op, regs),
                    _ => (0, 0),
                };
                if maybe_code(op) && !visit(at, op, regs, &mut f, patches) {
                    return false;
                }
                at += 1;
            }
        }
        if let Some(p) = programs.get_mut(i) {
            p.call_first = first as u32;
            p.call_len = (patches.len() - first) as u32;
            p.pseudo_call = f.pseudo_call;
        }
    }
    true
}

/// A function being scanned by [`scan_functions`].
struct Function<'a> {
    code: &'a [u8],
    section: u32,
    offset: u32,
    /// Whether a slot holds a bpf-to-bpf call (second slots included: what `relocate`
    /// looks for).
    pseudo_call: bool,
}

impl Function<'_> {
    /// Whether instruction `at` follows an `ld_imm64` (the linker's scan skips it).
    #[inline(always)]
    fn second_slot(&self, at: usize) -> bool {
        at > 0 && self.code.get((at - 1) * INSN_SIZE) == Some(&opcode::LD_IMM64)
    }

    /// The code reference at instruction `at` as the linker's scan finds it, pushed to the
    /// patch table when there is one: `false` when `code_target` refuses it (the linker
    /// then scans and reports it) or the table is full. Its head `h` (see [`head`]) is a
    /// bpf-to-bpf call's, a function address's, or an `ld_imm64`'s with a relocation
    /// against code: what else `code_target` looks at refers to no code. `target` is
    /// the section and value (high and low half) of its relocation against code, if any.
    #[inline(never)]
    fn reference(
        &mut self,
        programs: &[Program<'_>],
        patches: &mut VecView<Patch>,
        finder: &mut Finder,
        at: usize,
        h: u16,
        target: Option<u64>,
    ) -> bool {
        let call = h == HEAD_CALL;
        if self.second_slot(at) {
            return true;
        }
        let ld = !call;
        let imm = i64::from(rd32(self.code, at * INSN_SIZE + 4) as i32);
        let (section, index) = match target {
            Some(t) => {
                let value = i64::from(t as u32);
                let index = if ld {
                    (value + imm) / 8
                } else {
                    value / 8 + imm + 1
                };
                ((t >> 32) as u32, index)
            }
            // Inside the function's own section: relative, no relocation.
            None => (
                self.section,
                i64::from(self.offset / 8) + at as i64 + imm + 1,
            ),
        };
        // `code_target` refuses what lies before the section or past 4 GiB.
        if !(0..=i64::from(u32::MAX / INSN_SIZE as u32)).contains(&index) {
            return false;
        }
        let Some((program, offset)) =
            finder.find(programs, section, index as u32 * INSN_SIZE as u32)
        else {
            return false;
        };
        patches
            .push(Patch {
                at: at as u32,
                kind: PatchKind::Call {
                    program,
                    offset,
                    ld,
                },
            })
            .is_ok()
    }
}

/// Whether an instruction of opcode `op` may be a code reference: a call or an
/// `ld_imm64` (one load and one test an instruction).
#[inline(always)]
fn maybe_code(op: u8) -> bool {
    MAYBE_CODE.get(usize::from(op)).is_some_and(|&m| m)
}

/// [`maybe_code`] of each instruction of a block, as a bit mask (bit `i`: instruction
/// `i`).
#[inline(always)]
fn maybe_code8(b: &[u8; 8 * INSN_SIZE]) -> u8 {
    let mut mask = 0;
    for (bits, s) in MAYBE_CODE_BITS.iter().zip(b.chunks_exact(INSN_SIZE)) {
        mask |= bits
            .get(usize::from(s.first().copied().unwrap_or_default()))
            .copied()
            .unwrap_or_default();
    }
    mask
}

/// [`maybe_code`] of the `i`th instruction of a block as bit `i` (one table per
/// position: one load and one `or` an instruction).
#[allow(clippy::indexing_slicing)]
static MAYBE_CODE_BITS: [[u8; 256]; 8] = {
    let mut t = [[0; 256]; 8];
    let mut i = 0;
    while i < 8 {
        t[i][(opcode::JMP | opcode::CALL) as usize] = 1 << i;
        t[i][opcode::LD_IMM64 as usize] = 1 << i;
        i += 1;
    }
    t
};

/// [`maybe_code`] by opcode (indexed at compile time: a bad index fails the build).
#[allow(clippy::indexing_slicing)]
static MAYBE_CODE: [bool; 256] = {
    let mut t = [false; 256];
    t[(opcode::JMP | opcode::CALL) as usize] = true;
    t[opcode::LD_IMM64 as usize] = true;
    t
};

/// Finds the function holding a byte of a section: the last program (they are in
/// `(section, offset)` order) starting at or before it, if it extends over it. The
/// programs of the last section asked about are kept.
struct Finder {
    section: Option<u32>,
    lo: usize,
    hi: usize,
    /// The last answers, by byte: `(section, byte, program, instruction)` (calls repeat
    /// their targets).
    last: [(u32, u32, u32, u32); 32],
}

impl Finder {
    /// `(program, instruction)` of byte `byte` of section `section`.
    #[inline]
    fn find(&mut self, programs: &[Program<'_>], section: u32, byte: u32) -> Option<(u32, u32)> {
        let slot = (byte / INSN_SIZE as u32) as usize % 32;
        if let Some(&(s, b, t, i)) = self.last.get(slot) {
            if s == section && b == byte && t != u32::MAX {
                return Some((t, i));
            }
        }
        let found = self.search(programs, section, byte)?;
        if let Some(e) = self.last.get_mut(slot) {
            *e = (section, byte, found.0, found.1);
        }
        Some(found)
    }

    #[inline(never)]
    fn search(&mut self, programs: &[Program<'_>], section: u32, byte: u32) -> Option<(u32, u32)> {
        if self.section != Some(section) {
            self.lo = programs.partition_point(|q| q.section_index < section);
            let rest = programs.get(self.lo..).unwrap_or_default();
            self.hi = self.lo + rest.partition_point(|q| q.section_index == section);
            self.section = Some(section);
        }
        let within = programs.get(self.lo..self.hi)?;
        let i = within
            .partition_point(|q| q.offset <= byte)
            .checked_sub(1)?;
        let q = within.get(i)?;
        if u64::from(byte) >= u64::from(q.offset) + q.code.len() as u64 {
            return None;
        }
        Some(((self.lo + i) as u32, (byte - q.offset) / INSN_SIZE as u32))
    }
}

/// A function's part of the layout: at open, every function called is copied once into
/// the decoded-instruction cache, depth first from the functions no other function calls
/// (the layout), and its calls and function addresses linked there; its map and global
/// data loads are patched with the caller's fds when relocating. Kept in the patch table
/// (a [`PatchKind::Part`] just before the function's call list).
///
/// Linking appends the functions a program reaches in the order of a depth-first walk
/// (see [`super::link`]): the part of the layout from a function on, as far as the walk
/// from it reached, is what linking that function alone writes when nothing in it refers
/// outside it (`closed`), and what linking a program (a root: a function no function
/// calls) appends at its first call of that function when none of it was appended before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Image {
    pub(crate) closed: bool,
    /// Where it starts in the decoded-instruction cache.
    pub(crate) at: u32,
    /// Instructions of its part of the layout.
    pub(crate) len: u32,
    /// Its part's map and global data loads in the patch table ([`PatchKind::Fd`], `at`
    /// counted in the cache).
    pub(crate) patches: u32,
    pub(crate) npatches: u32,
    /// Frames of the deepest chain of first calls in its part (itself included).
    pub(crate) height: u32,
}

impl Image {
    /// The image an entry of the patch table holds, if it is a [`PatchKind::Part`].
    #[inline]
    pub(crate) fn of(entry: &Patch) -> Option<Image> {
        match entry.kind {
            PatchKind::Part {
                meta,
                npatches,
                len,
                patches,
            } => Some(Image {
                closed: meta & CLOSED != 0,
                at: entry.at,
                len,
                patches,
                npatches: npatches.into(),
                height: (meta & !CLOSED).into(),
            }),
            _ => None,
        }
    }
}

/// In [`PatchKind::Part`]: the part is closed.
const CLOSED: u8 = 0x80;

/// The index of function `p`'s entry in the patch table (its image or root mark), once
/// [`scan_functions`] has run.
#[inline]
pub(crate) fn entry_of(p: &Program<'_>) -> Option<usize> {
    (p.call_first as usize).checked_sub(1)
}

/// After [`scan_functions`]: copies and links every function called into the
/// decoded-instruction cache (the layout, see [`Image`]) and marks the programs no
/// function calls as roots. `images`: whether the layout may be built (no two
/// relocations of a function at one instruction, where the order of the calls' and the
/// loads' patches would tell); without it (or when it does not fit, or goes deeper than
/// the linker), every function called is decoded there as it is.
#[inline(never)]
pub(crate) fn link_images(
    programs: &mut [Program<'_>],
    patches: &mut VecView<Patch>,
    insns: &mut VecView<Insn>,
    images: bool,
) {
    // Per function: 1 called, 2 called by a function called.
    let mut marks = [0u8; super::MAX_LINKED];
    let Some(marks) = marks.get_mut(..programs.len()) else {
        return;
    };
    for pass in [1u8, 2] {
        for (i, p) in programs.iter().enumerate() {
            if pass == 2 && marks.get(i).is_none_or(|&m| m == 0) {
                continue;
            }
            let first = p.call_first as usize;
            let calls = patches.get(first..first + p.call_len as usize);
            for c in calls.unwrap_or_default() {
                if let PatchKind::Call { program, .. } = c.kind {
                    if let Some(m) = marks.get_mut(program as usize) {
                        *m |= pass;
                    }
                }
            }
        }
    }
    let (insns_base, patches_base) = (insns.len(), patches.len());
    let placed = |programs: &[Program<'_>], patches: &VecView<Patch>, f: usize| {
        let entry = programs.get(f).and_then(entry_of);
        entry.and_then(|e| patches.get(e)).map(|e| e.kind) != Some(PatchKind::Nothing)
    };
    let laid = images && {
        // Depth first from the functions only programs call, then from any left (cycles).
        let mut ok = true;
        for want in [1u8, 3] {
            for f in 0..programs.len() {
                if ok && marks.get(f) == Some(&want) && !placed(programs, patches, f) {
                    ok = lay_out(programs, patches, insns, f);
                }
            }
        }
        ok
    };
    if !laid {
        for p in programs.iter() {
            if let Some(e) = entry_of(p).and_then(|e| patches.get_mut(e)) {
                e.kind = PatchKind::Nothing;
            }
        }
        insns.truncate(insns_base);
        patches.truncate(patches_base);
    }
    for (p, &m) in programs.iter_mut().zip(marks.iter()) {
        let entry = entry_of(p).and_then(|e| patches.get_mut(e));
        if m == 0 {
            if let Some(e) = entry.filter(|_| laid && p.call_len != 0 && p.links()) {
                e.kind = PatchKind::Root;
            }
            continue;
        }
        // The layout's copy serves the linker's walk, which sets every call again; not
        // the copy of a function without relocations of code and without calls (its
        // function addresses are not linked).
        if let Some(e) = entry.filter(|_| laid && p.links()) {
            p.cached = e.at;
            continue;
        }
        let start = insns.len();
        p.cached = u32::MAX;
        if insns.resize_default(start + p.insn_count()).is_ok() {
            if let Some(slots) = insns.get_mut(start..) {
                crate::insn::decode_native(slots, p.code);
                p.cached = start as u32;
            }
        }
    }
}

/// A frame of the walk that lays functions out: the function, where it starts in the
/// cache, its next call and the end of its calls in the patch table, the first of its
/// part's patches, the lowest start of a function its part refers to, the height of its
/// part and whether its part has a relocation the layout does not patch.
#[derive(Clone, Copy)]
struct Frame {
    func: u32,
    start: u32,
    next: u32,
    end: u32,
    patches: u32,
    low: u32,
    height: u32,
    open: bool,
}

/// Places function `top` and every function it reaches not placed yet, depth first as
/// the linker places them, copying each into the cache and linking its calls. Returns
/// whether it did: not when the cache or the patch table is full or the walk goes deeper
/// than the linker's.
fn lay_out(
    programs: &mut [Program<'_>],
    patches: &mut VecView<Patch>,
    insns: &mut VecView<Insn>,
    top: usize,
) -> bool {
    let mut stack: heapless::Vec<Frame, { super::MAX_CALL_DEPTH }> = heapless::Vec::new();
    let Some(frame) = place(programs, patches, insns, top as u32) else {
        return false;
    };
    let _ = stack.push(frame);
    while let Some(top) = stack.last_mut() {
        let mut descend = None;
        while top.next < top.end {
            let Some(&c) = patches.get(top.next as usize) else {
                return false;
            };
            top.next += 1;
            let PatchKind::Call {
                program,
                offset,
                ld,
            } = c.kind
            else {
                continue;
            };
            let Some(entry) = programs.get(program as usize).and_then(entry_of) else {
                return false;
            };
            let start = match patches.get(entry) {
                Some(Patch {
                    kind: PatchKind::Nothing,
                    ..
                }) => {
                    let Some(frame) = place(programs, patches, insns, program) else {
                        return false;
                    };
                    descend = Some(frame);
                    frame.start
                }
                Some(e) => e.at,
                None => return false,
            };
            top.low = top.low.min(start);
            let at = top.start + c.at;
            let rel = i64::from(start + offset) - i64::from(at + 1);
            if let Some(slot) = insns.get_mut(at as usize) {
                slot.set_imm(rel as i32);
                if ld {
                    slot.set_src(super::PSEUDO_FUNC);
                }
            }
            if descend.is_some() {
                break;
            }
        }
        match descend {
            Some(d) => {
                if stack.push(d).is_err() {
                    return false; // deeper than the linker goes
                }
            }
            None => {
                let Some(done) = stack.pop() else {
                    break;
                };
                if let Some(up) = stack.last_mut() {
                    up.low = up.low.min(done.low);
                    up.height = up.height.max(done.height + 1);
                    up.open |= done.open;
                }
                let entry = programs.get(done.func as usize).and_then(entry_of);
                let npatches = u16::try_from(patches.len() as u32 - done.patches).ok();
                let (Some(e), Some(npatches)) = (entry.and_then(|e| patches.get_mut(e)), npatches)
                else {
                    return false;
                };
                let closed = done.low >= done.start && !done.open;
                e.kind = PatchKind::Part {
                    // At most `MAX_CALL_DEPTH` frames.
                    meta: done.height as u8 | if closed { CLOSED } else { 0 },
                    npatches,
                    len: insns.len() as u32 - done.start,
                    patches: done.patches,
                };
            }
        }
    }
    true
}

/// Copies function `f` to the end of the cache and its map and global data loads to the
/// end of the patch table; its part is open if it has a relocation the layout does not
/// patch (an extern, another section: the linker handles or refuses them).
fn place(
    programs: &[Program<'_>],
    patches: &mut VecView<Patch>,
    insns: &mut VecView<Insn>,
    f: u32,
) -> Option<Frame> {
    let p = programs.get(f as usize)?;
    let at = insns.len();
    let n = p.insn_count();
    insns.resize_default(at + n).ok()?;
    crate::insn::decode_native(insns.get_mut(at..)?, p.code);
    let own = patches.len() as u32;
    let mut open = false;
    let first = p.patch_first as usize;
    for j in first..first + p.reloc_count as usize {
        let x = *patches.get(j)?;
        // The load patched as `patch_ld` does, but for the fd.
        let (src, map, value) = match x.kind {
            PatchKind::MapFd { map } => (super::PSEUDO_MAP_FD, map, None),
            PatchKind::MapValue { map, value } => (super::PSEUDO_MAP_VALUE, map, Some(value)),
            PatchKind::Extern { .. } | PatchKind::Other => {
                open = true;
                continue;
            }
            _ => continue,
        };
        let slot = at + x.at as usize;
        let mut orig = 0;
        if let Some(s) = insns.get_mut(slot) {
            orig = s.imm();
            s.set_src(src);
        }
        if let Some(next) = insns.get_mut(slot + 1) {
            next.set_imm(value.map_or(0, |v| (v as i32).wrapping_add(orig)));
        }
        patches
            .push(Patch {
                at: slot as u32,
                kind: PatchKind::Fd { map },
            })
            .ok()?;
    }
    // Placed (the rest is known once its part is laid out).
    let (entry, next, end) = (entry_of(p)?, p.call_first, p.call_first + p.call_len);
    *patches.get_mut(entry)? = Patch {
        at: at as u32,
        kind: PatchKind::Part {
            meta: 0,
            npatches: 0,
            len: 0,
            patches: own,
        },
    };
    Some(Frame {
        func: f,
        start: at as u32,
        next,
        end,
        patches: own,
        low: u32::MAX,
        height: 1,
        open,
    })
}
// Kept small: a patch is what the open phase writes per relocation.
const _: () = assert!(core::mem::size_of::<Patch>() == 16);
