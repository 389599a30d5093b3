//! BTF-defined maps: the variables of the `.maps` DATASEC, decoded as libbpf does.
//!
//! Each map is a VAR whose type is a STRUCT of attribute members written with libbpf's
//! macros: `__uint(name, N)` is a member `int (*name)[N]` (a PTR to an ARRAY of N
//! elements: the value is N), `__type(name, T)` a member `T *name` (the value is the
//! pointee's size and type id), `__array(values, struct { ... })` a zero-length ARRAY of
//! pointers to the inner map's definition (map-in-map) or to a FUNC_PROTO (prog array),
//! `__ulong(map_extra, N)` also an anonymous enum holding N.

use super::error::{BtfError, BtfResult, ErrName};
use super::section::Btf;
use super::types::{Entries, Kind, Type, VarSecInfo, TYPE_HEADER_LEN};

/// Map type numbers needed to check `values` (`BPF_MAP_TYPE_*`).
const MAP_TYPE_PROG_ARRAY: u32 = 3;
const MAP_TYPE_ARRAY_OF_MAPS: u32 = 12;
const MAP_TYPE_HASH_OF_MAPS: u32 = 13;
/// `LIBBPF_PIN_BY_NAME`.
const PIN_BY_NAME: u32 = 1;

/// The attributes of one map definition (outer or inner).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MapAttrs {
    /// `type` (`BPF_MAP_TYPE_*`).
    pub map_type: u32,
    /// `key_size`, or the size of `key`'s type.
    pub key_size: u32,
    /// `value_size`, or the size of `value`'s type; 4 for map-in-map and prog arrays.
    pub value_size: u32,
    /// `max_entries`.
    pub max_entries: u32,
    /// `map_flags`.
    pub map_flags: u32,
    /// `numa_node`.
    pub numa_node: u32,
    /// `pinning` (0 none, 1 by name).
    pub pinning: u32,
    /// `map_extra` (bloom filter hashes, arena address ...).
    pub map_extra: u64,
    /// The key's type id (`__type(key, T)`), 0 when only a size is given.
    pub key_type_id: u32,
    /// The value's type id (`__type(value, T)`), 0 when only a size is given.
    pub value_type_id: u32,
}

/// The inner map of a map-in-map (`__array(values, struct { ... })`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct InnerMapDef {
    /// The STRUCT type id of the inner definition.
    pub def_type_id: u32,
    /// Its attributes.
    pub attrs: MapAttrs,
}

/// One BTF-defined map.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct BtfMapDef<'a> {
    /// Map name (the variable's).
    pub name: &'a str,
    /// The VAR's type id.
    pub var_type_id: u32,
    /// The definition STRUCT's type id.
    pub def_type_id: u32,
    /// Offset of the variable in `.maps` (from the DATASEC; the symbol's value in a `.o`).
    pub offset: u32,
    /// Its attributes (`type`, sizes, `max_entries`, flags, pinning, key and value types).
    pub attrs: MapAttrs,
    /// For map-in-map: the inner map's definition.
    pub inner: Option<InnerMapDef>,
    /// For a prog array with `values`: the FUNC_PROTO type id of its programs.
    pub prog_proto_id: Option<u32>,
}

/// Flat, as a map's fields are printed elsewhere (one list of attributes).
impl core::fmt::Debug for BtfMapDef<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let a = &self.attrs;
        f.debug_struct("BtfMapDef")
            .field("name", &self.name)
            .field("var_type_id", &self.var_type_id)
            .field("def_type_id", &self.def_type_id)
            .field("offset", &self.offset)
            .field("map_type", &a.map_type)
            .field("key_size", &a.key_size)
            .field("value_size", &a.value_size)
            .field("max_entries", &a.max_entries)
            .field("map_flags", &a.map_flags)
            .field("numa_node", &a.numa_node)
            .field("pinning", &a.pinning)
            .field("map_extra", &a.map_extra)
            .field("key_type_id", &a.key_type_id)
            .field("value_type_id", &a.value_type_id)
            .field("inner", &self.inner)
            .field("prog_proto_id", &self.prog_proto_id)
            .finish()
    }
}

