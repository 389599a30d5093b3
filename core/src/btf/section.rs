//! The `.BTF` section validated and indexed: [`Btf`], its type lookups and the record
//! walk and per-type validation behind [`Btf::parse`].

use scroll::Endian;

use super::check::{self, is_long_name, Datasecs};
use super::error::{BtfError, BtfResult};
use super::header::{self, rd32, Header};
use super::types::{
    record_shape, ArrayInfo, IntInfo, Kind, Strings, Type, INT_BOOL, INT_CHAR, INT_SIGNED,
    TYPE_HEADER_LEN,
};

/// Longest chain [`Btf::resolve`] and [`Btf::size_of`] follow (libbpf's
/// `MAX_RESOLVE_DEPTH`).
pub const MAX_RESOLVE_DEPTH: u32 = 32;

/// A validated `.BTF` section with its type index.
#[derive(Clone, Copy, Debug)]
pub struct Btf<'a> {
    pub(super) header: Header,
    pub(super) endian: Endian,
    pub(super) types: &'a [u8],
    pub(super) strings: Strings<'a>,
    /// `index[id - 1]` = offset of type `id`'s record in `types`.
    pub(super) index: &'a [u32],
    pub(super) ptr_size: u32,
    /// The DATASEC ids, found by the one-pass check: [`Btf::find`] looks for a DATASEC
    /// among these only.
    pub(super) datasecs: Datasecs,
}

impl<'a> Btf<'a> {
    /// Number of types in `data` (a whole `.BTF` section): the length the index buffer of
    /// [`Btf::parse`] needs. Checks the header and every record's extent and kind.
    ///
    /// # Errors
    /// As [`Btf::parse`] for the header and the record walk.
    pub fn count_types(data: &[u8]) -> BtfResult<u32> {
        let header = Header::parse(data)?;
        walk(header.types(data), header.endian(), &mut [], false)
    }

    /// Validates `data` (a whole `.BTF` section) and indexes its types into `index`, which
    /// must hold at least [`Btf::count_types`] entries.
    ///
    /// # Errors
    /// [`BtfError::Truncated`] / [`BtfError::BadHeader`] for the header;
    /// [`BtfError::BadKind`], [`BtfError::BadType`], [`BtfError::BadTypeRef`],
    /// [`BtfError::BadString`] naming the type id; [`BtfError::Capacity`] when `index` is
    /// too short.
    pub fn parse(data: &'a [u8], index: &'a mut [u32]) -> BtfResult<Self> {
        let header = Header::parse(data)?;
        match Self::checked(data, &header, index) {
            Some(c) => Ok(Self::from_checked(data, header, c, index)),
            None => Self::parse_reference(data, header, index),
        }
    }

    /// The one-pass check of [`Btf::parse`] with the index pushed onto a vector: the open
    /// phase's. `None` when the check did not accept the section: then [`Btf::parse`]
    /// (given a buffer of [`Btf::count_types`] entries) says why. The index then feeds
    /// [`Btf::from_checked`].
    pub(crate) fn check_into(
        data: &[u8],
        index: &mut heapless::vec::VecView<u32>,
    ) -> Option<(Header, check::Checked)> {
        let header = Header::parse(data).ok()?;
        // Room for as many types as the section can hold (each record takes at least 12
        // bytes), or the whole capacity: the check then refuses more.
        let room = (header.type_len as usize / TYPE_HEADER_LEN).min(index.capacity());
        index.clear();
        index.resize(room, 0).ok()?;
        let c = Self::checked(data, &header, index.as_mut_slice())?;
        index.truncate(c.count as usize);
        Some((header, c))
    }

    /// The one-pass check (see `check`), for a section in the target's byte order.
    pub(super) fn checked(
        data: &[u8],
        header: &Header,
        index: &mut [u32],
    ) -> Option<check::Checked> {
        if header.little_endian != cfg!(target_endian = "little") {
            return None;
        }
        check::check(header.types(data), header.strings(data), index)
    }

