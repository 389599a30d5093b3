// SPDX-License-Identifier: GPL-2.0
/*
 * modern_kconfig.c: extern Kconfig variables (.kconfig) for the loader's tests.
 *
 *   kprobe/do_nanosleep  kconfig_probe: copies every extern into .bss, where
 *                        the test reads it back: an int (CONFIG_HZ), a bool
 *                        (CONFIG_BPF_SYSCALL), a tristate, a char, a string,
 *                        LINUX_KERNEL_VERSION, and a __weak extern no kernel
 *                        has (stays 0).
 */
#include "sluice_bpf.h"

enum libbpf_tristate {
	TRI_NO = 0,
	TRI_YES = 1,
	TRI_MODULE = 2,
};

#define __kconfig __attribute__((section(".kconfig")))
#define __weak __attribute__((weak))

extern int CONFIG_HZ __kconfig;
extern _Bool CONFIG_BPF_SYSCALL __kconfig;
extern enum libbpf_tristate CONFIG_EXT4_FS __kconfig __weak;
extern char CONFIG_BPF_JIT __kconfig __weak;
extern char CONFIG_LOCALVERSION[16] __kconfig __weak;
extern unsigned int LINUX_KERNEL_VERSION __kconfig;
extern int CONFIG_SLUICE_NO_SUCH_OPTION __kconfig __weak;

struct seen {
	long long hz;
	unsigned int version;
	int tristate;
	int missing;
	char bpf_syscall;
	char jit;
	char localversion[16];
};

struct seen seen;

SEC("kprobe/do_nanosleep")
int kconfig_probe(void *ctx)
{
	seen.hz = CONFIG_HZ;
	seen.version = LINUX_KERNEL_VERSION;
	seen.tristate = CONFIG_EXT4_FS;
	seen.missing = CONFIG_SLUICE_NO_SUCH_OPTION;
	seen.bpf_syscall = CONFIG_BPF_SYSCALL;
	seen.jit = CONFIG_BPF_JIT;
	__builtin_memcpy(seen.localversion, CONFIG_LOCALVERSION, 16);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
