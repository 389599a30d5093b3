// SPDX-License-Identifier: GPL-2.0
/*
 * many_args.c: a filter that decides on the four values the prologue passes in r2..r5,
 * for a probe that records more (cli/tests/record_many_args.rs): the test maps it to a
 * uprobe with six arguments, the sixth a string; the fifth and the string are recorded
 * by the kernel's fetch-args beside the sample, never passed.
 *
 *   uprobe//sluice/many_args:many_args_target(long, long, long, long)
 *       accepts a hit when b == 2a, c == 3a, d == 4a and a is even (the path is a
 *       placeholder: the tests give the real one with --event; the four C types make the
 *       object load standalone, its prologue by the calling convention)
 */
#include "sluice_bpf.h"

SEC("uprobe//sluice/many_args:many_args_target(long, long, long, long)")
int many_args_even(struct pt_regs *ctx, s64 a, s64 b, s64 c, s64 d)
{
	return b == 2 * a && c == 3 * a && d == 4 * a && (a & 1) == 0;
}

char _license[] SEC("license") = "GPL";
