// SPDX-License-Identifier: GPL-2.0
/*
 * record_demo.c: the filter `sluice record` uses when given no object.
 *
 *   tracepoint/syscalls/sys_enter_openat   accepts only opens of files under /etc/
 *
 * A sample reaches user space only when the program returns non-zero, so of
 * all the files a command opens (libraries, locale data, its own input) only
 * the configuration files under /etc/ are recorded. The path itself is a user
 * pointer in the tracepoint's record; the program copies it and sends it
 * through the perf event array `paths` as a struct etc_path, which the output
 * decodes by the object's BTF.
 */
#include "sluice_bpf.h"

/* Not in sluice_bpf.h: adding it there would change every other fixture's DWARF. */
static long (*bpf_probe_read_user_str)(void *dst, u32 size, const void *unsafe_ptr) = (void *)114;

struct bpf_map_def SEC("maps") paths = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(int),
	.value_size = sizeof(u32),
	.max_entries = 1024,
};

/* Layout from tracefs events/syscalls/sys_enter_openat/format */
struct sys_enter_openat_args {
	u16 common_type;
	u8 common_flags;
	u8 common_preempt_count;
	s32 common_pid;
	s32 syscall_nr;
	u32 pad;
	u64 dfd;
	const char *filename;
	u64 flags;
	u64 mode;
};

/*
 * Filled by the session with the workload's pid (key 0) when it records one
 * process: the perf event array is system-wide, so the program itself keeps
 * other processes' opens out. 0 (system-wide, -a): everyone's.
 */
struct bpf_map_def SEC("maps") target_tgid = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = sizeof(u32),
	.value_size = sizeof(u32),
	.max_entries = 1,
};

#define PATH_LEN 64

/* What goes to `paths`: a type of its own, so the object's BTF describes the record
 * and `sluice record` prints it as `path="/etc/..."`. */
struct etc_path {
	char path[PATH_LEN];
};

/* A subprogram taking the record: a function's parameters are in BTF. */
static __noinline int under_etc(struct etc_path *p)
{
	return p->path[0] == '/' && p->path[1] == 'e' && p->path[2] == 't' &&
	       p->path[3] == 'c' && p->path[4] == '/';
}

SEC("tracepoint/syscalls/sys_enter_openat")
int etc_opens(struct sys_enter_openat_args *args)
{
	struct etc_path p = {};
	u32 key = 0;
	u32 *target = bpf_map_lookup_elem(&target_tgid, &key);

	if (target && *target && *target != bpf_get_current_pid_tgid() >> 32)
		return 0;

	if (bpf_probe_read_user_str(p.path, sizeof(p.path), args->filename) < 6)
		return 0;
	if (!under_etc(&p))
		return 0;
	bpf_perf_event_output(args, &paths, BPF_F_CURRENT_CPU, &p, sizeof(p));
	return 1;
}

char _license[] SEC("license") = "GPL";
