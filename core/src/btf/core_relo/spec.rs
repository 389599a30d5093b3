//! The access spec: an access string (`0:1:2`) parsed against the local BTF into accessors
//! (libbpf's `bpf_core_spec`), and the type helpers the matcher shares.

use super::kind::CoreReloKind;
use crate::btf::error::BtfError;
use crate::btf::types::Type;
use crate::btf::Btf;

/// Longest access path (libbpf's `BPF_CORE_SPEC_MAX_LEN`).
pub const MAX_SPEC_LEN: usize = 64;

#[derive(Clone, Copy, Debug)]
pub(super) struct Acc<'b> {
    pub(super) type_id: u32,
    pub(super) idx: u32,
    /// Member (or enumerator) name; `None` for array accesses.
    pub(super) name: Option<&'b [u8]>,
}

pub(super) const NO_ACC: Acc<'static> = Acc {
    type_id: 0,
    idx: 0,
    name: None,
};

#[derive(Clone, Copy, Debug)]
pub(super) struct Spec<'b> {
    pub(super) root: u32,
    pub(super) acc: [Acc<'b>; MAX_SPEC_LEN],
    pub(super) len: usize,
    pub(super) raw_len: usize,
    pub(super) bit_offset: u64,
}

impl<'b> Spec<'b> {
    pub(super) fn new(root: u32) -> Self {
        Spec {
            root,
            acc: [NO_ACC; MAX_SPEC_LEN],
            len: 0,
            raw_len: 0,
            bit_offset: 0,
        }
    }
    pub(super) fn push(&mut self, a: Acc<'b>) -> Result<(), Fail> {
        let slot = self
            .acc
            .get_mut(self.len)
            .ok_or(Fail::Hard("access path too long"))?;
        *slot = a;
        self.len += 1;
        Ok(())
    }
    pub(super) fn last(&self) -> Option<&Acc<'b>> {
        self.acc.get(self.len.checked_sub(1)?)
    }
    pub(super) fn get(&self, i: usize) -> Option<&Acc<'b>> {
        self.acc.get(..self.len)?.get(i)
    }
}

