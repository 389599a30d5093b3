// SPDX-License-Identifier: GPL-2.0
/*
 * insns.c: as many instruction encodings as LLVM 14 emits, in programs the
 * verifier accepts (a socket filter and a kprobe: loads with `bpftool prog loadall`), so the
 * disassembler can be compared with llvm-objdump and with the verifier log.
 * Built with -mcpu=v3 (ALU32 sub-registers, JMP32, atomic fetch/xchg/cmpxchg).
 *
 * socket      alu_mix: compiler-generated code: ALU64/ALU32 with imm and reg
 *             (add sub mul div mod or and xor lsh rsh arsh), mov32/mov64,
 *             bswap (be16/32/64 on this little-endian target), atomics on the
 *             stack (lock add/and/or/xor, fetch_add/and/or/xor, xchg,
 *             cmpxchg, 32 and 64 bit), ld_imm64 constants, legacy packet
 *             loads (ld_abs/ld_ind b/h/w), helper calls; small inline-asm
 *             fragments add neg, arsh, le16/32/64 and every conditional jump
 *             (JMP and JMP32, imm and reg, jeq..jsle) on compiler registers.
 * kprobe/vfs_read
 *             raw_insns: hand-written (file-scope asm) for what LLVM 14 can
 *             neither emit nor assemble: BPF_ST (store immediate, all four
 *             sizes) and JSET (JMP and JMP32, imm and reg), written as bytes;
 *             plus ldx/stx of all sizes, ja, mov32 imm.
 *
 * Note: llvm-objdump 14 prints "<unknown>" for the raw ST/JSET words, for
 * the 32-bit fetch atomics other than fetch_add, and shows the 32-bit
 * atomic_fetch_add as "lock *(u32 *)... += " (it ignores BPF_FETCH there).
 * The kernel verifier log (log_level 2) is the oracle for those.
 */
#include "sluice_bpf.h"

/* Legacy packet loads (BPF_LD | BPF_ABS/BPF_IND); r6 must hold the skb. */
unsigned long long load_byte(void *skb, unsigned long long off) asm("llvm.bpf.load.byte");
unsigned long long load_half(void *skb, unsigned long long off) asm("llvm.bpf.load.half");
unsigned long long load_word(void *skb, unsigned long long off) asm("llvm.bpf.load.word");

struct __sk_buff {
	u32 len;
	u32 pkt_type;
	u32 mark;
	u32 queue_mapping;
	u32 protocol;
};

/* A conditional jump over one instruction: r += bit when not taken. */
#define JUMP(cond, cons_a, a, cons_b, b, bit)                                  \
	asm volatile("if %[x] " cond " %[y] goto +1\n\t%[r] |= " #bit          \
		     : [r] "+r"(acc)                                          \
		     : [x] cons_a(a), [y] cons_b(b))
#define JUMPK(cond, cons_a, a, k, bit)                                         \
	asm volatile("if %[x] " cond " " #k " goto +1\n\t%[r] |= " #bit        \
		     : [r] "+r"(acc)                                          \
		     : [x] cons_a(a))

