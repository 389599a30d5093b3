//! Constructors for the instructions sluice emits (`Insn::mov64_reg` ...), all `const fn`.
//!
//! They mirror the kernel's `BPF_*` instruction macros (`filter.h`) and take registers as
//! plain numbers (`0..=10`, see [`reg`](super::reg)); they do not validate, so a prologue
//! can be built in a `const`. Operations and sizes are the constants of
//! [`opcode`](super::opcode). Each doc line shows how the verifier prints the result.

use super::opcode::{
    ABS, ALU, ALU64, ATOMIC, CALL, DW, END, EXIT, IMM, IND, JA, JCOND, JMP, JMP32, K, LD, LDX, LSH,
    MAY_GOTO, MEM, MEMSX, MOV, NEG, PSEUDO_CALL, PSEUDO_KFUNC_CALL, PSEUDO_MAP_FD, ST, STX, TO_BE,
    TO_LE, X,
};
use super::Insn;

impl Insn {
    /// `rD = rS` (`BPF_MOV64_REG`).
    #[doc(alias = "BPF_MOV64_REG")]
    #[must_use]
    pub const fn mov64_reg(dst: u8, src: u8) -> Self {
        Self::new(ALU64 | MOV | X, dst, src, 0, 0)
    }

    /// `rD = imm`, sign-extended to 64 bits (`BPF_MOV64_IMM`).
    #[doc(alias = "BPF_MOV64_IMM")]
    #[must_use]
    pub const fn mov64_imm(dst: u8, imm: i32) -> Self {
        Self::new(ALU64 | MOV | K, dst, 0, 0, imm)
    }

    /// `wD = wS`, zeroing the upper half (`BPF_MOV32_REG`).
    #[doc(alias = "BPF_MOV32_REG")]
    #[must_use]
    pub const fn mov32_reg(dst: u8, src: u8) -> Self {
        Self::new(ALU | MOV | X, dst, src, 0, 0)
    }

    /// `wD = imm`, zeroing the upper half (`BPF_MOV32_IMM`).
    #[doc(alias = "BPF_MOV32_IMM")]
    #[must_use]
    pub const fn mov32_imm(dst: u8, imm: i32) -> Self {
        Self::new(ALU | MOV | K, dst, 0, 0, imm)
    }

    /// `rD = (s8|s16|s32)rS`: 64-bit sign-extending move of the low `bits` (8, 16 or 32)
    /// (`BPF_MOVSX64_REG`).
    ///
    /// # Minimum kernel
    /// 6.6 (cpu v4); [`Insn::sign_extend64`] works everywhere.
    #[doc(alias = "BPF_MOVSX64_REG")]
    #[must_use]
    pub const fn movsx64_reg(dst: u8, src: u8, bits: i16) -> Self {
        Self::new(ALU64 | MOV | X, dst, src, bits, 0)
    }

    /// `wD = (s8|s16)wS`: 32-bit sign-extending move (`BPF_MOVSX32_REG`).
    ///
    /// # Minimum kernel
    /// 6.6 (cpu v4).
    #[doc(alias = "BPF_MOVSX32_REG")]
    #[must_use]
    pub const fn movsx32_reg(dst: u8, src: u8, bits: i16) -> Self {
        Self::new(ALU | MOV | X, dst, src, bits, 0)
    }

    /// `rD op= imm`, 64-bit (`BPF_ALU64_IMM`); `op` is an ALU operation such as
    /// [`ADD`](super::opcode::ADD).
    #[doc(alias = "BPF_ALU64_IMM")]
    #[must_use]
    pub const fn alu64_imm(op: u8, dst: u8, imm: i32) -> Self {
        Self::new(ALU64 | op | K, dst, 0, 0, imm)
    }

    /// `rD op= rS`, 64-bit (`BPF_ALU64_REG`).
    #[doc(alias = "BPF_ALU64_REG")]
    #[must_use]
    pub const fn alu64_reg(op: u8, dst: u8, src: u8) -> Self {
        Self::new(ALU64 | op | X, dst, src, 0, 0)
    }

    /// `wD op= imm`, 32-bit (`BPF_ALU32_IMM`).
    #[doc(alias = "BPF_ALU32_IMM")]
    #[must_use]
    pub const fn alu32_imm(op: u8, dst: u8, imm: i32) -> Self {
        Self::new(ALU | op | K, dst, 0, 0, imm)
    }