/// Why a computation stopped.
#[derive(Clone, Copy, Debug)]
pub(super) enum Fail {
    /// Poison the instruction (libbpf's `-EUCLEAN`).
    Poison(&'static str),
    /// The relocation cannot be applied.
    Hard(&'static str),
}

impl From<BtfError> for Fail {
    fn from(e: BtfError) -> Self {
        Fail::Hard(match e {
            BtfError::TooDeep { .. } => "type chain too deep or cyclic",
            BtfError::NoSize { .. } => "type has no size",
            _ => "malformed type reference",
        })
    }
}

pub(super) fn skip<'b>(btf: &Btf<'b>, id: u32) -> Result<(u32, Option<Type<'b>>), Fail> {
    let r = btf.resolve(id)?;
    Ok((r, btf.ty(r)))
}

pub(super) fn kind_num(t: &Option<Type<'_>>) -> u8 {
    t.map_or(0, |t| t.kind() as u8)
}

pub(super) fn kinds_compat(a: &Option<Type<'_>>, b: &Option<Type<'_>>) -> bool {
    kind_num(a) == kind_num(b)
        || (a.is_some_and(|t| t.kind().is_any_enum()) && b.is_some_and(|t| t.kind().is_any_enum()))
}

pub(super) fn is_composite(t: &Option<Type<'_>>) -> bool {
    t.is_some_and(|t| t.kind().is_composite())
}

/// Parses `access` ("0:1:2") against the local BTF (libbpf's `bpf_core_parse_spec`).
pub(super) fn parse_spec<'b>(
    btf: &Btf<'b>,
    root: u32,
    kind: CoreReloKind,
    access: &[u8],
) -> Result<Spec<'b>, Fail> {
    let mut spec = Spec::new(root);
    if access.is_empty() || access.first() == Some(&b':') {
        return Err(Fail::Hard("empty access string"));
    }
    if kind.is_type_based() {
        return if access == b"0" {
            Ok(spec)
        } else {
            Err(Fail::Hard(
                "type relocation with access string other than 0",
            ))
        };
    }
    let mut raw = [0u32; MAX_SPEC_LEN];
    for part in access.split(|&b| b == b':') {
        if part.is_empty() || part.len() > 10 || !part.iter().all(u8::is_ascii_digit) {
            return Err(Fail::Hard("access string is not numbers separated by ':'"));
        }
        let v = part
            .iter()
            .try_fold(0u32, |v, &d| {
                v.checked_mul(10)?.checked_add(u32::from(d - b'0'))
            })
            .filter(|&v| v <= i32::MAX as u32)
            .ok_or(Fail::Hard("access index too large"))?;
        let slot = raw
            .get_mut(spec.raw_len)
            .ok_or(Fail::Hard("access string too long"))?;
        *slot = v;
        spec.raw_len += 1;
    }
    let (mut id, t) = skip(btf, root)?;
    let first = raw.first().copied().unwrap_or(0);
    if kind.is_enumval_based() {
        let t = t
            .filter(|t| t.kind().is_any_enum())
            .ok_or(Fail::Hard("enumerator relocation on a non-enum"))?;
        if spec.raw_len > 1 {
            return Err(Fail::Hard("enumerator access string longer than one index"));
        }
        let v = t
            .enum_value(first)
            .ok_or(Fail::Hard("enumerator index out of range"))?;
        spec.push(Acc {
            type_id: id,
            idx: first,
            name: Some(btf.string_bytes(v.name_off)),
        })?;
        return Ok(spec);
    }
    if !kind.is_field_based() {
        return Err(Fail::Hard("unknown relocation kind"));
    }
    spec.push(Acc {
        type_id: id,
        idx: first,
        name: None,
    })?;
    let sz = btf.size_of(id)?;
    spec.bit_offset = u64::from(first) * u64::from(sz) * 8;
    for &idx in raw.get(1..spec.raw_len).unwrap_or_default() {
        let (rid, t) = skip(btf, id)?;
        id = rid;
        let Some(t) = t else {
            return Err(Fail::Hard("access into void"));
        };
        if t.kind().is_composite() {
            let m = t
                .member(idx)
                .ok_or(Fail::Hard("member index out of range"))?;
            spec.bit_offset += u64::from(m.bit_offset);
            if m.name_off != 0 {
                let name = btf.string_bytes(m.name_off);
                if name.is_empty() {
                    return Err(Fail::Hard("member with an empty name"));
                }
                spec.push(Acc {
                    type_id: id,
                    idx,
                    name: Some(name),
                })?;
            }
            id = m.type_id;
        } else if let Some(a) = t.array() {
            let (eid, _) = skip(btf, a.elem_type)?;
            let flex = is_flex_arr(btf, spec.last(), a.nelems);
            if !flex && idx >= a.nelems {
                return Err(Fail::Hard("array index out of range"));
            }
            id = eid;
            spec.push(Acc {
                type_id: id,
                idx,
                name: None,
            })?;
            let sz = btf.size_of(id)?;
            spec.bit_offset += u64::from(idx) * u64::from(sz) * 8;
        } else {
            return Err(Fail::Hard(
                "access into a type that is not a struct, union or array",
            ));
        }
    }
    Ok(spec)
}

/// A zero-length array that is the last member of the enclosing struct.
pub(super) fn is_flex_arr(btf: &Btf<'_>, acc: Option<&Acc<'_>>, nelems: u32) -> bool {
    let Some(acc) = acc else { return false };
    if acc.name.is_none() || nelems > 0 {
        return false;
    }
    btf.ty(acc.type_id)
        .is_some_and(|t| u32::from(t.vlen()) == acc.idx + 1)
}
