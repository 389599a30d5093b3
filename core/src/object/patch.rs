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

use super::{MapTarget, Parts, Program, RelocKind};
use crate::insn::{opcode, Insn, INSN_SIZE};
use heapless::vec::VecView;

/// Default capacity of the patch table: an object's relocations of code plus its code
/// references (the peers' `large` object has 1,000; Debian's libbpf-tools at most 289).
pub const DEFAULT_PATCHES: usize = 2048;

/// Default capacity of the decoded-instruction cache (8 bytes each): the functions other
/// functions call (`.text` subprograms) are decoded once at open, and relocating copies
/// them into every program that calls them (the peers' `globals` object has 97 such
/// instructions; a function that does not fit is decoded each time).
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
}

/// What the patch of a relocation against a symbol of section `shndx` whose value is
/// `value` does, given its [`MapTarget`] (not `Bad`: refused at open); `last` remembers
/// the kind of the last section looked at (relocations of code repeat theirs). `None`
/// for code whose symbol value does not fit 32 bits (the call lists are then left to
/// the linker's scan).
#[inline]
pub(crate) fn kind_of(
    parts: &Parts<'_>,
    target: MapTarget,
    shndx: u32,
    sym: u32,
    value: u64,
    last: &mut (u32, RelocKind),
) -> Option<PatchKind> {
    Some(match target {
        MapTarget::Map(map) => PatchKind::MapFd { map },
        MapTarget::Value(map) => PatchKind::MapValue {
            map,
            value: value as u32,
        },
        MapTarget::None if shndx == 0 => PatchKind::Extern { sym },
        MapTarget::None | MapTarget::Bad(_) => {
            if last.0 != shndx {
                *last = (shndx, parts.non_map_kind(shndx));
            }
            match last.1 {
                RelocKind::Code { section } => PatchKind::Code {
                    section,
                    value: u32::try_from(value).ok()?,
                },
                RelocKind::Other { .. } => PatchKind::Other,
                _ => PatchKind::Nothing,
            }
        }
    })
}

/// Pushes `patch`; once the table is full, `ready` goes false and nothing more is kept.
#[inline]
pub(crate) fn push(patches: &mut VecView<Patch>, ready: &mut bool, patch: Patch) {
    if *ready && patches.push(patch).is_err() {
        *ready = false;
    }
}

