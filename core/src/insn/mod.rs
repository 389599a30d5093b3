//! The 8-byte eBPF instruction, its opcode fields and constructors.
//!
//! Layout (`struct bpf_insn`): `code:u8`, `dst_reg:4`, `src_reg:4`, `off:i16`, `imm:i32`.
//! Objects are only accepted in the target's byte order, so the register nibbles are
//! decoded in that order too (little-endian: `dst` is the low nibble).

pub mod encode;
pub mod opcode;
pub mod prints;
pub mod returns;

use opcode::{ALU, ALU64, B, CALL, H, JMP, JMP32, LD_IMM64, PSEUDO_CALL, PSEUDO_KFUNC_CALL, W};

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

/// One eBPF instruction (`struct bpf_insn`), held as its 8 bytes in the byte order of the
/// machine running this code: the wire format `BPF_PROG_LOAD` takes and the only order an
/// opened object has. Relocating copies an object's code into these as it stands, and
/// patches write fields in place; the accessors decode the fields.
#[derive(Clone, Copy, PartialEq, Eq, Default, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[doc(alias = "bpf_insn")]
#[repr(transparent)]
pub struct Insn([u8; INSN_SIZE]);

/// Size of one encoded instruction in bytes.
pub const INSN_SIZE: usize = 8;

impl core::fmt::Debug for Insn {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Insn")
            .field("code", &self.code())
            .field("dst", &self.dst())
            .field("src", &self.src())
            .field("off", &self.off())
            .field("imm", &self.imm())
            .finish()
    }
}

/// Whether this machine is little-endian (the register nibbles' order follows it).
const LE: bool = cfg!(target_endian = "little");

impl Insn {
    /// An instruction from its fields: opcode byte, destination and source registers
    /// (4 bits each: higher bits are dropped, as the encoding has no room for them),
    /// signed offset and immediate.
    #[must_use]
    #[inline(always)]
    pub const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Self {
        let regs = if LE {
            (dst & 0x0f) | (src << 4)
        } else {
            (dst << 4) | (src & 0x0f)
        };
        let o = off.to_ne_bytes();
        let i = imm.to_ne_bytes();
        Insn([code, regs, o[0], o[1], i[0], i[1], i[2], i[3]])
    }

    /// Opcode byte: class, size/source and operation.
    #[must_use]
    #[inline(always)]
    pub const fn code(&self) -> u8 {
        self.0[0]
    }

    /// Destination register (0..=10, 4 bits in the encoding).
    #[must_use]
    #[inline(always)]
    pub const fn dst(&self) -> u8 {
        if LE {
            self.0[1] & 0x0f
        } else {
            self.0[1] >> 4
        }
    }

    /// Source register, or a pseudo value such as `BPF_PSEUDO_MAP_FD` on `ld_imm64`.
    #[must_use]
    #[inline(always)]
    pub const fn src(&self) -> u8 {
        if LE {
            self.0[1] >> 4
        } else {
            self.0[1] & 0x0f
        }
    }

    /// Signed offset.
    #[must_use]
    #[inline(always)]
    pub const fn off(&self) -> i16 {
        i16::from_ne_bytes([self.0[2], self.0[3]])
    }

    /// Signed immediate.
    #[must_use]
    #[inline(always)]
    pub const fn imm(&self) -> i32 {
        i32::from_ne_bytes([self.0[4], self.0[5], self.0[6], self.0[7]])
    }

    /// Sets the opcode byte.
    #[inline(always)]
    pub fn set_code(&mut self, code: u8) {
        self.0[0] = code;
    }

    /// Sets the destination register (4 bits).
    #[inline(always)]
    pub fn set_dst(&mut self, dst: u8) {
        *self = Insn::new(self.code(), dst, self.src(), self.off(), self.imm());
    }

    /// Sets the source register (4 bits).
    #[inline(always)]
    pub fn set_src(&mut self, src: u8) {
        self.0[1] = if LE {
            (self.0[1] & 0x0f) | (src << 4)
        } else {
            (self.0[1] & 0xf0) | (src & 0x0f)
        };
    }

    /// Sets the offset.
    #[inline(always)]
    pub fn set_off(&mut self, off: i16) {
        let [a, b] = off.to_ne_bytes();
        self.0[2] = a;
        self.0[3] = b;
    }

    /// Sets the immediate.
    #[inline(always)]
    pub fn set_imm(&mut self, imm: i32) {
        let [a, b, c, d] = imm.to_ne_bytes();
        self.0[4] = a;
        self.0[5] = b;
        self.0[6] = c;
        self.0[7] = d;
    }

    /// Decodes one instruction from 8 bytes in the given byte order.
    #[must_use]
    pub fn from_bytes(b: [u8; INSN_SIZE], little_endian: bool) -> Self {
        if little_endian == LE {
            return Insn(b);
        }
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
        Insn::new(b[0], dst, src, off, imm)
    }

    /// An instruction from its 8 bytes in the byte order of the machine running this code.
    #[must_use]
    #[inline(always)]
    pub const fn from_native_bytes(b: [u8; INSN_SIZE]) -> Self {
        Insn(b)
    }

    /// Encodes the instruction in the given byte order.
    #[must_use]
    pub fn to_bytes(self, little_endian: bool) -> [u8; INSN_SIZE] {
        if little_endian == LE {
            return self.0;
        }
        let regs = if little_endian {
            (self.dst() & 0x0f) | (self.src() << 4)
        } else {
            (self.dst() << 4) | (self.src() & 0x0f)
        };
        let (o, i) = if little_endian {
            (self.off().to_le_bytes(), self.imm().to_le_bytes())
        } else {
            (self.off().to_be_bytes(), self.imm().to_be_bytes())
        };
        [self.code(), regs, o[0], o[1], i[0], i[1], i[2], i[3]]
    }

