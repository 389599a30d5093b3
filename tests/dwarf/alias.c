/* A function known by two names, as glibc's stdio is (`fwrite` is an alias of
 * `_IO_fwrite`): DWARF names the definition, users type the alias. */
#include <stdio.h>

__attribute__((noinline)) long impl_write(const char *buf, long count)
{
	return buf[0] + count;
}

extern long public_write(const char *buf, long count) __attribute__((alias("impl_write")));

int main(int argc, char **argv)
{
	(void)argv;
	printf("%ld\n", public_write("x", argc));
	return 0;
}
