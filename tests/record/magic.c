/* The traced program of cli/tests/record_magic.rs: calls magic_target(v) for a pseudo-random
 * sequence of N values, some of them the magic value, and prints how many were.
 *
 * usage: magic N SEED
 */
#include <stdio.h>
#include <stdlib.h>

#define MAGIC 0x5ca1ab1eUL

volatile unsigned long sink;

__attribute__((noinline)) void magic_target(unsigned long v)
{
    sink = v;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000;
    unsigned long state = argc > 2 ? strtoul(argv[2], NULL, 0) : 1;
    unsigned long magic = 0;
    for (unsigned long i = 0; i < n; i++) {
        state = state * 6364136223846793005UL + 1442695040888963407UL;
        /* about one call in seven passes the magic value; the others miss it by one bit */
        unsigned long v = (state >> 33) % 7 == 0 ? MAGIC : MAGIC ^ (1UL << ((state >> 40) % 63));
        magic += v == MAGIC;
        magic_target(v);
    }
    printf("magic %lu of %lu\n", magic, n);
    return 0;
}
