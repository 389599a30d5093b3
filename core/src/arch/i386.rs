//! 32-bit x86 (also under IA32 emulation) tables.

/// `__NR_bpf` (`arch/x86/entry/syscalls/syscall_32.tbl`).
#[doc(alias = "__NR_bpf")]
pub const SYS_BPF: u32 = 357;

/// `__NR_perf_event_open` (`arch/x86/entry/syscalls/syscall_32.tbl`).
#[doc(alias = "__NR_perf_event_open")]
pub const SYS_PERF_EVENT_OPEN: u32 = 336;

/// `e_machine` of i386 ELF files.
#[doc(alias = "EM_386")]
pub const E_MACHINE: u16 = 3;

use super::reg::{ArgPassing, Reg};

/// `struct pt_regs` of a 32-bit kernel (`arch/x86/include/asm/ptrace.h`): 17 words; the
/// segment registers are 16 bits wide with 16 bits of padding each. Names as the kprobe
/// tracer spells them, without the `%`.
///
/// A 32-bit task on a 64-bit kernel (IA32 emulation) has the x86-64 layout instead: the
/// layout is the kernel's, the calling convention the code's.
#[doc(alias = "pt_regs")]
pub const PT_REGS: &[Reg] = &[
    Reg::new("bx", 0),
    Reg::new("cx", 4),
    Reg::new("dx", 8),
    Reg::new("si", 12),
    Reg::new("di", 16),
    Reg::new("bp", 20),
    Reg::new("ax", 24),
    Reg::new("ds", 28),
    Reg::new("es", 32),
    Reg::new("fs", 36),
    Reg::new("gs", 40),
    Reg::new("orig_ax", 44),
    Reg::new("ip", 48),
    Reg::new("cs", 52),
    Reg::new("flags", 56),
    Reg::new("sp", 60),
    Reg::new("ss", 64),
];

/// `sizeof(struct pt_regs)`.
pub const PT_REGS_SIZE: u16 = 68;

/// Bytes per `pt_regs` slot (`unsigned long`).
pub const REG_SIZE: u8 = 4;

/// DWARF register numbers 0..=8 (System V i386 psABI), as tracefs names.
pub const DWARF_REGS: &[&str] = &["ax", "cx", "dx", "bx", "sp", "bp", "si", "di", "ip"];

/// The kernel's integer argument registers: it is built with `-mregparm=3`.
pub const KERNEL_ARG_REGS: &[&str] = &["ax", "dx", "cx"];

/// How user space passes integer arguments: all on the stack, the first at `sp + 4` on
/// entry (above the return address), each in a 4-byte slot (8 bytes for 64-bit ones).
pub const USER_ARGS: ArgPassing = ArgPassing::Stack { first: 4, slot: 4 };

/// How the kernel passes integer arguments (`regparm(3)`; the rest on the stack).
pub const KERNEL_ARGS: ArgPassing = ArgPassing::Regs(KERNEL_ARG_REGS);

/// The register holding a function's return value.
pub const RETURN_REG: &str = "ax";

/// The stack pointer.
pub const SP_REG: &str = "sp";

/// The program counter: at a uprobe, the probed instruction's address.
pub const IP_REG: &str = "ip";

/// Whether fetch-args read the stack pointer as `$stack` rather than `%sp`: a 32-bit kernel
/// saves `sp` in `pt_regs` only on a privilege change, so the tracer's `$stack` (from
/// `kernel_stack_pointer()`) is what `perf probe` writes (its `dwarf-regs.c`).
pub const SP_FETCH_IS_STACK: bool = true;

/// `sizeof(void *)`.
pub const POINTER_SIZE: u8 = 4;

/// `sizeof(long)` (ILP32).
pub const LONG_SIZE: u8 = 4;

/// Whether plain `char` is signed in the psABI.
pub const CHAR_SIGNED: bool = true;
