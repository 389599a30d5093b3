//! [`Platform`]: the kernel whose `struct pt_regs` a probe program reads, and the ABI of the
//! code it probes. They differ for a 32-bit program under a 64-bit kernel (IA32 emulation):
//! an i386 binary's uprobe gets the x86-64 `pt_regs`, its arguments are where cdecl puts
//! them (on the user stack, found through the 64-bit `sp` slot), and its DWARF registers
//! (`eax`, `ecx` ...) are the low halves of the x86-64 slots of the same name.

use core::fmt;

use super::machine::Arch;
use super::reg::{ArgPassing, FetchReg, Reg};

/// A kernel architecture (its `pt_regs` table and slot size) and the ABI of the probed code
/// (its calling convention, type sizes and DWARF register names).
///
/// `Platform::from(arch)` is both the same: every kprobe, and a uprobe of a binary of the
/// kernel's own architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Platform {
    kernel: Arch,
    code: Arch,
}

impl From<Arch> for Platform {
    fn from(arch: Arch) -> Self {
        Platform {
            kernel: arch,
            code: arch,
        }
    }
}

impl Platform {
    /// Code of architecture `code` probed under a kernel of architecture `kernel`, if such
    /// code runs there: the same architecture, or i386 code under an x86-64 kernel.
    #[must_use]
    pub const fn new(kernel: Arch, code: Arch) -> Option<Platform> {
        match (kernel, code) {
            (Arch::X86_64, Arch::X86_64 | Arch::I386)
            | (Arch::I386, Arch::I386)
            | (Arch::Aarch64, Arch::Aarch64) => Some(Platform { kernel, code }),
            _ => None,
        }
    }

    /// The kernel's architecture: whose `pt_regs` the program's context is.
    #[must_use]
    pub const fn kernel(self) -> Arch {
        self.kernel
    }

    /// The probed code's architecture: whose ABI places its arguments.
    #[must_use]
    pub const fn code(self) -> Arch {
        self.code
    }

    /// The kernel's `pt_regs` slot the tracer calls `name` (without `%`).
    #[must_use]
    pub const fn reg(self, name: &str) -> Option<Reg> {
        self.kernel.reg(name)
    }

    /// Bytes per `pt_regs` slot (the kernel's `unsigned long`).
    #[must_use]
    pub const fn reg_size(self) -> u8 {
        self.kernel.reg_size()
    }

    /// Bytes per register of the code (and per argument slot of its convention).
    #[must_use]
    pub const fn word_size(self) -> u8 {
        self.code.reg_size()
    }

    /// The kernel's slot of the stack pointer.
    #[must_use]
    pub const fn sp(self) -> Option<Reg> {
        self.kernel.sp()
    }

    /// The kernel's slot of the program counter.
    #[must_use]
    pub const fn ip(self) -> Option<Reg> {
        self.kernel.ip()
    }

    /// The kernel's slot of the register holding a function's return value.
    #[must_use]
    pub const fn return_reg(self) -> Option<Reg> {
        match self.code.return_dwarf_reg() {
            Some(n) => self.dwarf_reg(n),
            None => None,
        }
    }

    /// The kernel's `pt_regs` slot holding the code's DWARF register `number` (for i386
    /// code under x86-64, `eax` is the low half of the `ax` slot).
    #[must_use]
    pub const fn dwarf_reg(self, number: u16) -> Option<Reg> {
        match self.code.dwarf_reg_name(number) {
            Some(name) => self.kernel.reg(name),
            None => None,
        }
    }

    /// How a fetch-arg reads the code's DWARF register `number` under this kernel (`$stack`
    /// for the stack pointer of a 32-bit kernel only).
    #[must_use]
    pub const fn dwarf_fetch_reg(self, number: u16) -> Option<FetchReg> {
        match self.code.dwarf_reg_name(number) {
            Some(name) => self.kernel.fetch_reg(name),
            None => None,
        }
    }

