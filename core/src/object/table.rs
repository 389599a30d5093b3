//! The relocation table: what relocating does to each function, worked out once at open
//! into the caller's storage. Per function, one run of entries: its relocations (each
//! one's [`Action`], in REL table order), then its
//! code references (bpf-to-bpf calls and function addresses, in instruction order, with
//! the function and instruction each lands on), ended by the error the linker meets
//! there, if any. Relocating copies a function and applies its run; linking follows the
//! references. An object whose table does not fit the storage is refused with
//! [`Error::Capacity`].

use super::maps::MapDef;
use super::parts::Parts;
use super::programs::Program;
use super::reloc::{Action, RelocKind, PSEUDO_CALL, PSEUDO_FUNC};
use crate::error::{Error, Result};
use crate::insn::{opcode, Insn, INSN_SIZE};
use heapless::vec::VecView;

/// Default capacity of the relocation table: an object's patches of code and its code
/// references (the peers' `large` object has about 1,000; Debian's libbpf-tools at most
/// 355).
pub const DEFAULT_PATCHES: usize = 2048;

/// One entry of the relocation table: at instruction `at` of its function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) at: u32,
    pub(super) kind: EntryKind,
}

/// What an [`Entry`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EntryKind {
    /// `ld_imm64` of map `map`'s fd.
    MapFd { map: u32 },
    /// `ld_imm64` of an address in global data map `map`: the second slot's `imm` is
    /// `value` (the symbol's, low 32 bits: all an `imm` holds) plus the first's.
    MapValue { map: u32, value: u32 },
    /// A use of undefined symbol `sym` (`.kconfig` variable, ksym, kfunc).
    Extern { sym: u32 },
    /// A relocation against a section that is neither code, maps nor global data.
    Refuse,
    /// A relocation against code (symbol `sym`), which a code reference here names.
    Code { sym: u32 },
    /// A relocation that patches nothing and names no code (data without a map).
    NoCode,
    /// A relocation that does not read as this function's (possible where functions
    /// overlap): against symbol `sym`, which a code reference here may name.
    Sym { sym: u32 },
    /// A code reference landing on instruction `offset` of function `program`: a call,
    /// or (`ld`) a function's address.
    Ref { program: u32, offset: u32, ld: bool },
    /// The linker's error at this reference (see [`RefError`]); nothing follows it.
    Bad { what: RefError },
}

/// The errors a code reference can be, told when linking reaches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RefError {
    NotCode,
    BeforeSection,
    NoFunction,
}

impl RefError {
    fn what(self) -> &'static str {
        match self {
            RefError::NotCode => "bpf-to-bpf call against a symbol that is not code",
            RefError::BeforeSection => "call target before its section",
            RefError::NoFunction => "call target is no function of the object",
        }
    }

    /// The error at instruction `at` of function `p`.
    pub(super) fn error(self, parts: &Parts<'_>, p: &Program<'_>, at: u32) -> Error {
        Error::BadReloc {
            section: parts.elf.section_ref(p.section_index),
            index: 0,
            insn: (u64::from(p.offset) / 8) + u64::from(at),
            what: self.what(),
        }
    }
}

// Kept small: an entry is what the open phase writes per relocation and reference.
const _: () = assert!(core::mem::size_of::<Entry>() == 16);

/// Writes every function's run (see the module docs) into `table`, recording where it
/// lies in the function (`patch_first`, `patch_len`, `ref_len`).
///
/// # Errors
/// [`Error::Capacity`] when the table is full.
pub(super) fn build(
    parts: &Parts<'_>,
    programs: &mut [Program<'_>],
    maps: &[MapDef<'_>],
    table: &mut VecView<Entry>,
) -> Result<()> {
    let full = |table: &VecView<Entry>| Error::Capacity {
        what: "relocations and code references (ObjectStorage L)",
        limit: u32::try_from(table.capacity()).unwrap_or(u32::MAX),
    };
    for i in 0..programs.len() {
        let Some(p) = programs.get(i) else { break };
        let first = table.len();
        for entry in relocations(parts, maps, p) {
            table.push(entry).map_err(|_| full(table))?;
        }
        let patches = table.len() - first;
        let mut j = 0;
        let relocs = first..first + patches;
        while let Some((next, entry)) = next_ref(parts, programs, p, table, relocs.clone(), j) {
            j = next;
            table.push(entry).map_err(|_| full(table))?;
            if let EntryKind::Bad { .. } = entry.kind {
                break;
            }
        }
        let refs = table.len() - first - patches;
        if let Some(p) = programs.get_mut(i) {
            p.patch_first = first as u32;
            p.patch_len = patches as u32;
            p.ref_len = refs as u32;
        }
    }
    Ok(())
}

/// The entries of function `p`'s relocations: those of its REL entries that lie on one of
/// its instructions, in table order, each as its [`Action`] relative to `p` (one that does
/// not resolve relative to `p`, possible where functions overlap, patches nothing).
fn relocations<'x>(
    parts: &'x Parts<'_>,
    maps: &'x [MapDef<'_>],
    p: &'x Program<'_>,
) -> impl Iterator<Item = Entry> + 'x {
    let table = p
        .rel_section
        .map(|rel| crate::elf::RelTable::validated(&parts.elf, rel));
    let range = if table.is_some() {
        p.rel_first..p.rel_end
    } else {
        0..0
    };
    let start = u64::from(p.offset);
    let end = start + p.code.len() as u64;
    range.filter_map(move |i| {
        let rel = table.as_ref()?.get(i)?;
        if rel.offset < start || rel.offset >= end || rel.offset % 8 != 0 {
            return None; // another function's, or on no instruction
        }
        let sym = parts.symbols.as_ref()?.get(rel.sym)?;
        let at = ((rel.offset - start) / 8) as u32;
        let kind = match parts.classify(maps, p, rel.offset, &sym) {
            Ok((_, Action::MapFd(map))) => EntryKind::MapFd { map },
            Ok((_, Action::MapValue(map))) => EntryKind::MapValue {
                map,
                value: sym.value as u32,
            },
            Ok((_, Action::Extern)) => EntryKind::Extern { sym: rel.sym },
            Ok((_, Action::Refuse)) => EntryKind::Refuse,
            Ok((RelocKind::Code { .. }, Action::Nothing)) => EntryKind::Code { sym: rel.sym },
            Ok((_, Action::Nothing)) => EntryKind::NoCode,
            Err(_) => EntryKind::Sym { sym: rel.sym },
        };
        Some(Entry { at, kind })
    })
}

