//! bpf-to-bpf calls: the functions a program calls, appended after it (libbpf's
//! `bpf_object__reloc_code`).
//!
//! A program's calls (`call` with `src_reg = BPF_PSEUDO_CALL`, `R_BPF_64_32`) and function
//! addresses (`ld_imm64` against a function, `BPF_PSEUDO_FUNC`) name functions of the
//! object, usually `.text` subprograms. The kernel wants one instruction array: the
//! program first, then each function it reaches, once, with every call immediate relative
//! (`imm = target - (call + 1)`). The order is libbpf's: instructions in order, and at the
//! first call to a function not placed yet, that function is appended and walked before
//! the caller goes on (depth first), so our instruction counts and layouts are libbpf's.
//!
//! Scratch is fixed-capacity and on the stack: the placed functions ([`MAX_LINKED`]
//! entries of 8 bytes) and the walk's stack ([`MAX_CALL_DEPTH`] frames); no heap.

use super::patch::{Patch, PatchKind};
use super::relocate::{patch_ld, PSEUDO_CALL, PSEUDO_FUNC, PSEUDO_MAP_FD, PSEUDO_MAP_VALUE};
use super::{externs, MapTarget, Object, Parts, Program, RelocKind};
use crate::error::{Error, Result};
use crate::insn::{opcode, Insn, INSN_SIZE};

/// Most functions (the program included) one linked program may hold.
pub const MAX_LINKED: usize = 256;
/// Deepest chain of first calls the layout walk follows (the kernel allows 8 frames).
pub const MAX_CALL_DEPTH: usize = 64;

/// One function of a linked program: which program of the object, and where its first
/// instruction lies in the linked instructions (prologue not counted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LinkedPart {
    /// Index in [`Object::programs`].
    pub program: usize,
    /// Index of its first instruction in the linked program.
    pub start: usize,
}

type Placed = heapless::Vec<LinkedPart, MAX_LINKED>;

/// Where a walk writes a linked program: the instructions after the prologue.
struct Sink<'o> {
    body: &'o mut [Insn],
    map_fds: &'o [i32],
    /// Every function placed so far fits in `body`.
    fits: bool,
}

/// What a walk found: the linked length, whether it fit the sink, the first error of a
/// function's relocations.
struct Walk {
    len: usize,
    fits: bool,
    late: Option<Error>,
}

#[cold]
fn no_fd(map: u32) -> Error {
    Error::Usage {
        what: "no fd given for map",
        value: map.into(),
    }
}

/// The function holding byte `byte` of section `section`: the last program (they are in
/// `(section, offset)` order) starting at or before it, if it extends over it. `hint`, the
/// answer of the previous search, is tried first (calls repeat their targets).
#[inline]
pub(super) fn find_function(
    programs: &[Program<'_>],
    section: u32,
    byte: u64,
    hint: &mut usize,
) -> Option<usize> {
    let contains = |q: &Program<'_>| {
        q.section_index == section
            && u64::from(q.offset) <= byte
            && byte < u64::from(q.offset) + q.code.len() as u64
    };
    // The hint holds when it contains the byte and the next program starts after it.
    let after = |t: usize| {
        programs
            .get(t + 1)
            .is_none_or(|n| (n.section_index, u64::from(n.offset)) > (section, byte))
    };
    if programs.get(*hint).is_some_and(contains) && after(*hint) {
        return Some(*hint);
    }
    // Both fit one word when the offset does.
    let lo = match u32::try_from(byte) {
        Ok(b) => {
            let key = |s: u32, o: u32| (u64::from(s) << 32) | u64::from(o);
            let want = key(section, b);
            programs.partition_point(|q| key(q.section_index, q.offset) <= want)
        }
        Err(_) => {
            programs.partition_point(|q| (q.section_index, u64::from(q.offset)) <= (section, byte))
        }
    };
    let t = lo
        .checked_sub(1)
        .filter(|&t| programs.get(t).is_some_and(contains))?;
    *hint = t;
    Some(t)
}

/// A code reference found at an instruction: the program it lands in and the instruction
/// index inside that program.
#[derive(Clone, Copy)]
pub(super) struct Target {
    pub(super) program: usize,
    pub(super) offset: usize,
}

