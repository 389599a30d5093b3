// SPDX-License-Identifier: GPL-2.0
/*
 * pinned.c: a map pinned by name (LIBBPF_PIN_BY_NAME): sluice_pinned lives at
 * ROOT/sluice_pinned and is reused by the next run. Each kill(2) of the workload
 * (syscalls/sys_enter_kill, its tgid in target_tgid) adds one to slot 0 and sends the
 * new total: a second run goes on counting where the first stopped.
 */
#include "sluice_bpf.h"

#define LIBBPF_PIN_BY_NAME 1

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} target_tgid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, u32);
	__type(value, u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_pinned SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_kill")
int count_kill(void *ctx)
{
	u32 zero = 0, *tgid = bpf_map_lookup_elem(&target_tgid, &zero);
	u64 *total, now;

	if (!tgid || (u32)(bpf_get_current_pid_tgid() >> 32) != *tgid)
		return 0;
	total = bpf_map_lookup_elem(&sluice_pinned, &zero);
	if (!total)
		return 0;
	now = __sync_fetch_and_add(total, 1) + 1;
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &now, sizeof(now));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
