// SPDX-License-Identifier: GPL-2.0
/*
 * perf_data_filter.c: the filters of cli/tests/perf_data.rs (built by tests/bpf/build.sh
 * next to this file, outside tests/bpf so the open digest's fixture set stays as it is).
 *
 *   tracepoint/syscalls/sys_enter_getpgid   the workload's getpgid calls: sends a note
 *                                           ("getpgid\0" and the pid argument) to `notes`
 *                                           and returns 1, so the tracepoint's own sample
 *                                           is recorded too
 *   any_call (opaque title "any": the test maps it to uprobe/BIN:FUNC(v))
 *                                           every call
 */
#include "../bpf/sluice_bpf.h"

struct bpf_map_def SEC("maps") notes = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(int),
	.value_size = sizeof(u32),
	.max_entries = 1024,
};

/* The workload's pid, filled by the session (0 system-wide). */
struct bpf_map_def SEC("maps") target_tgid = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u32),
	.max_entries = 1,
};

/* Layout from tracefs events/syscalls/sys_enter_getpgid/format */
struct sys_enter_getpgid_args {
	u16 common_type;
	u8 common_flags;
	u8 common_preempt_count;
	s32 common_pid;
	s32 syscall_nr;
	u32 pad;
	u64 pid;
};

struct note {
	char tag[8];
	u64 pid;
};

SEC("tracepoint/syscalls/sys_enter_getpgid")
int getpgid_calls(struct sys_enter_getpgid_args *args)
{
	u32 key = 0;
	u32 *target = bpf_map_lookup_elem(&target_tgid, &key);
	struct note n = { .tag = "getpgid", .pid = args->pid };

	if (target && *target && *target != bpf_get_current_pid_tgid() >> 32)
		return 0;
	bpf_perf_event_output(args, &notes, BPF_F_CURRENT_CPU, &n, sizeof(n));
	return 1;
}

SEC("any")
int any_call(void *ctx)
{
	return 1;
}

char _license[] SEC("license") = "GPL";
