// SPDX-License-Identifier: GPL-2.0
/*
 * who.c: who produced a sample (cli/tests/record_who.rs).
 *
 *   tracepoint/syscalls/sys_exit_execve   every successful exec on the machine: returns 1
 *                                          (a tracepoint sample, named by its new comm)
 *                                          and prints "who exec PID\n" with
 *                                          bpf_trace_printk; sends the pid to `out`
 *                                          (bpf-output: opened system-wide, so other
 *                                          processes' execs reach the ring too).
 */
#include "../bpf/sluice_bpf.h"

struct bpf_map_def SEC("maps") out = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u32),
	.max_entries = 64,
};

struct exit_args {
	u64 common;
	s32 nr;
	s64 ret;
};

SEC("tracepoint/syscalls/sys_exit_execve")
int exec_exit(struct exit_args *args)
{
	char fmt[] = "who exec %d\n";
	u32 pid = bpf_get_current_pid_tgid() >> 32;

	if (args->ret != 0)
		return 0;
	bpf_trace_printk(fmt, sizeof(fmt), pid);
	bpf_perf_event_output(args, &out, BPF_F_CURRENT_CPU, &pid, sizeof(pid));
	return 1;
}

char _license[] SEC("license") = "GPL";
