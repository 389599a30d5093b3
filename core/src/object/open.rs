//! The opened object: [`ObjectStorage`], the tables the caller owns, and [`Object`], the
//! view the open phase hands out. Opening runs [`sections::fill`](super::sections) (header,
//! sections, symbols, legacy maps, programs), parses the `.BTF` when the object needs it,
//! adds the BTF-defined, global data and `.kconfig` maps, then checks every relocation.

use super::externs::{self, KconfigExtern};
use super::maps::{MapDef, MapKind};
use super::parts::{ExecSection, Parts};
use super::programs::Program;
use super::sections::capacity;
use super::table::{Entry, DEFAULT_PATCHES};
use crate::btf::Btf;
use crate::elf::{self, Elf, SHT_NOBITS, SHT_PROGBITS};
use crate::error::{Error, Result};
use heapless::vec::{Vec, VecView};

/// Default program capacity: the peers' `large` object has 200.
pub const DEFAULT_PROGRAMS: usize = 256;
/// Default map capacity: the peers' `large` object has 50.
pub const DEFAULT_MAPS: usize = 128;
/// Default capacity of the `.BTF` type index (one `u32` per type, 64 KiB): an object
/// built against a whole `vmlinux.h` keeps only the types it uses, a few thousand.
pub const DEFAULT_BTF_TYPES: usize = 16 * 1024;

/// The program and map tables of an [`Object`], owned by the caller: up to `P` programs,
/// `M` maps, a `.BTF` type index of `T` entries and a relocation table of `L` entries,
/// held inline (about 150 KiB with the default capacities, a few hundred bytes for
/// `ObjectStorage<4, 4, 0, 16>` on a small stack). Creating one costs nothing (the entries are not initialised); opening into it
/// again reuses it.
///
/// The type index is used only by objects that need their BTF to open: those with
/// BTF-defined maps (`.maps`) or `extern` variables (`.kconfig`). `T = 0` refuses them
/// with [`Error::Capacity`], as does a relocation table of more than `L` entries.
#[doc(alias = "bpf_object")]
pub struct ObjectStorage<
    'a,
    const P: usize = DEFAULT_PROGRAMS,
    const M: usize = DEFAULT_MAPS,
    const T: usize = DEFAULT_BTF_TYPES,
    const L: usize = DEFAULT_PATCHES,
> {
    programs: Vec<Program<'a>, P>,
    maps: Vec<MapDef<'a>, M>,
    /// Scratch for the open pass: the executable sections, at most one per program.
    execs: Vec<ExecSection<'a>, P>,
    /// The `.BTF` type index ([`Btf::parse`]), when the object needs it.
    btf_index: Vec<u32, T>,
    /// The relocation table (see [`DEFAULT_PATCHES`]).
    table: Vec<Entry, L>,
    /// What the object knows besides its tables: written in place by the open phase, so
    /// the [`Object`] handed out is a few references (`None` until the first open: a new
    /// storage writes one tag, not the whole record).
    parts: Option<Parts<'a>>,
}

impl ObjectStorage<'_> {
    /// Empty storage with the default capacities ([`DEFAULT_PROGRAMS`], [`DEFAULT_MAPS`]).
    #[must_use]
    pub const fn new() -> Self {
        Self::with_capacities()
    }
}

impl<const P: usize, const M: usize, const T: usize, const L: usize> ObjectStorage<'_, P, M, T, L> {
    /// Empty storage for up to `P` programs, `M` maps and `T` BTF types:
    /// `ObjectStorage::<4, 4>::with_capacities()`.
    #[must_use]
    pub const fn with_capacities() -> Self {
        ObjectStorage {
            programs: Vec::new(),
            maps: empty(),
            execs: empty(),
            btf_index: empty(),
            table: empty(),
            parts: None,
        }
    }
}

/// An empty vector, built out of line: built inline next to one another, the vectors'
/// zero lengths and the uninitialised buffers between them are merged by LLVM into one
/// `memset` of the whole storage (tens of KiB per open); a call keeps them apart.
#[inline(never)]
const fn empty<T, const N: usize>() -> Vec<T, N> {
    Vec::new()
}

