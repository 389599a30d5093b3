//! Instructions printed exactly as the kernel verifier prints them (`(bf) r6 = r1`).
//!
//! The text is that of `print_bpf_insn()` in `kernel/bpf/disasm.c` as the verifier calls
//! it in Linux 6.18 (the verifier log at `log_level` 2, and `bpftool prog dump xlated`
//! without BTF), so a listing of ours can be diffed against a verifier log line by line.
//! Checked against the running kernel by `core/tests/disasm_kernel_golden.rs`.
//!
//! Format choices, where the kernel's printer leaves some:
//!
//! - One instruction prints without index and without newline: `(79) r3 = *(u64 *)(r6 +112)`.
//!   A [`Listing`] prints `N: ` before each and a newline after, like the log; after an
//!   `ld_imm64` the index advances by 2, since its second slot is never printed.
//! - `ld_imm64` prints its full 64-bit value in hex (`(18) r1 = 0x12345678deadbeef`), the
//!   value as it is in the instructions given: for a map load that is the fd (or index)
//!   as written by the loader, where the verifier prints the map's kernel address after
//!   resolving it (or 0 to an unprivileged user).
//! - Helper calls print `call NAME#ID` with the kernel's names ([`helper_name`]); an id
//!   the kernel does not know prints `call unknown#ID`, as the kernel does.
//! - Kfunc calls print `call kernel-function#BTF_ID` (what `disasm.c` prints without BTF);
//!   the verifier prints the kfunc's BTF name there, which a caller that has the BTF can
//!   supply with [`Listing::kfunc_names`] / [`InsnFmt::kfunc_names`].
//! - bpf-to-bpf calls print `call pc+3` (relative, not resolved to a name).
//! - Opcodes the kernel's printer cannot print come out as it prints them: `BUG_ld_38`,
//!   `BUG_ldx_01`, `BUG_st_c2` is `nospec`..., `BUG_c3` (an atomic with an unknown `imm`);
//!   an operation with no name in the kernel's tables prints `(null)` where the kernel's
//!   `printk("%s", NULL)` would, e.g. `(e7) r1 (null) 0`. Two cases where the kernel would
//!   read past its tables print as `BUG_`: a sign-extending 64-bit load (`BUG_ldx_99`) and
//!   an `ld_imm64` whose second slot is missing (`BUG_ld_18`). [`validate`] reports all of
//!   these as [`Error::BadInsn`].
//!
//! Allocation-free: everything is written through `core::fmt`.

mod helpers;

use core::fmt;

pub use helpers::{HELPERS, HELPER_COUNT};

use crate::insn::opcode::{
    is_known, ABS, ADD, ALU, ALU64, AND, ARSH, ATOMIC, CALL, CMPXCHG, DIV, DW, END, EXIT, FETCH,
    IMM, IND, JA, JCOND, JEQ, JGE, JGT, JLE, JLT, JMP, JMP32, JNE, JSET, JSGE, JSGT, JSLE, JSLT,
    LD, LDX, LD_IMM64, LOAD_ACQ, LSH, MAX_REG, MAY_GOTO, MEM, MEMSX, MOD, MOV, MUL, NEG, NOSPEC,
    OFF_ADDR_PERCPU, OFF_ADDR_SPACE_CAST, OFF_SIGNED, OR, PSEUDO_CALL, PSEUDO_KFUNC_CALL, RSH, ST,
    STORE_REL, STX, SUB, TO_BE, X, XCHG, XOR,
};
use crate::{Error, Insn, Result};

/// Names kfunc calls: given a call's BTF id (`imm`) and BTF fd index (`off`), the
/// function's name, if known.
pub type KfuncNames<'a> = &'a dyn Fn(i32, i16) -> Option<&'a str>;

