// SPDX-License-Identifier: GPL-2.0
/*
 * dwarf_chain.c: uprobes whose arguments are C variables of the probed program, fetched by a
 * prologue generated from its DWARF (runtime/tests/dwarf_uprobe.rs, probed program
 * tests/dwarf/chain.c).
 *
 *   uprobe//sluice/dwarf_chain:generic_perform_write(file->f_mapping->a_ops, bytes, offset, $err)
 *       the second seed's probe: a member chain through two pointers and two parameters
 *   uprobe//sluice/dwarf_chain:generic_perform_write+0(chunk, bytes, $err)
 *       a local of a lexical block; the test gives the offset of a line where it is live
 *
 * The path and offset are placeholders: section names are fixed when this is compiled, so
 * the test loads each program with its real spec (LoadOptions::specs). The prologue puts
 * the values in r2..r5; each program stores them, in call order, in the array `seen` (the
 * chain program from slot 0, the local one from slot MAX_CALLS), and returns 1 so that the
 * kernel also records the event's sample: its own fetch-args, the test's oracle.
 */
#include "sluice_bpf.h"

#define MAX_CALLS 16

struct bpf_map_def SEC("maps") seen = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = 4 * sizeof(u64),
	.max_entries = 2 * MAX_CALLS,
};

/* [0]: calls seen by the chain program, [1]: by the local program */
struct bpf_map_def SEC("maps") calls = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u64),
	.max_entries = 2,
};

static __always_inline int record(u32 which, u64 a, u64 b, u64 c, u64 d)
{
	u64 *n = bpf_map_lookup_elem(&calls, &which);
	u64 vals[4] = {a, b, c, d};
	u32 slot;

	if (!n)
		return 0;
	slot = (u32)*n;
	*n += 1;
	if (slot >= MAX_CALLS)
		return 1;
	slot += which * MAX_CALLS;
	bpf_map_update_elem(&seen, &slot, vals, BPF_ANY);
	return 1;
}

SEC("uprobe//sluice/dwarf_chain:generic_perform_write(file->f_mapping->a_ops, bytes, offset, $err)")
int chain(struct pt_regs *ctx, void *a_ops, unsigned long bytes, long long offset, long err)
{
	return record(0, (u64)a_ops, bytes, (u64)offset, (u64)err);
}

SEC("uprobe//sluice/dwarf_chain:generic_perform_write+0(chunk, bytes, $err)")
int local(struct pt_regs *ctx, long chunk, unsigned long bytes, long err)
{
	return record(1, (u64)chunk, bytes, (u64)err, 0);
}

char _license[] SEC("license") = "GPL";
u32 _version SEC("version") = 0x060000;
