//! Zero-copy ELF views: header, section headers and names, symbols, REL entries.
//!
//! ELF32 and ELF64, both byte orders: the byte order is carried as a value
//! ([`scroll::Endian`]), not a type. [`Elf::parse`] bound-checks every offset, size, count
//! and string index of the header and the section header table once; the views it hands
//! out ([`SymbolTable`], [`RelTable`], [`StrTab`]) check their own tables once when created,
//! so their accessors cannot fail afterwards.

mod header;
mod reloc;
mod section;
mod symbol;

pub use header::{Class, Header, EM_BPF, EM_NONE, ET_DYN, ET_EXEC, ET_REL};
pub use reloc::{Rel, RelTable};
pub use section::{
    SectionHeader, StrTab, SHF_ALLOC, SHF_COMPRESSED, SHF_EXECINSTR, SHF_WRITE, SHT_NOBITS,
    SHT_NULL, SHT_PROGBITS, SHT_REL, SHT_RELA, SHT_STRTAB, SHT_SYMTAB,
};
pub use symbol::{
    Symbol, SymbolTable, STB_GLOBAL, STB_LOCAL, STB_WEAK, STT_FUNC, STT_NOTYPE, STT_OBJECT,
    STT_SECTION,
};

use crate::error::{Error, Result, SectionRef};
use scroll::Endian;

/// An ELF file whose header and section header table have been validated.
#[derive(Clone, Copy, Debug)]
pub struct Elf<'a> {
    data: &'a [u8],
    header: Header,
    /// The section name string table (validated).
    shstrtab: StrTab<'a>,
}

impl<'a> Elf<'a> {
    /// Parses and validates the ELF header and the section header table.
    ///
    /// # Errors
    /// [`Error::Truncated`] or [`Error::BadHeader`] naming the field and its offset;
    /// [`Error::BadSection`] for a section whose contents lie outside the file or whose
    /// name index is outside the section name table.
    pub fn parse(data: &'a [u8]) -> Result<Self> {
        let elf = Self::parse_header(data)?;
        elf.check_sections()?;
        Ok(elf)
    }

    /// [`Elf::parse`] without the pass over the sections: the caller runs
    /// [`Elf::check_sections`] before it hands the view out (the open phase checks the
    /// header's fields first).
    pub(crate) fn parse_header(data: &'a [u8]) -> Result<Self> {
        let header = Header::parse(data)?;
        let mut elf = Elf {
            data,
            header,
            shstrtab: StrTab::empty(),
        };
        if header.shstrndx != 0 {
            let sh = elf.section_unchecked(header.shstrndx);
            let at = SectionRef::new(header.shstrndx, "");
            if sh.sh_type != SHT_STRTAB {
                return Err(Error::BadSection {
                    section: at,
                    what: "section name table is not SHT_STRTAB",
                });
            }
            let end = sh.offset.saturating_add(sh.size);
            let bytes = data
                .get(sh.offset as usize..)
                .and_then(|d| d.get(..sh.size as usize));
            if end > data.len() as u64 || bytes.is_none() {
                return Err(Error::BadSection {
                    section: at,
                    what: "contents extend past the end of the file",
                });
            }
            elf.shstrtab = StrTab::new(bytes.unwrap_or_default(), at)?;
        }
        Ok(elf)
    }

    /// The checks [`Elf::parse`] makes of every section, in index order: its contents lie
    /// inside the file and its name index inside the section name table.
    ///
    /// # Errors
    /// [`Error::BadSection`] naming the first section that fails, by index.
    pub(crate) fn check_sections(&self) -> Result<()> {
        let names = self.shstrtab.len() as u64;
        for (index, sh) in self.sections() {
            let bad = |what| {
                Err(Error::BadSection {
                    section: SectionRef::new(index, ""),
                    what,
                })
            };
            if sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL {
                let end = sh.offset.checked_add(sh.size);
                if end.is_none_or(|end| end > self.data.len() as u64) {
                    return bad("contents extend past the end of the file");
                }
            }
            if u64::from(sh.name) >= names && !(sh.name == 0 && names == 0) {
                return bad("name index outside the section name table");
            }
        }
        Ok(())
    }

