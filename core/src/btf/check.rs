//! The one-pass check of a `.BTF` type section: walk, index and validate together.
//!
//! [`Btf::parse`](super::Btf::parse) walks the records (kind and extent of each), then
//! validates each type, reading every name as a string of its own. That is the reference
//! and the only path that reports errors. The pass here accepts exactly what it accepts in
//! the common case — the section in the target's byte order and its string section UTF-8
//! as a whole — in one loop over the records, with what it has to check at the end kept in
//! a few running maxima:
//! - a name is valid when its offset is inside the string section and on a character
//!   boundary (the string from there up to its NUL is UTF-8 because the whole section
//!   is). When the section is ASCII, which a word-wide OR over it tells, every offset is a
//!   boundary: only the largest name offset is compared with the length, at the end.
//!   Otherwise each name's first byte is looked at.
//! - a referenced id is checked against the count once at the end: the largest id where
//!   void is allowed, and the largest `id - 1` (wrapping, so void is `u32::MAX`) where it
//!   is not.
//! - the kind a FUNC or DATASEC entry refers to is known when a FUNC refers to the last
//!   FUNC_PROTO read (compilers write each right before its FUNC), else read from the
//!   index when the id points backwards (the usual order), by a second short pass
//!   otherwise.
//!
//! The record's kind and the unused bits of `info` are told apart by one `match` on
//! `info & 0x7fff_0000` (the kind flag, bit 31, is free). Anything unusual and every error
//! returns `None`, and the caller runs the reference path, so results and errors stay
//! exactly those of the reference.

/// What the check learned besides the index.
pub(crate) struct Checked {
    pub(crate) count: u32,
    pub(crate) ptr_size: u32,
    pub(crate) datasecs: Datasecs,
}

/// A native `u32` from 4 bytes.
#[inline(always)]
fn w4(b: &[u8; 4]) -> u32 {
    u32::from_ne_bytes(*b)
}

/// The two native `u32`s of 8 bytes.
#[inline(always)]
fn w8(b: &[u8; 8]) -> (u32, u32) {
    (word(b, 0), word(b, 4))
}

/// The three native `u32`s of 12 bytes.
#[inline(always)]
fn w12(b: &[u8; 12]) -> (u32, u32, u32) {
    (word(b, 0), word(b, 4), word(b, 8))
}

/// The native `u32` at `at` of `b` (0 past the end: only read at offsets the walk
/// indexed).
#[inline(always)]
fn word(b: &[u8], at: usize) -> u32 {
    b.get(at..).and_then(<[u8]>::first_chunk).map_or(0, w4)
}

/// The kind number of the record at `offset` (read natively): the top byte of `info`.
#[inline(always)]
fn kind_at(types: &[u8], offset: u32) -> u8 {
    let at = if cfg!(target_endian = "little") { 7 } else { 4 };
    // Checked: `offset + at` may not fit a 32-bit `usize` (free where it always fits).
    (offset as usize)
        .checked_add(at)
        .and_then(|i| types.get(i))
        .map_or(0, |b| b & 0x1f)
}

const INT: u8 = 1;
const FUNC: u8 = 12;
const FUNC_PROTO: u8 = 13;
const VAR: u8 = 14;
const DATASEC: u8 = 15;

/// `info & 0x7fff_0000` of a record of kind `kind` whose unused bits are clear.
const fn k(kind: u8) -> u32 {
    (kind as u32) << 24
}
const K_INT: u32 = k(INT);
const K_PTR: u32 = k(2);
const K_ARRAY: u32 = k(3);
const K_STRUCT: u32 = k(4);
const K_UNION: u32 = k(5);
const K_ENUM: u32 = k(6);
const K_FWD: u32 = k(7);
const K_TYPEDEF: u32 = k(8);
const K_VOLATILE: u32 = k(9);
const K_CONST: u32 = k(10);
const K_RESTRICT: u32 = k(11);
const K_FUNC: u32 = k(FUNC);
const K_FUNC_PROTO: u32 = k(FUNC_PROTO);
const K_VAR: u32 = k(VAR);
const K_DATASEC: u32 = k(DATASEC);
const K_FLOAT: u32 = k(16);
const K_DECL_TAG: u32 = k(17);
const K_TYPE_TAG: u32 = k(18);
const K_ENUM64: u32 = k(19);

