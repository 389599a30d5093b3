//! `PATH:FUNC[+OFF]` uprobe targets and the file offset `uprobe_events` wants.

use super::error::Error;
use super::probe::ProbeTarget;
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
/// libraries). Its value is a virtual address; the `PT_LOAD` segment containing it maps
/// it back to the file: `value - p_vaddr + p_offset`. This holds for PIE and non-PIE
/// executables and for shared libraries alike.
///
/// # Errors
/// [`Error::Symbol`] when the file cannot be read or parsed, the symbol is missing or
/// undefined, `offset` is beyond the symbol's size, or no loaded segment holds it.
pub fn uprobe_offset(path: &Path, func: &str, offset: u64) -> Result<u64, Error> {
    use object::{Object as _, ObjectSegment as _, ObjectSymbol as _};
    let err = |what: String| Error::Symbol {
        path: path.to_path_buf(),
        func: func.to_owned(),
        what,
    };
    let data = std::fs::read(path).map_err(|e| err(format!("cannot read it: {e}")))?;
    let file = object::File::parse(&*data).map_err(|e| err(format!("not an ELF file: {e}")))?;
    let found = |syms: object::SymbolIterator<'_, '_, &[u8]>| {
        let mut best = None;
        for s in syms {
            if s.name() == Ok(func) && s.is_definition() {
                best = Some((s.address(), s.size()));
                if s.kind() == object::SymbolKind::Text {
                    break;
                }
            }
        }
        best
    };
    let (addr, size) = found(file.symbols())
        .or_else(|| found(file.dynamic_symbols()))
        .ok_or_else(|| err("no such defined symbol in .symtab or .dynsym".into()))?;
    if size != 0 && offset >= size {
        return Err(err(format!(
            "offset {offset} is beyond the function's {size} bytes"
        )));
    }
    let vaddr = addr
        .checked_add(offset)
        .ok_or_else(|| err("address overflows".into()))?;
    for seg in file.segments() {
        let (file_off, file_size) = seg.file_range();
        let start = seg.address();
        if vaddr >= start && vaddr - start < file_size {
            return Ok(vaddr - start + file_off);
        }
    }
    Err(err(format!(
        "address {vaddr:#x} is in no PT_LOAD segment with file bytes"
    )))
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
