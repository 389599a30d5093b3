// SPDX-License-Identifier: GPL-2.0
/*
 * btf_kinds.c: one object whose .BTF holds every kind clang 14 writes.
 *
 * INT (signed, unsigned, char, _Bool, __int128), PTR, ARRAY (nested), STRUCT
 * with bitfields (kind_flag), UNION, ENUM (signed and unsigned), FWD (struct
 * and union), TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FUNC_PROTO (named and
 * variadic-free params), VAR and DATASEC (.maps, .rodata, .data, .bss),
 * FLOAT (float, double), DECL_TAG (on a struct, a member, a function and a
 * parameter), TYPE_TAG (on a pointer). ENUM64 needs clang 15: the tests craft
 * it by hand and read it from vmlinux.
 *
 * The program only returns 0 and touches no global: it loads with any loader.
 * The types reach BTF through its argument's type and the unreferenced
 * globals.
 */
#include "sluice_bpf.h"

#define __tag(x) __attribute__((btf_decl_tag(x)))
#define __user __attribute__((btf_type_tag("user")))

struct opaque;
union opaque_u;

enum colour { RED, GREEN = 5, BLUE = 0x7fffffff };
enum delta { DOWN = -1, LEVEL = 0, UP = 1 };

typedef unsigned long long u64_t;
typedef const volatile int cv_int;

struct point {
	int x, y;
};

union either {
	u32 word;
	u8 bytes[4];
	struct point *p;
};

struct kinds {
	s8 a;
	u8 b;
	char c;
	_Bool flag;
	s16 d;
	u16 e;
	s32 f __tag("member_tag");
	u32 g : 3;
	u32 h : 13;
	s32 i : 7;
	u64 j : 40;
	__int128 wide;
	unsigned __int128 uwide;
	float fl;
	double db;
	u64_t typedefd;
	cv_int cv;
	int *restrict rp;
	int __user *uptr;
	struct opaque *op;
	union opaque_u *ou;
	enum colour colour;
	enum delta delta;
	int matrix[2][3];
	struct point pts[4];
	union either either;
	struct {
		int inner_a;
		union {
			int inner_b;
			long inner_c;
		};
	} anon;
	void (*callback)(int code, const char *msg);
	char tail[];
} __tag("struct_tag");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, u32);
	__type(value, struct point);
} points SEC(".maps");

const volatile float ro_scale = 1.5f;
double data_ratio = 0.25;
struct point bss_origin;

SEC("kprobe/do_nanosleep")
int __tag("func_tag") kinds_probe(struct kinds *k __tag("param_tag"))
{
	return 0;
}

char _license[] SEC("license") = "GPL";
