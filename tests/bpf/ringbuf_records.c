// SPDX-License-Identifier: GPL-2.0
/*
 * ringbuf_records.c: a BPF ring buffer with known records, for the ring-buffer
 * reader (runtime/tests/ringbuf.rs), the BTF record decoder (core/src/btf/value.rs
 * tests) and `sluice record` decoding a struct event (cli/tests/record_ringbuf.rs).
 *
 *   tracepoint/raw_syscalls/sys_enter   for syscall `nr` of thread `tid` (set by
 *                                       the test in `config`; raw_syscalls also
 *                                       sees compat syscalls), hit number `seq`:
 *       - reserves a struct event (64 bytes) and fills it from seq; discards it
 *         when seq % 4 == 3, submits it otherwise
 *       - when seq % 8 == 5, also reserves a struct big (3000 bytes: records
 *         that wrap the 16 KiB ring's end) and submits it with seq at both ends
 *       returns 0: the tracepoint yields no perf sample of its own
 *   tracepoint/syscalls/sys_enter_getppid  the same for every getppid of the
 *                                       workload (`target_tgid`, filled by the
 *                                       session): what `sluice record -- CMD` shows
 *
 * stats[0] hits, [1] events submitted, [2] events discarded, [3] bigs submitted,
 * [4] reservations that failed (ring full).
 */
#include "sluice_bpf.h"

#define BPF_MAP_TYPE_RINGBUF 27
#define EVENT_MAGIC 0x51c0ffeeU
#define BIG_SIZE 3000

static void *(*bpf_ringbuf_reserve)(void *ringbuf, u64 size, u64 flags) = (void *)131;
static void (*bpf_ringbuf_submit)(void *data, u64 flags) = (void *)132;
static void (*bpf_ringbuf_discard)(void *data, u64 flags) = (void *)133;

struct config {
	u32 tid;
	u32 pad;
	s64 nr;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 5);
	__type(key, u32);
	__type(value, u64);
} stats SEC(".maps");

/* Filled by the session with the workload's pid (`sluice record -- CMD`). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, u32);
} target_tgid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16384);
} events SEC(".maps");

enum rec_kind {
	KIND_SMALL = 1,
	KIND_BIG = 2,
	KIND_NEG = -1,
};

struct inner {
	u16 a;
	s16 b;
};

union word {
	u32 u;
	s32 s;
};

struct event {
	u32 magic;
	u32 tid;
	u64 seq;
	s32 delta;
	enum rec_kind kind;
	_Bool odd;
	char comm[16];
	struct inner in;
	union word w;
	u32 vals[3];
}; /* 64 bytes */

struct big {
	u64 seq;
	u8 body[BIG_SIZE - 16];
	u64 tail;
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

static __always_inline void count(u32 k)
{
	u64 *v = bpf_map_lookup_elem(&stats, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
}

/*
 * Subprograms taking the record types: a function's parameters are in BTF, so
 * the object describes its records (as a map's value type does in libbpf-tools).
 */
static __noinline void fill(struct event *e, u64 seq, u32 tid)
{
	__builtin_memset(e, 0, sizeof(*e));
	e->magic = EVENT_MAGIC;
	e->tid = tid;
	e->seq = seq;
	e->delta = -(s32)seq;
	e->kind = (seq & 1) ? KIND_BIG : (seq % 3 == 0 ? KIND_NEG : KIND_SMALL);
	e->odd = seq & 1;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->in.a = seq & 0xffff;
	e->in.b = -(s16)(seq & 0x7fff);
	e->w.s = -(s32)(seq * 7);
	e->vals[0] = seq;
	e->vals[1] = seq * 2;
	e->vals[2] = seq * 3;
}

static __noinline void fill_big(struct big *b, u64 seq)
{
	b->seq = seq;
	b->body[0] = 0xab;
	b->body[BIG_SIZE - 17] = 0xcd;
	b->tail = seq ^ EVENT_MAGIC;
}

/* One hit: the records of hit number `seq` (module comment). */
static __always_inline int emit(u32 tid)
{
	u32 key = 0;
	struct event *e;
	struct big *b;
	u64 *hits, seq;

	hits = bpf_map_lookup_elem(&stats, &key);
	if (!hits)
		return 0;
	seq = __sync_fetch_and_add(hits, 1);

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(4);
	} else {
		fill(e, seq, tid);
		if (seq % 4 == 3) {
			bpf_ringbuf_discard(e, 0);
			count(2);
		} else {
			bpf_ringbuf_submit(e, 0);
			count(1);
		}
	}
	if (seq % 8 == 5) {
		b = bpf_ringbuf_reserve(&events, sizeof(*b), 0);
		if (!b) {
			count(4);
			return 0;
		}
		fill_big(b, seq);
		bpf_ringbuf_submit(b, 0);
		count(3);
	}
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_enter")
int records(struct raw_sys_enter_args *args)
{
	u32 key = 0;
	struct config *c = bpf_map_lookup_elem(&config, &key);

	if (!c || c->tid == 0)
		return 0;
	if ((u32)bpf_get_current_pid_tgid() != c->tid || args->id != c->nr)
		return 0;
	return emit(c->tid);
}

/* The workload's getppid calls (64-bit: syscalls:* does not see compat calls). */
SEC("tracepoint/syscalls/sys_enter_getppid")
int workload_records(void *ctx)
{
	u32 key = 0;
	u32 *target = bpf_map_lookup_elem(&target_tgid, &key);
	u64 id = bpf_get_current_pid_tgid();

	if (!target || *target == 0 || *target != id >> 32)
		return 0;
	return emit((u32)id);
}

char LICENSE[] SEC("license") = "GPL";