/// The function instruction `at` of `p` (`insn`) refers to, if it is a call of a BPF
/// function or loads a function's address; `reloc` gives `(st_shndx, st_value, whether
/// that section is code)` of the symbol of `p`'s relocation at that instruction, if any
/// (asked only when `p` has relocations other than map loads).
#[inline]
pub(super) fn code_target(
    parts: &Parts<'_>,
    programs: &[Program<'_>],
    p: &Program<'_>,
    at: usize,
    insn: Insn,
    reloc: impl FnOnce() -> Option<(u32, u64, bool)>,
    hint: &mut usize,
) -> Result<Option<Target>> {
    let is_call = insn.code() == opcode::JMP | opcode::CALL && insn.src() == PSEUDO_CALL;
    let is_ld = insn.code() == opcode::LD_IMM64;
    if !is_call && !is_ld {
        return Ok(None);
    }
    let bad = |what| Error::BadReloc {
        section: parts.elf.section_ref(p.section_index),
        index: 0,
        insn: (u64::from(p.offset) / 8) + at as u64,
        what,
    };
    let own = i64::from(p.offset / 8) + at as i64;
    let imm = i64::from(insn.imm());
    // Only relocations that are not map loads can name code: without any, a map or
    // data load is no code reference and a call is relative inside the section.
    let others = p.reloc_count != p.map_reloc_count;
    if is_ld && !others && insn.src() != PSEUDO_FUNC {
        return Ok(None);
    }
    let rel = if others { reloc() } else { None };
    let (section, index) = match rel {
        Some((shndx, value, exec)) => {
            if !exec {
                if is_call {
                    return Err(bad("bpf-to-bpf call against a symbol that is not code"));
                }
                return Ok(None); // a map or global data load
            }
            let index = if is_call {
                (value / 8) as i64 + imm + 1
            } else {
                (value as i64 + imm) / 8
            };
            (shndx, index)
        }
        // Inside the program's own section: relative, no relocation.
        None if is_call || insn.src() == PSEUDO_FUNC => (p.section_index, own + imm + 1),
        None => return Ok(None),
    };
    let index = u64::try_from(index).map_err(|_| bad("call target before its section"))?;
    let byte = index.wrapping_mul(INSN_SIZE as u64);
    let t = find_function(programs, section, byte, hint)
        .ok_or_else(|| bad("call target is no function of the object"))?;
    let q = programs.get(t).map_or(0, |q| u64::from(q.offset));
    Ok(Some(Target {
        program: t,
        offset: ((byte - q) / INSN_SIZE as u64) as usize,
    }))
}

impl<'a, 's> Object<'a, 's> {
    /// Number of instructions of program `prog` linked with every function it calls
    /// (prologue not counted): what [`Object::relocate`] writes after the prologue.
    ///
    /// # Errors
    /// As [`Object::link_layout`].
    pub fn linked_len(&self, prog: usize) -> Result<usize> {
        let mut placed = Placed::new();
        self.walk(prog, &mut placed, None).map(|w| w.len)
    }

    /// Where [`Object::relocate`] puts program `prog` and each function it calls: writes
    /// one [`LinkedPart`] per function into `parts` (the program first, at 0) and returns
    /// how many. The runtime uses it to place each function's `func_info`, `line_info`
    /// and CO-RE relocations.
    ///
    /// # Errors
    /// [`Error::Usage`] for no such program; [`Error::Capacity`] when `parts` is too
    /// short or the program reaches more than [`MAX_LINKED`] functions;
    /// [`Error::BadReloc`] for a call whose target is no function of the object.
    pub fn link_layout(&self, prog: usize, parts: &mut [LinkedPart]) -> Result<usize> {
        let mut placed = Placed::new();
        self.walk(prog, &mut placed, None)?;
        let limit = parts.len() as u32;
        let out = parts.get_mut(..placed.len()).ok_or(Error::Capacity {
            what: "linked functions in the output buffer",
            limit,
        })?;
        out.copy_from_slice(&placed);
        Ok(placed.len())
    }

    /// The depth-first walk: fills `placed`, returns the linked length.
    #[cfg(test)]
    fn layout(&self, prog: usize, placed: &mut Placed) -> Result<usize> {
        let p = self.programs.get(prog).ok_or(Error::Usage {
            what: "no such program",
            value: prog as u64,
        })?;
        placed.clear();
        let full = |what| Error::Capacity {
            what,
            limit: MAX_LINKED as u32,
        };
        placed
            .push(LinkedPart {
                program: prog,
                start: 0,
            })
            .map_err(|_| full("functions linked into one program"))?;
        let mut total = p.insn_count();
        // (index in `placed`, next instruction to look at)
        let mut stack: heapless::Vec<(usize, usize), MAX_CALL_DEPTH> = heapless::Vec::new();
        let _ = stack.push((0, 0));
        while let Some(&(part, mut j)) = stack.last() {
            let Some(cur) = placed.get(part).map(|x| x.program) else {
                break;
            };
            let Some(cp) = self.programs.get(cur) else {
                break;
            };
            let n = cp.insn_count();
            let mut descend = None;
            while j < n {
                let at = j;
                let insn = cp.insn(at).unwrap_or_default();
                j += if insn.code() == opcode::LD_IMM64 {
                    2
                } else {
                    1
                };
                let Some(t) = self.code_target(cp, at, insn)? else {
                    continue;
                };
                if placed.iter().any(|x| x.program == t.program) {
                    continue;
                }
                let tp = self.programs.get(t.program).map_or(0, Program::insn_count);
                placed
                    .push(LinkedPart {
                        program: t.program,
                        start: total,
                    })
                    .map_err(|_| full("functions linked into one program"))?;
                total += tp;
                descend = Some(placed.len() - 1);
                break;
            }
            if let Some(top) = stack.last_mut() {
                top.1 = j;
            }
            match descend {
                Some(d) => stack.push((d, 0)).map_err(|_| Error::Capacity {
                    what: "nested first calls (call depth)",
                    limit: MAX_CALL_DEPTH as u32,
                })?,
                None => {
                    stack.pop();
                }
            }
        }
        Ok(total)
    }

    /// The next code reference of function `cp` from position `j` on: `(next j, instruction,
    /// target, whether an ld_imm64)`. Positions are instructions, or entries of its call
    /// list when the patch table has them.
    #[inline]
    fn next_ref(
        &self,
        cp: &Program<'_>,
        mut j: usize,
    ) -> Result<Option<(usize, usize, Target, bool)>> {
        if self.parts.calls_ready {
            let first = cp.call_first as usize;
            let calls = self
                .patches
                .get(first..first + cp.call_len as usize)
                .unwrap_or_default();
            return Ok(calls.get(j).and_then(|c| match c.kind {
                PatchKind::Call {
                    program,
                    offset,
                    ld,
                } => Some((
                    j + 1,
                    c.at as usize,
                    Target {
                        program: program as usize,
                        offset: offset as usize,
                    },
                    ld,
                )),
                _ => None,
            }));
        }
        let code = cp.code;
        while let Some(&c) = code.get(j * INSN_SIZE) {
            let at = j;
            if c != opcode::LD_IMM64 && c != opcode::JMP | opcode::CALL {
                j += 1;
                continue;
            }
            j += if c == opcode::LD_IMM64 { 2 } else { 1 };
            let insn = cp.insn(at).unwrap_or_default();
            if let Some(t) = self.code_target(cp, at, insn)? {
                return Ok(Some((j, at, t, c == opcode::LD_IMM64)));
            }
        }
        Ok(None)
    }

    /// The function instruction `at` of `p` (`insn`) refers to, if it is a call of a BPF
    /// function or loads a function's address.
    fn code_target(&self, p: &Program<'_>, at: usize, insn: Insn) -> Result<Option<Target>> {
        let parts = &self.parts;
        let reloc = || {
            let (shndx, value) = self.reloc_at(p, at)?;
            let exec = parts.elf.section(shndx).is_some_and(|sh| sh.is_exec());
            Some((shndx, value, exec))
        };
        code_target(parts, self.programs, p, at, insn, reloc, &mut 0)
    }

    /// `(st_shndx, st_value)` of the symbol of `p`'s relocation at instruction `at`.
    fn reloc_at(&self, p: &Program<'_>, at: usize) -> Option<(u32, u64)> {
        if self.parts.elf.header().class == crate::elf::Class::Elf64 {
            self.reloc_at_raw::<true>(p, at)
        } else {
            self.reloc_at_raw::<false>(p, at)
        }
    }

    /// [`Object::reloc_at`] reading the tables natively (they were validated at open).
    fn reloc_at_raw<const WIDE: bool>(&self, p: &Program<'_>, at: usize) -> Option<(u32, u64)> {
        let parts = &self.parts;
        let rels = parts.rel_table_of(p.rel_section?).data();
        let syms = parts.symbols?.data();
        let offset = u64::from(p.offset) + (at * INSN_SIZE) as u64;
        let sym = (p.rel_first..p.rel_end).find_map(|i| {
            let (o, sym) = super::raw_rel::<WIDE>(rels, i)?;
            (o == offset).then_some(sym)
        })?;
        let (shndx, value) = super::raw_sym::<WIDE>(syms, sym)?;
        Some((u32::from(shndx), value))
    }

    /// The two-pass linker this module started with (layout, then each function copied
    /// and patched): the reference the single-pass [`Object::link_into`] must agree with.
    #[cfg(test)]
    pub(super) fn link_into_reference(
        &self,
        prog: usize,
        prologue: &[Insn],
        map_fds: &[i32],
        out: &mut [Insn],
    ) -> Result<usize> {
        let mut placed = Placed::new();
        let len = self.layout(prog, &mut placed)?;
        let total = prologue.len() + len;
        let limit = out.len() as u32;
        let dst = out.get_mut(..total).ok_or(Error::Capacity {
            what: "instructions in the output buffer",
            limit,
        })?;
        let (head, body) = dst.split_at_mut(prologue.len());
        head.copy_from_slice(prologue);
        for part in &placed {
            let Some(p) = self.programs.get(part.program) else {
                continue;
            };
            let Some(slots) = body.get_mut(part.start..part.start + p.insn_count()) else {
                continue;
            };
            for (slot, insn) in slots.iter_mut().zip(p.insns()) {
                *slot = insn;
            }
            for r in self.relocations(part.program) {
                match r.kind {
                    RelocKind::Map { .. } | RelocKind::Data { .. } => {
                        self.link_map(r, map_fds, Some(slots))?;
                    }
                    RelocKind::Code { .. } => {} // below, with the calls inside a section
                    RelocKind::Extern => self.link_extern(p, r.sym, r.insn, map_fds, slots)?,
                    RelocKind::Other { .. } => return Err(self.unsupported(
                        "relocation against a section that is neither code, maps nor global data",
                        p,
                        r.insn.into(),
                    )),
                }
            }
            let mut j = 0;
            while j < slots.len() {
                let at = j;
                let insn = slots.get(at).copied().unwrap_or_default();
                j += if insn.code() == opcode::LD_IMM64 {
                    2
                } else {
                    1
                };
                let Some(t) = self.code_target(p, at, insn)? else {
                    continue;
                };
                let start = placed
                    .iter()
                    .find(|x| x.program == t.program)
                    .map_or(0, |x| x.start);
                let rel = (start + t.offset) as i64 - (part.start + at + 1) as i64;
                if let Some(slot) = slots.get_mut(at) {
                    slot.set_imm(rel as i32);
                    if insn.code() == opcode::LD_IMM64 {
                        slot.set_src(PSEUDO_FUNC);
                    }
                }
            }
        }
        Ok(total)
    }

    /// The linker proper: [`Object::relocate`] for programs with calls or externs. One
    /// depth-first walk places each function, copies and patches it, and links each call
    /// as it meets it; errors come in the order of a layout first, then the output's
    /// capacity, then the relocations function by function.
    pub(super) fn link_into(
        &self,
        prog: usize,
        prologue: &[Insn],
        map_fds: &[i32],
        out: &mut [Insn],
    ) -> Result<usize> {
        let limit = out.len() as u32;
        let (head, body) = if out.len() >= prologue.len() {
            let (h, b) = out.split_at_mut(prologue.len());
            (Some(h), b)
        } else {
            (None, &mut [][..])
        };
        let sink = Sink {
            body,
            map_fds,
            fits: head.is_some(),
        };
        let w = if self.parts.calls_ready {
            self.walk_calls(prog, sink)?
        } else {
            let mut placed = Placed::new();
            self.walk(prog, &mut placed, Some(sink))?
        };
        let total = prologue.len() + w.len;
        match head {
            Some(head) if w.fits => head.copy_from_slice(prologue),
            _ => {
                return Err(Error::Capacity {
                    what: "instructions in the output buffer",
                    limit,
                })
            }
        }
        match w.late {
            Some(e) => Err(e),
            None => Ok(total),
        }
    }

    /// The single walk behind [`Object::link_into`], [`Object::linked_len`] and
    /// [`Object::link_layout`]: places functions in libbpf's order into `placed` and, given
    /// a sink, writes and links them.
    fn walk(&self, prog: usize, placed: &mut Placed, mut sink: Option<Sink<'_>>) -> Result<Walk> {
        let p = self.programs.get(prog).ok_or(Error::Usage {
            what: "no such program",
            value: prog as u64,
        })?;
        placed.clear();
        let full = |what| Error::Capacity {
            what,
            limit: MAX_LINKED as u32,
        };
        placed
            .push(LinkedPart {
                program: prog,
                start: 0,
            })
            .map_err(|_| full("functions linked into one program"))?;
        let mut late = None;
        if let Some(s) = sink.as_mut() {
            self.emit(p, 0, s, &mut late);
        }
        let mut total = p.insn_count();
        // (index in `placed`, next instruction to look at)
        let mut stack: heapless::Vec<(usize, usize), MAX_CALL_DEPTH> = heapless::Vec::new();
        let _ = stack.push((0, 0));
        while let Some(&(part, mut j)) = stack.last() {
            let Some(&LinkedPart {
                program: cur,
                start: cur_start,
            }) = placed.get(part)
            else {
                break;
            };
            let Some(cp) = self.programs.get(cur) else {
                break;
            };
            let mut descend = None;
            while let Some((next, at, t, ld)) = self.next_ref(cp, j)? {
                j = next;
                let start = match placed.iter().find(|x| x.program == t.program) {
                    Some(x) => x.start,
                    None => {
                        let Some(tp) = self.programs.get(t.program) else {
                            continue;
                        };
                        placed
                            .push(LinkedPart {
                                program: t.program,
                                start: total,
                            })
                            .map_err(|_| full("functions linked into one program"))?;
                        if let Some(s) = sink.as_mut() {
                            self.emit(tp, total, s, &mut late);
                        }
                        descend = Some(placed.len() - 1);
                        let start = total;
                        total += tp.insn_count();
                        start
                    }
                };
                if let Some(s) = sink.as_mut().filter(|s| s.fits) {
                    let rel = (start + t.offset) as i64 - (cur_start + at + 1) as i64;
                    if let Some(slot) = s.body.get_mut(cur_start + at) {
                        slot.set_imm(rel as i32);
                        if ld {
                            slot.set_src(PSEUDO_FUNC);
                        }
                    }
                }
                if descend.is_some() {
                    break;
                }
            }
            if let Some(top) = stack.last_mut() {
                top.1 = j;
            }
            match descend {
                Some(d) => stack.push((d, 0)).map_err(|_| Error::Capacity {
                    what: "nested first calls (call depth)",
                    limit: MAX_CALL_DEPTH as u32,
                })?,
                None => {
                    stack.pop();
                }
            }
        }
        Ok(Walk {
            len: total,
            fits: sink.is_none_or(|s| s.fits),
            late,
        })
    }

    /// [`Object::walk`] with a sink, following the call lists of the patch table (when it
    /// has them): the same layout, writes and errors, without looking at instructions.
    fn walk_calls(&self, prog: usize, mut s: Sink<'_>) -> Result<Walk> {
        let programs = self.programs;
        let p = programs.get(prog).ok_or(Error::Usage {
            what: "no such program",
            value: prog as u64,
        })?;
        // Where each program placed starts (`u32::MAX`: not placed), by program index.
        let mut start_of = [u32::MAX; MAX_LINKED];
        let Some(start_of) = start_of.get_mut(..programs.len()) else {
            let mut placed = Placed::new();
            return self.walk(prog, &mut placed, Some(s));
        };
        let mut placed = 1usize;
        if let Some(x) = start_of.get_mut(prog) {
            *x = 0;
        }
        let mut late = None;
        self.emit(p, 0, &mut s, &mut late);
        let mut total = p.insn_count();
        // (start of the function, its next call in the table, the end of its calls)
        let mut stack: heapless::Vec<(usize, usize, usize), MAX_CALL_DEPTH> = heapless::Vec::new();
        let calls = |p: &Program<'_>| {
            let first = p.call_first as usize;
            (first, first + p.call_len as usize)
        };
        let (first, end) = calls(p);
        let _ = stack.push((0, first, end));
        while let Some((cur_start, next, end)) = stack.last_mut() {
            let cur_start = *cur_start;
            let mut descend = None;
            while *next < *end {
                let Some(&c) = self.patches.get(*next) else {
                    break;
                };
                *next += 1;
                let PatchKind::Call {
                    program,
                    offset,
                    ld,
                } = c.kind
                else {
                    continue;
                };
                let Some(slot) = start_of.get_mut(program as usize) else {
                    continue;
                };
                let start = if *slot != u32::MAX {
                    *slot as usize
                } else {
                    let Some(tp) = programs.get(program as usize) else {
                        continue;
                    };
                    if placed == MAX_LINKED {
                        return Err(Error::Capacity {
                            what: "functions linked into one program",
                            limit: MAX_LINKED as u32,
                        });
                    }
                    placed += 1;
                    *slot = total as u32;
                    self.emit(tp, total, &mut s, &mut late);
                    let (first, end) = calls(tp);
                    descend = Some((total, first, end));
                    let start = total;
                    total += tp.insn_count();
                    start
                };
                if s.fits {
                    let at = cur_start + c.at as usize;
                    let rel = (start + offset as usize) as i64 - (at + 1) as i64;
                    if let Some(slot) = s.body.get_mut(at) {
                        slot.set_imm(rel as i32);
                        if ld {
                            slot.set_src(PSEUDO_FUNC);
                        }
                    }
                }
                if descend.is_some() {
                    break;
                }
            }
            match descend {
                Some(d) => stack.push(d).map_err(|_| Error::Capacity {
                    what: "nested first calls (call depth)",
                    limit: MAX_CALL_DEPTH as u32,
                })?,
                None => {
                    stack.pop();
                }
            }
        }
        Ok(Walk {
            len: total,
            fits: s.fits,
            late,
        })
    }

    /// Copies function `p` to `start` of the sink's body and patches its map, global
    /// data and `.kconfig` loads; keeps the first error in `late`. Once a function does
    /// not fit, nothing more is written.
    #[inline(never)]
    fn emit(&self, p: &Program<'_>, start: usize, s: &mut Sink<'_>, late: &mut Option<Error>) {
        if !s.fits {
            return;
        }
        let Some(slots) = s.body.get_mut(start..start + p.insn_count()) else {
            s.fits = false;
            return;
        };
        self.copy_insns(p, slots);
        if p.reloc_count == 0 {
            return;
        }
        let r = if self.parts.patches_ready {
            self.apply_patches(p, s.map_fds, slots)
        } else if self.parts.elf.header().class == crate::elf::Class::Elf64 {
            self.patch_relocs::<true>(p, s.map_fds, slots)
        } else {
            self.patch_relocs::<false>(p, s.map_fds, slots)
        };
        if let Err(e) = r {
            late.get_or_insert(e);
        }
    }

    /// [`Object::patch_relocs`] from the patch table: the same patches in the same order,
    /// the same first error.
    #[inline(always)]
    pub(super) fn apply_patches(
        &self,
        p: &Program<'_>,
        map_fds: &[i32],
        slots: &mut [Insn],
    ) -> Result<()> {
        let first = p.patch_first as usize;
        let patches = self
            .patches
            .get(first..first + p.reloc_count as usize)
            .unwrap_or_default();
        for patch in patches {
            let at = patch.at as usize;
            let (src, map, value) = match patch.kind {
                PatchKind::MapFd { map } => (PSEUDO_MAP_FD, map, None),
                PatchKind::MapValue { map, value } => (PSEUDO_MAP_VALUE, map, Some(value)),
                PatchKind::Code { .. } => continue, // linked by the walk
                // The rest out of line: the loads stay a few compares, not a table.
                _ => {
                    self.apply_other(p, patch, map_fds, slots)?;
                    continue;
                }
            };
            let Some(&fd) = map_fds.get(map as usize) else {
                return Err(no_fd(map));
            };
            // As `patch_ld`: the second slot's `imm` is the value plus the first's (only
            // the low 32 bits of either count).
            let mut orig = 0;
            if let Some(slot) = slots.get_mut(at) {
                orig = slot.imm();
                slot.set_src(src);
                slot.set_imm(fd);
            }
            if let Some(next) = slots.get_mut(at + 1) {
                next.set_imm(value.map_or(0, |v| (v as i32).wrapping_add(orig)));
            }
        }
        Ok(())
    }

    /// A patch of [`Object::apply_patches`] that is not a map or global data load: an
    /// extern linked, another section refused, anything else (code) left to the walk.
    #[inline(never)]
    fn apply_other(
        &self,
        p: &Program<'_>,
        patch: &Patch,
        map_fds: &[i32],
        slots: &mut [Insn],
    ) -> Result<()> {
        match patch.kind {
            PatchKind::Extern { sym } => self.link_extern(p, sym, patch.at, map_fds, slots),
            PatchKind::Other => Err(self.other_section(p, patch.at as usize)),
            PatchKind::MapFd { .. }
            | PatchKind::MapValue { .. }
            | PatchKind::Nothing
            | PatchKind::Code { .. }
            | PatchKind::Call { .. }
            | PatchKind::Fd { .. }
            | PatchKind::Part { .. }
            | PatchKind::Root => Ok(()),
        }
    }

    #[cold]
    fn other_section(&self, p: &Program<'_>, at: usize) -> Error {
        self.unsupported(
            "relocation against a section that is neither code, maps nor global data",
            p,
            at as u64,
        )
    }

    /// The relocations of `p` in table order (validated at open): map and global data
    /// loads patched, `.kconfig` externs linked, code left to the walk, anything else
    /// refused.
    fn patch_relocs<const WIDE: bool>(
        &self,
        p: &Program<'_>,
        map_fds: &[i32],
        slots: &mut [Insn],
    ) -> Result<()> {
        let parts = &self.parts;
        let (Some(rel), Some(symbols)) = (p.rel_section, parts.symbols) else {
            return Ok(());
        };
        let (rels, syms) = (parts.rel_table_of(rel).data(), symbols.data());
        let start = u64::from(p.offset);
        let end = start + p.code.len() as u64;
        let no_fd = |map: u32| Error::Usage {
            what: "no fd given for map",
            value: map.into(),
        };
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
            let shndx = u32::from(shndx);
            let at = ((offset - start) / 8) as usize;
            match parts.map_target(self.maps, shndx, value) {
                MapTarget::Map(m) => {
                    let fd = *map_fds.get(m as usize).ok_or_else(|| no_fd(m))?;
                    patch_ld(slots, at, PSEUDO_MAP_FD, fd, None);
                }
                MapTarget::Value(m) => {
                    let fd = *map_fds.get(m as usize).ok_or_else(|| no_fd(m))?;
                    patch_ld(slots, at, PSEUDO_MAP_VALUE, fd, Some(value));
                }
                MapTarget::Bad(_) => {} // refused at open
                MapTarget::None if shndx == 0 => {
                    self.link_extern(p, sym, at as u32, map_fds, slots)?
                }
                MapTarget::None => {
                    if let RelocKind::Other { .. } = parts.non_map_kind(shndx) {
                        return Err(self.unsupported(
                            "relocation against a section that is neither code, maps nor global data",
                            p,
                            at as u64,
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// An `ld_imm64` of an `extern` variable: a `.kconfig` value becomes the address of
    /// its slot in the `.kconfig` map; anything else (ksyms, kfuncs) is refused.
    fn link_extern(
        &self,
        p: &Program<'_>,
        sym: u32,
        insn: u32,
        map_fds: &[i32],
        slots: &mut [Insn],
    ) -> Result<()> {
        let name = self
            .parts
            .symbols
            .and_then(|s| s.get(sym).and_then(|sym| s.name(&sym)));
        let found = match (self.btf.as_ref(), name, self.parts.kconfig_map) {
            (Some(btf), Some(name), Some(map)) => {
                externs::kconfig_extern(btf, name)?.map(|e| (map, e.offset))
            }
            _ => None,
        };
        let Some((map, offset)) = found else {
            let is_call = slots
                .get(insn as usize)
                .is_some_and(|i| i.code() == opcode::JMP | opcode::CALL);
            return Err(self.unsupported(
                if is_call {
                    "call of an extern function (kfunc)"
                } else {
                    "extern variable outside .kconfig (ksym)"
                },
                p,
                insn.into(),
            ));
        };
        if slots.get(insn as usize).map(|i| i.code()) != Some(opcode::LD_IMM64) {
            return Err(self.unsupported(
                "use of a .kconfig extern by an instruction that is not ld_imm64",
                p,
                insn.into(),
            ));
        }
        let fd = *map_fds.get(map as usize).ok_or(Error::Usage {
            what: "no fd given for map",
            value: map.into(),
        })?;
        patch_ld(
            slots,
            insn as usize,
            PSEUDO_MAP_VALUE,
            fd,
            Some(offset.into()),
        );
        Ok(())
    }
}