    /// The [`Btf`] of a section [`Btf::check_into`] accepted, with its index.
    pub(crate) fn from_checked(
        data: &'a [u8],
        header: Header,
        c: check::Checked,
        index: &'a [u32],
    ) -> Self {
        Btf {
            header,
            endian: header.endian(),
            types: header.types(data),
            strings: Strings(header.strings(data)),
            index: index.get(..c.count as usize).unwrap_or_default(),
            ptr_size: c.ptr_size,
            datasecs: c.datasecs,
        }
    }

    /// The reference path: walk, then validate type by type; the one that reports errors.
    #[cold]
    pub(super) fn parse_reference(
        data: &'a [u8],
        header: Header,
        index: &'a mut [u32],
    ) -> BtfResult<Self> {
        let endian = header.endian();
        let types = header.types(data);
        let count = walk(types, endian, index, true)?;
        let index: &'a [u32] = index;
        let mut btf = Btf {
            header,
            endian,
            types,
            strings: Strings(header.strings(data)),
            index: index.get(..count as usize).unwrap_or_default(),
            ptr_size: 8,
            datasecs: Datasecs::unknown(),
        };
        btf.validate()?;
        Ok(btf)
    }

    fn validate(&mut self) -> BtfResult<()> {
        let count = self.type_count();
        let mut ptr_size = None;
        for t in self.types() {
            validate_type(self, &t, count)?;
            if ptr_size.is_none() && t.kind == Kind::Int && is_long_name(t.name_bytes()) {
                let s = t.size_or_type();
                if s == 4 || s == 8 {
                    ptr_size = Some(s);
                }
            }
        }
        self.ptr_size = ptr_size.unwrap_or(8);
        Ok(())
    }

    /// The header.
    #[must_use]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The byte order.
    #[must_use]
    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// Number of types; ids run from 1 to this (0 is `void`, never stored).
    #[must_use]
    pub fn type_count(&self) -> u32 {
        self.index.len() as u32
    }

    /// Size of a pointer: the size of the INT named `long`/`unsigned long`, else 8.
    #[must_use]
    pub fn pointer_size(&self) -> u32 {
        self.ptr_size
    }