/// Iterator over the maps of a `.maps` DATASEC; see [`btf_maps`].
#[derive(Clone, Debug)]
pub struct BtfMaps<'a> {
    btf: Btf<'a>,
    vars: Entries<'a, VarSecInfo>,
}

/// The maps of DATASEC `datasec_id` (normally the one named `.maps`, see
/// [`Btf::find`]).
///
/// # Errors
/// [`BtfError::NoType`] when `datasec_id` is no DATASEC; the iterator yields
/// [`BtfError::Map`] naming the map and field for a malformed definition.
pub fn btf_maps<'a>(btf: &Btf<'a>, datasec_id: u32) -> BtfResult<BtfMaps<'a>> {
    let sec = btf.type_by_id(datasec_id)?;
    if sec.kind() != Kind::Datasec {
        return Err(BtfError::NoType {
            id: datasec_id,
            what: "not a DATASEC",
        });
    }
    Ok(BtfMaps {
        btf: *btf,
        vars: sec.datasec_vars(),
    })
}

impl<'a> Iterator for BtfMaps<'a> {
    type Item = BtfResult<BtfMapDef<'a>>;
    fn next(&mut self) -> Option<Self::Item> {
        let v = self.vars.next()?;
        Some(parse_var(&self.btf, v))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.vars.size_hint()
    }
}

/// Where a map's definition is being read, for errors: the map's name (read only when
/// an error is built) and whether this is its inner map.
struct Ctx<'b, 'a> {
    btf: &'b Btf<'a>,
    /// `name_off` of the map's VAR.
    map: u32,
    inner: bool,
}

impl Ctx<'_, '_> {
    #[cold]
    fn err(&self, field: &[u8], what: &'static str) -> BtfError {
        let map = self.btf.string_bytes(self.map);
        let mut name = [0u8; super::error::NAME_IN_ERROR];
        let n = map.len().min(name.len());
        let mut len = n;
        if let (Some(d), Some(s)) = (name.get_mut(..n), map.get(..n)) {
            d.copy_from_slice(s);
        }
        if self.inner {
            for (i, b) in b".inner".iter().enumerate() {
                if let Some(slot) = name.get_mut(len) {
                    *slot = *b;
                    len = n + i + 1;
                }
            }
        }
        BtfError::Map {
            map: ErrName::new(name.get(..len).unwrap_or_default()),
            field: ErrName::new(field),
            what,
        }
    }
}

fn parse_var<'a>(btf: &Btf<'a>, v: VarSecInfo) -> BtfResult<BtfMapDef<'a>> {
    let d = parse_var_raw(btf, v.type_id)?;
    Ok(BtfMapDef {
        name: btf.strs().str(d.name_off),
        var_type_id: v.type_id,
        def_type_id: d.def_type_id,
        offset: v.offset,
        attrs: d.attrs,
        inner: d.inner,
        prog_proto_id: d.prog_proto_id,
    })
}

/// A BTF-defined map read without its name as a string: the VAR's `name_off` instead.
pub(crate) struct RawMapDef {
    /// `name_off` of the VAR (the map's name).
    pub(crate) name_off: u32,
    /// The definition STRUCT's type id.
    pub(crate) def_type_id: u32,
    pub(crate) attrs: MapAttrs,
    pub(crate) inner: Option<InnerMapDef>,
    pub(crate) prog_proto_id: Option<u32>,
}

/// The type ids of the entries of DATASEC `sec` (none when `sec` is no DATASEC).
pub(crate) fn var_ids<'t>(sec: &Type<'t>) -> impl Iterator<Item = u32> + 't {
    let endian = sec.endian;
    let entries = match sec.kind {
        Kind::Datasec => sec.rec.get(TYPE_HEADER_LEN..).unwrap_or_default(),
        _ => &[],
    };
    entries
        .chunks_exact(12)
        .map(move |e| super::header::rd32(e, 0, endian))
}

