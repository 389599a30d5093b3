//! Values of BTF types read out of untrusted bytes: a record a program wrote into a BPF
//! ring buffer or a perf event array, walked field by field for a [`Visitor`].
//!
//! ```text
//! record bytes + Btf + type id ──walk──► visitor: int / bool / enumerator / string /
//!                                        pointer / float / bytes, begin/end of each
//!                                        struct, union and array
//! Btf + record length ──record_candidates──► the structs a record of that length may be
//! ```
//!
//! Integers are read by their width and sign (1, 2, 4, 8 bytes; 16 as two halves),
//! bitfields by their bit offset and size; `bool` by `BTF_INT_BOOL`; enums give the
//! enumerator's name when the value has one; an array of `char` is a string up to its
//! first NUL, an array of other 1-byte integers (`__u8`) bytes. Every read is bounds-checked against the record: a field past its end
//! is [`ValueError::Truncated`], never a read past it. Nesting is bounded by
//! [`MAX_VALUE_DEPTH`] and the number of values by [`MAX_VALUES`], so hostile BTF (a
//! cycle, an array of 2^32 empty structs) ends in an error, not a hang.

use scroll::Endian;

use super::error::BtfError;
use super::section::Btf;
use super::types::{Kind, Type, INT_BOOL, INT_CHAR, INT_SIGNED};

/// Deepest nesting of structs, unions and arrays walked (typedefs and modifiers count too).
pub const MAX_VALUE_DEPTH: u32 = 32;

/// Most values (leaves and composites) one walk visits.
pub const MAX_VALUES: u32 = 65_536;

/// Why a value could not be walked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ValueError {
    /// Type `id` at byte `offset` of the record needs `len` bytes past its end.
    Truncated {
        /// The type being read.
        id: u32,
        /// Its offset in the record.
        offset: u32,
        /// Bytes it needs.
        len: u32,
    },
    /// Nesting deeper than [`MAX_VALUE_DEPTH`] at type `id` (a cycle in hostile BTF).
    TooDeep {
        /// The type.
        id: u32,
    },
    /// More than [`MAX_VALUES`] values in one record.
    TooMany {
        /// The type being read when the budget ran out.
        id: u32,
    },
    /// Type `id` has no value (void, a function, a forward declaration) or no size.
    NoValue {
        /// The type.
        id: u32,
    },
    /// The BTF itself is inconsistent at this point.
    Btf(BtfError),
}

impl core::fmt::Display for ValueError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ValueError::Truncated { id, offset, len } => write!(
                f,
                "type [{id}] at offset {offset} needs {len} bytes past the record's end"
            ),
            ValueError::TooDeep { id } => {
                write!(f, "type [{id}] nests deeper than {MAX_VALUE_DEPTH}")
            }
            ValueError::TooMany { id } => {
                write!(f, "more than {MAX_VALUES} values (at type [{id}])")
            }
            ValueError::NoValue { id } => write!(f, "type [{id}] has no value"),
            ValueError::Btf(e) => write!(f, "{e}"),
        }
    }
}

impl From<BtfError> for ValueError {
    fn from(e: BtfError) -> Self {
        ValueError::Btf(e)
    }
}

/// An integer as read: its sign comes from the type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Int {
    /// A signed integer (sign-extended to 128 bits).
    Signed(i128),
    /// An unsigned integer.
    Unsigned(u128),
}

/// What a walk reports, in record order. `name` is the member's name (`""` for array
/// elements, anonymous members and the top level).
pub trait Visitor {
    /// An integer (or `char`) of `bits` bits.
    fn int(&mut self, name: &str, value: Int, bits: u8);
    /// A `bool`.
    fn bool(&mut self, name: &str, value: bool);
    /// An enum value: its enumerator's name when one has this value.
    fn enumerator(&mut self, name: &str, enumerator: Option<&str>, value: Int);
    /// A `char` array, up to its first NUL (the bytes as written, not checked for UTF-8).
    fn string(&mut self, name: &str, text: &[u8]);
    /// A pointer (the producer's address: only a number here).
    fn pointer(&mut self, name: &str, value: u64);
    /// A float or an integer wider than this reader knows: its bytes.
    fn bytes(&mut self, name: &str, bytes: &[u8]);
    /// A struct (`union == false`) or union begins; its members follow.
    fn begin_struct(&mut self, name: &str, union: bool);
    /// The struct or union last begun ends.
    fn end_struct(&mut self);
    /// An array of `len` elements begins; its elements follow.
    fn begin_array(&mut self, name: &str, len: u32);
    /// The array last begun ends.
    fn end_array(&mut self);
}

