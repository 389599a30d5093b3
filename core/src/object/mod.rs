//! The open phase: an eBPF object read without the kernel (the seed's `bpf_object__open`).
//!
//! [`Object::open`] checks the header (`ET_REL`; `EM_BPF` or `EM_NONE`; the target's byte
//! order), reads `license` and `version`, the legacy `maps` section, every executable
//! section as a program, and validates every relocation of every program. Programs are
//! views of the input; what relocating does is worked out once, at open, into a patch
//! table: each relocation's patch (a map's fd, an address in global data, an extern),
//! each function's code references with the function they land on, and a decoded copy of
//! the functions other functions call. [`Object::relocate`] then copies and patches
//! without re-reading the REL tables or rescanning instructions, however many programs
//! share a subprogram. The table is a shortcut, not a limit: an object that does not fit
//! it (or has unusual tables) is relocated by re-reading, with the same results.
//!
//! Each pass is linear in what it reads (sections, symbols, relocations, BTF types,
//! instructions); lookups that a pass repeats (a relocation's map, a call's target
//! function) are a division or a binary search over a table built once.
//!
//! The program and map tables live in an [`ObjectStorage`] the caller owns (capacities
//! are its const generics), and the [`Object`] borrows them: opening writes only the
//! entries the object has, never initialises or moves the whole capacity, and a tool that
//! reads many objects reuses one storage.
//!
//! ```
//! # fn f(bytes: &[u8]) -> sluice_core::Result<()> {
//! use sluice_core::object::{Object, ObjectStorage};
//! let mut storage = ObjectStorage::new();
//! let obj = Object::open(bytes, &mut storage)?;
//! for p in obj.programs() {
//!     let _ = (p.section_name, p.insn_count());
//! }
//! # Ok(()) }
//! ```

mod externs;
mod link;
mod maps;
mod patch;
mod programs;
mod relocate;

pub use externs::{KconfigExtern, KconfigKind, MAX_EXTERNS};
pub use link::{LinkedPart, MAX_CALL_DEPTH, MAX_LINKED};
pub use maps::{
    map_type_name, MapDef, MapKind, MapLayout, BPF_F_MMAPABLE, BPF_F_RDONLY_PROG, MAX_MAP_WORDS,
};
use patch::Patch;
pub use patch::{DEFAULT_INSNS, DEFAULT_PATCHES};
pub use programs::Program;
pub use relocate::{
    Reloc, RelocKind, PSEUDO_CALL, PSEUDO_FUNC, PSEUDO_MAP_FD, PSEUDO_MAP_VALUE, R_BPF_64_32,
    R_BPF_64_64,
};

use crate::btf::Btf;

use crate::elf::{
    self, ne_u16, ne_u32, ne_u64, Class, Elf, RelTable, SectionHeader, StrTab, SymbolTable,
    SHF_EXECINSTR, SHT_NOBITS, SHT_NULL, SHT_PROGBITS, SHT_REL, SHT_SYMTAB, STT_SECTION,
};
use crate::error::{Error, Result};
use crate::insn::Insn;
use heapless::vec::{Vec, VecView};

/// Default program capacity: the peers' `large` object has 200.
pub const DEFAULT_PROGRAMS: usize = 256;
/// Default map capacity: the peers' `large` object has 50.
pub const DEFAULT_MAPS: usize = 128;
/// Default capacity of the `.BTF` type index (one `u32` per type, 64 KiB): an object
/// built against a whole `vmlinux.h` keeps only the types it uses, a few thousand.
pub const DEFAULT_BTF_TYPES: usize = 16 * 1024;

/// The program and map tables of an [`Object`], owned by the caller: up to `P` programs,
/// `M` maps, a `.BTF` type index of `T` entries and `L` relocation patches, held inline
/// (about 140 KiB with the default capacities, a few hundred bytes for
/// `ObjectStorage<4, 4, 0, 0>` on a small stack).
/// Creating one costs nothing (the entries are not initialised); opening into it again
/// reuses it.
///
/// The type index is used only by objects that need their BTF to open: those with
/// BTF-defined maps (`.maps`) or `extern` variables (`.kconfig`). `T = 0` refuses them
/// with [`Error::Capacity`].
///
/// The patch table holds what relocating does to each function, worked out at open (see
/// [`DEFAULT_PATCHES`]); an object that needs more than `L` entries opens and relocates
/// all the same, re-reading its relocations each time (`L = 0` always does).
#[doc(alias = "bpf_object")]
pub struct ObjectStorage<
    'a,
    const P: usize = DEFAULT_PROGRAMS,
    const M: usize = DEFAULT_MAPS,
    const T: usize = DEFAULT_BTF_TYPES,
    const L: usize = DEFAULT_PATCHES,
    const I: usize = DEFAULT_INSNS,