    /// `wD op= wS`, 32-bit (`BPF_ALU32_REG`).
    #[doc(alias = "BPF_ALU32_REG")]
    #[must_use]
    pub const fn alu32_reg(op: u8, dst: u8, src: u8) -> Self {
        Self::new(ALU | op | X, dst, src, 0, 0)
    }

    /// `rD = -rD`.
    #[must_use]
    pub const fn neg64(dst: u8) -> Self {
        Self::new(ALU64 | NEG | K, dst, 0, 0, 0)
    }

    /// `rD = be16|be32|be64 rD`: convert from host order to big-endian (`BPF_ENDIAN(BPF_TO_BE)`).
    #[doc(alias = "BPF_ENDIAN")]
    #[must_use]
    pub const fn to_be(dst: u8, bits: i32) -> Self {
        Self::new(ALU | END | TO_BE, dst, 0, 0, bits)
    }

    /// `rD = le16|le32|le64 rD`: convert from host order to little-endian.
    #[must_use]
    pub const fn to_le(dst: u8, bits: i32) -> Self {
        Self::new(ALU | END | TO_LE, dst, 0, 0, bits)
    }

    /// `rD = bswap16|bswap32|bswap64 rD`: unconditional byte swap (`BPF_BSWAP`).
    ///
    /// # Minimum kernel
    /// 6.6 (cpu v4).
    #[doc(alias = "BPF_BSWAP")]
    #[must_use]
    pub const fn bswap(dst: u8, bits: i32) -> Self {
        Self::new(ALU64 | END | TO_LE, dst, 0, 0, bits)
    }

    /// Sign-extends the low `bits` of `rD` to 64 bits with a shift pair
    /// (`rD <<= 64 - bits; rD s>>= 64 - bits`), which every kernel accepts
    /// (the perf prologue's way). `bits` is 8, 16 or 32.
    #[must_use]
    pub const fn sign_extend64(dst: u8, bits: i32) -> [Self; 2] {
        let shift = 64 - bits;
        [
            Self::alu64_imm(LSH, dst, shift),
            Self::alu64_imm(super::opcode::ARSH, dst, shift),
        ]
    }

    /// Zero-extends the low `bits` of `rD` (`rD <<= 64 - bits; rD >>= 64 - bits`).
    #[must_use]
    pub const fn zero_extend64(dst: u8, bits: i32) -> [Self; 2] {
        let shift = 64 - bits;
        [
            Self::alu64_imm(LSH, dst, shift),
            Self::alu64_imm(super::opcode::RSH, dst, shift),
        ]
    }

    /// `rD = *(size *)(rS + off)` (`BPF_LDX_MEM`); `size` is [`W`](super::opcode::W),
    /// [`H`](super::opcode::H), [`B`](super::opcode::B) or [`DW`].
    #[doc(alias = "BPF_LDX_MEM")]
    #[must_use]
    pub const fn ldx_mem(size: u8, dst: u8, src: u8, off: i16) -> Self {
        Self::new(LDX | MEM | size, dst, src, off, 0)
    }

    /// `rD = *(s8|s16|s32 *)(rS + off)`, sign-extending load (`BPF_LDX_MEMSX`).
    ///
    /// # Minimum kernel
    /// 6.6 (cpu v4).
    #[doc(alias = "BPF_LDX_MEMSX")]
    #[must_use]
    pub const fn ldx_memsx(size: u8, dst: u8, src: u8, off: i16) -> Self {
        Self::new(LDX | MEMSX | size, dst, src, off, 0)
    }

    /// `*(size *)(rD + off) = rS` (`BPF_STX_MEM`).
    #[doc(alias = "BPF_STX_MEM")]
    #[must_use]
    pub const fn stx_mem(size: u8, dst: u8, src: u8, off: i16) -> Self {
        Self::new(STX | MEM | size, dst, src, off, 0)
    }

    /// `*(size *)(rD + off) = imm` (`BPF_ST_MEM`).
    #[doc(alias = "BPF_ST_MEM")]
    #[must_use]
    pub const fn st_mem(size: u8, dst: u8, off: i16, imm: i32) -> Self {
        Self::new(ST | MEM | size, dst, 0, off, imm)
    }