/// Walks the value of type `id` at the start of `data` for `visitor`.
///
/// # Errors
/// [`ValueError::Truncated`] when a field is past the end of `data` (the values before it
/// were visited), [`ValueError::TooDeep`] / [`ValueError::TooMany`] for hostile BTF,
/// [`ValueError::NoValue`] for a type without a value.
pub fn walk(
    btf: &Btf<'_>,
    id: u32,
    data: &[u8],
    visitor: &mut dyn Visitor,
) -> Result<(), ValueError> {
    let mut w = Walker {
        btf,
        data,
        endian: btf.endian(),
        budget: MAX_VALUES,
        visitor,
    };
    w.value("", id, 0, (0, 0), 0)
}

struct Walker<'b, 'a, 'v> {
    btf: &'b Btf<'a>,
    data: &'b [u8],
    endian: Endian,
    budget: u32,
    visitor: &'v mut dyn Visitor,
}

impl<'b> Walker<'b, '_, '_> {
    fn spend(&mut self, id: u32) -> Result<(), ValueError> {
        self.budget = self
            .budget
            .checked_sub(1)
            .ok_or(ValueError::TooMany { id })?;
        Ok(())
    }

    fn slice(&self, id: u32, offset: usize, len: usize) -> Result<&'b [u8], ValueError> {
        let data: &'b [u8] = self.data;
        let trunc = || ValueError::Truncated {
            id,
            offset: u32::try_from(offset).unwrap_or(u32::MAX),
            len: u32::try_from(len).unwrap_or(u32::MAX),
        };
        let end = offset.checked_add(len).ok_or_else(trunc)?;
        data.get(offset..end).ok_or_else(trunc)
    }

    /// Reads `len` (1..=16) bytes at `offset` as an unsigned number in the BTF's order.
    fn uint(&self, id: u32, offset: usize, len: usize) -> Result<u128, ValueError> {
        let b = self.slice(id, offset, len)?;
        let mut v: u128 = 0;
        match self.endian {
            Endian::Little => {
                for &x in b.iter().rev() {
                    v = (v << 8) | u128::from(x);
                }
            }
            Endian::Big => {
                for &x in b {
                    v = (v << 8) | u128::from(x);
                }
            }
        }
        Ok(v)
    }

    /// The value of type `id` at byte `offset`; `bitfield` is `(bit, size)`: a bitfield of
    /// `size` bits (0: not one) starting `bit` bits past `offset`.
    fn value(
        &mut self,
        name: &str,
        id: u32,
        offset: usize,
        bitfield: (u32, u32),
        depth: u32,
    ) -> Result<(), ValueError> {
        if depth > MAX_VALUE_DEPTH {
            return Err(ValueError::TooDeep { id });
        }
        self.spend(id)?;
        let ty = self.btf.type_by_id(id)?;
        match ty.kind() {
            Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag => {
                let next = ty.ref_type().ok_or(ValueError::NoValue { id })?;
                self.value(name, next, offset, bitfield, depth + 1)
            }
            Kind::Int => self.int(name, &ty, offset, bitfield),
            Kind::Enum | Kind::Enum64 => self.enumeration(name, &ty, offset, bitfield),
            Kind::Ptr => {
                let size = self.btf.pointer_size() as usize;
                let v = self.uint(id, offset, size.clamp(1, 8))?;
                self.visitor.pointer(name, v as u64);
                Ok(())
            }
            Kind::Float => {
                let size = ty.size().unwrap_or(0) as usize;
                let b = self.slice(id, offset, size)?;
                self.visitor.bytes(name, b);
                Ok(())
            }
            Kind::Struct | Kind::Union => self.composite(name, &ty, offset, depth),
            Kind::Array => self.array(name, &ty, offset, depth),
            _ => Err(ValueError::NoValue { id }),
        }
    }

    /// Reads an integer-like value of `size` bytes, or a bitfield of it.
    fn bits(
        &self,
        id: u32,
        offset: usize,
        size: usize,
        bitfield: (u32, u32),
    ) -> Result<(u128, u32), ValueError> {
        let (bit, nbits) = bitfield;
        if nbits == 0 {
            let v = self.uint(id, offset, size.clamp(1, 16))?;
            return Ok((v, (size.clamp(1, 16) * 8) as u32));
        }
        // A bitfield: the bytes that hold bits [bit, bit + nbits) of the member's storage.
        let first = offset + (bit / 8) as usize;
        let last_bit = bit % 8 + nbits;
        let len = last_bit.div_ceil(8) as usize;
        if len == 0 || len > 16 {
            return Err(ValueError::NoValue { id });
        }
        let raw = self.uint(id, first, len)?;
        let shift = match self.endian {
            Endian::Little => bit % 8,
            Endian::Big => (len as u32 * 8).saturating_sub(last_bit),
        };
        let mask = if nbits >= 128 {
            u128::MAX
        } else {
            (1u128 << nbits) - 1
        };
        Ok(((raw >> shift) & mask, nbits))
    }

    fn int(
        &mut self,
        name: &str,
        ty: &Type<'_>,
        offset: usize,
        bitfield: (u32, u32),
    ) -> Result<(), ValueError> {
        let id = ty.id();
        let info = ty.int().ok_or(ValueError::NoValue { id })?;
        let size = ty.size().unwrap_or(0) as usize;
        if size > 16 || size == 0 {
            let b = self.slice(id, offset, size)?;
            self.visitor.bytes(name, b);
            return Ok(());
        }
        // An INT's own bit offset and width (0 and size * 8 from current compilers).
        let whole = info.offset == 0 && u32::from(info.bits) == size as u32 * 8;
        let bitfield = if bitfield.1 == 0 && !(whole && bitfield.0 == 0) {
            (bitfield.0 + u32::from(info.offset), u32::from(info.bits))
        } else {
            bitfield
        };
        let (raw, nbits) = self.bits(id, offset, size, bitfield)?;
        if info.encoding & INT_BOOL != 0 {
            self.visitor.bool(name, raw != 0);
        } else if info.encoding & INT_SIGNED != 0 {
            self.visitor
                .int(name, Int::Signed(sign_extend(raw, nbits)), nbits as u8);
        } else {
            self.visitor.int(name, Int::Unsigned(raw), nbits as u8);
        }
        Ok(())
    }

    fn enumeration(
        &mut self,
        name: &str,
        ty: &Type<'_>,
        offset: usize,
        bitfield: (u32, u32),
    ) -> Result<(), ValueError> {
        let id = ty.id();
        let size = ty.size().unwrap_or(0) as usize;
        if size == 0 || size > 8 {
            return Err(ValueError::NoValue { id });
        }
        let (raw, nbits) = self.bits(id, offset, size, bitfield)?;
        let value = if ty.enum_is_signed() {
            Int::Signed(sign_extend(raw, nbits))
        } else {
            Int::Unsigned(raw)
        };
        // Enumerators compare by their bits, truncated to the value's width.
        let mask = if nbits >= 64 {
            u64::MAX
        } else {
            (1u64 << nbits) - 1
        };
        let found = ty
            .enum_values()
            .find(|e| e.raw & mask == raw as u64 & mask)
            .map(|e| e.name);
        self.visitor.enumerator(name, found, value);
        Ok(())
    }

    fn composite(
        &mut self,
        name: &str,
        ty: &Type<'_>,
        offset: usize,
        depth: u32,
    ) -> Result<(), ValueError> {
        let union = ty.kind() == Kind::Union;
        self.visitor.begin_struct(name, union);
        for m in ty.members() {
            // The member's bits, counted from the byte holding its first bit.
            let (byte, bitfield) = (m.bit_offset / 8, (m.bit_offset % 8, m.bitfield_size));
            let at = offset
                .checked_add(byte as usize)
                .ok_or(ValueError::NoValue { id: m.type_id })?;
            self.value(m.name, m.type_id, at, bitfield, depth + 1)?;
        }
        self.visitor.end_struct();
        Ok(())
    }

    fn array(
        &mut self,
        name: &str,
        ty: &Type<'_>,
        offset: usize,
        depth: u32,
    ) -> Result<(), ValueError> {
        let id = ty.id();
        let info = ty.array().ok_or(ValueError::NoValue { id })?;
        let elem = self.btf.resolve(info.elem_type)?;
        let esize = self.btf.size_of(info.elem_type)? as usize;
        if let Some(t) = self.btf.ty(elem) {
            if is_char(&t) {
                let b = self.slice(id, offset, info.nelems as usize)?;
                let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                self.visitor.string(name, b.get(..end).unwrap_or(b));
                return Ok(());
            }
            if is_byte(&t) {
                let b = self.slice(id, offset, info.nelems as usize)?;
                self.visitor.bytes(name, b);
                return Ok(());
            }
        }
        // The whole array must fit before any element is visited.
        let total = esize.checked_mul(info.nelems as usize);
        let total = total.ok_or(ValueError::NoValue { id })?;
        self.slice(id, offset, total)?;
        self.visitor.begin_array(name, info.nelems);
        for i in 0..info.nelems as usize {
            self.value("", info.elem_type, offset + i * esize, (0, 0), depth + 1)?;
        }
        self.visitor.end_array();
        Ok(())
    }
}

