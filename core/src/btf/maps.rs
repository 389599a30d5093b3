//! BTF-defined maps: the variables of the `.maps` DATASEC, decoded as libbpf does.
//!
//! Each map is a VAR whose type is a STRUCT of attribute members written with libbpf's
//! macros: `__uint(name, N)` is a member `int (*name)[N]` (a PTR to an ARRAY of N
//! elements: the value is N), `__type(name, T)` a member `T *name` (the value is the
//! pointee's size and type id), `__array(values, struct { ... })` a zero-length ARRAY of
//! pointers to the inner map's definition (map-in-map) or to a FUNC_PROTO (prog array),
//! `__ulong(map_extra, N)` also an anonymous enum holding N.

use super::error::{BtfError, BtfResult, ErrName};
use super::types::{Entries, Kind, Type, VarSecInfo};
use super::Btf;

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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BtfMapDef<'a> {
    /// Map name (the variable's).
    pub name: &'a str,
    /// The VAR's type id.
    pub var_type_id: u32,
    /// The definition STRUCT's type id.
    pub def_type_id: u32,
    /// Offset of the variable in `.maps` (from the DATASEC; the symbol's value in a `.o`).
    pub offset: u32,
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
    /// `pinning` (0 none, 1 `LIBBPF_PIN_BY_NAME`).
    pub pinning: u32,
    /// `map_extra`.
    pub map_extra: u64,
    /// The key's type id, 0 when only a size is given.
    pub key_type_id: u32,
    /// The value's type id, 0 when only a size is given.
    pub value_type_id: u32,
    /// For map-in-map: the inner map's definition.
    pub inner: Option<InnerMapDef>,
    /// For a prog array with `values`: the FUNC_PROTO type id of its programs.
    pub prog_proto_id: Option<u32>,
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

struct Ctx<'a> {
    map: &'a [u8],
    inner: bool,
}

