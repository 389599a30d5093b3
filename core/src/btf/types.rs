//! Type records (`struct btf_type` and the data that follows it) as views.
//!
//! A [`Type`] is handed out only by a validated [`Btf`](super::Btf), so its accessors
//! read bytes that are known to be there and cannot fail.

use super::header::{get_u32, rd32};
use scroll::Endian;

/// Bytes of `struct btf_type`: `name_off`, `info`, `size`/`type`.
pub const TYPE_HEADER_LEN: usize = 12;

/// A BTF kind (`BTF_KIND_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u8)]
pub enum Kind {
    /// `BTF_KIND_INT` (1): integer, with a 4-byte encoding word.
    #[doc(alias = "BTF_KIND_INT")]
    Int = 1,
    /// `BTF_KIND_PTR` (2).
    #[doc(alias = "BTF_KIND_PTR")]
    Ptr = 2,
    /// `BTF_KIND_ARRAY` (3): followed by `struct btf_array`.
    #[doc(alias = "BTF_KIND_ARRAY")]
    Array = 3,
    /// `BTF_KIND_STRUCT` (4): followed by `vlen` `struct btf_member`.
    #[doc(alias = "BTF_KIND_STRUCT")]
    Struct = 4,
    /// `BTF_KIND_UNION` (5): followed by `vlen` `struct btf_member`.
    #[doc(alias = "BTF_KIND_UNION")]
    Union = 5,
    /// `BTF_KIND_ENUM` (6): followed by `vlen` `struct btf_enum`.
    #[doc(alias = "BTF_KIND_ENUM")]
    Enum = 6,
    /// `BTF_KIND_FWD` (7): forward declaration; kind flag 1 = union.
    #[doc(alias = "BTF_KIND_FWD")]
    Fwd = 7,
    /// `BTF_KIND_TYPEDEF` (8).
    #[doc(alias = "BTF_KIND_TYPEDEF")]
    Typedef = 8,
    /// `BTF_KIND_VOLATILE` (9).
    #[doc(alias = "BTF_KIND_VOLATILE")]
    Volatile = 9,
    /// `BTF_KIND_CONST` (10).
    #[doc(alias = "BTF_KIND_CONST")]
    Const = 10,
    /// `BTF_KIND_RESTRICT` (11).
    #[doc(alias = "BTF_KIND_RESTRICT")]
    Restrict = 11,
    /// `BTF_KIND_FUNC` (12): `vlen` holds the linkage; refers to a FUNC_PROTO.
    #[doc(alias = "BTF_KIND_FUNC")]
    Func = 12,
    /// `BTF_KIND_FUNC_PROTO` (13): followed by `vlen` `struct btf_param`.
    #[doc(alias = "BTF_KIND_FUNC_PROTO")]
    FuncProto = 13,
    /// `BTF_KIND_VAR` (14): followed by `struct btf_var` (linkage).
    #[doc(alias = "BTF_KIND_VAR")]
    Var = 14,
    /// `BTF_KIND_DATASEC` (15): followed by `vlen` `struct btf_var_secinfo`.
    #[doc(alias = "BTF_KIND_DATASEC")]
    Datasec = 15,
    /// `BTF_KIND_FLOAT` (16).
    #[doc(alias = "BTF_KIND_FLOAT")]
    Float = 16,
    /// `BTF_KIND_DECL_TAG` (17): followed by `struct btf_decl_tag` (component index).
    #[doc(alias = "BTF_KIND_DECL_TAG")]
    DeclTag = 17,
    /// `BTF_KIND_TYPE_TAG` (18).
    #[doc(alias = "BTF_KIND_TYPE_TAG")]
    TypeTag = 18,
    /// `BTF_KIND_ENUM64` (19): followed by `vlen` `struct btf_enum64`.
    #[doc(alias = "BTF_KIND_ENUM64")]
    Enum64 = 19,
}

impl Kind {
    /// The kind of number `k`, or `None` for 0 (void, never stored) and unknown numbers.
    #[must_use]
    pub fn from_u8(k: u8) -> Option<Kind> {
        use Kind::*;
        Some(match k {
            1 => Int,
            2 => Ptr,
            3 => Array,
            4 => Struct,
            5 => Union,
            6 => Enum,
            7 => Fwd,
            8 => Typedef,
            9 => Volatile,
            10 => Const,
            11 => Restrict,
            12 => Func,
            13 => FuncProto,
            14 => Var,
            15 => Datasec,
            16 => Float,
            17 => DeclTag,
            18 => TypeTag,
            19 => Enum64,
            _ => return None,
        })
    }

