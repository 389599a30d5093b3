//! Symbol tables (`Elf32_Sym` / `Elf64_Sym`).

use super::file::Elf;
use super::record::{Class, Entries};
use super::section::{StrTab, SHT_DYNSYM, SHT_STRTAB, SHT_SYMTAB};
use crate::error::{Error, Result, SectionRef};

/// Local binding.
pub const STB_LOCAL: u8 = 0;
/// Global binding.
pub const STB_GLOBAL: u8 = 1;
/// Weak binding (`__weak`).
pub const STB_WEAK: u8 = 2;
/// Symbol type not specified.
pub const STT_NOTYPE: u8 = 0;
/// Data object.
pub const STT_OBJECT: u8 = 1;
/// Function.
pub const STT_FUNC: u8 = 2;
/// Section symbol.
pub const STT_SECTION: u8 = 3;

/// One symbol, widened to 64-bit fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Symbol {
    /// Offset of the name in the linked string table (validated in range).
    pub name: u32,
    /// `st_info`: binding (high nibble) and type (low nibble).
    pub info: u8,
    /// `st_other` (visibility).
    pub other: u8,
    /// Index of the section the symbol is defined in.
    pub shndx: u16,
    /// Value: for a relocatable object, the offset inside its section.
    pub value: u64,
    /// Size in bytes.
    pub size: u64,
}

impl Symbol {
    /// `STT_*` type.
    #[must_use]
    pub fn kind(&self) -> u8 {
        self.info & 0xf
    }

    /// `STB_*` binding.
    #[must_use]
    pub fn bind(&self) -> u8 {
        self.info >> 4
    }
}

/// A validated symbol table: entry size, count and every name index checked once.
#[derive(Clone, Copy, Debug)]
pub struct SymbolTable<'a> {
    entries: Entries<'a>,
    strtab: StrTab<'a>,
    /// Section index of the table.
    pub section: u32,
}

impl<'a> SymbolTable<'a> {
    pub(super) fn new(elf: &Elf<'a>, index: u32, check_names: bool, dynamic: bool) -> Result<Self> {
        // The section's name is looked up only on the error paths.
        let bad = |what| Error::BadSection {
            section: elf.section_ref(index),
            what,
        };
        let sh = elf.section(index).ok_or_else(|| bad("no such section"))?;
        match (dynamic, sh.sh_type) {
            (false, SHT_SYMTAB) | (true, SHT_DYNSYM) => {}
            (false, _) => return Err(bad("not SHT_SYMTAB")),
            (true, _) => return Err(bad("not SHT_DYNSYM")),
        }
        let class = elf.header().class;
        let entsize = entry_size(class);
        if sh.entsize != entsize as u64 || sh.size % entsize as u64 != 0 {
            return Err(bad("symbol table entry size does not match the ELF class"));
        }
        let strsh = elf
            .section(sh.link)
            .ok_or_else(|| bad("sh_link names no section"))?;
        if strsh.sh_type != SHT_STRTAB {
            return Err(bad("sh_link is not a string table"));
        }
        let strdata = elf.section_data(&strsh);
        let strtab = if sh.link == elf.header().shstrndx {
            // Usually one table holds section and symbol names: it is checked already.
            *elf.shstrtab()
        } else {
            match strdata.last() {
                None | Some(0) => StrTab::new(strdata, SectionRef::new(sh.link, ""))?,
                Some(_) => StrTab::new(strdata, elf.section_ref(sh.link))?,
            }
        };
        let data = elf.section_data(&sh);
        let count = u32::try_from(data.len() / entsize).map_err(|_| bad("too many symbols"))?;
        let table = SymbolTable {
            strtab,
            entries: Entries {
                data,
                class,
                endian: elf.endian(),
                count,
            },
            section: index,
        };
        if !check_names {
            return Ok(table);
        }
        // Every name index, in one tight pass over the `st_name` words.
        let limit = (strdata.len() as u64).max(1);
        let little = elf.header().is_little_endian();
        let bad_name = data.chunks_exact(entsize).position(|e| {
            let w = [
                e.first().copied().unwrap_or(0),
                e.get(1).copied().unwrap_or(0),
                e.get(2).copied().unwrap_or(0),
                e.get(3).copied().unwrap_or(0),
            ];
            let name = if little {
                u32::from_le_bytes(w)
            } else {
                u32::from_be_bytes(w)
            };
            u64::from(name) >= limit && name != 0
        });
        if let Some(i) = bad_name {
            return Err(Error::BadSymbol {
                index: i as u32,
                what: "name index outside the string table",
            });
        }
        Ok(table)
    }

    /// The linked string table.
    #[inline]
    pub(crate) fn strtab(&self) -> &StrTab<'a> {
        &self.strtab
    }

    /// Number of symbols (including the null symbol 0).
    #[must_use]
    pub fn len(&self) -> u32 {
        self.entries.count
    }

    /// Whether the table holds no symbol at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.count == 0
    }

    /// Symbol `index`, or `None` past the table.
    #[must_use]
    #[inline]
    pub fn get(&self, index: u32) -> Option<Symbol> {
        match self.entries.class {
            Class::Elf64 => self.entries.read::<24, _>(index, |f| Symbol {
                name: f.u32(0),
                info: f.u8(4),
                other: f.u8(5),
                shndx: f.u16(6),
                value: f.u64(8),
                size: f.u64(16),
            }),
            Class::Elf32 => self.entries.read::<16, _>(index, |f| Symbol {
                name: f.u32(0),
                value: f.u32(4).into(),
                size: f.u32(8).into(),
                info: f.u8(12),
                other: f.u8(13),
                shndx: f.u16(14),
            }),
        }
    }

    /// Iterates over `(index, symbol)`.
    pub fn iter(&self) -> impl Iterator<Item = (u32, Symbol)> + '_ {
        (0..self.entries.count).filter_map(move |i| Some((i, self.get(i)?)))
    }

    /// The name of a symbol; `None` when it is not valid UTF-8.
    #[must_use]
    pub fn name(&self, sym: &Symbol) -> Option<&'a str> {
        self.strtab.get(sym.name)
    }

    /// A reference to the table's section for errors.
    #[must_use]
    pub fn section_ref(&self) -> SectionRef {
        SectionRef::new(self.section, ".symtab")
    }
}

fn entry_size(class: Class) -> usize {
    match class {
        Class::Elf32 => 16,
        Class::Elf64 => 24,
    }
}

impl<'a> Elf<'a> {
    /// The symbol table in section `index`, validated (entry size, count, string table link,
    /// every name index).
    ///
    /// # Errors
    /// [`Error::BadSection`] when the section is not a usable `SHT_SYMTAB`.
    pub fn symbol_table(&self, index: u32) -> Result<SymbolTable<'a>> {
        SymbolTable::new(self, index, true, false)
    }

    /// The dynamic symbol table (`.dynsym`) in section `index`, validated as
    /// [`Elf::symbol_table`] validates `.symtab`.
    ///
    /// # Errors
    /// [`Error::BadSection`] when the section is not a usable `SHT_DYNSYM`.
    pub fn dynamic_symbol_table(&self, index: u32) -> Result<SymbolTable<'a>> {
        SymbolTable::new(self, index, true, true)
    }

    /// The symbol table in section `index` with everything checked but its name indices:
    /// the caller checks each symbol's (the open phase does so in its pass over them).
    pub(crate) fn symbol_table_names_unchecked(&self, index: u32) -> Result<SymbolTable<'a>> {
        SymbolTable::new(self, index, false, false)
    }
}
