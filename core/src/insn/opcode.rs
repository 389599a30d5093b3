//! Opcode fields: classes, sizes, modes, sources, ALU and JMP operations.

/// `BPF_LD | BPF_IMM | BPF_DW`: the two-slot 64-bit immediate load.
pub const LD_IMM64: u8 = 0x18;
