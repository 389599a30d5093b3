// SPDX-License-Identifier: GPL-2.0
/*
 * record_filter.c: filters whose verdicts the record tests count exactly.
 *
 *   tracepoint/raw_syscalls/sys_enter   accepts syscall `nr` of thread `tid`
 *                                        (both set by the test in `config`)
 *   uprobe_arg (an opaque title: the test maps it to uprobe/PATH:FUNC(%di))
 *                                        accepts calls whose first argument is
 *                                        >= config.min_arg, read from pt_regs
 *
 * raw_syscalls rather than syscalls/sys_enter_*: it also sees the compat
 * (int 0x80) syscalls of 32-bit tests on a 64-bit kernel.
 */
#include "sluice_bpf.h"

struct config {
	u32 tid;	/* thread whose syscalls count */
	u32 arch;	/* 1: x86_64 pt_regs, 2: arm64 user_pt_regs */
	s64 nr;		/* syscall number that counts */
	u64 min_arg;	/* uprobe: smallest first argument accepted */
};

struct bpf_map_def SEC("maps") config = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(struct config),
	.max_entries = 1,
};

/* Layout from tracefs events/raw_syscalls/sys_enter/format */
struct raw_sys_enter_args {
	u16 common_type;
	u8 common_flags;
	u8 common_preempt_count;
	s32 common_pid;
	s64 id;
	u64 args[6];
};

SEC("tracepoint/raw_syscalls/sys_enter")
int one_syscall(struct raw_sys_enter_args *args)
{
	u32 key = 0;
	struct config *c = bpf_map_lookup_elem(&config, &key);

	if (!c || c->tid == 0)
		return 0;
	if ((u32)bpf_get_current_pid_tgid() != c->tid)
		return 0;
	return args->id == c->nr;
}

SEC("uprobe_arg")
int arg_at_least(u64 *regs)
{
	/*
	 * Read the registers first, straight from the context: the verifier
	 * refuses a context pointer that was moved (ctx + 112) before the load,
	 * which is what clang makes of a read it sinks into a branch.
	 */
	u64 di = *(volatile u64 *)&regs[14];	/* x86_64 struct pt_regs: di at offset 112 */
	u64 x0 = *(volatile u64 *)&regs[0];	/* arm64 user_pt_regs: x0 at offset 0 */
	u32 key = 0;
	struct config *c = bpf_map_lookup_elem(&config, &key);

	if (!c)
		return 0;
	if (c->arch == 1)
		return di >= c->min_arg;
	if (c->arch == 2)
		return x0 >= c->min_arg;
	return 0;
}

char _license[] SEC("license") = "GPL";
