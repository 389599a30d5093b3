// SPDX-License-Identifier: GPL-2.0
/* attach_multi.c: a kprobe.multi program (BPF_TRACE_KPROBE_MULTI needs CONFIG_FPROBE). */
#include "sluice_bpf.h"

SEC("kprobe.multi/vfs_read*")
int on_reads(struct pt_regs *ctx)
{
	return 0;
}

char _license[] SEC("license") = "GPL";
