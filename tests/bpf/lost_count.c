// SPDX-License-Identifier: GPL-2.0
/*
 * lost_count.c: the oracle of "samples + lost = emitted" (runtime/tests/lost_count.rs).
 *
 *   on_hit, titled "lost_count" (opaque: the test maps it to a uprobe on the workload's function)
 *       counts every hit in `counts[0]`, sends a 16-byte record to `out` and counts how
 *       that went: `counts[1]` written, `counts[2]` refused for lack of room (-ENOSPC:
 *       the kernel counts it as lost), `counts[3]` any other refusal. Returns 1, so the
 *       probe's own sample is recorded (or lost) once per hit too.
 */
#include "sluice_bpf.h"

struct bpf_map_def SEC("maps") counts = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u64),
	.max_entries = 4,
};

struct bpf_map_def SEC("maps") out = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(int),
	.value_size = sizeof(u32),
	.max_entries = 1024,
};

#define ENOSPC 28

static void count(u32 key)
{
	u64 *n = bpf_map_lookup_elem(&counts, &key);

	if (n)
		__sync_fetch_and_add(n, 1);
}

SEC("lost_count")
int on_hit(struct pt_regs *ctx)
{
	struct {
		u64 seq;
		u64 pid_tgid;
	} rec = {};
	long r;

	count(0);
	rec.pid_tgid = bpf_get_current_pid_tgid();
	rec.seq = bpf_ktime_get_ns();
	r = bpf_perf_event_output(ctx, &out, BPF_F_CURRENT_CPU, &rec, sizeof(rec));
	if (r == 0)
		count(1);
	else if (r == -ENOSPC)
		count(2);
	else
		count(3);
	return 1;
}

char _license[] SEC("license") = "GPL";