/// The map whose VAR is `var_id` (an entry of the `.maps` DATASEC): read by
/// [`fast::parse_var`] when it can, else (and for every error) by the reference reader.
#[inline]
pub(crate) fn parse_var_raw(btf: &Btf<'_>, var_id: u32) -> BtfResult<RawMapDef> {
    match fast::parse_var(btf, var_id) {
        Some(d) => Ok(d),
        None => parse_var_reference(btf, var_id),
    }
}

/// The reference reader of [`parse_var_raw`]: the one that reports errors.
#[cold]
#[inline(never)]
pub(crate) fn parse_var_reference(btf: &Btf<'_>, var_id: u32) -> BtfResult<RawMapDef> {
    let var = btf.raw(var_id).ok_or(BtfError::NoType {
        id: var_id,
        what: "type id out of range",
    })?;
    let name_off = var.name_off(btf);
    let cx = Ctx {
        btf,
        map: name_off,
        inner: false,
    };
    if var.kind != Kind::Var {
        return Err(cx.err(b"", "entry of .maps is not a VAR"));
    }
    let def_id = btf
        .resolve(var.third)
        .map_err(|_| cx.err(b"", "definition type chain too deep"))?;
    let def = btf
        .raw(def_id)
        .filter(|t| t.kind == Kind::Struct)
        .ok_or_else(|| cx.err(b"", "definition is not a STRUCT"))?;
    let mut inner = None;
    let mut proto = None;
    let attrs = parse_def(btf, &def, &cx, Some((&mut inner, &mut proto)))?;
    Ok(RawMapDef {
        name_off,
        def_type_id: def_id,
        attrs,
        inner,
        prog_proto_id: proto,
    })
}

/// The attribute a member of a definition names.
#[derive(Clone, Copy)]
enum Field {
    Type,
    MaxEntries,
    MapFlags,
    NumaNode,
    KeySize,
    ValueSize,
    Key,
    Value,
    Pinning,
    MapExtra,
    Values,
    Unknown,
}

impl Field {
    /// The field whose name starts `tail` (the string section from the member's name on):
    /// compared in place with the NUL, told apart on the first byte.
    #[inline]
    fn of(tail: &[u8]) -> Field {
        let is = |name: &[u8]| tail.starts_with(name);
        match tail.first() {
            Some(b't') if is(b"type\0") => Field::Type,
            Some(b'm') if is(b"max_entries\0") => Field::MaxEntries,
            Some(b'm') if is(b"map_flags\0") => Field::MapFlags,
            Some(b'm') if is(b"map_extra\0") => Field::MapExtra,
            Some(b'n') if is(b"numa_node\0") => Field::NumaNode,
            Some(b'k') if is(b"key\0") => Field::Key,
            Some(b'k') if is(b"key_size\0") => Field::KeySize,
            Some(b'v') if is(b"value\0") => Field::Value,
            Some(b'v') if is(b"value_size\0") => Field::ValueSize,
            Some(b'v') if is(b"values\0") => Field::Values,
            Some(b'p') if is(b"pinning\0") => Field::Pinning,
            _ => Field::Unknown,
        }
    }
}

type InnerOut<'o> = (&'o mut Option<InnerMapDef>, &'o mut Option<u32>);

