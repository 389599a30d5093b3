//! The relocation table: what relocating does to each function, worked out once at open
//! into the caller's storage. First one entry per relocation of code, in REL table order
//! (each one's [`Action`], written by the pass that checks it: [`check_rels`]); then per
//! function one run of its code references (bpf-to-bpf calls and function addresses, in
//! instruction order, with the function and instruction each lands on), ended by the
//! error the linker meets there, if any. Relocating copies a function and applies the
//! relocations that lie in it; linking follows the references. An object whose table
//! does not fit the storage is refused with [`Error::Capacity`].

use super::maps::MapDef;
use super::parts::Parts;
use super::programs::Program;
use super::reloc::{Action, RelocKind, PSEUDO_CALL, PSEUDO_FUNC, R_BPF_64_32, R_BPF_64_64};
use crate::elf::SHT_REL;
use crate::error::{Error, Result};
use crate::insn::{opcode, Insn, INSN_SIZE};
use heapless::vec::VecView;

/// Default capacity of the relocation table: an object's patches of code and its code
/// references (the peers' `large` object has about 1,000; Debian's libbpf-tools at most
/// 355).
pub const DEFAULT_PATCHES: usize = 2048;

/// One entry of the relocation table: at instruction `at` of its section (a relocation)
/// or of its function (a code reference).
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

