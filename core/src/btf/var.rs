//! Global variables by their BTF name: the VARs of the data sections' DATASECs (`.rodata`,
//! `.rodata.*`, `.data`, `.data.*`, `.bss`, `.bss.*`), what each holds, and a value given as
//! text checked against the variable's type and written in its bytes (`sluice record --set
//! NAME=VALUE`, libbpf's skeleton `rodata->NAME = VALUE`).
//!
//! Integers of every width and sign (decimal, `0x` hex, `0o` octal, `0b` binary, a `-` for
//! negative values; the range of the type is checked), `bool` (`true`, `false`, `1`, `0`),
//! enums by enumerator name or value, and `char` arrays from a string that leaves room
//! for its NUL. Other types (structs, pointers, floats) are refused.

use core::fmt;

use super::section::Btf;
use super::types::{Kind, Type, INT_BOOL};
use super::BtfError;
use scroll::Endian;

/// One global variable of a data section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalVar<'a> {
    /// The variable's name.
    pub name: &'a str,
    /// The DATASEC (the section, and the map) holding it: `.rodata`, `.bss`, `.data.foo`.
    pub section: &'a str,
    /// The VAR's type id (what [`value_kind`] reads).
    pub type_id: u32,
    /// Its offset in the section, as the DATASEC says (clang writes it; the loader's
    /// fix-up takes the ELF symbol's value where they differ).
    pub offset: u32,
    /// Its size in bytes, as the DATASEC says.
    pub size: u32,
}

/// Whether DATASEC `name` is a global data section, by libbpf's names.
#[must_use]
pub fn is_data_section(name: &str) -> bool {
    [".rodata", ".data", ".bss"].iter().any(|base| {
        name.strip_prefix(base)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
    })
}

/// Every global variable of `btf`'s data sections, DATASEC by DATASEC in type order.
pub fn global_vars<'b, 'a: 'b>(btf: &'b Btf<'a>) -> impl Iterator<Item = GlobalVar<'a>> + 'b {
    btf.types()
        .filter(|t| t.kind() == Kind::Datasec && is_data_section(t.name()))
        .flat_map(move |sec| {
            sec.datasec_vars().filter_map(move |v| {
                let var = btf.ty(v.type_id).filter(|t| t.kind() == Kind::Var)?;
                Some(GlobalVar {
                    name: var.name(),
                    section: sec.name(),
                    type_id: var.ref_type()?,
                    offset: v.offset,
                    size: v.size,
                })
            })
        })
}

/// The global variable named `name`, if any.
#[must_use]
pub fn find_global_var<'a>(btf: &Btf<'a>, name: &str) -> Option<GlobalVar<'a>> {
    global_vars(btf).find(|v| v.name == name)
}

/// What a variable's type takes as a value.
#[derive(Clone, Copy, Debug)]
pub enum ValueKind<'a> {
    /// An integer of `size` bytes (1, 2, 4, 8 or 16).
    Int {
        /// Bytes.
        size: u32,
        /// Signed.
        signed: bool,
    },
    /// `bool` (`_Bool`): `true`, `false`, `1`, `0`.
    Bool {
        /// Bytes (1).
        size: u32,
    },
    /// An enum: an enumerator's name, or a number in the range of its size.
    Enum {
        /// The ENUM or ENUM64 type.
        ty: Type<'a>,
        /// Bytes.
        size: u32,
        /// Whether its values are signed.
        signed: bool,
    },
    /// An array of `len` one-byte integers: a string of at most `len - 1` bytes.
    Chars {
        /// Elements.
        len: u32,
    },
    /// Any other type (struct, union, pointer, float, array of other elements).
    Other(Kind),
}

impl fmt::Display for ValueKind<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueKind::Int { size, signed } => {
                write!(f, "{}{}", if *signed { "s" } else { "u" }, size * 8)
            }
            ValueKind::Bool { .. } => f.write_str("bool"),
            ValueKind::Enum { ty, .. } if ty.name().is_empty() => f.write_str("enum"),
            ValueKind::Enum { ty, .. } => write!(f, "enum {}", ty.name()),
            ValueKind::Chars { len } => write!(f, "char[{len}]"),
            ValueKind::Other(kind) => f.write_str(kind.name()),
        }
    }
}