SEC("socket")
int alu_mix(struct __sk_buff *skb)
{
	volatile u64 v64 = skb->len;
	volatile u32 v32 = skb->protocol;
	u64 a = v64, b = (u64)bpf_get_prandom_u32() | 1, acc = 0;
	u32 wa = v32, wb = bpf_get_prandom_u32() | 1;
	s64 sa = (s64)a - 1000;
	s32 swa = (s32)wa - 1000;
	u64 slot64 = a;
	u32 slot32 = wa;
	u64 old;

	/* ALU64, reg and imm */
	acc += a + b;
	acc += a - b;
	acc += a * b;
	acc += a / b;
	acc += a % b;
	acc += (a | b) ^ (a & b);
	acc += a << (b & 63);
	acc += a >> (b & 63);
	acc += (u64)(sa >> (b & 63));
	acc += (a + 17) * 9;
	acc += (a - 3) / 7;
	acc += a % 13;
	acc += (a | 0x100) ^ 0x55;
	acc += (a & 0xff0) << 3;
	acc += a >> 5;
	acc += (u64)(sa >> 7);

	/* ALU32, reg and imm */
	wa += wb;
	wa -= wb >> 1;
	wa *= wb;
	wa /= wb;
	wa %= wb + 7;
	wa |= wb ^ 0x33;
	wa &= wb | 0xf0f0;
	wa <<= wb & 31;
	wa >>= wb & 15;
	wa = (u32)(swa >> (wb & 31)) + wa;
	wa += 3;
	wa *= 5;
	wa /= 3;
	wa %= 11;
	wa ^= 0x1234;
	wa <<= 2;
	wa >>= 1;
	wa = (u32)((s32)wa >> 3);

	/* byte swaps: be16/be32/be64 on a little-endian target */
	acc += __builtin_bswap16((u16)a);
	acc += __builtin_bswap32(wa);
	acc += __builtin_bswap64(a);

	/* neg, arsh and le through inline asm on compiler registers */
	asm volatile("%[x] = -%[x]" : [x] "+r"(a));
	asm volatile("%[x] = -%[x]" : [x] "+w"(wb));
	asm volatile("%[x] s>>= 3\n\t%[x] s>>= %[y]" : [x] "+w"(wa) : [y] "w"(wb));
	asm volatile("%[x] = le16 %[x]\n\t%[x] = le32 %[x]\n\t%[x] = le64 %[x]" : [x] "+r"(b));
	asm volatile("%[x] = be16 %[x]\n\t%[x] = be32 %[x]\n\t%[x] = be64 %[x]" : [x] "+r"(b));

	/* JMP: every condition, register and immediate operands */
	JUMP("==", "r", a, "r", b, 1);
	JUMP("!=", "r", a, "r", b, 2);
	JUMP(">", "r", a, "r", b, 4);
	JUMP(">=", "r", a, "r", b, 8);
	JUMP("<", "r", a, "r", b, 16);
	JUMP("<=", "r", a, "r", b, 32);
	JUMP("s>", "r", a, "r", b, 64);
	JUMP("s>=", "r", a, "r", b, 128);
	JUMP("s<", "r", a, "r", b, 256);
	JUMP("s<=", "r", a, "r", b, 512);
	JUMPK("==", "r", a, 1, 1);
	JUMPK("!=", "r", a, 2, 2);
	JUMPK(">", "r", a, 3, 4);
	JUMPK(">=", "r", a, 4, 8);
	JUMPK("<", "r", a, 5, 16);
	JUMPK("<=", "r", a, 6, 32);
	JUMPK("s>", "r", a, -7, 64);
	JUMPK("s>=", "r", a, -8, 128);
	JUMPK("s<", "r", a, -9, 256);
	JUMPK("s<=", "r", a, -10, 512);
	/* JMP32 */
	JUMP("==", "w", wa, "w", wb, 1024);
	JUMP("!=", "w", wa, "w", wb, 2048);
	JUMP(">", "w", wa, "w", wb, 4096);
	JUMP(">=", "w", wa, "w", wb, 8192);
	JUMP("<", "w", wa, "w", wb, 16384);
	JUMP("<=", "w", wa, "w", wb, 32768);
	JUMP("s>", "w", wa, "w", wb, 65536);
	JUMP("s>=", "w", wa, "w", wb, 131072);
	JUMP("s<", "w", wa, "w", wb, 262144);
	JUMP("s<=", "w", wa, "w", wb, 524288);
	JUMPK("==", "w", wa, 1, 1024);
	JUMPK("!=", "w", wa, 2, 2048);
	JUMPK(">", "w", wa, 3, 4096);
	JUMPK(">=", "w", wa, 4, 8192);
	JUMPK("<", "w", wa, 5, 16384);
	JUMPK("<=", "w", wa, 6, 32768);
	JUMPK("s>", "w", wa, -7, 65536);
	JUMPK("s>=", "w", wa, -8, 131072);
	JUMPK("s<", "w", wa, -9, 262144);
	JUMPK("s<=", "w", wa, -10, 524288);

	/* compiler-chosen JMP32 from 32-bit comparisons */
	if (swa < -5)
		acc += 1;
	if (wa > wb)
		acc += 2;

	/* atomics on the stack, 64 and 32 bit */
	__sync_fetch_and_add(&slot64, 3);
	__sync_fetch_and_and(&slot64, b);
	__sync_fetch_and_or(&slot64, b);
	__sync_fetch_and_xor(&slot64, b);
	old = __sync_fetch_and_add(&slot64, a);
	old += __sync_fetch_and_and(&slot64, a);
	old += __sync_fetch_and_or(&slot64, a);
	old += __sync_fetch_and_xor(&slot64, a);
	old += __sync_lock_test_and_set(&slot64, old);
	old += __sync_val_compare_and_swap(&slot64, old, a);
	__sync_fetch_and_add(&slot32, 5);
	__sync_fetch_and_or(&slot32, wb);
	old += __sync_fetch_and_add(&slot32, wa);
	old += __sync_fetch_and_xor(&slot32, wa);
	old += __sync_lock_test_and_set(&slot32, (u32)old);
	old += __sync_val_compare_and_swap(&slot32, (u32)old, wa);

	/* ld_imm64 constants */
	acc ^= 0x0123456789abcdefULL;
	acc += 0xfffffffff0000000ULL & old;

	/* legacy packet loads: absolute and indirect */
	acc += load_byte(skb, 12);
	acc += load_half(skb, 12);
	acc += load_word(skb, 26);
	acc += load_byte(skb, wa & 7);
	acc += load_half(skb, wb & 7);
	acc += load_word(skb, (u32)acc & 7);

	acc += bpf_ktime_get_ns();
	return (int)(acc + old + slot64 + slot32 + wa + wb + a + b) & 0xffff;
}

