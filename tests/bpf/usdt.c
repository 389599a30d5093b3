// SPDX-License-Identifier: GPL-2.0
/*
 * usdt.c: USDT programs built against libbpf's own usdt.bpf.h (BPF_USDT), so they read
 * their arguments through __bpf_usdt_specs exactly as under libbpf. Attached by
 * runtime/tests/usdt.rs with --event to usdt/PATH:sluice:args and usdt/PATH:sluice:guarded
 * of tests/usdt/usdt_demo.c (the path is the test's build of it).
 *
 * Every hit of the workload (tgid at key 0 of target_tgid) appends a record of what the
 * program saw to recs; counts[0] and counts[1] count the hits of each probe. x86 only
 * (bpf_tracing.h's __TARGET_ARCH_x86 pt_regs).
 */
#include <stdbool.h>
#include <linux/bpf.h>
#include <linux/ptrace.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

struct rec {
	long probe;	/* 1: args, 2: guarded */
	long cnt;	/* bpf_usdt_arg_cnt */
	long args[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} target_tgid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct rec);
} recs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 3);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

static __always_inline struct rec *next_rec(long probe)
{
	__u32 zero = 0, total = 2;
	__u32 *tgid = bpf_map_lookup_elem(&target_tgid, &zero);
	__u64 *n = bpf_map_lookup_elem(&counts, &total);
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct rec *r;
	__u32 at;

	if (!tgid || !n || *tgid != pid)
		return 0;
	at = __sync_fetch_and_add(n, 1);
	r = bpf_map_lookup_elem(&recs, &at);
	if (r)
		r->probe = probe;
	return r;
}

static __always_inline void count(__u32 slot)
{
	__u64 *c = bpf_map_lookup_elem(&counts, &slot);

	if (c)
		__sync_fetch_and_add(c, 1);
}

SEC("usdt")
int BPF_USDT(on_args, int a, unsigned long b, short c, unsigned char d)
{
	struct rec *r = next_rec(1);

	if (!r)
		return 0;
	count(0);
	r->cnt = bpf_usdt_arg_cnt(ctx);
	r->args[0] = a;
	r->args[1] = (long)b;
	r->args[2] = c;
	r->args[3] = d;
	return 0;
}

SEC("usdt")
int on_guarded(struct pt_regs *ctx)
{
	struct rec *r = next_rec(2);
	long v = 0;

	if (!r)
		return 0;
	count(1);
	r->cnt = bpf_usdt_arg_cnt(ctx);
	bpf_usdt_arg(ctx, 0, &v);
	r->args[0] = v;
	bpf_usdt_arg(ctx, 1, &v);
	r->args[1] = v;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
