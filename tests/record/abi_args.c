/* The traced program of runtime/tests/uprobe_abi.rs, built 64-bit and with `gcc -m32`: for
 * each byte K read from stdin it calls abi_target with row K of `rows` (the test holds the
 * same table), then writes one byte to stdout, so the test knows the probe has run. Ends at
 * EOF.
 *
 * An i386 build passes the arguments on the stack (cdecl: a at sp+4, b at sp+8, c at
 * sp+12, d at sp+16..24), an x86-64 build in di, si, dx, cx.
 */
#include <limits.h>
#include <unistd.h>

volatile long long sink;

__attribute__((noinline, noclone, used)) long long abi_target(int a, unsigned char b, short c,
                                                              long long d)
{
	sink += a + b + c + d;
	return sink;
}

static const struct {
	int a;
	unsigned char b;
	short c;
	long long d;
} rows[] = {
	{ -7, 0xff, -2, -5000000000LL },
	{ INT_MAX, 0, SHRT_MAX, 0x0123456789abcdefLL },
	{ INT_MIN, 0x80, SHRT_MIN, LLONG_MIN },
	{ 42, 1, 300, 7 },
};

int main(void)
{
	unsigned char k;
	while (read(0, &k, 1) == 1) {
		if (k < sizeof rows / sizeof rows[0])
			abi_target(rows[k].a, rows[k].b, rows[k].c, rows[k].d);
		if (write(1, &k, 1) != 1)
			return 1;
	}
	return 0;
}
