//! Relocating: a program's instructions copied into the caller's buffer, each relocation
//! patched as the relocation table says (see [`super::table`]), and the functions it calls appended after it (libbpf's
//! `bpf_object__relocate` and `bpf_object__reloc_code`).
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
//! entries) and the walk's stack ([`MAX_CALL_DEPTH`] frames); no heap.

use super::externs;
use super::open::Object;
use super::programs::Program;
use super::reloc::{Reloc, PSEUDO_FUNC, PSEUDO_MAP_FD, PSEUDO_MAP_VALUE};
use super::table::{self, EntryKind};
use crate::error::{Error, Result, SectionRef};
use crate::insn::{opcode, Insn};

/// Most functions (the program included) one linked program may hold.
pub const MAX_LINKED: usize = 256;
/// Deepest chain of first calls the walk follows (the kernel allows 8 frames).
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

fn no_fd(map: u32) -> Error {
    Error::Usage {
        what: "no fd given for map",
        value: map.into(),
    }
}

fn no_program(prog: usize) -> Error {
    Error::Usage {
        what: "no such program",
        value: prog as u64,
    }
}

fn output_full(out: &[Insn]) -> Error {
    Error::Capacity {
        what: "instructions in the output buffer",
        limit: out.len() as u32,
    }
}

/// Patches the `ld_imm64` at `at`: `src_reg`, `imm = fd`, and the second slot's `imm`:
/// `value` plus the original first `imm` (global data), or 0 (a map fd).
fn patch_ld(body: &mut [Insn], at: usize, src: u8, fd: i32, value: Option<u64>) {
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

impl<'a, 's> Object<'a, 's> {
    /// The relocations of program `prog` (an index into [`Object::programs`]), re-read
    /// from the REL table. They were validated at open, so none is skipped.
    pub fn relocations(&self, prog: usize) -> impl Iterator<Item = Reloc> + use<'a, 's> {
        let (parts, maps) = (self.parts, self.maps);
        let p = self.programs.get(prog);
        p.into_iter().flat_map(move |p| parts.relocs_of(maps, p))
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
    /// than [`MAX_LINKED`] functions; [`Error::Unsupported`] for relocations of
    /// kinds this version does not link (kfuncs, ksyms, other sections);
    /// [`Error::BadReloc`] for a call whose target is no function of the object.
    pub fn relocate(
        &self,
        prog: usize,
        prologue: &[Insn],
        map_fds: &[i32],
        out: &mut [Insn],
    ) -> Result<usize> {
        let p = self.programs.get(prog).ok_or_else(|| no_program(prog))?;
        if p.map_reloc_count != p.reloc_count {
            // Calls or externs: the linker.
            return self.link_into(prog, prologue, map_fds, out);
        }
        // Map loads at most: the program alone, unless it calls inside its own section
        // (no relocation tells; any slot holding a bpf-to-bpf call does, seen at open).
        let total = prologue.len() + p.insn_count();
        let full = output_full(out);
        let dst = out.get_mut(..total).ok_or(full)?;
        let (head, body) = dst.split_at_mut(prologue.len());
        crate::insn::decode_native(body, p.code);
        self.patch(p, map_fds, body)?;
        if p.calls {
            return self.link_into(prog, prologue, map_fds, out);
        }
        head.copy_from_slice(prologue);
        Ok(total)
    }

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

    /// The linker: [`Object::relocate`] for programs with calls or externs. One
    /// depth-first walk places each function, copies and patches it, and links each call
    /// as it meets it; errors come in the order of a layout first, then the output's
    /// capacity, then the relocations function by function.
    fn link_into(
        &self,
        prog: usize,
        prologue: &[Insn],
        map_fds: &[i32],
        out: &mut [Insn],
    ) -> Result<usize> {
        let full = output_full(out);
        let Some((head, body)) = out.split_at_mut_checked(prologue.len()) else {
            // The walk's errors first.
            self.linked_len(prog)?;
            return Err(full);
        };
        let sink = Sink {
            body,
            map_fds,
            fits: true,
        };
        let mut placed = Placed::new();
        let w = self.walk(prog, &mut placed, Some(sink))?;
        if !w.fits {
            return Err(full);
        }
        head.copy_from_slice(prologue);
        match w.late {
            Some(e) => Err(e),
            None => Ok(prologue.len() + w.len),
        }
    }

    /// The walk behind [`Object::link_into`], [`Object::linked_len`] and
    /// [`Object::link_layout`]: places functions in libbpf's order into `placed` and, given
    /// a sink, writes and links them.
    fn walk(&self, prog: usize, placed: &mut Placed, mut sink: Option<Sink<'_>>) -> Result<Walk> {
        let p = self.programs.get(prog).ok_or_else(|| no_program(prog))?;
        let full = |what| Error::Capacity {
            what,
            limit: MAX_LINKED as u32,
        };
        placed.clear();
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
        // (index in `placed`, next code reference to look at), in `u32`: the frames are
        // initialised whole.
        let mut stack: heapless::Vec<(u32, u32), MAX_CALL_DEPTH> = heapless::Vec::new();
        let _ = stack.push((0, 0));
        while let Some(&(part, j)) = stack.last() {
            let (part, mut j) = (part as usize, j as usize);
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
            let first = cp.ref_first as usize;
            let refs = self
                .table
                .get(first..first + cp.ref_len as usize)
                .unwrap_or_default();
            let mut descend = None;
            while let Some(e) = refs.get(j) {
                j += 1;
                let (program, offset, ld) = match e.kind {
                    EntryKind::Ref {
                        program,
                        offset,
                        ld,
                    } => (program as usize, offset as usize, ld),
                    EntryKind::Bad { what } => return Err(what.error(self.parts, cp, e.at)),
                    _ => continue,
                };
                let at = e.at as usize;
                let start = match placed.iter().find(|x| x.program == program) {
                    Some(x) => x.start,
                    None => {
                        let Some(tp) = self.programs.get(program) else {
                            continue;
                        };
                        placed
                            .push(LinkedPart {
                                program,
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
                    let rel = (start + offset) as i64 - (cur_start + at + 1) as i64;
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
                top.1 = j as u32;
            }
            match descend {
                Some(d) => stack.push((d as u32, 0)).map_err(|_| Error::Capacity {
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

    /// Copies function `p` to `start` of the sink's body and applies its relocations;
    /// keeps the first error in `late`. Once a function does not fit, nothing more is
    /// written.
    fn emit(&self, p: &Program<'_>, start: usize, s: &mut Sink<'_>, late: &mut Option<Error>) {
        if !s.fits {
            return;
        }
        let Some(slots) = s.body.get_mut(start..start + p.insn_count()) else {
            s.fits = false;
            return;
        };
        crate::insn::decode_native(slots, p.code);
        if p.rel_section.is_none() {
            return; // nothing to patch
        }
        if let Err(e) = self.patch(p, s.map_fds, slots) {
            late.get_or_insert(e);
        }
    }

    /// Applies the relocations of `p` (those of its REL table's range that lie in it, in
    /// table order) to its instructions `slots`; stops at the first that fails.
    // Inlined into its two callers: one per function placed, its call overhead weighs.
    #[inline(always)]
    fn patch(&self, p: &Program<'_>, map_fds: &[i32], slots: &mut [Insn]) -> Result<()> {
        let first = p.offset / 8;
        let n = p.insn_count();
        for e in table::relocations(self.table, p) {
            let Some(at) = e.at.checked_sub(first).filter(|&at| (at as usize) < n) else {
                continue; // another function's
            };
            // A map load whose second slot lies past `p` (where functions overlap) reads
            // as no map load of `p`'s.
            let ld_fits = at as usize + 1 < n;
            match e.kind {
                EntryKind::MapFd { map } if ld_fits => {
                    let fd = *map_fds.get(map as usize).ok_or_else(|| no_fd(map))?;
                    patch_ld(slots, at as usize, PSEUDO_MAP_FD, fd, None);
                }
                EntryKind::MapValue { map, value } if ld_fits => {
                    let fd = *map_fds.get(map as usize).ok_or_else(|| no_fd(map))?;
                    patch_ld(slots, at as usize, PSEUDO_MAP_VALUE, fd, Some(value.into()));
                }
                EntryKind::Extern { sym } => self.link_extern(p, sym, at, map_fds, slots)?,
                EntryKind::Refuse => {
                    return Err(self.unsupported(
                        "relocation against a section that is neither code, maps nor global data",
                        p,
                        at,
                    ))
                }
                _ => {}
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
        let code = slots.get(insn as usize).map(|i| i.code());
        let Some((map, offset)) = found else {
            return Err(self.unsupported(
                if code == Some(opcode::JMP | opcode::CALL) {
                    "call of an extern function (kfunc)"
                } else {
                    "extern variable outside .kconfig (ksym)"
                },
                p,
                insn,
            ));
        };
        if code != Some(opcode::LD_IMM64) {
            return Err(self.unsupported(
                "use of a .kconfig extern by an instruction that is not ld_imm64",
                p,
                insn,
            ));
        }
        let fd = *map_fds.get(map as usize).ok_or_else(|| no_fd(map))?;
        patch_ld(
            slots,
            insn as usize,
            PSEUDO_MAP_VALUE,
            fd,
            Some(offset.into()),
        );
        Ok(())
    }

    fn unsupported(&self, what: &'static str, p: &Program<'_>, insn: u32) -> Error {
        // The program's section name is its section's: no lookup.
        Error::Unsupported {
            what,
            section: SectionRef::new(p.section_index, p.section_name),
            at: insn.into(),
        }
    }
}
