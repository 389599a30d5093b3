//! The open phase: an eBPF object read without the kernel (the seed's `bpf_object__open`).
//!
//! [`Object::open`] checks the header (`ET_REL`; `EM_BPF` or `EM_NONE`; the target's byte
//! order), reads `license` and `version`, the legacy `maps` section, every executable
//! section as a program, and validates every relocation of every program. Nothing is
//! copied: programs are views of the input, relocations are re-read when a program is
//! written out with [`Object::relocate`]. Storage is two fixed vectors whose capacities are
//! the const generics `P` (programs) and `M` (maps).

mod maps;
mod programs;
mod relocate;

pub use maps::{map_type_name, MapDef, MapLayout, MAX_MAP_WORDS};
pub use programs::Program;
pub use relocate::{Reloc, RelocKind, PSEUDO_MAP_FD, R_BPF_64_32, R_BPF_64_64};

use crate::elf::{self, Elf, SymbolTable, SHT_PROGBITS, SHT_REL, SHT_SYMTAB, STT_SECTION};
use crate::error::{Error, Result};
use heapless::Vec;

/// Default program capacity: the peers' `large` object has 200.
pub const DEFAULT_PROGRAMS: usize = 256;
/// Default map capacity: the peers' `large` object has 50.
pub const DEFAULT_MAPS: usize = 128;

/// An opened eBPF object: everything the load phase needs, viewed in the input bytes.
#[derive(Clone, Debug)]
#[doc(alias = "bpf_object")]
pub struct Object<'a, const P: usize = DEFAULT_PROGRAMS, const M: usize = DEFAULT_MAPS> {
    elf: Elf<'a>,
    symbols: Option<SymbolTable<'a>>,
    license: Option<&'a str>,
    version: Option<u32>,
    maps_section: Option<u32>,
    map_def_size: u32,
    maps: Vec<MapDef<'a>, M>,
    programs: Vec<Program<'a>, P>,
}

impl<'a, const P: usize, const M: usize> Object<'a, P, M> {
    /// Opens an eBPF object from its bytes. Never touches the kernel, never allocates.
    ///
    /// # Errors
    /// Every malformed input is an [`Error`] naming what and where: header fields,
    /// sections, symbols, relocations (section, relocation index and instruction), map
    /// definition layouts, probe specs (column); more programs or maps than `P`/`M` is
    /// [`Error::Capacity`].
    pub fn open(bytes: &'a [u8]) -> Result<Self> {
        let mut obj = Self::new();
        obj.reopen(bytes)?;
        Ok(obj)
    }

    /// An empty object (no programs, no maps), to be filled by [`Object::reopen`].
    #[must_use]
    pub const fn new() -> Self {
        Object {
            elf: Elf::empty(&[]),
            symbols: None,
            license: None,
            version: None,
            maps_section: None,
            map_def_size: 0,
            maps: Vec::new(),
            programs: Vec::new(),
        }
    }

    /// Opens `bytes` into this object, reusing its storage: what a tool that reads many
    /// objects, or firmware with one static slot, calls instead of [`Object::open`]. The
    /// object holds its capacity inline (tens of KiB with the default capacities), so
    /// `open` pays for initialising and moving it; `reopen` pays for the parse alone.
    ///
    /// # Errors
    /// As [`Object::open`]; on error the object is left empty.
    pub fn reopen(&mut self, bytes: &'a [u8]) -> Result<()> {
        self.elf = Elf::empty(bytes);
        self.symbols = None;
        self.license = None;
        self.version = None;
        self.maps_section = None;
        self.map_def_size = 0;
        self.maps.clear();
        self.programs.clear();
        let r = self.fill(bytes);
        if r.is_err() {
            self.maps.clear();
            self.programs.clear();
        }
        r
    }