/// What type `type_id` (through typedefs and `const volatile`) takes as a value.
///
/// # Errors
/// [`BtfError::NoType`] or [`BtfError::TooDeep`] from resolving it.
pub fn value_kind<'a>(btf: &Btf<'a>, type_id: u32) -> Result<ValueKind<'a>, BtfError> {
    let Some(t) = btf.resolve_type(type_id)? else {
        return Ok(ValueKind::Other(Kind::Fwd));
    };
    Ok(match t.kind() {
        Kind::Int => {
            let info = t.int();
            let size = t.size().unwrap_or(0);
            match info {
                Some(i) if i.encoding & INT_BOOL != 0 => ValueKind::Bool { size },
                Some(i) if matches!(size, 1 | 2 | 4 | 8 | 16) => ValueKind::Int {
                    size,
                    signed: i.is_signed(),
                },
                _ => ValueKind::Other(Kind::Int),
            }
        }
        Kind::Enum | Kind::Enum64 => ValueKind::Enum {
            ty: t,
            size: t.size().unwrap_or(0),
            signed: t.enum_is_signed(),
        },
        Kind::Array => {
            let Some(a) = t.array() else {
                return Ok(ValueKind::Other(Kind::Array));
            };
            let elem = btf.resolve_type(a.elem_type)?;
            match elem {
                Some(e) if e.kind() == Kind::Int && e.size() == Some(1) => {
                    ValueKind::Chars { len: a.nelems }
                }
                _ => ValueKind::Other(Kind::Array),
            }
        }
        other => ValueKind::Other(other),
    })
}

/// Why a value does not fit a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SetError {
    /// Not a number (for an integer, or an enum without that enumerator).
    NotANumber,
    /// A number past the type's range.
    OutOfRange {
        /// The type's bytes.
        size: u32,
        /// Whether it is signed.
        signed: bool,
    },
    /// Not `true`, `false`, `1` or `0`.
    NotBool,
    /// Neither an enumerator of the enum nor a number in its range.
    NoEnumerator,
    /// A string that leaves no room for its NUL.
    TooLong {
        /// The array's length (the string may have one byte less).
        len: u32,
    },
    /// A type no text value is read into.
    Unsupported(Kind),
    /// The variable's size in the section differs from its type's.
    Size {
        /// The section's bytes for it.
        have: usize,
        /// The type's.
        want: u32,
    },
}

impl fmt::Display for SetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SetError::NotANumber => f.write_str("not a number"),
            SetError::OutOfRange { size, signed } => {
                let (lo, hi) = range(size, signed);
                write!(f, "out of range ({lo}..={hi})")
            }
            SetError::NotBool => f.write_str("want true, false, 1 or 0"),
            SetError::NoEnumerator => f.write_str("no such enumerator, nor a value in range"),
            SetError::TooLong { len } => write!(
                f,
                "longer than {} bytes (the array holds {len} with the NUL)",
                len.saturating_sub(1)
            ),
            SetError::Unsupported(kind) => {
                write!(f, "a {} variable cannot be set from text", kind.name())
            }
            SetError::Size { have, want } => {
                write!(f, "the section has {have} bytes for it, its type {want}")
            }
        }
    }
}

/// The range of an integer of `size` bytes.
fn range(size: u32, signed: bool) -> (i128, u128) {
    let bits = size.saturating_mul(8).clamp(1, 128);
    match (signed, bits) {
        (true, b) => (
            i128::MIN >> (128 - b),
            (i128::MAX >> (128 - b)).unsigned_abs(),
        ),
        (false, b) => (0, u128::MAX >> (128 - b)),
    }
}

