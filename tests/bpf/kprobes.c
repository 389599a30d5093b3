// SPDX-License-Identifier: GPL-2.0
/*
 * kprobes.c: the kprobe/kretprobe section-name grammar.
 *
 *   kprobe/vfs_read                       plain entry probe, body f(ctx)
 *   kretprobe/vfs_read                    return probe, body f(ctx)
 *   kprobe/vfs_write(void *, char *, unsigned long)
 *                                         typed entry arguments without debug
 *                                         info: taken from the calling
 *                                         convention, passed in r2..r4
 *   kprobe/generic_perform_write+122(file->f_mapping->a_ops, bytes, offset)
 *                                         probe in a function body, arguments
 *                                         resolved from DWARF, passed in r2..r4
 *
 * No maps at all (trace_printk only). The programs that take arguments read
 * r2..r4, which the verifier refuses unless a prologue initialises them:
 * they load only through sluice's prologue.
 */
#include "sluice_bpf.h"

SEC("kprobe/vfs_read")
int read_entry(struct pt_regs *ctx)
{
	char fmt[] = "vfs_read pid=%u\n";

	bpf_trace_printk(fmt, sizeof(fmt), (u32)(bpf_get_current_pid_tgid() >> 32));
	return 0;
}

SEC("kretprobe/vfs_read")
int read_return(struct pt_regs *ctx)
{
	char fmt[] = "vfs_read returned at %llu\n";

	bpf_trace_printk(fmt, sizeof(fmt), bpf_ktime_get_ns());
	return 0;
}

SEC("kprobe/vfs_write(void *, char *, unsigned long)")
int write_typed(struct pt_regs *ctx, void *file, char *buf, unsigned long count)
{
	char fmt[] = "vfs_write file=%p buf=%p count=%lu\n";

	if (count == 0)
		return 0;
	bpf_trace_printk(fmt, sizeof(fmt), file, buf, count);
	return 0;
}

SEC("kprobe/generic_perform_write+122(file->f_mapping->a_ops, bytes, offset)")
int write_body(struct pt_regs *ctx, void *a_ops, unsigned long bytes, long long offset)
{
	char fmt[] = "a_ops=%p bytes=%lu offset=%lld\n";

	bpf_trace_printk(fmt, sizeof(fmt), a_ops, bytes, offset);
	return 1;
}

char _license[] SEC("license") = "GPL";
u32 _version SEC("version") = 0x060000;
