// SPDX-License-Identifier: GPL-2.0
/*
 * bad_verifier.c: compiles and opens cleanly, but the kernel verifier
 * refuses every program (for load-error tests: the verifier log must come
 * back verbatim).
 *
 *   kprobe/vfs_read   null_deref: dereferences the result of
 *                     bpf_map_lookup_elem without a NULL check
 *                     (verifier: "R0 invalid mem access 'map_value_or_null'")
 *   socket            uninit_reg: returns r3, never written in a socket filter
 *                     (verifier: "R3 !read_ok")
 *   kprobe/vfs_write  oob_value: reads 8 bytes at offset 8 of a 8-byte map value
 *                     (verifier: "invalid access to map value, value_size=8 off=8 size=8")
 *
 * The map is a legacy 16-byte definition in SEC("maps"), like the seeds'.
 * It is a HASH: recent kernels (6.18 here) know that an ARRAY lookup with a constant
 * in-range key cannot return NULL and would accept null_deref.
 */
#include "sluice_bpf.h"

struct bpf_map_def SEC("maps") values = {
	.type = BPF_MAP_TYPE_HASH,
	.key_size = sizeof(u32),
	.value_size = sizeof(u64),
	.max_entries = 16,
};

SEC("kprobe/vfs_read")
int null_deref(struct pt_regs *ctx)
{
	u32 key = 0;
	u64 *v = bpf_map_lookup_elem(&values, &key);

	return (int)*v;		/* no NULL check: refused */
}

SEC("socket")
int uninit_reg(void *skb)
{
	int ret;

	/* r3 is not an argument of a socket filter: reading it is refused */
	asm volatile("%[ret] = r3" : [ret] "=r"(ret));
	return ret;
}

SEC("kprobe/vfs_write")
int oob_value(struct pt_regs *ctx)
{
	u32 key = 0;
	u64 *v = bpf_map_lookup_elem(&values, &key);

	if (!v)
		return 0;
	return (int)v[1];	/* one past the 8-byte value: refused */
}

char _license[] SEC("license") = "GPL";
u32 _version SEC("version") = 0x060000;
