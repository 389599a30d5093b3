/* Probe-resolution fixture for core::dwarf (compiled at test time, -O0 and -O2, x86_64 and
 * -m32): structs and pointer chains, stack slots, register and location-list variables,
 * inlined functions, globals, signed/unsigned chars and shorts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ops {
    long (*read)(void *, long);
    unsigned short flags;
    signed char prio;
};

struct mapping {
    int refs;
    const struct ops *a_ops;
    unsigned char tag;
};

typedef struct file {
    char name[12];
    struct mapping *f_mapping;
    union {
        short s;
        unsigned int u;
    } small;
    long long pos;
    int slots[4];
    struct mapping inline_map;
} file_t;

int counter = 3;
static short neg_short = -7;
unsigned char byte_global = 200;
struct mapping global_map = {1, 0, 9};

static long do_read(void *p, long n) { return n + (p != 0); }
static const struct ops the_ops = {do_read, 0x1234, -5};

__attribute__((noinline)) long process(file_t *file, long bytes, signed char sc, unsigned short us)
{
    long offset = bytes * 2;
    const struct ops *a_ops = file->f_mapping->a_ops;
    if (sc < 0)
        offset += us;
    for (int i = 0; i < 4; i++) {
        int slot = file->slots[i];
        offset += slot * sc;
        counter += slot;
    }
    offset += a_ops->read(file, bytes);
    return offset + file->pos;
}

static inline __attribute__((always_inline)) int scale(int x, int factor)
{
    int scaled = x * factor;
    counter += scaled;
    return scaled + neg_short;
}

__attribute__((noinline)) int twice(int a, int b)
{
    int r = scale(a, 2);
    r += scale(b, 3);
    return r;
}

__attribute__((noinline)) unsigned sum_bytes(const unsigned char *buf, unsigned len)
{
    unsigned total = 0;
    for (unsigned i = 0; i < len; i++)
        total += buf[i];
    byte_global = (unsigned char)total;
    return total;
}

int main(int argc, char **argv)
{
    struct mapping m = {2, &the_ops, 7};
    file_t f;
    memset(&f, 0, sizeof f);
    strcpy(f.name, "demo");
    f.f_mapping = &m;
    f.small.s = -3;
    f.pos = 40;
    for (int i = 0; i < 4; i++)
        f.slots[i] = i + argc;
    long r = process(&f, argc * 10, (signed char)-argc, (unsigned short)(argc + 60000));
    int t = twice(argc, argc + 1);
    unsigned s = sum_bytes((const unsigned char *)argv[0], (unsigned)strlen(argv[0]));
    printf("%ld %d %u %d\n", r, t, s, counter + global_map.refs);
    return 0;
}