/// A 1-byte INT marked `char`, or named `char` / `signed char` (clang marks `char` only
/// SIGNED): its arrays are text.
fn is_char(t: &Type<'_>) -> bool {
    t.kind() == Kind::Int
        && t.size() == Some(1)
        && t.int().is_some_and(|i| {
            i.encoding & INT_BOOL == 0
                && (i.encoding & INT_CHAR != 0 || matches!(t.name(), "char" | "signed char"))
        })
}

/// Any other 1-byte INT (`unsigned char`, `__u8`): its arrays are bytes, shown in hex.
fn is_byte(t: &Type<'_>) -> bool {
    t.kind() == Kind::Int
        && t.size() == Some(1)
        && t.int().is_some_and(|i| i.encoding & INT_BOOL == 0)
}

fn sign_extend(v: u128, bits: u32) -> i128 {
    if bits == 0 || bits >= 128 {
        return v as i128;
    }
    let shift = 128 - bits;
    ((v << shift) as i128) >> shift
}

/// Names of types that are never records: map definitions, program contexts, the
/// kernel's trace-event layouts.
fn never_a_record(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "bpf_map_def",
        "bpf_elf_map",
        "pt_regs",
        "user_pt_regs",
        "trace_entry",
        "__sk_buff",
        "xdp_md",
        "bpf_perf_event_data",
        "bpf_raw_tracepoint_args",
        "sk_msg_md",
        "bpf_sock_ops",
        "bpf_sock",
    ];
    const PREFIX: &[&str] = &[
        "trace_event_raw_",
        "trace_event_data_offsets_",
        "btf_trace_",
    ];
    name.is_empty() || EXACT.contains(&name) || PREFIX.iter().any(|p| name.starts_with(p))
}