    /// How the code receives integer arguments: in the kernel (`user == false`) or in user
    /// space.
    #[must_use]
    pub const fn arg_passing(self, user: bool) -> ArgPassing {
        self.code.arg_passing(user)
    }

    /// The code's `sizeof(void *)`.
    #[must_use]
    pub const fn pointer_size(self) -> u8 {
        self.code.pointer_size()
    }

    /// The code's `sizeof(long)`.
    #[must_use]
    pub const fn long_size(self) -> u8 {
        self.code.long_size()
    }

    /// Whether plain `char` is signed in the code's ABI.
    #[must_use]
    pub const fn char_signed(self) -> bool {
        self.code.char_signed()
    }
}

impl fmt::Display for Platform {
    /// `x86_64`, or `i386 code on x86_64` when they differ.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kernel == self.code {
            f.write_str(self.kernel.name())
        } else {
            write!(f, "{} code on {}", self.code, self.kernel)
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;

    #[test]
    fn only_code_that_runs_under_the_kernel_pairs_with_it() {
        for arch in Arch::ALL {
            assert_eq!(Platform::new(arch, arch), Some(Platform::from(arch)));
        }
        assert!(Platform::new(Arch::X86_64, Arch::I386).is_some());
        assert_eq!(Platform::new(Arch::I386, Arch::X86_64), None);
        assert_eq!(Platform::new(Arch::Aarch64, Arch::X86_64), None);
        assert_eq!(Platform::new(Arch::X86_64, Arch::Aarch64), None);
    }

    #[test]
    fn i386_code_under_x86_64_reads_the_64_bit_slots() {
        let p = Platform::new(Arch::X86_64, Arch::I386).unwrap();
        assert_eq!(std::format!("{p}"), "i386 code on x86_64");
        // The kernel's table: 8-byte slots, sp at 152, ip at 128, ax at 80.
        assert_eq!(p.reg_size(), 8);
        assert_eq!(p.sp().unwrap().offset, 152);
        assert_eq!(p.ip().unwrap().offset, 128);
        assert_eq!(p.return_reg().unwrap().offset, 80);
        // The code's ABI: cdecl, 4-byte words, pointers and longs.
        assert_eq!(p.word_size(), 4);
        assert_eq!(p.arg_passing(true), ArgPassing::Stack { first: 4, slot: 4 });
        assert_eq!(
            (p.pointer_size(), p.long_size(), p.char_signed()),
            (4, 4, true)
        );
        // i386 DWARF numbers (eax ecx edx ebx esp ebp esi edi eip) name x86-64 slots.
        let offsets: [u16; 9] = [80, 88, 96, 40, 152, 32, 104, 112, 128];
        for (n, off) in offsets.iter().enumerate() {
            assert_eq!(p.dwarf_reg(n as u16).unwrap().offset, *off, "DWARF {n}");
        }
        assert_eq!(p.dwarf_reg(9), None);
        // The x86-64 tracer reads sp as %sp, not $stack as on an i386 kernel.
        let fetch = |p: Platform, n| std::format!("{}", p.dwarf_fetch_reg(n).unwrap());
        assert_eq!(fetch(p, 4), "%sp");
        assert_eq!(fetch(Platform::from(Arch::I386), 4), "$stack");
        assert_eq!(fetch(p, 1), "%cx");
    }

    #[test]
    fn same_arch_platforms_are_the_arch() {
        for arch in Arch::ALL {
            let p = Platform::from(arch);
            assert_eq!(p.reg_size(), arch.reg_size());
            assert_eq!(p.word_size(), arch.reg_size());
            assert_eq!(p.return_reg(), arch.return_reg());
            assert_eq!(p.sp(), arch.sp());
            for n in 0..40 {
                assert_eq!(p.dwarf_reg(n), arch.dwarf_reg(n), "{arch} {n}");
                assert_eq!(p.dwarf_fetch_reg(n), arch.dwarf_fetch_reg(n), "{arch} {n}");
            }
            assert_eq!(std::format!("{p}"), arch.name());
        }
    }
}
