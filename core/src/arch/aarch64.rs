//! AArch64 tables.

/// `__NR_bpf` (`include/uapi/asm-generic/unistd.h`).
#[doc(alias = "__NR_bpf")]
pub const SYS_BPF: u32 = 280;

/// `__NR_perf_event_open` (`include/uapi/asm-generic/unistd.h`).
#[doc(alias = "__NR_perf_event_open")]
pub const SYS_PERF_EVENT_OPEN: u32 = 241;

/// `e_machine` of AArch64 ELF files.
#[doc(alias = "EM_AARCH64")]
pub const E_MACHINE: u16 = 183;

use super::reg::{ArgPassing, Reg};

/// `struct user_pt_regs` (`arch/arm64/include/uapi/asm/ptrace.h`), the first member of the
/// kernel's `struct pt_regs` and what a kprobe program's context is (`bpf_user_pt_regs_t`):
/// `regs[31]`, `sp`, `pc`, `pstate`. Names as the kprobe tracer spells them.
#[doc(alias = "user_pt_regs")]
pub const PT_REGS: &[Reg] = &[
    Reg::new("x0", 0),
    Reg::new("x1", 8),
    Reg::new("x2", 16),
    Reg::new("x3", 24),
    Reg::new("x4", 32),
    Reg::new("x5", 40),
    Reg::new("x6", 48),
    Reg::new("x7", 56),
    Reg::new("x8", 64),
    Reg::new("x9", 72),
    Reg::new("x10", 80),
    Reg::new("x11", 88),
    Reg::new("x12", 96),
    Reg::new("x13", 104),
    Reg::new("x14", 112),
    Reg::new("x15", 120),
    Reg::new("x16", 128),
    Reg::new("x17", 136),
    Reg::new("x18", 144),
    Reg::new("x19", 152),
    Reg::new("x20", 160),
    Reg::new("x21", 168),
    Reg::new("x22", 176),
    Reg::new("x23", 184),
    Reg::new("x24", 192),
    Reg::new("x25", 200),
    Reg::new("x26", 208),
    Reg::new("x27", 216),
    Reg::new("x28", 224),
    Reg::new("x29", 232),
    Reg::new("x30", 240),
    Reg::new("sp", 248),
    Reg::new("pc", 256),
    Reg::new("pstate", 264),
];

/// `sizeof(struct user_pt_regs)`.
pub const PT_REGS_SIZE: u16 = 272;

/// Bytes per `pt_regs` slot.
pub const REG_SIZE: u8 = 8;

/// DWARF register numbers 0..=31 (AAPCS64 DWARF: 0..30 are x0..x30, 31 is sp).
pub const DWARF_REGS: &[&str] = &[
    "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
    "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
    "x28", "x29", "x30", "sp",
];

/// Integer argument registers, kernel and user space alike (AAPCS64).
pub const ARG_REGS: &[&str] = &["x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"];

/// How user space passes integer arguments.
pub const USER_ARGS: ArgPassing = ArgPassing::Regs(ARG_REGS);

/// How the kernel passes integer arguments.
pub const KERNEL_ARGS: ArgPassing = ArgPassing::Regs(ARG_REGS);

/// The register holding a function's return value.
pub const RETURN_REG: &str = "x0";

/// The stack pointer.
pub const SP_REG: &str = "sp";

/// The program counter: at a uprobe, the probed instruction's address.
pub const IP_REG: &str = "pc";

/// Whether fetch-args read the stack pointer as `$stack` rather than `%sp` (no: `%sp`).
pub const SP_FETCH_IS_STACK: bool = false;

/// `sizeof(void *)`.
pub const POINTER_SIZE: u8 = 8;

/// `sizeof(long)` (LP64).
pub const LONG_SIZE: u8 = 8;

/// Whether plain `char` is signed in AAPCS64 (it is not).
pub const CHAR_SIGNED: bool = false;
