// SPDX-License-Identifier: GPL-2.0
/*
 * shared_tp.c: a filter that accepts everything on a tracepoint few programs use, for the
 * tests of programs sharing a tracepoint (runtime/tests/shared_tracepoint.rs,
 * cli/tests/shared_tracepoint.rs): attached twice, or beside another program, the
 * kernel runs them all for every hit.
 *
 *   tracepoint/syscalls/sys_enter_getpriority   returns 1 (never drops a sample)
 */
#include "sluice_bpf.h"

SEC("tracepoint/syscalls/sys_enter_getpriority")
int shared_accept(void *ctx)
{
	return 1;
}

char _license[] SEC("license") = "GPL";
