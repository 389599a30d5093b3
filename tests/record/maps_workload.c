/*
 * maps_workload.c: known work for the map tests beside the real libbpf-tools
 * (cli/tests/real_maps.rs). Waits for one byte on stdin (both tools attached), then
 *
 *   maps_workload syscalls A B C   getppid A times, getuid B times, getgid C times
 *                                  (raw syscalls: no libc cache)
 *   maps_workload pingpong N       two threads hand a byte back and forth N times
 *                                  through two pipes: 2N wakeups and switches
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int ab[2], ba[2];
static long rounds;

static void *other(void *arg)
{
	char c;
	(void)arg;
	for (long i = 0; i < rounds; i++) {
		if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
			exit(3);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	char c;
	if (argc < 3 || read(0, &c, 1) != 1)
		return 2;
	if (strcmp(argv[1], "syscalls") == 0 && argc == 5) {
		long a = atol(argv[2]), b = atol(argv[3]), d = atol(argv[4]);
		for (long i = 0; i < a; i++)
			syscall(SYS_getppid);
		for (long i = 0; i < b; i++)
			syscall(SYS_getuid);
		for (long i = 0; i < d; i++)
			syscall(SYS_getgid);
		return 0;
	}
	if (strcmp(argv[1], "pingpong") == 0) {
		pthread_t t;
		rounds = atol(argv[2]);
		if (pipe(ab) || pipe(ba) || pthread_create(&t, NULL, other, NULL))
			return 3;
		for (long i = 0; i < rounds; i++) {
			if (write(ab[1], "x", 1) != 1 || read(ba[0], &c, 1) != 1)
				return 3;
		}
		pthread_join(t, NULL);
		return 0;
	}
	return 2;
}
