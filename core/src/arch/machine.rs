//! The architectures sluice knows ([`Arch`]) and what each one's tables say: syscall
//! numbers, `pt_regs`, DWARF registers, calling conventions, type sizes.

use core::fmt;

use super::reg::{ArgPassing, FetchReg, Reg};
use super::{aarch64, i386, x86_64};

/// The architectures sluice knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Arch {
    /// x86-64 (`EM_X86_64`).
    X86_64,
    /// 32-bit x86 (`EM_386`), also when run through IA32 emulation on an x86-64 kernel.
    I386,
    /// AArch64 (`EM_AARCH64`).
    Aarch64,
}

/// The syscall numbers sluice issues raw, for one architecture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Syscalls {
    /// `__NR_bpf`.
    pub bpf: u32,
    /// `__NR_perf_event_open`.
    pub perf_event_open: u32,
}

impl Arch {
    /// The architecture this code is compiled for, if sluice knows it.
    #[must_use]
    pub const fn native() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(Arch::X86_64)
        } else if cfg!(target_arch = "x86") {
            Some(Arch::I386)
        } else if cfg!(target_arch = "aarch64") {
            Some(Arch::Aarch64)
        } else {
            None
        }
    }

    /// The raw syscall numbers of this architecture.
    #[must_use]
    pub const fn syscalls(self) -> Syscalls {
        match self {
            Arch::X86_64 => Syscalls {
                bpf: x86_64::SYS_BPF,
                perf_event_open: x86_64::SYS_PERF_EVENT_OPEN,
            },
            Arch::I386 => Syscalls {
                bpf: i386::SYS_BPF,
                perf_event_open: i386::SYS_PERF_EVENT_OPEN,
            },
            Arch::Aarch64 => Syscalls {
                bpf: aarch64::SYS_BPF,
                perf_event_open: aarch64::SYS_PERF_EVENT_OPEN,
            },
        }
    }
}

/// Finds `name` in a `pt_regs` table.
const fn find(table: &'static [Reg], name: &str) -> Option<Reg> {
    let mut rest = table;
    while let [r, tail @ ..] = rest {
        if str_eq(r.name, name) {
            return Some(*r);
        }
        rest = tail;
    }
    None
}

/// The `n`-th name of `table`, usable in `const fn`.
const fn nth(table: &'static [&'static str], n: usize) -> Option<&'static str> {
    let mut rest = table;
    let mut i = 0;
    while let [name, tail @ ..] = rest {
        if i == n {
            return Some(*name);
        }
        i += 1;
        rest = tail;
    }
    None
}

/// Where `name` stands in `table`, usable in `const fn`.
const fn position(table: &'static [&'static str], name: &str) -> Option<usize> {
    let mut rest = table;
    let mut i = 0;
    while let [n, tail @ ..] = rest {
        if str_eq(n, name) {
            return Some(i);
        }
        i += 1;
        rest = tail;
    }
    None
}

/// `a == b`, usable in `const fn`.
const fn str_eq(a: &str, b: &str) -> bool {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a, b) {
            ([], []) => return true,
            ([x, at @ ..], [y, bt @ ..]) if *x == *y => {
                a = at;
                b = bt;
            }
            _ => return false,
        }
    }
}

impl Arch {
    /// Every architecture sluice knows.
    pub const ALL: [Arch; 3] = [Arch::X86_64, Arch::I386, Arch::Aarch64];

