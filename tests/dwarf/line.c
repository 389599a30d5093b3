/* The probed program of cli/tests/record_dwarf_line.rs (compiled there with gcc and clang,
 * -g -O0 and -O2): a loop whose locals change every iteration, probed at a line inside it
 * (`uprobe/BIN:walk:LINE(i, total, n, $err)`), so each hit must see that iteration's
 * values, not the entry's.
 *
 * usage: line N
 * Waits for a line on stdin (the probes are attached by then), then calls walk(N, -3), which
 * for i in 0..N adds i * step - 7 to total and calls report(i, total, n) on the line the
 * test probes: report prints "hit i total n", the values the probe must read there (total
 * negative and changing, so a stale or wrongly sized value shows). `step` is not fetched:
 * clang -O2 folds it into the loop, leaving only its entry value. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void report(long i, long total, long n)
{
    printf("hit %ld %ld %ld\n", i, total, n);
}

__attribute__((noinline)) long walk(long n, int step)
{
    long total = -100000;
    for (long i = 0; i < n; i++) {
        total += i * step - 7;
        report(i, total, n); /* probed line */
    }
    return total;
}

int main(int argc, char **argv)
{
    char line[16];
    if (argc != 2)
        return 2;
    long n = atol(argv[1]);
    if (!fgets(line, sizeof line, stdin))
        return 3;
    printf("total %ld\n", walk(n, -3));
    return 0;
}
