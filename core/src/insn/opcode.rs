//! Opcode fields: classes, sizes, modes, sources, ALU and JMP operations, atomic
//! operations and the pseudo values carried in `src` (`include/uapi/linux/bpf.h`,
//! `bpf_common.h`).
//!
//! The opcode byte is split three ways:
//!
//! ```text
//! load/store:  | mode:3 | size:2 | class:3 |
//! alu/jmp:     | op:4   | src:1  | class:3 |
//! ```
//!
//! Names are the C names without the `BPF_` prefix; each keeps its C name as a doc alias.
//! [`is_known`] says which opcode bytes the kernel accepts at all.

// ---- classes -------------------------------------------------------------------------

/// Class: non-standard loads (`ld_imm64`, legacy packet access).
#[doc(alias = "BPF_LD")]
pub const LD: u8 = 0x00;
/// Class: load into a register from memory.
#[doc(alias = "BPF_LDX")]
pub const LDX: u8 = 0x01;
/// Class: store an immediate to memory.
#[doc(alias = "BPF_ST")]
pub const ST: u8 = 0x02;
/// Class: store a register to memory, and atomic operations.
#[doc(alias = "BPF_STX")]
pub const STX: u8 = 0x03;
/// Class: 32-bit arithmetic (registers print as `wN`).
#[doc(alias = "BPF_ALU")]
pub const ALU: u8 = 0x04;
/// Class: 64-bit jumps, calls and exit.
#[doc(alias = "BPF_JMP")]
pub const JMP: u8 = 0x05;
/// Class: 32-bit compare jumps, and `gotol` (`JMP32 | JA`).
#[doc(alias = "BPF_JMP32")]
pub const JMP32: u8 = 0x06;
/// Class: 64-bit arithmetic.
#[doc(alias = "BPF_ALU64")]
pub const ALU64: u8 = 0x07;

// ---- sizes (load/store) -------------------------------------------------------------

/// Size: 32-bit word.
#[doc(alias = "BPF_W")]
pub const W: u8 = 0x00;
/// Size: 16-bit half word.
#[doc(alias = "BPF_H")]
pub const H: u8 = 0x08;
/// Size: byte.
#[doc(alias = "BPF_B")]
pub const B: u8 = 0x10;
/// Size: 64-bit double word.
#[doc(alias = "BPF_DW")]
pub const DW: u8 = 0x18;

// ---- modes (load/store) -------------------------------------------------------------

/// Mode: immediate (`ld_imm64`).
#[doc(alias = "BPF_IMM")]
pub const IMM: u8 = 0x00;
/// Mode: legacy absolute packet load (`r0 = *(u8 *)skb[12]`).
#[doc(alias = "BPF_ABS")]
pub const ABS: u8 = 0x20;
/// Mode: legacy indirect packet load (`r0 = *(u8 *)skb[r2 + 12]`).
#[doc(alias = "BPF_IND")]
pub const IND: u8 = 0x40;
/// Mode: memory at register + offset.
#[doc(alias = "BPF_MEM")]
pub const MEM: u8 = 0x60;
/// Mode: sign-extending load (`LDX` only).
///
/// # Minimum kernel
/// 6.6 (cpu v4).
#[doc(alias = "BPF_MEMSX")]
pub const MEMSX: u8 = 0x80;
/// Mode: atomic operation (`STX` only); the operation is in `imm`.
#[doc(alias = "BPF_ATOMIC")]
#[doc(alias = "BPF_XADD")]
pub const ATOMIC: u8 = 0xc0;
/// Mode of the kernel-internal speculation barrier `ST | NOSPEC` (not UAPI; the kernel
/// rejects it in loaded programs but prints it as `nospec`).
#[doc(alias = "BPF_NOSPEC")]
pub const NOSPEC: u8 = 0xc0;

// ---- sources (alu/jmp) --------------------------------------------------------------

