// SPDX-License-Identifier: GPL-2.0
/* usdt_args.c: the sluice:args sites of usdt_demo.c, without a semaphore. */
#include <sys/sdt.h>

void step(long i);
void last(void);

static volatile long sink;

__attribute__((noinline)) void step(long i)
{
	int a = (int)(-1000 - i);
	unsigned long b = 0x100000000ul * (unsigned long)i + 7;
	short c = (short)(i - 5);
	unsigned char d = (unsigned char)(250 + i);
	STAP_PROBE4(sluice, args, a, b, c, d);
	sink += a + (long)b + c + d;
}

__attribute__((noinline)) void last(void)
{
	STAP_PROBE4(sluice, args, -7, 42, -1, 255);
}