fn parse_def(
    btf: &Btf<'_>,
    def: &super::section::Raw,
    cx: &Ctx<'_, '_>,
    mut outer: Option<InnerOut<'_>>,
) -> BtfResult<MapAttrs> {
    let mut a = MapAttrs::default();
    let vlen = def.vlen();
    for i in 0..vlen {
        let at = 12 * i as usize;
        let (name_off, type_id) = (def.word(btf, at), def.word(btf, at + 4));
        let err = |what| cx.err(btf.string_bytes(name_off), what);
        // `__uint(name, N)`: PTR (through modifiers) to ARRAY of N.
        let int = || -> BtfResult<u32> {
            let p = btf
                .resolve(type_id)
                .ok()
                .and_then(|id| btf.raw(id))
                .filter(|t| t.kind == Kind::Ptr)
                .ok_or_else(|| err("expected a PTR (__uint)"))?;
            btf.raw(p.third)
                .filter(|t| t.kind == Kind::Array)
                .map(|arr| arr.word(btf, 8))
                .ok_or_else(|| err("expected a PTR to an ARRAY (__uint)"))
        };
        // `__type(name, T)`: PTR to T, giving T's size and id.
        let pointee = || -> BtfResult<(u32, u32)> {
            let p = btf
                .raw(type_id)
                .filter(|t| t.kind == Kind::Ptr)
                .ok_or_else(|| err("expected a PTR (__type)"))?;
            let id = p.third;
            let size = btf
                .size_of(id)
                .map_err(|_| err("cannot determine the size of the pointee"))?;
            Ok((size, id))
        };
        match Field::of(btf.strs().tail(name_off)) {
            Field::Type => a.map_type = int()?,
            Field::MaxEntries => a.max_entries = int()?,
            Field::MapFlags => a.map_flags = int()?,
            Field::NumaNode => a.numa_node = int()?,
            Field::KeySize => {
                let n = int()?;
                if a.key_size != 0 && a.key_size != n {
                    return Err(err("conflicting key size"));
                }
                a.key_size = n;
            }
            Field::ValueSize => {
                let n = int()?;
                if a.value_size != 0 && a.value_size != n {
                    return Err(err("conflicting value size"));
                }
                a.value_size = n;
            }
            Field::Key => {
                let (size, id) = pointee()?;
                if a.key_size != 0 && a.key_size != size {
                    return Err(err("conflicting key size"));
                }
                a.key_size = size;
                a.key_type_id = id;
            }
            Field::Value => {
                let (size, id) = pointee()?;
                if a.value_size != 0 && a.value_size != size {
                    return Err(err("conflicting value size"));
                }
                a.value_size = size;
                a.value_type_id = id;
            }
            Field::Pinning => {
                if cx.inner {
                    return Err(err("an inner map cannot be pinned"));
                }
                let n = int()?;
                if n > PIN_BY_NAME {
                    return Err(err("pinning is neither 0 (none) nor 1 (by name)"));
                }
                a.pinning = n;
            }
            Field::MapExtra => {
                a.map_extra = match int() {
                    Ok(n) => u64::from(n),
                    // `__ulong(map_extra, N)`: an enum whose only enumerator is N.
                    Err(e) => btf
                        .resolve_type(type_id)
                        .ok()
                        .flatten()
                        .filter(|t| t.kind().is_any_enum() && t.vlen() == 1)
                        .and_then(|t| t.enum_value(0))
                        .map(|v| v.raw)
                        .ok_or(e)?,
                };
            }
            Field::Values => {
                let Some((inner_out, proto_out)) = outer.as_mut() else {
                    return Err(err("multi-level inner maps are not supported"));
                };
                if i + 1 != vlen {
                    return Err(err("'values' must be the last member"));
                }
                let mim = matches!(a.map_type, MAP_TYPE_ARRAY_OF_MAPS | MAP_TYPE_HASH_OF_MAPS);
                let prog = a.map_type == MAP_TYPE_PROG_ARRAY;
                if !mim && !prog {
                    return Err(err("only map-in-map and prog-array maps have 'values'"));
                }
                if a.value_size != 0 && a.value_size != 4 {
                    return Err(err("conflicting value size (must be 4)"));
                }
                a.value_size = 4;
                let arr = btf
                    .ty(type_id)
                    .and_then(|t| t.array())
                    .filter(|arr| arr.nelems == 0)
                    .ok_or_else(|| err("not a zero-length array"))?;
                let ptr = btf
                    .resolve_type(arr.elem_type)
                    .ok()
                    .flatten()
                    .filter(|t| t.kind() == Kind::Ptr)
                    .ok_or_else(|| err("elements are not pointers"))?;
                let target_id = btf
                    .resolve(ptr.size_or_type())
                    .map_err(|_| err("pointee chain too deep"))?;
                let target = btf.ty(target_id);
                if prog {
                    if target.map(|t| t.kind()) != Some(Kind::FuncProto) {
                        return Err(err("prog-array elements do not point to a FUNC_PROTO"));
                    }
                    **proto_out = Some(target_id);
                    continue;
                }
                let inner_def = btf
                    .raw(target_id)
                    .filter(|t| t.kind == Kind::Struct)
                    .ok_or_else(|| err("inner map definition is not a STRUCT"))?;
                let icx = Ctx {
                    btf,
                    map: cx.map,
                    inner: true,
                };
                let attrs = parse_def(btf, &inner_def, &icx, None)?;
                **inner_out = Some(InnerMapDef {
                    def_type_id: target_id,
                    attrs,
                });
            }
            Field::Unknown => return Err(err("unknown field")),
        }
    }
    if a.map_type == 0 {
        return Err(cx.err(b"type", "map type is not specified"));
    }
    Ok(a)
}