    /// The name `bpftool btf dump` prints (`INT`, `FUNC_PROTO` ...).
    #[must_use]
    pub fn name(self) -> &'static str {
        use Kind::*;
        match self {
            Int => "INT",
            Ptr => "PTR",
            Array => "ARRAY",
            Struct => "STRUCT",
            Union => "UNION",
            Enum => "ENUM",
            Fwd => "FWD",
            Typedef => "TYPEDEF",
            Volatile => "VOLATILE",
            Const => "CONST",
            Restrict => "RESTRICT",
            Func => "FUNC",
            FuncProto => "FUNC_PROTO",
            Var => "VAR",
            Datasec => "DATASEC",
            Float => "FLOAT",
            DeclTag => "DECL_TAG",
            TypeTag => "TYPE_TAG",
            Enum64 => "ENUM64",
        }
    }

    /// Bytes that follow `struct btf_type` for this kind with `vlen` entries.
    #[must_use]
    pub fn extra_len(self, vlen: u16) -> usize {
        use Kind::*;
        let n = usize::from(vlen);
        match self {
            Int | Var | DeclTag => 4,
            Array => 12,
            Struct | Union | Datasec | Enum64 => 12 * n,
            Enum | FuncProto => 8 * n,
            Ptr | Fwd | Typedef | Volatile | Const | Restrict | Func | Float | TypeTag => 0,
        }
    }

    /// Whether the third word is a size (INT, STRUCT, UNION, ENUM, ENUM64, DATASEC, FLOAT).
    #[must_use]
    pub fn has_size(self) -> bool {
        use Kind::*;
        matches!(self, Int | Struct | Union | Enum | Enum64 | Datasec | Float)
    }

    /// Whether the third word is a type id (PTR, TYPEDEF, modifiers, FUNC, FUNC_PROTO's
    /// return type, VAR, DECL_TAG, TYPE_TAG).
    #[must_use]
    pub fn has_type(self) -> bool {
        use Kind::*;
        matches!(
            self,
            Ptr | Typedef
                | Volatile
                | Const
                | Restrict
                | Func
                | FuncProto
                | Var
                | DeclTag
                | TypeTag
        )
    }

    /// Whether `resolve` walks through it: TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG.
    #[must_use]
    pub fn is_mod_or_typedef(self) -> bool {
        matches!(
            self,
            Kind::Typedef | Kind::Volatile | Kind::Const | Kind::Restrict | Kind::TypeTag
        )
    }

    /// STRUCT or UNION.
    #[must_use]
    pub fn is_composite(self) -> bool {
        matches!(self, Kind::Struct | Kind::Union)
    }

    /// ENUM or ENUM64.
    #[must_use]
    pub fn is_any_enum(self) -> bool {
        matches!(self, Kind::Enum | Kind::Enum64)
    }
}

/// The string section; offsets were validated with the types that use them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Strings<'a>(pub(crate) &'a [u8]);

impl<'a> Strings<'a> {
    /// The NUL-terminated bytes at `off` (empty when `off` is outside).
    pub(crate) fn bytes(self, off: u32) -> &'a [u8] {
        let tail = self.0.get(off as usize..).unwrap_or_default();
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        tail.get(..end).unwrap_or_default()
    }

    /// The section from `off` on (empty when outside).
    #[inline]
    pub(crate) fn tail(self, off: u32) -> &'a [u8] {
        self.0.get(off as usize..).unwrap_or_default()
    }

    /// Whether the string at `off` is `name` (compared in place: no length scan).
    #[inline]
    pub(crate) fn is(self, off: u32, name: &[u8]) -> bool {
        let tail = self.0.get(off as usize..).unwrap_or_default();
        // The terminator first: it tells most other names apart without comparing.
        tail.get(name.len()).is_none_or(|&b| b == 0) && tail.starts_with(name)
    }

    /// The string at `off` ("" when outside or not UTF-8: validation rejected both).
    pub(crate) fn str(self, off: u32) -> &'a str {
        core::str::from_utf8(self.bytes(off)).unwrap_or("")
    }

    /// Whether `off` names a UTF-8 string inside the section.
    pub(crate) fn check(self, off: u32) -> Result<(), &'static str> {
        if off as usize >= self.0.len() {
            return Err("offset outside the string section");
        }
        core::str::from_utf8(self.bytes(off))
            .map(|_| ())
            .map_err(|_| "name is not UTF-8")
    }
}