> {
    programs: Vec<Program<'a>, P>,
    maps: Vec<MapDef<'a>, M>,
    /// Scratch for the open pass: the executable sections, at most one per program.
    execs: Vec<ExecSection<'a>, P>,
    /// The `.BTF` type index ([`Btf::parse`]), when the object needs it.
    btf_index: Vec<u32, T>,
    /// Relocation patches and code references of every function.
    patches: Vec<Patch, L>,
    /// Every function's instructions, decoded once (while they fit).
    insns: Vec<Insn, I>,
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

impl<const P: usize, const M: usize, const T: usize, const L: usize, const I: usize>
    ObjectStorage<'_, P, M, T, L, I>
{
    /// Empty storage for up to `P` programs, `M` maps, `T` BTF types, `L` patches and `I`
    /// decoded instructions: `ObjectStorage::<4, 4>::with_capacities()`.
    #[must_use]
    pub const fn with_capacities() -> Self {
        ObjectStorage {
            programs: Vec::new(),
            maps: empty(),
            execs: empty(),
            btf_index: empty(),
            patches: empty(),
            insns: empty(),
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

impl<const P: usize, const M: usize, const T: usize, const L: usize, const I: usize> Default
    for ObjectStorage<'_, P, M, T, L, I>
{
    fn default() -> Self {
        Self::with_capacities()
    }
}

impl<const P: usize, const M: usize, const T: usize, const L: usize, const I: usize>
    core::fmt::Debug for ObjectStorage<'_, P, M, T, L, I>
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
    parts: &'s Parts<'a>,
    maps: &'s [MapDef<'a>],
    programs: &'s [Program<'a>],
    /// Relocation patches and code references (see [`DEFAULT_PATCHES`]).
    patches: &'s [Patch],
    /// Decoded instructions of the functions (see [`DEFAULT_INSNS`]).
    insns: &'s [Insn],
    /// The `.BTF`, when opening needed it (BTF-defined maps, externs).
    btf: Option<Btf<'s>>,
}

/// What the object knows besides its two tables.
#[derive(Clone, Copy, Debug)]
struct Parts<'a> {
    elf: Elf<'a>,
    symbols: Option<SymbolTable<'a>>,
    license: Option<&'a str>,
    version: Option<u32>,
    maps_section: Option<u32>,
    map_def_size: u32,
    /// Number of legacy maps (the first entries of the map table).
    map_count: u32,
    /// The BTF-defined maps' `.maps` section.
    btf_maps_section: Option<u32>,
    /// Number of symbols in `.maps` (BTF-defined maps).
    btf_map_symbols: u32,
    /// The BTF-defined maps are in increasing `.maps` offset order (the usual case): a
    /// relocation finds its map by binary search.
    btf_maps_sorted: bool,
    /// When the BTF-defined maps lie at `btf_map_base + i * btf_map_stride` of `.maps`
    /// (the usual case: equal definitions one after the other), the stride: a relocation
    /// finds its map by a division. 0 otherwise.
    btf_map_stride: u64,
    btf_map_base: u64,
    /// `.BTF` and `.BTF.ext`.
    btf_section: Option<u32>,
    btf_ext_section: Option<u32>,
    /// Global data sections lie in `data_lo..data_hi`; their maps start at `first_data_map`.
    data_lo: u32,
    data_hi: u32,
    first_data_map: u32,
    /// Undefined global symbols (`extern`).
    externs: u32,
    /// The `.kconfig` map's index.
    kconfig_map: Option<u32>,
    /// The REL tables of executable sections lie in `rel_lo..rel_hi`.
    rel_lo: u32,
    rel_hi: u32,
    /// The patch table holds every relocation's patch, each function's as one run
    /// (`Program::patch_first`, `reloc_count` of them).
    patches_ready: bool,
    /// The patch table holds every function's code references too (`Program::call_first`).
    calls_ready: bool,
    /// Every REL table of code is in offset order.
    rels_sorted: bool,
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
    pub fn open<const P: usize, const M: usize, const T: usize, const L: usize, const I: usize>(
        bytes: &'a [u8],
        storage: &'s mut ObjectStorage<'a, P, M, T, L, I>,
    ) -> Result<Self> {
        let ObjectStorage {
            programs,
            maps,
            execs,
            btf_index,
            patches,
            insns,
            parts,
        } = storage;
        programs.clear();
        maps.clear();
        execs.clear();
        btf_index.clear();
        patches.clear();
        insns.clear();
        let parts = fill(
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
            programs.as_mut_view(),
            maps.as_mut_view(),
            patches.as_mut_view(),
            insns.as_mut_view(),
        )?;
        let programs: &'s Vec<Program<'a>, P> = programs;
        let maps: &'s Vec<MapDef<'a>, M> = maps;
        let patches: &'s Vec<Patch, L> = patches;
        let insns: &'s Vec<Insn, I> = insns;
        let parts: &'s Parts<'a> = parts;
        Ok(Object {
            parts,
            maps: maps.as_slice(),
            programs: programs.as_slice(),
            patches: patches.as_slice(),
            insns: insns.as_slice(),
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
}

fn capacity(what: &'static str, limit: usize) -> Error {
    Error::Capacity {
        what,
        limit: u32::try_from(limit).unwrap_or(u32::MAX),
    }
}

/// The open phase proper, non-generic: the tables are views of the caller's storage.
fn fill<'a, 'p>(
    bytes: &'a [u8],
    slot: &'p mut Option<Parts<'a>>,
    programs: &mut VecView<Program<'a>>,
    maps: &mut VecView<MapDef<'a>>,
    execs: &mut VecView<ExecSection<'a>>,
) -> Result<&'p mut Parts<'a>> {
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
    // The header and the section name table now; every other section is checked in the
    // pass below before it is used (one read of each section header, not two).
    let elf = match Elf::parse_header_usual(bytes) {
        Some(elf) => elf,
        None => Elf::parse_header(bytes, false)?,
    };
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
    // From here on every field is in the target's byte order: read natively. Written in
    // place, into the caller's storage.
    let parts = slot.insert(Parts {
        elf,
        symbols: None,
        license: None,
        version: None,
        maps_section: None,
        map_def_size: 0,
        map_count: 0,
        btf_maps_section: None,
        btf_map_symbols: 0,
        btf_maps_sorted: false,
        btf_map_stride: 0,
        btf_map_base: 0,
        btf_section: None,
        btf_ext_section: None,
        data_lo: u32::MAX,
        data_hi: 0,
        first_data_map: 0,
        externs: 0,
        kconfig_map: None,
        rel_lo: 0,
        rel_hi: 0,
        patches_ready: false,
        calls_ready: false,
        rels_sorted: false,
    });
    let wide = h.class == Class::Elf64;
    let mut names = Names::new(*elf.shstrtab());
    let scan = if wide {
        sections::<64>(parts, execs, &mut names)?
    } else {
        sections::<40>(parts, execs, &mut names)?
    };
    if let Some(index) = scan.symtab {
        parts.symbols = Some(match symbol_table(&elf, index, wide) {
            Some(table) => table,
            None => elf.symbol_table_names_unchecked(index)?,
        });
    }
    if wide {
        collect_symbols::<24>(parts, execs, programs, maps, &mut names)?;
    } else {
        collect_symbols::<16>(parts, execs, programs, maps, &mut names)?;
    }
    // Sections without function symbols (hand-written or stripped objects): one program each.
    let little = h.is_little_endian();
    for e in execs.iter().filter(|e| !e.has_funcs) {
        push_program(programs, little, e, None, 0, e.code)?;
    }
    // Symbols usually come in section order already: check before sorting.
    if !programs.is_sorted_by_key(|p| (p.section_index, p.offset)) {
        sort_nearly_sorted(programs);
    }
    parts.rel_lo = scan.rel_lo;
    parts.rel_hi = scan.rel_hi;
    Ok(parts)
}

/// Sorts programs by section and offset. They come nearly sorted (the functions of
/// `.text`, local symbols, in an order of their own; then one program per section): an
/// insertion sort moves the few out of place, where a quicksort went over all of them.
fn sort_nearly_sorted(programs: &mut [Program<'_>]) {
    let key = |p: &Program<'_>| (p.section_index, p.offset);
    for i in 1..programs.len() {
        let (Some(k), Some(prev)) = (programs.get(i).map(key), programs.get(i - 1).map(key)) else {
            break;
        };
        if prev <= k {
            continue;
        }
        // Where program `i` belongs among the sorted `..i`: after every smaller key.
        let to = programs
            .get(..i)
            .map_or(i, |done| done.partition_point(|p| key(p) <= k));
        if let Some(moved) = programs.get_mut(to..=i) {
            moved.rotate_right(1);
        }
    }
}

/// The symbol table in section `index` as [`Elf::symbol_table_names_unchecked`] makes it,
/// its headers read natively, when it passes every check and its names are in the section
/// name table (the usual case); `None` otherwise, and that path reports the error. The
/// section pass checked every section's extent already.
#[inline]
fn symbol_table<'a>(elf: &Elf<'a>, index: u32, wide: bool) -> Option<SymbolTable<'a>> {
    let headers = elf.section_table();
    let entsize = usize::from(elf.header().shentsize);
    let raw = |index: u32| {
        let at = (index as usize).checked_mul(entsize)?;
        full_header(headers.get(at..at.checked_add(entsize)?)?, wide)
    };
    let sh = raw(index)?;
    let sym_size: u64 = if wide { 24 } else { 16 };
    if sh.sh_type != SHT_SYMTAB
        || sh.entsize != sym_size
        || sh.size % sym_size != 0
        || sh.link != elf.header().shstrndx
        || raw(sh.link)?.sh_type != elf::SHT_STRTAB
    {
        return None;
    }
    let start = usize::try_from(sh.offset).ok()?;
    let data = elf
        .data()
        .get(start..start.checked_add(usize::try_from(sh.size).ok()?)?)?;
    let count = u32::try_from(sh.size / sym_size).ok()?;
    Some(SymbolTable::from_checked(
        elf,
        index,
        data,
        count,
        *elf.shstrtab(),
    ))
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
#[inline(always)]
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
    let btf_maps = maps.get(parts.map_count as usize..).unwrap_or_default();
    parts.btf_maps_sorted = btf_maps.is_sorted_by(|a, b| a.offset < b.offset);
    // Strictly increasing offsets: the stride is at least 1 and `i * stride` stays below
    // 2^32 times the map count.
    if let (true, Some(first)) = (parts.btf_maps_sorted, btf_maps.first()) {
        let base = u64::from(first.offset);
        let stride = btf_maps
            .get(1)
            .map_or(1, |m| u64::from(m.offset).saturating_sub(base));
        let regular = (0u64..)
            .zip(btf_maps)
            .all(|(i, m)| u64::from(m.offset) == base + i * stride);
        if regular {
            parts.btf_map_base = base;
            parts.btf_map_stride = stride;
        }
    }
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
    programs: &mut VecView<Program<'a>>,
    maps: &mut VecView<MapDef<'a>>,
    patches: &mut VecView<Patch>,
    insns: &mut VecView<Insn>,
) -> Result<()> {
    if parts.btf_map_symbols > 0 || parts.data_lo < parts.data_hi || parts.externs > 0 {
        more_maps(parts, btf, maps)?;
    } else {
        // No BTF-defined, global data or `.kconfig` map: what `more_maps` finds of none.
        parts.first_data_map = maps.len() as u32;
        parts.btf_maps_sorted = true;
    }
    // Only the REL tables of executable sections are ours; the scan noted where they lie.
    if parts.rel_lo >= parts.rel_hi {
        // None: nothing to patch, no call to link.
        parts.patches_ready = true;
        parts.rels_sorted = true;
        return Ok(());
    }
    let mut table = patch::PatchTable {
        patches,
        ready: true,
        sorted: true,
        dup: false,
    };
    if parts.elf.header().class == Class::Elf64 {
        patch::collect::<true>(parts, programs, maps, &mut table)?;
    } else {
        patch::collect::<false>(parts, programs, maps, &mut table)?;
    }
    parts.patches_ready = table.ready && patch::contiguous(programs);
    parts.rels_sorted = table.sorted;
    // Call lists (and a decoded copy of the functions called) when some function
    // relocates against code, which is how programs reach their subprograms: otherwise
    // `relocate` notices a call inside a section as it copies, and links by scanning.
    let links = programs.iter().any(|p| p.reloc_count != p.map_reloc_count);
    if parts.patches_ready && parts.rels_sorted && links {
        parts.calls_ready = patch::scan_functions(programs, table.patches);
        if parts.calls_ready {
            patch::link_images(programs, table.patches, insns, !table.dup);
        }
    }
    Ok(())
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
#[inline(never)]
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
#[inline(always)]
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

/// What the pass over the section headers found besides programs and named sections.
struct Scan {
    /// The symbol table.
    symtab: Option<u32>,
    /// The REL tables of executable sections lie in `rel_lo..rel_hi`.
    rel_lo: u32,
    rel_hi: u32,
}

/// The section header fields the open pass uses, read natively from a header of `N` bytes
/// (64: `Elf64_Shdr`, 40: `Elf32_Shdr`).
#[derive(Clone, Copy)]
struct RawSection {
    name: u32,
    sh_type: u32,
    flags: u64,
    offset: u64,
    size: u64,
    info: u32,
}

impl RawSection {
    #[inline(always)]
    fn read<const N: usize>(b: &[u8; N]) -> Self {
        if N == 64 {
            RawSection {
                name: ne_u32(b, 0),
                sh_type: ne_u32(b, 4),
                flags: ne_u64(b, 8),
                offset: ne_u64(b, 24),
                size: ne_u64(b, 32),
                info: ne_u32(b, 44),
            }
        } else {
            RawSection {
                name: ne_u32(b, 0),
                sh_type: ne_u32(b, 4),
                flags: ne_u32(b, 8).into(),
                offset: ne_u32(b, 16).into(),
                size: ne_u32(b, 20).into(),
                info: ne_u32(b, 28),
            }
        }
    }

    #[inline(always)]
    fn is_exec(&self) -> bool {
        self.sh_type == SHT_PROGBITS && self.flags & SHF_EXECINSTR != 0
    }
}

/// The pass over the section headers: [`scan_sections`], which also checks each one as
/// [`Elf::parse`] does (extent inside the file, name inside the section name table)
/// without a branch; only when one fails, or the scan fails, does [`check_sections`] go
/// over them again to report the first bad one (a bad header is reported before anything
/// the scan finds, as when the checks came first).
#[inline(always)]
fn sections<'a, const N: usize>(
    parts: &mut Parts<'a>,
    execs: &mut VecView<ExecSection<'a>>,
    names: &mut Names<'a>,
) -> Result<Scan> {
    let elf = parts.elf;
    match scan_sections::<N>(parts, execs, names) {
        Ok((scan, false)) => Ok(scan),
        Ok((scan, true)) => check_sections::<N>(&elf).map(|()| scan),
        Err(e) => check_sections::<N>(&elf).and(Err(e)),
    }
}

/// A whole section header read natively from its bytes `h` (`wide`: `Elf64_Shdr`).
#[inline]
fn full_header(h: &[u8], wide: bool) -> Option<SectionHeader> {
    Some(if wide {
        let b = h.first_chunk::<64>()?;
        SectionHeader {
            name: ne_u32(b, 0),
            sh_type: ne_u32(b, 4),
            flags: ne_u64(b, 8),
            addr: ne_u64(b, 16),
            offset: ne_u64(b, 24),
            size: ne_u64(b, 32),
            link: ne_u32(b, 40),
            info: ne_u32(b, 44),
            addralign: ne_u64(b, 48),
            entsize: ne_u64(b, 56),
        }
    } else {
        let b = h.first_chunk::<40>()?;
        SectionHeader {
            name: ne_u32(b, 0),
            sh_type: ne_u32(b, 4),
            flags: ne_u32(b, 8).into(),
            addr: ne_u32(b, 12).into(),
            offset: ne_u32(b, 16).into(),
            size: ne_u32(b, 20).into(),
            link: ne_u32(b, 24),
            info: ne_u32(b, 28),
            addralign: ne_u32(b, 32).into(),
            entsize: ne_u32(b, 36).into(),
        }
    })
}

/// Checks every section header as [`Elf::parse`] does (extent inside the file, name
/// inside the section name table), and reports the first that fails.
#[cold]
#[inline(never)]
fn check_sections<const N: usize>(elf: &Elf<'_>) -> Result<()> {
    let file_len = elf.data().len() as u64;
    // `name >= max(len, 1)`: with no table, only name 0 is allowed.
    let name_limit = (elf.shstrtab().len() as u64).max(1);
    let table = elf.section_table().chunks_exact(N);
    // Without branches: whether any section is bad. Only then is the first one looked for.
    let mut bad = false;
    for raw in table.clone() {
        let Ok(raw) = <&[u8; N]>::try_from(raw) else {
            continue;
        };
        let sh = RawSection::read(raw);
        let has_data = (sh.sh_type != SHT_NOBITS) & (sh.sh_type != SHT_NULL);
        let (end, overflow) = sh.offset.overflowing_add(sh.size);
        bad |= (u64::from(sh.name) >= name_limit) | (has_data & (overflow | (end > file_len)));
    }
    if bad {
        for (index, raw) in (0u32..).zip(table) {
            let Ok(raw) = <&[u8; N]>::try_from(raw) else {
                continue;
            };
            let sh = RawSection::read(raw);
            elf.check_section(index, sh.sh_type, sh.name, sh.offset, sh.size)?;
        }
    }
    Ok(())
}

/// One pass over the section headers: checks each (without a branch, see [`sections`]),
/// notes the executable sections in `execs` (their names checked as probe specs),
/// `license`, `version`, `maps`, the symbol table and where the REL tables of code lie.
/// Out of line: inlined in [`fill`], its locals were kept in memory.
#[inline(never)]
fn scan_sections<'a, const N: usize>(
    parts: &mut Parts<'a>,
    execs: &mut VecView<ExecSection<'a>>,
    names: &mut Names<'a>,
) -> Result<(Scan, bool)> {
    let elf = parts.elf;
    let table = elf.section_table();
    let file_len = elf.data().len() as u64;
    let tab = names.tab.data();
    // `name >= max(len, 1)`: with no table, only name 0 is allowed.
    let name_limit = (tab.len() as u64).max(1);
    // Whether any header fails the checks, without a branch per header: the furthest end
    // of contents (saturated) is compared with the file's length at the end. A name index
    // is shifted so that it passes that same comparison exactly when it is below
    // `name_limit` (`name_limit <= file_len + 1`: the name table lies inside the file), so
    // one maximum covers both (one register fewer in the loop).
    let name_shift = (file_len + 1).saturating_sub(name_limit);
    let mut max_end = 0u64;
    // Plain locals, not a `Scan` updated in place: LLVM kept that in memory and copied it
    // around on every iteration.
    let mut symtab = u32::MAX;
    let (mut rel_lo, mut rel_hi) = (u32::MAX, 0);
    for (index, raw) in (0u32..).zip(table.chunks_exact(N)) {
        let Ok(raw) = <&[u8; N]>::try_from(raw) else {
            continue;
        };
        let sh = RawSection::read(raw);
        // SHT_NULL (0) and SHT_NOBITS (8) have no contents in the file.
        let end = if sh.sh_type & !SHT_NOBITS != 0 {
            sh.offset.saturating_add(sh.size)
        } else {
            0
        };
        max_end = max_end.max(end.max(u64::from(sh.name) + name_shift));
        match sh.sh_type {
            // A program section when its size is a non-zero multiple of 8 (an empty
            // `.text` costs no call); any other executable section is skipped.
            SHT_PROGBITS if sh.flags & SHF_EXECINSTR != 0 && sh.size != 0 && sh.size % 8 == 0 => {
                exec_section(parts, execs, names, index, RawSection::read(raw))?;
            }
            SHT_PROGBITS if sh.flags & SHF_EXECINSTR != 0 => {}
            SHT_PROGBITS => {
                // Most sections (`.debug_*`, `.BTF.ext`'s relocations, `.llvm_addrsig`)
                // are told apart on their first bytes, compared in place.
                // The first four bytes of every name `named_section` reads, found by a
                // perfect hash of the name's first four bytes (most names are none of them).
                let at = sh.name as usize;
                let interesting = tab
                    .get(at..at.wrapping_add(4))
                    .and_then(|w| w.first_chunk::<4>())
                    .is_some_and(|w| is_named_word(u32::from_ne_bytes(*w)));
                if interesting {
                    let t = tab.get(at..).unwrap_or_default();
                    named_section(parts, t, index, RawSection::read(raw))?;
                }
            }
            SHT_REL => {
                // Only tables of executable sections are ours (the second pass finds
                // whether the section holds a program).
                let ours = usize::try_from(sh.info)
                    .ok()
                    .and_then(|t| t.checked_mul(N))
                    .and_then(|off| table.get(off..))
                    .and_then(|t| t.first_chunk::<N>())
                    .is_some_and(|t| RawSection::read(t).is_exec());
                if ours {
                    rel_lo = rel_lo.min(index);
                    rel_hi = index + 1;
                }
            }
            SHT_SYMTAB => {
                if symtab != u32::MAX {
                    return Err(Error::BadSection {
                        section: elf.section_ref(index),
                        what: "more than one symbol table",
                    });
                }
                symtab = index;
            }
            SHT_NOBITS
                if tab
                    .get(sh.name as usize..)
                    .is_some_and(|t| t.starts_with(b".bss")) =>
            {
                parts.data_lo = parts.data_lo.min(index);
                parts.data_hi = index + 1;
            }
            _ => {}
        }
    }
    let scan = Scan {
        // Indices fit in u32 and `u32::MAX` sections cannot fit in the file's table.
        symtab: (symtab != u32::MAX).then_some(symtab),
        rel_lo,
        rel_hi,
    };
    Ok((scan, max_end > file_len))
}

/// The multiplier of the perfect hash of [`NAMED_WORDS`]: `(w * K) >> 29` puts each of the
/// seven words in a slot of its own, in either byte order.
const NAMED_HASH: u32 = 0x16a9;

/// The first four bytes of the names `named_section` reads (`license`, `version`, `maps`,
/// `.maps`, `.BTF`, `.rodata`, `.data`), each in its slot of the hash (0: empty slot).
const NAMED_WORDS: [u32; 8] = {
    let w = u32::from_ne_bytes;
    if cfg!(target_endian = "little") {
        [
            w(*b"vers"),
            w(*b".dat"),
            0,
            w(*b"lice"),
            w(*b".map"),
            w(*b".BTF"),
            w(*b"maps"),
            w(*b".rod"),
        ]
    } else {
        [
            w(*b".map"),
            w(*b".BTF"),
            w(*b".dat"),
            w(*b".rod"),
            w(*b"maps"),
            w(*b"lice"),
            0,
            w(*b"vers"),
        ]
    }
};

/// Whether `w`, a name's first four bytes (native order), begins a name `named_section`
/// reads: one multiplication, one load, one comparison.
#[inline(always)]
fn is_named_word(w: u32) -> bool {
    let slot = (w.wrapping_mul(NAMED_HASH) >> 29) as usize;
    // An empty slot (0) matches a name of four NULs, which `named_section` then ignores.
    NAMED_WORDS.get(slot).is_some_and(|&n| n == w)
}

/// The contents of section `sh` (empty when outside the file: the checks report it).
fn section_bytes<'a>(elf: &Elf<'a>, sh: &RawSection) -> &'a [u8] {
    let start = sh.offset as usize;
    elf.data()
        .get(start..start.saturating_add(sh.size as usize))
        .unwrap_or_default()
}