    /// The section name table.
    #[inline]
    pub(crate) fn shstrtab(&self) -> &StrTab<'a> {
        &self.shstrtab
    }

    /// The whole input.
    #[must_use]
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// The validated file header.
    #[must_use]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Byte order of the file.
    #[must_use]
    pub fn endian(&self) -> Endian {
        self.header.endian
    }

    /// Number of section headers.
    #[must_use]
    pub fn section_count(&self) -> u32 {
        self.header.shnum
    }

    /// Section header `index`, or `None` past the table.
    #[must_use]
    #[inline(always)]
    pub fn section(&self, index: u32) -> Option<SectionHeader> {
        (index < self.header.shnum).then(|| self.section_unchecked(index))
    }

    /// Iterates over `(index, header)` of every section.
    pub fn sections(&self) -> impl Iterator<Item = (u32, SectionHeader)> + '_ {
        (0..self.header.shnum).map(move |i| (i, self.section_unchecked(i)))
    }

    /// The name of a section; empty when the file has no section name table or the name
    /// is not UTF-8 (see [`Elf::section_name_bytes`] for the exact bytes).
    #[must_use]
    pub fn section_name(&self, sh: &SectionHeader) -> &'a str {
        self.shstrtab.get(sh.name).unwrap_or("")
    }

    /// The bytes of a section's name, up to its NUL (index validated in [`Elf::parse`]).
    #[must_use]
    #[inline]
    pub fn section_name_bytes(&self, sh: &SectionHeader) -> &'a [u8] {
        self.shstrtab.bytes(sh.name)
    }

    /// A [`SectionRef`] for error messages.
    #[must_use]
    pub fn section_ref(&self, index: u32) -> SectionRef {
        let name = self.section(index).map_or("", |sh| self.section_name(&sh));
        SectionRef::new(index, name)
    }

    /// The file bytes of a section (empty for `SHT_NOBITS`/`SHT_NULL`).
    #[must_use]
    #[inline]
    pub fn section_data(&self, sh: &SectionHeader) -> &'a [u8] {
        self.section_data_unchecked(sh)
    }

    /// The symbol table in section `index`, validated (entry size, count, string table link,
    /// every name index).
    ///
    /// # Errors
    /// [`Error::BadSection`] when the section is not a usable `SHT_SYMTAB`.
    pub fn symbol_table(&self, index: u32) -> Result<SymbolTable<'a>> {
        SymbolTable::new(self, index, true)
    }

    /// The symbol table in section `index` with everything checked but its name indices:
    /// the caller checks each symbol's (the open phase does so in its pass over them).
    pub(crate) fn symbol_table_names_unchecked(&self, index: u32) -> Result<SymbolTable<'a>> {
        SymbolTable::new(self, index, false)
    }

    /// The REL table in section `index`, validated against `symbols` (entry size, count,
    /// every symbol index).
    ///
    /// # Errors
    /// [`Error::BadSection`] when the section is not a usable `SHT_REL`.
    pub fn rel_table(&self, index: u32, symbols: &SymbolTable<'a>) -> Result<RelTable<'a>> {
        RelTable::new(self, index, symbols, true)
    }

    /// The REL table in section `index` with everything checked but its entries: the
    /// caller checks each entry's symbol index (the open phase does so in its pass over
    /// them, in entry order with its other checks).
    pub(crate) fn rel_table_entries_unchecked(
        &self,
        index: u32,
        symbols: &SymbolTable<'a>,
    ) -> Result<RelTable<'a>> {
        RelTable::new(self, index, symbols, false)
    }

    #[inline(always)]
    fn section_unchecked(&self, index: u32) -> SectionHeader {
        // In range by construction: Header::parse checked shoff + shnum * shentsize.
        let off = self.header.shoff as usize + index as usize * usize::from(self.header.shentsize);
        // The target's byte order, the usual one, read natively (no branch per field).
        let native = if cfg!(target_endian = "little") {
            Endian::Little
        } else {
            Endian::Big
        };
        let endian = self.header.endian;
        if endian == native {
            SectionHeader::read(self.data, off, self.header.class, native).unwrap_or_default()
        } else {
            SectionHeader::read(self.data, off, self.header.class, endian).unwrap_or_default()
        }
    }

    #[inline]
    fn section_data_unchecked(&self, sh: &SectionHeader) -> &'a [u8] {
        if sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL {
            return &[];
        }
        // Checked in `parse` for every section.
        let start = sh.offset as usize;
        let end = start.saturating_add(sh.size as usize);
        self.data.get(start..end).unwrap_or_default()
    }
}

/// The entries of a table of fixed-size records (symbols, relocations): the bytes, the class
/// and byte order that lay each record out, and how many whole records there are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entries<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) class: Class,
    pub(crate) endian: Endian,
    pub(crate) count: u32,
}

impl<'a> Entries<'a> {
    /// Record `index`, `N` bytes long (the record size of `self.class`), read by `f`;
    /// `None` past the table. `f` is inlined once per byte order, so the usual one (the
    /// target's) reads each field natively, without a branch.
    #[inline(always)]
    pub(crate) fn read<const N: usize, R>(
        &self,
        index: u32,
        f: impl Fn(Fields<'a, N>) -> R,
    ) -> Option<R> {
        if index >= self.count {
            return None;
        }
        let off = index as usize * N;
        let native = cfg!(target_endian = "little");
        if (self.endian == Endian::Little) == native {
            Fields::at(self.data, off, native).map(f)
        } else {
            Fields::at(self.data, off, !native).map(f)
        }
    }
}

/// Fixed-position fields of a record already cut to its full size `N`: with `N` known,
/// every in-record read compiles to a plain load; a position past the record reads as 0
/// (callers only use positions inside it).
#[derive(Clone, Copy)]
pub(crate) struct Fields<'a, const N: usize> {
    pub(crate) b: &'a [u8; N],
    pub(crate) little: bool,
}

impl<'a, const N: usize> Fields<'a, N> {
    /// Cuts `N` bytes at `off` of `data`.
    #[inline]
    pub(crate) fn at(data: &'a [u8], off: usize, little: bool) -> Option<Self> {
        let b = data.get(off..off.checked_add(N)?)?.try_into().ok()?;
        Some(Fields { b, little })
    }
    #[inline(always)]
    fn bytes<const M: usize>(&self, at: usize) -> [u8; M] {
        let mut out = [0u8; M];
        if let Some(src) = self.b.get(at..at + M) {
            out.copy_from_slice(src);
        }
        out
    }
    #[inline(always)]
    pub(crate) fn u8(&self, at: usize) -> u8 {
        self.b.get(at).copied().unwrap_or(0)
    }
    #[inline(always)]
    pub(crate) fn u16(&self, at: usize) -> u16 {
        let b = self.bytes::<2>(at);
        if self.little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    }
    #[inline(always)]
    pub(crate) fn u32(&self, at: usize) -> u32 {
        let b = self.bytes::<4>(at);
        if self.little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    }
    #[inline(always)]
    pub(crate) fn u64(&self, at: usize) -> u64 {
        let b = self.bytes::<8>(at);
        if self.little {
            u64::from_le_bytes(b)
        } else {
            u64::from_be_bytes(b)
        }
    }
}
