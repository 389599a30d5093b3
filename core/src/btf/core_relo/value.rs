//! One side's value of a relocation: a field's offset, size, existence, signedness or
//! bitfield shifts; a type's id, existence, size or match; an enumerator's existence or
//! value (libbpf's `bpf_core_calc_{field,type,enumval}_relo`).

use super::kind::CoreReloKind;
use super::spec::{skip, Fail, Spec};
use crate::btf::types::{Kind, INT_SIGNED};
use crate::btf::Btf;

/// One side's computed value.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Val {
    pub(super) val: u64,
    pub(super) size: u32,
    pub(super) type_id: u32,
    pub(super) validate: bool,
}

/// libbpf's `bpf_core_calc_field_relo`.
pub(super) fn calc_field(
    btf: &Btf<'_>,
    kind: CoreReloKind,
    spec: Option<&Spec<'_>>,
    little: bool,
) -> Result<Val, Fail> {
    if kind == CoreReloKind::FieldExists {
        return Ok(Val {
            val: u64::from(spec.is_some()),
            validate: true,
            ..Val::default()
        });
    }
    let spec = spec.ok_or(Fail::Poison("field not found in the target BTF"))?;
    let acc = *spec.last().ok_or(Fail::Hard("empty spec"))?;
    let bit_off =
        u32::try_from(spec.bit_offset).map_err(|_| Fail::Hard("field offset overflows"))?;
    if acc.name.is_none() {
        let sz = btf.size_of(acc.type_id)?;
        return match kind {
            CoreReloKind::FieldByteOffset => Ok(Val {
                val: u64::from(bit_off / 8),
                size: sz,
                type_id: acc.type_id,
                validate: true,
            }),
            CoreReloKind::FieldByteSize => Ok(Val {
                val: u64::from(sz),
                validate: true,
                ..Val::default()
            }),
            _ => Err(Fail::Hard(
                "relocation kind cannot be applied to an array access",
            )),
        };
    }
    let t = btf
        .ty(acc.type_id)
        .ok_or(Fail::Hard("accessor type out of range"))?;
    let m = t
        .member(acc.idx)
        .ok_or(Fail::Hard("member index out of range"))?;
    let (field_type_id, mt) = skip(btf, m.type_id)?;
    let mut bit_sz = m.bitfield_size;
    let bitfield = bit_sz > 0;
    let (byte_off, byte_sz);
    if bitfield {
        let mut sz = mt
            .and_then(|t| t.size())
            .filter(|&s| s > 0)
            .ok_or(Fail::Hard("bitfield of a type without size"))?;
        let mut off = bit_off / 8 / sz * sz;
        while u64::from(bit_off) + u64::from(bit_sz) - u64::from(off) * 8 > u64::from(sz) * 8 {
            if sz >= 8 {
                return Err(Fail::Hard("bitfield cannot be read with a 64-bit load"));
            }
            sz *= 2;
            off = bit_off / 8 / sz * sz;
        }
        (byte_off, byte_sz) = (off, sz);
    } else {
        byte_sz = btf.size_of(field_type_id)?;
        byte_off = bit_off / 8;
        bit_sz = byte_sz.wrapping_mul(8);
    }
    let mut v = Val {
        validate: !bitfield,
        ..Val::default()
    };
    v.val = match kind {
        CoreReloKind::FieldByteOffset => {
            if !bitfield {
                v.size = byte_sz;
                v.type_id = field_type_id;
            }
            u64::from(byte_off)
        }
        CoreReloKind::FieldByteSize => u64::from(byte_sz),
        CoreReloKind::FieldSigned => {
            v.validate = true;
            let signed = mt.is_some_and(|t| {
                (t.kind().is_any_enum() && t.kind_flag())
                    || t.int().is_some_and(|i| i.encoding & INT_SIGNED != 0)
            });
            u64::from(signed)
        }
        CoreReloKind::FieldLshiftU64 => {
            let s = if little {
                64u32.wrapping_sub(
                    bit_off
                        .wrapping_add(bit_sz)
                        .wrapping_sub(byte_off.wrapping_mul(8)),
                )
            } else {
                (8u32.wrapping_sub(byte_sz))
                    .wrapping_mul(8)
                    .wrapping_add(bit_off.wrapping_sub(byte_off.wrapping_mul(8)))
            };
            u64::from(s)
        }
        CoreReloKind::FieldRshiftU64 => {
            v.validate = true;
            u64::from(64u32.wrapping_sub(bit_sz))
        }
        _ => return Err(Fail::Hard("unknown relocation kind")),
    };
    Ok(v)
}

/// libbpf's `bpf_core_calc_type_relo`.
pub(super) fn calc_type(btf: &Btf<'_>, kind: CoreReloKind, root: Option<u32>) -> Result<Val, Fail> {
    let Some(root) = root else {
        return Ok(Val {
            validate: true,
            ..Val::default()
        });
    };
    let mut v = Val {
        validate: true,
        ..Val::default()
    };
    v.val = match kind {
        CoreReloKind::TypeIdTarget => {
            v.validate = false;
            u64::from(root)
        }
        CoreReloKind::TypeExists | CoreReloKind::TypeMatches => 1,
        CoreReloKind::TypeSize => u64::from(btf.size_of(root)?),
        _ => return Err(Fail::Hard("unknown relocation kind")),
    };
    Ok(v)
}

/// libbpf's `bpf_core_calc_enumval_relo`.
pub(super) fn calc_enum(
    btf: &Btf<'_>,
    kind: CoreReloKind,
    spec: Option<&Spec<'_>>,
) -> Result<Val, Fail> {
    let val = match kind {
        CoreReloKind::EnumvalExists => u64::from(spec.is_some()),
        CoreReloKind::EnumvalValue => {
            let spec = spec.ok_or(Fail::Poison("enumerator not found in the target BTF"))?;
            let acc = spec.get(0).ok_or(Fail::Hard("empty spec"))?;
            let t = btf
                .ty(acc.type_id)
                .ok_or(Fail::Hard("enum type out of range"))?;
            let v = t
                .enum_value(acc.idx)
                .ok_or(Fail::Hard("enumerator out of range"))?;
            if t.kind() == Kind::Enum {
                // `struct btf_enum.val` is an `__s32`: sign-extended, as libbpf does.
                v.raw as u32 as i32 as i64 as u64
            } else {
                v.raw
            }
        }
        _ => return Err(Fail::Hard("unknown relocation kind")),
    };
    Ok(Val {
        val,
        validate: true,
        ..Val::default()
    })
}
