// SPDX-License-Identifier: GPL-2.0
/*
 * maps_read.c: maps with known contents for `sluice record`'s map printing and the
 * `--metrics` map families (cli/tests/maps.rs, cli/tests/metrics.rs).
 *
 *   tracepoint/syscalls/sys_enter_getppid   for each getppid of the workload
 *   (`target_tgid`, filled by the session), call number n = 1, 2, ...:
 *       calls    HASH {pid, comm} -> u64         +1
 *       totals   PERCPU_ARRAY [0] -> {hits, sum} hits +1, sum += n
 *       ops      HASH enum op -> u64             OP_ODD or OP_EVEN +1
 *       lat      HASH u32 0 -> struct hist       slot log2(n) +1 (slot 0: n < 2)
 *       seq      ARRAY [0] -> u64                n (scratch: the call number)
 *   returns 0: no perf sample, everything is in the maps.
 */
#include "sluice_bpf.h"

#define MAX_SLOTS 26

enum op {
	OP_ODD = 1,
	OP_EVEN = 2,
};

struct call_key {
	u32 pid;
	char comm[16];
};

struct total {
	u64 hits;
	u64 sum;
};

struct hist {
	u32 slots[MAX_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} target_tgid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct call_key);
	__type(value, u64);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct total);
} totals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, enum op);
	__type(value, u64);
} ops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, u32);
	__type(value, struct hist);
} lat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} seq SEC(".maps");

static __always_inline void bump(void *map, const void *key, u64 by)
{
	u64 zero = 0, *v = bpf_map_lookup_elem(map, key);

	if (!v) {
		bpf_map_update_elem(map, key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(map, key);
	}
	if (v)
		__sync_fetch_and_add(v, by);
}

static __always_inline u32 log2l(u64 v)
{
	u32 r = 0;

	for (int i = 0; i < 32 && v > 1; i++) {
		v >>= 1;
		r++;
	}
	return r;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int on_getppid(void *ctx)
{
	u32 zero = 0, tgid = bpf_get_current_pid_tgid() >> 32;
	u32 *want = bpf_map_lookup_elem(&target_tgid, &zero);

	if (!want || *want != tgid)
		return 0;
	u64 *s = bpf_map_lookup_elem(&seq, &zero);
	if (!s)
		return 0;
	u64 n = __sync_fetch_and_add(s, 1) + 1;

	struct call_key k = { .pid = tgid };
	bpf_get_current_comm(k.comm, sizeof(k.comm));
	bump(&calls, &k, 1);

	struct total *t = bpf_map_lookup_elem(&totals, &zero);
	if (t) {
		t->hits += 1;
		t->sum += n;
	}

	enum op op = (n & 1) ? OP_ODD : OP_EVEN;
	bump(&ops, &op, 1);

	struct hist *h = bpf_map_lookup_elem(&lat, &zero);
	if (!h) {
		struct hist empty = {};
		bpf_map_update_elem(&lat, &zero, &empty, BPF_NOEXIST);
		h = bpf_map_lookup_elem(&lat, &zero);
	}
	if (h) {
		u32 slot = log2l(n);
		if (slot < MAX_SLOTS)
			__sync_fetch_and_add(&h->slots[slot], 1);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