/// The kernel's name of helper `id` (`bpf_map_lookup_elem` for 1), if it has one.
#[doc(alias = "func_id_name")]
#[must_use]
pub fn helper_name(id: i32) -> Option<&'static str> {
    usize::try_from(id)
        .ok()
        .and_then(|i| HELPERS.get(i))
        .copied()
}

/// The id of the helper the kernel calls `name` (with or without the `bpf_` prefix).
#[must_use]
pub fn helper_id(name: &str) -> Option<i32> {
    let bare = name.strip_prefix("bpf_").unwrap_or(name);
    HELPERS
        .iter()
        .position(|h| h.strip_prefix("bpf_") == Some(bare))
        .and_then(|i| i32::try_from(i).ok())
}

/// One instruction of a program, ready to print as the verifier does.
///
/// It keeps the whole slice because an `ld_imm64` reads its second slot.
#[derive(Clone, Copy)]
pub struct InsnFmt<'a> {
    insns: &'a [Insn],
    index: usize,
    kfunc: Option<KfuncNames<'a>>,
}

impl fmt::Debug for InsnFmt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InsnFmt({}: {})", self.index, self)
    }
}

impl<'a> InsnFmt<'a> {
    /// Instruction `index` of `insns`, or `None` when `index` is past the end.
    #[must_use]
    pub fn new(insns: &'a [Insn], index: usize) -> Option<Self> {
        (index < insns.len()).then_some(InsnFmt {
            insns,
            index,
            kfunc: None,
        })
    }

    /// Names kfunc calls with `names` instead of `kernel-function`.
    #[must_use]
    pub fn kfunc_names(mut self, names: KfuncNames<'a>) -> Self {
        self.kfunc = Some(names);
        self
    }

    /// The index of the instruction in its program.
    #[must_use]
    pub fn index(&self) -> usize {
        self.index
    }

    /// The instruction.
    #[must_use]
    pub fn insn(&self) -> Insn {
        self.insns.get(self.index).copied().unwrap_or_default()
    }

    /// The second slot of an `ld_imm64`, if there is one.
    fn next(&self) -> Option<Insn> {
        self.insns.get(self.index.checked_add(1)?).copied()
    }
}

/// Operator of an ALU instruction (`bpf_alu_string`, `bpf_alu_sign_string`).
fn alu_op(i: &Insn) -> &'static str {
    let signed = i.off() == OFF_SIGNED;
    match i.op() {
        ADD => "+=",
        SUB => "-=",
        MUL => "*=",
        DIV if signed => "s/=",
        DIV => "/=",
        OR => "|=",
        AND => "&=",
        LSH => "<<=",
        RSH => ">>=",
        NEG => "neg",
        MOD if signed => "s%=",
        MOD => "%=",
        XOR => "^=",
        MOV => "=",
        ARSH => "s>>=",
        END => "endian",
        _ => "(null)",
    }
}

/// Operator of a conditional jump (`bpf_jmp_string`).
fn jmp_op(op: u8) -> &'static str {
    match op {
        JA => "jmp",
        JEQ => "==",
        JGT => ">",
        JGE => ">=",
        JSET => "&",
        JNE => "!=",
        JSGT => "s>",
        JSGE => "s>=",
        CALL => "call",
        EXIT => "exit",
        JLT => "<",
        JLE => "<=",
        JSLT => "s<",
        JSLE => "s<=",
        _ => "(null)",
    }
}

/// C type of a load/store size (`bpf_ldst_string`).
fn ldst(i: &Insn) -> &'static str {
    match i.size_bytes() {
        4 => "u32",
        2 => "u16",
        1 => "u8",
        _ => "u64",
    }
}

/// Whether an ALU `X` instruction is a sign-extending move, and its cast.
fn movsx(i: &Insn) -> &'static str {
    match (i.op(), i.off()) {
        (MOV, 8) => "(s8)",
        (MOV, 16) => "(s16)",
        (MOV, 32) => "(s32)",
        _ => "",
    }
}