impl<const P: usize, const M: usize, const T: usize, const L: usize> Default
    for ObjectStorage<'_, P, M, T, L>
{
    fn default() -> Self {
        Self::with_capacities()
    }
}

impl<const P: usize, const M: usize, const T: usize, const L: usize> core::fmt::Debug
    for ObjectStorage<'_, P, M, T, L>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ObjectStorage")
            .field("programs", &self.programs.len())
            .field("maps", &self.maps.len())
            .finish()
    }
}

/// An opened eBPF object: everything the load phase needs, viewed in the input bytes
/// (`'a`) and in the caller's [`ObjectStorage`] (`'s`). Small and `Copy`.
#[derive(Clone, Copy, Debug)]
#[doc(alias = "bpf_object")]
pub struct Object<'a, 's> {
    pub(super) parts: &'s Parts<'a>,
    pub(super) maps: &'s [MapDef<'a>],
    pub(super) programs: &'s [Program<'a>],
    /// The relocation table (see [`DEFAULT_PATCHES`]).
    pub(super) table: &'s [Entry],
    /// The `.BTF`, when opening needed it (BTF-defined maps, externs).
    pub(super) btf: Option<Btf<'s>>,
}

impl<'a, 's> Object<'a, 's> {
    /// Opens an eBPF object from its bytes into `storage` (whatever it held before is
    /// dropped). Never touches the kernel, never allocates.
    ///
    /// # Errors
    /// Every malformed input is an [`Error`] naming what and where: header fields,
    /// sections, symbols, relocations (section, relocation index and instruction), map
    /// definition layouts, probe specs (column); more programs or maps than `P`/`M` is
    /// [`Error::Capacity`].
    pub fn open<const P: usize, const M: usize, const T: usize, const L: usize>(
        bytes: &'a [u8],
        storage: &'s mut ObjectStorage<'a, P, M, T, L>,
    ) -> Result<Self> {
        let ObjectStorage {
            programs,
            maps,
            execs,
            btf_index,
            table,
            parts,
        } = storage;
        programs.clear();
        maps.clear();
        execs.clear();
        btf_index.clear();
        table.clear();
        let parts = super::sections::fill(
            bytes,
            parts,
            programs.as_mut_view(),
            maps.as_mut_view(),
            execs.as_mut_view(),
        )?;
        // BTF when the object cannot be opened without it (BTF-defined maps, externs), and
        // for global data, whose maps are mmap-able depending on their DATASEC: there a BTF
        // that does not parse is as if absent (no mmap-able maps), as libbpf treats it.
        let btf = if parts.btf_map_symbols > 0 || parts.externs > 0 {
            parse_btf(parts, btf_index)?
        } else if parts.data_lo < parts.data_hi {
            parse_btf(parts, btf_index).ok().flatten()
        } else {
            None
        };
        finish(
            parts,
            btf.as_ref(),
            programs,
            maps.as_mut_view(),
            table.as_mut_view(),
        )?;
        let programs: &'s Vec<Program<'a>, P> = programs;
        let maps: &'s Vec<MapDef<'a>, M> = maps;
        let parts: &'s Parts<'a> = parts;
        let table: &'s Vec<Entry, L> = table;
        Ok(Object {
            parts,
            maps: maps.as_slice(),
            programs: programs.as_slice(),
            table: table.as_slice(),
            btf,
        })
    }