/// A program section (an executable section whose size is a non-zero multiple of 8): its
/// name checked as a probe spec.
#[inline(always)]
fn exec_section<'a>(
    parts: &mut Parts<'a>,
    execs: &mut VecView<ExecSection<'a>>,
    names: &mut Names<'a>,
    index: u32,
    sh: RawSection,
) -> Result<()> {
    let elf = &parts.elf;
    let at = || elf.section_ref(index);
    // The table as a whole was checked as UTF-8 once: no per-name check.
    let name = match names.get(sh.name) {
        Some(name) => name,
        None if names.tab.is_empty() => "",
        None => {
            return Err(Error::BadSection {
                section: at(),
                what: "program section name is not valid UTF-8",
            })
        }
    };
    if name != ".text" {
        crate::probe::validate(name).map_err(|error| Error::Probe {
            section: at(),
            error,
        })?;
    }
    let exec = ExecSection {
        index,
        name,
        code: section_bytes(elf, &sh),
        has_funcs: false,
    };
    let cap = execs.capacity();
    execs.push(exec).map_err(|_| capacity("programs", cap))
}

/// A data section whose name (`t`: the name table from it on) may be one the object
/// phase reads: `license`, `version`, `maps`, `.maps`, `.BTF`, `.BTF.ext`, `.rodata*`,
/// `.data*`. Inline in the section pass: most only note their index.
#[inline(always)]
fn named_section<'a>(parts: &mut Parts<'a>, t: &[u8], index: u32, sh: RawSection) -> Result<()> {
    match t.first() {
        Some(b'l') if t.starts_with(b"license\0") => license_section(parts, index, sh)?,
        Some(b'v') if t.starts_with(b"version\0") => version_section(parts, index, sh)?,
        Some(b'm') if t.starts_with(b"maps\0") => parts.maps_section = Some(index),
        Some(b'.') => match t.get(1).copied() {
            Some(b'm') if t.starts_with(b".maps\0") => {
                parts.btf_maps_section = Some(index);
            }
            Some(b'B') if t.starts_with(b".BTF\0") => parts.btf_section = Some(index),
            Some(b'B') if t.starts_with(b".BTF.ext\0") => {
                parts.btf_ext_section = Some(index);
            }
            Some(b'r') if t.starts_with(b".rodata") => {
                parts.data_lo = parts.data_lo.min(index);
                parts.data_hi = index + 1;
            }
            Some(b'd') if t.starts_with(b".data") => {
                parts.data_lo = parts.data_lo.min(index);
                parts.data_hi = index + 1;
            }
            _ => {}
        },
        _ => {}
    }
    Ok(())
}