    /// Type `id`, or `None` for 0 (void) and ids past [`Btf::type_count`].
    #[must_use]
    pub fn ty(&self, id: u32) -> Option<Type<'a>> {
        let off = *self.index.get(usize::try_from(id).ok()?.checked_sub(1)?)? as usize;
        let (kind, _, len) = record_shape(self.types, off, self.endian)?;
        let rec = self.types.get(off..off.checked_add(len)?)?;
        Some(Type {
            id,
            kind: Kind::from_u8(kind)?,
            rec,
            strings: self.strings,
            endian: self.endian,
        })
    }

    /// Type `id`, or [`BtfError::NoType`].
    ///
    /// # Errors
    /// [`BtfError::NoType`] for 0 and ids past [`Btf::type_count`].
    pub fn type_by_id(&self, id: u32) -> BtfResult<Type<'a>> {
        self.ty(id).ok_or(BtfError::NoType {
            id,
            what: "type id out of range",
        })
    }

    /// All types, in id order.
    pub fn types(&self) -> impl Iterator<Item = Type<'a>> + '_ {
        (1..=self.type_count()).filter_map(move |id| self.ty(id))
    }

    /// The string at offset `off` of the string section, if inside and UTF-8.
    #[must_use]
    pub fn string(&self, off: u32) -> Option<&'a str> {
        self.strings.check(off).ok().map(|()| self.strings.str(off))
    }

    /// The NUL-terminated bytes at offset `off` of the string section (empty when outside).
    #[must_use]
    pub fn string_bytes(&self, off: u32) -> &'a [u8] {
        self.strings.bytes(off)
    }

    pub(crate) fn strings_len(&self) -> usize {
        self.strings.0.len()
    }

    /// The first type named `name` of kind `kind` (a linear scan; for a DATASEC, among
    /// the DATASECs when the check found them all).
    #[must_use]
    pub fn find(&self, name: &str, kind: Kind) -> Option<Type<'a>> {
        let name = name.as_bytes();
        // Headers read in place; a [`Type`] built only for the one found.
        let named = |id: u32| {
            self.raw(id)
                .is_some_and(|r| r.kind == kind && self.strings.is(r.name_off(self), name))
        };
        let found = match self.datasecs.known() {
            Some(ids) if kind == Kind::Datasec => ids.iter().copied().find(|&id| named(id)),
            _ => (1..=self.type_count()).find(|&id| named(id)),
        }?;
        // A name never holds its NUL (looked at only when something matched).
        if name.iter().fold(false, |nul, &b| nul | (b == 0)) {
            return None;
        }
        self.ty(found)
    }

    /// The id of the first type named `name` of kind `kind` in `split`, a split BTF over
    /// this one (a kernel module's `/sys/kernel/btf/MODULE` over `vmlinux`): its type ids
    /// follow this BTF's last, and its string offsets past this BTF's strings are its own.
    /// The records are walked, not validated (only `split`'s names are read).
    ///
    /// # Errors
    /// [`BtfError::Truncated`] / [`BtfError::BadHeader`] / [`BtfError::BadKind`] for a
    /// `split` whose header or records are malformed.
    pub fn find_in_split(&self, split: &[u8], name: &str, kind: Kind) -> BtfResult<Option<u32>> {
        let header = Header::parse(split)?;
        let endian = header.endian();
        let types = header.types(split);
        let strings = Strings(header.strings(split));
        let base_len = u32::try_from(self.strings.0.len()).unwrap_or(u32::MAX);
        let want = name.as_bytes();
        let mut off = 0usize;
        let mut id = self.type_count();
        while off < types.len() {
            id = id.checked_add(1).ok_or(BtfError::Capacity {
                what: "BTF types",
                limit: u32::MAX,
            })?;
            let (k, _, len) = record_shape(types, off, endian).ok_or(BtfError::Truncated {
                what: "type record header",
                offset: off as u32,
                len: TYPE_HEADER_LEN as u32,
            })?;
            let k = Kind::from_u8(k).ok_or(BtfError::BadKind { id, kind: k })?;
            if k == kind {
                let name_off = header::get_u32(types, off, endian).unwrap_or(0);
                let hit = match name_off.checked_sub(base_len) {
                    Some(own) => strings.is(own, want),
                    None => self.strings.is(name_off, want),
                };
                if hit && !want.is_empty() && !want.contains(&0) {
                    return Ok(Some(id));
                }
            }
            off =
                off.checked_add(len)
                    .filter(|&e| e <= types.len())
                    .ok_or(BtfError::Truncated {
                        what: "type record",
                        offset: off as u32,
                        len: len as u32,
                    })?;
        }
        Ok(None)
    }

    /// Follows TYPEDEF, VOLATILE, CONST, RESTRICT and TYPE_TAG from `id` to the first other
    /// type and returns its id (0 when the chain ends at void).
    ///
    /// # Errors
    /// [`BtfError::NoType`] for an id out of range; [`BtfError::TooDeep`] after
    /// [`MAX_RESOLVE_DEPTH`] steps (a cycle).
    pub fn resolve(&self, id: u32) -> BtfResult<u32> {
        let mut cur = id;
        for _ in 0..=MAX_RESOLVE_DEPTH {
            if cur == 0 {
                return Ok(0);
            }
            let r = self.raw(cur).ok_or(BtfError::NoType {
                id: cur,
                what: "type id out of range",
            })?;
            if !r.kind.is_mod_or_typedef() {
                return Ok(cur);
            }
            cur = r.third;
        }
        Err(BtfError::TooDeep {
            id,
            limit: MAX_RESOLVE_DEPTH,
        })
    }

    /// [`Btf::resolve`], returning the type (`None` for void).
    ///
    /// # Errors
    /// As [`Btf::resolve`].
    pub fn resolve_type(&self, id: u32) -> BtfResult<Option<Type<'a>>> {
        Ok(self.ty(self.resolve(id)?))
    }

    /// Size in bytes of type `id` (libbpf's `btf__resolve_size`): through typedefs,
    /// modifiers, VARs and DECL_TAGs, multiplying array lengths; a pointer is
    /// [`Btf::pointer_size`].
    ///
    /// # Errors
    /// [`BtfError::NoSize`] for void, FWD, FUNC, FUNC_PROTO or a size past `u32::MAX`;
    /// [`BtfError::TooDeep`] after [`MAX_RESOLVE_DEPTH`] steps.
    pub fn size_of(&self, id: u32) -> BtfResult<u32> {
        let mut cur = id;
        let mut nelems: u32 = 1;
        for _ in 0..MAX_RESOLVE_DEPTH {
            let t = self.raw(cur).ok_or(BtfError::NoSize { id })?;
            let size = match t.kind {
                k if k.has_size() => t.third,
                Kind::Ptr => self.ptr_size,
                Kind::Typedef
                | Kind::Volatile
                | Kind::Const
                | Kind::Restrict
                | Kind::Var
                | Kind::DeclTag
                | Kind::TypeTag => {
                    cur = t.third;
                    continue;
                }
                Kind::Array => {
                    nelems = nelems
                        .checked_mul(t.word(self, 8))
                        .ok_or(BtfError::NoSize { id })?;
                    cur = t.word(self, 0);
                    continue;
                }
                _ => return Err(BtfError::NoSize { id }),
            };
            return nelems.checked_mul(size).ok_or(BtfError::NoSize { id });
        }
        Err(BtfError::TooDeep {
            id,
            limit: MAX_RESOLVE_DEPTH,
        })
    }

    /// Type `id`'s kind, `info` and third word read in place (no [`Type`] built); `None`
    /// for 0 and ids past the count. The record was validated with the section.
    #[inline]
    pub(crate) fn raw(&self, id: u32) -> Option<Raw> {
        let off = *self.index.get((id as usize).checked_sub(1)?)? as usize;
        let info = header::get_u32(self.types, off.checked_add(4)?, self.endian)?;
        let third = header::get_u32(self.types, off.checked_add(8)?, self.endian)?;
        Some(Raw {
            kind: Kind::from_u8(((info >> 24) & 0x1f) as u8)?,
            info,
            third,
            off,
        })
    }
}