/// The `N`-byte arrays of a `chunks_exact(N)`.
#[inline(always)]
fn chunks<const N: usize>(c: core::slice::ChunksExact<'_, u8>) -> impl Iterator<Item = &[u8; N]> {
    c.filter_map(<[u8]>::first_chunk)
}

/// Whether every byte of `s` is ASCII: an OR of its 64-byte blocks as 16-byte words, then
/// of its 8-byte words and of its last 8 bytes for the rest, with no early exit.
#[inline(always)]
fn ascii(s: &[u8]) -> bool {
    let q = |b: &[u8], at: usize| {
        b.get(at..)
            .and_then(<[u8]>::first_chunk::<16>)
            .map_or(0, |w| u128::from_ne_bytes(*w))
    };
    let blocks = s.chunks_exact(64);
    let rest = blocks.remainder();
    let wide =
        chunks::<64>(blocks).fold(0u128, |a, b| a | q(b, 0) | q(b, 16) | q(b, 32) | q(b, 48));
    let words = rest.chunks_exact(8);
    let tail = words.remainder();
    let mut acc = chunks::<8>(words).fold((wide | (wide >> 64)) as u64, |a, w| {
        a | u64::from_ne_bytes(*w)
    });
    if !tail.is_empty() {
        acc |= match s.last_chunk::<8>() {
            Some(w) => u64::from_ne_bytes(*w),
            None => tail.iter().fold(0, |a, &b| a | u64::from(b)),
        };
    }
    acc & 0x8080_8080_8080_8080 == 0
}

/// Checks `types` (native byte order) against `strings` and writes the record offsets to
/// `index` (`index[id - 1]`); `None` for anything the reference path must look at (see the
/// module docs), and when `index` is too short.
pub(crate) fn check(types: &[u8], strings: &[u8], index: &mut [u32]) -> Option<Checked> {
    if ascii(strings) {
        walk::<true>(types, strings, index)
    } else {
        walk_utf8(types, strings, index)
    }
}

/// [`walk`] for a string section that is not ASCII.
#[cold]
#[inline(never)]
fn walk_utf8(types: &[u8], strings: &[u8], index: &mut [u32]) -> Option<Checked> {
    core::str::from_utf8(strings).ok()?;
    walk::<false>(types, strings, index)
}

