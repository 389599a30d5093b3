//! Probe points and variables: [`Resolver`].

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use gimli::constants as dw;
use gimli::{
    AttributeValue, EndianSlice, Operation, RunTimeEndian, Section as _, UnitOffset, UnwindSection,
};

use core::cell::{OnceCell, RefCell};

use super::index;
use super::location::{ArgLocation, LocBase, ResolvedArg};
use super::sections::{DebugSections, NAMES};
use super::types::Kind;
use super::{gimli_err, Available, Error, MAX_AVAILABLE};
use crate::arch::Arch;
use crate::elf::{Elf, SHF_ALLOC, SHT_NOBITS};
use crate::probe::{Arg, ArgBase, FetchType, Place, ProbeSpec, Step};

pub(super) type R<'s> = EndianSlice<'s, RunTimeEndian>;

/// Deepest nesting of lexical blocks walked, and longest chain of references followed.
pub const MAX_DEPTH: u32 = 64;
/// Most operations read from one location expression.
const MAX_OPS: usize = 16;

/// A DIE: its unit (index into the resolver's units) and offset in that unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct DieRef {
    pub(super) unit: usize,
    pub(super) offset: UnitOffset<usize>,
}

/// When `FUNC` alone skips the function's prologue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PrologueSkip {
    /// As `perf probe -x` does: skip it unless the unit was compiled with optimization
    /// (`DW_AT_producer` has `-O` not followed by `0`); optimized code keeps parameters in
    /// their entry registers, which the skipped prologue may already have moved.
    #[default]
    Auto,
    /// Always skip it (the design's `FUNC` rule).
    Always,
    /// Never: `FUNC` is the entry, as for kprobes.
    Never,
}

/// One place to attach a probe, and the arguments resolved there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeSite {
    /// The function probed.
    pub function: String,
    /// The link-time address.
    pub address: u64,
    /// The file offset (what a uprobe takes), when the address lies in a section with file
    /// contents.
    pub file_offset: Option<u64>,
    /// Whether this is an inlined instance (`DW_TAG_inlined_subroutine`).
    pub inlined: bool,
    /// The arguments, in order (`$err` excluded).
    pub args: Vec<ResolvedArg>,
}

/// A function found in the debug info: its DIE, and the concrete subprogram around it (the
/// same DIE for an out-of-line function) whose frame base its variables use.
#[derive(Clone, Copy, Debug)]
struct Site {
    die: DieRef,
    outer: Option<DieRef>,
    inlined: bool,
}

#[derive(Clone, Copy, Debug)]
struct LineRow {
    address: u64,
    line: u64,
    file: u64,
    is_stmt: bool,
    prologue_end: bool,
    end_sequence: bool,
}

/// Where a value starts, before reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    /// A register plus an offset.
    Reg(u16, i64),
    /// The CFA: a register plus an offset, from the CFI.
    Cfa(u16, i64),
    /// A constant.
    Const(i64),
    /// The address of a global (a constant, remembered to name the global).
    Addr(u64),
}

/// A value, or an object in memory, as the chain walk sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Val {
    /// The value is `start` read through `derefs`.
    Value(Start, Vec<i64>),
    /// The object is in memory at (`start` read through `derefs`) + the offset.
    Memory(Start, Vec<i64>, i64),
}

/// How the resolver finds the units that may hold a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Lookup {
    /// Grep `.debug_info` for references to the name's string and parse only the units
    /// that hold one (see the module `index`); every unit when the file's forms do not
    /// allow it.
    #[default]
    Indexed,
    /// Parse every unit, as `perf probe` does: the reference the indexed path is tested
    /// against.
    Exhaustive,
}

/// A hook the resolver calls with each window of `.debug_info` it has grepped and will not
/// read again in that pass: a caller that mapped the file can drop those pages.
pub type Release<'s> = &'s dyn Fn(&[u8]);

/// The units of `.debug_info`: their headers, found in one walk, and each unit parsed the
/// first time a DIE of it is read.
struct Units<'s> {
    headers: Vec<gimli::UnitHeader<R<'s>>>,
    /// Start of each unit in `.debug_info`, for `DW_FORM_ref_addr` and the grep's hits.
    starts: Vec<usize>,
    parsed: Vec<OnceCell<gimli::Unit<R<'s>>>>,
}

/// Resolves probe points and variable locations in one ELF file's DWARF.
///
/// Nothing is parsed up front: the unit headers are walked by the first lookup (in the same
/// pass as its grep), a unit is parsed when a DIE of it is first read, and compressed
/// sections other than those every lookup reads (`.debug_info`, `.debug_abbrev`, the
/// strings, `.debug_line`, `.debug_addr`) are inflated when first needed.
pub struct Resolver<'s> {
    arch: Arch,
    code: Elf<'s>,
    debug: &'s DebugSections<'s>,
    /// Every section but the location and range lists.
    dwarf: gimli::Dwarf<R<'s>>,
    /// The same with the location and range lists, made when first needed.
    lists: OnceCell<gimli::Dwarf<R<'s>>>,
    units: OnceCell<Units<'s>>,
    /// Candidate units per name already looked up.
    candidates: RefCell<Vec<(Vec<u8>, Vec<usize>)>>,
    /// Globals already looked up, per unit and name.
    globals: RefCell<BTreeMap<(usize, String), Option<DieRef>>>,
    lookup: Lookup,
    /// Whether the abbreviations allow the grep (see `index::indexable`).
    indexable: OnceCell<bool>,
    release: Option<Release<'s>>,
    skip: PrologueSkip,
    endian: RunTimeEndian,
}

/// The sections the base [`gimli::Dwarf`] reads; the lists come later.
const LIST_SECTIONS: [&str; 4] = [
    ".debug_loc",
    ".debug_loclists",
    ".debug_ranges",
    ".debug_rnglists",
];

impl<'s> Resolver<'s> {
    /// A resolver for the code in `code` described by `debug` (the same file's sections, or
    /// a separate debug file's). Cheap: it parses no unit.
    ///
    /// # Errors
    /// [`Error::UnknownMachine`] for an architecture without register tables;
    /// [`Error::Decompress`] when a compressed section every lookup reads does not inflate.
    pub fn new(code: &Elf<'s>, debug: &'s DebugSections<'_>) -> Result<Self, Error> {
        let machine = code.header().machine;
        let arch = Arch::from_machine(machine).ok_or(Error::UnknownMachine(machine))?;
        let endian = if debug.little {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let dwarf = load_dwarf(debug, endian, false)?;
        Ok(Resolver {
            arch,
            code: *code,
            debug,
            dwarf,
            lists: OnceCell::new(),
            units: OnceCell::new(),
            candidates: RefCell::new(Vec::new()),
            globals: RefCell::new(BTreeMap::new()),
            lookup: Lookup::Indexed,
            indexable: OnceCell::new(),
            release: None,
            skip: PrologueSkip::Auto,
            endian,
        })
    }

    /// The same resolver with another way of finding units (see [`Lookup`]).
    #[must_use]
    pub fn with_lookup(mut self, lookup: Lookup) -> Self {
        self.lookup = lookup;
        self
    }

    /// The same resolver calling `release` with each window of `.debug_info` its grep is
    /// done with (see [`Release`]).
    #[must_use]
    pub fn with_release(mut self, release: Release<'s>) -> Self {
        self.release = Some(release);
        self
    }

    /// The same resolver with another prologue-skipping rule for `FUNC` alone.
    #[must_use]
    pub fn with_prologue_skip(mut self, skip: PrologueSkip) -> Self {
        self.skip = skip;
        self
    }

    /// The architecture of the code.
    #[must_use]
    pub fn arch(&self) -> Arch {
        self.arch
    }

    /// Number of units in `.debug_info` (walks their headers the first time).
    ///
    /// # Errors
    /// [`Error::Dwarf`] when a unit header does not parse.
    pub fn unit_count(&self) -> Result<usize, Error> {
        Ok(self.units()?.headers.len())
    }

    /// Number of units parsed so far: what the index saves is the difference to
    /// [`Resolver::unit_count`].
    #[must_use]
    pub fn parsed_unit_count(&self) -> usize {
        self.units
            .get()
            .map_or(0, |u| u.parsed.iter().filter(|c| c.get().is_some()).count())
    }

    /// The file offset of a link-time address: in the allocated section that holds it.
    #[must_use]
    pub fn file_offset(&self, address: u64) -> Option<u64> {
        self.code
            .sections()
            .map(|(_, sh)| sh)
            .find(|sh| {
                sh.flags & SHF_ALLOC != 0
                    && sh.sh_type != SHT_NOBITS
                    && address >= sh.addr
                    && address - sh.addr < sh.size
            })
            .map(|sh| address - sh.addr + sh.offset)
    }

    /// Whether the code is position-independent (`ET_DYN`: a PIE or a shared library), so
    /// that its link-time addresses are not where it runs: globals are then read relative to
    /// the probed address ([`super::ArgLocation::to_arg_loc_at`]).
    #[must_use]
    pub fn position_independent(&self) -> bool {
        self.code.header().e_type == crate::elf::ET_DYN
    }

    /// `sh_addr - sh_offset` of the section holding `address`: what
    /// [`super::FetchSyntax::Uprobe`] needs.
    #[must_use]
    pub fn load_bias(&self, address: u64) -> Option<u64> {
        self.file_offset(address)
            .map(|off| address.wrapping_sub(off))
    }

    /// The unit headers, walked once; when `grep` is given, the same pass over
    /// `.debug_info` greps for its needles and returns the hit offsets.
    fn walk(&self, grep: Option<&index::Needles>) -> Result<(&Units<'s>, Vec<usize>), Error> {
        let info = self.dwarf.debug_info.reader().slice();
        let mut hits = Vec::new();
        let have = self.units.get();
        if have.is_some() && grep.is_none() {
            return Ok((self.units()?, hits));
        }
        let mut headers = Vec::new();
        let mut starts = Vec::new();
        let mut iter = self.dwarf.units();
        let mut next_header = if have.is_some() { usize::MAX } else { 0 };
        let overlap = grep.map_or(0, index::Needles::overlap);
        let mut start = 0usize;
        // Bounded: each window advances by WINDOW bytes, each header by its length.
        loop {
            let end = start.saturating_add(index::WINDOW).min(info.len());
            while next_header < end {
                match iter.next().map_err(gimli_err("unit header"))? {
                    Some(h) => {
                        let at = h
                            .offset()
                            .as_debug_info_offset()
                            .map_or(usize::MAX, |o| o.0);
                        next_header = at.saturating_add(h.length_including_self());
                        starts.push(at);
                        headers.push(h);
                    }
                    None => next_header = usize::MAX,
                }
            }
            if let Some(n) = grep {
                let hay = info
                    .get(start..end.saturating_add(overlap).min(info.len()))
                    .unwrap_or_default();
                let before = hits.len();
                n.grep(hay, end - start, &mut hits);
                for h in hits.get_mut(before..).into_iter().flatten() {
                    *h = h.saturating_add(start);
                }
            }
            if let (Some(release), Some(done)) = (self.release, info.get(start..end)) {
                release(done);
            }
            if end >= info.len() || (grep.is_none() && next_header == usize::MAX) {
                break;
            }
            start = end;
        }
        if have.is_none() {
            let parsed = headers.iter().map(|_| OnceCell::new()).collect();
            let _ = self.units.set(Units {
                headers,
                starts,
                parsed,
            });
        }
        Ok((self.units()?, hits))
    }

    fn units(&self) -> Result<&Units<'s>, Error> {
        if let Some(u) = self.units.get() {
            return Ok(u);
        }
        self.walk(None).map(|(u, _)| u)
    }

