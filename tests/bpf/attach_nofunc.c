// SPDX-License-Identifier: GPL-2.0
/* attach_nofunc.c: fentry on a function no kernel has: not in the kernel's BTF. */
#include "sluice_bpf.h"

SEC("fentry/sluice_no_such_function_in_any_kernel")
int on_nothing(u64 *ctx)
{
	return 0;
}

char _license[] SEC("license") = "GPL";
