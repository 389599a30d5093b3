// SPDX-License-Identifier: GPL-2.0
/*
 * maps_36.c: legacy SEC("maps") with iproute2's 36-byte struct bpf_elf_map
 * (type, size_key, size_value, max_elem, flags, id, pinning, inner_id,
 * inner_idx). Three maps: symbols at st_value 0, 36, 72; section size 108.
 * "outer" is an ARRAY_OF_MAPS whose inner_idx = 1 names the template map
 * "inner" by its index in the section (st_value / 36), as iproute2 did;
 * "inner" is the template (never referenced by code: no relocation names
 * it); "plain" is unrelated, pinned PIN_OBJECT_NS with id 2. inner_idx is
 * only meaningful for ARRAY_OF_MAPS/HASH_OF_MAPS.
 */
#include "sluice_bpf.h"

struct bpf_elf_map_36 SEC("maps") outer = {
	.type = BPF_MAP_TYPE_ARRAY_OF_MAPS,
	.size_key = sizeof(u32),
	.size_value = sizeof(u32),
	.max_elem = 4,
	.flags = 0,
	.id = 0,
	.pinning = PIN_NONE,
	.inner_id = 0,
	.inner_idx = 1,
};

struct bpf_elf_map_36 SEC("maps") inner = {
	.type = BPF_MAP_TYPE_ARRAY,
	.size_key = sizeof(u32),
	.size_value = sizeof(u64),
	.max_elem = 8,
	.flags = 0,
	.id = 0,
	.pinning = PIN_NONE,
	.inner_id = 0,
	.inner_idx = 0,
};

struct bpf_elf_map_36 SEC("maps") plain = {
	.type = BPF_MAP_TYPE_HASH,
	.size_key = sizeof(u64),
	.size_value = sizeof(u64),
	.max_elem = 256,
	.flags = 0,
	.id = 2,
	.pinning = PIN_OBJECT_NS,
	.inner_id = 0,
	.inner_idx = 0,
};

SEC("kprobe/vfs_open")
int open_entry(struct pt_regs *ctx)
{
	u32 outer_key = 0, inner_key = 3;
	u64 pid_tgid = bpf_get_current_pid_tgid();
	u64 now = bpf_ktime_get_ns();
	void *in;
	u64 *v;

	in = bpf_map_lookup_elem(&outer, &outer_key);
	if (in) {
		v = bpf_map_lookup_elem(in, &inner_key);
		if (v)
			*v = now;
	}
	bpf_map_update_elem(&plain, &pid_tgid, &now, BPF_ANY);
	return 0;
}

char _license[] SEC("license") = "GPL";
u32 _version SEC("version") = 0x040c00;
