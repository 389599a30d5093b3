//! The one-pass check of a `.BTF` type section: walk, index and validate together.
//!
//! [`Btf::parse`](super::Btf::parse) walks the records (kind and extent of each), then
//! validates each type, reading every name as a string of its own. That is the reference
//! and the only path that reports errors. The pass here accepts exactly what it accepts in
//! the common case — the section in the target's byte order and its string section UTF-8
//! as a whole — in one loop over the records: a name is then valid when its offset is
//! inside the section and on a character boundary (the string from there up to its NUL is
//! UTF-8 because the whole section is), a referenced id is checked against the count once
//! at the end (the largest id referenced), and the kind a FUNC or DATASEC entry refers to
//! is read from the index when the id points backwards (the usual order), by a second
//! short pass otherwise. Anything unusual and every error returns `None`, and the caller
//! runs the reference path, so results and errors stay exactly those of the reference.

use super::{is_long_name, Datasecs};

/// Where the check writes the record offsets (`index[id - 1]`), and reads back those of
/// the types already seen.
pub(crate) trait TypeIndex {
    /// Appends the offset of the next type; `false` when full.
    fn push(&mut self, offset: u32) -> bool;
    /// The offset of type `id` (1-based) if already pushed.
    fn get(&self, id: u32) -> Option<u32>;
}

/// A caller's slice and how much of it is filled.
pub(crate) struct SliceIndex<'i> {
    pub(crate) buf: &'i mut [u32],
    pub(crate) len: usize,
}

impl TypeIndex for SliceIndex<'_> {
    #[inline(always)]
    fn push(&mut self, offset: u32) -> bool {
        match self.buf.get_mut(self.len) {
            Some(slot) => {
                *slot = offset;
                self.len += 1;
                true
            }
            None => false,
        }
    }
    #[inline(always)]
    fn get(&self, id: u32) -> Option<u32> {
        let i = (id as usize).checked_sub(1).filter(|&i| i < self.len)?;
        self.buf.get(i).copied()
    }
}

impl TypeIndex for heapless::vec::VecView<u32> {
    #[inline(always)]
    fn push(&mut self, offset: u32) -> bool {
        heapless::vec::VecView::push(self, offset).is_ok()
    }
    #[inline(always)]
    fn get(&self, id: u32) -> Option<u32> {
        self.as_slice().get((id as usize).checked_sub(1)?).copied()
    }
}

/// What the check learned besides the index.
pub(crate) struct Checked {
    pub(crate) count: u32,
    pub(crate) ptr_size: u32,
    pub(crate) datasecs: Datasecs,
}

#[inline(always)]
fn word(b: &[u8], at: usize) -> u32 {
    match b.get(at..).and_then(<[u8]>::first_chunk::<4>) {
        Some(w) => u32::from_ne_bytes(*w),
        None => 0,
    }
}

/// The kind number of the record at `offset` (read natively).
#[inline(always)]
fn kind_at(types: &[u8], offset: u32) -> u8 {
    ((word(types, offset as usize + 4) >> 24) & 0x1f) as u8
}

const INT: u8 = 1;
const FUNC: u8 = 12;
const FUNC_PROTO: u8 = 13;
const VAR: u8 = 14;
const DATASEC: u8 = 15;

