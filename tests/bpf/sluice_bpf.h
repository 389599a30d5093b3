/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * sluice_bpf.h: the fixtures' own tiny BPF header.
 *
 * Written for the sluice test fixtures so that they depend on no system
 * header (no vmlinux.h, no <linux/bpf.h>, no libbpf headers): the objects
 * then come out byte-identical whatever libbpf/linux-libc-dev is installed.
 * Constants are the kernel's UAPI values (include/uapi/linux/bpf.h).
 */
#ifndef SLUICE_BPF_H
#define SLUICE_BPF_H

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef signed char s8;
typedef short s16;
typedef int s32;
typedef long long s64;

#define NULL ((void *)0)

#define SEC(name) __attribute__((section(name), used))
#define __noinline __attribute__((noinline))
#define __always_inline inline __attribute__((always_inline))

/* BTF-defined map attributes (same encoding libbpf expects). */
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
#define __array(name, val) typeof(val) *name[]

/* enum bpf_map_type */
#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PROG_ARRAY 3
#define BPF_MAP_TYPE_PERF_EVENT_ARRAY 4
#define BPF_MAP_TYPE_PERCPU_HASH 5
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_STACK_TRACE 7
#define BPF_MAP_TYPE_LRU_HASH 9
#define BPF_MAP_TYPE_ARRAY_OF_MAPS 12
#define BPF_MAP_TYPE_HASH_OF_MAPS 13

/* map_flags */
#define BPF_F_NO_PREALLOC (1U << 0)
#define BPF_F_NO_COMMON_LRU (1U << 1)
#define BPF_F_NUMA_NODE (1U << 2)
#define BPF_F_RDONLY_PROG (1U << 7)

/* map update flags */
#define BPF_ANY 0
#define BPF_NOEXIST 1
#define BPF_EXIST 2

/* bpf_perf_event_output flags: "the CPU we run on" */
#define BPF_F_CURRENT_CPU 0xffffffffULL

/* iproute2 pinning (bpf_elf.h) */
#define PIN_NONE 0
#define PIN_OBJECT_NS 1
#define PIN_GLOBAL_NS 2

/*
 * Legacy map definitions, all in SEC("maps"), one struct per map.
 * The loader infers the definition size as section size / map symbols.
 */
/* 16 bytes: the seed's (2015, perf's first libbpf) */
struct bpf_map_def {
	u32 type;
	u32 key_size;
	u32 value_size;
	u32 max_entries;
};

/* 20 bytes: samples/bpf and libbpf before 0.7, with map_flags */
struct bpf_map_def_flags {
	u32 type;
	u32 key_size;
	u32 value_size;
	u32 max_entries;
	u32 map_flags;
};

/* 28 bytes: iproute2's first bpf_elf_map (tc), with id and pinning */
struct bpf_elf_map_28 {
	u32 type;
	u32 size_key;
	u32 size_value;
	u32 max_elem;
	u32 flags;
	u32 id;
	u32 pinning;
};

/* 36 bytes: iproute2's bpf_elf_map with map-in-map (inner_id, inner_idx) */
struct bpf_elf_map_36 {
	u32 type;
	u32 size_key;
	u32 size_value;
	u32 max_elem;
	u32 flags;
	u32 id;
	u32 pinning;
	u32 inner_id;
	u32 inner_idx;
};

/* The context of kprobe/uprobe programs; only its address is used here. */
struct pt_regs;

/*
 * Helpers: a call instruction with imm = the helper's id
 * (enum bpf_func_id, in the kernel's FN() list order).
 */
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value,
				   u64 flags) = (void *)2;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)3;
static long (*bpf_probe_read)(void *dst, u32 size, const void *unsafe_ptr) = (void *)4;
static u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static long (*bpf_trace_printk)(const char *fmt, u32 fmt_size, ...) = (void *)6;
static u32 (*bpf_get_prandom_u32)(void) = (void *)7;
static u32 (*bpf_get_smp_processor_id)(void) = (void *)8;
static long (*bpf_tail_call)(void *ctx, void *prog_array_map, u32 index) = (void *)12;
static u64 (*bpf_get_current_pid_tgid)(void) = (void *)14;
static u64 (*bpf_get_current_uid_gid)(void) = (void *)15;
static long (*bpf_get_current_comm)(void *buf, u32 size_of_buf) = (void *)16;
static long (*bpf_perf_event_output)(void *ctx, void *map, u64 flags, void *data,
				     u64 size) = (void *)25;
static long (*bpf_probe_read_user)(void *dst, u32 size, const void *unsafe_ptr) = (void *)112;
static long (*bpf_probe_read_kernel)(void *dst, u32 size, const void *unsafe_ptr) = (void *)113;

#endif /* SLUICE_BPF_H */