impl fmt::Display for InsnFmt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = self.insn();
        let code = i.code();
        let (dst, src, off, imm) = (i.dst(), i.src(), i.off(), i.imm());
        match i.class() {
            ALU | ALU64 => {
                let r = if i.class() == ALU { 'w' } else { 'r' };
                if i.op() == END {
                    if i.class() == ALU64 {
                        write!(f, "({code:02x}) r{dst} = bswap{imm} r{dst}")
                    } else {
                        let e = if i.source() == TO_BE { "be" } else { "le" };
                        write!(f, "({code:02x}) r{dst} = {e}{imm} r{dst}")
                    }
                } else if i.op() == NEG {
                    write!(f, "({code:02x}) {r}{dst} = -{r}{dst}")
                } else if code == ALU64 | MOV | X && off == OFF_ADDR_SPACE_CAST {
                    let (to, from) = ((imm as u32) >> 16, imm as u16);
                    write!(
                        f,
                        "({code:02x}) r{dst} = addr_space_cast(r{src}, {to}, {from})"
                    )
                } else if code == ALU64 | MOV | X && off == OFF_ADDR_PERCPU {
                    write!(f, "({code:02x}) r{dst} = &(void __percpu *)(r{src})")
                } else if i.source() == X {
                    let (op, cast) = (alu_op(&i), movsx(&i));
                    write!(f, "({code:02x}) {r}{dst} {op} {cast}{r}{src}")
                } else {
                    write!(f, "({code:02x}) {r}{dst} {} {imm}", alu_op(&i))
                }
            }
            STX => {
                let (sz, b64) = (ldst(&i), if i.size() == DW { "64" } else { "" });
                if i.mode() == MEM {
                    return write!(f, "({code:02x}) *({sz} *)(r{dst} {off:+}) = r{src}");
                }
                if i.mode() != ATOMIC {
                    return write!(f, "BUG_{code:02x}");
                }
                // `bpf_atomic_alu_string` and `bpf_alu_string` indexed by `BPF_OP(imm)`.
                let (name, assign) = match imm & 0xf0 {
                    0x00 => ("add", "+="),
                    0x50 => ("and", "&="),
                    0x40 => ("or", "|="),
                    _ => ("xor", "^="),
                };
                const PLAIN: [i32; 4] = [ADD as i32, AND as i32, OR as i32, XOR as i32];
                match imm {
                    _ if PLAIN.contains(&imm) => {
                        write!(f, "({code:02x}) lock *({sz} *)(r{dst} {off:+}) {assign} r{src}")
                    }
                    _ if PLAIN.iter().any(|p| p | FETCH == imm) => write!(
                        f,
                        "({code:02x}) r{src} = atomic{b64}_fetch_{name}(({sz} *)(r{dst} {off:+}), r{src})"
                    ),
                    CMPXCHG => write!(
                        f,
                        "({code:02x}) r0 = atomic{b64}_cmpxchg(({sz} *)(r{dst} {off:+}), r0, r{src})"
                    ),
                    XCHG => write!(
                        f,
                        "({code:02x}) r{src} = atomic{b64}_xchg(({sz} *)(r{dst} {off:+}), r{src})"
                    ),
                    LOAD_ACQ => {
                        write!(f, "({code:02x}) r{dst} = load_acquire(({sz} *)(r{src} {off:+}))")
                    }
                    STORE_REL => {
                        write!(f, "({code:02x}) store_release(({sz} *)(r{dst} {off:+}), r{src})")
                    }
                    _ => write!(f, "BUG_{code:02x}"),
                }
            }
            ST => match i.mode() {
                MEM => write!(f, "({code:02x}) *({} *)(r{dst} {off:+}) = {imm}", ldst(&i)),
                NOSPEC => write!(f, "({code:02x}) nospec"),
                _ => write!(f, "BUG_st_{code:02x}"),
            },
            LDX => {
                let sz = match (i.mode(), i.size_bytes()) {
                    (MEM, _) => ldst(&i),
                    (MEMSX, 4) => "s32",
                    (MEMSX, 2) => "s16",
                    (MEMSX, 1) => "s8",
                    _ => return write!(f, "BUG_ldx_{code:02x}"),
                };
                write!(f, "({code:02x}) r{dst} = *({sz} *)(r{src} {off:+})")
            }
            LD => match i.mode() {
                ABS => write!(f, "({code:02x}) r0 = *({} *)skb[{imm}]", ldst(&i)),
                IND => write!(f, "({code:02x}) r0 = *({} *)skb[r{src} + {imm}]", ldst(&i)),
                IMM if i.size() == DW => match self.next() {
                    Some(hi) => {
                        let v = (u64::from(hi.imm() as u32) << 32) | u64::from(imm as u32);
                        write!(f, "({code:02x}) r{dst} = {v:#x}")
                    }
                    None => write!(f, "BUG_ld_{code:02x}"),
                },
                _ => write!(f, "BUG_ld_{code:02x}"),
            },
            // JMP and JMP32
            _ => {
                let r = if i.class() == JMP32 { 'w' } else { 'r' };
                if i.op() == CALL {
                    if src == PSEUDO_CALL {
                        return write!(f, "({code:02x}) call pc{imm:+}");
                    }
                    let name = match src {
                        0 => helper_name(imm),
                        PSEUDO_KFUNC_CALL => Some(
                            self.kfunc
                                .and_then(|k| k(imm, off))
                                .unwrap_or("kernel-function"),
                        ),
                        _ => None,
                    };
                    write!(f, "({code:02x}) call {}#{imm}", name.unwrap_or("unknown"))
                } else if code == JMP | JA {
                    write!(f, "({code:02x}) goto pc{off:+}")
                } else if code == JMP | JCOND && src == MAY_GOTO {
                    write!(f, "({code:02x}) may_goto pc{off:+}")
                } else if code == JMP32 | JA {
                    write!(f, "({code:02x}) gotol pc{imm:+}")
                } else if code == JMP | EXIT {
                    write!(f, "({code:02x}) exit")
                } else if i.source() == X {
                    let op = jmp_op(i.op());
                    write!(f, "({code:02x}) if {r}{dst} {op} {r}{src} goto pc{off:+}")
                } else {
                    let (op, k) = (jmp_op(i.op()), imm as u32);
                    write!(f, "({code:02x}) if {r}{dst} {op} {k:#x} goto pc{off:+}")
                }
            }
        }
    }
}

