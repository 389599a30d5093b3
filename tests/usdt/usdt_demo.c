// SPDX-License-Identifier: GPL-2.0
/*
 * usdt_demo.c: the traced program of runtime/tests/usdt.rs, with sys/sdt.h probes.
 *
 *   sluice:args     four arguments of different sizes and signs, at two sites (the
 *                   loop's, and one after it with constants)
 *   sluice:guarded  guarded by its semaphore: fired only while a tracer holds it
 *
 * Built with usdt_args.c (the sluice:args sites, without a semaphore: sys/sdt.h's
 * _SDT_HAS_SEMAPHORES is per translation unit).
 *
 * Protocol on stdin/stdout: prints "ready", reads a line (the tracer attached), runs
 * N iterations (argv[1]), prints "enabled=K" (how many of them saw the semaphore set),
 * reads a line (the tracer detached), prints "after=S" (the semaphore then), exits.
 */
#define _SDT_HAS_SEMAPHORES 1
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>

__extension__ unsigned short sluice_guarded_semaphore
	__attribute__((unused)) __attribute__((section(".probes")));

void step(long i);
void last(void);

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3;
	long enabled = 0;
	char line[16];

	printf("ready semaphore=%u\n", sluice_guarded_semaphore);
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 1;
	for (long i = 0; i < n; i++) {
		step(i);
		if (sluice_guarded_semaphore) {
			enabled++;
			STAP_PROBE2(sluice, guarded, i, (signed char)-i);
		}
	}
	last();
	printf("enabled=%ld\n", enabled);
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		return 1;
	printf("after=%u\n", sluice_guarded_semaphore);
	return 0;
}
