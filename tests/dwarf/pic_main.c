/* The program of cli/tests/record_dwarf_pie.rs that loads tests/dwarf/pic_lib.c.
 *
 * usage: pic_main N
 * Waits for a line on stdin (the probes are attached by then), then calls lib_add(i + 1)
 * for i in 0..N (the library prints what its probe must see). */
#include <stdio.h>
#include <stdlib.h>

long lib_add(int n);

int main(int argc, char **argv)
{
    char line[16];
    if (argc != 2)
        return 2;
    int n = atoi(argv[1]);
    if (!fgets(line, sizeof line, stdin))
        return 3;
    for (int i = 0; i < n; i++)
        lib_add(i + 1);
    return 0;
}
