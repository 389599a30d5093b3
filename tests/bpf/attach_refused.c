// SPDX-License-Identifier: GPL-2.0
/*
 * attach_refused.c: fentry/do_unlinkat, a BPF trampoline: attached where the kernel makes
 * them (amd64 guests), refused where it does not (this host: EPERM even to root).
 */
#include "sluice_bpf.h"

SEC("fentry/do_unlinkat")
int on_unlinkat(u64 *ctx)
{
	return 0;
}

char _license[] SEC("license") = "GPL";
