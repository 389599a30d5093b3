// SPDX-License-Identifier: GPL-2.0
/*
 * um_target.c: the binary tests/bpf/uprobe_multi.o probes. Four functions whose names
 * match um_hit_* (three of them um_hit_?) and two that do not (um_miss, hit_um_a), each
 * called a known number of times: um_hit_a 3, um_hit_b 5, um_hit_c 7, um_hit_long 2,
 * um_miss 11, hit_um_a 13.
 *
 * It prints its function addresses ("um_hit_a=0x... ..."), waits for a line on stdin,
 * makes the calls, prints "done", waits for another line and exits: the tests attach
 * between the first two lines and read the maps after "done".
 */
#include <stdio.h>

#define F(name, k) \
	__attribute__((noinline)) int name(int x) \
	{ \
		__asm__ volatile("" ::: "memory"); \
		return x * k; \
	}

F(um_hit_a, 2)
F(um_hit_b, 3)
F(um_hit_c, 5)
F(um_hit_long, 7)
F(um_miss, 11)
F(hit_um_a, 13)

static const struct {
	const char *name;
	int (*f)(int);
	int calls;
} funcs[] = {
	{ "um_hit_a", um_hit_a, 3 },   { "um_hit_b", um_hit_b, 5 },
	{ "um_hit_c", um_hit_c, 7 },   { "um_hit_long", um_hit_long, 2 },
	{ "um_miss", um_miss, 11 },    { "hit_um_a", hit_um_a, 13 },
};

int main(void)
{
	char line[16];
	volatile int sum = 0;
	unsigned i;
	int n;

	for (i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		printf("%s%s=%p", i ? " " : "", funcs[i].name, (void *)funcs[i].f);
	printf("\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
		for (n = 0; n < funcs[i].calls; n++)
			sum += funcs[i].f(n);
	printf("done %d\n", sum);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	return 0;
}
