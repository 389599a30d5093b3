// SPDX-License-Identifier: GPL-2.0
/*
 * maps_iproute2.c: legacy SEC("maps") with iproute2's first 28-byte
 * struct bpf_elf_map (type, size_key, size_value, max_elem, flags, id,
 * pinning). Two maps: symbols at st_value 0 and 28; section size 56.
 * One is pinned PIN_GLOBAL_NS with id 1 (a loader that does not pin may
 * ignore id/pinning but must not misread the next map).
 */
#include "sluice_bpf.h"

struct bpf_elf_map_28 SEC("maps") pkt_count = {
	.type = BPF_MAP_TYPE_ARRAY,
	.size_key = sizeof(u32),
	.size_value = sizeof(u64),
	.max_elem = 2,
	.flags = 0,
	.id = 1,
	.pinning = PIN_GLOBAL_NS,
};

struct bpf_elf_map_28 SEC("maps") per_cpu = {
	.type = BPF_MAP_TYPE_PERCPU_HASH,
	.size_key = sizeof(u32),
	.size_value = sizeof(u64),
	.max_elem = 128,
	.flags = BPF_F_NO_PREALLOC,
	.id = 0,
	.pinning = PIN_NONE,
};

SEC("kprobe/vfs_write")
int write_entry(struct pt_regs *ctx)
{
	u32 key = 1;
	u32 cpu = bpf_get_smp_processor_id();
	u64 init = 1, *v;

	v = bpf_map_lookup_elem(&pkt_count, &key);
	if (v)
		__sync_fetch_and_add(v, 1);
	v = bpf_map_lookup_elem(&per_cpu, &cpu);
	if (v)
		*v += 1;
	else
		bpf_map_update_elem(&per_cpu, &cpu, &init, BPF_NOEXIST);
	return 0;
}

char _license[] SEC("license") = "GPL";
u32 _version SEC("version") = 0x040400;
