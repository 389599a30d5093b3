/* A shared library for cli/tests/record_dwarf_pie.rs (built there with -shared -fPIC): a
 * global of the library, read by a uprobe on the library while the program that loaded it
 * runs (tests/dwarf/pic_main.c). Only the library touches lib_total (no copy relocation
 * into the program), and it prints the values the probe must see. */
#include <stdio.h>

long lib_total = -5000;

__attribute__((noinline)) long lib_add(int n)
{
    printf("lib_add %d %ld\n", n, lib_total);
    fflush(stdout);
    lib_total += (long)n * -7;
    return lib_total;
}