/// The `license` section: a NUL-terminated UTF-8 string.
#[inline(never)]
fn license_section(parts: &mut Parts<'_>, index: u32, sh: RawSection) -> Result<()> {
    let elf = parts.elf;
    let at = || elf.section_ref(index);
    let data = section_bytes(&elf, &sh);
    // The commonest license told at once: the same string as the scan below reads.
    if data.starts_with(b"GPL\0") {
        parts.license = Some("GPL");
        return Ok(());
    }
    let len = data
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| Error::BadSection {
            section: at(),
            what: "license is not NUL-terminated",
        })?;
    let text = data.get(..len).and_then(|t| core::str::from_utf8(t).ok());
    parts.license = Some(text.ok_or_else(|| Error::BadSection {
        section: at(),
        what: "license is not valid UTF-8",
    })?);
    Ok(())
}

/// The `version` section: exactly 4 bytes.
#[inline(never)]
fn version_section(parts: &mut Parts<'_>, index: u32, sh: RawSection) -> Result<()> {
    let elf = parts.elf;
    let data: [u8; 4] = section_bytes(&elf, &sh)
        .try_into()
        .map_err(|_| Error::BadSection {
            section: elf.section_ref(index),
            what: "version must be exactly 4 bytes (a u32 LINUX_VERSION_CODE)",
        })?;
    parts.version = Some(u32::from_ne_bytes(data));
    Ok(())
}

