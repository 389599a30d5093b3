//! `sluice-core`: everything sluice knows about eBPF that does not need a kernel.
//!
//! The phase map (see `DESIGN.md`):
//!
//! ```text
//! bytes ──elf──► sections, symbols, relocations (validated once, viewed in place)
//!       ──object──► Object: license, version, maps, programs, probe specs
//!       ──relocate──► caller buffer: [prologue] + program, map loads patched with fds
//! insn/disasm: decode and print instructions exactly as the kernel verifier does
//! probe: the section-name grammar (perf's `EVENT=FUNC+OFF ARG`, `kprobe/`, `uprobe/`, ...)
//! arch: syscall numbers, pt_regs layouts and calling conventions per architecture
//! prologue: instructions that fetch probe arguments into r2..r5 before a program
//! perf: `bpf_attr` / `perf_event_attr` ABI structs and ring records
//! dwarf (feature `dwarf`, uses `alloc`): probe points and argument locations from DWARF
//! ```
//!
//! `#![no_std]`, no `alloc` (except in `dwarf`, behind its feature): every capacity is a const generic with a named default, and
//! exceeding one is [`Error::Capacity`], never a truncation.
#![no_std]
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

#[cfg(test)]
extern crate std;

#[cfg(feature = "dwarf")]
extern crate alloc;

pub mod arch;
pub mod btf;
pub mod disasm;
#[cfg(feature = "dwarf")]
pub mod dwarf;
pub mod elf;
pub mod error;
pub mod insn;
pub mod object;
pub mod perf;
pub mod probe;
pub mod prologue;
pub mod usdt;

pub use error::{Error, Result, SectionRef};
pub use insn::Insn;

pub use object::{MapDef, Object, ObjectStorage, Program};
pub use probe::{parse as parse_section, ProbeSpec, Section};
