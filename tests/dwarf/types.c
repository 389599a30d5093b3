/* The probed program of cli/tests/record_dwarf_types.rs (compiled there with gcc and clang,
 * -g -O0 and -O2): every C integer width, signed and unsigned, as parameters, a member
 * chain through two struct pointers, a local of a lexical block and a global.
 *
 * usage: types N
 * Waits for a line on stdin (the probes are attached by then), then for i in 0..N calls
 *   small(signed char, unsigned char, short, unsigned short)
 *   wide(int, unsigned, long, unsigned long)
 *   chain(struct outer *)           o->in->c (char), o->in->us, o->in->l
 *   block(int n)                    the global g_total, and `sq`, a local of a lexical block
 * and prints one line per call, "NAME v1 v2 ...", the values as the probe sees them
 * (signed in decimal, unsigned in decimal). Values are negative or above the signed range
 * of their type, so a wrong width or sign shows. */
#include <stdio.h>
#include <stdlib.h>

struct inner {
    short pad;
    signed char c;
    unsigned short us;
    long l;
};

struct outer {
    int tag;
    struct inner *in;
};

volatile long sink_value;
long g_total = -1000;

__attribute__((noinline)) void sink(long v)
{
    sink_value = v;
}

__attribute__((noinline)) int small(signed char sc, unsigned char uc, short ss, unsigned short us)
{
    sink(sc + uc + ss + us);
    return sc ^ uc ^ ss ^ us;
}

__attribute__((noinline)) long wide(int i, unsigned u, long l, unsigned long ul)
{
    sink((long)(i + u) + l + (long)ul);
    return i ^ (long)u ^ l ^ (long)ul;
}

__attribute__((noinline)) long chain(struct outer *o)
{
    sink(o->tag);
    return o->in->c + o->in->us + o->in->l;
}

__attribute__((noinline)) long block(int n)
{
    long r = n;
    if (n != 0) {
        long sq = (long)n * n * -3;
        sink(sq);
        r += sq;
    }
    g_total += r;
    return r;
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
        signed char sc = (signed char)(-3 - i);
        unsigned char uc = (unsigned char)(250 + i);
        short ss = (short)(-30000 + i);
        unsigned short us = (unsigned short)(65000 + i);
        int si = -2000000000 + i;
        unsigned ui = 4000000000u + (unsigned)i;
        long sl = -9000000000000000000L + i;
        unsigned long ul = 18000000000000000000UL + (unsigned long)i;
        struct inner in = {7, (signed char)(-100 - i), (unsigned short)(60000 + i), -123456789012L - i};
        struct outer o = {i, &in};
        printf("small %d %u %d %u\n", sc, uc, ss, us);
        small(sc, uc, ss, us);
        printf("wide %d %u %ld %lu\n", si, ui, sl, ul);
        wide(si, ui, sl, ul);
        printf("chain %d %u %ld\n", in.c, in.us, in.l);
        chain(&o);
        printf("block %d %ld %ld\n", i + 1, g_total, (long)(i + 1) * (i + 1) * -3);
        block(i + 1);
    }
    return 0;
}
