//! Per-architecture tables: syscall numbers, `pt_regs` layouts, DWARF registers,
//! calling conventions.
//!
//! Syscall numbers are the only place where sluice issues a raw system call itself (the
//! runtime funnels `bpf(2)` and `perf_event_open(2)` through one instruction per
//! architecture; everything else goes through `rustix`). Each table is a plain module of
//! constants so it can be read on any host: a cross tool can ask for `i386::SYS_BPF` while
//! running on x86_64. [`native`] is the table of the architecture being compiled for.

pub mod aarch64;
pub mod i386;
pub mod x86_64;

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

/// The table of the architecture being compiled for.
#[cfg(target_arch = "x86_64")]
pub use x86_64 as native;

/// The table of the architecture being compiled for.
#[cfg(target_arch = "x86")]
pub use i386 as native;

/// The table of the architecture being compiled for.
#[cfg(target_arch = "aarch64")]
pub use aarch64 as native;

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
            assert_eq!(n.bpf, native::SYS_BPF);
            assert_eq!(n.perf_event_open, native::SYS_PERF_EVENT_OPEN);
        }
    }
}
