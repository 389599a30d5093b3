//! The 8-byte eBPF instruction, its opcode fields and constructors.
//!
//! Layout (`struct bpf_insn`): `code:u8`, `dst_reg:4`, `src_reg:4`, `off:i16`, `imm:i32`.
//! Objects are only accepted in the target's byte order, so the register nibbles are
//! decoded in that order too (little-endian: `dst` is the low nibble).

pub mod encode;
pub mod opcode;

/// Register numbers, for the constructors in [`encode`].
///
/// `r0` return value and helper result, `r1`..`r5` arguments (clobbered by calls),
/// `r6`..`r9` callee-saved, `r10` the read-only frame pointer.
pub mod reg {
    /// Return value; helper results.
    pub const R0: u8 = 0;
    /// First argument; the context on entry.
    pub const R1: u8 = 1;
    /// Second argument.
    pub const R2: u8 = 2;
    /// Third argument.
    pub const R3: u8 = 3;
    /// Fourth argument.
    pub const R4: u8 = 4;
    /// Fifth argument.
    pub const R5: u8 = 5;
    /// Callee-saved.
    pub const R6: u8 = 6;
    /// Callee-saved.
    pub const R7: u8 = 7;
    /// Callee-saved.
    pub const R8: u8 = 8;
    /// Callee-saved.
    pub const R9: u8 = 9;
    /// Frame pointer (read-only; the stack grows down from it, 512 bytes).
    pub const R10: u8 = 10;
    /// The frame pointer, [`R10`].
    pub const FP: u8 = R10;
}

/// One eBPF instruction (`struct bpf_insn`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[doc(alias = "bpf_insn")]
pub struct Insn {
    /// Opcode byte: class, size/source and operation.
    pub code: u8,
    /// Destination register (0..=10, 4 bits in the encoding).
    pub dst: u8,
    /// Source register, or a pseudo value such as `BPF_PSEUDO_MAP_FD` on `ld_imm64`.
    pub src: u8,
    /// Signed offset.
    pub off: i16,
    /// Signed immediate.
    pub imm: i32,
}

/// Size of one encoded instruction in bytes.
pub const INSN_SIZE: usize = 8;

impl Insn {
    /// Decodes one instruction from 8 bytes in the given byte order.
    #[must_use]
    pub fn from_bytes(b: [u8; INSN_SIZE], little_endian: bool) -> Self {
        let (dst, src) = if little_endian {
            (b[1] & 0x0f, b[1] >> 4)
        } else {
            (b[1] >> 4, b[1] & 0x0f)
        };
        let off_b = [b[2], b[3]];
        let imm_b = [b[4], b[5], b[6], b[7]];
        let (off, imm) = if little_endian {
            (i16::from_le_bytes(off_b), i32::from_le_bytes(imm_b))
        } else {
            (i16::from_be_bytes(off_b), i32::from_be_bytes(imm_b))
        };
        Insn {
            code: b[0],
            dst,
            src,
            off,
            imm,
        }
    }

    /// Decodes an instruction stored in the byte order of the machine running this code
    /// (the only order an opened object has), from its 8 bytes as one word.
    #[inline(always)]
    fn from_native_word(w: u64) -> Self {
        if cfg!(target_endian = "little") {
            Insn {
                code: w as u8,
                dst: (w >> 8) as u8 & 0x0f,
                src: (w >> 12) as u8 & 0x0f,
                off: (w >> 16) as i16,
                imm: (w >> 32) as i32,
            }
        } else {
            Insn {
                code: (w >> 56) as u8,
                dst: (w >> 52) as u8 & 0x0f,
                src: (w >> 48) as u8 & 0x0f,
                off: (w >> 32) as i16,
                imm: w as i32,
            }
        }
    }

    /// Encodes the instruction in the given byte order.
    #[must_use]
    pub fn to_bytes(self, little_endian: bool) -> [u8; INSN_SIZE] {
        let regs = if little_endian {
            (self.dst & 0x0f) | (self.src << 4)
        } else {
            (self.dst << 4) | (self.src & 0x0f)
        };
        let (o, i) = if little_endian {
            (self.off.to_le_bytes(), self.imm.to_le_bytes())
        } else {
            (self.off.to_be_bytes(), self.imm.to_be_bytes())
        };
        [self.code, regs, o[0], o[1], i[0], i[1], i[2], i[3]]
    }

    /// Encodes the instruction in the byte order of the machine running this code,
    /// which is what `BPF_PROG_LOAD` expects.
    #[must_use]
    pub fn to_native_bytes(self) -> [u8; INSN_SIZE] {
        self.to_bytes(cfg!(target_endian = "little"))
    }

    /// Whether this is the first slot of the two-slot `ld_imm64` (`BPF_LD|BPF_IMM|BPF_DW`).
    #[must_use]
    pub fn is_ld_imm64(&self) -> bool {
        self.code == opcode::LD_IMM64
    }
}

/// Decodes the instructions of `code` (in the byte order of the machine running this code)
/// into `slots`, as many as both hold: the copy at the heart of relocation, four at a time.
#[inline]
pub(crate) fn decode_native(slots: &mut [Insn], code: &[u8]) {
    let word = |c: &[u8; INSN_SIZE]| Insn::from_native_word(u64::from_ne_bytes(*c));
    let mut out = slots.chunks_exact_mut(4);
    let mut input = code.chunks_exact(4 * INSN_SIZE);
    for (o, i) in (&mut out).zip(&mut input) {
        if let ([a, b, c, d], Some(i)) = (o, i.first_chunk::<{ 4 * INSN_SIZE }>()) {
            let (i0, rest) = i.split_at(INSN_SIZE);
            let (i1, rest) = rest.split_at(INSN_SIZE);
            let (i2, i3) = rest.split_at(INSN_SIZE);
            let at = |x: &[u8]| x.first_chunk::<INSN_SIZE>().map_or(Insn::default(), word);
            *a = at(i0);
            *b = at(i1);
            *c = at(i2);
            *d = at(i3);
        }
    }
    let rest = input.remainder().chunks_exact(INSN_SIZE);
    for (o, i) in out.into_remainder().iter_mut().zip(rest) {
        *o = i.first_chunk::<INSN_SIZE>().map_or(Insn::default(), word);
    }
}

/// [`decode_native`], one at a time, noting whether any slot is a bpf-to-bpf call (`call`
/// with `src_reg = BPF_PSEUDO_CALL`): without a branch per instruction.
#[inline]
pub(crate) fn decode_native_calls(slots: &mut [Insn], code: &[u8]) -> bool {
    let mut calls = false;
    for (o, i) in slots.iter_mut().zip(code.chunks_exact(INSN_SIZE)) {
        let w = i
            .first_chunk::<INSN_SIZE>()
            .map_or(0, |c| u64::from_ne_bytes(*c));
        let insn = Insn::from_native_word(w);
        calls |= (insn.code == opcode::JMP | opcode::CALL) & (insn.src == 1);
        *o = insn;
    }
    calls
}