/*
 * raw_insns: hand-written. .byte words are: opcode, dst|src<<4, off (le16),
 * imm (le32). ST: 0x7a/0x62/0x6a/0x72 (dw/w/h/b). JSET: 0x45 (K), 0x4d (X),
 * 0x46 (JMP32 K), 0x4e (JMP32 X).
 */
asm(
"	.pushsection \"kprobe/vfs_read\",\"ax\",@progbits\n"
"	.globl raw_insns\n"
"	.type raw_insns,@function\n"
"raw_insns:\n"
"	r6 = r1\n"
"	.byte 0x7a, 0x0a, 0xf8, 0xff, 0x2a, 0x00, 0x00, 0x00\n" /* *(u64 *)(r10 -8) = 42 */
"	.byte 0x62, 0x0a, 0xf0, 0xff, 0xfe, 0xff, 0xff, 0xff\n" /* *(u32 *)(r10 -16) = -2 */
"	.byte 0x6a, 0x0a, 0xf4, 0xff, 0x34, 0x12, 0x00, 0x00\n" /* *(u16 *)(r10 -12) = 0x1234 */
"	.byte 0x72, 0x0a, 0xf6, 0xff, 0x7f, 0x00, 0x00, 0x00\n" /* *(u8 *)(r10 -10) = 127 */
"	.byte 0x72, 0x0a, 0xf7, 0xff, 0x80, 0x00, 0x00, 0x00\n" /* *(u8 *)(r10 -9) = 128 */
"	r1 = *(u64 *)(r10 - 8)\n"
"	r2 = *(u32 *)(r10 - 16)\n"
"	r3 = *(u16 *)(r10 - 12)\n"
"	r4 = *(u8 *)(r10 - 10)\n"
"	r5 = *(u32 *)(r6 + 0)\n"
"	*(u64 *)(r10 - 24) = r1\n"
"	*(u32 *)(r10 - 28) = r2\n"
"	*(u16 *)(r10 - 30) = r3\n"
"	*(u8 *)(r10 - 31) = r4\n"
"	*(u8 *)(r10 - 32) = r5\n"
"	w0 = 0\n"
"	w7 = -1\n"
"	r8 = -1\n"
"	.byte 0x45, 0x01, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00\n" /* if r1 & 0x1 goto +1 */
"	w0 |= 1\n"
"	.byte 0x4d, 0x21, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00\n" /* if r1 & r2 goto +1 */
"	w0 |= 2\n"
"	.byte 0x46, 0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x80\n" /* if w2 & 0x80000000 goto +1 */
"	w0 |= 4\n"
"	.byte 0x4e, 0x43, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00\n" /* if w3 & w4 goto +1 */
"	w0 |= 8\n"
"	if r1 > r2 goto +2\n"
"	w0 |= 16\n"
"	goto +1\n"
"	w0 |= 32\n"
"	r1 = *(u64 *)(r10 - 24)\n"
"	r2 = *(u32 *)(r10 - 28)\n"
"	r3 = *(u16 *)(r10 - 30)\n"
"	r4 = *(u8 *)(r10 - 31)\n"
"	r1 += r2\n"
"	r3 += r4\n"
"	r1 += r3\n"
"	w1 &= 0xff\n"
"	w0 += w1\n"
"	exit\n"
"	.size raw_insns, .-raw_insns\n"
"	.popsection\n");

char _license[] SEC("license") = "GPL";
