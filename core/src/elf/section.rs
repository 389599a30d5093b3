//! Section headers (`Elf32_Shdr` / `Elf64_Shdr`) and string tables.

use super::record::{Class, Fields};
use crate::error::{Error, Result, SectionRef};
use scroll::Endian;

/// Inactive section header.
pub const SHT_NULL: u32 = 0;
/// Program-defined contents (code, data).
pub const SHT_PROGBITS: u32 = 1;
/// Symbol table.
pub const SHT_SYMTAB: u32 = 2;
/// String table.
pub const SHT_STRTAB: u32 = 3;
/// Relocations with addends.
pub const SHT_RELA: u32 = 4;
/// Occupies no file space (`.bss`).
pub const SHT_NOBITS: u32 = 8;
/// Relocations without addends.
pub const SHT_REL: u32 = 9;
/// Dynamic symbol table (`.dynsym` of an executable or shared library).
pub const SHT_DYNSYM: u32 = 11;

/// Writable.
pub const SHF_WRITE: u64 = 0x1;
/// Occupies memory at run time.
pub const SHF_ALLOC: u64 = 0x2;
/// Executable instructions.
pub const SHF_EXECINSTR: u64 = 0x4;
/// Compressed contents (`Elf_Chdr` first).
pub const SHF_COMPRESSED: u64 = 0x800;

/// One section header, widened to 64-bit fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SectionHeader {
    /// Offset of the name in the section name table.
    pub name: u32,
    /// `sh_type`.
    pub sh_type: u32,
    /// `sh_flags`.
    pub flags: u64,
    /// `sh_addr`.
    pub addr: u64,
    /// File offset of the contents.
    pub offset: u64,
    /// Size of the contents in bytes.
    pub size: u64,
    /// `sh_link` (e.g. the string table of a symbol table).
    pub link: u32,
    /// `sh_info` (e.g. the section a REL table applies to).
    pub info: u32,
    /// `sh_addralign`.
    pub addralign: u64,
    /// Size of one entry for table sections.
    pub entsize: u64,
}

impl SectionHeader {
    /// Reads a section header at byte `off` of `data`.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the header does not fit.
    #[inline(always)]
    pub fn read(data: &[u8], off: usize, class: Class, endian: Endian) -> Result<Self> {
        let little = endian == Endian::Little;
        let truncated = || Error::Truncated {
            what: "section header",
            offset: off as u64,
            len: 64,
        };
        Ok(match class {
            Class::Elf64 => {
                let f = Fields::<64>::at(data, off, little).ok_or_else(truncated)?;
                SectionHeader {
                    name: f.u32(0),
                    sh_type: f.u32(4),
                    flags: f.u64(8),
                    addr: f.u64(16),
                    offset: f.u64(24),
                    size: f.u64(32),
                    link: f.u32(40),
                    info: f.u32(44),
                    addralign: f.u64(48),
                    entsize: f.u64(56),
                }
            }
            Class::Elf32 => {
                let f = Fields::<40>::at(data, off, little).ok_or_else(truncated)?;
                SectionHeader {
                    name: f.u32(0),
                    sh_type: f.u32(4),
                    flags: f.u32(8).into(),
                    addr: f.u32(12).into(),
                    offset: f.u32(16).into(),
                    size: f.u32(20).into(),
                    link: f.u32(24),
                    info: f.u32(28),
                    addralign: f.u32(32).into(),
                    entsize: f.u32(36).into(),
                }
            }
        })
    }

    /// Whether this section holds executable code.
    #[must_use]
    pub fn is_exec(&self) -> bool {
        self.sh_type == SHT_PROGBITS && self.flags & SHF_EXECINSTR != 0
    }
}

/// A string table whose last byte is NUL, so every in-range index names a terminated string.
#[derive(Clone, Copy, Debug)]
pub struct StrTab<'a> {
    data: &'a [u8],
    /// The whole table when it is valid UTF-8 (the usual case): every string in it is then
    /// valid too (each ends before a NUL, an ASCII byte), and is cut out of it without
    /// checking it again.
    text: Option<&'a str>,
}

