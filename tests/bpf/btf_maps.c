// SPDX-License-Identifier: GPL-2.0
/*
 * btf_maps.c: BTF-defined maps with every attribute libbpf reads.
 *
 * __uint(type/max_entries/map_flags/numa_node/key_size/value_size/pinning),
 * __type(key/value) with typedef'd and struct types, a map-in-map
 * (ARRAY_OF_MAPS and HASH_OF_MAPS: __array(values, struct { inner def })),
 * a prog array with __array(values, int (void *)), sizes given both ways.
 * No program uses the maps: the object loads with any loader.
 */
#include "sluice_bpf.h"

#define __array(name, val) typeof(val) *name[]
#define LIBBPF_PIN_BY_NAME 1
#define BPF_MAP_TYPE_RINGBUF 27
#define BPF_MAP_TYPE_BLOOM_FILTER 30

struct flow {
	u32 saddr, daddr;
	u16 sport, dport;
	u8 proto;
};

struct stats {
	u64 packets;
	u64 bytes;
};

typedef struct stats stats_t;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct flow);
	__type(value, stats_t);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(key_size, 8);
	__uint(value_size, 16);
	__uint(max_entries, 128);
	__uint(map_flags, BPF_F_NUMA_NODE);
	__uint(numa_node, 1);
} sized SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} pinned SEC(".maps");

struct inner_array {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, u32);
	__type(value, u32);
};

struct inner_array inner_one SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 8);
	__type(key, u32);
	__array(values, struct inner_array);
} outer_array SEC(".maps") = {
	.values = { [0] = &inner_one },
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 32);
	__type(key, u64);
	__array(values, struct {
		__uint(type, BPF_MAP_TYPE_HASH);
		__uint(max_entries, 64);
		__type(key, u32);
		__type(value, struct stats);
	});
} outer_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 4);
	__uint(key_size, sizeof(u32));
	__array(values, int (void *));
} jumps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} ring SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 3);
	__type(key, int);
	__type(value, char[24]);
} scratch SEC(".maps");

SEC("kprobe/do_nanosleep")
int maps_probe(void *ctx)
{
	return 0;
}

char _license[] SEC("license") = "GPL";
