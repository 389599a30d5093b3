//! Probe sites: the instances of a function with code (out of line, every inlined copy) and
//! the addresses of a place in each (`FUNC` after the prologue as `perf probe` skips it,
//! `+OFF`, `%return`, `:LINE`).

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use gimli::constants as dw;
use gimli::AttributeValue;

use super::error::{gimli_err, Error};
use super::resolver::{DieRef, PrologueSkip, Resolver};
use crate::probe::Place;

/// A function found in the debug info: its DIE, and the concrete subprogram around it (the
/// same DIE for an out-of-line function) whose frame base its variables use.
#[derive(Clone, Copy, Debug)]
pub(super) struct Site {
    pub(super) die: DieRef,
    pub(super) outer: Option<DieRef>,
    pub(super) inlined: bool,
}

/// One row of a unit's line table: what placing `FUNC` and `FUNC:LINE` reads of it.
#[derive(Clone, Copy, Debug)]
pub(super) struct LineRow {
    pub(super) address: u64,
    pub(super) line: u64,
    pub(super) file: u64,
    pub(super) is_stmt: bool,
    pub(super) prologue_end: bool,
    pub(super) end_sequence: bool,
}

impl<'s> Resolver<'s> {
    /// Every function instance named `func`: out-of-line subprograms with code, and inlined
    /// instances, in `.debug_info` order.
    pub(super) fn find_sites(&self, func: &str) -> Result<Vec<Site>, Error> {
        let mut sites = Vec::new();
        for index in self.candidate_units(func.as_bytes())? {
            self.unit_sites(index, func.as_bytes(), &mut sites)?;
        }
        Ok(sites)
    }

    /// The sites of `func` in one unit. A raw walk: only subprograms and inlined
    /// subroutines have their attributes read, every other DIE's are skipped by their
    /// forms' sizes, and a name reached through an origin is looked up once per origin.
    pub(super) fn unit_sites(
        &self,
        index: usize,
        func: &[u8],
        sites: &mut Vec<Site>,
    ) -> Result<(), Error> {
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

    pub(super) fn line_rows(&self, unit_index: usize) -> Result<Vec<LineRow>, Error> {
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
    pub(super) fn file_name(&self, unit_index: usize, index: u64) -> Option<&'s [u8]> {
        let unit = self.unit(unit_index).ok()?;
        let header = unit.line_program.as_ref()?.header();
        let file = header.file(index)?;
        let path = self.dwarf.attr_string(unit, file.path_name()).ok()?.slice();
        Some(path.rsplit(|&b| b == b'/').next().unwrap_or(path))
    }

    /// Whether the unit was optimized: its producer says so (`-O` not followed by `0`), or,
    /// as `perf probe` decides (`die_is_optimized_target`), a variable of it has a location
    /// list (clang records no flags in `DW_AT_producer`).
    pub(super) fn optimized(&self, unit_index: usize) -> Result<bool, Error> {
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
    pub(super) fn after_prologue(&self, site: &Site, entry: u64) -> Result<u64, Error> {
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
    pub(super) fn nested_inlines(&self, die: DieRef) -> Result<Vec<DieRef>, Error> {
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
    pub(super) fn call_line(
        &self,
        inline: DieRef,
        want_file: Option<&[u8]>,
    ) -> Result<Option<u64>, Error> {
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

    /// Whose line `line` (absolute) is, as `FUNC:LINE`: a line before `func`'s
    /// declaration (`decl`, in `file`) at `addr` inside a function inlined there is that
    /// function's own (the innermost such instance, declared in the same file at or before
    /// the line); any other is `func`'s, relative to its declaration.
    fn line_owner(
        &self,
        func: &str,
        (decl, file): (u64, Option<&[u8]>),
        nested: &[DieRef],
        addr: u64,
        line: u64,
    ) -> Result<(String, i64), Error> {
        let rel = |l: u64, d: u64| {
            i64::try_from(l)
                .unwrap_or(i64::MAX)
                .saturating_sub(i64::try_from(d).unwrap_or(i64::MAX))
        };
        if line < decl {
            // Depth-first order: the innermost instance holding the address comes last.
            for &inline in nested.iter().rev() {
                if !self
                    .ranges(inline)?
                    .iter()
                    .any(|&(b, e)| addr >= b && addr < e)
                {
                    continue;
                }
                let Some(d) = self.udata_of(inline, dw::DW_AT_decl_line)? else {
                    continue;
                };
                let f = self.udata_of(inline, dw::DW_AT_decl_file)?;
                let same_file =
                    file.is_none() || f.and_then(|f| self.file_name(inline.unit, f)) == file;
                if d <= line && same_file {
                    if let Some(name) = self.name_of(inline)? {
                        return Ok((String::from_utf8_lossy(name).into_owned(), rel(line, d)));
                    }
                }
            }
        }
        Ok((String::from(func), rel(line, decl)))
    }

    /// The addresses of `place` in one function instance.
    pub(super) fn addresses(
        &self,
        func: &str,
        site: &Site,
        place: Place,
    ) -> Result<Vec<u64>, Error> {
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
                        let (owner_function, owner_line) =
                            self.line_owner(func, (decl, want_file), &nested, addr, line)?;
                        return Err(Error::SharedLine {
                            function: String::from(func),
                            line: u64::from(rel),
                            address: addr,
                            owner_function,
                            owner_line,
                            // Told by the resolver, which tries it ([`Resolver::resolve`]).
                            probeable: false,
                        });
                    }
                }
                out.sort_unstable();
                out.dedup();
                out
            }
        })
    }
}
