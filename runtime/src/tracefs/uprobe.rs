//! `PATH:FUNC[+OFF]` uprobe targets and the file offset `uprobe_events` wants.

use super::error::{Error, SymbolProblem};
use super::probe::ProbeTarget;
use crate::sys::mmap::Mmap;
use sluice_core::elf::{definition, Elf};
use std::path::{Path, PathBuf};

/// A `PATH:FUNC[+OFF]` uprobe target as written in a section name or on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UprobeSpec {
    /// The binary or library.
    pub path: PathBuf,
    /// The function symbol.
    pub func: String,
    /// Byte offset from the function's start.
    pub offset: u64,
}

impl UprobeSpec {
    /// Parses `PATH:FUNC[+OFF]` (OFF decimal or `0x` hex). The path is everything before
    /// the last `:`.
    ///
    /// # Errors
    /// [`Error::Request`] when a part is missing or OFF is not a number.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let bad = |what| Error::Request {
            text: text.to_owned(),
            what,
        };
        let (path, rest) = text
            .rsplit_once(':')
            .ok_or(bad("expected PATH:FUNC[+OFF]"))?;
        let (func, offset) = match rest.split_once('+') {
            Some((f, o)) => (f, parse_num(o).ok_or(bad("offset is not a number"))?),
            None => (rest, 0),
        };
        if path.is_empty() || func.is_empty() {
            return Err(bad("expected PATH:FUNC[+OFF]"));
        }
        Ok(UprobeSpec {
            path: path.into(),
            func: func.to_owned(),
            offset,
        })
    }

    /// Resolves to a uprobe [`ProbeTarget`] via [`uprobe_offset`].
    ///
    /// # Errors
    /// As [`uprobe_offset`].
    pub fn resolve(&self) -> Result<ProbeTarget, Error> {
        Ok(ProbeTarget::User {
            path: self.path.clone(),
            offset: uprobe_offset(&self.path, &self.func, self.offset)?,
            func: self.func.clone(),
        })
    }
}

fn parse_num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The FILE offset of `func + offset` in the ELF file at `path`, as `uprobe_events` wants.
///
/// The symbol is looked up in `.symtab`, then `.dynsym` (stripped binaries, shared
/// libraries) by [`sluice_core::elf::definition`]. Its value is a virtual address; the
/// allocated section with file bytes holding it maps it back to the file:
/// `value - sh_addr + sh_offset` (the same as through its `PT_LOAD` segment, which maps its
/// sections at the same distance). This holds for PIE and non-PIE executables and for
/// shared libraries alike.
///
/// # Errors
/// [`Error::Symbol`] when the file cannot be read or parsed, the symbol is missing or
/// undefined, `offset` is beyond the symbol's size, or no loaded section holds it.
pub fn uprobe_offset(path: &Path, func: &str, offset: u64) -> Result<u64, Error> {
    let err = |problem| Error::Symbol {
        path: path.to_path_buf(),
        func: func.to_owned(),
        problem,
    };
    // Mapped, not read: a C library is megabytes and only its symbol tables are needed.
    let data = Mmap::open(path).map_err(|e| err(SymbolProblem::Read(e)))?;
    let elf = Elf::parse(data.bytes()).map_err(|e| err(SymbolProblem::NotElf(e)))?;
    let (addr, size) = definition(&elf, func).ok_or_else(|| err(SymbolProblem::NoSuchSymbol))?;
    if size != 0 && offset >= size {
        return Err(err(SymbolProblem::BeyondSize { offset, size }));
    }
    let vaddr = addr
        .checked_add(offset)
        .ok_or_else(|| err(SymbolProblem::Overflow))?;
    elf.file_offset(vaddr)
        .ok_or_else(|| err(SymbolProblem::NoSection { vaddr }))
}

/// The ELF `e_machine` of the file at `path` (a uprobe's binary: whose ABI its arguments
/// follow), read through [`sluice_core::elf`].
///
/// # Errors
/// [`SymbolProblem::Read`] when the file cannot be read, [`SymbolProblem::NotElf`] when it
/// is no ELF file.
pub fn elf_machine(path: &Path) -> Result<u16, SymbolProblem> {
    let data = Mmap::open(path).map_err(SymbolProblem::Read)?;
    let elf = Elf::parse(data.bytes()).map_err(SymbolProblem::NotElf)?;
    Ok(elf.header().machine)
}

/// The link-time address of the definition of `name` in `elf` (`.symtab` first, then
/// `.dynsym`): a USDT argument's `%rip`-relative symbol.
#[must_use]
pub fn symbol_address(elf: &Elf<'_>, name: &str) -> Option<u64> {
    definition(elf, name).map(|(addr, _)| addr)
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
    fn uprobe_specs() {
        let s = UprobeSpec::parse("/usr/lib/libc.so.6:malloc+0x10").unwrap();
        assert_eq!(
            (s.path.to_str().unwrap(), s.func.as_str(), s.offset),
            ("/usr/lib/libc.so.6", "malloc", 16)
        );
        assert_eq!(UprobeSpec::parse("/bin/x:main").unwrap().offset, 0);
        for bad in ["main", ":main", "/bin/x:", "/bin/x:main+zz"] {
            assert!(UprobeSpec::parse(bad).is_err(), "{bad}");
        }
    }
}