/// One type record: `struct btf_type` and its kind-specific data.
#[derive(Clone, Copy, Debug)]
pub struct Type<'a> {
    pub(crate) id: u32,
    pub(crate) kind: Kind,
    /// The whole record, header included (its length was validated).
    pub(crate) rec: &'a [u8],
    pub(crate) strings: Strings<'a>,
    pub(crate) endian: Endian,
}

/// `BTF_INT_SIGNED`.
#[doc(alias = "BTF_INT_SIGNED")]
pub const INT_SIGNED: u8 = 1;
/// `BTF_INT_CHAR`.
#[doc(alias = "BTF_INT_CHAR")]
pub const INT_CHAR: u8 = 2;
/// `BTF_INT_BOOL`.
#[doc(alias = "BTF_INT_BOOL")]
pub const INT_BOOL: u8 = 4;

/// The encoding word of an INT.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct IntInfo {
    /// `BTF_INT_SIGNED` | `BTF_INT_CHAR` | `BTF_INT_BOOL`.
    pub encoding: u8,
    /// Bit offset (0 in everything current compilers write).
    pub offset: u8,
    /// Number of bits.
    pub bits: u8,
}

impl IntInfo {
    /// Whether `BTF_INT_SIGNED` is set.
    #[must_use]
    pub fn is_signed(&self) -> bool {
        self.encoding & INT_SIGNED != 0
    }
}

/// `struct btf_array`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[doc(alias = "btf_array")]
pub struct ArrayInfo {
    /// Element type id.
    pub elem_type: u32,
    /// Index type id.
    pub index_type: u32,
    /// Number of elements.
    pub nelems: u32,
}

/// A member of a STRUCT or UNION (`struct btf_member`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(alias = "btf_member")]
pub struct Member<'a> {
    /// Member name ("" for anonymous members).
    pub name: &'a str,
    /// Its string offset.
    pub name_off: u32,
    /// Member type id.
    pub type_id: u32,
    /// Offset in bits from the start of the composite.
    pub bit_offset: u32,
    /// Bitfield width in bits; 0 for a plain member.
    pub bitfield_size: u32,
}

/// An enumerator of an ENUM or ENUM64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnumValue<'a> {
    /// Enumerator name.
    pub name: &'a str,
    /// Its string offset.
    pub name_off: u32,
    /// The raw value bits: ENUM's 32-bit value zero-extended, ENUM64's `hi << 32 | lo`.
    pub raw: u64,
}

/// A parameter of a FUNC_PROTO (`struct btf_param`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(alias = "btf_param")]
pub struct Param<'a> {
    /// Parameter name ("" when unnamed).
    pub name: &'a str,
    /// Its string offset.
    pub name_off: u32,
    /// Parameter type id (0 for the `...` of a variadic function).
    pub type_id: u32,
}

/// A variable of a DATASEC (`struct btf_var_secinfo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[doc(alias = "btf_var_secinfo")]
pub struct VarSecInfo {
    /// The VAR (or FUNC, for `.ksyms`) type id.
    pub type_id: u32,
    /// Offset in the section.
    pub offset: u32,
    /// Size in the section.
    pub size: u32,
}

/// Iterator over the fixed-size entries that follow a type record.
#[derive(Clone, Debug)]
pub struct Entries<'a, T> {
    ty: Type<'a>,
    next: u16,
    len: u16,
    _t: core::marker::PhantomData<T>,
}

impl<'a, T> Entries<'a, T> {
    fn new(ty: Type<'a>, len: u16) -> Self {
        Entries {
            ty,
            next: 0,
            len,
            _t: core::marker::PhantomData,
        }
    }
}

/// How one entry kind is read.
pub trait Entry<'a>: Sized {
    /// Reads entry `i` of `ty`.
    fn read(ty: &Type<'a>, i: u16) -> Self;
}

impl<'a, T: Entry<'a>> Iterator for Entries<'a, T> {
    type Item = T;
    fn next(&mut self) -> Option<T> {
        if self.next >= self.len {
            return None;
        }
        let i = self.next;
        self.next += 1;
        Some(T::read(&self.ty, i))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = usize::from(self.len - self.next);
        (n, Some(n))
    }
    fn nth(&mut self, n: usize) -> Option<T> {
        let skip = u16::try_from(n).unwrap_or(u16::MAX);
        self.next = self.next.saturating_add(skip).min(self.len);
        self.next()
    }
}

