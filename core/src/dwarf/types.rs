//! Type walks for member chains: strip typedefs and qualifiers, find members, sizes and signs.

use gimli::constants as dw;

use super::die::origin_of;
use super::error::{gimli_err, Error};
use super::resolver::{DieRef, Resolver, R};

/// Longest chain of typedefs/qualifiers followed, and deepest nesting of anonymous members.
pub(super) const MAX_TYPE_HOPS: u32 = 32;

/// What a stripped type is, for the chain walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A base type: size and signedness.
    Base { size: u64, signed: bool },
    /// A pointer (or C++ reference) to `target` (`None` = void).
    Pointer { target: Option<DieRef> },
    /// A struct, union or class.
    Aggregate,
    /// An array of `elem` (stride = element size).
    Array { elem: Option<DieRef> },
    /// An enumeration of `size` bytes.
    Enum { size: u64 },
    /// Anything else (function types, unspecified types).
    Other,
}

impl Resolver<'_> {
    /// The type a DIE's `DW_AT_type` names (following `DW_AT_abstract_origin` and
    /// `DW_AT_specification` for copies that do not repeat it).
    pub(super) fn type_of(&self, die: DieRef) -> Result<Option<DieRef>, Error> {
        let mut at = die;
        for _ in 0..MAX_TYPE_HOPS {
            let (unit, entry) = self.entry(at)?;
            if let Some(v) = entry
                .attr_value(dw::DW_AT_type)
                .map_err(gimli_err("DW_AT_type"))?
            {
                return Ok(self.reference(at.unit, unit, v));
            }
            match origin_of(&entry)?.and_then(|v| self.reference(at.unit, unit, v)) {
                Some(next) => at = next,
                None => return Ok(None),
            }
        }
        Err(Error::Limit {
            what: "abstract origins in a row",
            limit: MAX_TYPE_HOPS,
        })
    }

    /// Follows typedefs and qualifiers to the type that says what a value is.
    pub(super) fn strip(&self, ty: DieRef) -> Result<(DieRef, Kind), Error> {
        let mut at = ty;
        for _ in 0..MAX_TYPE_HOPS {
            let (unit, entry) = self.entry(at)?;
            let tag = entry.tag();
            let size = || -> Result<Option<u64>, Error> {
                Ok(entry
                    .attr_value(dw::DW_AT_byte_size)
                    .map_err(gimli_err("DW_AT_byte_size"))?
                    .and_then(|v| v.udata_value()))
            };
            let next = || -> Result<Option<DieRef>, Error> {
                Ok(entry
                    .attr_value(dw::DW_AT_type)
                    .map_err(gimli_err("DW_AT_type"))?
                    .and_then(|v| self.reference(at.unit, unit, v)))
            };
            let kind = match tag {
                dw::DW_TAG_typedef
                | dw::DW_TAG_const_type
                | dw::DW_TAG_volatile_type
                | dw::DW_TAG_restrict_type
                | dw::DW_TAG_atomic_type => match next()? {
                    Some(n) => {
                        at = n;
                        continue;
                    }
                    // `const void`, `typedef void T`.
                    None => Kind::Other,
                },
                dw::DW_TAG_base_type => {
                    let enc = entry
                        .attr_value(dw::DW_AT_encoding)
                        .map_err(gimli_err("DW_AT_encoding"))?;
                    let signed = matches!(
                        enc,
                        Some(gimli::AttributeValue::Encoding(
                            dw::DW_ATE_signed | dw::DW_ATE_signed_char
                        ))
                    );
                    Kind::Base {
                        size: size()?.unwrap_or(0),
                        signed,
                    }
                }
                dw::DW_TAG_pointer_type
                | dw::DW_TAG_reference_type
                | dw::DW_TAG_rvalue_reference_type => Kind::Pointer { target: next()? },
                dw::DW_TAG_structure_type | dw::DW_TAG_union_type | dw::DW_TAG_class_type => {
                    Kind::Aggregate
                }
                dw::DW_TAG_array_type => Kind::Array { elem: next()? },
                dw::DW_TAG_enumeration_type => Kind::Enum {
                    size: size()?.unwrap_or(0),
                },
                _ => Kind::Other,
            };
            return Ok((at, kind));
        }
        Err(Error::Limit {
            what: "typedefs and qualifiers in a row",
            limit: MAX_TYPE_HOPS,
        })
    }

    /// Size in bytes of a value of type `ty` (pointers: the unit's address size).
    pub(super) fn size_of(&self, ty: DieRef) -> Result<Option<u64>, Error> {
        let mut at = ty;
        for _ in 0..MAX_TYPE_HOPS {
            let (unit, entry) = self.entry(at)?;
            if let Some(v) = entry
                .attr_value(dw::DW_AT_byte_size)
                .map_err(gimli_err("DW_AT_byte_size"))?
                .and_then(|v| v.udata_value())
            {
                return Ok(Some(v));
            }
            match entry.tag() {
                dw::DW_TAG_pointer_type
                | dw::DW_TAG_reference_type
                | dw::DW_TAG_rvalue_reference_type => {
                    return Ok(Some(u64::from(unit.encoding().address_size)));
                }
                dw::DW_TAG_array_type => return self.array_size(at),
                _ => {}
            }
            match entry
                .attr_value(dw::DW_AT_type)
                .map_err(gimli_err("DW_AT_type"))?
                .and_then(|v| self.reference(at.unit, unit, v))
            {
                Some(n) => at = n,
                None => return Ok(None),
            }
        }
        Err(Error::Limit {
            what: "typedefs and qualifiers in a row",
            limit: MAX_TYPE_HOPS,
        })
    }

    /// Size of an array type: element size times the product of its subrange counts.
    fn array_size(&self, array: DieRef) -> Result<Option<u64>, Error> {
        let Some(elem) = self.type_of(array)? else {
            return Ok(None);
        };
        let Some(mut total) = self.size_of_elem(elem)? else {
            return Ok(None);
        };
        let mut known = true;
        self.subranges(array, MAX_TYPE_HOPS, |count| match count {
            Some(c) => {
                total = total.saturating_mul(c);
                true
            }
            None => {
                known = false;
                false
            }
        })?;
        Ok(known.then_some(total))
    }

    fn size_of_elem(&self, elem: DieRef) -> Result<Option<u64>, Error> {
        self.size_of(elem)
    }

    /// The byte stride of an array's first dimension: the element size times the counts of
    /// the later dimensions.
    pub(super) fn array_stride(&self, array: DieRef) -> Result<Option<u64>, Error> {
        let whole = self.array_size(array)?;
        let mut first = None;
        self.subranges(array, u32::MAX, |count| {
            first = Some(count);
            false
        })?;
        if let Some(stride) = whole
            .zip(first.flatten())
            .and_then(|(w, c)| w.checked_div(c))
        {
            return Ok(Some(stride));
        }
        match self.type_of(array)? {
            Some(elem) => self.size_of(elem),
            None => Ok(None),
        }
    }

    /// Calls `visit` with the count of each `DW_TAG_subrange_type` child of `array` (see
    /// [`subrange_count`]), outermost first, until it returns `false` or `max_children`
    /// children have been looked at.
    fn subranges(
        &self,
        array: DieRef,
        max_children: u32,
        mut visit: impl FnMut(Option<u64>) -> bool,
    ) -> Result<(), Error> {
        let unit = self.unit(array.unit)?;
        let mut tree = unit
            .entries_tree(Some(array.offset))
            .map_err(gimli_err("array type"))?;
        let root = tree.root().map_err(gimli_err("array type"))?;
        let mut children = root.children();
        let mut seen = 0u32;
        while let Some(child) = children.next().map_err(gimli_err("array subrange"))? {
            seen = seen.saturating_add(1);
            if seen > max_children {
                break;
            }
            let e = child.entry();
            if e.tag() == dw::DW_TAG_subrange_type && !visit(subrange_count(e)?) {
                break;
            }
        }
        Ok(())
    }

    /// Finds member `name` of the struct/union `agg` (and inside its anonymous members):
    /// its byte offset and its type DIE.
    pub(super) fn member(
        &self,
        agg: DieRef,
        name: &str,
        depth: u32,
    ) -> Result<Option<(i64, DieRef)>, Error> {
        if depth > MAX_TYPE_HOPS {
            return Err(Error::Limit {
                what: "nested anonymous members",
                limit: MAX_TYPE_HOPS,
            });
        }
        let unit = self.unit(agg.unit)?;
        let mut tree = unit
            .entries_tree(Some(agg.offset))
            .map_err(gimli_err("struct type"))?;
        let root = tree.root().map_err(gimli_err("struct type"))?;
        let mut children = root.children();
        while let Some(child) = children.next().map_err(gimli_err("struct member"))? {
            let e = child.entry();
            if e.tag() != dw::DW_TAG_member {
                continue;
            }
            let here = DieRef {
                unit: agg.unit,
                offset: e.offset(),
            };
            let offset = match e
                .attr_value(dw::DW_AT_data_member_location)
                .map_err(gimli_err("DW_AT_data_member_location"))?
            {
                None => 0,
                Some(gimli::AttributeValue::Exprloc(expr)) => {
                    // `DW_OP_plus_uconst N`, as DWARF 2 producers wrote offsets.
                    let mut ops = expr.operations(unit.encoding());
                    match ops.next() {
                        Ok(Some(gimli::Operation::PlusConstant { value })) => value as i64,
                        _ => {
                            return Err(Error::Unexpressible {
                                what: "member offset expression",
                                value: 0,
                            })
                        }
                    }
                }
                Some(v) => v
                    .sdata_value()
                    .or(v.udata_value().map(|u| u as i64))
                    .unwrap_or(0),
            };
            let member_name = e
                .attr_value(dw::DW_AT_name)
                .map_err(gimli_err("DW_AT_name"))?;
            let ty = e
                .attr_value(dw::DW_AT_type)
                .map_err(gimli_err("DW_AT_type"))?
                .and_then(|v| self.reference(agg.unit, unit, v));
            match member_name {
                Some(v) => {
                    let n = self.string(unit, v)?;
                    if n == name.as_bytes() {
                        let bits = e
                            .attr_value(dw::DW_AT_bit_size)
                            .map_err(gimli_err("DW_AT_bit_size"))?;
                        if bits.is_some() {
                            return Err(Error::NotScalar {
                                name: name.into(),
                                what: "a bit-field",
                            });
                        }
                        return Ok(ty.map(|t| (offset, t)));
                    }
                }
                None => {
                    // An anonymous struct/union: its members are the parent's.
                    let _ = here;
                    if let Some(t) = ty {
                        let (inner, kind) = self.strip(t)?;
                        if kind == Kind::Aggregate {
                            if let Some((off, mt)) = self.member(inner, name, depth + 1)? {
                                return Ok(Some((offset.wrapping_add(off), mt)));
                            }
                        }
                    }
                }
            }
        }
        Ok(None)
    }
}

/// The element count of a `DW_TAG_subrange_type`: its `DW_AT_count`, else
/// `DW_AT_upper_bound + 1`; `None` when it has neither (a flexible array).
fn subrange_count(
    e: &gimli::DebuggingInformationEntry<'_, '_, R<'_>>,
) -> Result<Option<u64>, Error> {
    Ok(
        match e
            .attr_value(dw::DW_AT_count)
            .map_err(gimli_err("DW_AT_count"))?
        {
            Some(v) => v.udata_value(),
            None => e
                .attr_value(dw::DW_AT_upper_bound)
                .map_err(gimli_err("DW_AT_upper_bound"))?
                .and_then(|v| v.udata_value())
                .and_then(|u| u.checked_add(1)),
        },
    )
}
