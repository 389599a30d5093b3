// SPDX-License-Identifier: GPL-2.0
/*
 * guest_kprobes.c: kprobe filters for the tests that run inside real guest
 * kernels (aarch64-ci/guest, runtime/tests/guest_kprobe.rs). Each program
 * accepts only the events of the process whose tgid the test (or
 * `sluice record`, for its workload) stores at key 0 of `target_tgid`, and
 * counts in `rejected` what it turned away while armed.
 *
 *   kprobe/do_filp_open        accepts the opens of the target: one sample
 *                              per open(2)/openat(2) by path (also per
 *                              execve: do_open_execat uses it). Not
 *                              do_sys_openat2/do_sys_open: 6.1 inlines them
 *                              into the syscalls, so their kprobes never fire
 *   kretprobe/vfs_read($retval:s64)
 *                              the return value via the prologue (x86_64
 *                              %ax, arm64 %x0), sent with
 *                              bpf_perf_event_output; returns 1 so the
 *                              kernel's own $retval fetch-arg is sampled too
 *   kprobe/vfs_read(void *, char *, unsigned long, void *)
 *                              typed entry arguments without debug info:
 *                              r2..r5 from the calling convention (x86_64
 *                              di, si, dx, cx; arm64 x0..x3), sent with
 *                              bpf_perf_event_output
 *   guest_read_regs            an opaque title: the test maps it to a
 *                              kprobe on vfs_read with register fetch-args,
 *                              whose RAW samples are the kernel's view of
 *                              the same arguments
 */
#include "sluice_bpf.h"

#define TAG_READ_RET 0x51ce0002
#define TAG_READ_ARGS 0x51ce0003

enum { REJ_OPEN, REJ_READ_RET, REJ_READ_ARGS, REJ_READ_REGS, REJ_SLOTS };

struct bpf_map_def SEC("maps") target_tgid = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u32),
	.max_entries = 1,
};

struct bpf_map_def SEC("maps") rejected = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u64),
	.max_entries = REJ_SLOTS,
};

struct bpf_map_def SEC("maps") events = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u32),
	.max_entries = 128,
};

struct read_ret_out {
	u32 tag;
	u32 tid;
	s64 ret;
};

struct read_args_out {
	u32 tag;
	u32 tid;
	u64 file;
	u64 buf;
	u64 count;
	u64 pos;
};

/* 1 if the current task belongs to the armed target; else counts a rejection. */
static __always_inline int ours(u32 slot)
{
	u32 key = 0;
	u32 *tgid = bpf_map_lookup_elem(&target_tgid, &key);
	u64 *n;

	if (!tgid || *tgid == 0)
		return 0;
	if ((u32)(bpf_get_current_pid_tgid() >> 32) == *tgid)
		return 1;
	n = bpf_map_lookup_elem(&rejected, &slot);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

SEC("kprobe/do_filp_open")
int open_filter(struct pt_regs *ctx)
{
	return ours(REJ_OPEN);
}

SEC("kretprobe/vfs_read($retval:s64)")
int read_ret(struct pt_regs *ctx, s64 ret)
{
	struct read_ret_out out = {};

	if (!ours(REJ_READ_RET))
		return 0;
	out.tag = TAG_READ_RET;
	out.tid = (u32)bpf_get_current_pid_tgid();
	out.ret = ret;
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &out, sizeof(out));
	return 1;
}

SEC("kprobe/vfs_read(void *, char *, unsigned long, void *)")
int read_args(struct pt_regs *ctx, void *file, char *buf, unsigned long count, void *pos)
{
	struct read_args_out out = {};

	if (!ours(REJ_READ_ARGS))
		return 0;
	out.tag = TAG_READ_ARGS;
	out.tid = (u32)bpf_get_current_pid_tgid();
	out.file = (u64)file;
	out.buf = (u64)buf;
	out.count = count;
	out.pos = (u64)pos;
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &out, sizeof(out));
	return 0;
}

SEC("guest_read_regs")
int read_regs(struct pt_regs *ctx)
{
	return ours(REJ_READ_REGS);
}

char _license[] SEC("license") = "GPL";