fn push_program<'a>(
    programs: &mut VecView<Program<'a>>,
    little: bool,
    e: &ExecSection<'a>,
    name: Option<&'a str>,
    offset: u32,
    code: &'a [u8],
) -> Result<()> {
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
        rel_first: 0,
        rel_end: 0,
        maps_needed: 0,
        patch_first: 0,
        call_first: 0,
        call_len: 0,
        pseudo_call: false,
        cached: u32::MAX,
    };
    let cap = programs.capacity();
    programs
        .push(program)
        .map_err(|_| capacity("programs", cap))
}

/// Splits executable sections into programs at their function symbols and collects
/// map definitions, in one pass over the symbols (entries of `N` bytes: 24 for ELF64, 16
/// for ELF32) that also checks every symbol's name index.
fn collect_symbols<'a, const N: usize>(
    parts: &mut Parts<'a>,
    execs: &mut [ExecSection<'a>],
    programs: &mut VecView<Program<'a>>,
    maps: &mut VecView<MapDef<'a>>,
    section_names: &mut Names<'a>,
) -> Result<()> {
    let elf = parts.elf;
    let Some(symbols) = parts.symbols else {
        if let Some(index) = parts.maps_section {
            let size = elf.section(index).map_or(0, |sh| sh.size);
            if size > 0 {
                return Err(Error::BadSection {
                    section: elf.section_ref(index),
                    what: "maps section without a symbol table to name the maps",
                });
            }
        }
        return Ok(());
    };
    let little = elf.header().is_little_endian();
    let strtab = *symbols.strtab();
    let name_limit = (strtab.len() as u64).max(1);
    // Usually one table holds section and symbol names: then one cache serves both.
    let mut own_names;
    let names = if core::ptr::eq(strtab.data(), section_names.tab.data()) {
        section_names
    } else {
        own_names = Names::new(strtab);
        &mut own_names
    };
    let maps_section = parts.maps_section.and_then(|s| u16::try_from(s).ok());
    let btf_maps_section = parts.btf_maps_section.and_then(|s| u16::try_from(s).ok());
    let mut btf_maps = 0u32;
    let mut externs = 0u32;
    let map_cap = maps.capacity();
    let mut last_exec = 0usize;
    for (i, e) in (0u32..).zip(symbols.data().chunks_exact(N)) {
        let Ok(e) = <&[u8; N]>::try_from(e) else {
            continue;
        };
        let wide = N == 24;
        let name_index = ne_u32(e, 0);
        if u64::from(name_index) >= name_limit && name_index != 0 {
            return Err(Error::BadSymbol {
                index: i,
                what: "name index outside the string table",
            });
        }
        // Most symbols (section symbols, labels, debug info) are skipped on two fields.
        let (info, shndx) = if wide {
            (e.get(4).copied().unwrap_or(0), ne_u16(e, 6))
        } else {
            (e.get(12).copied().unwrap_or(0), ne_u16(e, 14))
        };
        let kind = info & 0xf;
        if kind == STT_SECTION {
            continue;
        }
        if shndx == 0 {
            // An undefined global: an `extern` (Kconfig variable, ksym, kfunc).
            externs += u32::from(name_index != 0 && info >> 4 != elf::STB_LOCAL);
            continue;
        }
        let is_btf_map = Some(shndx) == btf_maps_section;
        let is_map = Some(shndx) == maps_section || is_btf_map;
        if !is_map && kind != elf::STT_FUNC {
            continue;
        }
        let (value, size) = if wide {
            (ne_u64(e, 8), ne_u64(e, 16))
        } else {
            (ne_u32(e, 4).into(), ne_u32(e, 8).into())
        };
        if is_map {
            let name = names.get(name_index).ok_or(Error::BadSymbol {
                index: i,
                what: "map name is not valid UTF-8",
            })?;
            if name.is_empty() {
                continue;
            }
            let offset = u32::try_from(value).map_err(|_| Error::BadSymbol {
                index: i,
                what: "map symbol offset too large",
            })?;
            // Fields are read once every symbol is known and the layout can be computed.
            let mut m = MapDef::placeholder(name, offset);
            if is_btf_map {
                m.kind = MapKind::Btf;
                btf_maps += 1;
            }
            maps.push(m).map_err(|_| capacity("maps", map_cap))?;
        } else {
            // Function symbols usually come in section order: the section of the last one,
            // or the next, before a binary search.
            let shndx = u32::from(shndx);
            let x = match execs.get(last_exec..) {
                Some([e, ..]) if e.index == shndx => last_exec,
                Some([_, e, ..]) if e.index == shndx => last_exec + 1,
                _ => match execs.binary_search_by_key(&shndx, |e| e.index) {
                    Ok(x) => x,
                    Err(_) => continue,
                },
            };
            last_exec = x;
            let Some(e) = execs.get_mut(x) else { continue };
            let bad = |what| Error::BadSymbol { index: i, what };
            let name = names
                .get(name_index)
                .ok_or_else(|| bad("function name is not valid UTF-8"))?;
            // In u64, so that every target reports the same error for the same symbol (a
            // 32-bit `usize` would refuse a large offset before the checks below).
            let end = value
                .checked_add(size)
                .ok_or_else(|| bad("function size too large"))?;
            if value % 8 != 0 || size % 8 != 0 {
                return Err(bad("function is not aligned to whole instructions"));
            }
            let past_end = || bad("function extends past the end of its section");
            let start = usize::try_from(value).map_err(|_| past_end())?;
            let end = usize::try_from(end).map_err(|_| past_end())?;
            let code = e.code.get(start..end).ok_or_else(past_end)?;
            if code.is_empty() {
                continue;
            }
            e.has_funcs = true;
            let e = *e;
            push_program(programs, little, &e, Some(name), start as u32, code)?;
        }
    }
    if btf_maps > 0 && maps.len() as u32 != btf_maps {
        // Legacy maps first (by offset, as read_map_defs wants them), then the BTF ones.
        maps.sort_unstable_by_key(|m| (m.kind != MapKind::Legacy, m.offset));
    }
    let legacy = maps.len() - btf_maps as usize;
    if let Some(section) = parts.maps_section {
        if let Some(legacy) = maps.get_mut(..legacy) {
            read_map_defs(parts, legacy, section)?;
        }
    }
    parts.map_count = legacy as u32;
    parts.btf_map_symbols = btf_maps;
    parts.externs = externs;
    Ok(())
}

