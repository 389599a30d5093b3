//! A program's probe spec and what it implies: its program type, its prologue (from the
//! calling convention, `/proc/kallsyms` or DWARF) and its DWARF sites.

use crate::error::{Error, Result};
use crate::load::LoadOptions;
use sluice_core::arch::{Arch, Platform};
use sluice_core::object::Program;
use sluice_core::probe::{ProbeKind, ProbeSpec, Target};
use sluice_core::Insn;
use std::path::Path;

/// The program type a section name implies, or `None` for an opaque title: libbpf's
/// section table (`kprobe/`, `uprobe/` and the seed's perf form are `KPROBE`, `tracepoint/`
/// is `TRACEPOINT`, `xdp`, `socket` ...), from [`sluice_core::probe::program_type`].
#[must_use]
pub fn section_prog_type(section: &str) -> Option<u32> {
    sluice_core::probe::program_type(section)
}

/// The probe spec of program `index` (`p`): its first override in [`LoadOptions::specs`],
/// else its section name.
#[must_use]
pub fn program_spec<'a>(p: &Program<'a>, index: usize, opts: &'a LoadOptions) -> &'a str {
    match opts.specs.get(index).and_then(|s| s.first()) {
        Some(spec) => spec,
        None => p.section_name,
    }
}

/// The error of a spec that does not parse, naming the program (`name`) and the spec.
pub(super) fn parse_error(name: &str, spec: &str, e: &sluice_core::probe::ProbeError) -> Error {
    Error::BadSpec {
        program: name.to_owned(),
        spec: spec.to_owned(),
        source: *e,
    }
}

/// The platform a probe of `spec` runs on: the running kernel's `pt_regs`
/// ([`crate::kernel::arch`]), and the ABI of the probed code: the kernel's for a kprobe, the
/// binary's ELF machine for a uprobe (an i386 binary under an x86-64 kernel). A binary that
/// cannot be read is taken as the kernel's own architecture: the probe itself then fails
/// naming it.
///
/// # Errors
/// [`Error::NoArchTables`] for a kernel sluice has no tables for; [`Error::ForeignBinary`]
/// for a binary whose code does not run under the kernel.
pub fn probe_platform(spec: &ProbeSpec<'_>) -> Result<Platform> {
    let kernel = crate::kernel::arch::running_kernel_arch().ok_or(Error::NoArchTables)?;
    let path = match spec.target() {
        Target::User { path, .. } | Target::UserOffset { path, .. } => path,
        _ => return Ok(Platform::from(kernel)),
    };
    let machine = match crate::tracefs::elf_machine(Path::new(path)) {
        Ok(m) => m,
        Err(e) => {
            log::debug!("{path}: {e}: its arguments taken by the {kernel} convention");
            return Ok(Platform::from(kernel));
        }
    };
    Arch::from_machine(machine)
        .and_then(|code| Platform::new(kernel, code))
        .ok_or_else(|| Error::ForeignBinary {
            path: path.to_owned(),
            machine,
            kernel,
        })
}

/// The prologue of `spec` (of program `name`, written `spec_text`), whose arguments need
/// no debug info, by the calling convention of the probed code under the running kernel
/// ([`probe_platform`]; and `/proc/kallsyms` for `@SYM`); none without arguments.
///
/// # Errors
/// [`Error::Prologue`] naming the program and spec around the reason: arguments that cannot
/// be fetched, more than four values, an `@SYM` the kernel does not list, a kernel sluice has
/// no tables for ([`Error::NoArchTables`]), a binary foreign to it
/// ([`Error::ForeignBinary`]).
pub(super) fn convention_prologue(
    name: &str,
    spec_text: &str,
    spec: &ProbeSpec<'_>,
) -> Result<Vec<Insn>> {
    if spec.args().is_empty() {
        return Ok(Vec::new());
    }
    let prologue_err = |source: Error| Error::Prologue {
        program: name.to_owned(),
        spec: spec_text.to_owned(),
        source: Box::new(source),
    };
    let usage = |e: sluice_core::Error| prologue_err(Error::Core(e));
    let arch = probe_platform(spec).map_err(prologue_err)?;
    let symbols = kernel_symbols(spec).map_err(prologue_err)?;
    let mut symbol = |name: &str| symbols.iter().find_map(|(n, a)| (*n == name).then_some(*a));
    let mut locs =
        sluice_core::prologue::from_typed_args_with(arch, spec.kind(), spec.args(), &mut symbol)
            .map_err(usage)?;
    place_file_offsets(spec, &mut locs).map_err(usage)?;
    if locs.values().is_empty() {
        // Only strings: the kernel records them, the program gets nothing in r2..r5.
        return Ok(Vec::new());
    }
    let mut out = vec![Insn::default(); sluice_core::prologue::MAX_INSNS];
    let n = sluice_core::prologue::write(&locs, &mut out).map_err(usage)?;
    out.truncate(n);
    Ok(out)
}