/// A whole program printed as the verifier's log prints it at `log_level` 2:
/// `N: (xx) text` per line, each ending in `\n`, the index skipping the second slot of
/// every `ld_imm64`.
///
/// ```
/// use sluice_core::{disasm::Listing, insn::reg::*, Insn};
/// let [lo, hi] = Insn::ld_imm64(R1, 0, 0xdead_beef);
/// let prog = [Insn::mov64_reg(R6, R1), lo, hi, Insn::mov64_imm(R0, 0), Insn::exit()];
/// let mut out = heapless::String::<128>::new();
/// core::fmt::write(&mut out, format_args!("{}", Listing::new(&prog))).unwrap();
/// assert_eq!(out, "0: (bf) r6 = r1\n1: (18) r1 = 0xdeadbeef\n3: (b7) r0 = 0\n4: (95) exit\n");
/// ```
#[derive(Clone, Copy)]
pub struct Listing<'a> {
    insns: &'a [Insn],
    kfunc: Option<KfuncNames<'a>>,
}

impl fmt::Debug for Listing<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listing")
            .field("insns", &self.insns.len())
            .finish()
    }
}

impl<'a> Listing<'a> {
    /// The listing of `insns`, a program from its first instruction.
    #[must_use]
    pub fn new(insns: &'a [Insn]) -> Self {
        Listing { insns, kfunc: None }
    }

