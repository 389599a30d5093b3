// SPDX-License-Identifier: GPL-2.0
/*
 * btf_core.c: CO-RE relocations of every kind clang 14 writes, against kernel
 * types declared locally with preserve_access_index (as vmlinux.h does), in a
 * different layout than the kernel's so that every offset changes.
 *
 * Kinds: field byte offset (ALU add through bpf_probe_read_kernel), byte size,
 * exists, signed, lshift/rshift (bitfields), type id local/target, type
 * exists/size, enum value exists/value. Also: ___flavour names, a field that
 * moved into an anonymous union in the kernel, an array element, a non-zero
 * root index, a pointer chain, a field the kernel does not have (poisoned,
 * guarded by bpf_core_field_exists), a type it does not have.
 *
 * No program dereferences a kernel pointer directly: every read is
 * bpf_probe_read_kernel, so the object passes the verifier relocated or not.
 * TYPE_MATCHES needs clang 15: the tests craft that relocation.
 */
#include "sluice_bpf.h"

#define __pai __attribute__((preserve_access_index))

static u64 (*bpf_get_current_task)(void) = (void *)35;

/* Our enum below uses the kernel's enumerator names. */
#undef BPF_MAP_TYPE_HASH

/* enum bpf_field_info_kind / bpf_type_info_kind / bpf_enum_value_kind */
#define FIELD_BYTE_OFFSET 0
#define FIELD_BYTE_SIZE 1
#define FIELD_EXISTS 2
#define FIELD_SIGNED 3
#define FIELD_LSHIFT_U64 4
#define FIELD_RSHIFT_U64 5
#define TYPE_EXISTS 0
#define TYPE_SIZE 1
#define ENUMVAL_EXISTS 0
#define ENUMVAL_VALUE 1

#define field_info(f, k) __builtin_preserve_field_info(f, k)
#define type_id_local(t) __builtin_btf_type_id(*(typeof(t) *)0, 0)
#define type_id_kernel(t) __builtin_btf_type_id(*(typeof(t) *)0, 1)
#define type_info(t, k) __builtin_preserve_type_info(*(typeof(t) *)0, k)
#define enum_info(t, v, k) __builtin_preserve_enum_value(*(typeof(t) *)v, k)
#define read_kernel(dst, src) \
	bpf_probe_read_kernel(dst, sizeof(*(src)), __builtin_preserve_access_index(src))

struct mutex {
	long owner;
};

struct address_space {
	long flags;
};

struct task_struct {
	int pid;
	int tgid;
	char comm[16];
	struct task_struct *real_parent;
	int prio;
	unsigned int flags;
	unsigned int in_execve : 1;
	unsigned int init_private_fork_class : 4;
	unsigned int in_iowait : 1;
} __pai;

/* A flavour describing an older kernel: `state` became `__state` in 5.14. */
struct task_struct___old {
	long state;
	int pid;
} __pai;

struct file {
	struct mutex f_pos_lock;
	struct address_space *f_mapping;
	unsigned int f_flags;
} __pai;

struct file___v2 {
	long f_pos;
	struct address_space *f_mapping;
} __pai;

struct sluice_not_in_any_kernel {
	int x;
} __pai;

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 100,
	BPF_MAP_TYPE_RINGBUF = 200,
	BPF_MAP_TYPE_SLUICE_MISSING = 300,
};

enum bpf_map_type___new {
	BPF_MAP_TYPE_ARENA___new = 7,
};

struct out {
	u64 v[32];
};

static __always_inline struct task_struct *current(void)
{
	return (struct task_struct *)bpf_get_current_task();
}

SEC("kprobe/do_nanosleep")
int core_fields(void *ctx)
{
	struct task_struct *t = current(), *parent = NULL;
	struct file *f = (struct file *)bpf_get_current_task();
	struct file___v2 *f2 = (struct file___v2 *)f;
	int pid = 0, ptgid = 0;
	char c = 0;
	void *mapping = NULL, *lock = NULL, *mapping2 = NULL;

	read_kernel(&pid, &t->pid);
	read_kernel(&parent, &t->real_parent);
	read_kernel(&ptgid, &parent->tgid);
	read_kernel(&c, &t->comm[3]);
	read_kernel(&pid, &t[1].pid);
	read_kernel(&mapping, &f->f_mapping);
	lock = __builtin_preserve_access_index(&f->f_pos_lock);
	read_kernel(&mapping2, &f2->f_mapping);
	return pid + ptgid + c + (mapping != mapping2) + (lock != NULL);
}

SEC("kprobe/do_nanosleep")
int core_info(void *ctx)
{
	struct task_struct *t = current();
	struct task_struct___old *old = (void *)t;
	struct file *f = (void *)t;
	u64 r = 0;
	long state = 0;

	r += field_info(t->prio, FIELD_BYTE_SIZE);
	r += field_info(t->flags, FIELD_SIGNED);
	r += field_info(t->prio, FIELD_SIGNED);
	r += field_info(f->f_flags, FIELD_EXISTS);
	r += field_info(t->comm, FIELD_BYTE_SIZE);
	if (field_info(old->state, FIELD_EXISTS))
		read_kernel(&state, &old->state);
	r += state;
	return r;
}

SEC("kprobe/do_nanosleep")
int core_bitfield(void *ctx)
{
	struct task_struct *t = current();
	u64 v = 0;
	unsigned int off = field_info(t->init_private_fork_class, FIELD_BYTE_OFFSET);
	unsigned int size = field_info(t->init_private_fork_class, FIELD_BYTE_SIZE);

	if (size > 8)
		return 0;
	bpf_probe_read_kernel(&v, size & 15, (char *)t + off);
	v <<= field_info(t->init_private_fork_class, FIELD_LSHIFT_U64);
	v >>= field_info(t->init_private_fork_class, FIELD_RSHIFT_U64);
	v += field_info(t->in_iowait, FIELD_LSHIFT_U64);
	v += field_info(t->in_execve, FIELD_RSHIFT_U64);
	v += field_info(t->in_execve, FIELD_SIGNED);
	return v;
}

SEC("kprobe/do_nanosleep")
int core_types(void *ctx)
{
	u64 r = 0;

	r += type_id_local(struct task_struct);
	r += type_id_kernel(struct task_struct);
	r += type_id_kernel(struct file);
	r += type_info(struct task_struct, TYPE_EXISTS);
	r += type_info(struct task_struct, TYPE_SIZE);
	r += type_info(struct file___v2, TYPE_SIZE);
	r += type_info(struct sluice_not_in_any_kernel, TYPE_EXISTS);
	r += type_info(struct sluice_not_in_any_kernel, TYPE_SIZE);
	r += enum_info(enum bpf_map_type, BPF_MAP_TYPE_RINGBUF, ENUMVAL_EXISTS);
	r += enum_info(enum bpf_map_type, BPF_MAP_TYPE_RINGBUF, ENUMVAL_VALUE);
	r += enum_info(enum bpf_map_type, BPF_MAP_TYPE_HASH, ENUMVAL_VALUE);
	r += enum_info(enum bpf_map_type, BPF_MAP_TYPE_SLUICE_MISSING, ENUMVAL_EXISTS);
	r += enum_info(enum bpf_map_type___new, BPF_MAP_TYPE_ARENA___new, ENUMVAL_VALUE);
	return r;
}

char _license[] SEC("license") = "GPL";