    fn fill(&mut self, bytes: &'a [u8]) -> Result<()> {
        // The seed's rule first: an object in the other byte order is refused as such, not
        // as the garbage its fields read as in ours.
        let object_little = match bytes.get(5) {
            Some(2) => Some(false),
            Some(1) => Some(true),
            _ => None,
        };
        if bytes.get(..4) == Some(b"\x7fELF".as_slice())
            && object_little.is_some_and(|l| l != cfg!(target_endian = "little"))
        {
            return Err(Error::ByteOrder {
                object_little: !cfg!(target_endian = "little"),
            });
        }
        let elf = Elf::parse(bytes)?;
        let h = *elf.header();
        if h.e_type != elf::ET_REL {
            return Err(Error::BadHeader {
                what: "e_type is not ET_REL (relocatable object)",
                offset: 16,
                value: h.e_type.into(),
            });
        }
        if h.machine != elf::EM_BPF && h.machine != elf::EM_NONE {
            return Err(Error::BadHeader {
                what: "e_machine is not EM_BPF (247) or EM_NONE",
                offset: 18,
                value: h.machine.into(),
            });
        }
        if h.is_little_endian() != cfg!(target_endian = "little") {
            return Err(Error::ByteOrder {
                object_little: h.is_little_endian(),
            });
        }
        let little = h.is_little_endian();
        self.elf = elf;
        let mut symtab = None;
        let mut rels: Vec<u32, P> = Vec::new();
        // Executable sections; split into programs by their function symbols below.
        let mut execs: Vec<ExecSection<'a>, P> = Vec::new();
        for (index, sh) in elf.sections() {
            let at = || elf.section_ref(index);
            match sh.sh_type {
                SHT_SYMTAB => {
                    if symtab.is_some() {
                        return Err(Error::BadSection {
                            section: at(),
                            what: "more than one symbol table",
                        });
                    }
                    symtab = Some(index);
                    continue;
                }
                SHT_REL => {
                    // Only tables of executable sections are ours; each such section has at
                    // most one, so there are no more of them than programs.
                    if elf.section(sh.info).is_some_and(|t| t.is_exec()) {
                        rels.push(index).map_err(|_| Error::Capacity {
                            what: "relocation sections",
                            limit: P as u32,
                        })?;
                    }
                    continue;
                }
                SHT_PROGBITS => {}
                _ => continue,
            }
            let name_bytes = elf.section_name_bytes(&sh);
            if sh.is_exec() {
                if sh.size == 0 || sh.size % 8 != 0 {
                    continue;
                }
                let name = core::str::from_utf8(name_bytes).map_err(|_| Error::BadSection {
                    section: at(),
                    what: "program section name is not valid UTF-8",
                })?;
                if name != ".text" {
                    crate::probe::parse(name).map_err(|error| Error::Probe {
                        section: at(),
                        error,
                    })?;
                }
                let exec = ExecSection {
                    index,
                    name,
                    code: elf.section_data(&sh),
                    has_funcs: false,
                };
                execs.push(exec).map_err(|_| Error::Capacity {
                    what: "programs",
                    limit: P as u32,
                })?;
                continue;
            }
            match name_bytes {
                b"license" => {
                    let data = elf.section_data(&sh);
                    let len =
                        data.iter()
                            .position(|&b| b == 0)
                            .ok_or_else(|| Error::BadSection {
                                section: at(),
                                what: "license is not NUL-terminated",
                            })?;
                    let text = data.get(..len).and_then(|t| core::str::from_utf8(t).ok());
                    self.license = Some(text.ok_or_else(|| Error::BadSection {
                        section: at(),
                        what: "license is not valid UTF-8",
                    })?);
                }
                b"version" => {
                    let data: [u8; 4] =
                        elf.section_data(&sh)
                            .try_into()
                            .map_err(|_| Error::BadSection {
                                section: at(),
                                what: "version must be exactly 4 bytes (a u32 LINUX_VERSION_CODE)",
                            })?;
                    self.version = Some(if little {
                        u32::from_le_bytes(data)
                    } else {
                        u32::from_be_bytes(data)
                    });
                }
                b"maps" => self.maps_section = Some(index),
                _ => {}
            }
        }
        if let Some(index) = symtab {
            self.symbols = Some(elf.symbol_table(index)?);
        }
        self.collect_symbols(&mut execs)?;
        // Sections without function symbols (hand-written or stripped objects): one program each.
        for e in execs.iter().filter(|e| !e.has_funcs) {
            self.push_program(e, None, 0, e.code)?;
        }
        self.programs
            .sort_unstable_by_key(|p| (p.section_index, p.offset));
        for &rel in &rels {
            self.collect_relocations(rel)?;
        }
        Ok(())
    }