    /// Atomic operation `op` (e.g. [`ATOMIC_ADD`](super::opcode::ATOMIC_ADD) `|`
    /// [`FETCH`](super::opcode::FETCH), [`XCHG`](super::opcode::XCHG)) on
    /// `*(size *)(rD + off)` with `rS` (`BPF_ATOMIC_OP`).
    #[doc(alias = "BPF_ATOMIC_OP")]
    #[must_use]
    pub const fn atomic(size: u8, op: i32, dst: u8, src: u8, off: i16) -> Self {
        Self::new(STX | ATOMIC | size, dst, src, off, op)
    }

    /// `rD = imm64` in two slots, with `src` a pseudo value (0 for a plain constant,
    /// [`PSEUDO_MAP_FD`] ...) (`BPF_LD_IMM64_RAW`).
    #[doc(alias = "BPF_LD_IMM64_RAW")]
    #[doc(alias = "BPF_LD_IMM64")]
    #[must_use]
    pub const fn ld_imm64(dst: u8, src: u8, imm: u64) -> [Self; 2] {
        [
            Self::new(LD | IMM | DW, dst, src, 0, imm as u32 as i32),
            Self::new(0, 0, 0, 0, (imm >> 32) as u32 as i32),
        ]
    }

    /// `rD = map[fd]`: the map pointer load the verifier resolves (`BPF_LD_MAP_FD`).
    #[doc(alias = "BPF_LD_MAP_FD")]
    #[must_use]
    pub const fn ld_map_fd(dst: u8, fd: i32) -> [Self; 2] {
        Self::ld_imm64(dst, PSEUDO_MAP_FD, fd as u32 as u64)
    }

    /// `r0 = *(size *)skb[imm]`, legacy packet load (`BPF_LD_ABS`).
    #[doc(alias = "BPF_LD_ABS")]
    #[must_use]
    pub const fn ld_abs(size: u8, imm: i32) -> Self {
        Self::new(LD | ABS | size, 0, 0, 0, imm)
    }

    /// `r0 = *(size *)skb[rS + imm]`, legacy packet load (`BPF_LD_IND`).
    #[doc(alias = "BPF_LD_IND")]
    #[must_use]
    pub const fn ld_ind(size: u8, src: u8, imm: i32) -> Self {
        Self::new(LD | IND | size, 0, src, 0, imm)
    }

    /// `if rD op imm goto pc+off` (`BPF_JMP_IMM`); `op` such as [`JEQ`](super::opcode::JEQ).
    #[doc(alias = "BPF_JMP_IMM")]
    #[must_use]
    pub const fn jmp_imm(op: u8, dst: u8, imm: i32, off: i16) -> Self {
        Self::new(JMP | op | K, dst, 0, off, imm)
    }

    /// `if rD op rS goto pc+off` (`BPF_JMP_REG`).
    #[doc(alias = "BPF_JMP_REG")]
    #[must_use]
    pub const fn jmp_reg(op: u8, dst: u8, src: u8, off: i16) -> Self {
        Self::new(JMP | op | X, dst, src, off, 0)
    }

    /// `if wD op imm goto pc+off` (`BPF_JMP32_IMM`).
    #[doc(alias = "BPF_JMP32_IMM")]
    #[must_use]
    pub const fn jmp32_imm(op: u8, dst: u8, imm: i32, off: i16) -> Self {
        Self::new(JMP32 | op | K, dst, 0, off, imm)
    }

    /// `if wD op wS goto pc+off` (`BPF_JMP32_REG`).
    #[doc(alias = "BPF_JMP32_REG")]
    #[must_use]
    pub const fn jmp32_reg(op: u8, dst: u8, src: u8, off: i16) -> Self {
        Self::new(JMP32 | op | X, dst, src, off, 0)
    }

    /// `goto pc+off` (`BPF_JMP_A`).
    #[doc(alias = "BPF_JMP_A")]
    #[must_use]
    pub const fn ja(off: i16) -> Self {
        Self::new(JMP | JA | K, 0, 0, off, 0)
    }

    /// `gotol pc+imm`, the long unconditional jump (`BPF_JMP32_A`).
    ///
    /// # Minimum kernel
    /// 6.6 (cpu v4).
    #[doc(alias = "BPF_JMP32_A")]
    #[must_use]
    pub const fn gotol(imm: i32) -> Self {
        Self::new(JMP32 | JA | K, 0, 0, 0, imm)
    }

