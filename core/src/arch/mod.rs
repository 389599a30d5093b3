//! Per-architecture tables: syscall numbers, `pt_regs` layouts, DWARF registers,
//! calling conventions; [`Platform`] pairs a kernel's `pt_regs` with the ABI of the code
//! probed under it (an i386 binary under an x86-64 kernel).
//!
//! Syscall numbers are the only place where sluice issues a raw system call itself (the
//! runtime funnels `bpf(2)` and `perf_event_open(2)` through one instruction per
//! architecture; everything else goes through `rustix`). Each table is a plain module of
//! constants so it can be read on any host: a cross tool can ask for `i386::SYS_BPF` while
//! running on x86_64. [`native`] is the table of the architecture being compiled for.

pub mod aarch64;
pub mod i386;
mod machine;
mod platform;
mod reg;
pub mod x86_64;

pub use machine::{Arch, Syscalls};
pub use platform::Platform;
pub use reg::{ArgPassing, FetchReg, Reg};

/// The table of the architecture being compiled for.
#[cfg(target_arch = "x86_64")]
pub use x86_64 as native;

/// The table of the architecture being compiled for.
#[cfg(target_arch = "x86")]
pub use i386 as native;

/// The table of the architecture being compiled for.
#[cfg(target_arch = "aarch64")]
pub use aarch64 as native;