/// A number as text: decimal, `0x`, `0o`, `0b`, with an optional `-` or `+`. Returns
/// `(negative, magnitude)`.
fn parse_number(text: &str) -> Option<(bool, u128)> {
    let t = text.trim();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, t.get(1..)?),
        Some(b'+') => (false, t.get(1..)?),
        _ => (false, t),
    };
    let lower = |p: &str| t.get(..2).is_some_and(|h| h.eq_ignore_ascii_case(p));
    let (radix, digits) = if lower("0x") {
        (16, t.get(2..)?)
    } else if lower("0o") {
        (8, t.get(2..)?)
    } else if lower("0b") {
        (2, t.get(2..)?)
    } else {
        (10, t)
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let digits_ok = digits
        .bytes()
        .all(|b| b == b'_' || b.is_ascii_alphanumeric());
    if !digits_ok {
        return None;
    }
    let mut v: u128 = 0;
    let mut any = false;
    for b in digits.bytes().filter(|&b| b != b'_') {
        let d = (b as char).to_digit(radix)?;
        v = v
            .checked_mul(u128::from(radix))?
            .checked_add(u128::from(d))?;
        any = true;
    }
    any.then_some((neg, v))
}

/// The two's complement bits of `(neg, mag)` when it fits `size` bytes of that sign.
fn fit(neg: bool, mag: u128, size: u32, signed: bool) -> Option<u128> {
    let (lo, hi) = range(size, signed);
    if neg {
        let min = lo.unsigned_abs();
        if mag > min {
            return None;
        }
        Some(0u128.wrapping_sub(mag))
    } else {
        (mag <= hi).then_some(mag)
    }
}

/// Writes the low `out.len()` bytes of `bits` in `endian`.
fn put(bits: u128, endian: Endian, out: &mut [u8]) {
    let le = bits.to_le_bytes();
    let n = out.len().min(le.len());
    for (i, slot) in out.iter_mut().enumerate().take(n) {
        let from = if endian.is_little() { i } else { n - 1 - i };
        *slot = le.get(from).copied().unwrap_or(0);
    }
}

