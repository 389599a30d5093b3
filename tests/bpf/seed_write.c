// SPDX-License-Identifier: GPL-2.0
/*
 * seed_write.c: the example of the second seed ("perf bpf: Probing with
 * local variable"), in the seed's own object layout.
 *
 * - The section name is the whole probe definition in perf's form,
 *   EVENT=FUNC+OFF ARG ARG ARG: a probe in the body of
 *   generic_perform_write(), with the arguments fetched by a prologue
 *   generated from DWARF (a_ops is a dereference chain, bytes and offset
 *   are local variables).
 * - The program takes them as formal parameters after ctx.
 * - Legacy 16-byte struct bpf_map_def in SEC("maps"), a 4-byte "version"
 *   and a "license".
 */
#include "sluice_bpf.h"

struct write_event {
	u64 a_ops;
	u64 bytes;
	u64 offset;
	u32 pid;
	u32 cpu;
};

struct bpf_map_def SEC("maps") write_events = {
	.type = BPF_MAP_TYPE_PERF_EVENT_ARRAY,
	.key_size = sizeof(int),
	.value_size = sizeof(u32),
	.max_entries = 64,
};

SEC("generic_perform_write=generic_perform_write+122 file->f_mapping->a_ops bytes offset")
int f(struct pt_regs *ctx, void *a_ops, void *bytes, void *offset)
{
	char fmt[] = "generic_perform_write a_ops=%p bytes=%lu offset=%lu\n";
	struct write_event ev = {
		.a_ops = (u64)a_ops,
		.bytes = (u64)bytes,
		.offset = (u64)offset,
		.pid = (u32)(bpf_get_current_pid_tgid() >> 32),
		.cpu = bpf_get_smp_processor_id(),
	};

	bpf_trace_printk(fmt, sizeof(fmt), a_ops, bytes, offset);
	bpf_perf_event_output(ctx, &write_events, BPF_F_CURRENT_CPU, &ev, sizeof(ev));
	return 1;
}

char _license[] SEC("license") = "GPL";
/* LINUX_VERSION_CODE of the kernel the seed ran on (4.1.0); never checked since 5.0 */
u32 _version SEC("version") = 0x040100;
