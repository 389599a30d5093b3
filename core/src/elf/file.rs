//! The ELF file: [`Elf`], its header and section header table validated once, and its
//! sections by index and name.

use scroll::Endian;

use super::header::Header;
use super::record::{ne_u16, ne_u32, ne_u64, Class};
use super::section::{SectionHeader, StrTab, SHT_NOBITS, SHT_NULL, SHT_STRTAB};
use crate::error::{Error, Result, SectionRef};

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
        let elf = Self::parse_header(data, true)?;
        // Every section's extent and name index, once.
        for index in 0..elf.header.shnum {
            let sh = elf.section_unchecked(index);
            elf.check_section(index, sh.sh_type, sh.name, sh.offset, sh.size)?;
        }
        Ok(elf)
    }

    /// [`Elf::parse`] without the pass over the sections: the caller checks each one with
    /// [`Elf::check_section`] before it uses it (the open phase does so in its own pass
    /// over the section headers) and before handing the view out. Unless `whole_text`,
    /// the section name table is not checked as UTF-8 as a whole (names are checked as
    /// they are read).
    pub(crate) fn parse_header(data: &'a [u8], whole_text: bool) -> Result<Self> {
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
            let bytes = bytes.unwrap_or_default();
            elf.shstrtab = if whole_text {
                StrTab::new(bytes, at)?
            } else {
                StrTab::new_lazy(bytes, at)?
            };
        }
        Ok(elf)
    }

    /// [`Elf::parse_header`] (names unchecked) of the usual object, read natively: ELF64 in
    /// the target's byte order with a section table and a section name table and nothing
    /// unusual (extended numbering, a missing table). `None` for anything else, valid or
    /// not: [`Elf::parse_header`] then gives the view or names the error.
    #[inline]
    pub(crate) fn parse_header_usual(data: &'a [u8]) -> Option<Self> {
        let h = data.first_chunk::<64>()?;
        let native: u8 = if cfg!(target_endian = "little") { 1 } else { 2 };
        // Magic, ELFCLASS64, the target's byte order, EV_CURRENT.
        if h.first_chunk::<7>()? != &[0x7f, b'E', b'L', b'F', 2, native, 1] {
            return None;
        }
        let shoff = ne_u64(h, 40);
        let (shentsize, shnum, shstrndx) = (ne_u16(h, 58), ne_u16(h, 60), ne_u16(h, 62));
        if shoff == 0 || shentsize != 64 || shnum == 0 || shstrndx == 0 || shstrndx >= shnum {
            return None;
        }
        let table = data
            .get(usize::try_from(shoff).ok()?..)?
            .get(..usize::from(shnum) * 64)?;
        let sh = table
            .get(usize::from(shstrndx) * 64..)?
            .first_chunk::<64>()?;
        if ne_u32(sh, 4) != SHT_STRTAB {
            return None;
        }
        let (offset, size) = (ne_u64(sh, 24), ne_u64(sh, 32));
        let names = data
            .get(usize::try_from(offset).ok()?..)?
            .get(..usize::try_from(size).ok()?)?;
        if names.last().is_some_and(|&b| b != 0) {
            return None;
        }
        Some(Elf {
            data,
            header: Header {
                class: Class::Elf64,
                endian: if native == 1 {
                    Endian::Little
                } else {
                    Endian::Big
                },
                e_type: ne_u16(h, 16),
                machine: ne_u16(h, 18),
                flags: ne_u32(h, 48),
                shoff,
                shentsize,
                shnum: shnum.into(),
                shstrndx: shstrndx.into(),
            },
            shstrtab: StrTab::new_unchecked_text(names),
        })
    }

    /// The checks [`Elf::parse`] makes of section `index`: its contents lie inside the
    /// file and its name index inside the section name table.
    ///
    /// # Errors
    /// [`Error::BadSection`] naming the section by index.
    #[inline(always)]
    pub(crate) fn check_section(
        &self,
        index: u32,
        sh_type: u32,
        name: u32,
        offset: u64,
        size: u64,
    ) -> Result<()> {
        if sh_type != SHT_NOBITS && sh_type != SHT_NULL {
            let end = offset.checked_add(size);
            if end.is_none_or(|end| end > self.data.len() as u64) {
                return Err(Error::BadSection {
                    section: SectionRef::new(index, ""),
                    what: "contents extend past the end of the file",
                });
            }
        }
        let names = self.shstrtab.len() as u64;
        if u64::from(name) >= names && !(name == 0 && names == 0) {
            return Err(Error::BadSection {
                section: SectionRef::new(index, ""),
                what: "name index outside the section name table",
            });
        }
        Ok(())
    }

    /// The bytes of the section header table (its extent checked by [`Header::parse`]).
    #[inline]
    pub(crate) fn section_table(&self) -> &'a [u8] {
        let len = self.header.shnum as usize * usize::from(self.header.shentsize);
        self.data
            .get(self.header.shoff as usize..)
            .and_then(|t| t.get(..len))
            .unwrap_or_default()
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

    /// Whether a section's name starts with `prefix` (no length scan: pass a literal with
    /// its NUL for an exact match).
    #[inline]
    pub(crate) fn section_name_starts_with(&self, sh: &SectionHeader, prefix: &[u8]) -> bool {
        self.shstrtab.tail(sh.name).starts_with(prefix)
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
