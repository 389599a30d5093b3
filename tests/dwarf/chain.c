/* The probed program of runtime/tests/dwarf_uprobe.rs (compiled there with gcc -g, -O0 and
 * -O2): the second seed's generic_perform_write(file, bytes, offset) reaching
 * file->f_mapping->a_ops through two pointers, and a local `chunk` of a lexical block.
 *
 * usage: chain A_OPS BYTES OFFSET [A_OPS BYTES OFFSET ...]
 * Waits for a line on stdin (the probes are attached by then), calls generic_perform_write
 * once per triple (A_OPS as a pointer value, BYTES unsigned, OFFSET signed; a triple whose
 * A_OPS is 0 passes a file whose f_mapping is unmapped, so the chain's read fails), then
 * prints one line per call: "A_OPS BYTES OFFSET CHUNK". */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

struct address_space_operations;

struct mapping {
    unsigned long nrpages;
    int refs;
    const struct address_space_operations *a_ops;
};

struct file {
    char name[12];
    unsigned int f_flags;
    long long f_pos;
    struct mapping *f_mapping;
};

volatile long sink_value;

__attribute__((noinline)) void sink(long v)
{
    sink_value = v;
}

__attribute__((noinline)) long generic_perform_write(struct file *file, size_t bytes, long long offset)
{
    long written = 0;
    if (bytes != 0) {
        long chunk = (long)(bytes * 3) + (long)offset;
        sink(chunk);
        written = chunk;
    }
    if (file->f_mapping != (struct mapping *)16)
        written += (long)(size_t)file->f_mapping->a_ops;
    return written + (long)file->f_pos;
}

int main(int argc, char **argv)
{
    char line[16];
    int n = (argc - 1) / 3;
    if (n < 1 || argc != 1 + 3 * n) {
        fprintf(stderr, "usage: chain A_OPS BYTES OFFSET...\n");
        return 2;
    }
    if (!fgets(line, sizeof line, stdin))
        return 3;
    for (int i = 0; i < n; i++) {
        unsigned long a_ops = strtoul(argv[1 + 3 * i], NULL, 0);
        size_t bytes = strtoul(argv[2 + 3 * i], NULL, 0);
        long long offset = strtoll(argv[3 + 3 * i], NULL, 0);
        struct mapping m = {7, 1, (const struct address_space_operations *)a_ops};
        struct file f = {"chain", 0x8001, 42, a_ops ? &m : (struct mapping *)16};
        long r = generic_perform_write(&f, bytes, offset);
        printf("%#lx %zu %lld %ld\n", a_ops, bytes, offset, (long)(bytes * 3) + (long)offset);
        (void)r;
    }
    return 0;
}