    /// The object's `.BTF` if opening parsed it (the object has BTF-defined maps or
    /// `extern` variables); otherwise see [`Object::btf_bytes`] and [`Object::parse_btf`].
    #[must_use]
    pub fn btf(&self) -> Option<&Btf<'s>> {
        self.btf.as_ref()
    }

    /// The raw `.BTF` section, if any.
    #[must_use]
    pub fn btf_bytes(&self) -> Option<&'a [u8]> {
        self.section_bytes(self.parts.btf_section)
    }

    /// The raw `.BTF.ext` section, if any.
    #[must_use]
    pub fn btf_ext_bytes(&self) -> Option<&'a [u8]> {
        self.section_bytes(self.parts.btf_ext_section)
    }

    fn section_bytes(&self, index: Option<u32>) -> Option<&'a [u8]> {
        let sh = self.parts.elf.section(index?)?;
        Some(self.parts.elf.section_data(&sh))
    }

    /// Parses the object's `.BTF` with `index` as its type index (at least
    /// [`Btf::count_types`] entries): for callers that need it when opening did not
    /// (func_info, line_info, CO-RE). `None` when the object has no `.BTF`.
    ///
    /// # Errors
    /// [`Error::Btf`] for malformed BTF or an index too short.
    pub fn parse_btf<'x>(&self, index: &'x mut [u32]) -> Result<Option<Btf<'x>>>
    where
        'a: 'x,
    {
        match self.btf_bytes() {
            Some(bytes) => Ok(Some(Btf::parse(bytes, index)?)),
            None => Ok(None),
        }
    }

    /// Size of the ELF section `index` and the value of its symbol named `name` (an
    /// `STT_OBJECT`), for BTF DATASEC fix-ups: `(section size, symbol value)`.
    #[must_use]
    pub fn section_size_by_name(&self, name: &str) -> Option<u64> {
        let elf = &self.parts.elf;
        (1..elf.header().shnum).find_map(|i| {
            let sh = elf.section(i)?;
            (elf.section_name_bytes(&sh) == name.as_bytes()).then_some(sh.size)
        })
    }

    /// The value (`st_value`) of the first `STT_OBJECT` symbol named `name` defined in a
    /// section: where a variable of a DATASEC lies in its section.
    #[must_use]
    pub fn variable_offset(&self, name: &str) -> Option<u64> {
        let symbols = self.parts.symbols?;
        let found = symbols.iter().find_map(|(_, sym)| {
            (sym.kind() == elf::STT_OBJECT && sym.shndx != 0 && symbols.name(&sym) == Some(name))
                .then_some(sym.value)
        });
        found
    }

    /// The `license` section's string, if present.
    #[must_use]
    pub fn license(&self) -> Option<&'a str> {
        self.parts.license
    }

    /// The `version` section's `LINUX_VERSION_CODE`, if present.
    #[must_use]
    pub fn version(&self) -> Option<u32> {
        self.parts.version
    }

    /// Map definitions, in the order of their offsets in the `maps` section (a map
    /// relocation's index points into this slice).
    #[must_use]
    pub fn maps(&self) -> &'s [MapDef<'a>] {
        self.maps
    }

    /// Programs, in section order.
    #[must_use]
    pub fn programs(&self) -> &'s [Program<'a>] {
        self.programs
    }

    /// The underlying ELF view.
    #[must_use]
    pub fn elf(&self) -> &Elf<'a> {
        &self.parts.elf
    }

    /// The object's Kconfig externs with their slots in the `.kconfig` map (the map
    /// [`MapKind::Kconfig`] of [`Object::maps`]), in DATASEC order. Empty when the
    /// object declares none.
    ///
    /// # Errors
    /// [`Error::Btf`] for malformed types; [`Error::Capacity`] past
    /// [`MAX_EXTERNS`](super::MAX_EXTERNS).
    pub fn kconfig_externs(&self, out: &mut [Option<KconfigExtern<'s>>]) -> Result<usize> {
        let Some(btf) = self.btf.as_ref() else {
            return Ok(0);
        };
        let symbols = self.parts.symbols;
        let weak = |name: &str| {
            symbols.is_some_and(|s| {
                s.iter().any(|(_, sym)| {
                    sym.shndx == 0 && sym.bind() == elf::STB_WEAK && s.name(&sym) == Some(name)
                })
            })
        };
        externs::kconfig_externs(btf, weak, out)
    }
}