fn read_map_defs(parts: &mut Parts<'_>, maps: &mut [MapDef<'_>], section: u32) -> Result<()> {
    let elf = parts.elf;
    if maps.is_empty() {
        return Ok(());
    }
    let at = elf.section_ref(section);
    let sh = elf.section(section).unwrap_or_default();
    let data = elf.section_data(&sh);
    if !maps.is_sorted_by_key(|m| m.offset) {
        maps.sort_unstable_by_key(|m| m.offset);
    }
    let count = maps.len() as u64;
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
    let endian = elf.endian();
    for (i, m) in maps.iter_mut().enumerate() {
        if u64::from(m.offset) != i as u64 * def_size {
            return Err(Error::BadSection {
                section: at,
                what: "map symbols do not point at consecutive definitions",
            });
        }
        *m = MapDef::read(m.name, data, m.offset, layout, endian, at)?;
    }
    parts.map_def_size = def_size as u32;
    Ok(())
}

/// Entry `i` of a REL table read natively: `(r_offset, symbol index)`. Positions are
/// computed checked: `i` may come from the input and overflow a 32-bit `usize`.
#[inline(always)]
fn raw_rel<const WIDE: bool>(rels: &[u8], i: u32) -> Option<(u64, u32)> {
    if WIDE {
        let e = rels
            .get((i as usize).checked_mul(16)?..)?
            .first_chunk::<16>()?;
        Some((ne_u64(e, 0), (ne_u64(e, 8) >> 32) as u32))
    } else {
        let e = rels
            .get((i as usize).checked_mul(8)?..)?
            .first_chunk::<8>()?;
        Some((ne_u32(e, 0).into(), ne_u32(e, 4) >> 8))
    }
}