/// The next code reference of function `p` from instruction `j` on (second slots of
/// `ld_imm64` skipped): the instruction after it, and its entry. `p`'s relocations are
/// the entries `relocs` of `table`.
fn next_ref(
    parts: &Parts<'_>,
    programs: &[Program<'_>],
    p: &Program<'_>,
    table: &VecView<Entry>,
    relocs: core::ops::Range<usize>,
    mut j: usize,
) -> Option<(usize, Entry)> {
    let relocs = table.get(relocs).unwrap_or_default();
    // Only a call or an `ld_imm64` can refer to code: told on the opcode byte.
    while let Some(&op) = p.code.get(j * INSN_SIZE) {
        let at = j;
        let ld = op == opcode::LD_IMM64;
        j += if ld { 2 } else { 1 };
        if !ld && op != opcode::JMP | opcode::CALL {
            continue;
        }
        let bytes = p.code.get(at * INSN_SIZE..)?.first_chunk::<INSN_SIZE>()?;
        let insn = Insn::from_native_bytes(*bytes);
        let kind = match code_target(parts, programs, p, relocs, at, insn) {
            Ok(None) => continue,
            Ok(Some((program, offset))) => EntryKind::Ref {
                program: program as u32,
                offset: offset as u32,
                ld,
            },
            Err(what) => EntryKind::Bad { what },
        };
        return Some((
            j,
            Entry {
                at: at as u32,
                kind,
            },
        ));
    }
    None
}

/// The function (and the instruction in it) instruction `at` of `p` (`insn`) refers to,
/// if it is a call of a BPF function or loads a function's address; `relocs` are `p`'s
/// relocations.
fn code_target(
    parts: &Parts<'_>,
    programs: &[Program<'_>],
    p: &Program<'_>,
    relocs: &[Entry],
    at: usize,
    insn: Insn,
) -> core::result::Result<Option<(usize, usize)>, RefError> {
    let is_call = insn.code() == opcode::JMP | opcode::CALL && insn.src() == PSEUDO_CALL;
    let is_ld = insn.code() == opcode::LD_IMM64;
    if !is_call && !is_ld {
        return Ok(None);
    }
    let imm = i64::from(insn.imm());
    // Only relocations that are not map loads can name code: without any, a map or
    // data load is no code reference and a call is relative inside the section.
    let others = p.reloc_count != p.map_reloc_count;
    if is_ld && !others && insn.src() != PSEUDO_FUNC {
        return Ok(None);
    }
    // The first relocation at the instruction, against a symbol (`Sym`, `Extern`) whose
    // section may be code; maps, global data and other sections are no code.
    let rel = relocs
        .iter()
        .find(|e| e.at as usize == at)
        .filter(|_| others);
    let rel = match rel.map(|e| e.kind) {
        None => None,
        Some(EntryKind::Code { sym }) => parts
            .symbols
            .as_ref()
            .and_then(|s| s.get(sym))
            .map(|s| (u32::from(s.shndx), s.value, true)),
        Some(EntryKind::Sym { sym } | EntryKind::Extern { sym }) => {
            parts.symbols.as_ref().and_then(|s| s.get(sym)).map(|s| {
                let shndx = u32::from(s.shndx);
                let exec = parts.elf.section(shndx).is_some_and(|sh| sh.is_exec());
                (shndx, s.value, exec)
            })
        }
        Some(_) => Some((0, 0, false)),
    };
    let (section, index) = match rel {
        Some((_, _, false)) if is_call => return Err(RefError::NotCode),
        Some((_, _, false)) => return Ok(None), // a map or global data load
        Some((shndx, value, true)) => {
            let index = if is_call {
                (value / 8) as i64 + imm + 1
            } else {
                (value as i64 + imm) / 8
            };
            (shndx, index)
        }
        // Inside the program's own section: relative, no relocation.
        None if is_call || insn.src() == PSEUDO_FUNC => {
            let own = i64::from(p.offset / 8) + at as i64;
            (p.section_index, own + imm + 1)
        }
        None => return Ok(None),
    };
    let index = u64::try_from(index).map_err(|_| RefError::BeforeSection)?;
    let byte = index.wrapping_mul(INSN_SIZE as u64);
    let t = find_function(programs, section, byte).ok_or(RefError::NoFunction)?;
    let q = programs.get(t).map_or(0, |q| u64::from(q.offset));
    Ok(Some((t, ((byte - q) / INSN_SIZE as u64) as usize)))
}

/// The function holding byte `byte` of section `section`: the last program (they are in
/// `(section, offset)` order) starting at or before it, if it extends over it.
fn find_function(programs: &[Program<'_>], section: u32, byte: u64) -> Option<usize> {
    let lo =
        programs.partition_point(|q| (q.section_index, u64::from(q.offset)) <= (section, byte));
    lo.checked_sub(1).filter(|&t| {
        programs.get(t).is_some_and(|q| {
            q.section_index == section && byte < u64::from(q.offset) + q.code.len() as u64
        })
    })
}