/// Parses `.BTF` into the storage's type index.
fn parse_btf<'a: 's, 's, const T: usize>(
    parts: &Parts<'a>,
    index: &'s mut Vec<u32, T>,
) -> Result<Option<Btf<'s>>> {
    let Some(section) = parts.btf_section else {
        if parts.btf_map_symbols > 0 {
            return Err(Error::BadSection {
                section: parts.elf.section_ref(parts.btf_maps_section.unwrap_or(0)),
                what: "BTF-defined maps (.maps) without a .BTF section to describe them",
            });
        }
        // Externs without BTF: relocations against them are refused one by one.
        return Ok(None);
    };
    let sh = parts.elf.section(section).unwrap_or_default();
    let data: &'a [u8] = parts.elf.section_data(&sh);
    // One pass in the usual case; the reference path otherwise, and for every error.
    if let Some((header, checked)) = Btf::check_into(data, index.as_mut_view()) {
        let index: &'s Vec<u32, T> = index;
        return Ok(Some(Btf::from_checked(
            data,
            header,
            checked,
            index.as_slice(),
        )));
    }
    index.clear();
    let count = Btf::count_types(data)? as usize;
    index
        .resize(count, 0)
        .map_err(|_| capacity("BTF types (ObjectStorage T)", T))?;
    Ok(Some(Btf::parse(data, index.as_mut_slice())?))
}

/// libbpf's rule for a global data map: `BPF_F_MMAPABLE` when its DATASEC holds at least one
/// variable that is not `static` (a section of static variables only, or one without a
/// DATASEC such as `.rodata.str1.1`, is not mmap-able).
fn mmapable(btf: &Btf<'_>, section: &str) -> bool {
    btf.find(section, crate::btf::Kind::Datasec)
        .is_some_and(|sec| {
            // VAR headers read in place: the linkage is the word after the header.
            crate::btf::maps::var_ids(&sec).any(|id| {
                btf.raw(id).is_some_and(|r| {
                    r.kind == crate::btf::Kind::Var && r.word(btf, 0) != crate::btf::LINKAGE_STATIC
                })
            })
        })
}

/// The maps [`finish`] adds after the legacy ones: BTF-defined maps, global data maps and
/// the `.kconfig` map.
fn more_maps<'a>(
    parts: &mut Parts<'a>,
    btf: Option<&Btf<'_>>,
    maps: &mut VecView<MapDef<'a>>,
) -> Result<()> {
    let elf = parts.elf;
    if let (Some(btf), Some(section)) = (btf, parts.btf_maps_section) {
        if parts.btf_map_symbols > 0 {
            btf_map_defs(parts, btf, section, maps)?;
        }
    }
    parts.first_data_map = maps.len() as u32;
    let map_cap = maps.capacity();
    for index in parts.data_lo..parts.data_hi {
        let Some(sh) = elf.section(index) else {
            continue;
        };
        let Some(kind) = data_kind(&elf, &sh) else {
            continue;
        };
        // libbpf skips empty sections: no map, and nothing can refer to them.
        if sh.size == 0 {
            continue;
        }
        let size = u32::try_from(sh.size).map_err(|_| Error::BadSection {
            section: elf.section_ref(index),
            what: "global data section larger than 4 GiB",
        })?;
        let initial = if kind == MapKind::Bss {
            &[][..]
        } else {
            elf.section_data(&sh)
        };
        // The map is named after its section: a name that is not UTF-8 names no map
        // (found by the `object` fuzz target: it gave a map with an empty name).
        let name = elf
            .shstrtab()
            .get(sh.name)
            .ok_or_else(|| Error::BadSection {
                section: elf.section_ref(index),
                what: "global data section name is not valid UTF-8",
            })?;
        let mut def = MapDef::internal(name, kind, index, size, initial);
        def.set_mmapable(btf.is_some_and(|b| mmapable(b, name)));
        maps.push(def).map_err(|_| capacity("maps", map_cap))?;
    }
    if let Some(btf) = btf {
        if parts.externs > 0 {
            if let Some(size) = externs::kconfig_size(btf)? {
                parts.kconfig_map = Some(maps.len() as u32);
                let mut def = MapDef::internal(".kconfig", MapKind::Kconfig, 0, size, &[]);
                def.set_mmapable(mmapable(btf, ".kconfig"));
                maps.push(def).map_err(|_| capacity("maps", map_cap))?;
            }
        }
    }
    Ok(())
}