/// The pass (see the module docs); `ASCII`: the string section is ASCII.
#[inline(always)]
fn walk<const ASCII: bool>(types: &[u8], strings: &[u8], index: &mut [u32]) -> Option<Checked> {
    let mut rest = types;
    // Types indexed so far: the id of the one being read, once pushed.
    let mut n: u32 = 0;
    // The largest `id - 1` referenced where void is not allowed (wrapping: void is then
    // `u32::MAX`).
    let mut refs: u32 = 0;
    // The largest id referenced where void is allowed.
    let mut void_refs: u32 = 0;
    // The largest name offset (ASCII).
    let mut names: u32 = 0;
    let mut forward = false;
    // The id of the last FUNC_PROTO read (0: none).
    let mut proto = 0u32;
    let mut ptr_size = 0u32;
    let mut datasecs = Datasecs::new();
    macro_rules! name {
        ($off:expr) => {{
            let off: u32 = $off;
            if ASCII {
                names = names.max(off);
            } else if !strings
                .get(off as usize)
                .is_some_and(|&b| (b as i8) >= -0x40)
            {
                // Not on a character boundary: a UTF-8 continuation byte (0x80..=0xbf).
                return None;
            }
        }};
    }
    // The kind of the earlier type `t` must satisfy `ok`; a later one is checked by the
    // second pass. Void is refused.
    macro_rules! kind_ref {
        ($t:expr, $ok:pat) => {{
            let t: u32 = $t;
            let i = t.wrapping_sub(1);
            if i < n {
                let off = *index.get(i as usize)?;
                if !matches!(kind_at(types, off), $ok) {
                    return None;
                }
            } else {
                forward = true;
            }
            refs = refs.max(t.wrapping_sub(1));
        }};
    }
    while let Some((h, body)) = rest.split_first_chunk::<12>() {
        let (name, info, third) = w12(h);
        *index.get_mut(n as usize)? = (types.len() - rest.len()) as u32;
        n += 1;
        name!(name);
        let vlen = (info & 0xffff) as usize;
        rest = match info & 0x7fff_0000 {
            // INT: size, encoding word.
            K_INT => {
                let (e, r) = body.split_first_chunk::<4>()?;
                let w = w4(e);
                let (bits, bit_off) = (w & 0xff, (w >> 16) & 0xff);
                if !matches!(third, 1 | 2 | 4 | 8 | 16)
                    || w & 0xf800_ff00 != 0
                    || bits > 128
                    || bit_off + bits > third * 8
                {
                    return None;
                }
                if ptr_size == 0 && (third == 4 || third == 8) && long_name(strings, name) {
                    ptr_size = third;
                }
                r
            }
            // PTR, TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG: void allowed.
            K_PTR | K_TYPEDEF | K_VOLATILE | K_CONST | K_RESTRICT | K_TYPE_TAG => {
                void_refs = void_refs.max(third);
                body
            }
            // ARRAY: element and index types, neither void.
            K_ARRAY => {
                let (a, r) = body.split_first_chunk::<12>()?;
                let (elem, idx, _) = w12(a);
                refs = refs.max(elem.wrapping_sub(1)).max(idx.wrapping_sub(1));
                r
            }
            // STRUCT, UNION: members (name, type, offset), types not void.
            K_STRUCT | K_UNION => {
                let (m, r) = body.split_at_checked(12 * vlen)?;
                for e in chunks::<12>(m.chunks_exact(12)) {
                    let (name, t, _) = w12(e);
                    name!(name);
                    refs = refs.max(t.wrapping_sub(1));
                }
                r
            }
            // ENUM: (name, value).
            K_ENUM => {
                let (v, r) = body.split_at_checked(8 * vlen)?;
                if !matches!(third, 1 | 2 | 4 | 8) {
                    return None;
                }
                for e in chunks::<8>(v.chunks_exact(8)) {
                    name!(w8(e).0);
                }
                r
            }
            // ENUM64: (name, lo, hi).
            K_ENUM64 => {
                let (v, r) = body.split_at_checked(12 * vlen)?;
                if !matches!(third, 1 | 2 | 4 | 8) {
                    return None;
                }
                for e in chunks::<12>(v.chunks_exact(12)) {
                    name!(w12(e).0);
                }
                r
            }
            K_FWD => body,
            K_FLOAT => {
                if !matches!(third, 2 | 4 | 8 | 12 | 16) {
                    return None;
                }
                body
            }
            // FUNC: a FUNC_PROTO, linkage 0..=2.
            K_FUNC => {
                if vlen > 2 {
                    return None;
                }
                // Usually the FUNC_PROTO just read.
                if third == proto {
                    refs = refs.max(third.wrapping_sub(1));
                } else {
                    kind_ref!(third, FUNC_PROTO);
                }
                body
            }
            // FUNC_PROTO: return type and parameters (name, type), void allowed.
            K_FUNC_PROTO => {
                let (p, r) = body.split_at_checked(8 * vlen)?;
                proto = n;
                void_refs = void_refs.max(third);
                for e in chunks::<8>(p.chunks_exact(8)) {
                    let (name, t) = w8(e);
                    name!(name);
                    void_refs = void_refs.max(t);
                }
                r
            }
            // VAR: a type, linkage 0..=2.
            K_VAR => {
                let (l, r) = body.split_first_chunk::<4>()?;
                if w4(l) > 2 {
                    return None;
                }
                refs = refs.max(third.wrapping_sub(1));
                r
            }
            // DATASEC: variables (type, offset, size), each a VAR or FUNC.
            K_DATASEC => {
                let (v, r) = body.split_at_checked(12 * vlen)?;
                for e in chunks::<12>(v.chunks_exact(12)) {
                    kind_ref!(w12(e).0, VAR | FUNC);
                }
                datasecs.push(n);
                r
            }
            // DECL_TAG: a type, component index at least -1.
            K_DECL_TAG => {
                let (c, r) = body.split_first_chunk::<4>()?;
                if (w4(c) as i32) < -1 {
                    return None;
                }
                refs = refs.max(third.wrapping_sub(1));
                r
            }
            _ => return None,
        };
    }
    let count = n;
    if !rest.is_empty()
        || (refs >= count && count > 0)
        || void_refs > count
        || (ASCII && names as usize >= strings.len())
        || (forward && !forward_kinds(types, index.get(..n as usize)?))
    {
        return None;
    }
    Some(Checked {
        count,
        ptr_size: if ptr_size == 0 { 8 } else { ptr_size },
        datasecs,
    })
}