impl<'a, T: Entry<'a>> ExactSizeIterator for Entries<'a, T> {}

impl<'a> Entry<'a> for Member<'a> {
    fn read(ty: &Type<'a>, i: u16) -> Self {
        let base = TYPE_HEADER_LEN + 12 * usize::from(i);
        let name_off = ty.word(base);
        let off = ty.word(base + 8);
        let (bit_offset, bitfield_size) = if ty.kind_flag() {
            (off & 0x00ff_ffff, off >> 24)
        } else {
            (off, 0)
        };
        Member {
            name: ty.strings.str(name_off),
            name_off,
            type_id: ty.word(base + 4),
            bit_offset,
            bitfield_size,
        }
    }
}

impl<'a> Entry<'a> for EnumValue<'a> {
    fn read(ty: &Type<'a>, i: u16) -> Self {
        let (base, raw) = if ty.kind == Kind::Enum64 {
            let base = TYPE_HEADER_LEN + 12 * usize::from(i);
            let lo = u64::from(ty.word(base + 4));
            let hi = u64::from(ty.word(base + 8));
            (base, (hi << 32) | lo)
        } else {
            let base = TYPE_HEADER_LEN + 8 * usize::from(i);
            (base, u64::from(ty.word(base + 4)))
        };
        let name_off = ty.word(base);
        EnumValue {
            name: ty.strings.str(name_off),
            name_off,
            raw,
        }
    }
}

impl<'a> Entry<'a> for Param<'a> {
    fn read(ty: &Type<'a>, i: u16) -> Self {
        let base = TYPE_HEADER_LEN + 8 * usize::from(i);
        let name_off = ty.word(base);
        Param {
            name: ty.strings.str(name_off),
            name_off,
            type_id: ty.word(base + 4),
        }
    }
}

impl<'a> Entry<'a> for VarSecInfo {
    fn read(ty: &Type<'a>, i: u16) -> Self {
        let base = TYPE_HEADER_LEN + 12 * usize::from(i);
        VarSecInfo {
            type_id: ty.word(base),
            offset: ty.word(base + 4),
            size: ty.word(base + 8),
        }
    }
}

/// `BTF_FUNC_STATIC` / `BTF_VAR_STATIC`.
pub const LINKAGE_STATIC: u32 = 0;
/// `BTF_FUNC_GLOBAL` / `BTF_VAR_GLOBAL_ALLOCATED`.
pub const LINKAGE_GLOBAL: u32 = 1;
/// `BTF_FUNC_EXTERN` / `BTF_VAR_GLOBAL_EXTERN`.
pub const LINKAGE_EXTERN: u32 = 2;

impl<'a> Type<'a> {
    #[inline]
    fn word(&self, off: usize) -> u32 {
        rd32(self.rec, off, self.endian)
    }