/// Whether struct `id` is what a program's context points at (the type of the first
/// parameter of a global FUNC: a program's `ctx`).
fn is_context(btf: &Btf<'_>, id: u32) -> bool {
    btf.types().any(|t| {
        t.kind() == Kind::Func
            && t.vlen() != 0
            && t.ref_type()
                .and_then(|p| btf.ty(p))
                .and_then(|proto| proto.params().next())
                .and_then(|param| btf.resolve_type(param.type_id).ok().flatten())
                .filter(|p| p.kind() == Kind::Ptr)
                .and_then(|p| p.ref_type())
                .and_then(|r| btf.resolve(r).ok())
                == Some(id)
    })
}

/// How a record's length relates to the size of its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RecordFit {
    /// The record is exactly the type (a ring-buffer record).
    Exact,
    /// The record may carry up to 7 bytes of padding after the type (perf pads raw
    /// samples: a struct of size S matches records of S..S+7 bytes).
    Padded,
}

/// The named structs (and unions) of `btf` a record of `len` bytes may be, in id order,
/// into `out`; returns how many there are (which may exceed `out.len()`: only the first
/// `out.len()` are written). Types that are never records are left out: map definitions
/// (`bpf_map_def`, the anonymous structs of `.maps`), program contexts (`pt_regs`,
/// `trace_event_raw_*`, what a program's first parameter points at).
pub fn record_candidates(btf: &Btf<'_>, len: usize, fit: RecordFit, out: &mut [u32]) -> usize {
    let mut n = 0usize;
    for t in btf.types() {
        if !matches!(t.kind(), Kind::Struct | Kind::Union) {
            continue;
        }
        let Some(size) = t.size().map(|s| s as usize) else {
            continue;
        };
        let fits = match fit {
            RecordFit::Exact => size == len,
            RecordFit::Padded => size <= len && len - size < 8,
        };
        if !fits || size == 0 || never_a_record(t.name()) || is_context(btf, t.id()) {
            continue;
        }
        if let Some(slot) = out.get_mut(n) {
            *slot = t.id();
        }
        n += 1;
    }
    n
}

/// The type named like C says it: `struct NAME`, `union NAME`, `enum NAME`, or a bare name
/// (a typedef, else a struct, union or enum of that name). `None` when there is none.
pub fn find_c_type<'a>(btf: &Btf<'a>, c_name: &str) -> Option<Type<'a>> {
    let c_name = c_name.trim();
    let (kinds, name): (&[Kind], &str) = if let Some(n) = c_name.strip_prefix("struct ") {
        (&[Kind::Struct], n.trim())
    } else if let Some(n) = c_name.strip_prefix("union ") {
        (&[Kind::Union], n.trim())
    } else if let Some(n) = c_name.strip_prefix("enum ") {
        (&[Kind::Enum, Kind::Enum64], n.trim())
    } else {
        (
            &[
                Kind::Typedef,
                Kind::Struct,
                Kind::Union,
                Kind::Enum,
                Kind::Enum64,
                Kind::Int,
            ],
            c_name,
        )
    };
    kinds
        .iter()
        .find_map(|&k| btf.types().find(|t| t.kind() == k && t.name() == name))
}