/// Checks `types` (native byte order) against `strings` and writes the index; `None` for
/// anything the reference path must look at (see the module docs).
pub(crate) fn check<I: TypeIndex + ?Sized>(
    types: &[u8],
    strings: &[u8],
    index: &mut I,
) -> Option<Checked> {
    if core::str::from_utf8(strings).is_err() {
        return None;
    }
    // On a character boundary: not a UTF-8 continuation byte (0x80..=0xbf).
    let name_ok = |off: u32| {
        strings
            .get(off as usize)
            .is_some_and(|&b| (b as i8) >= -0x40)
    };
    let mut off = 0usize;
    let mut id: u32 = 0;
    // Every referenced id must be at most the count, known at the end.
    let mut max_ref: u32 = 0;
    let mut forward = false;
    let mut ptr_size = 0u32;
    let mut datasecs = Datasecs::new();
    while off < types.len() {
        let h = types.get(off..)?.first_chunk::<12>()?;
        let (name, info, third) = (word(h, 0), word(h, 4), word(h, 8));
        id += 1;
        if info & 0x60ff_0000 != 0 || !name_ok(name) || !index.push(off as u32) {
            return None;
        }
        let kind = ((info >> 24) & 0x1f) as u8;
        let vlen = (info & 0xffff) as usize;
        let body = off + 12;
        // Entries of `size` bytes after the header.
        let entries = |size: usize| types.get(body..body.checked_add(size * vlen)?);
        off = match kind {
            // INT: size, encoding word.
            INT => {
                let w = word(types.get(body..)?.first_chunk::<4>()?, 0);
                let (bits, bit_off) = (w & 0xff, (w >> 16) & 0xff);
                if !matches!(third, 1 | 2 | 4 | 8 | 16)
                    || w & 0xf800_ff00 != 0
                    || bits > 128
                    || bit_off + bits > third * 8
                {
                    return None;
                }
                if ptr_size == 0 && (third == 4 || third == 8) {
                    let tail = strings.get(name as usize..).unwrap_or_default();
                    let len = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
                    if is_long_name(tail.get(..len).unwrap_or_default()) {
                        ptr_size = third;
                    }
                }
                body + 4
            }
            // PTR, TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG: void allowed.
            2 | 8 | 9 | 10 | 11 | 18 => {
                max_ref = max_ref.max(third);
                body
            }
            // ARRAY: element and index types, neither void.
            3 => {
                let a = types.get(body..)?.first_chunk::<12>()?;
                let (elem, idx) = (word(a, 0), word(a, 4));
                if elem == 0 || idx == 0 {
                    return None;
                }
                max_ref = max_ref.max(elem).max(idx);
                body + 12
            }
            // STRUCT, UNION: members (name, type, offset), types not void.
            4 | 5 => {
                let m = entries(12)?;
                for e in m.chunks_exact(12) {
                    let t = word(e, 4);
                    if !name_ok(word(e, 0)) || t == 0 {
                        return None;
                    }
                    max_ref = max_ref.max(t);
                }
                body + m.len()
            }
            // ENUM (name, value) and ENUM64 (name, lo, hi).
            6 | 19 => {
                let size = if kind == 6 { 8 } else { 12 };
                let v = entries(size)?;
                if !matches!(third, 1 | 2 | 4 | 8)
                    || !v.chunks_exact(size).all(|e| name_ok(word(e, 0)))
                {
                    return None;
                }
                body + v.len()
            }
            // FWD.
            7 => body,
            // FLOAT.
            16 => {
                if !matches!(third, 2 | 4 | 8 | 12 | 16) {
                    return None;
                }
                body
            }
            // FUNC: a FUNC_PROTO, linkage 0..=2.
            FUNC => {
                if third == 0 || vlen > 2 {
                    return None;
                }
                if third < id {
                    if kind_at(types, index.get(third)?) != FUNC_PROTO {
                        return None;
                    }
                } else {
                    forward = true;
                }
                max_ref = max_ref.max(third);
                body
            }
            // FUNC_PROTO: return type and parameters (name, type), void allowed.
            FUNC_PROTO => {
                let p = entries(8)?;
                max_ref = max_ref.max(third);
                for e in p.chunks_exact(8) {
                    if !name_ok(word(e, 0)) {
                        return None;
                    }
                    max_ref = max_ref.max(word(e, 4));
                }
                body + p.len()
            }
            // VAR: a type, linkage 0..=2.
            VAR => {
                let linkage = word(types.get(body..)?.first_chunk::<4>()?, 0);
                if third == 0 || linkage > 2 {
                    return None;
                }
                max_ref = max_ref.max(third);
                body + 4
            }
            // DATASEC: variables (type, offset, size), each a VAR or FUNC.
            DATASEC => {
                let v = entries(12)?;
                for e in v.chunks_exact(12) {
                    let t = word(e, 0);
                    if t == 0 {
                        return None;
                    }
                    if t < id {
                        if !matches!(kind_at(types, index.get(t)?), VAR | FUNC) {
                            return None;
                        }
                    } else {
                        forward = true;
                    }
                    max_ref = max_ref.max(t);
                }
                datasecs.push(id);
                body + v.len()
            }
            // DECL_TAG: a type, component index at least -1.
            17 => {
                let component = word(types.get(body..)?.first_chunk::<4>()?, 0) as i32;
                if third == 0 || component < -1 {
                    return None;
                }
                max_ref = max_ref.max(third);
                body + 4
            }
            _ => return None,
        };
    }
    if max_ref > id || (forward && !forward_kinds(types, index, id)) {
        return None;
    }
    Some(Checked {
        count: id,
        ptr_size: if ptr_size == 0 { 8 } else { ptr_size },
        datasecs,
    })
}

/// The kind checks of FUNC and DATASEC whose targets come later: a second pass over the
/// indexed types (ids all in range by now).
#[cold]
fn forward_kinds<I: TypeIndex + ?Sized>(types: &[u8], index: &I, count: u32) -> bool {
    let kind_of = |t: u32| index.get(t).map(|o| kind_at(types, o));
    (1..=count).all(|id| {
        let Some(off) = index.get(id) else {
            return false;
        };
        let off = off as usize;
        let info = word(types, off + 4);
        match ((info >> 24) & 0x1f) as u8 {
            FUNC => kind_of(word(types, off + 8)) == Some(FUNC_PROTO),
            DATASEC => {
                let vlen = (info & 0xffff) as usize;
                let v = types
                    .get(off + 12..off + 12 + 12 * vlen)
                    .unwrap_or_default();
                v.chunks_exact(12)
                    .all(|e| matches!(kind_of(word(e, 0)), Some(VAR | FUNC)))
            }
            _ => true,
        }
    })
}
