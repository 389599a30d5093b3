/* Line placement cases for FUNC:LINE (core/tests/dwarf_resolve.rs, cli/tests/line_oracle.rs,
 * which compares every line of every function here with `perf probe -x BIN -D 'FUNC:L vars'`;
 * built with gcc and clang at -O0 and -O2):
 *   - mix: a static function inlined on a line of its caller (the line's probe is the
 *     inlined call's entry), and a loop;
 *   - pair: two statements on their own lines that -O2 makes share an address;
 *   - DEFINE_OP(twice, ...): a macro-made function, like the kernel's SYSCALL_DEFINE: an
 *     outer function inlining an inner one, every row on the macro's line, so FUNC:0 must be
 *     the function's entry only.
 * usage: lines N (prints a checksum) */
#include <stdio.h>
#include <stdlib.h>

volatile long sink_value;

__attribute__((noinline)) void sink(long v)
{
    sink_value = v;
}

static inline __attribute__((always_inline)) long twist(long x, int k)
{
    long t = x ^ k;
    sink(t);
    return t + k;
}

__attribute__((noinline)) long mix(long a, int k)
{
    long acc = a;
    for (int i = 0; i < k; i++) {
        acc += twist(acc, i);
        sink(acc);
    }
    return acc;
}

__attribute__((noinline)) long pair(long a, long b)
{
    volatile long x;
    long y;
    x = a;
    y = b;
    sink(x + y);
    return y;
}

#define DEFINE_OP(name, arg) \
    static inline long __do_##name(long arg); \
    __attribute__((noinline)) long name(long arg) { long r = __do_##name(arg); sink(r); return r; } \
    static inline long __do_##name(long arg)

DEFINE_OP(twice, v)
{
    return v * 2;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 3;
    printf("%ld\n", mix(n, 3) + pair(n, n + 1) + twice(n));
    return 0;
}