/// The usual map definition read in one walk over its members, natively (the open phase's
/// BTF is in the target's byte order): `None` for anything else — a section in the other
/// byte order, `values` (map-in-map, prog arrays), `__ulong` values, any error — which
/// the reference reader then reads, so results and errors stay exactly its own.
pub(crate) mod fast {
    use super::{Field, MapAttrs, RawMapDef, PIN_BY_NAME};
    use crate::btf::section::{Btf, MAX_RESOLVE_DEPTH};

    const INT: u32 = 1;
    const PTR: u32 = 2;
    const ARRAY: u32 = 3;
    const STRUCT: u32 = 4;
    const VAR: u32 = 14;

    /// A native `u32` at `at` of `b` (`None` past the end).
    #[inline(always)]
    fn word(b: &[u8], at: usize) -> Option<u32> {
        b.get(at..)?
            .first_chunk::<4>()
            .map(|w| u32::from_ne_bytes(*w))
    }

    /// A type record's header, read natively.
    #[derive(Clone, Copy)]
    struct Rec {
        kind: u32,
        vlen: u32,
        third: u32,
        /// Offset of the record in the type section.
        off: usize,
    }

    /// TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG: what [`Btf::resolve`] goes through.
    #[inline(always)]
    fn is_mod(kind: u32) -> bool {
        matches!(kind, 8..=11 | 18)
    }