/// Symbol `i` read natively: `(st_shndx, st_value)`.
#[inline(always)]
fn raw_sym<const WIDE: bool>(syms: &[u8], i: u32) -> Option<(u16, u64)> {
    if WIDE {
        let e = syms
            .get((i as usize).checked_mul(24)?..)?
            .first_chunk::<24>()?;
        Some((ne_u16(e, 6), ne_u64(e, 8)))
    } else {
        let e = syms
            .get((i as usize).checked_mul(16)?..)?
            .first_chunk::<16>()?;
        Some((ne_u16(e, 14), ne_u32(e, 4).into()))
    }
}

/// What a relocation against a symbol of a section loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MapTarget {
    /// Not a map (code, extern, another section).
    None,
    /// A map's fd (`BPF_PSEUDO_MAP_FD`): legacy or BTF-defined map.
    Map(u32),
    /// An address inside a global data map's value (`BPF_PSEUDO_MAP_VALUE`).
    Value(u32),
    /// A map section, but no map there.
    Bad(&'static str),
}

impl<'a> Parts<'a> {
    /// What a relocation against a symbol of section `shndx` whose value is `value` loads.
    #[inline(always)]
    pub(crate) fn map_target(&self, maps: &[MapDef<'_>], shndx: u32, value: u64) -> MapTarget {
        if shndx == 0 {
            return MapTarget::None;
        }
        if Some(shndx) == self.maps_section {
            return match self.map_index_at(value) {
                Some(m) => MapTarget::Map(m),
                None => MapTarget::Bad("map index out of range"),
            };
        }
        if Some(shndx) == self.btf_maps_section {
            let (lo, hi) = (self.map_count as usize, self.first_data_map as usize);
            if let Some(i) = value
                .wrapping_sub(self.btf_map_base)
                .checked_div(self.btf_map_stride)
            {
                let d = value.wrapping_sub(self.btf_map_base);
                return if value >= self.btf_map_base
                    && d % self.btf_map_stride == 0
                    && i < (hi - lo) as u64
                {
                    MapTarget::Map(lo as u32 + i as u32)
                } else {
                    MapTarget::Bad("no BTF-defined map at this offset of .maps")
                };
            }
            let btf_maps = maps.get(lo..hi);
            let found = if self.btf_maps_sorted {
                btf_maps.and_then(|m| m.binary_search_by(|m| u64::from(m.offset).cmp(&value)).ok())
            } else {
                btf_maps.and_then(|m| m.iter().position(|m| u64::from(m.offset) == value))
            };
            return match found {
                Some(i) => MapTarget::Map((lo + i) as u32),
                None => MapTarget::Bad("no BTF-defined map at this offset of .maps"),
            };
        }
        if shndx >= self.data_lo && shndx < self.data_hi {
            let lo = self.first_data_map as usize;
            let found = maps.get(lo..).and_then(|m| {
                m.iter()
                    .position(|m| m.section == shndx && m.kind.is_internal())
            });
            if let Some(i) = found {
                return MapTarget::Value((lo + i) as u32);
            }
        }
        MapTarget::None
    }

    /// The index of the map whose definition starts at `offset` of the `maps` section.
    #[inline]
    fn map_index_at(&self, offset: u64) -> Option<u32> {
        let size = u64::from(self.map_def_size);
        if size == 0 || offset % size != 0 {
            return None;
        }
        let idx = offset / size;
        (idx < u64::from(self.map_count)).then_some(idx as u32)
    }

    /// The REL table of a program, validated at open.
    #[inline]
    fn rel_table_of(&self, rel_section: u32) -> RelTable<'a> {
        RelTable::validated(&self.elf, rel_section)
    }
}

