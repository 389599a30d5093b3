//! REL tables (`Elf32_Rel` / `Elf64_Rel`): eBPF objects use relocations without addends.

use super::file::Elf;
use super::record::{Class, Entries};
use super::section::SHT_REL;
use super::symbol::SymbolTable;
use crate::error::{Error, Result};

/// One relocation entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rel {
    /// Byte offset inside the section the table applies to.
    pub offset: u64,
    /// Symbol index (validated in range of the linked symbol table).
    pub sym: u32,
    /// Relocation type (`R_BPF_64_64` = 1 on `ld_imm64`, `R_BPF_64_32` = 10 on calls ...).
    pub r_type: u32,
}

/// A validated REL table: entry size, count and every symbol index checked once.
#[derive(Clone, Copy, Debug)]
pub struct RelTable<'a> {
    entries: Entries<'a>,
    /// Section index of this table.
    pub section: u32,
    /// Section the relocations apply to (`sh_info`).
    pub target: u32,
}

impl<'a> RelTable<'a> {
    pub(super) fn new(
        elf: &Elf<'a>,
        index: u32,
        symbols: &SymbolTable<'a>,
        check_entries: bool,
    ) -> Result<Self> {
        // The section's name is looked up only on the error paths.
        let bad = |what| Error::BadSection {
            section: elf.section_ref(index),
            what,
        };
        let sh = elf.section(index).ok_or_else(|| bad("no such section"))?;
        if sh.sh_type != SHT_REL {
            return Err(bad("not SHT_REL"));
        }
        if sh.link != symbols.section {
            return Err(bad("sh_link is not the symbol table"));
        }
        let class = elf.header().class;
        let entsize = entry_size(class);
        if (sh.entsize != 0 && sh.entsize != entsize as u64) || sh.size % entsize as u64 != 0 {
            return Err(bad("relocation entry size does not match the ELF class"));
        }
        let data = elf.section_data(&sh);
        let count = u32::try_from(data.len() / entsize).map_err(|_| bad("too many relocations"))?;
        let table = RelTable {
            entries: Entries {
                data,
                class,
                endian: elf.endian(),
                count,
            },
            section: index,
            target: sh.info,
        };
        for i in (0..count).filter(|_| check_entries) {
            let rel = table.get(i).ok_or_else(|| bad("relocation unreadable"))?;
            if rel.sym >= symbols.len() {
                return Err(Error::BadReloc {
                    section: elf.section_ref(sh.info),
                    index: i,
                    insn: rel.offset / 8,
                    what: "symbol index outside the symbol table",
                });
            }
        }
        Ok(table)
    }

    /// The table of section `index` of an object whose tables were validated at open:
    /// nothing is re-checked, a section that is not a REL table reads as empty.
    #[inline]
    pub(crate) fn validated(elf: &Elf<'a>, index: u32) -> Self {
        let sh = elf.section(index).unwrap_or_default();
        let class = elf.header().class;
        let data = if sh.sh_type == SHT_REL {
            elf.section_data(&sh)
        } else {
            &[]
        };
        RelTable {
            entries: Entries {
                data,
                class,
                endian: elf.endian(),
                count: (data.len() / entry_size(class)) as u32,
            },
            section: index,
            target: sh.info,
        }
    }

    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> u32 {
        self.entries.count
    }

    /// Whether the table is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.count == 0
    }

    /// Entry `index`, or `None` past the table.
    #[must_use]
    #[inline]
    pub fn get(&self, index: u32) -> Option<Rel> {
        match self.entries.class {
            Class::Elf64 => self.entries.read::<16, _>(index, |f| {
                let info = f.u64(8);
                Rel {
                    offset: f.u64(0),
                    sym: (info >> 32) as u32,
                    r_type: info as u32,
                }
            }),
            Class::Elf32 => self.entries.read::<8, _>(index, |f| {
                let info = f.u32(4);
                Rel {
                    offset: f.u32(0).into(),
                    sym: info >> 8,
                    r_type: info & 0xff,
                }
            }),
        }
    }

    /// Iterates over `(index, entry)`.
    pub fn iter(&self) -> impl Iterator<Item = (u32, Rel)> + '_ {
        (0..self.entries.count).filter_map(move |i| Some((i, self.get(i)?)))
    }
}

fn entry_size(class: Class) -> usize {
    match class {
        Class::Elf32 => 8,
        Class::Elf64 => 16,
    }
}

impl<'a> Elf<'a> {
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
}