    /// Encodes the instruction in the byte order of the machine running this code,
    /// which is what `BPF_PROG_LOAD` expects.
    #[must_use]
    #[inline(always)]
    pub const fn to_native_bytes(self) -> [u8; INSN_SIZE] {
        self.0
    }

    /// Whether this is the first slot of the two-slot `ld_imm64` (`BPF_LD|BPF_IMM|BPF_DW`).
    #[must_use]
    pub fn is_ld_imm64(&self) -> bool {
        self.code() == opcode::LD_IMM64
    }
}

/// Copies the instructions of `code` (in the byte order of the machine running this code)
/// into `slots`, as many as both hold: the copy at the heart of relocation (the layouts
/// are the same, so this is a plain copy).
#[inline]
pub(crate) fn decode_native(slots: &mut [Insn], code: &[u8]) {
    for (o, i) in slots.iter_mut().zip(code.chunks_exact(INSN_SIZE)) {
        if let Some(c) = i.first_chunk::<INSN_SIZE>() {
            *o = Insn(*c);
        }
    }
}

impl Insn {
    /// The class: [`LD`](opcode::LD), [`LDX`](opcode::LDX), [`ST`](opcode::ST), [`STX`](opcode::STX), [`ALU`](opcode::ALU), [`JMP`](opcode::JMP), [`JMP32`](opcode::JMP32) or [`ALU64`](opcode::ALU64).
    #[doc(alias = "BPF_CLASS")]
    #[must_use]
    pub const fn class(&self) -> u8 {
        self.code() & 0x07
    }

    /// The size of a load/store: [`W`](opcode::W), [`H`](opcode::H), [`B`](opcode::B) or [`DW`](opcode::DW).
    #[doc(alias = "BPF_SIZE")]
    #[must_use]
    pub const fn size(&self) -> u8 {
        self.code() & 0x18
    }

    /// The size of a load/store in bytes (4, 2, 1, 8).
    #[must_use]
    pub const fn size_bytes(&self) -> u8 {
        match self.size() {
            W => 4,
            H => 2,
            B => 1,
            _ => 8,
        }
    }

    /// The mode of a load/store: [`IMM`](opcode::IMM), [`ABS`](opcode::ABS), [`IND`](opcode::IND), [`MEM`](opcode::MEM), [`MEMSX`](opcode::MEMSX) or [`ATOMIC`](opcode::ATOMIC).
    #[doc(alias = "BPF_MODE")]
    #[must_use]
    pub const fn mode(&self) -> u8 {
        self.code() & 0xe0
    }

    /// The operation of an ALU or JMP instruction ([`ADD`](opcode::ADD) ... [`END`](opcode::END), [`JA`](opcode::JA) ... [`JCOND`](opcode::JCOND)).
    #[doc(alias = "BPF_OP")]
    #[must_use]
    pub const fn op(&self) -> u8 {
        self.code() & 0xf0
    }

    /// The source of an ALU or JMP instruction: [`K`](opcode::K) (immediate) or [`X`](opcode::X) (register).
    #[doc(alias = "BPF_SRC")]
    #[must_use]
    pub const fn source(&self) -> u8 {
        self.code() & 0x08
    }

    /// Whether the class is [`ALU`](opcode::ALU) or [`ALU64`](opcode::ALU64).
    #[must_use]
    pub const fn is_alu(&self) -> bool {
        matches!(self.class(), ALU | ALU64)
    }

    /// Whether the class is [`JMP`](opcode::JMP) or [`JMP32`](opcode::JMP32).
    #[must_use]
    pub const fn is_jmp(&self) -> bool {
        matches!(self.class(), JMP | JMP32)
    }

    /// Whether this is a helper call (`call` with `src` 0).
    #[must_use]
    pub const fn is_helper_call(&self) -> bool {
        self.code() == JMP | CALL && self.src() == 0
    }

    /// Whether this is a bpf-to-bpf call (`call pc+imm`).
    #[must_use]
    pub const fn is_pseudo_call(&self) -> bool {
        self.code() == JMP | CALL && self.src() == PSEUDO_CALL
    }

    /// Whether this is a kernel function call.
    #[must_use]
    pub const fn is_kfunc_call(&self) -> bool {
        self.code() == JMP | CALL && self.src() == PSEUDO_KFUNC_CALL
    }

    /// How many 8-byte slots the instruction takes: 2 for `ld_imm64`, else 1.
    #[must_use]
    pub const fn slots(&self) -> usize {
        if self.code() == LD_IMM64 {
            2
        } else {
            1
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::opcode::*;
    use super::Insn;

    #[test]
    fn fields_split_the_opcode_byte() {
        let i = Insn::new(0x79, 0, 0, 0, 0); // LDX | MEM | DW
        assert_eq!(
            (i.class(), i.mode(), i.size(), i.size_bytes()),
            (LDX, MEM, DW, 8)
        );
        let i = Insn::new(0x5d, 0, 0, 0, 0); // JMP | JNE | X
        assert_eq!((i.class(), i.op(), i.source()), (JMP, JNE, X));
        let i = Insn::new(0xd4, 0, 0, 0, 0);
        assert_eq!((i.class(), i.op(), i.source()), (ALU, END, TO_LE));
        assert_eq!(Insn::new(LD_IMM64, 0, 0, 0, 0).slots(), 2);
        assert_eq!(Insn::new(0x95, 0, 0, 0, 0).slots(), 1);
    }
}
