// SPDX-License-Identifier: GPL-2.0
/*
 * uprobes.c: uprobe/uretprobe/tracepoint section names and perf output.
 *
 *   uprobe//usr/bin/true:main             PATH = /usr/bin/true, FUNC = main
 *   uretprobe//usr/bin/true:main          return probe on the same function
 *   tracepoint/syscalls/sys_enter_getppid CAT/NAME, ctx = the raw record
 *   tracepoint/sched/sched_switch         reads fields of the raw record
 *
 * Every program sends a struct event through bpf_perf_event_output
 * (helper 25) into a legacy 16-byte PERF_EVENT_ARRAY map, with the
 * pid/tgid from bpf_get_current_pid_tgid (helper 14).
 */
#include "sluice_bpf.h"

struct bpf_map_def SEC("maps") events = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(int),
	.value_size = sizeof(u32),
	.max_entries = 128,
};

enum event_kind {
	EV_UPROBE = 1,
	EV_URETPROBE = 2,
	EV_GETPPID = 3,
	EV_SWITCH = 4,
};

struct event {
	u32 kind;
	u32 pid;
	u32 tgid;
	u32 other;		/* next_pid for sched_switch */
	u64 ts;
	char comm[16];
};

/* Layout from tracefs events/sched/sched_switch/format */
struct sched_switch_args {
	u16 common_type;
	u8 common_flags;
	u8 common_preempt_count;
	s32 common_pid;
	char prev_comm[16];
	s32 prev_pid;
	s32 prev_prio;
	long prev_state;
	char next_comm[16];
	s32 next_pid;
	s32 next_prio;
};

/* Layout from tracefs events/syscalls/sys_enter_getppid/format */
struct sys_enter_getppid_args {
	u16 common_type;
	u8 common_flags;
	u8 common_preempt_count;
	s32 common_pid;
	s32 syscall_nr;
};

static __always_inline int emit(void *ctx, u32 kind, u32 other)
{
	u64 pid_tgid = bpf_get_current_pid_tgid();
	struct event ev = {};

	ev.kind = kind;
	ev.pid = (u32)pid_tgid;
	ev.tgid = pid_tgid >> 32;
	ev.other = other;
	ev.ts = bpf_ktime_get_ns();
	bpf_get_current_comm(ev.comm, sizeof(ev.comm));
	return bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &ev, sizeof(ev));
}

SEC("uprobe//usr/bin/true:main")
int true_main(struct pt_regs *ctx)
{
	emit(ctx, EV_UPROBE, 0);
	return 0;
}

SEC("uretprobe//usr/bin/true:main")
int true_main_ret(struct pt_regs *ctx)
{
	emit(ctx, EV_URETPROBE, 0);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_getppid")
int getppid_enter(struct sys_enter_getppid_args *args)
{
	emit(args, EV_GETPPID, (u32)args->syscall_nr);
	return 0;
}

SEC("tracepoint/sched/sched_switch")
int sched_switch(struct sched_switch_args *args)
{
	if (args->next_pid == 0)
		return 0;
	emit(args, EV_SWITCH, (u32)args->next_pid);
	return 0;
}

char _license[] SEC("license") = "GPL";
u32 _version SEC("version") = 0x060000;