/// A type record's header read in place; see [`Btf::raw`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Raw {
    pub(crate) kind: Kind,
    pub(crate) info: u32,
    pub(crate) third: u32,
    /// Offset of the record in the type section.
    pub(crate) off: usize,
}

impl Raw {
    /// `vlen`.
    #[inline]
    pub(crate) fn vlen(&self) -> u32 {
        self.info & 0xffff
    }

    /// The word `at` bytes after the 12-byte header (0 past the record: unreachable for
    /// a validated one, never a panic).
    #[inline]
    pub(crate) fn word(&self, btf: &Btf<'_>, at: usize) -> u32 {
        rd32(btf.types, self.off + TYPE_HEADER_LEN + at, btf.endian)
    }

    /// `name_off`.
    #[inline]
    pub(crate) fn name_off(&self, btf: &Btf<'_>) -> u32 {
        rd32(btf.types, self.off, btf.endian)
    }
}

impl<'a> Btf<'a> {
    /// The strings of the section.
    #[inline]
    pub(crate) fn strs(&self) -> Strings<'a> {
        self.strings
    }
}

/// Walks the type section: every record's kind and extent. With `store`, writes each
/// record's offset into `index`. Returns the number of types.
fn walk(types: &[u8], endian: Endian, index: &mut [u32], store: bool) -> BtfResult<u32> {
    let mut off = 0usize;
    let mut count: u32 = 0;
    while off < types.len() {
        let id = count.checked_add(1).ok_or(BtfError::Capacity {
            what: "BTF types",
            limit: u32::MAX,
        })?;
        let (kind, _, len) = record_shape(types, off, endian).ok_or(BtfError::Truncated {
            what: "type record header",
            offset: off as u32,
            len: TYPE_HEADER_LEN as u32,
        })?;
        if Kind::from_u8(kind).is_none() {
            return Err(BtfError::BadKind { id, kind });
        }
        let end = off.checked_add(len).filter(|&e| e <= types.len());
        let Some(end) = end else {
            return Err(BtfError::Truncated {
                what: "type record",
                offset: off as u32,
                len: len as u32,
            });
        };
        if store {
            let limit = index.len() as u32;
            let slot = index.get_mut(count as usize).ok_or(BtfError::Capacity {
                what: "BTF types (index buffer entries)",
                limit,
            })?;
            *slot = off as u32;
        }
        count = id;
        off = end;
    }
    Ok(count)
}

