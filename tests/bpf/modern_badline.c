// SPDX-License-Identifier: GPL-2.0
/*
 * modern_badline.c: a verifier failure inside a subprogram.
 *
 *   kprobe/do_sys_open   bad_callee: calls a __noinline subprogram that
 *                        dereferences a map lookup without a NULL check; the
 *                        verifier's log must show that source line (line_info
 *                        of the appended subprogram).
 */
#include "sluice_bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, u32);
	__type(value, u64);
} values SEC(".maps");

static __noinline int unchecked_lookup(u32 key)
{
	u64 *v = bpf_map_lookup_elem(&values, &key);

	return (int)*v; /* sluice: no NULL check here */
}

SEC("kprobe/do_sys_open")
int bad_callee(void *ctx)
{
	return unchecked_lookup(1) + 1;
}

char LICENSE[] SEC("license") = "GPL";