/// Source: the immediate `imm`.
#[doc(alias = "BPF_K")]
pub const K: u8 = 0x00;
/// Source: the register `src`.
#[doc(alias = "BPF_X")]
pub const X: u8 = 0x08;
/// `END` source bit: convert to little-endian (`ALU` class).
#[doc(alias = "BPF_TO_LE")]
pub const TO_LE: u8 = 0x00;
/// `END` source bit: convert to big-endian (`ALU` class).
#[doc(alias = "BPF_TO_BE")]
pub const TO_BE: u8 = 0x08;

// ---- ALU operations -----------------------------------------------------------------

/// ALU: `+=`.
#[doc(alias = "BPF_ADD")]
pub const ADD: u8 = 0x00;
/// ALU: `-=`.
#[doc(alias = "BPF_SUB")]
pub const SUB: u8 = 0x10;
/// ALU: `*=`.
#[doc(alias = "BPF_MUL")]
pub const MUL: u8 = 0x20;
/// ALU: unsigned `/=`; signed `s/=` when `off == 1` (see [`OFF_SIGNED`]).
#[doc(alias = "BPF_DIV")]
#[doc(alias = "BPF_SDIV")]
pub const DIV: u8 = 0x30;
/// ALU: `|=`.
#[doc(alias = "BPF_OR")]
pub const OR: u8 = 0x40;
/// ALU: `&=`.
#[doc(alias = "BPF_AND")]
pub const AND: u8 = 0x50;
/// ALU: `<<=`.
#[doc(alias = "BPF_LSH")]
pub const LSH: u8 = 0x60;
/// ALU: logical `>>=`.
#[doc(alias = "BPF_RSH")]
pub const RSH: u8 = 0x70;
/// ALU: negate (`K` source only).
#[doc(alias = "BPF_NEG")]
pub const NEG: u8 = 0x80;
/// ALU: unsigned `%=`; signed `s%=` when `off == 1` (see [`OFF_SIGNED`]).
#[doc(alias = "BPF_MOD")]
#[doc(alias = "BPF_SMOD")]
pub const MOD: u8 = 0x90;
/// ALU: `^=`.
#[doc(alias = "BPF_XOR")]
pub const XOR: u8 = 0xa0;
/// ALU: `=`; with `X` source and `off` 8, 16 or 32 a sign-extending move (`MOVSX`).
#[doc(alias = "BPF_MOV")]
#[doc(alias = "BPF_MOVSX")]
pub const MOV: u8 = 0xb0;
/// ALU: arithmetic `s>>=`.
#[doc(alias = "BPF_ARSH")]
pub const ARSH: u8 = 0xc0;
/// ALU: byte swap. `ALU` class: `le`/`be` conversion chosen by [`TO_LE`]/[`TO_BE`];
/// `ALU64` class: unconditional `bswap` (cpu v4). `imm` is the width: 16, 32 or 64.
#[doc(alias = "BPF_END")]
#[doc(alias = "BPF_BSWAP")]
pub const END: u8 = 0xd0;

/// `off` value selecting signed `DIV`/`MOD` (`BPF_SDIV`/`BPF_SMOD`, cpu v4, 6.6+).
pub const OFF_SIGNED: i16 = 1;
/// `off` value of `ALU64 | MOV | X` meaning `addr_space_cast` (arena pointers, 6.9+).
#[doc(alias = "BPF_ADDR_SPACE_CAST")]
pub const OFF_ADDR_SPACE_CAST: i16 = 1;
/// `off` value of `ALU64 | MOV | X` meaning a per-CPU address (kernel-internal).
#[doc(alias = "BPF_ADDR_PERCPU")]
pub const OFF_ADDR_PERCPU: i16 = -1;

// ---- JMP operations -----------------------------------------------------------------

