//! `extern` Kconfig variables (`extern int CONFIG_HZ __kconfig;`): the `.kconfig` DATASEC
//! of `.BTF` lists them; they live in one internal array map laid out as libbpf lays it
//! out (by alignment, largest first, then by size, then by name), and the loader fills
//! the values from the running kernel's configuration.
//!
//! Offsets are computed on demand from the DATASEC (no storage): each lookup walks the
//! variables, at most [`MAX_EXTERNS`] of them, so a layout costs O(n²) with small n.

use crate::btf::{Btf, Kind, INT_BOOL, INT_SIGNED};
use crate::error::{Error, Result};

/// Most `.kconfig` externs an object may declare.
pub const MAX_EXTERNS: usize = 256;

/// The C type of a Kconfig extern, as libbpf classifies it (`enum kcfg_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum KconfigKind {
    /// `bool`: `y` is 1, `n` 0 (`m` is an error).
    Bool,
    /// `enum libbpf_tristate`: `n` 0, `y` 1, `m` 2.
    Tristate,
    /// `char`: the letter `y`, `m` or `n`, or a number.
    Char,
    /// An integer of [`KconfigExtern::size`] bytes (1, 2, 4, 8).
    Int {
        /// Whether it is signed.
        signed: bool,
    },
    /// `char[N]`: a string value, NUL-terminated and cut to N - 1 bytes.
    CharArray,
    /// A type libbpf cannot fill.
    Unknown,
}

/// One Kconfig extern and its slot in the `.kconfig` map's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct KconfigExtern<'a> {
    /// The variable's name (`CONFIG_HZ`, `LINUX_KERNEL_VERSION` ...).
    pub name: &'a str,
    /// Offset of its value in the map.
    pub offset: u32,
    /// Size of its value.
    pub size: u32,
    /// Its type.
    pub kind: KconfigKind,
    /// Declared `__weak`: left zero when the kernel's configuration lacks it.
    pub weak: bool,
}

/// One variable of the `.kconfig` DATASEC with its sort keys.
#[derive(Clone, Copy)]
struct Var<'a> {
    name: &'a str,
    size: u32,
    align: u32,
    kind: KconfigKind,
}

fn classify(btf: &Btf<'_>, type_id: u32) -> KconfigKind {
    let Ok(Some(t)) = btf.resolve_type(type_id) else {
        return KconfigKind::Unknown;
    };
    match t.kind() {
        Kind::Int => {
            let Some(i) = t.int() else {
                return KconfigKind::Unknown;
            };
            let size = t.size_or_type();
            if i.encoding & INT_BOOL != 0 {
                return if size == 1 {
                    KconfigKind::Bool
                } else {
                    KconfigKind::Unknown
                };
            }
            if size == 1 {
                return KconfigKind::Char;
            }
            if !matches!(size, 2 | 4 | 8) {
                return KconfigKind::Unknown;
            }
            KconfigKind::Int {
                signed: i.encoding & INT_SIGNED != 0,
            }
        }
        Kind::Enum | Kind::Enum64 if t.name() == "libbpf_tristate" => KconfigKind::Tristate,
        Kind::Array => match t.array() {
            Some(a) if a.nelems > 0 && classify(btf, a.elem_type) == KconfigKind::Char => {
                KconfigKind::CharArray
            }
            _ => KconfigKind::Unknown,
        },
        _ => KconfigKind::Unknown,
    }
}

/// The variables of the `.kconfig` DATASEC, if any.
fn vars<'b, 'a: 'b>(
    btf: &'b Btf<'a>,
) -> Result<Option<impl Iterator<Item = Result<Var<'a>>> + 'b>> {
    let Some(sec) = btf.find(".kconfig", Kind::Datasec) else {
        return Ok(None);
    };
    if sec.datasec_vars().len() > MAX_EXTERNS {
        return Err(Error::Capacity {
            what: ".kconfig externs",
            limit: MAX_EXTERNS as u32,
        });
    }
    Ok(Some(sec.datasec_vars().map(move |v| {
        let var = btf.type_by_id(v.type_id)?;
        let ty = var.size_or_type();
        let size = btf.size_of(ty)?;
        let kind = classify(btf, ty);
        let align = match kind {
            KconfigKind::Int { .. } | KconfigKind::Tristate => size.clamp(1, 8),
            _ => 1,
        };
        Ok(Var {
            name: var.name(),
            size,
            align,
            kind,
        })
    })))
}

