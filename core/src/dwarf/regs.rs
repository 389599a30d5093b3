//! DWARF register numbers → kprobe-tracer register names, per architecture.
//!
//! The names are the ones `perf probe` writes in fetch-args (its `dwarf-regs.c` tables):
//! `%di` on x86_64, `$stack` for `%esp` on i386 (the tracer has no `%sp` there), `%x0` on
//! aarch64. The `prologue` branch carries the same numbers in `arch`; these small tables are
//! duplicated on purpose until the two are unified.

use crate::arch::Arch;

/// x86_64 (System V psABI numbering: rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8..r15).
const X86_64: [&str; 17] = [
    "%ax", "%dx", "%cx", "%bx", "%si", "%di", "%bp", "%sp", "%r8", "%r9", "%r10", "%r11", "%r12",
    "%r13", "%r14", "%r15", "%ip",
];

/// i386 (eax, ecx, edx, ebx, esp, ebp, esi, edi).
const I386: [&str; 9] = [
    "%ax", "%cx", "%dx", "%bx", "$stack", "%bp", "%si", "%di", "%ip",
];

/// aarch64: x0..x30, then sp (31).
const AARCH64: [&str; 32] = [
    "%x0", "%x1", "%x2", "%x3", "%x4", "%x5", "%x6", "%x7", "%x8", "%x9", "%x10", "%x11", "%x12",
    "%x13", "%x14", "%x15", "%x16", "%x17", "%x18", "%x19", "%x20", "%x21", "%x22", "%x23", "%x24",
    "%x25", "%x26", "%x27", "%x28", "%x29", "%x30", "%sp",
];

/// The tracer's name of DWARF register `reg` on `arch` (`%di`, `$stack`, `%x0`), or `None`
/// for a register the tracer cannot read (vector, x87, flags).
#[must_use]
pub fn register_name(arch: Arch, reg: u16) -> Option<&'static str> {
    let table: &[&'static str] = match arch {
        Arch::X86_64 => &X86_64,
        Arch::I386 => &I386,
        Arch::Aarch64 => &AARCH64,
    };
    table.get(usize::from(reg)).copied()
}

/// The DWARF register that holds a function's integer return value on `arch`
/// (`rax`/`eax`/`x0`, all number 0).
#[must_use]
pub fn return_register(arch: Arch) -> u16 {
    match arch {
        Arch::X86_64 | Arch::I386 | Arch::Aarch64 => 0,
    }
}

/// The architecture of an ELF `e_machine`, if sluice knows it.
#[must_use]
pub fn arch_of_machine(machine: u16) -> Option<Arch> {
    match machine {
        62 => Some(Arch::X86_64),
        3 => Some(Arch::I386),
        183 => Some(Arch::Aarch64),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for (arch, reg, name) in [
            (Arch::X86_64, 5, Some("%di")),
            (Arch::X86_64, 4, Some("%si")),
            (Arch::X86_64, 7, Some("%sp")),
            (Arch::X86_64, 12, Some("%r12")),
            (Arch::X86_64, 17, None),
            (Arch::I386, 4, Some("$stack")),
            (Arch::I386, 1, Some("%cx")),
            (Arch::Aarch64, 29, Some("%x29")),
            (Arch::Aarch64, 31, Some("%sp")),
            (Arch::Aarch64, 64, None),
        ] {
            assert_eq!(register_name(arch, reg), name, "{arch:?} {reg}");
        }
        assert_eq!(arch_of_machine(62), Some(Arch::X86_64));
        assert_eq!(arch_of_machine(247), None);
    }
}