    /// The name used on the command line and in messages: `x86_64`, `i386`, `aarch64`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::I386 => "i386",
            Arch::Aarch64 => "aarch64",
        }
    }

    /// The architecture named `name` ([`Arch::name`], or the aliases `x86-64`, `amd64`,
    /// `x86`, `i686`, `arm64`).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Arch> {
        match name {
            "x86_64" | "x86-64" | "amd64" => Some(Arch::X86_64),
            "i386" | "i686" | "x86" => Some(Arch::I386),
            "aarch64" | "arm64" => Some(Arch::Aarch64),
            _ => None,
        }
    }

    /// The kernel's `struct pt_regs`, every slot in order.
    #[must_use]
    pub const fn pt_regs(self) -> &'static [Reg] {
        match self {
            Arch::X86_64 => x86_64::PT_REGS,
            Arch::I386 => i386::PT_REGS,
            Arch::Aarch64 => aarch64::PT_REGS,
        }
    }

    /// `sizeof(struct pt_regs)` as a kprobe program sees it.
    #[must_use]
    pub const fn pt_regs_size(self) -> u16 {
        match self {
            Arch::X86_64 => x86_64::PT_REGS_SIZE,
            Arch::I386 => i386::PT_REGS_SIZE,
            Arch::Aarch64 => aarch64::PT_REGS_SIZE,
        }
    }

    /// Bytes per `pt_regs` slot: what a program loads from its context per register.
    #[must_use]
    pub const fn reg_size(self) -> u8 {
        match self {
            Arch::X86_64 => x86_64::REG_SIZE,
            Arch::I386 => i386::REG_SIZE,
            Arch::Aarch64 => aarch64::REG_SIZE,
        }
    }

    /// The register the kprobe tracer calls `name` (without `%`), if this arch has it.
    #[must_use]
    pub const fn reg(self, name: &str) -> Option<Reg> {
        find(self.pt_regs(), name)
    }

    /// The architecture of an ELF file's `e_machine`, if sluice knows it.
    #[must_use]
    pub const fn from_machine(machine: u16) -> Option<Arch> {
        match machine {
            x86_64::E_MACHINE => Some(Arch::X86_64),
            i386::E_MACHINE => Some(Arch::I386),
            aarch64::E_MACHINE => Some(Arch::Aarch64),
            _ => None,
        }
    }

    /// The tracefs names of the DWARF registers, by DWARF number.
    const fn dwarf_regs(self) -> &'static [&'static str] {
        match self {
            Arch::X86_64 => x86_64::DWARF_REGS,
            Arch::I386 => i386::DWARF_REGS,
            Arch::Aarch64 => aarch64::DWARF_REGS,
        }
    }

    /// The tracefs name of DWARF register `number` of this architecture's code.
    #[must_use]
    pub const fn dwarf_reg_name(self, number: u16) -> Option<&'static str> {
        nth(self.dwarf_regs(), number as usize)
    }

    /// The `pt_regs` slot of DWARF register `number`, if it has one.
    #[must_use]
    pub const fn dwarf_reg(self, number: u16) -> Option<Reg> {
        match self.dwarf_reg_name(number) {
            Some(name) => find(self.pt_regs(), name),
            None => None,
        }
    }

    /// How a fetch-arg reads DWARF register `number` (`%di`, `%x0`, `$stack` for the i386
    /// stack pointer), or `None` for a register the tracer cannot read (vector, x87, flags).
    #[must_use]
    pub const fn dwarf_fetch_reg(self, number: u16) -> Option<FetchReg> {
        match self.dwarf_reg_name(number) {
            Some(name) => self.fetch_reg(name),
            None => None,
        }
    }

    /// How a fetch-arg of this kernel reads its `pt_regs` slot `name`: `%name`, or `$stack`
    /// for the stack pointer of a 32-bit x86 kernel.
    #[must_use]
    pub const fn fetch_reg(self, name: &str) -> Option<FetchReg> {
        let sp_is_stack = match self {
            Arch::X86_64 => x86_64::SP_FETCH_IS_STACK,
            Arch::I386 => i386::SP_FETCH_IS_STACK,
            Arch::Aarch64 => aarch64::SP_FETCH_IS_STACK,
        };
        match self.reg(name) {
            Some(r) if sp_is_stack && str_eq(r.name, self.sp_name()) => Some(FetchReg::Stack),
            Some(r) => Some(FetchReg::Reg(r)),
            None => None,
        }
    }

    /// The DWARF number of the register holding a function's return value.
    #[must_use]
    pub const fn return_dwarf_reg(self) -> Option<u16> {
        match position(self.dwarf_regs(), self.return_name()) {
            Some(n) => Some(n as u16),
            None => None,
        }
    }

    /// How functions receive integer arguments: in the kernel (`user == false`) or in user
    /// space.
    #[must_use]
    pub const fn arg_passing(self, user: bool) -> ArgPassing {
        match (self, user) {
            (Arch::X86_64, false) => x86_64::KERNEL_ARGS,
            (Arch::X86_64, true) => x86_64::USER_ARGS,
            (Arch::I386, false) => i386::KERNEL_ARGS,
            (Arch::I386, true) => i386::USER_ARGS,
            (Arch::Aarch64, false) => aarch64::KERNEL_ARGS,
            (Arch::Aarch64, true) => aarch64::USER_ARGS,
        }
    }

    /// The register holding a function's return value.
    #[must_use]
    pub const fn return_reg(self) -> Option<Reg> {
        self.reg(self.return_name())
    }

    /// The tracefs name of the return-value register.
    const fn return_name(self) -> &'static str {
        match self {
            Arch::X86_64 => x86_64::RETURN_REG,
            Arch::I386 => i386::RETURN_REG,
            Arch::Aarch64 => aarch64::RETURN_REG,
        }
    }

    /// The stack pointer's slot.
    #[must_use]
    pub const fn sp(self) -> Option<Reg> {
        self.reg(self.sp_name())
    }

    /// The tracefs name of the stack pointer.
    const fn sp_name(self) -> &'static str {
        match self {
            Arch::X86_64 => x86_64::SP_REG,
            Arch::I386 => i386::SP_REG,
            Arch::Aarch64 => aarch64::SP_REG,
        }
    }

    /// The program counter's slot (`ip`, aarch64 `pc`). In a uprobe program's `pt_regs` it
    /// holds the probed instruction's address (the kernel sets it there before the handlers
    /// run, kernel/events/uprobes.c `handle_swbp`).
    #[must_use]
    pub const fn ip(self) -> Option<Reg> {
        self.reg(match self {
            Arch::X86_64 => x86_64::IP_REG,
            Arch::I386 => i386::IP_REG,
            Arch::Aarch64 => aarch64::IP_REG,
        })
    }

    /// `sizeof(void *)`.
    #[must_use]
    pub const fn pointer_size(self) -> u8 {
        match self {
            Arch::X86_64 => x86_64::POINTER_SIZE,
            Arch::I386 => i386::POINTER_SIZE,
            Arch::Aarch64 => aarch64::POINTER_SIZE,
        }
    }

    /// `sizeof(long)`.
    #[must_use]
    pub const fn long_size(self) -> u8 {
        match self {
            Arch::X86_64 => x86_64::LONG_SIZE,
            Arch::I386 => i386::LONG_SIZE,
            Arch::Aarch64 => aarch64::LONG_SIZE,
        }
    }

    /// Whether plain `char` is signed in the architecture's ABI. (Kernels since 6.2 build
    /// with `-funsigned-char` everywhere; the ABI is what user space gets.)
    #[must_use]
    pub const fn char_signed(self) -> bool {
        match self {
            Arch::X86_64 => x86_64::CHAR_SIGNED,
            Arch::I386 => i386::CHAR_SIGNED,
            Arch::Aarch64 => aarch64::CHAR_SIGNED,
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
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
    fn tables_match_the_design() {
        // DESIGN.md: bpf 321/357/280, perf_event_open 298/336/241.
        let rows = [
            (Arch::X86_64, 321, 298),
            (Arch::I386, 357, 336),
            (Arch::Aarch64, 280, 241),
        ];
        for (arch, bpf, perf) in rows {
            assert_eq!(
                arch.syscalls(),
                Syscalls {
                    bpf,
                    perf_event_open: perf
                },
                "{arch:?}"
            );
        }
    }

    #[test]
    fn native_is_known_on_supported_hosts() {
        if cfg!(any(
            target_arch = "x86_64",
            target_arch = "x86",
            target_arch = "aarch64"
        )) {
            let n = Arch::native().unwrap().syscalls();
            assert_eq!(n.bpf, crate::arch::native::SYS_BPF);
            assert_eq!(n.perf_event_open, crate::arch::native::SYS_PERF_EVENT_OPEN);
        }
    }

    fn off(arch: Arch, name: &str) -> u16 {
        arch.reg(name)
            .unwrap_or_else(|| panic!("{arch}: no {name}"))
            .offset
    }

    #[test]
    fn pt_regs_offsets_as_the_kernel_lays_them_out() {
        let rows: &[(Arch, &str, u16)] = &[
            (Arch::X86_64, "r15", 0),
            (Arch::X86_64, "r12", 24),
            (Arch::X86_64, "bp", 32),
            (Arch::X86_64, "bx", 40),
            (Arch::X86_64, "r8", 72),
            (Arch::X86_64, "ax", 80),
            (Arch::X86_64, "cx", 88),
            (Arch::X86_64, "dx", 96),
            (Arch::X86_64, "si", 104),
            (Arch::X86_64, "di", 112),
            (Arch::X86_64, "orig_ax", 120),
            (Arch::X86_64, "ip", 128),
            (Arch::X86_64, "sp", 152),
            (Arch::X86_64, "ss", 160),
            (Arch::I386, "bx", 0),
            (Arch::I386, "cx", 4),
            (Arch::I386, "dx", 8),
            (Arch::I386, "si", 12),
            (Arch::I386, "di", 16),
            (Arch::I386, "bp", 20),
            (Arch::I386, "ax", 24),
            (Arch::I386, "orig_ax", 44),
            (Arch::I386, "ip", 48),
            (Arch::I386, "sp", 60),
            (Arch::I386, "ss", 64),
            (Arch::Aarch64, "x0", 0),
            (Arch::Aarch64, "x7", 56),
            (Arch::Aarch64, "x29", 232),
            (Arch::Aarch64, "x30", 240),
            (Arch::Aarch64, "sp", 248),
            (Arch::Aarch64, "pc", 256),
            (Arch::Aarch64, "pstate", 264),
        ];
        for &(arch, name, offset) in rows {
            assert_eq!(off(arch, name), offset, "{arch} {name}");
        }
        // Slots are contiguous, word-sized, and fill the struct.
        for arch in Arch::ALL {
            let step = u16::from(arch.reg_size());
            for (i, r) in arch.pt_regs().iter().enumerate() {
                assert_eq!(r.offset, i as u16 * step, "{arch} {}", r.name);
            }
            assert_eq!(
                arch.pt_regs().len() as u16 * step,
                arch.pt_regs_size(),
                "{arch}"
            );
            assert_eq!(arch.reg("nope"), None);
            assert_eq!(arch.reg(""), None);
        }
        assert_eq!(Arch::X86_64.reg("x0"), None);
        assert_eq!(Arch::Aarch64.reg("di"), None);
        assert_eq!(Arch::I386.reg("r8"), None);
    }

    #[test]
    fn dwarf_numbers_map_to_pt_regs() {
        let x86_64 = [
            "ax", "dx", "cx", "bx", "si", "di", "bp", "sp", "r8", "r9", "r10", "r11", "r12", "r13",
            "r14", "r15",
        ];
        for (n, name) in x86_64.iter().enumerate() {
            assert_eq!(Arch::X86_64.dwarf_reg(n as u16).unwrap().name, *name);
        }
        assert_eq!(Arch::X86_64.dwarf_reg(16), None);
        let i386 = ["ax", "cx", "dx", "bx", "sp", "bp", "si", "di"];
        for (n, name) in i386.iter().enumerate() {
            assert_eq!(Arch::I386.dwarf_reg(n as u16).unwrap().name, *name);
        }
        for n in 0..31u16 {
            let r = Arch::Aarch64.dwarf_reg(n).unwrap();
            assert_eq!(r.name, std::format!("x{n}"));
            assert_eq!(r.offset, 8 * n);
        }
        assert_eq!(Arch::Aarch64.dwarf_reg(31).unwrap().offset, 248);
        assert_eq!(Arch::Aarch64.dwarf_reg(32), None);
        assert_eq!(Arch::Aarch64.dwarf_reg(u16::MAX), None);
    }

    #[test]
    fn dwarf_numbers_as_fetch_args() {
        for (arch, reg, name) in [
            (Arch::X86_64, 5, Some("%di")),
            (Arch::X86_64, 4, Some("%si")),
            (Arch::X86_64, 7, Some("%sp")),
            (Arch::X86_64, 12, Some("%r12")),
            (Arch::X86_64, 17, None),
            (Arch::I386, 4, Some("$stack")),
            (Arch::I386, 1, Some("%cx")),
            (Arch::I386, 8, Some("%ip")),
            (Arch::Aarch64, 29, Some("%x29")),
            (Arch::Aarch64, 31, Some("%sp")),
            (Arch::Aarch64, 64, None),
        ] {
            let got = arch.dwarf_fetch_reg(reg).map(|r| std::format!("{r}"));
            assert_eq!(got.as_deref(), name, "{arch:?} {reg}");
        }
        for arch in Arch::ALL {
            // rax/eax/x0: DWARF number 0 everywhere.
            assert_eq!(arch.return_dwarf_reg(), Some(0), "{arch}");
            let n = arch.return_dwarf_reg().unwrap();
            assert_eq!(arch.dwarf_reg(n), arch.return_reg(), "{arch}");
        }
        assert_eq!(Arch::from_machine(62), Some(Arch::X86_64));
        assert_eq!(Arch::from_machine(3), Some(Arch::I386));
        assert_eq!(Arch::from_machine(183), Some(Arch::Aarch64));
        assert_eq!(Arch::from_machine(247), None);
    }

    #[test]
    fn calling_conventions() {
        assert_eq!(
            Arch::X86_64.arg_passing(false),
            ArgPassing::Regs(&["di", "si", "dx", "cx", "r8", "r9"])
        );
        assert_eq!(
            Arch::X86_64.arg_passing(true),
            Arch::X86_64.arg_passing(false)
        );
        assert_eq!(
            Arch::I386.arg_passing(false),
            ArgPassing::Regs(&["ax", "dx", "cx"])
        );
        assert_eq!(
            Arch::I386.arg_passing(true),
            ArgPassing::Stack { first: 4, slot: 4 }
        );
        assert_eq!(
            Arch::Aarch64.arg_passing(true),
            ArgPassing::Regs(&["x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"])
        );
        // Every named argument register exists in pt_regs.
        for arch in Arch::ALL {
            for user in [false, true] {
                if let ArgPassing::Regs(regs) = arch.arg_passing(user) {
                    for r in regs {
                        assert!(arch.reg(r).is_some(), "{arch} {r}");
                    }
                }
            }
        }
        assert_eq!(Arch::X86_64.return_reg().unwrap().offset, 80);
        assert_eq!(Arch::I386.return_reg().unwrap().offset, 24);
        assert_eq!(Arch::Aarch64.return_reg().unwrap().offset, 0);
        assert_eq!(Arch::X86_64.sp().unwrap().offset, 152);
        assert_eq!(Arch::I386.sp().unwrap().offset, 60);
        assert_eq!(Arch::Aarch64.sp().unwrap().offset, 248);
        // struct pt_regs: x86_64 ip at 16*8, i386 ip at 12*4, arm64 pc after regs[31] and sp.
        assert_eq!(Arch::X86_64.ip().unwrap().offset, 128);
        assert_eq!(Arch::I386.ip().unwrap().offset, 48);
        assert_eq!(Arch::Aarch64.ip().unwrap().offset, 256);
        let sizes: [(Arch, u8, u8, bool); 3] = [
            (Arch::X86_64, 8, 8, true),
            (Arch::I386, 4, 4, true),
            (Arch::Aarch64, 8, 8, false),
        ];
        for (arch, ptr, long, char_signed) in sizes {
            assert_eq!(arch.pointer_size(), ptr);
            assert_eq!(arch.long_size(), long);
            assert_eq!(arch.reg_size(), ptr);
            assert_eq!(arch.char_signed(), char_signed);
        }
    }

    #[test]
    fn names_round_trip() {
        for arch in Arch::ALL {
            assert_eq!(Arch::from_name(arch.name()), Some(arch));
            assert_eq!(std::format!("{arch}"), arch.name());
        }
        assert_eq!(Arch::from_name("arm64"), Some(Arch::Aarch64));
        assert_eq!(Arch::from_name("riscv64"), None);
        assert_eq!(std::format!("{}", Arch::X86_64.reg("di").unwrap()), "%di");
    }
}
