/* The traced program of cli/tests/perf_data.rs: N rounds of getpgid(BASE + i) (a pid that
 * does not exist: the call fails, the tracepoint fires) and traced_call(i * 3), then a line
 * with how many.
 *
 * usage: perf_data N
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

volatile unsigned long sink;

__attribute__((noinline)) void traced_call(unsigned long v)
{
    sink = v;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 10;
    for (unsigned long i = 0; i < n; i++) {
        getpgid((pid_t)(3000000 + i));
        traced_call(i * 3);
        usleep(1000);
    }
    printf("calls %lu\n", n);
    return 0;
}