    /// Names kfunc calls with `names` instead of `kernel-function`.
    #[must_use]
    pub fn kfunc_names(mut self, names: KfuncNames<'a>) -> Self {
        self.kfunc = Some(names);
        self
    }

    /// The printed instructions in order (each `ld_imm64` once).
    #[must_use]
    pub fn iter(&self) -> Lines<'a> {
        Lines {
            insns: self.insns,
            index: 0,
            kfunc: self.kfunc,
        }
    }
}

impl<'a> IntoIterator for &Listing<'a> {
    type Item = InsnFmt<'a>;
    type IntoIter = Lines<'a>;
    fn into_iter(self) -> Lines<'a> {
        self.iter()
    }
}

impl fmt::Display for Listing<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in self.iter() {
            writeln!(f, "{}: {}", line.index, line)?;
        }
        Ok(())
    }
}

/// Iterator over the printed instructions of a [`Listing`].
#[derive(Clone)]
pub struct Lines<'a> {
    insns: &'a [Insn],
    index: usize,
    kfunc: Option<KfuncNames<'a>>,
}

impl fmt::Debug for Lines<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lines").field("index", &self.index).finish()
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = InsnFmt<'a>;
    fn next(&mut self) -> Option<InsnFmt<'a>> {
        let mut line = InsnFmt::new(self.insns, self.index)?;
        line.kfunc = self.kfunc;
        self.index = self.index.saturating_add(line.insn().slots());
        Some(line)
    }
}

/// Checks that every instruction of a program can be decoded: a known opcode byte
/// ([`is_known`]), register numbers up to 10, an `ld_imm64` with a well-formed second
/// slot, an atomic operation the kernel names, an `END` width of 16, 32 or 64, and a
/// `call` kind the kernel knows.
///
/// This is the decoding the kernel does before verifying, not verification.
///
/// # Errors
/// [`Error::BadInsn`] for the first instruction that fails, with its index and opcode
/// (for a malformed `ld_imm64` second slot, the index and opcode of that slot).
pub fn validate(insns: &[Insn]) -> Result<()> {
    let mut index = 0usize;
    while let Some(&i) = insns.get(index) {
        let bad = |at: usize, opcode: u8| Error::BadInsn {
            index: u32::try_from(at).unwrap_or(u32::MAX),
            opcode,
        };
        if !decodes(&i) {
            return Err(bad(index, i.code()));
        }
        if i.code() == LD_IMM64 {
            let second = index.saturating_add(1);
            match insns.get(second) {
                Some(h) if h.code() == 0 && h.dst() == 0 && h.src() == 0 && h.off() == 0 => {}
                Some(h) => return Err(bad(second, h.code())),
                None => return Err(bad(index, i.code())),
            }
        }
        index = index.saturating_add(i.slots());
    }
    Ok(())
}

/// The per-instruction part of [`validate`].
fn decodes(i: &Insn) -> bool {
    if !is_known(i.code()) || i.dst() > MAX_REG {
        return false;
    }
    match i.class() {
        // `src` of these carries a pseudo value, not a register.
        LD if i.code() == LD_IMM64 => i.src() <= crate::insn::opcode::PSEUDO_MAP_IDX_VALUE,
        JMP if i.op() == CALL => matches!(i.src(), 0 | PSEUDO_CALL | PSEUDO_KFUNC_CALL),
        JMP if i.op() == JCOND => i.src() == MAY_GOTO,
        ALU | ALU64 if i.op() == END => matches!(i.imm(), 16 | 32 | 64),
        STX if i.mode() == ATOMIC => {
            let imm = i.imm();
            let plain = [ADD as i32, AND as i32, OR as i32, XOR as i32];
            i.src() <= MAX_REG
                && (plain.contains(&imm)
                    || plain.iter().any(|p| p | FETCH == imm)
                    || matches!(imm, XCHG | CMPXCHG | LOAD_ACQ | STORE_REL))
        }
        _ => i.src() <= MAX_REG,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests;