fn validate_type(btf: &Btf<'_>, t: &Type<'_>, count: u32) -> BtfResult<()> {
    let id = t.id;
    let name = |off: u32| {
        btf.strings.check(off).map_err(|what| BtfError::BadString {
            id,
            offset: off,
            what,
        })
    };
    let bad = |what| Err(BtfError::BadType { id, what });
    // A referenced id: in range, optionally non-void, optionally of given kinds.
    let target = |target: u32, void_ok: bool, what: &'static str| {
        if target > count || (target == 0 && !void_ok) {
            Err(BtfError::BadTypeRef { id, target, what })
        } else {
            Ok(())
        }
    };
    name(t.name_off())?;
    if t.info() & 0x60ff_0000 != 0 {
        return bad("unused bits of info are set");
    }
    let third = t.size_or_type();
    match t.kind {
        Kind::Int => {
            let i = t.int().unwrap_or(IntInfo {
                encoding: 0,
                offset: 0,
                bits: 0,
            });
            if !matches!(third, 1 | 2 | 4 | 8 | 16) {
                return bad("INT size is not 1, 2, 4, 8 or 16");
            }
            if rd32(t.rec, TYPE_HEADER_LEN, t.endian) & 0xf000_ff00 != 0 {
                return bad("INT encoding word has unused bits set");
            }
            if i.bits > 128 || u32::from(i.offset) + u32::from(i.bits) > third * 8 {
                return bad("INT bits do not fit its size");
            }
            if i.encoding & !(INT_SIGNED | INT_CHAR | INT_BOOL) != 0 {
                return bad("INT encoding unknown");
            }
        }
        Kind::Ptr | Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict => {
            target(third, true, "out of range")?;
        }
        Kind::TypeTag => target(third, true, "out of range")?,
        Kind::Array => {
            let a = t.array().unwrap_or(ArrayInfo {
                elem_type: 0,
                index_type: 0,
                nelems: 0,
            });
            target(
                a.elem_type,
                false,
                "array element type out of range or void",
            )?;
            target(a.index_type, false, "array index type out of range or void")?;
        }
        Kind::Struct | Kind::Union => {
            for m in t.members() {
                name(m.name_off)?;
                target(m.type_id, false, "member type out of range or void")?;
            }
        }
        Kind::Enum | Kind::Enum64 => {
            if !matches!(third, 1 | 2 | 4 | 8) {
                return bad("enum size is not 1, 2, 4 or 8");
            }
            for v in t.enum_values() {
                name(v.name_off)?;
            }
        }
        Kind::Fwd | Kind::Float => {
            if t.kind == Kind::Float && !matches!(third, 2 | 4 | 8 | 12 | 16) {
                return bad("FLOAT size is not 2, 4, 8, 12 or 16");
            }
        }
        Kind::Func => {
            target(third, false, "FUNC type out of range")?;
            if btf.ty(third).map(|p| p.kind) != Some(Kind::FuncProto) {
                return Err(BtfError::BadTypeRef {
                    id,
                    target: third,
                    what: "FUNC does not refer to a FUNC_PROTO",
                });
            }
            if t.vlen() > 2 {
                return bad("FUNC linkage unknown");
            }
        }
        Kind::FuncProto => {
            target(third, true, "return type out of range")?;
            for p in t.params() {
                name(p.name_off)?;
                target(p.type_id, true, "parameter type out of range")?;
            }
        }
        Kind::Var => {
            target(third, false, "VAR type out of range or void")?;
            if t.linkage().unwrap_or(0) > 2 {
                return bad("VAR linkage unknown");
            }
        }
        Kind::Datasec => {
            for v in t.datasec_vars() {
                target(v.type_id, false, "DATASEC entry out of range or void")?;
                if !matches!(
                    btf.ty(v.type_id).map(|x| x.kind),
                    Some(Kind::Var | Kind::Func)
                ) {
                    return Err(BtfError::BadTypeRef {
                        id,
                        target: v.type_id,
                        what: "DATASEC entry is not a VAR or FUNC",
                    });
                }
            }
        }
        Kind::DeclTag => {
            target(third, false, "DECL_TAG target out of range or void")?;
            if t.decl_tag_component().unwrap_or(0) < -1 {
                return bad("DECL_TAG component index below -1");
            }
        }
    }
    Ok(())
}
