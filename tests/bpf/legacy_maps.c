// SPDX-License-Identifier: GPL-2.0
/*
 * legacy_maps.c: a 2015-style object as the first seed's perf consumed it.
 *
 * - SEC("maps") holding four 16-byte struct bpf_map_def (hash, array,
 *   percpu array, perf event array): map symbols at st_value 0, 16, 32, 48.
 * - Program sections in the seed's perf form: "lock_page=lock_page" (event
 *   name = function) and a bare "vfs_fsync" (function only) and a return
 *   probe "vfs_fsync_ret=vfs_fsync%return".
 * - Map lookups/updates: every &map is an ld_imm64 with an R_BPF_64_64
 *   relocation against the map's symbol.
 * - 4-byte "version", "license" GPL.
 */
#include "sluice_bpf.h"

struct bpf_map_def SEC("maps") counts = {
	.type = BPF_MAP_TYPE_HASH,
	.key_size = sizeof(u32),
	.value_size = sizeof(u64),
	.max_entries = 1024,
};

struct bpf_map_def SEC("maps") totals = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u64),
	.max_entries = 4,
};

struct bpf_map_def SEC("maps") percpu_hits = {
	.type = BPF_MAP_TYPE_PERCPU_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u64),
	.max_entries = 1,
};

struct bpf_map_def SEC("maps") events = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(int),
	.value_size = sizeof(u32),
	.max_entries = 64,
};

static __always_inline void bump_total(u32 slot)
{
	u64 *total = bpf_map_lookup_elem(&totals, &slot);

	if (total)
		__sync_fetch_and_add(total, 1);
}

SEC("lock_page=lock_page")
int lock_page_hook(struct pt_regs *ctx)
{
	u32 pid = bpf_get_current_pid_tgid() >> 32;
	u64 one = 1, *count;
	u32 zero = 0;
	u64 *hits;

	count = bpf_map_lookup_elem(&counts, &pid);
	if (count)
		__sync_fetch_and_add(count, 1);
	else
		bpf_map_update_elem(&counts, &pid, &one, BPF_NOEXIST);

	hits = bpf_map_lookup_elem(&percpu_hits, &zero);
	if (hits)
		*hits += 1;

	bump_total(0);
	return 0;
}

SEC("vfs_fsync")
int fsync_entry(struct pt_regs *ctx)
{
	u64 now = bpf_ktime_get_ns();

	bump_total(1);
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &now, sizeof(now));
	return 0;
}

SEC("vfs_fsync_ret=vfs_fsync%return")
int fsync_return(struct pt_regs *ctx)
{
	u32 pid = bpf_get_current_pid_tgid() >> 32;

	bump_total(2);
	bpf_map_delete_elem(&counts, &pid);
	return 0;
}

char _license[] SEC("license") = "GPL";
u32 _version SEC("version") = 0x040100;
