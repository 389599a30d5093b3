// SPDX-License-Identifier: GPL-2.0
/*
 * attach_types.c: programs attached through BPF links and PMU probes, each counting
 * its hits by the workload (the pid at key 0 of target_tgid) into hits[SLOT]:
 *
 *   tp_btf/sched_process_exec   BTF-typed raw tracepoint (attach_btf_id of the
 *                               kernel's btf_trace_sched_process_exec)
 *   raw_tp/sys_enter            raw tracepoint by name (BPF_RAW_TRACEPOINT_OPEN)
 *   raw_tracepoint/sched_process_exit
 *   pmu_uprobe                  a title: the test maps it to uprobe/EXE:FUNC, which goes
 *                               through the uprobe PMU (the program always returns 0)
 *
 * Every program returns 0.
 */
#include "sluice_bpf.h"

struct bpf_map_def SEC("maps") target_tgid = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u32),
	.max_entries = 1,
};

struct bpf_map_def SEC("maps") hits = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u64),
	.max_entries = 8,
};

enum slot {
	HIT_EXEC = 0,
	HIT_SYS_ENTER = 1,
	HIT_EXIT = 2,
	HIT_UPROBE = 3,
	HIT_ANY_EXEC = 4,
};

static __always_inline void count(u32 slot)
{
	u32 key = 0;
	u32 *tgid = bpf_map_lookup_elem(&target_tgid, &key);
	u64 *n;

	if (!tgid || (u32)(bpf_get_current_pid_tgid() >> 32) != *tgid)
		return;
	n = bpf_map_lookup_elem(&hits, &slot);
	if (n)
		__sync_fetch_and_add(n, 1);
}

SEC("tp_btf/sched_process_exec")
int on_exec(u64 *ctx)
{
	u32 slot = HIT_ANY_EXEC;
	u64 *n = bpf_map_lookup_elem(&hits, &slot);

	if (n)
		__sync_fetch_and_add(n, 1);
	count(HIT_EXEC);
	return 0;
}

SEC("raw_tp/sys_enter")
int on_sys_enter(u64 *ctx)
{
	count(HIT_SYS_ENTER);
	return 0;
}

SEC("raw_tracepoint/sched_process_exit")
int on_exit(u64 *ctx)
{
	count(HIT_EXIT);
	return 0;
}

SEC("pmu_uprobe")
int on_uprobe(struct pt_regs *ctx)
{
	count(HIT_UPROBE);
	return 0;
}

char _license[] SEC("license") = "GPL";