/// libbpf's `cmp_externs` for Kconfig externs: whether `a` comes before `b`.
fn before(a: &Var<'_>, b: &Var<'_>) -> bool {
    (core::cmp::Reverse(a.align), a.size, a.name) < (core::cmp::Reverse(b.align), b.size, b.name)
}

/// Offset of `v` in the layout: the sum, in sort order, of everything before it.
fn offset_of(btf: &Btf<'_>, v: &Var<'_>) -> Result<u32> {
    let Some(all) = vars(btf)? else { return Ok(0) };
    let mut end = 0u32;
    for w in all {
        let w = w?;
        if before(&w, v) {
            end = end.checked_add(w.size).ok_or(Error::Capacity {
                what: ".kconfig map bytes",
                limit: u32::MAX,
            })?;
        }
    }
    // Every earlier extern has an alignment at least v's and sizes multiple of their
    // own alignment for ints; only chars and arrays (alignment 1) come after smaller
    // ones, so rounding the sum up to v's alignment is exact.
    Ok(end.next_multiple_of(v.align.max(1)))
}

/// The Kconfig extern named `name`, with its offset, if the object declares it.
///
/// # Errors
/// [`Error::Btf`] for malformed types; [`Error::Capacity`] past [`MAX_EXTERNS`].
pub(crate) fn kconfig_extern<'a>(btf: &Btf<'a>, name: &str) -> Result<Option<KconfigExtern<'a>>> {
    let Some(all) = vars(btf)? else {
        return Ok(None);
    };
    let mut found = None;
    for v in all {
        let v = v?;
        if v.name == name {
            found = Some(v);
            break;
        }
    }
    let Some(v) = found else { return Ok(None) };
    Ok(Some(KconfigExtern {
        name: v.name,
        offset: offset_of(btf, &v)?,
        size: v.size,
        kind: v.kind,
        weak: false,
    }))
}

/// Size of the `.kconfig` map's value: the end of the last extern, or `None` when the
/// object declares none.
pub(crate) fn kconfig_size(btf: &Btf<'_>) -> Result<Option<u32>> {
    let Some(all) = vars(btf)? else {
        return Ok(None);
    };
    let mut end = None;
    for v in all {
        let v = v?;
        let e = offset_of(btf, &v)?
            .checked_add(v.size)
            .ok_or(Error::Capacity {
                what: ".kconfig map bytes",
                limit: u32::MAX,
            })?;
        end = Some(end.unwrap_or(0).max(e));
    }
    Ok(end)
}

/// The Kconfig externs of `btf` with their slots in the `.kconfig` map, in DATASEC
/// order, written into `out`; `weak` tells whether a name is declared `__weak` (see
/// [`Object::kconfig_externs`](super::Object::kconfig_externs)).
pub(crate) fn kconfig_externs<'s>(
    btf: &Btf<'s>,
    weak: impl Fn(&str) -> bool,
    out: &mut [Option<KconfigExtern<'s>>],
) -> Result<usize> {
    let Some(all) = vars(btf)? else {
        return Ok(0);
    };
    let limit = out.len() as u32;
    let mut n = 0;
    for v in all {
        let v = v?;
        let slot = out.get_mut(n).ok_or(Error::Capacity {
            what: ".kconfig externs in the output buffer",
            limit,
        })?;
        *slot = Some(KconfigExtern {
            name: v.name,
            offset: offset_of(btf, &v)?,
            size: v.size,
            kind: v.kind,
            weak: weak(v.name),
        });
        n += 1;
    }
    Ok(n)
}
