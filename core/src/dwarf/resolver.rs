//! The resolver of one ELF file's DWARF: its units, found in one walk and each parsed when
//! first read, and the units that may hold a name (the grep of the module `index`).

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use gimli::{EndianSlice, RunTimeEndian, Section as _, UnitOffset};

use core::cell::{OnceCell, RefCell};

use super::error::{gimli_err, Error};
use super::index;
use super::sections::{DebugSections, NAMES};
use crate::arch::Arch;
use crate::elf::Elf;

pub(super) type R<'s> = EndianSlice<'s, RunTimeEndian>;

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
pub(super) struct Units<'s> {
    pub(super) headers: Vec<gimli::UnitHeader<R<'s>>>,
    /// Start of each unit in `.debug_info`, for `DW_FORM_ref_addr` and the grep's hits.
    pub(super) starts: Vec<usize>,
    pub(super) parsed: Vec<OnceCell<gimli::Unit<R<'s>>>>,
}

/// Resolves probe points and variable locations in one ELF file's DWARF.
///
/// Nothing is parsed up front: the unit headers are walked by the first lookup (in the same
/// pass as its grep), a unit is parsed when a DIE of it is first read, and compressed
/// sections other than those every lookup reads (`.debug_info`, `.debug_abbrev`, the
/// strings, `.debug_line`, `.debug_addr`) are inflated when first needed.
pub struct Resolver<'s> {
    pub(super) arch: Arch,
    pub(super) code: Elf<'s>,
    pub(super) debug: &'s DebugSections<'s>,
    /// Every section but the location and range lists.
    pub(super) dwarf: gimli::Dwarf<R<'s>>,
    /// The same with the location and range lists, made when first needed.
    pub(super) lists: OnceCell<gimli::Dwarf<R<'s>>>,
    pub(super) units: OnceCell<Units<'s>>,
    /// Candidate units per name already looked up.
    pub(super) candidates: RefCell<Vec<(Vec<u8>, Vec<usize>)>>,
    /// Globals already looked up, per unit and name.
    pub(super) globals: RefCell<BTreeMap<(usize, String), Option<DieRef>>>,
    pub(super) lookup: Lookup,
    /// Whether the abbreviations allow the grep (see `index::indexable`).
    pub(super) indexable: OnceCell<bool>,
    pub(super) release: Option<Release<'s>>,
    pub(super) skip: PrologueSkip,
    pub(super) endian: RunTimeEndian,
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
        self.code.file_offset(address)
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
    pub(super) fn walk(
        &self,
        grep: Option<&index::Needles>,
    ) -> Result<(&Units<'s>, Vec<usize>), Error> {
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

    pub(super) fn units(&self) -> Result<&Units<'s>, Error> {
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
    pub(super) fn lists(&self) -> Result<&gimli::Dwarf<R<'s>>, Error> {
        if let Some(d) = self.lists.get() {
            return Ok(d);
        }
        let d = load_dwarf(self.debug, self.endian, true)?;
        Ok(self.lists.get_or_init(|| d))
    }

    /// The units that may hold a DIE named `name`, in `.debug_info` order: those the grep
    /// hits (see the module `index`), or every unit.
    pub(super) fn candidate_units(&self, name: &[u8]) -> Result<Vec<usize>, Error> {
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
