/* The workload of runtime/tests/lost_count.rs: calls lost_count_target() N times as fast as
 * it can (a uprobe with a program on it fills a 1-page ring at once).
 *
 * usage: lost_count N
 */
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) void lost_count_target(unsigned long v)
{
    sink = v;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 0) : 1000;
    for (unsigned long i = 0; i < n; i++)
        lost_count_target(i);
    return 0;
}
