// SPDX-License-Identifier: GPL-2.0
/*
 * bench_drain.c: sluice's twin of the `ringbuf` peer's drain.bpf.c (tp_perf),
 * for runtime/benches/vs_ringbuf.sh.
 *
 *   tracepoint/syscalls/sys_enter_getppid   for the workload (target_tgid, filled
 *                                            by the session) sends a 32-byte
 *                                            struct rec through the perf event
 *                                            array `pb` and returns 0, so the
 *                                            tracepoint itself yields no sample
 *
 * Same record, same helpers, same accounting as the peer: stats[0] counts hits
 * (and numbers the records), stats[1] successful outputs, stats[2] failed ones
 * (ring full: the records the kernel then reports LOST).
 */
#include "sluice_bpf.h"

struct rec {
	u32 pid;
	u32 cpu;
	u64 seq; /* hits so far: gaps show losses */
	u64 ts;  /* bpf_ktime_get_ns() */
	u64 pad;
}; /* 32 bytes */

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

struct bpf_map_def SEC("maps") pb = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(int),
	.value_size = sizeof(u32),
	.max_entries = 1024,
};

SEC("tracepoint/syscalls/sys_enter_getppid")
int tp_perf(void *ctx)
{
	u32 k = 0;
	u32 *tgt = bpf_map_lookup_elem(&target_tgid, &k);
	u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct rec r;
	u64 *hits, *v;
	long err;

	if (!tgt || *tgt != tgid)
		return 0;
	hits = bpf_map_lookup_elem(&stats, &k);
	if (!hits)
		return 0;
	r.pid = tgid;
	r.cpu = bpf_get_smp_processor_id();
	r.seq = __sync_fetch_and_add(hits, 1);
	r.ts = bpf_ktime_get_ns();
	r.pad = 0;
	err = bpf_perf_event_output(ctx, &pb, BPF_F_CURRENT_CPU, &r, sizeof(r));
	k = err ? 2 : 1;
	v = bpf_map_lookup_elem(&stats, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char _license[] SEC("license") = "GPL";