    /// The validated types of a [`Btf`] in the target's byte order.
    #[derive(Clone, Copy)]
    struct Native<'b> {
        types: &'b [u8],
        index: &'b [u32],
        ptr_size: u32,
    }

    impl<'b> Native<'b> {
        /// The first `N` bytes of type `id`'s record (`None` for void and ids out of
        /// range) and its header.
        #[inline(always)]
        fn bytes<const N: usize>(self, id: u32) -> Option<(Rec, &'b [u8; N])> {
            let off = *self.index.get((id as usize).wrapping_sub(1))? as usize;
            let b = self.types.get(off..)?.first_chunk::<N>()?;
            let info = word(b, 4)?;
            let r = Rec {
                kind: (info >> 24) & 0x1f,
                vlen: info & 0xffff,
                third: word(b, 8)?,
                off,
            };
            Some((r, b))
        }

        /// Type `id`'s header (`None` for void and ids out of range).
        #[inline(always)]
        fn rec(self, id: u32) -> Option<Rec> {
            self.bytes::<12>(id).map(|(r, _)| r)
        }

        /// [`Btf::resolve`] (`None` for void and every error): usually no step at all.
        #[inline(always)]
        fn resolve(self, id: u32) -> Option<(u32, Rec)> {
            let r = self.rec(id)?;
            if !is_mod(r.kind) {
                return Some((id, r));
            }
            let id = resolve_chain(self.types, self.index, r.third)?;
            Some((id, self.rec(id)?))
        }
    }

    /// [`Btf::resolve`] from the type after a modifier or typedef (a step fewer), by id
    /// only (nothing kept in memory across the call on the usual path).
    #[inline(never)]
    fn resolve_chain(types: &[u8], index: &[u32], id: u32) -> Option<u32> {
        let n = Native {
            types,
            index,
            ptr_size: 0,
        };
        let mut cur = id;
        for _ in 0..MAX_RESOLVE_DEPTH {
            let r = n.rec(cur)?;
            if !is_mod(r.kind) {
                return Some(cur);
            }
            cur = r.third;
        }
        None
    }

    impl Native<'_> {
        /// [`Btf::size_of`] (`None` for every error).
        #[inline(always)]
        fn size_of(self, id: u32) -> Option<u32> {
            let mut cur = id;
            let mut nelems: u32 = 1;
            for _ in 0..MAX_RESOLVE_DEPTH {
                let r = self.rec(cur)?;
                match r.kind {
                    // INT, STRUCT, UNION, ENUM, DATASEC, FLOAT, ENUM64.
                    INT | 4..=6 | 15 | 16 | 19 => return nelems.checked_mul(r.third),
                    PTR => return nelems.checked_mul(self.ptr_size),
                    // TYPEDEF, VOLATILE, CONST, RESTRICT, VAR, DECL_TAG, TYPE_TAG.
                    8..=11 | 14 | 17 | 18 => cur = r.third,
                    ARRAY => {
                        let a = self.types.get(r.off..)?.first_chunk::<24>()?;
                        nelems = nelems.checked_mul(word(a, 20)?)?;
                        cur = word(a, 12)?;
                    }
                    _ => return None,
                }
            }
            None
        }

        /// `__uint(name, N)`: N, from a PTR (through modifiers) to an ARRAY of N.
        #[inline(always)]
        fn uint(self, type_id: u32) -> Option<u32> {
            let (_, p) = self.resolve(type_id)?;
            if p.kind != PTR {
                return None;
            }
            let (a, b) = self.bytes::<24>(p.third)?;
            if a.kind != ARRAY {
                return None;
            }
            word(b, 20)
        }

        /// `__type(name, T)`: T's size and id, from a PTR to T.
        #[inline(always)]
        fn pointee(self, type_id: u32) -> Option<(u32, u32)> {
            let p = self.rec(type_id)?;
            if p.kind != PTR {
                return None;
            }
            Some((self.size_of(p.third)?, p.third))
        }
    }

    /// A size that agrees with the one already set, if any.
    #[inline(always)]
    fn agree(old: u32, new: u32) -> Option<u32> {
        (old == 0 || old == new).then_some(new)
    }

    /// The field a member name (the string section from it on) names.
    #[inline(always)]
    fn field(tail: &[u8]) -> Field {
        // The first eight bytes as a number, compared with each name (and its NUL) under
        // a mask; the longer names also compare their rest. Near the end of the section,
        // the byte-wise comparison.
        let Some(w) = tail.first_chunk::<8>() else {
            return Field::of(tail);
        };
        let w = u64::from_le_bytes(*w);
        let rest = tail.get(8..).unwrap_or_default();
        let is = |name: &[u8; 8], len: usize| {
            let mask = u64::MAX >> (8 * (8 - len));
            w & mask == u64::from_le_bytes(*name) & mask
        };
        let long =
            |name: &[u8; 8], more: &[u8]| w == u64::from_le_bytes(*name) && rest.starts_with(more);
        match tail.first() {
            Some(b't') if is(b"type\0\0\0\0", 5) => Field::Type,
            Some(b'k') if is(b"key\0\0\0\0\0", 4) => Field::Key,
            Some(b'k') if long(b"key_size", b"\0") => Field::KeySize,
            Some(b'v') if is(b"value\0\0\0", 6) => Field::Value,
            Some(b'v') if is(b"values\0\0", 7) => Field::Values,
            Some(b'v') if long(b"value_si", b"ze\0") => Field::ValueSize,
            Some(b'm') if long(b"max_entr", b"ies\0") => Field::MaxEntries,
            Some(b'm') if long(b"map_flag", b"s\0") => Field::MapFlags,
            Some(b'm') if long(b"map_extr", b"a\0") => Field::MapExtra,
            Some(b'n') if long(b"numa_nod", b"e\0") => Field::NumaNode,
            Some(b'p') if is(b"pinning\0", 8) => Field::Pinning,
            _ => Field::Unknown,
        }
    }

    /// The native reader of `btf` (`None` in the other byte order).
    #[inline(always)]
    fn native<'b>(btf: &Btf<'b>) -> Option<Native<'b>> {
        (btf.endian.is_little() == cfg!(target_endian = "little")).then_some(Native {
            types: btf.types,
            index: btf.index,
            ptr_size: btf.ptr_size,
        })
    }

    /// [`Btf::size_of`] and [`Btf::resolve`] as read here, for tests.
    #[cfg(test)]
    pub(crate) fn size_and_resolve(btf: &Btf<'_>, id: u32) -> (Option<u32>, Option<u32>) {
        let Some(n) = native(btf) else {
            return (None, None);
        };
        (n.size_of(id), n.resolve(id).map(|(id, _)| id))
    }

    /// What reading a map definition found that the next one may reuse: the maps of an
    /// object usually share their `key`, `value` and `type` member types (one type each
    /// after deduplication). Each is `(member type id, what it gave)`, 0 when empty
    /// (never a member type that reads).
    #[derive(Clone, Copy, Default)]
    pub(crate) struct Memo {
        key: (u32, (u32, u32)),
        value: (u32, (u32, u32)),
        map_type: (u32, u32),
    }

    /// `$f` (what member type `$t` gives) through the entry `$slot` of a [`Memo`].
    macro_rules! memoized {
        ($slot:expr, $t:expr, $f:expr) => {{
            let t: u32 = $t;
            if $slot.0 == t && t != 0 {
                $slot.1
            } else {
                let v = $f?;
                $slot = (t, v);
                v
            }
        }};
    }

    /// The map whose VAR is `var_id`, if read here (see the module docs).
    #[inline(always)]
    pub(crate) fn parse_var(btf: &Btf<'_>, var_id: u32) -> Option<RawMapDef> {
        parse_var_memo(btf, var_id, &mut Memo::default())
    }

    /// [`parse_var`] with what the maps read before found.
    #[inline(always)]
    pub(crate) fn parse_var_memo(btf: &Btf<'_>, var_id: u32, memo: &mut Memo) -> Option<RawMapDef> {
        let n = native(btf)?;
        let (var, v) = n.bytes::<12>(var_id)?;
        if var.kind != VAR {
            return None;
        }
        let name_off = word(v, 0)?;
        let (def_type_id, def) = n.resolve(var.third)?;
        if def.kind != STRUCT {
            return None;
        }
        let members = n.types.get(def.off + 12..)?.get(..12 * def.vlen as usize)?;
        let strings = btf.strs();
        let mut a = MapAttrs::default();
        for m in members.chunks_exact(12) {
            let (Some(name), Some(t)) = (word(m, 0), word(m, 4)) else {
                return None;
            };
            match field(strings.tail(name)) {
                Field::Type => a.map_type = memoized!(memo.map_type, t, n.uint(t)),
                Field::MaxEntries => a.max_entries = n.uint(t)?,
                Field::MapFlags => a.map_flags = n.uint(t)?,
                Field::NumaNode => a.numa_node = n.uint(t)?,
                Field::KeySize => a.key_size = agree(a.key_size, n.uint(t)?)?,
                Field::ValueSize => a.value_size = agree(a.value_size, n.uint(t)?)?,
                Field::Key => {
                    let (size, id) = memoized!(memo.key, t, n.pointee(t));
                    a.key_size = agree(a.key_size, size)?;
                    a.key_type_id = id;
                }
                Field::Value => {
                    let (size, id) = memoized!(memo.value, t, n.pointee(t));
                    a.value_size = agree(a.value_size, size)?;
                    a.value_type_id = id;
                }
                Field::Pinning => {
                    a.pinning = n.uint(t).filter(|&p| p <= PIN_BY_NAME)?;
                }
                Field::MapExtra => a.map_extra = u64::from(n.uint(t)?),
                Field::Values | Field::Unknown => return None,
            }
        }
        if a.map_type == 0 {
            return None;
        }
        Some(RawMapDef {
            name_off,
            def_type_id,
            attrs: a,
            inner: None,
            prog_proto_id: None,
        })
    }
}
