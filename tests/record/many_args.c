/* The traced program of cli/tests/record_many_args.rs: calls many_args_target with six
 * arguments, the last a string, N times (the i-th call: i, 2i, 3i, 4i, 5i, "call-i").
 *
 * usage: many_args N
 */
#include <stdio.h>
#include <stdlib.h>

volatile long sink;

__attribute__((noinline)) long many_args_target(long a, long b, long c, long d, long e,
                                                const char *s)
{
    sink += a + b + c + d + e + s[0];
    return sink;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 0) : 10;
    char buf[32];
    for (long i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, "call-%ld", i);
        many_args_target(i, 2 * i, 3 * i, 4 * i, 5 * i, buf);
    }
    return 0;
}
