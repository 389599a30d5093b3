//! Table-driven tests: every opcode class and operation, the kernel's `BUG_` and `(null)`
//! outputs for opcodes it rejects, listings and validation.

use super::*;
use crate::insn::opcode::*;
use crate::insn::reg::*;
use std::format;
use std::string::String;
use std::vec::Vec;

fn one(i: Insn) -> String {
    format!("{}", InsnFmt::new(&[i], 0).unwrap())
}

fn raw(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn::new(code, dst, src, off, imm)
}

#[test]
fn every_form_prints_like_the_kernel() {
    let cases: &[(Insn, &str)] = &[
        // ALU64 / ALU, register and immediate
        (Insn::mov64_reg(R6, R1), "(bf) r6 = r1"),
        (Insn::mov64_imm(R0, 0), "(b7) r0 = 0"),
        (Insn::mov64_imm(R0, -1), "(b7) r0 = -1"),
        (Insn::mov32_imm(R0, 0), "(b4) w0 = 0"),
        (Insn::alu32_imm(XOR, R1, 4), "(a4) w1 ^= 4"),
        (Insn::alu64_imm(ADD, R10, -8), "(07) r10 += -8"),
        (Insn::alu64_reg(ADD, R0, R0), "(0f) r0 += r0"),
        (Insn::alu64_reg(SUB, R1, R2), "(1f) r1 -= r2"),
        (Insn::alu64_reg(MUL, R1, R2), "(2f) r1 *= r2"),
        (Insn::alu64_reg(DIV, R1, R2), "(3f) r1 /= r2"),
        (Insn::alu64_reg(OR, R1, R2), "(4f) r1 |= r2"),
        (Insn::alu64_reg(AND, R1, R2), "(5f) r1 &= r2"),
        (Insn::alu64_reg(LSH, R1, R2), "(6f) r1 <<= r2"),
        (Insn::alu64_reg(RSH, R1, R2), "(7f) r1 >>= r2"),
        (Insn::alu64_reg(MOD, R1, R2), "(9f) r1 %= r2"),
        (Insn::alu64_reg(XOR, R1, R2), "(af) r1 ^= r2"),
        (Insn::alu64_reg(ARSH, R1, R2), "(cf) r1 s>>= r2"),
        (Insn::alu32_reg(ARSH, R3, R4), "(cc) w3 s>>= w4"),
        (Insn::alu64_imm(LSH, R2, 56), "(67) r2 <<= 56"),
        (Insn::alu64_imm(ARSH, R2, 56), "(c7) r2 s>>= 56"),
        (Insn::alu32_imm(MOD, R2, 7), "(94) w2 %= 7"),
        // cpu v4: signed div/mod, movsx
        (raw(ALU64 | DIV | X, 1, 2, 1, 0), "(3f) r1 s/= r2"),
        (raw(ALU64 | MOD | K, 1, 0, 1, 3), "(97) r1 s%= 3"),
        (raw(ALU | DIV | K, 1, 0, 1, -3), "(34) w1 s/= -3"),
        (Insn::movsx64_reg(R1, R2, 8), "(bf) r1 = (s8)r2"),
        (Insn::movsx64_reg(R1, R2, 16), "(bf) r1 = (s16)r2"),
        (Insn::movsx64_reg(R1, R2, 32), "(bf) r1 = (s32)r2"),
        (Insn::movsx32_reg(R1, R2, 8), "(bc) w1 = (s8)w2"),
        (Insn::movsx32_reg(R1, R2, 16), "(bc) w1 = (s16)w2"),
        // movsx is only for MOV; off on other ops is not printed
        (raw(ALU64 | ADD | X, 1, 2, 8, 0), "(0f) r1 += r2"),
        (raw(ALU64 | MOV | K, 1, 0, 8, 5), "(b7) r1 = 5"),
        // neg, endianness, bswap
        (Insn::neg64(R2), "(87) r2 = -r2"),
        (raw(ALU | NEG, 3, 0, 0, 0), "(84) w3 = -w3"),
        (Insn::to_be(R1, 32), "(dc) r1 = be32 r1"),
        (Insn::to_be(R1, 16), "(dc) r1 = be16 r1"),
        (Insn::to_le(R1, 64), "(d4) r1 = le64 r1"),
        (Insn::bswap(R1, 16), "(d7) r1 = bswap16 r1"),
        (Insn::bswap(R4, 64), "(d7) r4 = bswap64 r4"),
        // arena and per-CPU moves
        (
            raw(ALU64 | MOV | X, 1, 2, 1, 1),
            "(bf) r1 = addr_space_cast(r2, 0, 1)",
        ),
        (
            raw(ALU64 | MOV | X, 1, 2, 1, 0x10000),
            "(bf) r1 = addr_space_cast(r2, 1, 0)",
        ),
        (
            raw(ALU64 | MOV | X, 0, 0, -1, 0),
            "(bf) r0 = &(void __percpu *)(r0)",
        ),
        // loads and stores
        (
            Insn::ldx_mem(DW, R3, R6, 112),
            "(79) r3 = *(u64 *)(r6 +112)",
        ),
        (Insn::ldx_mem(W, R0, R1, 0), "(61) r0 = *(u32 *)(r1 +0)"),
        (Insn::ldx_mem(H, R0, R10, -2), "(69) r0 = *(u16 *)(r10 -2)"),
        (Insn::ldx_mem(B, R0, R10, -1), "(71) r0 = *(u8 *)(r10 -1)"),
        (
            Insn::ldx_memsx(W, R0, R10, -4),
            "(81) r0 = *(s32 *)(r10 -4)",
        ),
        (
            Insn::ldx_memsx(H, R0, R10, -4),
            "(89) r0 = *(s16 *)(r10 -4)",
        ),
        (Insn::ldx_memsx(B, R0, R10, -4), "(91) r0 = *(s8 *)(r10 -4)"),
        (Insn::stx_mem(DW, R10, R1, -8), "(7b) *(u64 *)(r10 -8) = r1"),
        (Insn::stx_mem(B, R10, R1, -1), "(73) *(u8 *)(r10 -1) = r1"),
        (Insn::st_mem(W, R10, -4, -7), "(62) *(u32 *)(r10 -4) = -7"),
        (Insn::st_mem(H, R10, -2, 7), "(6a) *(u16 *)(r10 -2) = 7"),
        (
            Insn::st_mem(DW, R1, 32767, 0),
            "(7a) *(u64 *)(r1 +32767) = 0",
        ),
        (
            Insn::st_mem(B, R1, -32768, 0),
            "(72) *(u8 *)(r1 -32768) = 0",
        ),
        // atomics
        (
            Insn::atomic(W, ATOMIC_ADD, R10, R1, -8),
            "(c3) lock *(u32 *)(r10 -8) += r1",
        ),
        (
            Insn::atomic(DW, ATOMIC_OR, R10, R1, -8),
            "(db) lock *(u64 *)(r10 -8) |= r1",
        ),
        (
            Insn::atomic(DW, ATOMIC_AND, R10, R1, -8),
            "(db) lock *(u64 *)(r10 -8) &= r1",
        ),
        (
            Insn::atomic(W, ATOMIC_XOR, R10, R1, -8),
            "(c3) lock *(u32 *)(r10 -8) ^= r1",
        ),
        (
            Insn::atomic(DW, ATOMIC_ADD | FETCH, R1, R0, 0),
            "(db) r0 = atomic64_fetch_add((u64 *)(r1 +0), r0)",
        ),
        (
            Insn::atomic(W, ATOMIC_AND | FETCH, R1, R2, 4),
            "(c3) r2 = atomic_fetch_and((u32 *)(r1 +4), r2)",
        ),
        (
            Insn::atomic(W, ATOMIC_OR | FETCH, R1, R2, 4),
            "(c3) r2 = atomic_fetch_or((u32 *)(r1 +4), r2)",
        ),
        (
            Insn::atomic(DW, ATOMIC_XOR | FETCH, R1, R2, 4),
            "(db) r2 = atomic64_fetch_xor((u64 *)(r1 +4), r2)",
        ),
        (
            Insn::atomic(DW, XCHG, R10, R3, -16),
            "(db) r3 = atomic64_xchg((u64 *)(r10 -16), r3)",
        ),
        (
            Insn::atomic(W, CMPXCHG, R10, R3, -16),
            "(c3) r0 = atomic_cmpxchg((u32 *)(r10 -16), r0, r3)",
        ),
        (
            Insn::atomic(B, LOAD_ACQ, R0, R1, 0),
            "(d3) r0 = load_acquire((u8 *)(r1 +0))",
        ),
        (
            Insn::atomic(H, LOAD_ACQ, R2, R10, -8),
            "(cb) r2 = load_acquire((u16 *)(r10 -8))",
        ),
        (
            Insn::atomic(DW, STORE_REL, R10, R1, -8),
            "(db) store_release((u64 *)(r10 -8), r1)",
        ),
        // legacy packet access
        (Insn::ld_abs(B, 12), "(30) r0 = *(u8 *)skb[12]"),
        (Insn::ld_abs(W, -4), "(20) r0 = *(u32 *)skb[-4]"),
        (Insn::ld_ind(H, R2, 14), "(48) r0 = *(u16 *)skb[r2 + 14]"),
        // jumps
        (Insn::ja(3), "(05) goto pc+3"),
        (Insn::ja(-1), "(05) goto pc-1"),
        (Insn::ja(0), "(05) goto pc+0"),
        (Insn::gotol(-70000), "(06) gotol pc-70000"),
        (Insn::may_goto(2), "(e5) may_goto pc+2"),
        (Insn::jmp_imm(JEQ, R1, 0, 2), "(15) if r1 == 0x0 goto pc+2"),
        (
            Insn::jmp_imm(JNE, R1, -1, 2),
            "(55) if r1 != 0xffffffff goto pc+2",
        ),
        (Insn::jmp_imm(JGT, R1, 10, -4), "(25) if r1 > 0xa goto pc-4"),
        (Insn::jmp_imm(JGE, R1, 10, 1), "(35) if r1 >= 0xa goto pc+1"),
        (Insn::jmp_imm(JSET, R1, 8, 1), "(45) if r1 & 0x8 goto pc+1"),
        (Insn::jmp_imm(JSGT, R1, 1, 1), "(65) if r1 s> 0x1 goto pc+1"),
        (
            Insn::jmp_imm(JSGE, R1, 1, 1),
            "(75) if r1 s>= 0x1 goto pc+1",
        ),
        (Insn::jmp_imm(JLT, R1, 1, 1), "(a5) if r1 < 0x1 goto pc+1"),
        (Insn::jmp_imm(JLE, R1, 1, 1), "(b5) if r1 <= 0x1 goto pc+1"),
        (Insn::jmp_imm(JSLT, R1, 1, 1), "(c5) if r1 s< 0x1 goto pc+1"),
        (
            Insn::jmp_imm(JSLE, R1, 1, 1),
            "(d5) if r1 s<= 0x1 goto pc+1",
        ),
        (
            Insn::jmp_reg(JSGT, R1, R2, -3),
            "(6d) if r1 s> r2 goto pc-3",
        ),
        (
            Insn::jmp32_imm(JEQ, R1, 0, 1),
            "(16) if w1 == 0x0 goto pc+1",
        ),
        (
            Insn::jmp32_imm(JSLT, R1, 0, 1),
            "(c6) if w1 s< 0x0 goto pc+1",
        ),
        (Insn::jmp32_reg(JLT, R1, R2, 1), "(ae) if w1 < w2 goto pc+1"),
        // calls and exit
        (Insn::call(113), "(85) call bpf_probe_read_kernel#113"),
        (Insn::call(1), "(85) call bpf_map_lookup_elem#1"),
        (Insn::call(0), "(85) call bpf_unspec#0"),
        (Insn::call(211), "(85) call bpf_cgrp_storage_delete#211"),
        (Insn::call(212), "(85) call unknown#212"),
        (Insn::call(-1), "(85) call unknown#-1"),
        (raw(JMP | CALL, 0, 3, 0, 1), "(85) call unknown#1"),
        (Insn::call_pc(3), "(85) call pc+3"),
        (Insn::call_pc(-7), "(85) call pc-7"),
        (
            Insn::call_kfunc(12345, 0),
            "(85) call kernel-function#12345",
        ),
        (Insn::exit(), "(95) exit"),
    ];
    let mut failures = Vec::new();
    for (insn, want) in cases {
        let got = one(*insn);
        if got != *want {
            failures.push(format!("{insn:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Opcodes the kernel rejects, printed as `print_bpf_insn()` would print them.
#[test]
fn rejected_opcodes_print_as_the_kernel_printer_would() {
    let cases: &[(Insn, &str)] = &[
        (raw(0x00, 1, 0, 0, 0), "BUG_ld_00"),                // LD|IMM|W
        (raw(0x38, 0, 0, 0, 0), "(38) r0 = *(u64 *)skb[0]"), // LD|ABS|DW prints, is unknown
        (raw(0x58, 0, 2, 0, 4), "(58) r0 = *(u64 *)skb[r2 + 4]"),
        (raw(0x60, 0, 0, 0, 0), "BUG_ld_60"),   // LD|MEM
        (raw(0x01, 0, 0, 0, 0), "BUG_ldx_01"),  // LDX|IMM
        (raw(0xe1, 0, 0, 0, 0), "BUG_ldx_e1"),  // LDX|ATOMIC
        (raw(0x99, 1, 2, 0, 0), "BUG_ldx_99"),  // LDX|MEMSX|DW: out of the kernel's table
        (raw(0x22, 0, 0, 0, 0), "BUG_st_22"),   // ST|ABS
        (raw(0xc2, 0, 0, 0, 0), "(c2) nospec"), // ST|NOSPEC, kernel-internal
        (raw(0xda, 0, 0, 0, 0), "(da) nospec"),
        (raw(0x83, 0, 0, 0, 0), "BUG_83"),            // STX|MEMSX
        (raw(0xc3, 1, 2, 0, 0x02), "BUG_c3"),         // atomic with unknown imm
        (raw(0xdb, 1, 2, 0, 0x30), "BUG_db"),         // atomic DIV
        (raw(0xe7, 1, 0, 0, 5), "(e7) r1 (null) 5"),  // ALU64 op 0xe0
        (raw(0xfc, 1, 2, 0, 0), "(fc) w1 (null) w2"), // ALU op 0xf0
        (raw(0x8c, 1, 2, 0, 0), "(8c) w1 = -w1"),     // NEG with X source
        (raw(0xdf, 1, 0, 0, 16), "(df) r1 = bswap16 r1"), // ALU64 END with X bit
        (raw(0xd4, 1, 0, 0, 0), "(d4) r1 = le0 r1"),  // bad END width
        (raw(0x0d, 1, 0, 0, 0), "(0d) if r1 jmp r0 goto pc+0"), // JMP|JA|X (gotox, 6.19+)
        (raw(0x0e, 1, 2, 5, 0), "(0e) if w1 jmp w2 goto pc+5"),
        (raw(0x86, 0, 0, 0, 5), "(86) call bpf_ktime_get_ns#5"), // JMP32|CALL
        (raw(0x8d, 0, 0, 0, 5), "(8d) call bpf_ktime_get_ns#5"), // JMP|CALL|X
        (raw(0x96, 0, 0, 0, 0), "(96) if w0 exit 0x0 goto pc+0"), // JMP32|EXIT
        (raw(0x9d, 0, 1, 0, 0), "(9d) if r0 exit r1 goto pc+0"),
        (raw(0xe5, 0, 1, 2, 0), "(e5) if r0 (null) 0x0 goto pc+2"), // JCOND, src not may_goto
        (raw(0xf5, 0, 0, 0, 0), "(f5) if r0 (null) 0x0 goto pc+0"),
        (raw(0xe6, 0, 0, 0, 0), "(e6) if w0 (null) 0x0 goto pc+0"),
        (raw(0x15, 11, 12, 0, 0), "(15) if r11 == 0x0 goto pc+0"), // register out of range
        (raw(0x18, 1, 0, 0, 1), "BUG_ld_18"), // ld_imm64 without its second slot
    ];
    let mut failures = Vec::new();
    for (insn, want) in cases {
        let got = one(*insn);
        if got != *want {
            failures.push(format!("{insn:?}: got {got:?}, want {want:?}"));
        }
        // each of these is also rejected by validate()
        assert!(validate(&[*insn]).is_err(), "{insn:?} validated");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn every_opcode_byte_prints_without_panicking_and_bug_means_invalid() {
    for code in 0..=255u8 {
        for (dst, src, off, imm) in [
            (0, 0, 0, 0),
            (15, 15, -1, -1),
            (1, 2, 1, 0x101),
            (3, 4, 8, 16),
        ] {
            let insns = [raw(code, dst, src, off, imm), raw(0, 0, 0, 0, 7)];
            let text = format!("{}", InsnFmt::new(&insns, 0).unwrap());
            assert!(
                text.starts_with(&format!("({code:02x}) ")) || text.starts_with("BUG_"),
                "{text}"
            );
            if text.starts_with("BUG_") || text.contains("(null)") {
                assert!(
                    validate(&insns).is_err(),
                    "{code:#04x} printed {text} but validates"
                );
            }
        }
    }
}

#[test]
fn ld_imm64_prints_both_halves_and_pseudo_values_raw() {
    let [a, b] = Insn::ld_imm64(R1, 0, 0x1234_5678_dead_beef);
    let p = [a, b];
    assert_eq!(
        format!("{}", InsnFmt::new(&p, 0).unwrap()),
        "(18) r1 = 0x12345678deadbeef"
    );
    let p = Insn::ld_imm64(R2, 0, 0);
    assert_eq!(format!("{}", InsnFmt::new(&p, 0).unwrap()), "(18) r2 = 0x0");
    let p = Insn::ld_imm64(R2, 0, u64::MAX);
    assert_eq!(
        format!("{}", InsnFmt::new(&p, 0).unwrap()),
        "(18) r2 = 0xffffffffffffffff"
    );
    let p = Insn::ld_map_fd(R1, 5);
    assert_eq!(format!("{}", InsnFmt::new(&p, 0).unwrap()), "(18) r1 = 0x5");
    // the second slot alone is an LD|IMM|W, which the kernel never prints
    assert_eq!(format!("{}", InsnFmt::new(&p, 1).unwrap()), "BUG_ld_00");
    assert!(InsnFmt::new(&p, 2).is_none());
}

#[test]
fn kfunc_names_come_from_the_caller() {
    let names = |id: i32, off: i16| (id == 42 && off == 0).then_some("bpf_rcu_read_lock");
    let p = [
        Insn::call_kfunc(42, 0),
        Insn::call_kfunc(43, 0),
        Insn::call(5),
    ];
    let l = Listing::new(&p).kfunc_names(&names);
    assert_eq!(
        format!("{l}"),
        "0: (85) call bpf_rcu_read_lock#42\n1: (85) call kernel-function#43\n\
         2: (85) call bpf_ktime_get_ns#5\n"
    );
    let one = InsnFmt::new(&p, 0).unwrap().kfunc_names(&names);
    assert_eq!(format!("{one}"), "(85) call bpf_rcu_read_lock#42");
}

#[test]
fn listing_numbers_like_the_verifier() {
    let [l0, l1] = Insn::ld_imm64(R1, 0, 7);
    let [m0, m1] = Insn::ld_imm64(R2, 0, 8);
    let p = [
        Insn::mov64_reg(R6, R1),
        l0,
        l1,
        m0,
        m1,
        Insn::mov64_imm(R0, 0),
        Insn::exit(),
    ];
    let l = Listing::new(&p);
    assert_eq!(
        format!("{l}"),
        "0: (bf) r6 = r1\n1: (18) r1 = 0x7\n3: (18) r2 = 0x8\n5: (b7) r0 = 0\n6: (95) exit\n"
    );
    let idx: Vec<usize> = l.iter().map(|x| x.index()).collect();
    assert_eq!(idx, [0, 1, 3, 5, 6]);
    assert_eq!(format!("{}", Listing::new(&[])), "");
    // a truncated ld_imm64 at the end is printed once, as BUG
    let p = [Insn::exit(), l0];
    assert_eq!(
        format!("{}", Listing::new(&p)),
        "0: (95) exit\n1: BUG_ld_18\n"
    );
}

#[test]
fn validate_reports_index_and_opcode() {
    let [a, b] = Insn::ld_imm64(R1, 0, 7);
    let ok = [
        Insn::mov64_reg(R6, R1),
        a,
        b,
        Insn::call(1),
        Insn::call_pc(1),
        Insn::exit(),
    ];
    assert_eq!(validate(&ok), Ok(()));
    let bad = [Insn::mov64_imm(R0, 0), raw(0x8c, 1, 0, 0, 0), Insn::exit()];
    assert_eq!(
        validate(&bad),
        Err(Error::BadInsn {
            index: 1,
            opcode: 0x8c
        })
    );
    // ld_imm64 second slot with a code
    let bad = [a, Insn::exit()];
    assert_eq!(
        validate(&bad),
        Err(Error::BadInsn {
            index: 1,
            opcode: 0x95
        })
    );
    // ld_imm64 missing its second slot
    assert_eq!(
        validate(&[Insn::exit(), a]),
        Err(Error::BadInsn {
            index: 1,
            opcode: 0x18
        })
    );
    // ld_imm64 pseudo value out of range, call kind unknown, bad register, bad END width
    for i in [
        raw(0x18, 1, 7, 0, 0),
        raw(0x85, 0, 3, 0, 1),
        raw(0xbf, 11, 1, 0, 0),
        raw(0xbf, 1, 11, 0, 0),
        raw(0xdc, 1, 0, 0, 8),
        raw(0xe5, 0, 1, 0, 0),
    ] {
        let p = [i, raw(0, 0, 0, 0, 0)];
        assert_eq!(
            validate(&p),
            Err(Error::BadInsn {
                index: 0,
                opcode: i.code()
            }),
            "{i:?}"
        );
    }
    for i in [
        Insn::to_be(R1, 16),
        Insn::bswap(R1, 32),
        Insn::atomic(W, LOAD_ACQ, R1, R2, 0),
    ] {
        assert_eq!(validate(&[i]), Ok(()), "{i:?}");
    }
}

#[test]
fn helper_table() {
    assert_eq!(HELPERS.len(), 212);
    assert_eq!(helper_name(1), Some("bpf_map_lookup_elem"));
    assert_eq!(helper_name(6), Some("bpf_trace_printk"));
    assert_eq!(helper_name(25), Some("bpf_perf_event_output"));
    assert_eq!(helper_name(112), Some("bpf_probe_read_user"));
    assert_eq!(helper_name(113), Some("bpf_probe_read_kernel"));
    assert_eq!(helper_name(212), None);
    assert_eq!(helper_name(-1), None);
    assert_eq!(helper_id("bpf_probe_read_kernel"), Some(113));
    assert_eq!(helper_id("probe_read_user"), Some(112));
    assert_eq!(helper_id("nope"), None);
    for (i, name) in HELPERS.iter().enumerate() {
        assert!(name.starts_with("bpf_"), "{name}");
        assert_eq!(helper_id(name), Some(i as i32), "{name} is listed twice");
    }
}
