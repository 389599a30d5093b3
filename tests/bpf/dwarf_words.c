// SPDX-License-Identifier: GPL-2.0
/*
 * dwarf_words.c: one uprobe program whose four arguments come from a prologue generated
 * from the probed program's DWARF, sent on as u64 words (cli/tests/record_dwarf_inline.rs,
 * probed program tests/dwarf/inline.c; cli/tests/record_dwarf_pie.rs, tests/dwarf/types.c).
 *
 *   uprobe//sluice/dwarf_words:f(a, b, c, d)
 *
 * The spec is a placeholder: the tests give the program its real one with
 * `sluice record --event p_words=SPEC`, which must name exactly four values (`$err`
 * counts): the program reads r2..r5. It sends them through the perf event array `out`
 * (bpf_perf_event_output) and returns 1, so the kernel records the uprobe's own sample
 * too: its fetch-args, the same values read by the tracer.
 */
#include "sluice_bpf.h"

struct bpf_map_def SEC("maps") out = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(int),
	.value_size = sizeof(u32),
	.max_entries = 1024,
};

SEC("uprobe//sluice/dwarf_words:f(a, b, c, d)")
int p_words(struct pt_regs *ctx, u64 a, u64 b, u64 c, u64 d)
{
	u64 words[4] = {a, b, c, d};

	bpf_perf_event_output(ctx, &out, BPF_F_CURRENT_CPU, words, sizeof(words));
	return 1;
}

char _license[] SEC("license") = "GPL";
u32 _version SEC("version") = 0x060000;
