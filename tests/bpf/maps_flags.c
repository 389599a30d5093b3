// SPDX-License-Identifier: GPL-2.0
/*
 * maps_flags.c: legacy SEC("maps") with 20-byte definitions
 * (type, key_size, value_size, max_entries, map_flags), as samples/bpf and
 * libbpf < 0.7 wrote them. Three maps: symbols at st_value 0, 20, 40;
 * section size 60 (not a multiple of 16: a 16-byte-only reader must refuse
 * or infer 20 from 60 / 3 symbols).
 */
#include "sluice_bpf.h"

struct bpf_map_def_flags SEC("maps") start_ns = {
	.type = BPF_MAP_TYPE_HASH,
	.key_size = sizeof(u32),
	.value_size = sizeof(u64),
	.max_entries = 10240,
	.map_flags = BPF_F_NO_PREALLOC,
};

struct bpf_map_def_flags SEC("maps") lru_seen = {
	.type = BPF_MAP_TYPE_LRU_HASH,
	.key_size = sizeof(u64),
	.value_size = sizeof(u32),
	.max_entries = 4096,
	.map_flags = BPF_F_NO_COMMON_LRU,
};

struct bpf_map_def_flags SEC("maps") latency_hist = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u64),
	.max_entries = 64,
	.map_flags = 0,
};

SEC("kprobe/vfs_read")
int read_entry(struct pt_regs *ctx)
{
	u64 pid_tgid = bpf_get_current_pid_tgid();
	u32 tid = (u32)pid_tgid;
	u64 now = bpf_ktime_get_ns();
	u32 one = 1;

	bpf_map_update_elem(&start_ns, &tid, &now, BPF_ANY);
	bpf_map_update_elem(&lru_seen, &pid_tgid, &one, BPF_ANY);
	return 0;
}

SEC("kretprobe/vfs_read")
int read_return(struct pt_regs *ctx)
{
	u32 tid = (u32)bpf_get_current_pid_tgid();
	u64 *start = bpf_map_lookup_elem(&start_ns, &tid);
	u64 delta, *slot;
	u32 bucket = 0;

	if (!start)
		return 0;
	delta = (bpf_ktime_get_ns() - *start) / 1000;
	bpf_map_delete_elem(&start_ns, &tid);
	while (delta > 1 && bucket < 63) {
		delta >>= 1;
		bucket++;
	}
	slot = bpf_map_lookup_elem(&latency_hist, &bucket);
	if (slot)
		__sync_fetch_and_add(slot, 1);
	return 0;
}

char _license[] SEC("license") = "GPL";
u32 _version SEC("version") = 0x040e00;
