// SPDX-License-Identifier: GPL-2.0
/*
 * uprobe_multi.c: uprobe_multi links (BPF_TRACE_UPROBE_MULTI) on the functions of
 * tests/uprobe_multi/um_target.c whose names match a glob. PATH is a bare name: libbpf
 * (and sluice) look for `um_target` in $PATH, /usr/bin, /usr/sbin.
 *
 *   uprobe.multi/um_target:um_hit_*       entries[func ip] += 1   (bpf_get_func_ip)
 *   uretprobe.multi/um_target:um_hit_*    returns[func ip] += 1   (the entry's ip too)
 *   uprobe.multi.s/um_target:um_hit_?     totals[0] += 1          (sleepable)
 *   uprobe.multi                          a bare title: loaded as a uprobe_multi program,
 *                                         never attached (libbpf attaches it by hand)
 *
 * Every program returns 0.
 */
#include "sluice_bpf.h"

/* bpf_get_func_ip: for a uprobe_multi program, the probed function's address. */
static u64 (*bpf_get_func_ip)(void *ctx) = (void *)173;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, u64);
	__type(value, u64);
} entries SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, u64);
	__type(value, u64);
} returns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u64);
} totals SEC(".maps");

static __always_inline void bump(void *map, u64 ip)
{
	u64 one = 1, *n = bpf_map_lookup_elem(map, &ip);

	if (!n && !bpf_map_update_elem(map, &ip, &one, BPF_NOEXIST))
		return;
	/* There, or put there by another CPU meanwhile. */
	if (!n)
		n = bpf_map_lookup_elem(map, &ip);
	if (n)
		__sync_fetch_and_add(n, 1);
}

SEC("uprobe.multi/um_target:um_hit_*")
int on_entry(struct pt_regs *ctx)
{
	bump(&entries, bpf_get_func_ip(ctx));
	return 0;
}

SEC("uretprobe.multi/um_target:um_hit_*")
int on_return(struct pt_regs *ctx)
{
	bump(&returns, bpf_get_func_ip(ctx));
	return 0;
}

SEC("uprobe.multi.s/um_target:um_hit_?")
int on_sleepable(struct pt_regs *ctx)
{
	u32 zero = 0;
	u64 *n = bpf_map_lookup_elem(&totals, &zero);

	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

SEC("uprobe.multi")
int on_bare(struct pt_regs *ctx)
{
	return 0;
}

char _license[] SEC("license") = "GPL";