impl<'a> StrTab<'a> {
    /// An empty table (every lookup fails).
    #[must_use]
    pub const fn empty() -> Self {
        StrTab {
            data: &[],
            text: Some(""),
        }
    }

    /// Validates a string table: empty, or ending with NUL.
    ///
    /// # Errors
    /// [`Error::BadSection`] when a non-empty table does not end with NUL.
    pub fn new(data: &'a [u8], section: SectionRef) -> Result<Self> {
        match data.last() {
            None | Some(0) => Ok(StrTab {
                data,
                text: core::str::from_utf8(data).ok(),
            }),
            Some(_) => Err(Error::BadSection {
                section,
                what: "string table does not end with NUL",
            }),
        }
    }

    /// The string at `index` cut out of `text`, the whole table known to be UTF-8.
    #[inline]
    pub(crate) fn get_in(&self, text: &'a str, index: u32) -> Option<&'a str> {
        // Cut at the start (a char boundary or not), then before the NUL (always one).
        let tail = text.get(index as usize..)?;
        let len = nul_at(tail.as_bytes())?;
        tail.get(..len)
    }

    /// Length of the table in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the table is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The bytes of the string at `index`, up to its NUL; empty when out of range.
    #[must_use]
    #[inline]
    pub fn bytes(&self, index: u32) -> &'a [u8] {
        let tail = self.data.get(index as usize..).unwrap_or_default();
        let len = nul_at(tail).unwrap_or(0);
        tail.get(..len).unwrap_or_default()
    }

    /// The table from `index` to its end (empty when out of range): a name compared with
    /// a NUL-terminated literal needs no length scan.
    #[inline]
    pub(crate) fn tail(&self, index: u32) -> &'a [u8] {
        self.data.get(index as usize..).unwrap_or_default()
    }

    /// The string at `index` (up to its NUL), or `None` when out of range or not UTF-8.
    #[must_use]
    #[inline]
    pub fn get(&self, index: u32) -> Option<&'a str> {
        match self.text {
            Some(text) => self.get_in(text, index),
            None => {
                let tail = self.data.get(index as usize..)?;
                let len = nul_at(tail)?;
                core::str::from_utf8(tail.get(..len)?).ok()
            }
        }
    }
}

/// The position of the first NUL in `bytes`, eight bytes at a time (names are looked up
/// for every program and function at open).
#[inline]
pub(crate) fn nul_at(bytes: &[u8]) -> Option<usize> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for w in words.by_ref() {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        // Little-endian whatever the target, so the first byte is the lowest.
        let v = u64::from_le_bytes(b);
        let zero = v.wrapping_sub(LOW) & !v & HIGH;
        if zero != 0 {
            return Some(at + (zero.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&b| b == 0)
        .map(|i| at + i)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::indexing_slicing, clippy::needless_range_loop)]
    use super::nul_at;

    #[test]
    fn nul_at_finds_the_first_nul() {
        let mut buf = [b'a'; 40];
        assert_eq!(nul_at(&buf), None);
        assert_eq!(nul_at(&[]), None);
        for i in 0..40 {
            buf = [b'a'; 40];
            buf[i] = 0;
            for j in i + 1..40 {
                // Bytes after the first NUL do not matter, high bits included.
                buf[j] = if j % 3 == 0 { 0 } else { 0x80 | j as u8 };
            }
            assert_eq!(nul_at(&buf), Some(i), "{i}");
            assert_eq!(nul_at(&buf[..=i]), Some(i));
        }
        // 0x80 and 0x01 bytes before the NUL are not mistaken for it.
        assert_eq!(nul_at(&[0x80, 0x01, 0x81, 0xff, 0x7f, 1, 2, 3, 0]), Some(8));
    }
}
