// SPDX-License-Identifier: GPL-2.0
/*
 * record_output.c: bpf_perf_event_output through a perf event array.
 *
 *   tracepoint/raw_syscalls/sys_exit   for syscall `nr` of thread `tid` (set by
 *                                       the test in `config`), sends a struct
 *                                       out_rec to `out` and returns 0, so the
 *                                       tracepoint itself yields no sample
 */
#include "sluice_bpf.h"

struct config {
	u32 tid;
	u32 pad;
	s64 nr;
};

struct bpf_map_def SEC("maps") config = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(struct config),
	.max_entries = 1,
};

struct bpf_map_def SEC("maps") seq = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u64),
	.max_entries = 1,
};

struct bpf_map_def SEC("maps") out = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(int),
	.value_size = sizeof(u32),
	.max_entries = 1024,
};

#define OUT_MAGIC 0x51c0ffeeU

struct out_rec {
	u32 magic;
	u32 tid;
	s64 id;
	s64 ret;
	u64 seq;
};

/* Layout from tracefs events/raw_syscalls/sys_exit/format */
struct raw_sys_exit_args {
	u16 common_type;
	u8 common_flags;
	u8 common_preempt_count;
	s32 common_pid;
	s64 id;
	s64 ret;
};

SEC("tracepoint/raw_syscalls/sys_exit")
int syscall_out(struct raw_sys_exit_args *args)
{
	u32 key = 0;
	struct config *c = bpf_map_lookup_elem(&config, &key);
	u64 *n = bpf_map_lookup_elem(&seq, &key);
	struct out_rec r = {};

	if (!c || !n || c->tid == 0)
		return 0;
	if ((u32)bpf_get_current_pid_tgid() != c->tid || args->id != c->nr)
		return 0;
	r.magic = OUT_MAGIC;
	r.tid = c->tid;
	r.id = args->id;
	r.ret = args->ret;
	r.seq = __sync_fetch_and_add(n, 1) + 1;
	bpf_perf_event_output(args, &out, BPF_F_CURRENT_CPU, &r, sizeof(r));
	return 0;
}

char _license[] SEC("license") = "GPL";
