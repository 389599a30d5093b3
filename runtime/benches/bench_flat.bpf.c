// SPDX-License-Identifier: GPL-2.0
/*
 * bench_flat.bpf.c: the flat-cost workload of runtime/benches/vs_ringbuf.sh (issue 17:
 * "4 KiB records at most 1.5x the per-event CPU of 32-byte ones; 8 busy rings per CPU
 * at most 1.2x one ring"). Built by the script (with -I tests/bpf), not a fixture.
 *
 * As bench_drain.c (same struct rec at the front, same stats), but each getppid of the
 * workload sends `size` bytes (32..4096) through one of eight perf event arrays, pb0 ..
 * pb7, in turn over the first `rings` (1..8): set both with --set (ring_drain's
 * NAME=VALUE). All eight maps get their rings whatever `rings` is, so one busy ring and
 * eight are drained by the same set of rings.
 */
#include "sluice_bpf.h"

struct rec {
	u32 pid;
	u32 cpu;
	u64 seq;
	u64 ts;
	u64 pad;
};

const volatile u32 size = 32;
const volatile u32 rings = 1;

struct bpf_map_def SEC("maps") target_tgid = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u32),
	.max_entries = 1,
};

struct bpf_map_def SEC("maps") stats = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u64),
	.max_entries = 3,
};

/* The record, built in a per-CPU value: 4 KiB do not fit the stack. */
struct bpf_map_def SEC("maps") buf = {
	.type = BPF_MAP_TYPE_PERCPU_ARRAY,
	.key_size = sizeof(u32),
	.value_size = 4096,
	.max_entries = 1,
};

#define PB(n)                                                                  \
	struct bpf_map_def SEC("maps") pb##n = {                               \
		.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,                         \
		.key_size = sizeof(int),                                       \
		.value_size = sizeof(u32),                                     \
		.max_entries = 1024,                                           \
	}
PB(0);
PB(1);
PB(2);
PB(3);
PB(4);
PB(5);
PB(6);
PB(7);

SEC("tracepoint/syscalls/sys_enter_getppid")
int tp_flat(void *ctx)
{
	u32 k = 0;
	u32 *tgt = bpf_map_lookup_elem(&target_tgid, &k);
	u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct rec *r;
	u64 *hits, *v, n = size;
	long err;

	if (!tgt || *tgt != tgid)
		return 0;
	hits = bpf_map_lookup_elem(&stats, &k);
	r = bpf_map_lookup_elem(&buf, &k);
	if (!hits || !r)
		return 0;
	r->pid = tgid;
	r->cpu = bpf_get_smp_processor_id();
	r->seq = __sync_fetch_and_add(hits, 1);
	r->ts = bpf_ktime_get_ns();
	r->pad = 0;
	if (n < sizeof(*r))
		n = sizeof(*r);
	if (n > 4096)
		n = 4096;
	switch (rings > 1 && rings <= 8 ? r->seq % rings : 0) {
	case 0: err = bpf_perf_event_output(ctx, &pb0, BPF_F_CURRENT_CPU, r, n); break;
	case 1: err = bpf_perf_event_output(ctx, &pb1, BPF_F_CURRENT_CPU, r, n); break;
	case 2: err = bpf_perf_event_output(ctx, &pb2, BPF_F_CURRENT_CPU, r, n); break;
	case 3: err = bpf_perf_event_output(ctx, &pb3, BPF_F_CURRENT_CPU, r, n); break;
	case 4: err = bpf_perf_event_output(ctx, &pb4, BPF_F_CURRENT_CPU, r, n); break;
	case 5: err = bpf_perf_event_output(ctx, &pb5, BPF_F_CURRENT_CPU, r, n); break;
	case 6: err = bpf_perf_event_output(ctx, &pb6, BPF_F_CURRENT_CPU, r, n); break;
	default: err = bpf_perf_event_output(ctx, &pb7, BPF_F_CURRENT_CPU, r, n); break;
	}
	k = err ? 2 : 1;
	v = bpf_map_lookup_elem(&stats, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char _license[] SEC("license") = "GPL";
