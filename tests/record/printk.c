// SPDX-License-Identifier: GPL-2.0
/*
 * printk.c: bpf_trace_printk lines recorded with the samples (cli/tests/record_who.rs).
 *
 *   raw_tp/sched_process_exec   every exec on the machine: prints "who exec PID\n" with
 *                                bpf_trace_printk. A raw tracepoint runs outside perf's
 *                                handlers, so its line reaches the perf event of
 *                                bpf_trace:bpf_trace_printk (who.c's, printed from a
 *                                perf tracepoint handler, does not: perf's recursion guard).
 */
#include "../bpf/sluice_bpf.h"

SEC("raw_tp/sched_process_exec")
int exec_printk(u64 *ctx)
{
	char fmt[] = "who exec %d\n";
	u32 pid = bpf_get_current_pid_tgid() >> 32;

	bpf_trace_printk(fmt, sizeof(fmt), pid);
	return 0;
}

char _license[] SEC("license") = "GPL";
