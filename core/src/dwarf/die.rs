//! Reads of one DIE: its entry, where its references point, its strings, its name and
//! integer attributes through the DIEs it copies, its address ranges and entry address.

use alloc::vec::Vec;

use gimli::constants as dw;
use gimli::AttributeValue;

use super::error::{gimli_err, Error};
use super::index;
use super::resolver::{DieRef, Resolver, R};

/// Deepest nesting of lexical blocks walked, and longest chain of references followed.
pub const MAX_DEPTH: u32 = 64;

impl<'s> Resolver<'s> {
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
    pub(super) fn name_of(&self, die: DieRef) -> Result<Option<&'s [u8]>, Error> {
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
    pub(super) fn udata_of(&self, die: DieRef, attr: gimli::DwAt) -> Result<Option<u64>, Error> {
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
    pub(super) fn ranges(&self, die: DieRef) -> Result<Vec<(u64, u64)>, Error> {
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
    pub(super) fn entry_pc(&self, die: DieRef) -> Result<Option<u64>, Error> {
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

    /// A DIE's offset in `.debug_info` (a key unique across units).
    pub(super) fn die_key(&self, die: DieRef) -> usize {
        let start = self
            .units
            .get()
            .and_then(|u| u.starts.get(die.unit))
            .copied()
            .unwrap_or(0);
        start.saturating_add(die.offset.0)
    }
}

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
