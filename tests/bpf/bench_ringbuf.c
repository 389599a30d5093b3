// SPDX-License-Identifier: GPL-2.0
/*
 * bench_ringbuf.c: sluice's twin of the `ringbuf` peer's drain.bpf.c (tp_ring),
 * for runtime/benches/vs_ringbuf.sh: the BPF ring buffer row.
 *
 *   tracepoint/syscalls/sys_enter_getppid   for the workload (target_tgid, filled
 *                                            by the session) sends a 32-byte
 *                                            struct rec through the BPF ring
 *                                            buffer `rb` (256 KiB, as the peer's)
 *                                            and returns 0
 *
 * Same record, same helpers, same accounting as the peer: stats[0] counts hits
 * (and numbers the records), stats[1] successful outputs, stats[2] failed ones
 * (ring full: records dropped). `rec_type` is never used by the program: it
 * puts struct rec in the object's BTF (as libbpf-tools' map value types do), so
 * `sluice record` decodes the records (the decode-cost rows of the bench).
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

#define BPF_MAP_TYPE_RINGBUF 27

static long (*bpf_ringbuf_output)(void *ringbuf, void *data, u64 size, u64 flags) = (void *)130;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 4096);
} rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct rec);
} rec_type SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_getppid")
int tp_ring(void *ctx)
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
	err = bpf_ringbuf_output(&rb, &r, sizeof(r), 0);
	k = err ? 2 : 1;
	v = bpf_map_lookup_elem(&stats, &k);
	if (v)
		__sync_fetch_and_add(v, 1);
	return 0;
}

char _license[] SEC("license") = "GPL";