/// JMP: unconditional `goto pc+off`; in `JMP32`, `gotol pc+imm` (cpu v4).
#[doc(alias = "BPF_JA")]
pub const JA: u8 = 0x00;
/// JMP: `==`.
#[doc(alias = "BPF_JEQ")]
pub const JEQ: u8 = 0x10;
/// JMP: unsigned `>`.
#[doc(alias = "BPF_JGT")]
pub const JGT: u8 = 0x20;
/// JMP: unsigned `>=`.
#[doc(alias = "BPF_JGE")]
pub const JGE: u8 = 0x30;
/// JMP: `&` (any bit set).
#[doc(alias = "BPF_JSET")]
pub const JSET: u8 = 0x40;
/// JMP: `!=`.
#[doc(alias = "BPF_JNE")]
pub const JNE: u8 = 0x50;
/// JMP: signed `s>`.
#[doc(alias = "BPF_JSGT")]
pub const JSGT: u8 = 0x60;
/// JMP: signed `s>=`.
#[doc(alias = "BPF_JSGE")]
pub const JSGE: u8 = 0x70;
/// JMP: call a helper (`src` 0), a subprogram ([`PSEUDO_CALL`]) or a kfunc
/// ([`PSEUDO_KFUNC_CALL`]).
#[doc(alias = "BPF_CALL")]
pub const CALL: u8 = 0x80;
/// JMP: return `r0`.
#[doc(alias = "BPF_EXIT")]
pub const EXIT: u8 = 0x90;
/// JMP: unsigned `<`.
#[doc(alias = "BPF_JLT")]
pub const JLT: u8 = 0xa0;
/// JMP: unsigned `<=`.
#[doc(alias = "BPF_JLE")]
pub const JLE: u8 = 0xb0;
/// JMP: signed `s<`.
#[doc(alias = "BPF_JSLT")]
pub const JSLT: u8 = 0xc0;
/// JMP: signed `s<=`.
#[doc(alias = "BPF_JSLE")]
pub const JSLE: u8 = 0xd0;
/// JMP: conditional pseudo jump; with `src` [`MAY_GOTO`] it is `may_goto pc+off`.
///
/// # Minimum kernel
/// 6.9.
#[doc(alias = "BPF_JCOND")]
pub const JCOND: u8 = 0xe0;
/// `src` of `JMP | JCOND`: `may_goto`.
#[doc(alias = "BPF_MAY_GOTO")]
pub const MAY_GOTO: u8 = 0;

// ---- atomic operations (in `imm` of STX | ATOMIC) ------------------------------------

/// Atomic modifier: also return the old value in `src` (`atomic_fetch_*`).
#[doc(alias = "BPF_FETCH")]
pub const FETCH: i32 = 0x01;
/// Atomic `lock *(size *)(dst +off) += src`.
pub const ATOMIC_ADD: i32 = ADD as i32;
/// Atomic `|=`.
pub const ATOMIC_OR: i32 = OR as i32;
/// Atomic `&=`.
pub const ATOMIC_AND: i32 = AND as i32;
/// Atomic `^=`.
pub const ATOMIC_XOR: i32 = XOR as i32;
/// Atomic exchange: `src = atomic_xchg(dst + off, src)`.
#[doc(alias = "BPF_XCHG")]
pub const XCHG: i32 = 0xe0 | FETCH;
/// Atomic compare-and-exchange with `r0`: `r0 = atomic_cmpxchg(dst + off, r0, src)`.
#[doc(alias = "BPF_CMPXCHG")]
pub const CMPXCHG: i32 = 0xf0 | FETCH;
/// Load-acquire: `dst = load_acquire(src + off)`.
///
/// # Minimum kernel
/// 6.15.
#[doc(alias = "BPF_LOAD_ACQ")]
pub const LOAD_ACQ: i32 = 0x100;
/// Store-release: `store_release(dst + off, src)`.
///
/// # Minimum kernel
/// 6.15.
#[doc(alias = "BPF_STORE_REL")]
pub const STORE_REL: i32 = 0x110;

// ---- pseudo values in `src` ---------------------------------------------------------

