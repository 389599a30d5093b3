//! The ELF file: its header, section header table and section name table, validated.

use super::header::Header;
use super::section::{SectionHeader, StrTab, SHF_ALLOC, SHT_NOBITS, SHT_NULL, SHT_STRTAB};
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
        for (index, sh) in self.sections() {
            self.check_section(index, &sh)?;
        }
        Ok(())
    }

    /// [`Elf::check_sections`]'s checks of section `index` (header `sh`) alone.
    ///
    /// # Errors
    /// [`Error::BadSection`] naming the section when it fails.
    #[inline(always)]
    pub(crate) fn check_section(&self, index: u32, sh: &SectionHeader) -> Result<()> {
        let names = self.shstrtab.len() as u64;
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
        // Not `bool::then`: its closure is not always inlined.
        if index < self.header.shnum {
            Some(self.section_unchecked(index))
        } else {
            None
        }
    }

    /// Iterates over `(index, header)` of every section.
    pub fn sections(&self) -> impl Iterator<Item = (u32, SectionHeader)> + '_ {
        // The table lies in the file with `shnum` entries of `shentsize` bytes
        // (Header::parse checked it): one entry per chunk.
        let ent = usize::from(self.header.shentsize).max(1);
        let len = self.header.shnum as usize * ent;
        let table = self
            .data
            .get(self.header.shoff as usize..)
            .unwrap_or_default();
        let table = table.get(..len).unwrap_or_default();
        (0..)
            .zip(table.chunks_exact(ent))
            .map(move |(i, c)| (i, self.header_at(c)))
    }

    /// The file offset of a link-time `address` of an executable or shared library:
    /// `address - sh_addr + sh_offset` of the allocated section with contents that holds
    /// it (the same as through its `PT_LOAD` segment); `None` when no such section does.
    /// This is where a uprobe at `address` goes.
    #[must_use]
    pub fn file_offset(&self, address: u64) -> Option<u64> {
        self.sections()
            .map(|(_, sh)| sh)
            .find(|sh| {
                sh.flags & SHF_ALLOC != 0
                    && sh.sh_type != SHT_NOBITS
                    && address >= sh.addr
                    && address - sh.addr < sh.size
            })
            .and_then(|sh| (address - sh.addr).checked_add(sh.offset))
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

    /// The section header in `bytes` (one entry of the table).
    #[inline(always)]
    fn header_at(&self, bytes: &[u8]) -> SectionHeader {
        let native = if cfg!(target_endian = "little") {
            Endian::Little
        } else {
            Endian::Big
        };
        let endian = self.header.endian;
        if endian == native {
            SectionHeader::read(bytes, 0, self.header.class, native).unwrap_or_default()
        } else {
            SectionHeader::read(bytes, 0, self.header.class, endian).unwrap_or_default()
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
