// SPDX-License-Identifier: GPL-2.0
/*
 * dwarf_types.c: uprobes whose arguments are C variables of every integer width and sign
 * (cli/tests/record_dwarf_types.rs, probed program tests/dwarf/types.c).
 *
 *   uprobe//sluice/dwarf_types:small(sc, uc, ss, us)             four parameters
 *   uprobe//sluice/dwarf_types:wide(i, u, l, ul)                  four parameters
 *   uprobe//sluice/dwarf_types:chain(o->in->c, o->in->us, o->in->l, $err)
 *   uprobe//sluice/dwarf_types:block(n, g_total, $err)            a parameter, a global
 *   uprobe//sluice/dwarf_types:block+0(sq, n, $err)               a local of a lexical
 *       block; the test gives the offset of a line where it is live
 *
 * The path (and, for a local, the offset) are placeholders: the test gives each program
 * its real spec with `sluice record --event PROG=SPEC`. The prologue passes the values in
 * r2..r5, sign-extended to 64 bits when the C type is signed, zero-extended otherwise
 * (only as many registers as the spec has arguments: the others are never read); every
 * program sends its arguments as u64 words, in order, through the perf
 * event array `out` (bpf_perf_event_output), and returns 1, so that the kernel records
 * the uprobe's own sample too: its fetch-args, the same values read by the tracer. The
 * record output prints the two side by side.
 */
#include "sluice_bpf.h"

struct bpf_map_def SEC("maps") out = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(int),
	.value_size = sizeof(u32),
	.max_entries = 1024,
};

static __always_inline int send(struct pt_regs *ctx, u64 a, u64 b, u64 c, u64 d)
{
	u64 words[4] = {a, b, c, d};

	bpf_perf_event_output(ctx, &out, BPF_F_CURRENT_CPU, words, sizeof(words));
	return 1;
}

static __always_inline int send3(struct pt_regs *ctx, u64 a, u64 b, u64 c)
{
	u64 words[3] = {a, b, c};

	bpf_perf_event_output(ctx, &out, BPF_F_CURRENT_CPU, words, sizeof(words));
	return 1;
}

SEC("uprobe//sluice/dwarf_types:small(sc, uc, ss, us)")
int p_small(struct pt_regs *ctx, u64 a, u64 b, u64 c, u64 d)
{
	return send(ctx, a, b, c, d);
}

SEC("uprobe//sluice/dwarf_types:wide(i, u, l, ul)")
int p_wide(struct pt_regs *ctx, u64 a, u64 b, u64 c, u64 d)
{
	return send(ctx, a, b, c, d);
}

SEC("uprobe//sluice/dwarf_types:chain(o->in->c, o->in->us, o->in->l, $err)")
int p_chain(struct pt_regs *ctx, u64 a, u64 b, u64 c, u64 d)
{
	return send(ctx, a, b, c, d);
}

SEC("uprobe//sluice/dwarf_types:block(n, g_total, $err)")
int p_block(struct pt_regs *ctx, u64 a, u64 b, u64 c)
{
	return send3(ctx, a, b, c);
}

SEC("uprobe//sluice/dwarf_types:block+0(sq, n, $err)")
int p_local(struct pt_regs *ctx, u64 a, u64 b, u64 c)
{
	return send3(ctx, a, b, c);
}

char _license[] SEC("license") = "GPL";
u32 _version SEC("version") = 0x060000;