/// Why a spec whose probe is named by a symbol cannot read `@+FILEOFFSET`.
pub const AT_SYMBOL: &str = "@+FILEOFFSET needs the probe at a file offset \
     (uprobe/PATH:0xOFFSET, as sluice prologue --emit writes it) to know its distance from the probe";

/// Makes the `@+FILEOFFSET` reads of `locs` (`spec`'s values: a library's or PIE's global,
/// as `sluice prologue --emit` writes it) reads at the probed address plus their distance
/// from the probe's own file offset ([`sluice_core::prologue::ArgLocs::at_probe_offset`]);
/// nothing to do without them.
///
/// # Errors
/// [`sluice_core::Error::Usage`] with [`AT_SYMBOL`] (and the 1-based position of the first
/// such argument) when the probe is not given at a file offset; as `at_probe_offset`.
pub fn place_file_offsets(
    spec: &ProbeSpec<'_>,
    locs: &mut sluice_core::prologue::ArgLocs<'_>,
) -> Result<(), sluice_core::Error> {
    if !locs.has_file_offsets() {
        return Ok(());
    }
    let Some(probe) = probe_file_offset(spec) else {
        let first = spec
            .args()
            .exprs()
            .iter()
            .position(|a| matches!(a.base(), sluice_core::probe::ArgBase::FileOffset(_)));
        return Err(sluice_core::Error::Usage {
            what: AT_SYMBOL,
            value: first.map_or(0, |i| i as u64 + 1),
        });
    };
    locs.at_probe_offset(probe)
}

/// The file offset of a uprobe given at one (`uprobe/PATH:0xOFF[+OFF]`).
fn probe_file_offset(spec: &ProbeSpec<'_>) -> Option<u64> {
    let sluice_core::probe::Target::UserOffset { offset, .. } = spec.target() else {
        return None;
    };
    match spec.place() {
        sluice_core::probe::Place::Offset(off) => offset.checked_add(off),
        sluice_core::probe::Place::Entry => Some(offset),
        sluice_core::probe::Place::Return | sluice_core::probe::Place::Line(_) => None,
    }
}

/// The running kernel's address of every symbol `spec`'s arguments name (`@SYM+OFF`, as
/// `sluice prologue --emit` writes kernel globals), from `/proc/kallsyms`; nothing read when
/// there is none.
///
/// # Errors
/// As [`crate::kernel::kallsyms::lookup`]; [`Error::SymbolNotListed`] naming a symbol the
/// kernel does not list.
fn kernel_symbols<'s>(spec: &ProbeSpec<'s>) -> Result<Vec<(&'s str, u64)>> {
    let mut names: Vec<&'s str> = Vec::new();
    for a in spec.args().exprs() {
        if let sluice_core::probe::ArgBase::Sym { name, .. } = a.base() {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    if names.is_empty() || !matches!(spec.kind(), ProbeKind::Kprobe | ProbeKind::Kretprobe) {
        // A uprobe's `@SYM` is refused by the prologue itself.
        return Ok(Vec::new());
    }
    let found = crate::kernel::kallsyms::lookup(&names)?;
    names
        .iter()
        .zip(found)
        .map(|(&name, at)| {
            at.map(|a| (name, a)).ok_or_else(|| Error::SymbolNotListed {
                name: name.to_owned(),
            })
        })
        .collect()
}

/// The DWARF sites of `spec` (of program `name`, written `spec_text`) in the running kernel
/// or the uprobe's binary.
///
/// # Errors
/// [`Error::Prologue`] naming the program and spec around a debug-info failure (file,
/// function, variable and address).
pub(super) fn spec_sites(
    name: &str,
    spec_text: &str,
    spec: &ProbeSpec<'_>,
    opts: &LoadOptions,
) -> Result<Vec<crate::probe::debuginfo::Site>> {
    crate::probe::debuginfo::resolve_running(spec, opts.debuginfo.as_deref()).map_err(|e| {
        Error::Prologue {
            program: name.to_owned(),
            spec: spec_text.to_owned(),
            source: Box::new(e),
        }
    })
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
    fn section_types() {
        let rows = [
            ("kprobe/vfs_read", Some(2)),
            ("kretprobe/vfs_read", Some(2)),
            ("uprobe/bin/ls:main", Some(2)),
            ("tracepoint/syscalls/sys_enter_write", Some(5)),
            ("tp/sched/sched_switch", Some(5)),
            ("func=sys_write", Some(2)), // the seed's perf form is a kprobe
            ("sys_write", None),
        ];
        for (s, t) in rows {
            assert_eq!(section_prog_type(s), t, "{s}");
        }
    }
}
