/* The probed program of cli/tests/record_dwarf_inline.rs (compiled there with gcc and clang,
 * -g -O0 and -O2): a function inlined into two callers, so its DWARF has two instances, each
 * with its own locations for the same parameters.
 *
 * usage: inline N
 * Waits for a line on stdin (the probes are attached by then), then for i in 0..N calls
 *   left(long a, int f, unsigned char t)     both inline scale(x, factor, tag)
 *   right(int f, unsigned char t, long a)    (its parameters in other registers, so
 *                                             that optimised instances differ)
 * and prints, before each call, "CALLER x factor tag": the values scale's parameters take in
 * that instance (negative, and a tag above 127, so a wrong width or sign shows). */
#include <stdio.h>
#include <stdlib.h>

volatile long sink_value;

__attribute__((noinline)) void sink(long v)
{
    sink_value = v;
}

static inline __attribute__((always_inline)) long scale(long x, int factor, unsigned char tag)
{
    long r = x * factor + tag;
    sink(r);
    return r;
}

__attribute__((noinline)) long left(long a, int f, unsigned char t)
{
    return scale(a, f, t) + 1;
}

__attribute__((noinline)) long right(int f, unsigned char t, long a)
{
    return scale(a, f, t) * 2;
}

int main(int argc, char **argv)
{
    char line[16];
    if (argc != 2)
        return 2;
    int n = atoi(argv[1]);
    if (!fgets(line, sizeof line, stdin))
        return 3;
    for (int i = 0; i < n; i++) {
        long a = -1000 - i;
        int f = -3 - i;
        unsigned char t = (unsigned char)(200 + i);
        printf("left %ld %d %u\n", a, f, t);
        left(a, f, t);
        printf("right %ld %d %u\n", a * 7, f - 10, (unsigned char)(t + 20));
        right(f - 10, (unsigned char)(t + 20), a * 7);
    }
    return 0;
}