/// Whether the string at `off` is one of libbpf's names of `long` (see `is_long_name`):
/// told apart on its first four bytes and its length, then compared.
#[inline(always)]
pub(super) fn long_name(strings: &[u8], off: u32) -> bool {
    let tail = strings.get(off as usize..).unwrap_or_default();
    // Then on where the NUL may be: "long" 4, "long int" 8, "long unsigned" 13, the
    // three-word names 17; "int long" 8, "unsigned long" 13.
    let nul = |at: usize| tail.get(at).is_none_or(|&b| b == 0);
    let maybe = match tail.first_chunk::<4>() {
        Some(b"long") => nul(4) || nul(8) || nul(13) || nul(17),
        Some(b"int ") => nul(8) || nul(17),
        Some(b"unsi") => nul(13) || nul(17),
        _ => false,
    };
    maybe && long_tail(tail)
}

/// [`long_name`] past its first four bytes.
#[inline(never)]
fn long_tail(tail: &[u8]) -> bool {
    // The longest of the names has 17 bytes.
    let tail = tail.get(..18).unwrap_or(tail);
    let len = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
    is_long_name(tail.get(..len).unwrap_or_default())
}

/// The kind checks of FUNC and DATASEC whose targets come later: a second pass over the
/// indexed types (ids all in range and not void by now).
#[cold]
fn forward_kinds(types: &[u8], index: &[u32]) -> bool {
    let kind_of = |t: u32| {
        let i = (t as usize).checked_sub(1)?;
        index.get(i).map(|&o| kind_at(types, o))
    };
    index.iter().all(|&off| {
        let off = off as usize;
        let info = word(types, off + 4);
        match ((info >> 24) & 0x1f) as u8 {
            FUNC => kind_of(word(types, off + 8)) == Some(FUNC_PROTO),
            DATASEC => {
                let vlen = (info & 0xffff) as usize;
                let v = types
                    .get(off + 12..off + 12 + 12 * vlen)
                    .unwrap_or_default();
                chunks::<12>(v.chunks_exact(12))
                    .all(|e| matches!(kind_of(w12(e).0), Some(VAR | FUNC)))
            }
            _ => true,
        }
    })
}

/// Most DATASEC ids a [`Btf`] remembers (`.maps`, `.rodata`, `.data`, `.bss`, `.kconfig`
/// and a few named sections); with more, [`Btf::find`] scans every type.
pub(super) const DATASECS: usize = 8;

/// The ids of the DATASECs of a [`Btf`], when known.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Datasecs {
    ids: [u32; DATASECS],
    len: u8,
    /// Every DATASEC is in `ids`.
    complete: bool,
}

impl Datasecs {
    /// None seen yet; complete until one does not fit.
    pub(crate) const fn new() -> Self {
        Datasecs {
            ids: [0; DATASECS],
            len: 0,
            complete: true,
        }
    }

    /// Unknown: [`Btf::find`] scans every type.
    pub(super) const fn unknown() -> Self {
        Datasecs {
            ids: [0; DATASECS],
            len: 0,
            complete: false,
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, id: u32) {
        match self.ids.get_mut(usize::from(self.len)) {
            Some(slot) => {
                *slot = id;
                self.len += 1;
            }
            None => self.complete = false,
        }
    }

    pub(super) fn known(&self) -> Option<&[u32]> {
        self.complete
            .then(|| self.ids.get(..usize::from(self.len)))
            .flatten()
    }
}

/// libbpf's `determine_ptr_size` names.
pub(super) fn is_long_name(name: &[u8]) -> bool {
    matches!(
        name,
        b"long"
            | b"long int"
            | b"int long"
            | b"unsigned long"
            | b"long unsigned"
            | b"unsigned long int"
            | b"unsigned int long"
            | b"long unsigned int"
            | b"long int unsigned"
            | b"int unsigned long"
            | b"int long unsigned"
    )
}