    pub(super) fn unit(&self, index: usize) -> Result<&gimli::Unit<R<'s>>, Error> {
        let units = self.units()?;
        let (Some(cell), Some(header)) = (units.parsed.get(index), units.headers.get(index)) else {
            return Err(Error::Limit {
                what: "unit index",
                limit: units.headers.len() as u32,
            });
        };
        if let Some(u) = cell.get() {
            return Ok(u);
        }
        let unit = self.dwarf.unit(*header).map_err(gimli_err("unit"))?;
        Ok(cell.get_or_init(|| unit))
    }

    /// The DWARF with the location and range lists (inflated on first use).
    fn lists(&self) -> Result<&gimli::Dwarf<R<'s>>, Error> {
        if let Some(d) = self.lists.get() {
            return Ok(d);
        }
        let d = load_dwarf(self.debug, self.endian, true)?;
        Ok(self.lists.get_or_init(|| d))
    }

    /// The units that may hold a DIE named `name`, in `.debug_info` order: those the grep
    /// hits (see the module `index`), or every unit.
    fn candidate_units(&self, name: &[u8]) -> Result<Vec<usize>, Error> {
        if let Some((_, c)) = self.candidates.borrow().iter().find(|(n, _)| n == name) {
            return Ok(c.clone());
        }
        let indexable = self.lookup == Lookup::Indexed
            && *self
                .indexable
                .get_or_init(|| index::indexable(self.dwarf.debug_abbrev.reader().slice()));
        let needles = if indexable {
            index::Needles::new(
                name,
                [
                    self.dwarf.debug_str.reader().slice(),
                    self.dwarf.debug_line_str.reader().slice(),
                ],
                self.endian == RunTimeEndian::Little,
            )
        } else {
            None
        };
        let found = match &needles {
            Some(n) => {
                let (units, mut hits) = self.walk(Some(n))?;
                hits.sort_unstable();
                let mut c: Vec<usize> = hits
                    .iter()
                    .filter_map(|&h| index::unit_at(&units.starts, h))
                    .collect();
                c.dedup();
                c
            }
            None => (0..self.units()?.headers.len()).collect(),
        };
        self.candidates
            .borrow_mut()
            .push((Vec::from(name), found.clone()));
        Ok(found)
    }

    pub(super) fn entry(
        &self,
        die: DieRef,
    ) -> Result<
        (
            &gimli::Unit<R<'s>>,
            gimli::DebuggingInformationEntry<'_, '_, R<'s>>,
        ),
        Error,
    > {
        let unit = self.unit(die.unit)?;
        let entry = unit.entry(die.offset).map_err(gimli_err("DIE"))?;
        Ok((unit, entry))
    }

    /// Where a reference attribute of a DIE in unit `from` points.
    pub(super) fn reference(
        &self,
        from: usize,
        unit: &gimli::Unit<R<'s>>,
        value: AttributeValue<R<'s>>,
    ) -> Option<DieRef> {
        match value {
            AttributeValue::UnitRef(offset) => {
                // Stay inside the unit: an offset past it is a broken reference.
                let len = unit.header.length_including_self();
                (offset.0 < len).then_some(DieRef { unit: from, offset })
            }
            AttributeValue::DebugInfoRef(target) => {
                let units = self.units().ok()?;
                let index = index::unit_at(&units.starts, target.0)?;
                let header = units.headers.get(index)?;
                let offset = target.to_unit_offset(header)?;
                Some(DieRef {
                    unit: index,
                    offset,
                })
            }
            _ => None,
        }
    }

    pub(super) fn string(
        &self,
        unit: &gimli::Unit<R<'s>>,
        value: AttributeValue<R<'s>>,
    ) -> Result<&'s [u8], Error> {
        Ok(self
            .dwarf
            .attr_string(unit, value)
            .map_err(gimli_err("string"))?
            .slice())
    }

    /// A DIE's name, following `DW_AT_abstract_origin`/`DW_AT_specification` (bounded).
    fn name_of(&self, die: DieRef) -> Result<Option<&'s [u8]>, Error> {
        let mut at = die;
        for _ in 0..MAX_DEPTH {
            let (unit, entry) = self.entry(at)?;
            if let Some(v) = entry
                .attr_value(dw::DW_AT_name)
                .map_err(gimli_err("DW_AT_name"))?
            {
                return Ok(Some(self.string(unit, v)?));
            }
            match origin_of(&entry)?.and_then(|v| self.reference(at.unit, unit, v)) {
                Some(next) => at = next,
                None => return Ok(None),
            }
        }
        Err(Error::Limit {
            what: "abstract origins in a row",
            limit: MAX_DEPTH,
        })
    }

    /// The integer attribute `attr` of a DIE or of its origin.
    fn udata_of(&self, die: DieRef, attr: gimli::DwAt) -> Result<Option<u64>, Error> {
        let mut at = die;
        for _ in 0..MAX_DEPTH {
            let (unit, entry) = self.entry(at)?;
            if let Some(v) = entry.attr_value(attr).map_err(gimli_err("attribute"))? {
                return Ok(match v {
                    AttributeValue::FileIndex(i) => Some(i),
                    v => v.udata_value(),
                });
            }
            match origin_of(&entry)?.and_then(|v| self.reference(at.unit, unit, v)) {
                Some(next) => at = next,
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// The address ranges of a DIE.
    fn ranges(&self, die: DieRef) -> Result<Vec<(u64, u64)>, Error> {
        let (unit, entry) = self.entry(die)?;
        let mut out = Vec::new();
        let attr = |name, what| entry.attr_value(name).map_err(gimli_err(what));
        if attr(dw::DW_AT_ranges, "DW_AT_ranges")?.is_none() {
            // gimli's `die_ranges` adds a `DW_AT_high_pc` length to `DW_AT_low_pc` unchecked
            // (a panic where overflow is checked; found by the `dwarf` fuzz target): the pair
            // is read here and an overflowing end is no range.
            let address = |v| {
                self.dwarf
                    .attr_address(unit, v)
                    .map_err(gimli_err("DIE ranges"))?
                    .ok_or(Error::Dwarf {
                        what: "DIE ranges",
                        source: gimli::Error::UnsupportedAttributeForm,
                    })
            };
            let low = attr(dw::DW_AT_low_pc, "DW_AT_low_pc")?
                .map(address)
                .transpose()?;
            let high = match attr(dw::DW_AT_high_pc, "DW_AT_high_pc")? {
                Some(AttributeValue::Udata(len)) => low.and_then(|l| l.checked_add(len)),
                Some(v) => Some(address(v)?),
                None => None,
            };
            if let (Some(begin), Some(end)) = (low, high) {
                if begin < end {
                    out.push((begin, end));
                }
            }
            return Ok(out);
        }
        let mut iter = self
            .lists()?
            .die_ranges(unit, &entry)
            .map_err(gimli_err("DIE ranges"))?;
        while let Some(r) = iter.next().map_err(gimli_err("DIE ranges"))? {
            if r.begin < r.end {
                out.push((r.begin, r.end));
            }
        }
        Ok(out)
    }

    /// Where a function instance starts: `DW_AT_entry_pc`, else `DW_AT_low_pc`, else its
    /// first range.
    fn entry_pc(&self, die: DieRef) -> Result<Option<u64>, Error> {
        let (unit, entry) = self.entry(die)?;
        for attr in [dw::DW_AT_entry_pc, dw::DW_AT_low_pc] {
            if let Some(v) = entry
                .attr_value(attr)
                .map_err(gimli_err("DW_AT_entry_pc"))?
            {
                if let Some(a) = self
                    .dwarf
                    .attr_address(unit, v)
                    .map_err(gimli_err("DW_AT_entry_pc"))?
                {
                    return Ok(Some(a));
                }
            }
        }
        Ok(self.ranges(die)?.first().map(|r| r.0))
    }

    /// Every function instance named `func`: out-of-line subprograms with code, and inlined
    /// instances, in `.debug_info` order.
    fn find_sites(&self, func: &str) -> Result<Vec<Site>, Error> {
        let mut sites = Vec::new();
        for index in self.candidate_units(func.as_bytes())? {
            self.unit_sites(index, func.as_bytes(), &mut sites)?;
        }
        Ok(sites)
    }

    /// The sites of `func` in one unit. A raw walk: only subprograms and inlined
    /// subroutines have their attributes read, every other DIE's are skipped by their
    /// forms' sizes, and a name reached through an origin is looked up once per origin.
    fn unit_sites(&self, index: usize, func: &[u8], sites: &mut Vec<Site>) -> Result<(), Error> {
        let unit = self.unit(index)?;
        let mut raw = unit.entries_raw(None).map_err(gimli_err("DIE tree"))?;
        // Concrete subprograms enclosing the current DIE: (depth, DIE).
        let mut outer: Vec<(isize, DieRef)> = Vec::new();
        // Depths of the sites found that enclose the current DIE.
        let mut inside: Vec<isize> = Vec::new();
        // Origins already looked up: whether their name is `func`.
        let mut origins: BTreeMap<usize, bool> = BTreeMap::new();
        // Bounded: every entry read consumes at least its abbreviation code.
        while !raw.is_empty() {
            let depth = raw.next_depth();
            let offset = raw.next_offset();
            let Some(abbrev) = raw.read_abbreviation().map_err(gimli_err("DIE tree"))? else {
                continue;
            };
            while outer.last().is_some_and(|(d, _)| *d >= depth) {
                outer.pop();
            }
            while inside.last().is_some_and(|d| *d >= depth) {
                inside.pop();
            }
            let tag = abbrev.tag();
            if tag != dw::DW_TAG_subprogram && tag != dw::DW_TAG_inlined_subroutine {
                raw.skip_attributes(abbrev.attributes())
                    .map_err(gimli_err("DIE attributes"))?;
                continue;
            }
            let die = DieRef {
                unit: index,
                offset,
            };
            let (mut has_code, mut name, mut origin, mut spec) = (false, None, None, None);
            for &a in abbrev.attributes() {
                let attr = raw.read_attribute(a).map_err(gimli_err("DIE attributes"))?;
                match attr.name() {
                    dw::DW_AT_low_pc | dw::DW_AT_ranges => has_code = true,
                    dw::DW_AT_name if name.is_none() => name = Some(attr.value()),
                    dw::DW_AT_abstract_origin if origin.is_none() => origin = Some(attr.value()),
                    dw::DW_AT_specification if spec.is_none() => spec = Some(attr.value()),
                    _ => {}
                }
            }
            if tag == dw::DW_TAG_subprogram && has_code {
                outer.push((depth, die));
            }
            if !has_code {
                continue;
            }
            // Cheap test first: the DIE's own name; else its origin's (once per origin).
            let matches = match name {
                Some(v) => self.string(unit, v)? == func,
                None => match origin.or(spec).and_then(|v| self.reference(index, unit, v)) {
                    None => false,
                    Some(target) => {
                        let key = self.die_key(target);
                        match origins.get(&key) {
                            Some(&m) => m,
                            None => {
                                let m = self.name_of(target)? == Some(func);
                                origins.insert(key, m);
                                m
                            }
                        }
                    }
                },
            };
            if !matches {
                continue;
            }
            let nested = !inside.is_empty();
            inside.push(depth);
            if nested {
                // GCC's partial inlining puts a copy of a function inside its own
                // out-of-line body; like perf, probe the function once there.
                continue;
            }
            sites.push(Site {
                die,
                outer: outer.last().map(|(_, d)| *d),
                inlined: tag == dw::DW_TAG_inlined_subroutine,
            });
        }
        Ok(())
    }

    /// A DIE's offset in `.debug_info` (a key unique across units).
    fn die_key(&self, die: DieRef) -> usize {
        let start = self
            .units
            .get()
            .and_then(|u| u.starts.get(die.unit))
            .copied()
            .unwrap_or(0);
        start.saturating_add(die.offset.0)
    }

    fn line_rows(&self, unit_index: usize) -> Result<Vec<LineRow>, Error> {
        let unit = self.unit(unit_index)?;
        let Some(program) = unit.line_program.clone() else {
            return Ok(Vec::new());
        };
        let mut rows = program.rows();
        let mut out = Vec::new();
        while let Some((_, row)) = rows.next_row().map_err(gimli_err("line table"))? {
            out.push(LineRow {
                address: row.address(),
                line: row.line().map_or(0, |l| l.get()),
                file: row.file_index(),
                is_stmt: row.is_stmt(),
                prologue_end: row.prologue_end(),
                end_sequence: row.end_sequence(),
            });
        }
        Ok(out)
    }

    /// The path of file `index` of a unit's line table, as bytes (its last component).
    fn file_name(&self, unit_index: usize, index: u64) -> Option<&'s [u8]> {
        let unit = self.unit(unit_index).ok()?;
        let header = unit.line_program.as_ref()?.header();
        let file = header.file(index)?;
        let path = self.dwarf.attr_string(unit, file.path_name()).ok()?.slice();
        Some(path.rsplit(|&b| b == b'/').next().unwrap_or(path))
    }

    /// Whether the unit was optimized: its producer says so (`-O` not followed by `0`), or,
    /// as `perf probe` decides (`die_is_optimized_target`), a variable of it has a location
    /// list (clang records no flags in `DW_AT_producer`).
    fn optimized(&self, unit_index: usize) -> Result<bool, Error> {
        let unit = self.unit(unit_index)?;
        let mut cursor = unit.entries();
        let Some((_, root)) = cursor.next_dfs().map_err(gimli_err("unit DIE"))? else {
            return Ok(false);
        };
        if let Some(v) = root
            .attr_value(dw::DW_AT_producer)
            .map_err(gimli_err("DW_AT_producer"))?
        {
            let producer = self.string(unit, v)?;
            let says = producer
                .windows(3)
                .any(|w| w.get(..2) == Some(b" -O") && w.get(2).is_some_and(|&c| c != b'0'))
                || producer.windows(4).any(|w| {
                    w.get(..3) == Some(b" -O") && w.get(3).is_some_and(|&c| c != b'0' && c != b' ')
                });
            if says {
                return Ok(true);
            }
        }
        // Bounded by the unit's DIEs; stops at the first location list.
        while let Some((_, entry)) = cursor.next_dfs().map_err(gimli_err("DIE tree"))? {
            if !matches!(
                entry.tag(),
                dw::DW_TAG_formal_parameter | dw::DW_TAG_variable
            ) {
                continue;
            }
            let loc = entry
                .attr_value(dw::DW_AT_location)
                .map_err(gimli_err("DW_AT_location"))?;
            if matches!(
                loc,
                Some(AttributeValue::LocationListsRef(_) | AttributeValue::DebugLocListsIndex(_))
            ) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// `FUNC` alone on an out-of-line function, where `perf probe` puts it
    /// (`die_skip_prologue`): the row right after the first row at the entry, unless that
    /// row is marked `prologue_end` or the next one lies outside the function (then the
    /// entry). The next row may be of the same line (a function on one line).
    fn after_prologue(&self, site: &Site, entry: u64) -> Result<u64, Error> {
        let skip = match self.skip {
            PrologueSkip::Never => false,
            PrologueSkip::Always => true,
            PrologueSkip::Auto => !self.optimized(site.die.unit)?,
        };
        if !skip || site.inlined {
            return Ok(entry);
        }
        let ranges = self.ranges(site.die)?;
        let inside = |a: u64| ranges.iter().any(|&(b, e)| a >= b && a < e);
        let rows = self.line_rows(site.die.unit)?;
        let Some(first) = rows.iter().position(|r| r.address == entry) else {
            return Ok(entry);
        };
        if rows.get(first).is_some_and(|r| r.prologue_end) {
            return Ok(entry);
        }
        Ok(match rows.get(first.saturating_add(1)) {
            Some(r) if !r.end_sequence && inside(r.address) => r.address,
            _ => entry,
        })
    }

    /// The inlined instances nested anywhere in `die`.
    fn nested_inlines(&self, die: DieRef) -> Result<Vec<DieRef>, Error> {
        let unit = self.unit(die.unit)?;
        let mut cursor = unit
            .entries_at_offset(die.offset)
            .map_err(gimli_err("DIE tree"))?;
        let mut depth: isize = 0;
        let mut out = Vec::new();
        let mut first = true;
        while let Some((delta, entry)) = cursor.next_dfs().map_err(gimli_err("DIE tree"))? {
            if first {
                first = false;
                continue;
            }
            depth = depth.saturating_add(delta);
            if depth <= 0 {
                break;
            }
            if entry.tag() == dw::DW_TAG_inlined_subroutine {
                out.push(DieRef {
                    unit: die.unit,
                    offset: entry.offset(),
                });
            }
        }
        Ok(out)
    }

    /// A call site's line in the caller, when the call is in `want_file` (or no file is
    /// known): `DW_AT_call_line` of an inlined instance, which the line table does not
    /// hold (its rows there carry the inlined function's own lines). `perf probe` counts
    /// these lines too, at the instance's entry.
    fn call_line(&self, inline: DieRef, want_file: Option<&[u8]>) -> Result<Option<u64>, Error> {
        let (_, entry) = self.entry(inline)?;
        let udata = |attr| -> Result<Option<u64>, Error> {
            Ok(
                match entry
                    .attr_value(attr)
                    .map_err(gimli_err("DW_AT_call_line"))?
                {
                    Some(AttributeValue::FileIndex(i)) => Some(i),
                    Some(v) => v.udata_value(),
                    None => None,
                },
            )
        };
        let Some(line) = udata(dw::DW_AT_call_line)? else {
            return Ok(None);
        };
        let file = udata(dw::DW_AT_call_file)?.and_then(|f| self.file_name(inline.unit, f));
        Ok((want_file.is_none() || file == want_file).then_some(line))
    }

    /// The addresses of `place` in one function instance.
    fn addresses(&self, func: &str, site: &Site, place: Place) -> Result<Vec<u64>, Error> {
        let no = |what| Error::NoPlace {
            function: String::from(func),
            what,
        };
        let entry = self.entry_pc(site.die)?.ok_or(no("no entry address"))?;
        Ok(match place {
            Place::Entry => alloc::vec![self.after_prologue(site, entry)?],
            Place::Offset(off) => {
                if site.inlined {
                    // Like perf: an offset into inlined code means nothing.
                    return Ok(Vec::new());
                }
                let addr = entry.checked_add(off).ok_or(no("offset overflows"))?;
                if !self
                    .ranges(site.die)?
                    .iter()
                    .any(|&(b, e)| addr >= b && addr < e)
                {
                    return Err(no("offset past the end of the function"));
                }
                alloc::vec![addr]
            }
            Place::Return => {
                if site.inlined {
                    return Ok(Vec::new());
                }
                alloc::vec![entry]
            }
            // `perf probe` reads line 0 as no line at all (`pp->line == 0`): `FUNC:0` is
            // `FUNC`, at the entry (after the prologue where `FUNC` skips it) of the
            // out-of-line function and of every inlined instance. Not the declaration line's
            // rows: a macro-made function (`SYSCALL_DEFINE`) has every row on that line, and
            // the entries of the calls the macro inlines there too.
            Place::Line(0) => return self.addresses(func, site, Place::Entry),
            Place::Line(rel) => {
                let decl = self
                    .udata_of(site.die, dw::DW_AT_decl_line)?
                    .ok_or(no("no declaration line"))?;
                let want = decl.saturating_add(u64::from(rel));
                let decl_file = self.udata_of(site.die, dw::DW_AT_decl_file)?;
                let want_file = decl_file.and_then(|f| self.file_name(site.die.unit, f));
                let ranges = self.ranges(site.die)?;
                let nested = self.nested_inlines(site.die)?;
                let rows = self.line_rows(site.die.unit)?;
                // As `perf probe` places `FUNC:LINE`: every statement row of that line and
                // file in the function (rows inside inlined code carry the inlined
                // function's own lines, so those that match are the call's own), and the
                // entry of every inlined call made on that line.
                let mut out: Vec<u64> = rows
                    .iter()
                    .filter(|r| r.line == want && r.is_stmt && !r.end_sequence)
                    .filter(|r| ranges.iter().any(|&(b, e)| r.address >= b && r.address < e))
                    .filter(|r| {
                        want_file.is_none() || self.file_name(site.die.unit, r.file) == want_file
                    })
                    .map(|r| r.address)
                    .collect();
                for &inline in &nested {
                    if self.call_line(inline, want_file)? == Some(want) {
                        out.extend(self.entry_pc(inline)?);
                    }
                }
                // The line's own statements must start their addresses: the entry of an
                // out-of-line function is its declaration's line (line 0; for an inlined
                // instance, the line of the function it is inlined into), elsewhere the
                // first statement row at an address says which line a probe there is
                // (perf's `verify_representive_line`).
                let real = match site.outer {
                    Some(o) if site.inlined => {
                        let at = self.entry_pc(o)?;
                        let line = self.udata_of(o, dw::DW_AT_decl_line)?;
                        let file = self.udata_of(o, dw::DW_AT_decl_file)?;
                        let same_file = want_file.is_none()
                            || file.and_then(|f| self.file_name(o.unit, f)) == want_file;
                        // Another file's function: perf's reverse lookup names no line of
                        // this one there, and accepts the address.
                        at.map(|a| (a, line.filter(|_| same_file)))
                    }
                    _ => Some((entry, Some(decl))),
                };
                for &addr in &out {
                    let owner = if let Some((_, line)) = real.filter(|&(at, _)| at == addr) {
                        line
                    } else {
                        rows.iter()
                            .find(|r| r.address == addr && r.is_stmt && !r.end_sequence)
                            .filter(|r| {
                                want_file.is_none()
                                    || self.file_name(site.die.unit, r.file) == want_file
                            })
                            .map(|r| r.line)
                    };
                    if let Some(line) = owner.filter(|&l| l != want) {
                        return Err(Error::SharedLine {
                            function: String::from(func),
                            line: u64::from(rel),
                            instead: i64::try_from(line)
                                .unwrap_or(i64::MAX)
                                .saturating_sub(i64::try_from(decl).unwrap_or(i64::MAX)),
                        });
                    }
                }
                out.sort_unstable();
                out.dedup();
                out
            }
        })
    }

    /// Resolves a parsed probe spec: its function, place and fetch arguments.
    ///
    /// # Errors
    /// As [`Resolver::resolve`]; [`Error::NoPlace`] for a spec without a function.
    pub fn resolve_spec(&self, spec: &ProbeSpec<'_>) -> Result<Vec<ProbeSite>, Error> {
        let func = spec.func().ok_or(Error::NoPlace {
            function: String::new(),
            what: "the probe names no function",
        })?;
        self.resolve(func, spec.place(), spec.args().exprs())
    }

    /// Every site of `func` at `place`, each with `args` resolved at its address
    /// (`$err` skipped; `$retval` at a return probe is the return register).
    ///
    /// # Errors
    /// [`Error::FunctionNotFound`], [`Error::NoPlace`] when no site has that place; the
    /// first argument that does not resolve at a site ([`Error::VariableNotFound`],
    /// [`Error::NotAvailable`], [`Error::BadStep`], [`Error::NotScalar`]).
    pub fn resolve(
        &self,
        func: &str,
        place: Place,
        args: &[Arg<'_>],
    ) -> Result<Vec<ProbeSite>, Error> {
        let sites = self.find_sites(func)?;
        if sites.is_empty() {
            return Err(Error::FunctionNotFound(String::from(func)));
        }
        self.resolve_in(func, &sites, place, args)
    }

    /// Every line of `func` with code (relative to its declaration, as `FUNC:LINE` counts
    /// them), each with [`Resolver::resolve`]'s answer for `args` there: where the variables
    /// of a probe can be fetched, the way `perf probe -V FUNC:LINE` tells for one line.
    /// The function is looked up once.
    ///
    /// # Errors
    /// [`Error::FunctionNotFound`]; errors of the debug info itself. Per line, the first
    /// argument that does not resolve, as [`Resolver::resolve`].
    #[allow(clippy::type_complexity)]
    pub fn resolve_lines(
        &self,
        func: &str,
        args: &[Arg<'_>],
    ) -> Result<Vec<(u32, Result<Vec<ProbeSite>, Error>)>, Error> {
        let sites = self.find_sites(func)?;
        if sites.is_empty() {
            return Err(Error::FunctionNotFound(String::from(func)));
        }
        let mut lines: Vec<u32> = Vec::new();
        for site in &sites {
            let Some(decl) = self.udata_of(site.die, dw::DW_AT_decl_line)? else {
                continue;
            };
            let decl_file = self.udata_of(site.die, dw::DW_AT_decl_file)?;
            let want_file = decl_file.and_then(|f| self.file_name(site.die.unit, f));
            let ranges = self.ranges(site.die)?;
            let nested = self.nested_inlines(site.die)?;
            let inside = |a: u64, r: &[(u64, u64)]| r.iter().any(|&(b, e)| a >= b && a < e);
            lines.push(0);
            for &inline in &nested {
                if let Some(line) = self.call_line(inline, want_file)? {
                    if let Some(rel) = line.checked_sub(decl).and_then(|d| u32::try_from(d).ok()) {
                        lines.push(rel);
                    }
                }
            }
            for r in self.line_rows(site.die.unit)? {
                if !r.is_stmt || r.end_sequence || r.line < decl {
                    continue;
                }
                if !inside(r.address, &ranges) {
                    continue;
                }
                if want_file.is_some() && self.file_name(site.die.unit, r.file) != want_file {
                    continue;
                }
                if let Ok(rel) = u32::try_from(r.line - decl) {
                    lines.push(rel);
                }
            }
        }
        lines.sort_unstable();
        lines.dedup();
        Ok(lines
            .into_iter()
            .map(|rel| (rel, self.resolve_in(func, &sites, Place::Line(rel), args)))
            .collect())
    }

    /// [`Resolver::resolve`] for sites already found.
    fn resolve_in(
        &self,
        func: &str,
        sites: &[Site],
        place: Place,
        args: &[Arg<'_>],
    ) -> Result<Vec<ProbeSite>, Error> {
        let mut out = Vec::new();
        for site in sites {
            for address in self.addresses(func, site, place)? {
                let mut resolved = Vec::new();
                for arg in args.iter().filter(|a| !a.is_err()) {
                    resolved.push(self.resolve_arg(site, address, place, arg)?);
                }
                out.push(ProbeSite {
                    function: String::from(func),
                    address,
                    file_offset: self.file_offset(address),
                    inlined: site.inlined,
                    args: resolved,
                });
            }
        }
        if out.is_empty() {
            return Err(Error::NoPlace {
                function: String::from(func),
                what: match place {
                    Place::Line(_) => "no code for that line",
                    Place::Offset(_) | Place::Return => "only inlined instances",
                    Place::Entry => "no entry address",
                },
            });
        }
        Ok(out)
    }

    fn resolve_arg(
        &self,
        site: &Site,
        pc: u64,
        place: Place,
        arg: &Arg<'_>,
    ) -> Result<ResolvedArg, Error> {
        let (var_name, start_val, ty) = match arg.base() {
            ArgBase::Var(name) => {
                let found = self
                    .find_variable(site, pc, name)
                    .and_then(|die| Ok((die, self.variable_value(site, die, pc, name)?)));
                let (die, val) = found.map_err(|e| self.with_available(e, site))?;
                (name, val, self.type_of(die)?)
            }
            ArgBase::Retval if place == Place::Return => {
                let ty = self.type_of(site.die)?;
                let reg = self.arch.return_dwarf_reg().ok_or(Error::Unexpressible {
                    what: "return register without a DWARF number",
                    value: 0,
                })?;
                ("$retval", Val::Value(Start::Reg(reg, 0), Vec::new()), ty)
            }
            _ => return Err(Error::NotAVariable(alloc::format!("{arg}"))),
        };
        let mut name = String::from(var_name.trim_start_matches('$'));
        if var_name == "$retval" {
            name = String::from("arg1");
        }
        let mut val = start_val;
        let mut ty = ty;
        for step in arg.steps() {
            let step_text = match step {
                Step::Member(m) => alloc::format!(".{m}"),
                Step::Deref(m) => alloc::format!("->{m}"),
                Step::Index(i) => alloc::format!("[{i}]"),
            };
            let bad = |reason| Error::BadStep {
                name: String::from(var_name),
                step: step_text.clone(),
                reason,
            };
            let t = ty.ok_or(bad("the value has no type"))?;
            let (t, kind) = self.strip(t)?;
            match *step {
                Step::Member(m) | Step::Deref(m) => {
                    let agg = match (step, kind) {
                        (Step::Deref(_), Kind::Pointer { target: Some(p) }) => {
                            val = pointee(val);
                            let (agg, k) = self.strip(p)?;
                            if k != Kind::Aggregate {
                                return Err(bad("'->' on a pointer to a non-struct"));
                            }
                            agg
                        }
                        (Step::Deref(_), _) => return Err(bad("'->' on a non-pointer")),
                        (_, Kind::Aggregate) => t,
                        (_, Kind::Pointer { .. }) => return Err(bad("'.' on a pointer: use '->'")),
                        _ => return Err(bad("'.' on a non-struct")),
                    };
                    let (off, mty) = self.member(agg, m, 0)?.ok_or(bad("no such member"))?;
                    val = member_at(val, off).ok_or(bad("the struct is in a register"))?;
                    ty = Some(mty);
                    name = String::from(m);
                }
                Step::Index(i) => match kind {
                    Kind::Array { elem } => {
                        let stride = self.array_stride(t)?.ok_or(bad("element size unknown"))?;
                        let off = (i as i64).wrapping_mul(stride as i64);
                        val = member_at(val, off).ok_or(bad("the array is in a register"))?;
                        ty = elem;
                    }
                    Kind::Pointer { target: Some(p) } => {
                        let size = self.size_of(p)?.ok_or(bad("element size unknown"))?;
                        val = pointee(val);
                        val = member_at(val, (i as i64).wrapping_mul(size as i64))
                            .ok_or(bad("the array is in a register"))?;
                        ty = Some(p);
                    }
                    _ => return Err(bad("'[]' on a non-array, non-pointer")),
                },
            }
        }
        if let (true, Some(t)) = (arg.steps().is_empty(), arg.fetch_type()) {
            // perf names `zSql:string` `zSql_string` (the arg text, ':' made '_').
            name = alloc::format!("{name}_{}", t.as_str());
        }
        if let Some(n) = arg.name() {
            name = String::from(n);
        }
        let string = arg.fetch_type() == Some(FetchType::String);
        let (size, signed) = match arg.fetch_type() {
            Some(FetchType::String) | None => {
                let t = ty.ok_or(Error::NotScalar {
                    name: name.clone(),
                    what: "a value without a type",
                })?;
                let (_, kind) = self.strip(t)?;
                let addr_size = u64::from(self.unit(t.unit)?.encoding().address_size);
                let not = |what| Error::NotScalar {
                    name: name.clone(),
                    what,
                };
                let (size, signed) = match kind {
                    Kind::Base { size, signed } => (size, signed),
                    Kind::Pointer { .. } => (addr_size, false),
                    Kind::Enum { size } => (size, false),
                    Kind::Array { .. } if string => {
                        // A char array: the string is the array's memory itself.
                        val = address_of(val).ok_or(not("an array in a register"))?;
                        (addr_size, false)
                    }
                    Kind::Aggregate => return Err(not("a struct or union")),
                    Kind::Array { .. } => return Err(not("an array")),
                    Kind::Other => return Err(not("a value of no fetchable type")),
                };
                if !matches!(size, 1 | 2 | 4 | 8) {
                    return Err(not("a value of another size"));
                }
                (size as u8, signed)
            }
            Some(t) => (t.size().unwrap_or(8), t.is_signed()),
        };
        Ok(ResolvedArg {
            name,
            location: finish(val, size, signed, self.global_name(site, pc, var_name)),
            string,
        })
    }

    /// `e` with the variables available at its address filled in, when it is about a
    /// variable that is not there or not fetchable.
    fn with_available(&self, e: Error, site: &Site) -> Error {
        match e {
            Error::VariableNotFound { name, pc, .. } => Error::VariableNotFound {
                name,
                pc,
                available: self.available(site, pc),
            },
            Error::NotAvailable {
                name, pc, reason, ..
            } => Error::NotAvailable {
                name,
                pc,
                reason,
                available: self.available(site, pc),
            },
            other => other,
        }
    }

    /// The variables visible at `pc` in `site` whose value a prologue can fetch there: the
    /// scopes' parameters and locals (the innermost of a name wins, as in
    /// [`Resolver::find_variable`]), then the unit's globals not shadowed by them. Debug info
    /// that does not parse ends the list early rather than failing: this only words an error.
    fn available(&self, site: &Site, pc: u64) -> Available {
        let mut seen: Vec<(u32, DieRef, &'s [u8])> = Vec::new();
        let _ = self.scope_variables(site.die, pc, 0, &mut seen);
        let shadowed = |i: usize, _depth: u32, name: &[u8]| {
            seen.get(i).map(|&(_, d, _)| d) != innermost(&seen, name)
        };
        let mut out = Available::default();
        let mut push = |name: &[u8]| -> bool {
            if out.names.len() >= MAX_AVAILABLE {
                out.more = true;
                return false;
            }
            out.names.push(String::from_utf8_lossy(name).into_owned());
            true
        };
        for (i, &(depth, die, name)) in seen.iter().enumerate() {
            if shadowed(i, depth, name) {
                continue;
            }
            let text = core::str::from_utf8(name).unwrap_or("");
            if self.variable_value(site, die, pc, text).is_ok() && !push(name) {
                return out;
            }
        }
        let Ok(unit) = self.unit(site.die.unit) else {
            return out;
        };
        let Ok(mut tree) = unit.entries_tree(None) else {
            return out;
        };
        let Ok(root) = tree.root() else {
            return out;
        };
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            let e = child.entry();
            if e.tag() != dw::DW_TAG_variable {
                continue;
            }
            let die = DieRef {
                unit: site.die.unit,
                offset: e.offset(),
            };
            let Ok(Some(name)) = self.name_of(die) else {
                continue;
            };
            if seen.iter().any(|&(_, _, n)| n == name) {
                continue;
            }
            let text = core::str::from_utf8(name).unwrap_or("");
            if self.variable_value(site, die, pc, text).is_ok() {
                seen.push((0, die, name));
                if !push(name) {
                    return out;
                }
            }
        }
        out
    }

    /// Appends the named parameters and variables of `scope`, then of the lexical blocks
    /// around `pc` in it (recursively), each with its nesting depth: the one walk both the
    /// lookup of a variable ([`innermost`]) and the list of available ones read.
    fn scope_variables(
        &self,
        scope: DieRef,
        pc: u64,
        depth: u32,
        out: &mut Vec<(u32, DieRef, &'s [u8])>,
    ) -> Result<(), Error> {
        if depth > MAX_DEPTH {
            return Err(Error::Limit {
                what: "nested lexical blocks",
                limit: MAX_DEPTH,
            });
        }
        let unit = self.unit(scope.unit)?;
        let mut tree = unit
            .entries_tree(Some(scope.offset))
            .map_err(gimli_err("scope"))?;
        let root = tree.root().map_err(gimli_err("scope"))?;
        let mut children = root.children();
        let mut blocks = Vec::new();
        while let Some(child) = children.next().map_err(gimli_err("scope child"))? {
            let e = child.entry();
            let die = DieRef {
                unit: scope.unit,
                offset: e.offset(),
            };
            match e.tag() {
                dw::DW_TAG_formal_parameter | dw::DW_TAG_variable => {
                    if let Some(name) = self.name_of(die)? {
                        out.push((depth, die, name));
                    }
                }
                dw::DW_TAG_lexical_block => blocks.push(die),
                _ => {}
            }
        }
        for block in blocks {
            if self.ranges(block)?.iter().any(|&(b, e)| pc >= b && pc < e) {
                self.scope_variables(block, pc, depth + 1, out)?;
            }
        }
        Ok(())
    }

    /// The name of a global the argument starts from, for `@name+off` fetch-args.
    fn global_name(&self, _site: &Site, _pc: u64, var: &str) -> String {
        String::from(var)
    }

    /// The variable or parameter `name` visible at `pc` in `site`: the innermost lexical
    /// block's first, then the function's, then the unit's globals, then other units'.
    fn find_variable(&self, site: &Site, pc: u64, name: &str) -> Result<DieRef, Error> {
        let mut seen = Vec::new();
        self.scope_variables(site.die, pc, 0, &mut seen)?;
        if let Some(d) = innermost(&seen, name.as_bytes()) {
            return Ok(d);
        }
        // Globals: this unit first, then every other that may name it.
        let mut order: Vec<usize> = alloc::vec![site.die.unit];
        order.extend(
            self.candidate_units(name.as_bytes())?
                .into_iter()
                .filter(|&u| u != site.die.unit),
        );
        let mut declared = None;
        for u in order {
            if let Some(d) = self.global(u, name)? {
                if self.has_location(d)? {
                    return Ok(d);
                }
                declared = declared.or(Some(d));
            }
        }
        if let Some(d) = declared {
            // Its location query names the reason (optimized out).
            return Ok(d);
        }
        Err(Error::VariableNotFound {
            name: String::from(name),
            pc,
            available: Available::default(),
        })
    }

    fn has_location(&self, die: DieRef) -> Result<bool, Error> {
        let (_, e) = self.entry(die)?;
        Ok(e.attr_value(dw::DW_AT_location)
            .map_err(gimli_err("DW_AT_location"))?
            .is_some()
            || e.attr_value(dw::DW_AT_const_value)
                .map_err(gimli_err("DW_AT_const_value"))?
                .is_some())
    }

    /// A unit-level variable `name` with a location (or a constant value), else its
    /// declaration. Remembered per unit and name: every site of a function inlined in many
    /// places asks the same units for the same global.
    fn global(&self, unit_index: usize, name: &str) -> Result<Option<DieRef>, Error> {
        let key = (unit_index, String::from(name));
        if let Some(found) = self.globals.borrow().get(&key) {
            return Ok(*found);
        }
        let found = self.global_uncached(unit_index, name)?;
        self.globals.borrow_mut().insert(key, found);
        Ok(found)
    }

    fn global_uncached(&self, unit_index: usize, name: &str) -> Result<Option<DieRef>, Error> {
        let unit = self.unit(unit_index)?;
        let mut tree = unit.entries_tree(None).map_err(gimli_err("unit"))?;
        let root = tree.root().map_err(gimli_err("unit"))?;
        let mut children = root.children();
        let mut fallback = None;
        while let Some(child) = children.next().map_err(gimli_err("unit child"))? {
            let e = child.entry();
            if e.tag() != dw::DW_TAG_variable {
                continue;
            }
            let has_loc = e
                .attr_value(dw::DW_AT_location)
                .map_err(gimli_err("DW_AT_location"))?
                .is_some()
                || e.attr_value(dw::DW_AT_const_value)
                    .map_err(gimli_err("DW_AT_const_value"))?
                    .is_some();
            let die = DieRef {
                unit: unit_index,
                offset: e.offset(),
            };
            if self.name_of(die)? == Some(name.as_bytes()) {
                if has_loc {
                    return Ok(Some(die));
                }
                // A declaration, or a static the compiler dropped: keep looking for the
                // definition, but remember it exists.
                fallback = fallback.or(Some(die));
            }
        }
        Ok(fallback)
    }

    /// The value (or memory) of a variable DIE at `pc`.
    fn variable_value(&self, site: &Site, die: DieRef, pc: u64, name: &str) -> Result<Val, Error> {
        let (unit, entry) = self.entry(die)?;
        let na = |reason| Error::NotAvailable {
            name: String::from(name),
            pc,
            reason,
            available: Available::default(),
        };
        match entry
            .attr_value(dw::DW_AT_location)
            .map_err(gimli_err("DW_AT_location"))?
        {
            Some(AttributeValue::Exprloc(expr)) => self.eval(site, unit, expr, pc, name),
            Some(v) => {
                let mut iter = self
                    .lists()?
                    .attr_locations(unit, v)
                    .map_err(gimli_err("location list"))?
                    .ok_or(na("location attribute of an unknown form"))?;
                while let Some(l) = iter.next().map_err(gimli_err("location list"))? {
                    if pc >= l.range.begin && pc < l.range.end {
                        return self.eval(site, unit, l.data, pc, name);
                    }
                }
                Err(na("no location at this address"))
            }
            None => match entry
                .attr_value(dw::DW_AT_const_value)
                .map_err(gimli_err("DW_AT_const_value"))?
            {
                Some(AttributeValue::Block(b)) => Ok(Val::Value(
                    Start::Const(le_value(b.slice()).ok_or(na("constant wider than 8 bytes"))?),
                    Vec::new(),
                )),
                Some(v) => {
                    let c = v
                        .sdata_value()
                        .or(v.udata_value().map(|u| u as i64))
                        .ok_or(na("constant of an unknown form"))?;
                    Ok(Val::Value(Start::Const(c), Vec::new()))
                }
                None => Err(na("optimized out")),
            },
        }
    }

    /// A location expression as a prologue can fetch it.
    fn eval(
        &self,
        site: &Site,
        unit: &gimli::Unit<R<'s>>,
        expr: gimli::Expression<R<'s>>,
        pc: u64,
        name: &str,
    ) -> Result<Val, Error> {
        let na = |reason| Error::NotAvailable {
            name: String::from(name),
            pc,
            reason,
            available: Available::default(),
        };
        let mut ops: Vec<Operation<R<'s>>> = Vec::new();
        let mut iter = expr.operations(unit.encoding());
        while let Some(op) = iter.next().map_err(gimli_err("location expression"))? {
            if ops.len() >= MAX_OPS {
                return Err(na("expression too complex"));
            }
            ops.push(op);
        }
        let reg = |r: gimli::Register| r.0;
        match ops.as_slice() {
            [] => Err(na("optimized out (empty location)")),
            [Operation::Register { register }] => {
                Ok(Val::Value(Start::Reg(reg(*register), 0), Vec::new()))
            }
            [Operation::RegisterOffset {
                register, offset, ..
            }] => Ok(Val::Memory(
                Start::Reg(reg(*register), 0),
                Vec::new(),
                *offset,
            )),
            [Operation::RegisterOffset {
                register, offset, ..
            }, Operation::StackValue] => {
                Ok(Val::Value(Start::Reg(reg(*register), *offset), Vec::new()))
            }
            [Operation::FrameOffset { offset }] => {
                let (fb, reads) = self.frame_base(site, pc, name)?;
                Ok(Val::Memory(fb, reads, *offset))
            }
            [Operation::FrameOffset { offset }, Operation::StackValue] => {
                // The address of a frame slot, as a value (a pointer into the frame).
                match self.frame_base(site, pc, name)? {
                    (Start::Reg(r, o), reads) if reads.is_empty() => Ok(Val::Value(
                        Start::Reg(r, o.wrapping_add(*offset)),
                        Vec::new(),
                    )),
                    (Start::Cfa(r, o), reads) if reads.is_empty() => Ok(Val::Value(
                        Start::Cfa(r, o.wrapping_add(*offset)),
                        Vec::new(),
                    )),
                    _ => Err(na("the address of a slot of a frame found by a read")),
                }
            }
            [Operation::Address { address }] => {
                Ok(Val::Memory(Start::Addr(*address), Vec::new(), 0))
            }
            [Operation::AddressIndex { index }] => {
                let a = self
                    .dwarf
                    .address(unit, *index)
                    .map_err(gimli_err("DW_OP_addrx"))?;
                Ok(Val::Memory(Start::Addr(a), Vec::new(), 0))
            }
            [Operation::UnsignedConstant { value }, Operation::StackValue] => {
                Ok(Val::Value(Start::Const(*value as i64), Vec::new()))
            }
            [Operation::SignedConstant { value }, Operation::StackValue] => {
                Ok(Val::Value(Start::Const(*value), Vec::new()))
            }
            [Operation::Address { address }, Operation::StackValue] => {
                Ok(Val::Value(Start::Const(*address as i64), Vec::new()))
            }
            [Operation::ImplicitValue { data }] => Ok(Val::Value(
                Start::Const(
                    le_value(data.slice()).ok_or(na("implicit value wider than 8 bytes"))?,
                ),
                Vec::new(),
            )),
            ops if ops.iter().any(|o| matches!(o, Operation::Piece { .. })) => {
                Err(na("split in pieces"))
            }
            ops if ops
                .iter()
                .any(|o| matches!(o, Operation::EntryValue { .. })) =>
            {
                Err(na("only an entry value (the caller's register at entry)"))
            }
            ops if ops
                .iter()
                .any(|o| matches!(o, Operation::ImplicitPointer { .. })) =>
            {
                Err(na("an implicit pointer (the object is optimized out)"))
            }
            _ => Err(na("a computed location (arithmetic on registers)")),
        }
    }

    /// The frame base of the function around `site` at `pc`.
    fn frame_base(&self, site: &Site, pc: u64, name: &str) -> Result<(Start, Vec<i64>), Error> {
        let na = |reason| Error::NotAvailable {
            name: String::from(name),
            pc,
            reason,
            available: Available::default(),
        };
        let outer = site.outer.unwrap_or(site.die);
        let (unit, entry) = self.entry(outer)?;
        let expr = match entry
            .attr_value(dw::DW_AT_frame_base)
            .map_err(gimli_err("DW_AT_frame_base"))?
        {
            Some(AttributeValue::Exprloc(e)) => e,
            Some(v) => {
                let mut iter = self
                    .lists()?
                    .attr_locations(unit, v)
                    .map_err(gimli_err("frame base list"))?
                    .ok_or(na("frame base of an unknown form"))?;
                let mut found = None;
                while let Some(l) = iter.next().map_err(gimli_err("frame base list"))? {
                    if pc >= l.range.begin && pc < l.range.end {
                        found = Some(l.data);
                        break;
                    }
                }
                found.ok_or(na("no frame base at this address"))?
            }
            None => return Err(na("DW_OP_fbreg without a frame base")),
        };
        let mut iter = expr.operations(unit.encoding());
        let first = iter.next().map_err(gimli_err("frame base"))?;
        let second = iter.next().map_err(gimli_err("frame base"))?;
        match (first, second) {
            (Some(Operation::CallFrameCFA), None) => self.cfa(unit.encoding(), pc, name),
            (Some(Operation::Register { register }), None) => {
                Ok((Start::Reg(register.0, 0), Vec::new()))
            }
            (
                Some(Operation::RegisterOffset {
                    register, offset, ..
                }),
                None,
            ) => Ok((Start::Reg(register.0, offset), Vec::new())),
            _ => Err(na("a frame base this resolver does not evaluate")),
        }
    }

    /// The CFA at `pc` from `.eh_frame` (or `.debug_frame`): a register plus an offset, or
    /// the `DW_OP_bregN off; DW_OP_deref` expression of a realigned stack (i386 `main`).
    fn cfa(
        &self,
        encoding: gimli::Encoding,
        pc: u64,
        name: &str,
    ) -> Result<(Start, Vec<i64>), Error> {
        let na = |reason| Error::NotAvailable {
            name: String::from(name),
            pc,
            reason,
            available: Available::default(),
        };
        let endian = if self.code.header().is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let find = |n: &str| {
            self.code
                .sections()
                .map(|(_, sh)| sh)
                .find(|sh| self.code.section_name(sh) == n && sh.sh_type != SHT_NOBITS)
        };
        let address_size = encoding.address_size;
        let encoding = Some(encoding);
        let mut ctx = gimli::UnwindContext::new();
        if let Some(eh) = find(".eh_frame") {
            let mut bases = gimli::BaseAddresses::default().set_eh_frame(eh.addr);
            if let Some(text) = find(".text") {
                bases = bases.set_text(text.addr);
            }
            if let Some(got) = find(".got") {
                bases = bases.set_got(got.addr);
            }
            let mut section = gimli::EhFrame::new(self.code.section_data(&eh), endian);
            section.set_address_size(address_size);
            if let Ok(row) = section.unwind_info_for_address(
                &bases,
                &mut ctx,
                pc,
                gimli::EhFrame::cie_from_offset,
            ) {
                let rule = row.cfa().clone();
                return cfa_rule(&rule, &section, encoding)
                    .ok_or(na("a CFA expression this resolver does not evaluate"));
            }
        }
        let debug_frame = self.debug.section(".debug_frame")?;
        let mut section = gimli::DebugFrame::new(debug_frame, endian);
        section.set_address_size(address_size);
        let bases = gimli::BaseAddresses::default();
        let row = section
            .unwind_info_for_address(&bases, &mut ctx, pc, gimli::DebugFrame::cie_from_offset)
            .map_err(|_| na("no call frame information at this address"))?;
        let rule = row.cfa().clone();
        cfa_rule(&rule, &section, encoding)
            .ok_or(na("a CFA expression this resolver does not evaluate"))
    }
}

/// The DIE `name` means among the scopes' variables `seen` (as `scope_variables` lists
/// them): the innermost scope's wins, the first declared within one scope.
fn innermost(seen: &[(u32, DieRef, &[u8])], name: &[u8]) -> Option<DieRef> {
    let mut best: Option<(u32, DieRef)> = None;
    for &(depth, die, n) in seen {
        if n == name && best.is_none_or(|(d, _)| depth > d) {
            best = Some((depth, die));
        }
    }
    best.map(|(_, die)| die)
}

/// A [`gimli::Dwarf`] over `debug`'s sections; the location and range lists only when
/// `lists` (they are inflated, when compressed, only then).
fn load_dwarf<'s>(
    debug: &'s DebugSections<'_>,
    endian: RunTimeEndian,
    lists: bool,
) -> Result<gimli::Dwarf<R<'s>>, Error> {
    let mut failed = None;
    let load = |id: gimli::SectionId| -> Result<R<'s>, gimli::Error> {
        let name = id.name();
        let data = if !NAMES.contains(&name) || (!lists && LIST_SECTIONS.contains(&name)) {
            &[][..]
        } else {
            match debug.section(name) {
                Ok(d) => d,
                Err(e) => {
                    failed.get_or_insert(e);
                    &[][..]
                }
            }
        };
        Ok(EndianSlice::new(data, endian))
    };
    let dwarf = gimli::Dwarf::load(load).map_err(gimli_err("debug sections"))?;
    match failed {
        Some(e) => Err(e),
        None => Ok(dwarf),
    }
}

/// A CFA rule as a start and reads.
/// What a DIE copies: its `DW_AT_abstract_origin` (an inlined or out-of-line instance), else
/// its `DW_AT_specification` (a definition of a declaration).
pub(super) fn origin_of<'s>(
    entry: &gimli::DebuggingInformationEntry<'_, '_, R<'s>>,
) -> Result<Option<AttributeValue<R<'s>>>, Error> {
    match entry
        .attr_value(dw::DW_AT_abstract_origin)
        .map_err(gimli_err("DW_AT_abstract_origin"))?
    {
        Some(v) => Ok(Some(v)),
        None => entry
            .attr_value(dw::DW_AT_specification)
            .map_err(gimli_err("DW_AT_specification")),
    }
}

fn cfa_rule<'s, S: UnwindSection<R<'s>>>(
    rule: &gimli::CfaRule<usize>,
    section: &S,
    encoding: Option<gimli::Encoding>,
) -> Option<(Start, Vec<i64>)> {
    match rule {
        gimli::CfaRule::RegisterAndOffset { register, offset } => {
            Some((Start::Cfa(register.0, *offset), Vec::new()))
        }
        gimli::CfaRule::Expression(e) => {
            let expr = e.get(section).ok()?;
            let mut ops = expr.operations(encoding?);
            let first = ops.next().ok()?;
            let second = ops.next().ok()?;
            let third = ops.next().ok()?;
            match (first, second, third) {
                (
                    Some(Operation::RegisterOffset {
                        register, offset, ..
                    }),
                    Some(Operation::Deref { .. }),
                    None,
                ) => Some((Start::Reg(register.0, 0), alloc::vec![offset])),
                _ => None,
            }
        }
    }
}

/// Bytes of a little-endian constant up to 8 bytes, sign-extended from its width.
fn le_value(b: &[u8]) -> Option<i64> {
    if b.len() > 8 || b.is_empty() {
        return None;
    }
    let mut v = [0u8; 8];
    v.get_mut(..b.len())?.copy_from_slice(b);
    let raw = u64::from_le_bytes(v);
    let shift = 64 - 8 * b.len() as u32;
    Some(((raw << shift) as i64) >> shift)
}

/// The value of a pointer-typed object: read it if it is in memory.
fn pointee(v: Val) -> Val {
    match v {
        Val::Value(s, d) => Val::Value(s, d),
        Val::Memory(s, mut d, off) => {
            d.push(off);
            Val::Value(s, d)
        }
    }
}

/// The object `off` bytes into the object `v` points at (after [`pointee`]) or is.
fn member_at(v: Val, off: i64) -> Option<Val> {
    match v {
        // A pointer value: the object it points at.
        Val::Value(s, d) => Some(Val::Memory(s, d, off)),
        Val::Memory(s, d, base) => Some(Val::Memory(s, d, base.wrapping_add(off))),
    }
}

/// The address of an object in memory, as a value.
fn address_of(v: Val) -> Option<Val> {
    match v {
        Val::Memory(Start::Reg(r, o), d, off) if d.is_empty() => {
            Some(Val::Value(Start::Reg(r, o.wrapping_add(off)), d))
        }
        Val::Memory(Start::Addr(a), d, off) if d.is_empty() => Some(Val::Value(
            Start::Const(a.wrapping_add(off as u64) as i64),
            d,
        )),
        Val::Memory(s, mut d, off) => {
            // `+off(X)` as a value is X + off: only expressible when folded into a read later.
            let last = d.pop()?;
            d.push(last);
            let _ = off;
            let _ = s;
            None
        }
        Val::Value(..) => None,
    }
}

/// Turns the walk's value into an [`ArgLocation`].
fn finish(v: Val, size: u8, signed: bool, var: String) -> ArgLocation {
    let (start, derefs) = match v {
        Val::Value(s, d) => (s, d),
        Val::Memory(s, mut d, off) => {
            d.push(off);
            (s, d)
        }
    };
    let mut global = None;
    let (base, derefs) = match (start, derefs.split_first()) {
        (Start::Reg(r, o), Some((&first, rest))) => (
            LocBase::Register {
                dwarf_reg: r,
                offset: 0,
            },
            core::iter::once(first.wrapping_add(o))
                .chain(rest.iter().copied())
                .collect(),
        ),
        (Start::Reg(r, o), None) => (
            LocBase::Register {
                dwarf_reg: r,
                offset: o,
            },
            Vec::new(),
        ),
        (Start::Cfa(r, o), Some((&first, rest))) => (
            LocBase::FrameSlot {
                cfa_reg: r,
                cfa_offset: o,
                offset: first,
            },
            rest.to_vec(),
        ),
        (Start::Cfa(r, o), None) => (
            LocBase::Register {
                dwarf_reg: r,
                offset: o,
            },
            Vec::new(),
        ),
        (Start::Addr(a), Some((&first, rest))) => {
            global = Some((var, first as u64));
            (
                LocBase::Address(a.wrapping_add(first as u64)),
                rest.to_vec(),
            )
        }
        (Start::Addr(a), None) => (LocBase::Const(a as i64), Vec::new()),
        (Start::Const(c), Some((&first, rest))) => (
            LocBase::Address((c as u64).wrapping_add(first as u64)),
            rest.to_vec(),
        ),
        (Start::Const(c), None) => (LocBase::Const(c), Vec::new()),
    };
    ArgLocation {
        base,
        derefs,
        size,
        signed,
        global,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    /// Inputs the `dwarf` fuzz target crashed on (see `fuzz/README.md`), each with what it
    /// broke, run through the target's steps: now errors or results, never a panic.
    const FUZZ_REGRESSIONS: &[(&str, &[u8])] = &[(
        // gcc -O2 chain.c with a DW_AT_high_pc length that overflows DW_AT_low_pc: gimli's
        // `die_ranges` added them unchecked.
        "high_pc_overflow",
        include_bytes!("regressions/high_pc_overflow"),
    )];

    #[test]
    fn fuzz_regressions() {
        use crate::probe::{self, Section};
        let specs = [
            "generic_perform_write file->f_mapping->a_ops bytes offset chunk",
            "generic_perform_write:5 chunk written",
            "generic_perform_write%return $retval",
            "main argc argv[0]:string",
            "process:8 slot i offset",
            "twice zz",
        ];
        for (name, bytes) in FUZZ_REGRESSIONS {
            let elf = Elf::parse(bytes).unwrap();
            let sections = DebugSections::load(&elf).unwrap();
            let r = Resolver::new(&elf, &sections).unwrap();
            for spec in specs {
                let Ok(Section::Probe(p)) = probe::parse(spec) else {
                    panic!("{name}: {spec}")
                };
                if let Ok(sites) = r.resolve_spec(&p) {
                    for a in sites.iter().flat_map(|s| &s.args) {
                        let _ = a.fetch_arg(r.arch(), super::super::FetchSyntax::Perf);
                    }
                }
            }
        }
    }

    #[test]
    fn constants() {
        assert_eq!(le_value(&[0xff]), Some(-1));
        assert_eq!(le_value(&[0x2a, 0]), Some(42));
        assert_eq!(le_value(&[]), None);
        assert_eq!(le_value(&[0; 9]), None);
    }

    #[test]
    fn finishing() {
        // `file->f_mapping->a_ops`, file in %di.
        let v = Val::Memory(Start::Reg(5, 0), alloc::vec![248], 104);
        let l = finish(v, 8, false, String::new());
        assert_eq!(
            l.base,
            LocBase::Register {
                dwarf_reg: 5,
                offset: 0
            }
        );
        assert_eq!(l.derefs, alloc::vec![248, 104]);
        // An -O0 local: CFA (rbp+16) - 56.
        let l = finish(
            Val::Memory(Start::Cfa(6, 16), Vec::new(), -56),
            4,
            true,
            String::new(),
        );
        assert_eq!(
            l.base,
            LocBase::FrameSlot {
                cfa_reg: 6,
                cfa_offset: 16,
                offset: -56
            }
        );
        assert!(l.derefs.is_empty());
        // A global's member.
        let l = finish(
            Val::Memory(Start::Addr(0x4000), Vec::new(), 16),
            1,
            false,
            "g".into(),
        );
        assert_eq!(l.base, LocBase::Address(0x4010));
        assert_eq!(l.global, Some(("g".into(), 16)));
        // A frame base register with an offset folds into the first read.
        let l = finish(
            Val::Memory(Start::Reg(7, 8), Vec::new(), 4),
            4,
            false,
            String::new(),
        );
        assert_eq!(l.derefs, alloc::vec![12]);
    }
}
