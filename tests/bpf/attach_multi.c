// SPDX-License-Identifier: GPL-2.0
/*
 * attach_multi.c: kprobe.multi and kretprobe.multi programs (BPF_TRACE_KPROBE_MULTI, which
 * needs CONFIG_FPROBE) over the glob *getpgid, for runtime/tests/guest_kprobe.rs: for the
 * thread whose tid is at key 0 of target_tid, each counts the calls per function, keyed by
 * the function's address as bpf_get_func_ip() gives it, and keeps the BPF cookie sluice gave
 * that function (bpf_get_attach_cookie(): its place in the matched list, from 1) and whether
 * every call saw the same one; the return program also sums the return values (%ax / x0).
 * Both return 0.
 */
#include "sluice_bpf.h"

/* Helpers (enum bpf_func_id), here rather than in sluice_bpf.h: every fixture's bytes would change. */
static u64 (*bpf_get_func_ip)(void *ctx) = (void *)173;
static u64 (*bpf_get_attach_cookie)(void *ctx) = (void *)174;

struct hit {
	u64 calls;
	u64 cookie;
	u64 cookie_changed;
	u64 ret_sum;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} target_tid SEC(".maps");

/* func_ip -> struct hit, for the entry and the return program */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, u64);
	__type(value, struct hit);
} entries SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, u64);
	__type(value, struct hit);
} returns SEC(".maps");

const volatile _Bool arm64 = 0;

static __always_inline int ours(void)
{
	u32 key = 0;
	u32 *tid = bpf_map_lookup_elem(&target_tid, &key);

	return tid && *tid != 0 && (u32)bpf_get_current_pid_tgid() == *tid;
}

static __always_inline void record(void *map, void *ctx, u64 ret)
{
	u64 ip = bpf_get_func_ip(ctx);
	u64 cookie = bpf_get_attach_cookie(ctx);
	struct hit zero = {}, *h;

	h = bpf_map_lookup_elem(map, &ip);
	if (!h) {
		zero.cookie = cookie;
		bpf_map_update_elem(map, &ip, &zero, BPF_ANY);
		h = bpf_map_lookup_elem(map, &ip);
		if (!h)
			return;
	}
	h->calls += 1;
	if (h->cookie != cookie)
		h->cookie_changed = 1;
	h->ret_sum += ret;
}

SEC("kprobe.multi/*getpgid")
int on_entry(void *ctx)
{
	if (ours())
		record(&entries, ctx, 0);
	return 0;
}

/* x86-64 pt_regs ax and arm64 user_pt_regs x0, read as guest_attach.c does */
SEC("kretprobe.multi/*getpgid")
int on_return(void *ctx)
{
	u64 v = 0;

	if (!ours())
		return 0;
	bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + (arm64 ? 0 : 80));
	record(&returns, ctx, v);
	return 0;
}

char _license[] SEC("license") = "GPL";
