// SPDX-License-Identifier: GPL-2.0
/*
 * prog_config.c: programs chosen and configured from the command line.
 *
 * - Two programs on one tracepoint (syscalls/sys_enter_kill): chosen_default, loaded
 *   unless --prog names others, and chosen_optional, written SEC("?...") (libbpf's
 *   autoload = false): loaded only when --prog names it.
 * - Globals of every kind --set writes: const volatile integers of each width and sign,
 *   a _Bool, an enum, a char array in .rodata; one variable in .data, one in .bss. Each
 *   hit sends them all in one bpf-output record (struct record below).
 * - sized: a hash left at max_entries 0 for the loader to size (--map-size).
 * Only the workload counts: its tgid is in target_tgid (the session writes it).
 */
#include "sluice_bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} target_tgid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(u32));
	__uint(value_size, sizeof(u32));
} events SEC(".maps");

/* max_entries 0: sized by the loader (--map-size sized=N). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, u32);
	__type(value, u64);
} sized SEC(".maps");

enum mode { MODE_OFF = 0, MODE_ON = 5, MODE_BIG = 100000 };

const volatile u8 knob_u8 = 1;
const volatile s8 knob_s8 = -1;
const volatile u16 knob_u16 = 2;
const volatile s16 knob_s16 = -2;
const volatile u32 knob_u32 = 3;
const volatile s32 knob_s32 = -3;
const volatile u64 knob_u64 = 4;
const volatile s64 knob_s64 = -4;
const volatile _Bool knob_bool = 0;
const volatile enum mode knob_mode = MODE_OFF;
const volatile char knob_label[8] = "none";
/* .data and .bss */
u32 data_knob = 7;
u64 bss_knob;

/* 64 bytes, every field at its natural alignment. */
struct record {
	u32 which; /* 1: chosen_default, 2: chosen_optional */
	u8 u8v;
	s8 s8v;
	u16 u16v;
	s16 s16v;
	u8 boolv;
	u8 pad1;
	u32 u32v;
	s32 s32v;
	u32 mode;
	u32 datav;
	u32 pad2;
	u64 u64v;
	s64 s64v;
	u64 bssv;
	char label[8];
};

static __always_inline int emit(void *ctx, u32 which)
{
	u32 zero = 0, *tgid = bpf_map_lookup_elem(&target_tgid, &zero);
	struct record r = {};
	u64 one = 1;

	if (!tgid || (u32)(bpf_get_current_pid_tgid() >> 32) != *tgid)
		return 0;
	r.which = which;
	r.u8v = knob_u8;
	r.s8v = knob_s8;
	r.u16v = knob_u16;
	r.s16v = knob_s16;
	r.boolv = knob_bool;
	r.u32v = knob_u32;
	r.s32v = knob_s32;
	r.mode = knob_mode;
	r.datav = data_knob;
	r.u64v = knob_u64;
	r.s64v = knob_s64;
	r.bssv = bss_knob;
#pragma unroll
	for (int i = 0; i < 8; i++)
		r.label[i] = knob_label[i];
	bpf_map_update_elem(&sized, &which, &one, BPF_ANY);
	bpf_perf_event_output(ctx, &events, BPF_F_CURRENT_CPU, &r, sizeof(r));
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_kill")
int chosen_default(void *ctx)
{
	return emit(ctx, 1);
}

SEC("?tracepoint/syscalls/sys_enter_kill")
int chosen_optional(void *ctx)
{
	return emit(ctx, 2);
}

char LICENSE[] SEC("license") = "GPL";
