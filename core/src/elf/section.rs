//! Section headers (`Elf32_Shdr` / `Elf64_Shdr`) and string tables.

use super::{read, Class};
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
    pub fn read(data: &[u8], off: usize, class: Class, endian: Endian) -> Result<Self> {
        const W: &str = "section header";
        let u32_at = |o: usize| read::<u32>(data, off.saturating_add(o), endian, W);
        match class {
            Class::Elf64 => {
                let u64_at = |o: usize| read::<u64>(data, off.saturating_add(o), endian, W);
                Ok(SectionHeader {
                    name: u32_at(0)?,
                    sh_type: u32_at(4)?,
                    flags: u64_at(8)?,
                    addr: u64_at(16)?,
                    offset: u64_at(24)?,
                    size: u64_at(32)?,
                    link: u32_at(40)?,
                    info: u32_at(44)?,
                    addralign: u64_at(48)?,
                    entsize: u64_at(56)?,
                })
            }
            Class::Elf32 => Ok(SectionHeader {
                name: u32_at(0)?,
                sh_type: u32_at(4)?,
                flags: u32_at(8)?.into(),
                addr: u32_at(12)?.into(),
                offset: u32_at(16)?.into(),
                size: u32_at(20)?.into(),
                link: u32_at(24)?,
                info: u32_at(28)?,
                addralign: u32_at(32)?.into(),
                entsize: u32_at(36)?.into(),
            }),
        }
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
}

impl<'a> StrTab<'a> {
    /// An empty table (every lookup fails).
    #[must_use]
    pub const fn empty() -> Self {
        StrTab { data: &[] }
    }

    /// Validates a string table: empty, or ending with NUL.
    ///
    /// # Errors
    /// [`Error::BadSection`] when a non-empty table does not end with NUL.
    pub fn new(data: &'a [u8], section: SectionRef) -> Result<Self> {
        match data.last() {
            None | Some(0) => Ok(StrTab { data }),
            Some(_) => Err(Error::BadSection {
                section,
                what: "string table does not end with NUL",
            }),
        }
    }

    /// The string at `index` (up to its NUL), or `None` when out of range or not UTF-8.
    #[must_use]
    pub fn get(&self, index: u32) -> Option<&'a str> {
        let tail = self.data.get(index as usize..)?;
        let len = tail.iter().position(|&b| b == 0)?;
        core::str::from_utf8(tail.get(..len)?).ok()
    }
}