    /// `may_goto pc+off`: jump once the loop budget is spent.
    ///
    /// # Minimum kernel
    /// 6.9.
    #[must_use]
    pub const fn may_goto(off: i16) -> Self {
        Self::new(JMP | JCOND | K, 0, MAY_GOTO, off, 0)
    }

    /// `call helper#id` (`BPF_EMIT_CALL`), e.g. 113 for `bpf_probe_read_kernel`.
    #[doc(alias = "BPF_EMIT_CALL")]
    #[must_use]
    pub const fn call(helper: i32) -> Self {
        Self::new(JMP | CALL, 0, 0, 0, helper)
    }

    /// `call pc+imm`: bpf-to-bpf call of the subprogram starting at `pc + 1 + imm`
    /// (`BPF_CALL_REL`).
    #[doc(alias = "BPF_CALL_REL")]
    #[must_use]
    pub const fn call_pc(imm: i32) -> Self {
        Self::new(JMP | CALL, 0, PSEUDO_CALL, 0, imm)
    }

    /// Call of the kernel function with BTF id `btf_id` (`BPF_CALL_KFUNC`); `btf_fd_idx`
    /// is 0 for vmlinux, else an index into the load's `fd_array`.
    #[doc(alias = "BPF_CALL_KFUNC")]
    #[must_use]
    pub const fn call_kfunc(btf_id: i32, btf_fd_idx: i16) -> Self {
        Self::new(JMP | CALL, 0, PSEUDO_KFUNC_CALL, btf_fd_idx, btf_id)
    }