/// The pass over every REL table of code (in `parts.rel_lo..parts.rel_hi`, section
/// order): checks every relocation (its symbol index, that it lies in a program, that the
/// program has no second table, then [`Parts::classify`]'s checks), writes its entry into
/// `table` (entry `j` of a REL table at `rel_base + j` of the programs it applies to) and
/// records per program its REL section, the range of its entries and its counts. A table
/// that does not fit is told once every relocation is checked.
///
/// # Errors
/// The first malformed relocation; then [`Error::Capacity`] when the table is full.
pub(super) fn check_rels(
    parts: &Parts<'_>,
    programs: &mut [Program<'_>],
    maps: &[MapDef<'_>],
    table: &mut VecView<Entry>,
) -> Result<()> {
    let elf = &parts.elf;
    let mut fits = true;
    for index in parts.rel_lo..parts.rel_hi {
        let Some(sh) = elf.section(index).filter(|sh| sh.sh_type == SHT_REL) else {
            continue;
        };
        let target = sh.info;
        if !elf.section(target).is_some_and(|t| t.is_exec()) {
            continue;
        }
        // The programs of the target section: a contiguous run (programs are sorted).
        let first = programs.partition_point(|p| p.section_index < target);
        let rest = programs.get_mut(first..).unwrap_or_default();
        let count = rest.partition_point(|p| p.section_index == target);
        let Some(section_programs) = rest.get_mut(..count).filter(|s| !s.is_empty()) else {
            continue; // an executable section too small to be a program
        };
        let Some(symbols) = parts.symbols else {
            return Err(Error::BadSection {
                section: elf.section_ref(index),
                what: "relocations without a symbol table",
            });
        };
        let rels = elf.rel_table_entries_unchecked(index, &symbols)?;
        let base = table.len() as u32;
        let mut cur = None;
        for (j, rel) in rels.iter() {
            let bad = |what| Error::BadReloc {
                section: elf.section_ref(target),
                index: j,
                insn: rel.offset / 8,
                what,
            };
            let Some(sym) = symbols.get(rel.sym) else {
                return Err(bad("symbol index outside the symbol table"));
            };
            // Code holds two kinds: `ld_imm64` (R_BPF_64_64) and calls (R_BPF_64_32).
            if rel.r_type != R_BPF_64_64 && rel.r_type != R_BPF_64_32 {
                return Err(bad(
                    "relocation type is neither R_BPF_64_64 (1) nor R_BPF_64_32 (10)",
                ));
            }
            // The program of the entry before, else the one holding the offset (the first
            // of the section when it holds the table's first entry).
            let same = cur.filter(|&c| {
                section_programs
                    .get(c)
                    .is_some_and(|p| holds(p, rel.offset))
            });
            let c = match same {
                Some(c) => c,
                None => {
                    let first = j == 0
                        && section_programs
                            .first()
                            .is_some_and(|p| holds(p, rel.offset));
                    let c = if first {
                        0
                    } else {
                        program_at(section_programs, rel.offset)
                            .ok_or_else(|| bad("offset is outside every program of the section"))?
                    };
                    if let Some(p) = section_programs.get_mut(c) {
                        match p.rel_section {
                            Some(r) if r != index => {
                                return Err(Error::BadSection {
                                    section: elf.section_ref(index),
                                    what: "second REL section for the same program",
                                })
                            }
                            Some(_) => {}
                            None => {
                                p.rel_section = Some(index);
                                p.rel_first = j;
                                p.rel_base = base;
                            }
                        }
                    }
                    cur = Some(c);
                    c
                }
            };
            let mut kind = EntryKind::NoCode;
            if let Some(p) = section_programs.get_mut(c) {
                let (reloc, action) = parts.classify(maps, p, rel.offset, &sym).map_err(bad)?;
                p.reloc_count += 1;
                p.rel_end = j + 1;
                kind = match (reloc, action) {
                    (_, Action::MapFd(map)) => EntryKind::MapFd { map },
                    (_, Action::MapValue(map)) => EntryKind::MapValue {
                        map,
                        value: sym.value as u32,
                    },
                    (_, Action::Extern) => EntryKind::Extern { sym: rel.sym },
                    (_, Action::Refuse) => EntryKind::Refuse,
                    (RelocKind::Code { .. }, Action::Nothing) => EntryKind::Code { sym: rel.sym },
                    (_, Action::Nothing) => EntryKind::NoCode,
                };
                if let EntryKind::MapFd { .. } | EntryKind::MapValue { .. } = kind {
                    p.map_reloc_count += 1;
                }
            }
            // On an instruction (checked): its index in the section.
            let at = (rel.offset / 8) as u32;
            fits = fits && table.push(Entry { at, kind }).is_ok();
        }
    }
    if fits {
        Ok(())
    } else {
        Err(full(table))
    }
}

fn full(table: &VecView<Entry>) -> Error {
    Error::Capacity {
        what: "relocations and code references (ObjectStorage L)",
        limit: u32::try_from(table.capacity()).unwrap_or(u32::MAX),
    }
}

/// The last program of `programs` (those of one section) starting at or before byte
/// `offset`, if it holds it.
fn program_at(programs: &[Program<'_>], offset: u64) -> Option<usize> {
    let after = programs.partition_point(|p| u64::from(p.offset) <= offset);
    after
        .checked_sub(1)
        .filter(|&c| programs.get(c).is_some_and(|p| holds(p, offset)))
}

/// Whether byte `offset` of its section lies in program `p`.
fn holds(p: &Program<'_>, offset: u64) -> bool {
    let s = u64::from(p.offset);
    offset >= s && offset < s + p.code.len() as u64
}

/// The relocation entries of function `p`: those of its REL table's range (entries of
/// other functions of its section may lie in between).
pub(super) fn relocations<'t>(table: &'t [Entry], p: &Program<'_>) -> &'t [Entry] {
    if p.rel_section.is_none() {
        return &[];
    }
    let (lo, hi) = (p.rel_base + p.rel_first, p.rel_base + p.rel_end);
    table.get(lo as usize..hi as usize).unwrap_or_default()
}

/// Writes every function's code references (see the module docs) after the relocation
/// entries, recording where they lie (`ref_first`, `ref_len`).
///
/// # Errors
/// [`Error::Capacity`] when the table is full.
pub(super) fn build(
    parts: &Parts<'_>,
    programs: &mut [Program<'_>],
    table: &mut VecView<Entry>,
) -> Result<()> {
    for i in 0..programs.len() {
        let Some(p) = programs.get(i) else { break };
        let first = table.len();
        // Without relocations that may name code, only a bpf-to-bpf call or a function's
        // address refers to code: a function holding neither has nothing to scan.
        let (mut calls, mut scan) = (false, true);
        if p.reloc_count == p.map_reloc_count {
            let (c, addresses) = pseudo_slots(p.code);
            (calls, scan) = (c, c || addresses);
        }
        let mut j = if scan { 0 } else { p.insn_count() };
        while let Some((next, entry)) = next_ref(parts, programs, p, table, j) {
            j = next;
            table.push(entry).map_err(|_| full(table))?;
            if let EntryKind::Bad { .. } = entry.kind {
                break;
            }
        }
        let refs = table.len() - first;
        if let Some(p) = programs.get_mut(i) {
            p.ref_first = first as u32;
            p.ref_len = refs as u32;
            p.calls = calls;
        }
    }
    Ok(())
}

/// Whether any slot of `code` (second slots of `ld_imm64` included) is a call with
/// `src_reg = BPF_PSEUDO_CALL`, and whether any is an `ld_imm64` with
/// `src_reg = BPF_PSEUDO_FUNC`.
fn pseudo_slots(code: &[u8]) -> (bool, bool) {
    // A slot's opcode and source register, read as one native `u16` of its first two
    // bytes (the source register is the high nibble of the second byte on a
    // little-endian target, the low one on a big-endian one).
    const fn key(op: u8, src: u8) -> u16 {
        let regs = if cfg!(target_endian = "little") {
            src << 4
        } else {
            src
        };
        u16::from_ne_bytes([op, regs])
    }
    const MASK: u16 = key(0xff, 0x0f);
    const CALL: u16 = key(opcode::JMP | opcode::CALL, PSEUDO_CALL);
    const FUNC: u16 = key(opcode::LD_IMM64, PSEUDO_FUNC);
    let (mut calls, mut addresses) = (false, false);
    for c in code.chunks_exact(INSN_SIZE) {
        if let [op, regs, ..] = *c {
            let k = u16::from_ne_bytes([op, regs]) & MASK;
            calls |= k == CALL;
            addresses |= k == FUNC;
        }
    }
    (calls, addresses)
}

/// The next code reference of function `p` from instruction `j` on (second slots of
/// `ld_imm64` skipped): the instruction after it, and its entry.
fn next_ref(
    parts: &Parts<'_>,
    programs: &[Program<'_>],
    p: &Program<'_>,
    table: &VecView<Entry>,
    mut j: usize,
) -> Option<(usize, Entry)> {
    let relocs = relocations(table, p);
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
    let in_section = (p.offset / 8) as usize + at;
    let rel = relocs
        .iter()
        .find(|e| e.at as usize == in_section)
        .filter(|_| others);
    let rel = match rel.map(|e| e.kind) {
        None => None,
        Some(EntryKind::Code { sym }) => parts
            .symbols
            .as_ref()
            .and_then(|s| s.get(sym))
            .map(|s| (u32::from(s.shndx), s.value, true)),
        Some(EntryKind::Extern { sym }) => {
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
