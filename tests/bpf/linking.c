/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * linking.c: the shapes of bpf-to-bpf calls the linker's shortcuts tell apart
 * (core/src/object/patch.rs, the layout of the functions called):
 *
 * - a chain of subprograms (c1 -> c2 -> c3): each relocated on its own is its
 *   part of the layout, and programs calling c1 append that part at once;
 * - two subprograms sharing one (mid_a and mid_b both call leaf): leaf is laid
 *   out inside mid_a's part, so mid_b's part refers outside itself;
 * - programs calling a function that lies inside a part appended before
 *   (first_inside: mid_a, then leaf), a function whose part holds one appended
 *   before (first_leaf: leaf, then mid_a), a function whose part is open
 *   (shared: mid_b), the same functions in the same order (chained,
 *   chained_too), and a function's address (looped: a bpf_loop callback, an
 *   ld_imm64 of code);
 * - global data (.data, .rodata, .bss) and a BTF-defined map used by
 *   subprograms.
 */
#include "sluice_bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, u32);
	__type(value, u64);
} hits SEC(".maps");

u64 counter = 1;
const volatile u32 scale = 3;
u64 scratch[4];

/* Not in sluice_bpf.h: only this fixture takes a function's address. */
static long (*bpf_loop)(u32 nr_loops, void *callback_fn, void *callback_ctx,
			u64 flags) = (void *)181;

static __noinline u64 leaf(u64 x)
{
	scratch[x & 3] = x;
	return x * scale + counter;
}

static __noinline u64 mid_a(u64 x)
{
	return leaf(x + 1) ^ 1;
}

static __noinline u64 mid_b(u64 x)
{
	return leaf(x + 2) ^ 2;
}

static __noinline u64 c3(u64 x)
{
	return x * counter;
}

static __noinline u64 c2(u64 x)
{
	return c3(x + 3) ^ 3;
}

static __noinline u64 c1(u64 x)
{
	return c2(x + 1) + 7;
}

static __noinline u64 bump(u32 k)
{
	u64 *v = bpf_map_lookup_elem(&hits, &k);

	if (!v)
		return 0;
	__sync_fetch_and_add(v, 1);
	return *v;
}

static int step(u32 i, void *ctx)
{
	*(u64 *)ctx += i + counter;
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_getpid")
int first_inside(void *ctx)
{
	return mid_a(1) + leaf(2) + bump(0);
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int first_leaf(void *ctx)
{
	return leaf(3) + mid_a(4);
}

SEC("tracepoint/syscalls/sys_enter_gettid")
int shared(void *ctx)
{
	return mid_b(5) + bump(1);
}

SEC("tracepoint/syscalls/sys_enter_getuid")
int chained(void *ctx)
{
	return c1(6);
}

SEC("tracepoint/syscalls/sys_enter_getgid")
int chained_too(void *ctx)
{
	return c1(7) + bump(2);
}

SEC("tracepoint/syscalls/sys_enter_geteuid")
int looped(void *ctx)
{
	u64 sum = 0;

	bpf_loop(4, step, &sum, 0);
	return sum + bump(3);
}

char LICENSE[] SEC("license") = "GPL";
