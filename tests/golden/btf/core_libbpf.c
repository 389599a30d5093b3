// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * core_libbpf.c: prints libbpf's CO-RE decisions for an object, the oracle of
 * core/tests/btf_core.rs.
 *
 *   cc -o core_libbpf core_libbpf.c -lbpf && ./core_libbpf OBJ.o
 *
 * Opens OBJ.o and loads it (root: libbpf resolves CO-RE against
 * /sys/kernel/btf/vmlinux before loading the programs; whether the kernel
 * then accepts them does not matter here), printing libbpf's debug log lines
 * about relocations, e.g.
 *   prog 'core_fields': relo #0: patched insn #3 (ALU/ALU64) imm 0 -> 2528
 *   prog 'core_info': relo #5: substituting insn #20 w/ invalid insn
 */
#include <bpf/libbpf.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	char line[1024];

	(void)level;
	vsnprintf(line, sizeof(line), fmt, args);
	if (strstr(line, "relo #"))
		fputs(line, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OBJ.o\n", argv[0]);
		return 2;
	}
	libbpf_set_print(print);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "%s: cannot open\n", argv[1]);
		return 1;
	}
	bpf_object__load(obj);
	bpf_object__close(obj);
	return 0;
}
