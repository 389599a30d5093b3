// SPDX-License-Identifier: GPL-2.0
/*
 * record_magic.c: a uprobe filter that passes only calls whose first argument is a magic
 * value (cli/tests/record_magic.rs). The argument arrives in r2 from the prologue sluice
 * generates from the typed spec (the calling convention of the running arch: %di on x86_64,
 * x0 on arm64), so the program itself is arch-independent. The path is a placeholder: the
 * test gives the real spec with `--event magic=uprobe/BIN:magic_target(unsigned long)`.
 */
#include "sluice_bpf.h"

#define MAGIC 0x5ca1ab1eUL

SEC("uprobe//sluice/record_magic:magic_target(unsigned long)")
int magic(struct pt_regs *ctx, unsigned long first)
{
	return first == MAGIC;
}

char _license[] SEC("license") = "GPL";