    /// Type id.
    #[must_use]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Kind.
    #[must_use]
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Name ("" for anonymous types).
    #[must_use]
    pub fn name(&self) -> &'a str {
        self.strings.str(self.name_off())
    }

    /// Name as bytes (cheaper than [`Type::name`]: no UTF-8 check).
    #[must_use]
    pub fn name_bytes(&self) -> &'a [u8] {
        self.strings.bytes(self.name_off())
    }

    /// `name_off`.
    #[must_use]
    pub fn name_off(&self) -> u32 {
        self.word(0)
    }

    /// The raw `info` word.
    #[must_use]
    pub fn info(&self) -> u32 {
        self.word(4)
    }

    /// `vlen`: number of members/enumerators/params/variables; FUNC's linkage.
    #[must_use]
    pub fn vlen(&self) -> u16 {
        (self.info() & 0xffff) as u16
    }

    /// `kind_flag`: bitfield members (STRUCT/UNION), union forward (FWD), signed (ENUM*),
    /// attribute tag (DECL_TAG/TYPE_TAG).
    #[must_use]
    pub fn kind_flag(&self) -> bool {
        self.info() >> 31 != 0
    }

    /// The raw third word (`size` or `type`).
    #[must_use]
    pub fn size_or_type(&self) -> u32 {
        self.word(8)
    }

    /// `size` for kinds that have one (see [`Kind::has_size`]).
    #[must_use]
    pub fn size(&self) -> Option<u32> {
        self.kind.has_size().then(|| self.size_or_type())
    }

    /// The referenced type for kinds that have one (see [`Kind::has_type`]); for FUNC_PROTO
    /// the return type. 0 is void.
    #[must_use]
    pub fn ref_type(&self) -> Option<u32> {
        self.kind.has_type().then(|| self.size_or_type())
    }

    /// INT encoding.
    #[must_use]
    pub fn int(&self) -> Option<IntInfo> {
        (self.kind == Kind::Int).then(|| {
            let w = self.word(TYPE_HEADER_LEN);
            IntInfo {
                encoding: ((w >> 24) & 0x0f) as u8,
                offset: ((w >> 16) & 0xff) as u8,
                bits: (w & 0xff) as u8,
            }
        })
    }

    /// ARRAY element type, index type and length.
    #[must_use]
    pub fn array(&self) -> Option<ArrayInfo> {
        (self.kind == Kind::Array).then(|| ArrayInfo {
            elem_type: self.word(TYPE_HEADER_LEN),
            index_type: self.word(TYPE_HEADER_LEN + 4),
            nelems: self.word(TYPE_HEADER_LEN + 8),
        })
    }

    /// STRUCT/UNION members (empty for other kinds).
    #[must_use]
    pub fn members(&self) -> Entries<'a, Member<'a>> {
        let n = if self.kind.is_composite() {
            self.vlen()
        } else {
            0
        };
        Entries::new(*self, n)
    }

    /// Member `i` of a STRUCT/UNION.
    #[must_use]
    pub fn member(&self, i: u32) -> Option<Member<'a>> {
        let i = u16::try_from(i).ok()?;
        (self.kind.is_composite() && i < self.vlen()).then(|| Member::read(self, i))
    }

    /// ENUM/ENUM64 enumerators (empty for other kinds).
    #[must_use]
    pub fn enum_values(&self) -> Entries<'a, EnumValue<'a>> {
        let n = if self.kind.is_any_enum() {
            self.vlen()
        } else {
            0
        };
        Entries::new(*self, n)
    }

    /// Enumerator `i` of an ENUM/ENUM64.
    #[must_use]
    pub fn enum_value(&self, i: u32) -> Option<EnumValue<'a>> {
        let i = u16::try_from(i).ok()?;
        (self.kind.is_any_enum() && i < self.vlen()).then(|| EnumValue::read(self, i))
    }

    /// Whether an ENUM/ENUM64 is signed (kind flag set).
    #[must_use]
    pub fn enum_is_signed(&self) -> bool {
        self.kind.is_any_enum() && self.kind_flag()
    }

    /// FUNC_PROTO parameters (empty for other kinds).
    #[must_use]
    pub fn params(&self) -> Entries<'a, Param<'a>> {
        let n = if self.kind == Kind::FuncProto {
            self.vlen()
        } else {
            0
        };
        Entries::new(*self, n)
    }

    /// DATASEC variables (empty for other kinds).
    #[must_use]
    pub fn datasec_vars(&self) -> Entries<'a, VarSecInfo> {
        let n = if self.kind == Kind::Datasec {
            self.vlen()
        } else {
            0
        };
        Entries::new(*self, n)
    }

    /// VAR or FUNC linkage ([`LINKAGE_STATIC`], [`LINKAGE_GLOBAL`], [`LINKAGE_EXTERN`]).
    #[must_use]
    pub fn linkage(&self) -> Option<u32> {
        match self.kind {
            Kind::Var => Some(self.word(TYPE_HEADER_LEN)),
            Kind::Func => Some(u32::from(self.vlen())),
            _ => None,
        }
    }

    /// DECL_TAG component index: -1 for the type itself, else the member/parameter index.
    #[must_use]
    pub fn decl_tag_component(&self) -> Option<i32> {
        (self.kind == Kind::DeclTag).then(|| self.word(TYPE_HEADER_LEN) as i32)
    }
}

/// Reads the header of the record at `off` of `types` and returns its kind number, vlen
/// and total length; `None` when the 12-byte header itself is past the end.
pub(crate) fn record_shape(types: &[u8], off: usize, endian: Endian) -> Option<(u8, u16, usize)> {
    let info = get_u32(types, off.checked_add(4)?, endian)?;
    get_u32(types, off.checked_add(8)?, endian)?;
    let kind = ((info >> 24) & 0x1f) as u8;
    let vlen = (info & 0xffff) as u16;
    let extra = Kind::from_u8(kind).map_or(0, |k| k.extra_len(vlen));
    Some((kind, vlen, TYPE_HEADER_LEN + extra))
}
