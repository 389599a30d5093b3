// SPDX-License-Identifier: GPL-2.0
/*
 * guest_attach.c: one program of each kprobe-family and trampoline attach type, for the
 * guest kernels (runtime/tests/guest_kprobe.rs): each counts the calls of the thread whose
 * tid is at key 0 of target_tid into hits[SLOT] and sums what it reads of them, so a
 * workload that makes known calls gives known counts and sums.
 *
 *   kprobe/vfs_read          count, sum of the count argument (third: %dx / x2)
 *   kretprobe/vfs_read       count, sum of the return values (%ax / x0)
 *   ksyscall/getpid          count (the arch's __x64_sys_/__arm64_sys_ wrapper)
 *   kretsyscall/getpid       count, sum of the return values (the process's pid)
 *   fentry/vfs_read          count, sum of the count argument (ctx[2])
 *   fexit/vfs_read           count, sum of the return values (ctx[4])
 *   fmod_ret/security_task_getpgid  while modret[0] is not 0: the LSM hook returns it
 *                            (an -errno: getpgid(2) fails with it), counted; a security_
 *                            hook because Debian's 6.1 has no CONFIG_FUNCTION_ERROR_INJECTION
 *                            (the other functions fmod_ret may modify)
 *
 * The kprobe programs read pt_regs at the running kernel's offsets: `arm64` (set with
 * --set) picks user_pt_regs (x0..x30) over x86-64's pt_regs. Every program returns 0 (a
 * kprobe's through the kprobe PMU, no tracefs entry), but fmod_ret's when it modifies.
 */
#include "sluice_bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} target_tid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, u32);
	__type(value, u64);
} hits SEC(".maps");

/* key 0: the -errno fmod_ret makes security_task_getpgid return (0: leave it alone). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, s64);
} modret SEC(".maps");

const volatile _Bool arm64 = 0;

enum slot {
	KPROBE_N = 0,
	KPROBE_SUM = 1,
	KRETPROBE_N = 2,
	KRETPROBE_SUM = 3,
	KSYSCALL_N = 4,
	KRETSYSCALL_N = 5,
	KRETSYSCALL_SUM = 6,
	FENTRY_N = 7,
	FENTRY_SUM = 8,
	FEXIT_N = 9,
	FEXIT_SUM = 10,
	FMODRET_N = 11,
};

/* x86-64 pt_regs and arm64 user_pt_regs offsets. */
#define X86_AX 80
#define X86_DX 96
#define ARM64_X(n) ((n) * 8)
/* Read with bpf_probe_read_kernel: clang turns a choice of two loads into one load at a
 * chosen offset, which the verifier refuses for the context (a modified ctx pointer). */
static __always_inline u64 reg(void *ctx, u32 x86, u32 a64)
{
	u64 v = 0;

	bpf_probe_read_kernel(&v, sizeof(v), (char *)ctx + (arm64 ? a64 : x86));
	return v;
}

static __always_inline int ours(void)
{
	u32 key = 0;
	u32 *tid = bpf_map_lookup_elem(&target_tid, &key);

	return tid && *tid != 0 && (u32)bpf_get_current_pid_tgid() == *tid;
}

static __always_inline void add(u32 slot, u64 v)
{
	u64 *n = bpf_map_lookup_elem(&hits, &slot);

	if (n)
		__sync_fetch_and_add(n, v);
}

SEC("kprobe/vfs_read")
int kprobe_read(void *ctx)
{
	if (!ours())
		return 0;
	add(KPROBE_N, 1);
	add(KPROBE_SUM, reg(ctx, X86_DX, ARM64_X(2)));
	return 0;
}

SEC("kretprobe/vfs_read")
int kretprobe_read(void *ctx)
{
	if (!ours())
		return 0;
	add(KRETPROBE_N, 1);
	add(KRETPROBE_SUM, reg(ctx, X86_AX, ARM64_X(0)));
	return 0;
}

SEC("ksyscall/getpid")
int ksyscall_getpid(void *ctx)
{
	if (ours())
		add(KSYSCALL_N, 1);
	return 0;
}

SEC("kretsyscall/getpid")
int kretsyscall_getpid(void *ctx)
{
	if (!ours())
		return 0;
	add(KRETSYSCALL_N, 1);
	add(KRETSYSCALL_SUM, reg(ctx, X86_AX, ARM64_X(0)));
	return 0;
}

/* vfs_read(struct file *, char *, size_t count, loff_t *): ctx[2]; fexit's ctx[4]. */
SEC("fentry/vfs_read")
int fentry_read(u64 *ctx)
{
	if (!ours())
		return 0;
	add(FENTRY_N, 1);
	add(FENTRY_SUM, ctx[2]);
	return 0;
}

SEC("fexit/vfs_read")
int fexit_read(u64 *ctx)
{
	if (!ours())
		return 0;
	add(FEXIT_N, 1);
	add(FEXIT_SUM, ctx[4]);
	return 0;
}

SEC("fmod_ret/security_task_getpgid")
int fmodret_getpgid(u64 *ctx)
{
	u32 key = 0;
	s64 *v;

	if (!ours())
		return 0;
	v = bpf_map_lookup_elem(&modret, &key);
	if (!v || *v == 0)
		return 0;
	add(FMODRET_N, 1);
	return *v;
}

char _license[] SEC("license") = "GPL";