    /// `exit`: return `r0` (`BPF_EXIT_INSN`).
    #[doc(alias = "BPF_EXIT_INSN")]
    #[must_use]
    pub const fn exit() -> Self {
        Self::new(JMP | EXIT, 0, 0, 0, 0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::super::opcode::*;
    use super::super::reg::*;
    use super::*;

    /// The 8 bytes each constructor must produce (little-endian), as the kernel's
    /// `filter.h` macros lay them out.
    #[test]
    fn constructors_encode_like_the_kernel_macros() {
        let cases: &[(Insn, [u8; 8])] = &[
            (Insn::mov64_reg(R6, R1), [0xbf, 0x16, 0, 0, 0, 0, 0, 0]),
            (
                Insn::mov64_imm(R0, -1),
                [0xb7, 0x00, 0, 0, 0xff, 0xff, 0xff, 0xff],
            ),
            (Insn::mov32_imm(R0, 0), [0xb4, 0, 0, 0, 0, 0, 0, 0]),
            (Insn::mov32_reg(R1, R2), [0xbc, 0x21, 0, 0, 0, 0, 0, 0]),
            (Insn::movsx64_reg(R1, R2, 8), [0xbf, 0x21, 8, 0, 0, 0, 0, 0]),
            (
                Insn::movsx32_reg(R1, R2, 16),
                [0xbc, 0x21, 16, 0, 0, 0, 0, 0],
            ),
            (
                Insn::alu64_imm(ADD, R10, -8),
                [0x07, 0x0a, 0, 0, 0xf8, 0xff, 0xff, 0xff],
            ),
            (Insn::alu64_reg(SUB, R1, R2), [0x1f, 0x21, 0, 0, 0, 0, 0, 0]),
            (Insn::alu32_imm(XOR, R1, 4), [0xa4, 0x01, 0, 0, 4, 0, 0, 0]),
            (
                Insn::alu32_reg(ARSH, R3, R4),
                [0xcc, 0x43, 0, 0, 0, 0, 0, 0],
            ),
            (Insn::neg64(R2), [0x87, 0x02, 0, 0, 0, 0, 0, 0]),
            (Insn::to_be(R1, 32), [0xdc, 0x01, 0, 0, 32, 0, 0, 0]),
            (Insn::to_le(R1, 16), [0xd4, 0x01, 0, 0, 16, 0, 0, 0]),
            (Insn::bswap(R1, 64), [0xd7, 0x01, 0, 0, 64, 0, 0, 0]),
            (
                Insn::ldx_mem(DW, R3, R6, 112),
                [0x79, 0x63, 112, 0, 0, 0, 0, 0],
            ),
            (
                Insn::ldx_memsx(B, R3, R6, -1),
                [0x91, 0x63, 0xff, 0xff, 0, 0, 0, 0],
            ),
            (
                Insn::stx_mem(W, R10, R1, -8),
                [0x63, 0x1a, 0xf8, 0xff, 0, 0, 0, 0],
            ),
            (
                Insn::st_mem(H, R10, -2, 7),
                [0x6a, 0x0a, 0xfe, 0xff, 7, 0, 0, 0],
            ),
            (
                Insn::atomic(DW, ATOMIC_ADD | FETCH, R1, R0, 0),
                [0xdb, 0x01, 0, 0, 1, 0, 0, 0],
            ),
            (
                Insn::atomic(W, CMPXCHG, R10, R1, -8),
                [0xc3, 0x1a, 0xf8, 0xff, 0xf1, 0, 0, 0],
            ),
            (
                Insn::atomic(B, LOAD_ACQ, R0, R1, 0),
                [0xd3, 0x10, 0, 0, 0, 1, 0, 0],
            ),
            (Insn::ld_abs(B, 12), [0x30, 0, 0, 0, 12, 0, 0, 0]),
            (Insn::ld_ind(H, R2, 14), [0x48, 0x20, 0, 0, 14, 0, 0, 0]),
            (Insn::jmp_imm(JEQ, R1, 0, 2), [0x15, 0x01, 2, 0, 0, 0, 0, 0]),
            (
                Insn::jmp_reg(JSGT, R1, R2, -3),
                [0x6d, 0x21, 0xfd, 0xff, 0, 0, 0, 0],
            ),
            (
                Insn::jmp32_imm(JEQ, R1, 0, 1),
                [0x16, 0x01, 1, 0, 0, 0, 0, 0],
            ),
            (
                Insn::jmp32_reg(JLT, R1, R2, 1),
                [0xae, 0x21, 1, 0, 0, 0, 0, 0],
            ),
            (Insn::ja(3), [0x05, 0, 3, 0, 0, 0, 0, 0]),
            (Insn::gotol(-70000), [0x06, 0, 0, 0, 0x90, 0xee, 0xfe, 0xff]),
            (Insn::may_goto(2), [0xe5, 0, 2, 0, 0, 0, 0, 0]),
            (Insn::call(113), [0x85, 0, 0, 0, 113, 0, 0, 0]),
            (Insn::call_pc(3), [0x85, 0x10, 0, 0, 3, 0, 0, 0]),
            (
                Insn::call_kfunc(12345, 0),
                [0x85, 0x20, 0, 0, 0x39, 0x30, 0, 0],
            ),
            (Insn::exit(), [0x95, 0, 0, 0, 0, 0, 0, 0]),
        ];
        for (insn, bytes) in cases {
            assert_eq!(insn.to_bytes(true), *bytes, "{insn:?}");
            assert_eq!(Insn::from_bytes(*bytes, true), *insn);
        }
    }

    #[test]
    fn two_slot_loads() {
        let [a, b] = Insn::ld_imm64(R1, 0, 0x1234_5678_dead_beef);
        assert_eq!(a.to_bytes(true), [0x18, 0x01, 0, 0, 0xef, 0xbe, 0xad, 0xde]);
        assert_eq!(b.to_bytes(true), [0, 0, 0, 0, 0x78, 0x56, 0x34, 0x12]);
        let [a, b] = Insn::ld_map_fd(R1, 7);
        assert_eq!(
            (a.code(), a.dst(), a.src(), a.imm(), b.imm()),
            (LD_IMM64, 1, PSEUDO_MAP_FD, 7, 0)
        );
        assert!(a.is_ld_imm64() && !b.is_ld_imm64());
    }

    #[test]
    fn shift_pairs_extend_like_casts() {
        // Evaluate the pair the way the interpreter does to show the shifts are right.
        fn run(pair: [Insn; 2], mut v: u64) -> u64 {
            for i in pair {
                let s = i.imm() as u32;
                v = match i.op() {
                    LSH => v << s,
                    RSH => v >> s,
                    ARSH => ((v as i64) >> s) as u64,
                    _ => unreachable!(),
                };
            }
            v
        }
        assert_eq!(
            run(Insn::sign_extend64(R2, 8), 0xabcd_ff80),
            (-128i64) as u64
        );
        assert_eq!(run(Insn::sign_extend64(R2, 16), 0x7fff), 0x7fff);
        assert_eq!(
            run(Insn::sign_extend64(R2, 32), 0xffff_fffe),
            (-2i64) as u64
        );
        assert_eq!(run(Insn::zero_extend64(R2, 16), 0xdead_beef), 0xbeef);
    }
}