/// Writes `text` as a value of `kind` into `out` (the variable's bytes, in the byte order
/// of `endian`): every byte of `out` is written (a string's tail zeroed).
///
/// # Errors
/// [`SetError`] for a value that does not fit, or a type no text is read into.
pub fn encode_value(
    kind: &ValueKind<'_>,
    text: &str,
    endian: Endian,
    out: &mut [u8],
) -> Result<(), SetError> {
    let want = match *kind {
        ValueKind::Int { size, .. } | ValueKind::Bool { size } | ValueKind::Enum { size, .. } => {
            size
        }
        ValueKind::Chars { len } => len,
        ValueKind::Other(k) => return Err(SetError::Unsupported(k)),
    };
    if out.len() != want as usize {
        return Err(SetError::Size {
            have: out.len(),
            want,
        });
    }
    match *kind {
        ValueKind::Int { size, signed } => {
            let (neg, mag) = parse_number(text).ok_or(SetError::NotANumber)?;
            let bits = fit(neg, mag, size, signed).ok_or(SetError::OutOfRange { size, signed })?;
            put(bits, endian, out);
        }
        ValueKind::Bool { .. } => {
            let v = match text.trim() {
                "true" | "1" => 1,
                "false" | "0" => 0,
                _ => return Err(SetError::NotBool),
            };
            put(v, endian, out);
        }
        ValueKind::Enum { ty, size, signed } => {
            let named = ty.enum_values().find(|e| e.name == text.trim());
            let bits = match named {
                // The raw bits of the enumerator, cut to the enum's size.
                Some(e) => u128::from(e.raw),
                None => {
                    let (neg, mag) = parse_number(text).ok_or(SetError::NoEnumerator)?;
                    fit(neg, mag, size, signed).ok_or(SetError::NoEnumerator)?
                }
            };
            put(bits, endian, out);
        }
        ValueKind::Chars { len } => {
            let bytes = text.as_bytes();
            if bytes.len() >= len as usize {
                return Err(SetError::TooLong { len });
            }
            out.fill(0);
            if let Some(dst) = out.get_mut(..bytes.len()) {
                dst.copy_from_slice(bytes);
            }
        }
        ValueKind::Other(k) => return Err(SetError::Unsupported(k)),
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn int(size: u32, signed: bool, text: &str) -> Result<[u8; 16], SetError> {
        let mut out = [0u8; 16];
        let kind = ValueKind::Int { size, signed };
        encode_value(&kind, text, Endian::Little, &mut out[..size as usize])?;
        Ok(out)
    }

    #[test]
    fn integers_of_every_width_and_sign() {
        assert_eq!(int(1, false, "255").unwrap()[0], 255);
        assert_eq!(
            int(1, false, "256"),
            Err(SetError::OutOfRange {
                size: 1,
                signed: false
            })
        );
        assert_eq!(int(1, true, "-128").unwrap()[0], 0x80);
        assert!(int(1, true, "-129").is_err());
        assert!(int(1, true, "128").is_err());
        assert_eq!(&int(2, false, "0xBEEF").unwrap()[..2], &[0xef, 0xbe]);
        assert_eq!(&int(4, true, "-1").unwrap()[..4], &[0xff; 4]);
        assert!(int(4, false, "-1").is_err());
        assert_eq!(&int(4, false, "4294967295").unwrap()[..4], &[0xff; 4]);
        assert!(int(4, false, "4294967296").is_err());
        assert_eq!(
            &int(8, true, "-9223372036854775808").unwrap()[..8],
            &i64::MIN.to_le_bytes()
        );
        assert!(int(8, true, "9223372036854775808").is_err());
        assert_eq!(
            &int(8, false, "0xffff_ffff_ffff_ffff").unwrap()[..8],
            &[0xff; 8]
        );
        assert_eq!(&int(8, false, "0b101").unwrap()[..8], &5u64.to_le_bytes());
        assert_eq!(&int(8, false, "0o17").unwrap()[..8], &15u64.to_le_bytes());
        assert_eq!(
            &int(8, true, "-0x10").unwrap()[..8],
            &(-16i64).to_le_bytes()
        );
        assert_eq!(&int(16, true, "-2").unwrap(), &(-2i128).to_le_bytes());
        for bad in ["", "-", "0x", "12a", "--1", "1.5", "one", "0x-1"] {
            assert_eq!(int(4, true, bad), Err(SetError::NotANumber), "{bad}");
        }
    }

    #[test]
    fn big_endian_and_bool_and_chars() {
        let mut out = [0u8; 4];
        let kind = ValueKind::Int {
            size: 4,
            signed: false,
        };
        encode_value(&kind, "0x01020304", Endian::Big, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
        let mut b = [9u8; 1];
        let kind = ValueKind::Bool { size: 1 };
        encode_value(&kind, "true", Endian::Little, &mut b).unwrap();
        assert_eq!(b, [1]);
        encode_value(&kind, "0", Endian::Little, &mut b).unwrap();
        assert_eq!(b, [0]);
        assert_eq!(
            encode_value(&kind, "yes", Endian::Little, &mut b),
            Err(SetError::NotBool)
        );
        let mut s = [0xaau8; 8];
        let kind = ValueKind::Chars { len: 8 };
        encode_value(&kind, "bash", Endian::Little, &mut s).unwrap();
        assert_eq!(&s, b"bash\0\0\0\0");
        encode_value(&kind, "1234567", Endian::Little, &mut s).unwrap();
        assert_eq!(
            encode_value(&kind, "12345678", Endian::Little, &mut s),
            Err(SetError::TooLong { len: 8 })
        );
        let mut short = [0u8; 2];
        assert_eq!(
            encode_value(&kind, "a", Endian::Little, &mut short),
            Err(SetError::Size { have: 2, want: 8 })
        );
        assert_eq!(
            encode_value(
                &ValueKind::Other(Kind::Struct),
                "1",
                Endian::Little,
                &mut short
            ),
            Err(SetError::Unsupported(Kind::Struct))
        );
    }

    #[test]
    fn ranges_are_named() {
        let e = SetError::OutOfRange {
            size: 2,
            signed: true,
        };
        assert_eq!(std::format!("{e}"), "out of range (-32768..=32767)");
        assert!(is_data_section(".rodata"));
        assert!(is_data_section(".rodata.str1.1"));
        assert!(is_data_section(".bss"));
        assert!(is_data_section(".data.cfg"));
        assert!(!is_data_section(".maps"));
        assert!(!is_data_section(".datax"));
        assert!(!is_data_section(".kconfig"));
    }
}
