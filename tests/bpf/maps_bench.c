// SPDX-License-Identifier: GPL-2.0
/*
 * maps_bench.c: a 10,000-entry hash map pinned by name (LIBBPF_PIN_BY_NAME), for the
 * map dump and scrape benchmarks (cli/benches/maps.rs): the benchmark fills the pinned
 * map from user space, `sluice record --pin-root DIR` reuses it and prints it at exit
 * or serves it to scrapes.
 *
 *   tracepoint/syscalls/sys_enter_getppid   counts the workload's getppid at key
 *                                           0 (`target_tgid`)
 */
#include "sluice_bpf.h"

#define LIBBPF_PIN_BY_NAME 1

struct flow {
	u32 pid;
	char comm[16];
};

struct stat {
	u64 packets;
	u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} target_tgid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 10000);
	__type(key, struct flow);
	__type(value, struct stat);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} sluice_bench_flows SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_getppid")
int on_getppid(void *ctx)
{
	u32 zero = 0, tgid = bpf_get_current_pid_tgid() >> 32;
	u32 *want = bpf_map_lookup_elem(&target_tgid, &zero);
	struct flow k = {};
	struct stat *s;

	if (!want || *want != tgid)
		return 0;
	k.pid = tgid;
	s = bpf_map_lookup_elem(&sluice_bench_flows, &k);
	if (s)
		__sync_fetch_and_add(&s->packets, 1);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
