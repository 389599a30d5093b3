// SPDX-License-Identifier: GPL-2.0
/*
 * modern.c: a current clang/libbpf-style object.
 *
 * - BTF-defined maps in SEC(".maps") (__uint/__type, the encoding libbpf
 *   reads; our header defines the macros the same way): a hash and a
 *   perf event array.
 * - Globals in .rodata (const volatile, set before load), .data
 *   (initialised) and .bss (zeroed): each becomes an array map with one
 *   element; accesses are ld_imm64 with R_BPF_64_64 against the variable's
 *   own symbol (LLVM 14: imm 0, the offset is the symbol's st_value).
 * - A static __noinline subprogram in .text called with a bpf-to-bpf call
 *   (call with src_reg = 1, R_BPF_64_32 relocation against .text).
 * - SEC("tracepoint/...") programs; no "version" section.
 */
#include "sluice_bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, u32);
	__type(value, u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

/* .rodata */
const volatile u32 target_tgid = 0;
const volatile u64 sample_every = 1;
/* .data */
u64 seen_total = 7;
char tag[8] = "sluice";
/* .bss */
u64 dropped;
u32 last_pid;

struct sample {
	u32 pid;
	u32 prev;
	u64 count;
	char tag[8];
};

static __noinline u64 bump(u32 pid)
{
	u64 one = 1, *v = bpf_map_lookup_elem(&counts, &pid);

	if (!v) {
		bpf_map_update_elem(&counts, &pid, &one, BPF_NOEXIST);
		return 1;
	}
	return __sync_fetch_and_add(v, 1) + 1;
}

static __noinline int send(void *ctx, u32 pid, u64 count)
{
	struct sample s = {
		.pid = pid,
		.prev = last_pid,
		.count = count,
	};

	__builtin_memcpy(s.tag, tag, sizeof(s.tag));
	last_pid = pid;
	if (bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &s, sizeof(s)) < 0)
		__sync_fetch_and_add(&dropped, 1);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int getppid_enter(void *ctx)
{
	u32 tgid = bpf_get_current_pid_tgid() >> 32;
	u64 n;

	if (target_tgid && tgid != target_tgid)
		return 0;
	seen_total++;
	n = bump(tgid);
	if (sample_every && n % sample_every == 0)
		send(ctx, tgid, n);
	return 0;
}

SEC("tracepoint/sched/sched_process_exit")
int process_exit(void *ctx)
{
	u32 tgid = bpf_get_current_pid_tgid() >> 32;

	bpf_map_delete_elem(&counts, &tgid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
