// SPDX-License-Identifier: GPL-2.0
/*
 * sampling.c: a perf_event program (a sampling event per CPU, -F HZ) that sends the CPU
 * it runs on for every sample; and a tracepoint program reading a counter of a
 * --pmu map with bpf_perf_event_read_value.
 *
 * - on_sample (SEC("perf_event")): one bpf-output record { cpu } per sample.
 * - read_counter (SEC("?tracepoint/syscalls/sys_enter_kill"), chosen with --prog): for
 *   each kill(2) of the workload (its tgid in target_tgid), the counter of this CPU in
 *   `counters` (--pmu counters=EVENT): { cpu, err, counter, enabled, running }.
 */
#include "sluice_bpf.h"

struct bpf_perf_event_value {
	u64 counter;
	u64 enabled;
	u64 running;
};

static long (*bpf_perf_event_read_value)(void *map, u64 flags, void *buf,
					 u32 buf_size) = (void *)55;

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
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} counters SEC(".maps");

SEC("perf_event")
int on_sample(void *ctx)
{
	u32 cpu = bpf_get_smp_processor_id();

	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &cpu, sizeof(cpu));
	return 0;
}

struct reading {
	u32 cpu;
	s32 err;
	struct bpf_perf_event_value v;
};

SEC("?tracepoint/syscalls/sys_enter_kill")
int read_counter(void *ctx)
{
	u32 zero = 0, *tgid = bpf_map_lookup_elem(&target_tgid, &zero);
	struct reading r = {};

	if (!tgid || (u32)(bpf_get_current_pid_tgid() >> 32) != *tgid)
		return 0;
	r.cpu = bpf_get_smp_processor_id();
	r.err = bpf_perf_event_read_value(&counters, BPF_F_CURRENT_CPU, &r.v, sizeof(r.v));
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &r, sizeof(r));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