impl Ctx<'_> {
    fn err(&self, field: &[u8], what: &'static str) -> BtfError {
        let mut name = [0u8; super::error::NAME_IN_ERROR];
        let n = self.map.len().min(name.len());
        let mut len = n;
        if let (Some(d), Some(s)) = (name.get_mut(..n), self.map.get(..n)) {
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
    let var = btf.type_by_id(v.type_id)?;
    let cx = Ctx {
        map: var.name_bytes(),
        inner: false,
    };
    if var.kind() != Kind::Var {
        return Err(cx.err(b"", "entry of .maps is not a VAR"));
    }
    let def_id = btf
        .resolve(var.size_or_type())
        .map_err(|_| cx.err(b"", "definition type chain too deep"))?;
    let def = btf
        .ty(def_id)
        .filter(|t| t.kind() == Kind::Struct)
        .ok_or(cx.err(b"", "definition is not a STRUCT"))?;
    let mut inner = None;
    let mut proto = None;
    let a = parse_def(btf, &def, &cx, Some((&mut inner, &mut proto)))?;
    Ok(BtfMapDef {
        name: var.name(),
        var_type_id: v.type_id,
        def_type_id: def_id,
        offset: v.offset,
        map_type: a.map_type,
        key_size: a.key_size,
        value_size: a.value_size,
        max_entries: a.max_entries,
        map_flags: a.map_flags,
        numa_node: a.numa_node,
        pinning: a.pinning,
        map_extra: a.map_extra,
        key_type_id: a.key_type_id,
        value_type_id: a.value_type_id,
        inner,
        prog_proto_id: proto,
    })
}

type InnerOut<'o> = (&'o mut Option<InnerMapDef>, &'o mut Option<u32>);

fn parse_def(
    btf: &Btf<'_>,
    def: &Type<'_>,
    cx: &Ctx<'_>,
    mut outer: Option<InnerOut<'_>>,
) -> BtfResult<MapAttrs> {
    let mut a = MapAttrs::default();
    let vlen = u32::from(def.vlen());
    for (i, m) in def.members().enumerate() {
        let field = m.name.as_bytes();
        let err = |what| cx.err(field, what);
        // `__uint(name, N)`: PTR (through modifiers) to ARRAY of N.
        let int = || -> BtfResult<u32> {
            let p = btf
                .resolve_type(m.type_id)
                .ok()
                .flatten()
                .filter(|t| t.kind() == Kind::Ptr)
                .ok_or(err("expected a PTR (__uint)"))?;
            btf.ty(p.size_or_type())
                .and_then(|t| t.array())
                .map(|arr| arr.nelems)
                .ok_or(err("expected a PTR to an ARRAY (__uint)"))
        };
        // `__type(name, T)`: PTR to T, giving T's size and id.
        let pointee = || -> BtfResult<(u32, u32)> {
            let p = btf
                .ty(m.type_id)
                .filter(|t| t.kind() == Kind::Ptr)
                .ok_or(err("expected a PTR (__type)"))?;
            let id = p.size_or_type();
            let size = btf
                .size_of(id)
                .map_err(|_| err("cannot determine the size of the pointee"))?;
            Ok((size, id))
        };
        match field {
            b"type" => a.map_type = int()?,
            b"max_entries" => a.max_entries = int()?,
            b"map_flags" => a.map_flags = int()?,
            b"numa_node" => a.numa_node = int()?,
            b"key_size" => {
                let n = int()?;
                if a.key_size != 0 && a.key_size != n {
                    return Err(err("conflicting key size"));
                }
                a.key_size = n;
            }
            b"value_size" => {
                let n = int()?;
                if a.value_size != 0 && a.value_size != n {
                    return Err(err("conflicting value size"));
                }
                a.value_size = n;
            }
            b"key" => {
                let (size, id) = pointee()?;
                if a.key_size != 0 && a.key_size != size {
                    return Err(err("conflicting key size"));
                }
                a.key_size = size;
                a.key_type_id = id;
            }
            b"value" => {
                let (size, id) = pointee()?;
                if a.value_size != 0 && a.value_size != size {
                    return Err(err("conflicting value size"));
                }
                a.value_size = size;
                a.value_type_id = id;
            }
            b"pinning" => {
                if cx.inner {
                    return Err(err("an inner map cannot be pinned"));
                }
                let n = int()?;
                if n > PIN_BY_NAME {
                    return Err(err("pinning is neither 0 (none) nor 1 (by name)"));
                }
                a.pinning = n;
            }
            b"map_extra" => {
                a.map_extra = match int() {
                    Ok(n) => u64::from(n),
                    // `__ulong(map_extra, N)`: an enum whose only enumerator is N.
                    Err(e) => btf
                        .resolve_type(m.type_id)
                        .ok()
                        .flatten()
                        .filter(|t| t.kind().is_any_enum() && t.vlen() == 1)
                        .and_then(|t| t.enum_value(0))
                        .map(|v| v.raw)
                        .ok_or(e)?,
                };
            }
            b"values" => {
                let Some((inner_out, proto_out)) = outer.as_mut() else {
                    return Err(err("multi-level inner maps are not supported"));
                };
                if i as u32 + 1 != vlen {
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
                    .ty(m.type_id)
                    .and_then(|t| t.array())
                    .filter(|arr| arr.nelems == 0)
                    .ok_or(err("not a zero-length array"))?;
                let ptr = btf
                    .resolve_type(arr.elem_type)
                    .ok()
                    .flatten()
                    .filter(|t| t.kind() == Kind::Ptr)
                    .ok_or(err("elements are not pointers"))?;
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
                let inner_def = target
                    .filter(|t| t.kind() == Kind::Struct)
                    .ok_or(err("inner map definition is not a STRUCT"))?;
                let icx = Ctx {
                    map: cx.map,
                    inner: true,
                };
                let attrs = parse_def(btf, &inner_def, &icx, None)?;
                **inner_out = Some(InnerMapDef {
                    def_type_id: target_id,
                    attrs,
                });
            }
            _ => return Err(err("unknown field")),
        }
    }
    if a.map_type == 0 {
        return Err(cx.err(b"type", "map type is not specified"));
    }
    Ok(a)
}
