//! x86-64 tables.

/// `__NR_bpf` (`arch/x86/entry/syscalls/syscall_64.tbl`).
#[doc(alias = "__NR_bpf")]
pub const SYS_BPF: u32 = 321;

/// `__NR_perf_event_open` (`arch/x86/entry/syscalls/syscall_64.tbl`).
#[doc(alias = "__NR_perf_event_open")]
pub const SYS_PERF_EVENT_OPEN: u32 = 298;

/// `e_machine` of x86-64 ELF files.
#[doc(alias = "EM_X86_64")]
pub const E_MACHINE: u16 = 62;

use super::reg::{ArgPassing, Reg};

/// `struct pt_regs` (`arch/x86/include/asm/ptrace.h`, the uapi one in
/// `arch/x86/include/uapi/asm/ptrace.h` without `__KERNEL__`): 21 `unsigned long`s, in
/// the order the entry code pushes them. Names as the kprobe tracer spells them
/// (`regs_query_register_offset()`), without the `%`.
#[doc(alias = "pt_regs")]
pub const PT_REGS: &[Reg] = &[
    Reg::new("r15", 0),
    Reg::new("r14", 8),
    Reg::new("r13", 16),
    Reg::new("r12", 24),
    Reg::new("bp", 32),
    Reg::new("bx", 40),
    Reg::new("r11", 48),
    Reg::new("r10", 56),
    Reg::new("r9", 64),
    Reg::new("r8", 72),
    Reg::new("ax", 80),
    Reg::new("cx", 88),
    Reg::new("dx", 96),
    Reg::new("si", 104),
    Reg::new("di", 112),
    Reg::new("orig_ax", 120),
    Reg::new("ip", 128),
    Reg::new("cs", 136),
    Reg::new("flags", 144),
    Reg::new("sp", 152),
    Reg::new("ss", 160),
];

/// `sizeof(struct pt_regs)`.
pub const PT_REGS_SIZE: u16 = 168;

/// Bytes per `pt_regs` slot (`unsigned long`).
pub const REG_SIZE: u8 = 8;

/// DWARF register numbers 0..=15 (System V x86-64 psABI, figure 3.36), as tracefs names.
pub const DWARF_REGS: &[&str] = &[
    "ax", "dx", "cx", "bx", "si", "di", "bp", "sp", "r8", "r9", "r10", "r11", "r12", "r13", "r14",
    "r15",
];

/// Integer argument registers, kernel and user space alike (System V psABI).
pub const ARG_REGS: &[&str] = &["di", "si", "dx", "cx", "r8", "r9"];

/// How user space passes integer arguments.
pub const USER_ARGS: ArgPassing = ArgPassing::Regs(ARG_REGS);

/// How the kernel passes integer arguments.
pub const KERNEL_ARGS: ArgPassing = ArgPassing::Regs(ARG_REGS);

/// The register holding a function's return value.
pub const RETURN_REG: &str = "ax";

/// The stack pointer.
pub const SP_REG: &str = "sp";

/// The program counter: at a uprobe, the probed instruction's address.
pub const IP_REG: &str = "ip";

/// Whether fetch-args read the stack pointer as `$stack` rather than `%sp` (no: `%sp`).
pub const SP_FETCH_IS_STACK: bool = false;

/// `sizeof(void *)`.
pub const POINTER_SIZE: u8 = 8;

/// `sizeof(long)` (LP64).
pub const LONG_SIZE: u8 = 8;

/// Whether plain `char` is signed in the psABI.
pub const CHAR_SIGNED: bool = true;