/// Names read from a string table as `&str`. On the first, the whole table is checked as
/// UTF-8 once and names are cut out of it unchecked (a string of a valid table is valid:
/// it ends before a NUL, an ASCII byte); checking a short name on its own costs about half
/// as much as checking a whole table of an object, so even two names favour the table.
/// A table that is not UTF-8 as a whole goes on name by name.
struct Names<'a> {
    tab: StrTab<'a>,
    text: Option<&'a str>,
    /// Names still to check one by one before checking the whole table.
    alone: u32,
}

impl<'a> Names<'a> {
    fn new(tab: StrTab<'a>) -> Self {
        Names {
            tab,
            text: None,
            alone: 0,
        }
    }

    /// The name at `index`, or `None` when out of range or not UTF-8.
    #[inline]
    fn get(&mut self, index: u32) -> Option<&'a str> {
        if let Some(text) = self.text {
            return self.tab.get_in(text, index);
        }
        if self.alone == 0 {
            // Once: a table that is not UTF-8 as a whole goes on name by name.
            self.alone = u32::MAX;
            self.text = core::str::from_utf8(self.tab.data()).ok();
            if let Some(text) = self.text {
                return self.tab.get_in(text, index);
            }
        }
        self.alone -= 1;
        self.tab.get(index)
    }
}

/// An executable section seen during the section pass.
#[derive(Clone, Copy, Debug)]
struct ExecSection<'a> {
    index: u32,
    name: &'a str,
    code: &'a [u8],
    has_funcs: bool,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::{is_named_word, push_program, sort_nearly_sorted, ExecSection, Program};
    use heapless::Vec;

    #[test]
    fn nearly_sorted_programs_sort_as_a_full_sort_does() {
        // Keys from a small generator: sorted runs with a few out of place, and shuffles.
        let mut seed = 7u64;
        for round in 0..200 {
            let mut programs: Vec<Program<'_>, 64> = Vec::new();
            let n = round % 40;
            for i in 0..n {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                let r = (seed >> 33) as u32;
                let (section, offset) = if round % 2 == 0 && r % 5 != 0 {
                    (2 + i as u32 / 4, (i as u32 % 4) * 8)
                } else {
                    (r % 6, (r >> 8) % 5 * 8)
                };
                let e = ExecSection {
                    index: section,
                    name: "s",
                    code: &[],
                    has_funcs: true,
                };
                push_program(programs.as_mut_view(), true, &e, None, offset, &[]).unwrap();
            }
            let key = |p: &Program<'_>| (p.section_index, p.offset);
            let mut expected: std::vec::Vec<_> = programs.iter().map(key).collect();
            expected.sort_unstable();
            sort_nearly_sorted(&mut programs);
            let got: std::vec::Vec<_> = programs.iter().map(key).collect();
            assert_eq!(got, expected, "round {round}");
        }
    }

    #[test]
    fn named_words_are_told_from_other_names() {
        for name in [
            "license",
            "version",
            "maps",
            ".maps",
            ".BTF",
            ".BTF.ext",
            ".rodata",
            ".rodata.str1.1",
            ".data",
            ".data.counts",
        ] {
            let w = name
                .as_bytes()
                .first_chunk::<4>()
                .copied()
                .unwrap_or_default();
            assert!(is_named_word(u32::from_ne_bytes(w)), "{name}");
        }
        for name in [
            ".debug_info",
            ".rel.text",
            ".text",
            ".llvm_addrsig",
            ".bss",
            "kprobe/f",
            "lic.",
            "map.",
            ".BT.",
            "xdp",
            ".eh_frame",
            "\0\0\0\x01",
        ] {
            let w = name
                .as_bytes()
                .first_chunk::<4>()
                .copied()
                .unwrap_or_default();
            assert!(!is_named_word(u32::from_ne_bytes(w)), "{name}");
        }
    }
}