    /// The `license` section's string, if present.
    #[must_use]
    pub fn license(&self) -> Option<&'a str> {
        self.license
    }

    /// The `version` section's `LINUX_VERSION_CODE`, if present.
    #[must_use]
    pub fn version(&self) -> Option<u32> {
        self.version
    }

    /// Map definitions, in the order of their offsets in the `maps` section (a map
    /// relocation's index points into this slice).
    #[must_use]
    pub fn maps(&self) -> &[MapDef<'a>] {
        &self.maps
    }

    /// Programs, in section order.
    #[must_use]
    pub fn programs(&self) -> &[Program<'a>] {
        &self.programs
    }

    /// The underlying ELF view.
    #[must_use]
    pub fn elf(&self) -> &Elf<'a> {
        &self.elf
    }

    fn push_program(
        &mut self,
        e: &ExecSection<'a>,
        name: Option<&'a str>,
        offset: u32,
        code: &'a [u8],
    ) -> Result<()> {
        let little = self.elf.header().is_little_endian();
        let program = Program {
            section_name: e.name,
            name,
            section_index: e.index,
            offset,
            code,
            little,
            rel_section: None,
            reloc_count: 0,
            map_reloc_count: 0,
        };
        self.programs.push(program).map_err(|_| Error::Capacity {
            what: "programs",
            limit: P as u32,
        })
    }

    /// Splits executable sections into programs at their function symbols and collects
    /// map definitions, in one pass over the symbols.
    fn collect_symbols(&mut self, execs: &mut [ExecSection<'a>]) -> Result<()> {
        let Some(symbols) = self.symbols else {
            if let Some(maps) = self.maps_section {
                let size = self.elf.section(maps).map_or(0, |sh| sh.size);
                if size > 0 {
                    return Err(Error::BadSection {
                        section: self.elf.section_ref(maps),
                        what: "maps section without a symbol table to name the maps",
                    });
                }
            }
            return Ok(());
        };
        let maps_section = self.maps_section.and_then(|s| u16::try_from(s).ok());
        for (i, sym) in symbols.iter() {
            let shndx = sym.shndx;
            if sym.kind() == STT_SECTION || shndx == 0 {
                continue;
            }
            if Some(shndx) == maps_section {
                let name = symbols.name(&sym).ok_or(Error::BadSymbol {
                    index: i,
                    what: "map name is not valid UTF-8",
                })?;
                if name.is_empty() {
                    continue;
                }
                let offset = u32::try_from(sym.value).map_err(|_| Error::BadSymbol {
                    index: i,
                    what: "map symbol offset too large",
                })?;
                // Fields are read once every symbol is known and the layout can be computed.
                let placeholder = MapDef::placeholder(name, offset);
                self.maps.push(placeholder).map_err(|_| Error::Capacity {
                    what: "maps",
                    limit: M as u32,
                })?;
            } else if sym.kind() == elf::STT_FUNC {
                let Ok(x) = execs.binary_search_by_key(&u32::from(shndx), |e| e.index) else {
                    continue;
                };
                let Some(e) = execs.get_mut(x) else { continue };
                let bad = |what| Error::BadSymbol { index: i, what };
                let name = symbols
                    .name(&sym)
                    .ok_or_else(|| bad("function name is not valid UTF-8"))?;
                let start =
                    usize::try_from(sym.value).map_err(|_| bad("function offset too large"))?;
                let end = start
                    .checked_add(usize::try_from(sym.size).unwrap_or(usize::MAX))
                    .ok_or_else(|| bad("function size too large"))?;
                if start % 8 != 0 || sym.size % 8 != 0 {
                    return Err(bad("function is not aligned to whole instructions"));
                }
                let code = e
                    .code
                    .get(start..end)
                    .ok_or_else(|| bad("function extends past the end of its section"))?;
                if code.is_empty() {
                    continue;
                }
                e.has_funcs = true;
                let e = *e;
                self.push_program(&e, Some(name), start as u32, code)?;
            }
        }
        if let Some(section) = self.maps_section {
            self.read_map_defs(section)?;
        }
        Ok(())
    }

    fn read_map_defs(&mut self, section: u32) -> Result<()> {
        let at = self.elf.section_ref(section);
        let sh = self.elf.section(section).unwrap_or_default();
        let data = self.elf.section_data(&sh);
        if self.maps.is_empty() {
            return Ok(());
        }
        self.maps.sort_unstable_by_key(|m| m.offset);
        let count = self.maps.len() as u64;
        let def_size = sh.size / count;
        let bad = Error::BadMapDef {
            section: at,
            def_size,
            maps: count as u32,
        };
        if sh.size % count != 0 {
            return Err(bad);
        }
        let layout = MapLayout::from_size(def_size).ok_or(bad)?;
        let endian = self.elf.endian();
        for (i, m) in self.maps.iter_mut().enumerate() {
            if u64::from(m.offset) != i as u64 * def_size {
                return Err(Error::BadSection {
                    section: at,
                    what: "map symbols do not point at consecutive definitions",
                });
            }
            *m = MapDef::read(m.name, data, m.offset, layout, endian, at)?;
        }
        self.map_def_size = def_size as u32;
        Ok(())
    }

    /// Finds each program's REL section and validates every relocation in it: each entry
    /// belongs to the program whose instructions contain its offset.
    fn collect_relocations(&mut self, index: u32) -> Result<()> {
        {
            let sh = self.elf.section(index).unwrap_or_default();
            let first = self.programs.partition_point(|p| p.section_index < sh.info);
            if self
                .programs
                .get(first)
                .is_none_or(|p| p.section_index != sh.info)
            {
                return Ok(()); // an executable section too small to be a program
            }
            let symbols = self.symbols.ok_or_else(|| Error::BadSection {
                section: self.elf.section_ref(index),
                what: "relocations without a symbol table",
            })?;
            let table = self.elf.rel_table_header(index, &symbols)?;
            for (i, rel) in table.iter() {
                if rel.sym >= symbols.len() {
                    return Err(Error::BadReloc {
                        section: self.elf.section_ref(sh.info),
                        index: i,
                        insn: rel.offset / 8,
                        what: "symbol index outside the symbol table",
                    });
                }
                let p = self
                    .program_at(sh.info, rel.offset)
                    .ok_or_else(|| Error::BadReloc {
                        section: self.elf.section_ref(sh.info),
                        index: i,
                        insn: rel.offset / 8,
                        what: "offset is outside every program of the section",
                    })?;
                let prog = self.programs.get(p).copied().ok_or(Error::Usage {
                    what: "program lookup",
                    value: p as u64,
                })?;
                if prog.rel_section.is_some_and(|r| r != index) {
                    return Err(Error::BadSection {
                        section: self.elf.section_ref(index),
                        what: "second REL section for the same program",
                    });
                }
                let sym = symbols.get(rel.sym).unwrap_or_default();
                let r = self.classify(&prog, i, rel, &sym)?;
                if let Some(prog) = self.programs.get_mut(p) {
                    prog.rel_section = Some(index);
                    prog.reloc_count += 1;
                    if matches!(r.kind, RelocKind::Map { .. }) {
                        prog.map_reloc_count += 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// The program of section `section` whose instructions contain byte `offset`.
    fn program_at(&self, section: u32, offset: u64) -> Option<usize> {
        let after = self
            .programs
            .partition_point(|p| (p.section_index, u64::from(p.offset)) <= (section, offset));
        let i = after.checked_sub(1)?;
        let p = self.programs.get(i)?;
        (p.section_index == section && offset < u64::from(p.offset) + p.code.len() as u64)
            .then_some(i)
    }

    /// The index of the map whose definition starts at `offset` of the `maps` section.
    fn map_index_at(&self, offset: u64) -> Option<u32> {
        let size = u64::from(self.map_def_size);
        if size == 0 || offset % size != 0 {
            return None;
        }
        let idx = offset / size;
        (idx < self.maps.len() as u64).then_some(idx as u32)
    }

    fn rel_table_of(&self, rel_section: u32) -> Option<elf::RelTable<'a>> {
        self.elf
            .rel_table_validated(rel_section, self.symbols.as_ref()?)
    }
}

/// An executable section seen during the section pass.
#[derive(Clone, Copy)]
struct ExecSection<'a> {
    index: u32,
    name: &'a str,
    code: &'a [u8],
    has_funcs: bool,
}

impl<const P: usize, const M: usize> Default for Object<'_, P, M> {
    fn default() -> Self {
        Self::new()
    }
}
