// SPDX-License-Identifier: GPL-2.0
/*
 * no_version.c: the smallest edge object. A "license" section and one
 * program, but no "version" section (allowed: kernels >= 5.0 ignore
 * kern_version for kprobes) and no maps section at all.
 */
#include "sluice_bpf.h"

SEC("kprobe/do_nanosleep")
int nanosleep_entry(struct pt_regs *ctx)
{
	return 0;
}

char _license[] SEC("license") = "Dual MIT/GPL";