/// The second half of the open phase, once the BTF (if needed) is parsed: BTF-defined
/// maps, global data maps, the `.kconfig` map, then every relocation of every program.
fn finish<'a>(
    parts: &mut Parts<'a>,
    btf: Option<&Btf<'_>>,
    programs: &mut [Program<'a>],
    maps: &mut VecView<MapDef<'a>>,
    table: &mut VecView<Entry>,
) -> Result<()> {
    if parts.btf_map_symbols > 0 || parts.data_lo < parts.data_hi || parts.externs > 0 {
        more_maps(parts, btf, maps)?;
    } else {
        parts.first_data_map = maps.len() as u32;
    }
    super::table::check_rels(parts, programs, maps, table)?;
    super::table::build(parts, programs, table)
}

/// The kind of global data section `sh` holds, by libbpf's names: `.rodata`,
/// `.rodata.*`, `.data`, `.data.*` (PROGBITS), `.bss`, `.bss.*` (NOBITS).
fn data_kind(elf: &Elf<'_>, sh: &elf::SectionHeader) -> Option<MapKind> {
    let name = elf.section_name_bytes(sh);
    let is = |base: &[u8]| {
        name.strip_prefix(base)
            .is_some_and(|rest| rest.is_empty() || rest.first() == Some(&b'.'))
    };
    if sh.is_exec() {
        return None;
    }
    match sh.sh_type {
        SHT_PROGBITS if is(b".rodata") => Some(MapKind::Rodata),
        SHT_PROGBITS if is(b".data") => Some(MapKind::Data),
        SHT_NOBITS if is(b".bss") => Some(MapKind::Bss),
        _ => None,
    }
}

/// Fills the BTF-defined maps: the placeholders pushed for the symbols of `.maps` (after
/// the legacy maps) are put in the order of the `.maps` DATASEC's variables (libbpf's
/// order) and read from their BTF definitions.
fn btf_map_defs<'a>(
    parts: &Parts<'a>,
    btf: &Btf<'_>,
    section: u32,
    maps: &mut VecView<MapDef<'a>>,
) -> Result<()> {
    let at = || parts.elf.section_ref(section);
    let first = parts.map_count as usize;
    let datasec = btf
        .find(".maps", crate::btf::Kind::Datasec)
        .ok_or_else(|| Error::BadSection {
            section: at(),
            what: "no DATASEC named .maps in .BTF for the BTF-defined maps",
        })?;
    let mut filled = first;
    let mut memo = crate::btf::maps::fast::Memo::default();
    for var_id in crate::btf::maps::var_ids(&datasec) {
        // The usual definition read in one walk; any other, and every error, by the
        // reference reader (each path places its own result: nothing is copied between).
        match crate::btf::maps::fast::parse_var_memo(btf, var_id, &mut memo) {
            Some(def) => place_btf_map(btf, section, maps, filled, &def),
            None => {
                let def = crate::btf::maps::parse_var_reference(btf, var_id)?;
                place_btf_map(btf, section, maps, filled, &def)
            }
        }
        .ok_or_else(|| Error::BadSection {
            section: at(),
            what: "a .maps variable in .BTF has no symbol in .maps",
        })?;
        filled += 1;
    }
    if filled != maps.len() {
        return Err(Error::BadSection {
            section: at(),
            what: "a symbol of .maps has no variable in the .maps DATASEC",
        });
    }
    Ok(())
}

/// Puts the placeholder of the map named by `def` at `filled` (usually it is there
/// already: the symbols come in the DATASEC's order) and fills it in; `None` when no
/// placeholder from `filled` on has its name.
fn place_btf_map<'a>(
    btf: &Btf<'_>,
    section: u32,
    maps: &mut VecView<MapDef<'a>>,
    filled: usize,
    def: &crate::btf::maps::RawMapDef,
) -> Option<()> {
    let strings = btf.strs();
    let rest = maps.get_mut(filled..)?;
    // Names compared in place.
    let is = |m: &MapDef<'_>| strings.is(def.name_off, m.name.as_bytes());
    if !rest.first().is_some_and(is) {
        let found = rest.iter().position(is)?;
        rest.swap(0, found);
    }
    let m = rest.first_mut()?;
    *m = MapDef::from_btf(m.name, m.offset, section, def);
    Some(())
}