/// Whether every function with relocations has its REL entries as one run of its table
/// (`rel_first..rel_end` holds only its own), so its patches are one run of the table.
pub(crate) fn contiguous(programs: &[Program<'_>]) -> bool {
    programs
        .iter()
        .all(|p| p.reloc_count == 0 || p.rel_end - p.rel_first == p.reloc_count)
}

/// One pass over every function's instructions at open: appends its code references to
/// the patch table as the linker's scan would find them (its call list: `call_first`,
/// `call_len`) and notes whether it holds a bpf-to-bpf call (`Program::pseudo_call`);
/// then decodes every function that is called into `insns` (the decoded-instruction
/// cache, while it has room): a subprogram is copied into every program that calls it.
/// Returns whether the call lists are complete: `false` when the table fills up or a
/// reference resolves to no function (the linker then scans, and reports the error where
/// it always did).
#[inline(never)]
pub(crate) fn scan_functions(
    programs: &mut [Program<'_>],
    patches: &mut VecView<Patch>,
    insns: &mut VecView<Insn>,
) -> bool {
    // The programs' `(section, offset)` as one word each, in their order: the lookup of a
    // call's target searches these.
    let mut keys = [0u64; 256];
    let Some(keys) = keys.get_mut(..programs.len()) else {
        return false; // more than the linker's start table holds: it scans
    };
    for (k, p) in keys.iter_mut().zip(programs.iter()) {
        *k = key(p.section_index, p.offset);
    }
    let keys: &[u64] = keys;
    for i in 0..programs.len() {
        let Some(&p) = programs.get(i) else {
            return false;
        };
        let first = patches.len();
        let others = p.reloc_count != p.map_reloc_count;
        // A cursor over the function's own patches (one run, in offset order).
        let mut k = p.patch_first as usize;
        let end = k + p.reloc_count as usize;
        let mut pseudo_call = false;
        // The linker's scan: every `ld_imm64` (its second slot skipped) and every `call`.
        let mut second = false;
        for (at, c) in p.code.chunks_exact(INSN_SIZE).enumerate() {
            let op = c.first().copied().unwrap_or(0);
            if op != opcode::LD_IMM64 && op != opcode::JMP | opcode::CALL {
                second = false;
                continue;
            }
            let Some(&c) = c.first_chunk::<INSN_SIZE>() else {
                continue;
            };
            let insn = Insn::from_bytes(c, cfg!(target_endian = "little"));
            let pseudo = op == opcode::JMP | opcode::CALL && insn.src() == super::PSEUDO_CALL;
            // What `relocate` looks for in every slot, second ones included.
            pseudo_call |= pseudo;
            if core::mem::replace(&mut second, op == opcode::LD_IMM64) {
                continue;
            }
            let ld = op == opcode::LD_IMM64;
            // What cannot refer to code, told at once (as `code_target` tells it).
            if !pseudo && !(ld && (others || insn.src() == super::PSEUDO_FUNC)) {
                continue;
            }
            let mut rel = None;
            if others {
                while patches
                    .get(k)
                    .is_some_and(|x| k < end && (x.at as usize) < at)
                {
                    k += 1;
                }
                if let Some(x) = patches.get(k).filter(|x| k < end && x.at as usize == at) {
                    rel = Some(match x.kind {
                        PatchKind::Code { section, value } => (section, u64::from(value), true),
                        _ => (0, 0, false),
                    });
                }
            }
            // A map or data load, or a plain `ld_imm64`: no code.
            if ld && rel.is_some_and(|r| !r.2)
                || ld && rel.is_none() && insn.src() != super::PSEUDO_FUNC
            {
                continue;
            }
            let Some(t) = target(programs, keys, &p, at, insn, rel) else {
                return false;
            };
            let call = Patch {
                at: at as u32,
                kind: PatchKind::Call {
                    program: t.0,
                    offset: t.1,
                    ld,
                },
            };
            if patches.push(call).is_err() {
                return false;
            }
        }
        if let Some(p) = programs.get_mut(i) {
            p.call_first = first as u32;
            p.call_len = (patches.len() - first) as u32;
            p.pseudo_call = pseudo_call;
        }
    }
    // The functions called, decoded once (marked first: a function may be called from
    // anywhere, itself included).
    for c in patches.iter() {
        if let PatchKind::Call { program, .. } = c.kind {
            if let Some(t) = programs.get_mut(program as usize) {
                t.cached = 0;
            }
        }
    }
    for p in programs.iter_mut().filter(|p| p.cached == 0) {
        let start = insns.len();
        p.cached = u32::MAX;
        if insns.resize_default(start + p.insn_count()).is_ok() {
            if let Some(slots) = insns.get_mut(start..) {
                crate::insn::decode_native(slots, p.code);
                p.cached = start as u32;
            }
        }
    }
    true
}

/// `(section, offset)` as one word, ordered as the pair.
#[inline(always)]
fn key(section: u32, offset: u32) -> u64 {
    (u64::from(section) << 32) | u64::from(offset)
}

/// Where the code reference at instruction `at` of `p` (`insn`, a bpf-to-bpf call or an
/// `ld_imm64` of code, `rel` the symbol of its relocation if any) lands: `(program,
/// instruction)`, or `None` when `code_target` would refuse it (the linker reports it).
#[inline]
fn target(
    programs: &[Program<'_>],
    keys: &[u64],
    p: &Program<'_>,
    at: usize,
    insn: Insn,
    rel: Option<(u32, u64, bool)>,
) -> Option<(u32, u32)> {
    let imm = i64::from(insn.imm());
    let is_call = insn.code() != opcode::LD_IMM64;
    let (section, index) = match rel {
        Some((_, _, false)) => return None, // a call against a symbol that is not code
        Some((section, value, true)) => {
            let index = if is_call {
                (value / 8) as i64 + imm + 1
            } else {
                (value as i64 + imm) / 8
            };
            (section, index)
        }
        None => (
            p.section_index,
            i64::from(p.offset / 8) + at as i64 + imm + 1,
        ),
    };
    let byte = u32::try_from(u64::try_from(index).ok()?.checked_mul(INSN_SIZE as u64)?).ok()?;
    let t = keys
        .partition_point(|&k| k <= key(section, byte))
        .checked_sub(1)?;
    let q = programs.get(t)?;
    if q.section_index != section || u64::from(byte) >= u64::from(q.offset) + q.code.len() as u64 {
        return None;
    }
    Some((t as u32, (byte - q.offset) / INSN_SIZE as u32))
}