/// `ld_imm64` src: `imm` is a map fd; the register receives the map pointer.
#[doc(alias = "BPF_PSEUDO_MAP_FD")]
pub const PSEUDO_MAP_FD: u8 = 1;
/// `ld_imm64` src: `imm` is a map fd, the second `imm` an offset into its value.
#[doc(alias = "BPF_PSEUDO_MAP_VALUE")]
pub const PSEUDO_MAP_VALUE: u8 = 2;
/// `ld_imm64` src: `imm` is a BTF id of a kernel variable.
#[doc(alias = "BPF_PSEUDO_BTF_ID")]
pub const PSEUDO_BTF_ID: u8 = 3;
/// `ld_imm64` src: `imm` is the instruction offset of a subprogram (callback).
#[doc(alias = "BPF_PSEUDO_FUNC")]
pub const PSEUDO_FUNC: u8 = 4;
/// `ld_imm64` src: `imm` is an index into the `fd_array` given at load.
#[doc(alias = "BPF_PSEUDO_MAP_IDX")]
pub const PSEUDO_MAP_IDX: u8 = 5;
/// `ld_imm64` src: like [`PSEUDO_MAP_IDX`], pointing into the map's value.
#[doc(alias = "BPF_PSEUDO_MAP_IDX_VALUE")]
pub const PSEUDO_MAP_IDX_VALUE: u8 = 6;
/// `call` src: bpf-to-bpf call, `imm` is the callee's offset from the next instruction.
#[doc(alias = "BPF_PSEUDO_CALL")]
pub const PSEUDO_CALL: u8 = 1;
/// `call` src: kernel function call, `imm` is its BTF id, `off` the BTF fd index.
#[doc(alias = "BPF_PSEUDO_KFUNC_CALL")]
pub const PSEUDO_KFUNC_CALL: u8 = 2;

// ---- whole opcodes ------------------------------------------------------------------

/// `BPF_LD | BPF_IMM | BPF_DW`: the two-slot 64-bit immediate load.
pub const LD_IMM64: u8 = LD | IMM | DW;

/// Highest register number (`r10`, the read-only frame pointer).
pub const MAX_REG: u8 = 10;

/// Whether the kernel accepts this opcode byte at all: the set of the kernel's
/// `bpf_opcode_in_insntable()` (plus its `BPF_LDX` mode check) as of Linux 6.18.
///
/// This is about the byte alone; the verifier checks the other fields later
/// (e.g. `END` widths, atomic operations in `imm`). Checked against the running kernel
/// by `tests/golden/disasm/opcodes.txt`.
#[must_use]
pub const fn is_known(code: u8) -> bool {
    let op = code & 0xf0;
    let k = code & X == K;
    match code & 0x07 {
        LD => matches!(
            code,
            LD_IMM64 | 0x20 /* ABS|W */ | 0x28 /* ABS|H */ | 0x30 /* ABS|B */
                | 0x40 /* IND|W */ | 0x48 /* IND|H */ | 0x50 /* IND|B */
        ),
        LDX => match code & 0xe0 {
            MEM => true,
            MEMSX => code & 0x18 != DW,
            _ => false,
        },
        ST => code & 0xe0 == MEM,
        STX => matches!(code & 0xe0, MEM | ATOMIC),
        ALU => match op {
            NEG => k,
            END => true,
            0xe0 | 0xf0 => false,
            _ => true,
        },
        ALU64 => match op {
            NEG | END => k,
            0xe0 | 0xf0 => false,
            _ => true,
        },
        JMP => match op {
            JA | CALL | EXIT | JCOND => k,
            0xf0 => false,
            _ => true,
        },
        // JMP32: no call, exit or may_goto; `gotol` only with K.
        _ => match op {
            JA => k,
            CALL | EXIT | 0xe0 | 0xf0 => false,
            _ => true,
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn known_opcodes_count_and_samples() {
        // Kernel 6.18 accepts 128 opcode bytes; the byte-by-byte comparison with the
        // running kernel is in core/tests/disasm_kernel_golden.rs.
        let n = (0..=255u8).filter(|&c| is_known(c)).count();
        assert_eq!(n, 128);
        for c in [
            0x18, 0x20, 0x50, 0x61, 0x81, 0x85, 0x95, 0xd7, 0xdc, 0xe5, 0x06, 0xdb,
        ] {
            assert!(is_known(c), "{c:#04x}");
        }
        for c in [
            0x00, 0x38, 0x99, 0x8c, 0xdf, 0x0e, 0x86, 0x96, 0x8d, 0x0d, 0xc2, 0xf5,
        ] {
            assert!(!is_known(c), "{c:#04x}");
        }
    }
}
