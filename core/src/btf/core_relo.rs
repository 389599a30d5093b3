//! CO-RE ("compile once, run everywhere") relocation resolution, after libbpf's
//! `relo_core.c`.
//!
//! A relocation names a local type (from the object's `.BTF`), an access string
//! (`0:1:2`: array index on the root, then member/element indices) and what to compute
//! (a field's byte offset, size, existence, signedness, bitfield shifts; a type's id,
//! existence, size or structural match; an enumerator's existence or value). The resolver
//!
//! 1. parses the access string into a *spec* against the local BTF;
//! 2. finds target candidates: types of the target BTF (normally the kernel's) whose name
//!    equals the local root's with any `___flavour` suffix stripped, and of a compatible
//!    kind — through a [`CandidateIndex`], a caller-provided `&mut [u32]` of one entry per
//!    named target type (≈ 150 000 × 4 bytes for vmlinux), sorted once by name;
//! 3. matches the spec against each candidate: member by member (exact names, looking
//!    into anonymous struct/union members), array by array, with libbpf's "essentially
//!    compatible" rules for the field types;
//! 4. computes the value from the local spec (what the compiler wrote) and from the
//!    matching target spec (what the kernel needs). All matching candidates must agree;
//!    none matching gives 0 for the `*_exists`/`type_*` kinds and *poison* for the others.
//!
//! [`patch_insn`] then writes the new value into the instruction (ALU immediate, LDX/ST/STX
//! offset and, when the field changed size, the access size; `ld_imm64` immediate), or
//! replaces it with libbpf's poison `call 0xbad2310`, which the verifier rejects only if
//! the instruction is reachable.
//!
//! Stack use: three specs of [`MAX_SPEC_LEN`] accessors, about 5 KB; every walk is
//! bounded (spec length, [`super::MAX_RESOLVE_DEPTH`], a step budget per relocation).

use super::error::{BtfError, BtfResult, ErrName};
use super::ext::CoreRelo;
use super::types::{Kind, Type, INT_SIGNED};
use super::Btf;
use crate::insn::Insn;

/// Longest access path (libbpf's `BPF_CORE_SPEC_MAX_LEN`).
pub const MAX_SPEC_LEN: usize = 64;
/// The immediate of the poison call (`0xbad2310`: "bad relo"); the verifier prints
/// `invalid func unknown#195896080` if it is reachable.
pub const POISON_IMM: i32 = 0x0bad_2310;
/// Type-comparison steps allowed per relocation before giving up with
/// [`BtfError::TooDeep`].
const STEP_BUDGET: u32 = 1 << 20;
/// Recursion limit of the type comparisons (libbpf's).
const COMPAT_LEVEL: u32 = 32;

/// What a CO-RE relocation computes (`enum bpf_core_relo_kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[doc(alias = "bpf_core_relo_kind")]
pub enum CoreReloKind {
    /// `BPF_CORE_FIELD_BYTE_OFFSET` (0).
    FieldByteOffset,
    /// `BPF_CORE_FIELD_BYTE_SIZE` (1).
    FieldByteSize,
    /// `BPF_CORE_FIELD_EXISTS` (2).
    FieldExists,
    /// `BPF_CORE_FIELD_SIGNED` (3).
    FieldSigned,
    /// `BPF_CORE_FIELD_LSHIFT_U64` (4).
    FieldLshiftU64,
    /// `BPF_CORE_FIELD_RSHIFT_U64` (5).
    FieldRshiftU64,
    /// `BPF_CORE_TYPE_ID_LOCAL` (6).
    TypeIdLocal,
    /// `BPF_CORE_TYPE_ID_TARGET` (7).
    TypeIdTarget,
    /// `BPF_CORE_TYPE_EXISTS` (8).
    TypeExists,
    /// `BPF_CORE_TYPE_SIZE` (9).
    TypeSize,
    /// `BPF_CORE_ENUMVAL_EXISTS` (10).
    EnumvalExists,
    /// `BPF_CORE_ENUMVAL_VALUE` (11).
    EnumvalValue,
    /// `BPF_CORE_TYPE_MATCHES` (12).
    TypeMatches,
    /// A kind this version does not know.
    Unknown(u32),
}

impl CoreReloKind {
    /// The kind numbered `k`.
    #[must_use]
    pub fn from_u32(k: u32) -> Self {
        use CoreReloKind::*;
        match k {
            0 => FieldByteOffset,
            1 => FieldByteSize,
            2 => FieldExists,
            3 => FieldSigned,
            4 => FieldLshiftU64,
            5 => FieldRshiftU64,
            6 => TypeIdLocal,
            7 => TypeIdTarget,
            8 => TypeExists,
            9 => TypeSize,
            10 => EnumvalExists,
            11 => EnumvalValue,
            12 => TypeMatches,
            k => Unknown(k),
        }
    }

    /// Its number.
    #[must_use]
    pub fn to_u32(self) -> u32 {
        use CoreReloKind::*;
        match self {
            FieldByteOffset => 0,
            FieldByteSize => 1,
            FieldExists => 2,
            FieldSigned => 3,
            FieldLshiftU64 => 4,
            FieldRshiftU64 => 5,
            TypeIdLocal => 6,
            TypeIdTarget => 7,
            TypeExists => 8,
            TypeSize => 9,
            EnumvalExists => 10,
            EnumvalValue => 11,
            TypeMatches => 12,
            Unknown(k) => k,
        }
    }

    /// libbpf's name for it (`byte_off`, `field_exists`, `type_matches` ...).
    #[must_use]
    pub fn name(self) -> &'static str {
        use CoreReloKind::*;
        match self {
            FieldByteOffset => "byte_off",
            FieldByteSize => "byte_sz",
            FieldExists => "field_exists",
            FieldSigned => "signed",
            FieldLshiftU64 => "lshift_u64",
            FieldRshiftU64 => "rshift_u64",
            TypeIdLocal => "local_type_id",
            TypeIdTarget => "target_type_id",
            TypeExists => "type_exists",
            TypeSize => "type_size",
            EnumvalExists => "enumval_exists",
            EnumvalValue => "enumval_value",
            TypeMatches => "type_matches",
            Unknown(_) => "unknown",
        }
    }

    /// A field relocation (kinds 0..=5).
    #[must_use]
    pub fn is_field_based(self) -> bool {
        self.to_u32() <= 5
    }

    /// A type relocation (kinds 6..=9 and 12).
    #[must_use]
    pub fn is_type_based(self) -> bool {
        matches!(self.to_u32(), 6..=9 | 12)
    }

    /// An enumerator relocation (kinds 10, 11).
    #[must_use]
    pub fn is_enumval_based(self) -> bool {
        matches!(self.to_u32(), 10 | 11)
    }
}

/// Length of `name` without its `___flavour` suffix (libbpf's
/// `bpf_core_essential_name_len`): the last `X___Y` with X and Y not `_` ends the name
/// after X.
#[must_use]
pub fn essential_name_len(name: &[u8]) -> usize {
    let n = name.len();
    let mut i = n.saturating_sub(5);
    // i goes from n-5 down to 0 (none when n < 5).
    if n >= 5 {
        loop {
            if let Some(&[x, b'_', b'_', b'_', y]) = name.get(i..i + 5) {
                if x != b'_' && y != b'_' {
                    return i + 1;
                }
            }
            if i == 0 {
                break;
            }
            i -= 1;
        }
    }
    n
}

fn essential(name: &[u8]) -> &[u8] {
    name.get(..essential_name_len(name)).unwrap_or(name)
}

/// The named types of a target BTF sorted by essential name, for O(log n) candidate
/// lookup.
#[derive(Clone, Copy, Debug)]
pub struct CandidateIndex<'t> {
    btf: Btf<'t>,
    sorted: &'t [u32],
}

impl<'t> CandidateIndex<'t> {
    /// Entries the scratch buffer of [`CandidateIndex::new`] needs: the number of named
    /// types of `btf`.
    #[must_use]
    pub fn required_len(btf: &Btf<'_>) -> usize {
        btf.types().filter(|t| t.name_off() != 0).count()
    }

    /// Sorts the named types of `btf` into `scratch` (at least
    /// [`CandidateIndex::required_len`] entries).
    ///
    /// # Errors
    /// [`BtfError::Capacity`] when `scratch` is too short.
    pub fn new(btf: Btf<'t>, scratch: &'t mut [u32]) -> BtfResult<Self> {
        let limit = scratch.len() as u32;
        let mut n = 0usize;
        for t in btf.types() {
            if t.name_off() == 0 || t.name_bytes().is_empty() {
                continue;
            }
            let slot = scratch.get_mut(n).ok_or(BtfError::Capacity {
                what: "named target types (CO-RE candidate index)",
                limit,
            })?;
            *slot = t.id();
            n += 1;
        }
        let sorted = scratch.get_mut(..n).unwrap_or_default();
        let key = |id: u32| essential(btf.ty(id).map(|t| t.name_bytes()).unwrap_or_default());
        sorted.sort_unstable_by(|&a, &b| key(a).cmp(key(b)).then(a.cmp(&b)));
        Ok(CandidateIndex { btf, sorted })
    }

    /// The target BTF.
    #[must_use]
    pub fn btf(&self) -> &Btf<'t> {
        &self.btf
    }

    /// Ids of the target types whose essential name is `essential_name`, in id order.
    pub fn by_essential_name<'s>(
        &'s self,
        essential_name: &'s [u8],
    ) -> impl Iterator<Item = u32> + 's {
        let key = |id: u32| essential(self.btf.ty(id).map(|t| t.name_bytes()).unwrap_or_default());
        let start = self.sorted.partition_point(|&id| key(id) < essential_name);
        self.sorted
            .get(start..)
            .unwrap_or_default()
            .iter()
            .copied()
            .take_while(move |&id| key(id) == essential_name)
    }
}

/// The outcome of one relocation (libbpf's `bpf_core_relo_res`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreResult {
    /// Index of the relocation (as given to [`CoreResolver::resolve`]).
    pub index: u32,
    /// Instruction index in its section (`insn_off / 8`).
    pub insn: u32,
    /// What was computed.
    pub kind: CoreReloKind,
    /// The value computed on the local BTF (what the compiler put in the instruction).
    pub orig_val: u64,
    /// The value for the target.
    pub new_val: u64,
    /// `Some(reason)`: the instruction must be poisoned; the reason names the access string.
    pub poison: Option<BtfError>,
    /// Whether the instruction must currently hold `orig_val` (bitfields and type ids are
    /// not checked).
    pub validate: bool,
    /// Local field size for LDX/ST/STX size adjustment (0 when not a plain field offset).
    pub orig_size: u32,
    /// Target field size.
    pub new_size: u32,
    /// The field changed size in a way a load cannot follow (signed integer, struct ...):
    /// LDX/ST/STX instructions are poisoned.
    pub fail_memsz_adjust: bool,
    /// The matching target type (root of the first matching candidate), 0 when none.
    pub target_type_id: u32,
    /// How many candidates matched.
    pub matched: u32,
    /// The local root type's name, for messages.
    pub type_name: ErrName,
    /// The access string, for messages.
    pub access: ErrName,
}

/// What [`patch_insn`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchOutcome {
    /// An ALU/ALU64 immediate changed.
    Imm {
        /// Before.
        from: i32,
        /// After.
        to: i32,
    },
    /// A LDX/ST/STX offset changed, and maybe the access size.
    Off {
        /// Before.
        from: i16,
        /// After.
        to: i16,
        /// `(old, new)` access size in bytes when it changed.
        size: Option<(u32, u32)>,
    },
    /// An `ld_imm64` immediate changed.
    Imm64 {
        /// Before.
        from: u64,
        /// After.
        to: u64,
    },
    /// The instruction (both slots of an `ld_imm64`) became `call 0xbad2310`.
    Poisoned {
        /// Why.
        reason: BtfError,
    },
}

#[derive(Clone, Copy, Debug)]
struct Acc<'b> {
    type_id: u32,
    idx: u32,
    /// Member (or enumerator) name; `None` for array accesses.
    name: Option<&'b [u8]>,
}

const NO_ACC: Acc<'static> = Acc {
    type_id: 0,
    idx: 0,
    name: None,
};

#[derive(Clone, Copy, Debug)]
struct Spec<'b> {
    root: u32,
    acc: [Acc<'b>; MAX_SPEC_LEN],
    len: usize,
    raw_len: usize,
    bit_offset: u64,
}

impl<'b> Spec<'b> {
    fn new(root: u32) -> Self {
        Spec {
            root,
            acc: [NO_ACC; MAX_SPEC_LEN],
            len: 0,
            raw_len: 0,
            bit_offset: 0,
        }
    }
    fn push(&mut self, a: Acc<'b>) -> Result<(), Fail> {
        let slot = self
            .acc
            .get_mut(self.len)
            .ok_or(Fail::Hard("access path too long"))?;
        *slot = a;
        self.len += 1;
        Ok(())
    }
    fn last(&self) -> Option<&Acc<'b>> {
        self.acc.get(self.len.checked_sub(1)?)
    }
    fn get(&self, i: usize) -> Option<&Acc<'b>> {
        self.acc.get(..self.len)?.get(i)
    }
}

/// Why a computation stopped.
#[derive(Clone, Copy, Debug)]
enum Fail {
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

fn skip<'b>(btf: &Btf<'b>, id: u32) -> Result<(u32, Option<Type<'b>>), Fail> {
    let r = btf.resolve(id)?;
    Ok((r, btf.ty(r)))
}

fn kind_num(t: &Option<Type<'_>>) -> u8 {
    t.map_or(0, |t| t.kind() as u8)
}

fn kinds_compat(a: &Option<Type<'_>>, b: &Option<Type<'_>>) -> bool {
    kind_num(a) == kind_num(b)
        || (a.is_some_and(|t| t.kind().is_any_enum()) && b.is_some_and(|t| t.kind().is_any_enum()))
}

fn is_composite(t: &Option<Type<'_>>) -> bool {
    t.is_some_and(|t| t.kind().is_composite())
}

/// Parses `access` ("0:1:2") against the local BTF (libbpf's `bpf_core_parse_spec`).
fn parse_spec<'b>(
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
fn is_flex_arr(btf: &Btf<'_>, acc: Option<&Acc<'_>>, nelems: u32) -> bool {
    let Some(acc) = acc else { return false };
    if acc.name.is_none() || nelems > 0 {
        return false;
    }
    btf.ty(acc.type_id)
        .is_some_and(|t| u32::from(t.vlen()) == acc.idx + 1)
}

struct Matcher<'x, 'l, 't> {
    local: &'x Btf<'l>,
    targ: &'x Btf<'t>,
    steps: u32,
}

impl<'l, 't> Matcher<'_, 'l, 't> {
    fn tick(&mut self) -> Result<(), Fail> {
        self.steps += 1;
        if self.steps > STEP_BUDGET {
            return Err(Fail::Hard("type comparison exceeded its step budget"));
        }
        Ok(())
    }

    /// libbpf's `bpf_core_fields_are_compat`.
    fn fields_compat(&mut self, mut lid: u32, mut tid: u32) -> Result<bool, Fail> {
        for _ in 0..super::MAX_RESOLVE_DEPTH {
            self.tick()?;
            let (_, lt) = skip(self.local, lid)?;
            let (_, tt) = skip(self.targ, tid)?;
            if is_composite(&lt) && is_composite(&tt) {
                return Ok(true);
            }
            if !kinds_compat(&lt, &tt) {
                return Ok(false);
            }
            let (Some(lt), Some(tt)) = (lt, tt) else {
                return Ok(false);
            };
            match lt.kind() {
                Kind::Ptr | Kind::Float => return Ok(true),
                Kind::Fwd | Kind::Enum | Kind::Enum64 => {
                    let ln = essential(lt.name_bytes());
                    let tn = essential(tt.name_bytes());
                    return Ok(ln.is_empty() || tn.is_empty() || ln == tn);
                }
                Kind::Int => {
                    let lo = lt.int().map_or(0, |i| i.offset);
                    let to = tt.int().map_or(0, |i| i.offset);
                    return Ok(lo == 0 && to == 0);
                }
                Kind::Array => {
                    lid = lt.array().map_or(0, |a| a.elem_type);
                    tid = tt.array().map_or(0, |a| a.elem_type);
                }
                _ => return Ok(false),
            }
        }
        Err(Fail::Hard("array nesting too deep"))
    }

    /// libbpf's `bpf_core_types_are_compat`.
    fn types_compat(&mut self, mut lid: u32, mut tid: u32, level: u32) -> Result<bool, Fail> {
        if !kinds_compat(&self.local.ty(lid), &self.targ.ty(tid)) {
            return Ok(false);
        }
        for _ in 0..COMPAT_LEVEL {
            self.tick()?;
            let (_, lt) = skip(self.local, lid)?;
            let (_, tt) = skip(self.targ, tid)?;
            if !kinds_compat(&lt, &tt) {
                return Ok(false);
            }
            let (Some(lt), Some(tt)) = (lt, tt) else {
                // Both void.
                return Ok(true);
            };
            match lt.kind() {
                Kind::Struct | Kind::Union | Kind::Enum | Kind::Enum64 | Kind::Fwd => {
                    return Ok(true)
                }
                Kind::Int => {
                    let lo = lt.int().map_or(0, |i| i.offset);
                    let to = tt.int().map_or(0, |i| i.offset);
                    return Ok(lo == 0 && to == 0);
                }
                Kind::Ptr => {
                    lid = lt.size_or_type();
                    tid = tt.size_or_type();
                }
                Kind::Array => {
                    lid = lt.array().map_or(0, |a| a.elem_type);
                    tid = tt.array().map_or(0, |a| a.elem_type);
                }
                Kind::FuncProto => {
                    if lt.vlen() != tt.vlen() {
                        return Ok(false);
                    }
                    for (lp, tp) in lt.params().zip(tt.params()) {
                        if level == 0 {
                            return Err(Fail::Hard("function prototypes nest too deep"));
                        }
                        let (l, _) = skip(self.local, lp.type_id)?;
                        let (t, _) = skip(self.targ, tp.type_id)?;
                        if !self.types_compat(l, t, level - 1)? {
                            return Ok(false);
                        }
                    }
                    lid = skip(self.local, lt.size_or_type())?.0;
                    tid = skip(self.targ, tt.size_or_type())?.0;
                }
                _ => return Ok(false),
            }
        }
        Err(Fail::Hard("type nesting too deep"))
    }

    fn names_match(&self, l: &[u8], t: &[u8]) -> bool {
        l.is_empty() || t.is_empty() || essential(l) == essential(t)
    }

    /// libbpf's `__bpf_core_types_match`.
    fn types_match(
        &mut self,
        mut lid: u32,
        mut tid: u32,
        mut behind_ptr: bool,
        level: u32,
    ) -> Result<bool, Fail> {
        if level == 0 {
            return Err(Fail::Hard("types nest too deep"));
        }
        for _ in 0..COMPAT_LEVEL {
            self.tick()?;
            let (_, lt) = skip(self.local, lid)?;
            let (_, tt) = skip(self.targ, tid)?;
            let lname = lt.map(|t| t.name_bytes()).unwrap_or_default();
            let tname = tt.map(|t| t.name_bytes()).unwrap_or_default();
            if !self.names_match(lname, tname) {
                return Ok(false);
            }
            let (lk, tk) = (kind_num(&lt), kind_num(&tt));
            let (Some(lt), Some(tt_)) = (lt, tt) else {
                return Ok(lk == tk);
            };
            let tkind = tt_.kind();
            match lt.kind() {
                Kind::Fwd => {
                    let lf = lt.kind_flag();
                    return Ok(if behind_ptr {
                        if lk == tk {
                            lf == tt_.kind_flag()
                        } else {
                            (tkind == Kind::Struct && !lf) || (tkind == Kind::Union && lf)
                        }
                    } else {
                        lk == tk && lf == tt_.kind_flag()
                    });
                }
                Kind::Enum | Kind::Enum64 => {
                    if !tkind.is_any_enum() {
                        return Ok(false);
                    }
                    return Ok(self.enums_match(&lt, &tt_));
                }
                Kind::Struct | Kind::Union => {
                    if behind_ptr {
                        if lk == tk {
                            return Ok(true);
                        }
                        if tkind != Kind::Fwd {
                            return Ok(false);
                        }
                        return Ok((lt.kind() == Kind::Union) == tt_.kind_flag());
                    }
                    if lk != tk {
                        return Ok(false);
                    }
                    return self.composites_match(&lt, &tt_, behind_ptr, level);
                }
                Kind::Int => {
                    if lk != tk {
                        return Ok(false);
                    }
                    let ls = lt.int().is_some_and(|i| i.is_signed());
                    let ts = tt_.int().is_some_and(|i| i.is_signed());
                    return Ok(lt.size_or_type() == tt_.size_or_type() && ls == ts);
                }
                Kind::Ptr => {
                    if lk != tk {
                        return Ok(false);
                    }
                    behind_ptr = true;
                    lid = lt.size_or_type();
                    tid = tt_.size_or_type();
                }
                Kind::Array => {
                    let (Some(la), Some(ta)) = (lt.array(), tt_.array()) else {
                        return Ok(false);
                    };
                    if la.nelems != ta.nelems {
                        return Ok(false);
                    }
                    lid = la.elem_type;
                    tid = ta.elem_type;
                }
                Kind::FuncProto => {
                    if lk != tk || lt.vlen() != tt_.vlen() {
                        return Ok(false);
                    }
                    for (lp, tp) in lt.params().zip(tt_.params()) {
                        if !self.types_match(lp.type_id, tp.type_id, behind_ptr, level - 1)? {
                            return Ok(false);
                        }
                    }
                    lid = lt.size_or_type();
                    tid = tt_.size_or_type();
                }
                _ => return Ok(false),
            }
        }
        Err(Fail::Hard("type nesting too deep"))
    }

    fn enums_match(&mut self, lt: &Type<'_>, tt: &Type<'_>) -> bool {
        if lt.size_or_type() != tt.size_or_type() || lt.vlen() > tt.vlen() {
            return false;
        }
        lt.enum_values().all(|lv| {
            let ln = essential(lv.name.as_bytes());
            tt.enum_values().any(|tv| {
                let tn = tv.name.as_bytes();
                !tn.is_empty() && essential(tn) == ln
            })
        })
    }

    fn composites_match(
        &mut self,
        lt: &Type<'_>,
        tt: &Type<'_>,
        behind_ptr: bool,
        level: u32,
    ) -> Result<bool, Fail> {
        if lt.vlen() > tt.vlen() {
            return Ok(false);
        }
        for lm in lt.members() {
            let mut matched = false;
            for tm in tt.members() {
                self.tick()?;
                if !self.names_match(lm.name.as_bytes(), tm.name.as_bytes()) {
                    continue;
                }
                if self.types_match(lm.type_id, tm.type_id, behind_ptr, level - 1)? {
                    matched = true;
                    break;
                }
            }
            if !matched {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// libbpf's `bpf_core_match_member`: finds the local accessor's member in target
    /// composite `tid`, looking into anonymous members.
    fn match_member(
        &mut self,
        local_acc: &Acc<'_>,
        tid: u32,
        spec: &mut Spec<'t>,
        raw: &mut [u32; MAX_SPEC_LEN],
        next: &mut u32,
    ) -> Result<bool, Fail> {
        self.tick()?;
        let (tid, tt) = skip(self.targ, tid)?;
        let Some(tt) = tt.filter(|t| t.kind().is_composite()) else {
            return Ok(false);
        };
        let lt = self
            .local
            .ty(local_acc.type_id)
            .ok_or(Fail::Hard("local accessor type out of range"))?;
        let lm = lt
            .member(local_acc.idx)
            .ok_or(Fail::Hard("local member index out of range"))?;
        let lname = self.local.string_bytes(lm.name_off);
        for (i, m) in tt.members().enumerate() {
            if spec.raw_len >= MAX_SPEC_LEN {
                return Err(Fail::Hard("access path too long"));
            }
            spec.bit_offset += u64::from(m.bit_offset);
            if let Some(slot) = raw.get_mut(spec.raw_len) {
                *slot = i as u32;
            }
            spec.raw_len += 1;
            let tname = self.targ.string_bytes(m.name_off);
            if tname.is_empty() {
                if self.match_member(local_acc, m.type_id, spec, raw, next)? {
                    return Ok(true);
                }
            } else if tname == lname {
                spec.push(Acc {
                    type_id: tid,
                    idx: i as u32,
                    name: Some(tname),
                })?;
                *next = m.type_id;
                let ok = self.fields_compat(lm.type_id, m.type_id)?;
                if !ok {
                    spec.len -= 1;
                }
                return Ok(ok);
            }
            spec.bit_offset -= u64::from(m.bit_offset);
            spec.raw_len -= 1;
        }
        Ok(false)
    }

    /// libbpf's `bpf_core_spec_match`: `Some(target spec)` when candidate `tid` matches.
    fn spec_match(
        &mut self,
        local: &Spec<'l>,
        kind: CoreReloKind,
        tid: u32,
    ) -> Result<Option<Spec<'t>>, Fail> {
        let mut ts = Spec::new(tid);
        if kind.is_type_based() {
            let ok = if kind == CoreReloKind::TypeMatches {
                self.types_match(local.root, tid, false, COMPAT_LEVEL)?
            } else {
                self.types_compat(local.root, tid, COMPAT_LEVEL)?
            };
            return Ok(ok.then_some(ts));
        }
        let first = *local.get(0).ok_or(Fail::Hard("empty spec"))?;
        if kind.is_enumval_based() {
            let (tid, tt) = skip(self.targ, tid)?;
            let Some(tt) = tt.filter(|t| t.kind().is_any_enum()) else {
                return Ok(None);
            };
            let ln = essential(first.name.unwrap_or_default());
            for (i, v) in tt.enum_values().enumerate() {
                let tn = self.targ.string_bytes(v.name_off);
                if essential(tn) == ln {
                    ts.push(Acc {
                        type_id: tid,
                        idx: i as u32,
                        name: Some(tn),
                    })?;
                    ts.raw_len = 1;
                    return Ok(Some(ts));
                }
            }
            return Ok(None);
        }
        if !kind.is_field_based() {
            return Err(Fail::Hard("unknown relocation kind"));
        }
        let mut raw = [0u32; MAX_SPEC_LEN];
        let mut tid = tid;
        for i in 0..local.len {
            let la = *local.get(i).ok_or(Fail::Hard("spec index"))?;
            let (rid, tt) = skip(self.targ, tid)?;
            tid = rid;
            if la.name.is_some() {
                let mut next = 0;
                if !self.match_member(&la, tid, &mut ts, &mut raw, &mut next)? {
                    return Ok(None);
                }
                tid = next;
            } else {
                if i > 0 {
                    let Some(a) = tt.and_then(|t| t.array()) else {
                        return Ok(None);
                    };
                    let flex = is_flex_arr(self.targ, ts.last(), a.nelems);
                    if !flex && la.idx >= a.nelems {
                        return Ok(None);
                    }
                    tid = skip(self.targ, a.elem_type)?.0;
                }
                if ts.raw_len >= MAX_SPEC_LEN {
                    return Err(Fail::Hard("access path too long"));
                }
                ts.push(Acc {
                    type_id: tid,
                    idx: la.idx,
                    name: None,
                })?;
                if let Some(slot) = raw.get_mut(ts.raw_len) {
                    *slot = la.idx;
                }
                ts.raw_len += 1;
                let sz = self.targ.size_of(tid)?;
                ts.bit_offset += u64::from(la.idx) * u64::from(sz) * 8;
            }
        }
        Ok(Some(ts))
    }
}

/// One side's computed value.
#[derive(Clone, Copy, Debug, Default)]
struct Val {
    val: u64,
    size: u32,
    type_id: u32,
    validate: bool,
}

/// libbpf's `bpf_core_calc_field_relo`.
fn calc_field(
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
fn calc_type(btf: &Btf<'_>, kind: CoreReloKind, root: Option<u32>) -> Result<Val, Fail> {
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
fn calc_enum(btf: &Btf<'_>, kind: CoreReloKind, spec: Option<&Spec<'_>>) -> Result<Val, Fail> {
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

/// Resolves CO-RE relocations of one object (`local`) against a target BTF.
#[derive(Clone, Copy, Debug)]
pub struct CoreResolver<'x, 'l, 't> {
    local: &'x Btf<'l>,
    targets: &'x CandidateIndex<'t>,
}

impl<'x, 'l, 't> CoreResolver<'x, 'l, 't> {
    /// A resolver for relocations of `local` against the target in `targets`.
    #[must_use]
    pub fn new(local: &'x Btf<'l>, targets: &'x CandidateIndex<'t>) -> Self {
        CoreResolver { local, targets }
    }

    /// Computes relocation `relo` (number `index` of its section, for messages).
    ///
    /// A relocation whose target cannot be found is not an error: the result says
    /// `poison` (or 0 for the existence kinds).
    ///
    /// # Errors
    /// [`BtfError::CoreRelo`] naming the access string: unparsable access string,
    /// anonymous root type, ambiguous candidates, unknown kind, walks past their limits.
    pub fn resolve(&self, index: u32, relo: &CoreRelo) -> BtfResult<CoreResult> {
        let local = self.local;
        let targ = self.targets.btf();
        let access = local.string_bytes(relo.access_str_off);
        let lt = local.ty(relo.type_id);
        let type_name = ErrName::new(lt.map(|t| t.name_bytes()).unwrap_or(b"void"));
        let kind = relo.kind;
        let mut res = CoreResult {
            index,
            insn: relo.insn_off / 8,
            kind,
            orig_val: 0,
            new_val: 0,
            poison: None,
            validate: true,
            orig_size: 0,
            new_size: 0,
            fail_memsz_adjust: false,
            target_type_id: 0,
            matched: 0,
            type_name,
            access: ErrName::new(access),
        };
        let err = |what| BtfError::CoreRelo {
            index,
            insn: relo.insn_off / 8,
            ty: type_name,
            access: ErrName::new(access),
            what,
        };
        let hard = |f: Fail| match f {
            Fail::Hard(w) | Fail::Poison(w) => err(w),
        };
        if relo.type_id > local.type_count() {
            return Err(err("local type id out of range"));
        }
        if relo.insn_off % 8 != 0 {
            return Err(err("instruction offset not a multiple of 8"));
        }
        if let CoreReloKind::Unknown(_) = kind {
            return Err(err("unknown relocation kind"));
        }
        let local_spec = parse_spec(local, relo.type_id, kind, access).map_err(hard)?;
        if kind == CoreReloKind::TypeIdLocal {
            res.validate = false;
            res.orig_val = u64::from(relo.type_id);
            res.new_val = u64::from(relo.type_id);
            return Ok(res);
        }
        let lname = lt.map(|t| t.name_bytes()).unwrap_or_default();
        if lname.is_empty() {
            return Err(err("relocation against an anonymous type"));
        }
        let mut m = Matcher {
            local,
            targ,
            steps: 0,
        };
        let little = targ.endian().is_little();
        let mut first: Option<(Spec<'t>, CoreResult)> = None;
        for cand in self.targets.by_essential_name(essential(lname)) {
            if !kinds_compat(&lt, &targ.ty(cand)) {
                continue;
            }
            let Some(cs) = m.spec_match(&local_spec, kind, cand).map_err(hard)? else {
                continue;
            };
            let cr = calc(local, targ, kind, &local_spec, Some(&cs), little, res).map_err(hard)?;
            match &first {
                None => {
                    let mut cr = cr;
                    cr.target_type_id = cand;
                    first = Some((cs, cr));
                }
                Some((ts, tr)) => {
                    if cs.bit_offset != ts.bit_offset {
                        return Err(err("field offset ambiguity between candidates"));
                    }
                    if cr.poison.is_some() != tr.poison.is_some() || cr.new_val != tr.new_val {
                        return Err(err("relocation decision ambiguity between candidates"));
                    }
                }
            }
            res.matched += 1;
        }
        let matched = res.matched;
        let mut out = match first {
            Some((_, r)) => r,
            None => calc(local, targ, kind, &local_spec, None, little, res).map_err(hard)?,
        };
        out.matched = matched;
        Ok(out)
    }
}

/// libbpf's `bpf_core_calc_relo`.
fn calc(
    local: &Btf<'_>,
    targ: &Btf<'_>,
    kind: CoreReloKind,
    ls: &Spec<'_>,
    ts: Option<&Spec<'_>>,
    little: bool,
    mut res: CoreResult,
) -> Result<CoreResult, Fail> {
    let poison_of = |what| BtfError::CoreRelo {
        index: res.index,
        insn: res.insn,
        ty: res.type_name,
        access: res.access,
        what,
    };
    let (o, n) = if kind.is_field_based() {
        let o = calc_field(local, kind, Some(ls), little)?;
        match calc_field(targ, kind, ts, little) {
            Ok(n) => (o, n),
            Err(Fail::Poison(w)) => {
                res.poison = Some(poison_of(w));
                (o, Val::default())
            }
            Err(e) => return Err(e),
        }
    } else if kind.is_type_based() {
        (
            calc_type(local, kind, Some(ls.root))?,
            calc_type(targ, kind, ts.map(|s| s.root))?,
        )
    } else {
        let o = calc_enum(local, kind, Some(ls))?;
        match calc_enum(targ, kind, ts) {
            Ok(n) => (o, n),
            Err(Fail::Poison(w)) => {
                res.poison = Some(poison_of(w));
                (o, Val::default())
            }
            Err(e) => return Err(e),
        }
    };
    res.orig_val = o.val;
    res.new_val = n.val;
    res.validate = o.validate;
    res.orig_size = o.size;
    res.new_size = n.size;
    res.fail_memsz_adjust = false;
    if kind.is_field_based() && res.poison.is_none() && o.size != n.size {
        let ot = local.ty(o.type_id);
        let nt = targ.ty(n.type_id);
        let ptrs =
            ot.is_some_and(|t| t.kind() == Kind::Ptr) && nt.is_some_and(|t| t.kind() == Kind::Ptr);
        let unsigned = |t: Option<Type<'_>>| {
            t.and_then(|t| t.int())
                .is_some_and(|i| i.encoding != INT_SIGNED)
        };
        if !(ptrs || unsigned(ot) && unsigned(nt)) {
            res.fail_memsz_adjust = true;
        }
    }
    Ok(res)
}

const CLASS_LD: u8 = 0x00;
const CLASS_LDX: u8 = 0x01;
const CLASS_ST: u8 = 0x02;
const CLASS_STX: u8 = 0x03;
const CLASS_ALU: u8 = 0x04;
const CLASS_ALU64: u8 = 0x07;
const SRC_X: u8 = 0x08;
const JMP_CALL: u8 = 0x85;

fn size_bytes(code: u8) -> u32 {
    match code & 0x18 {
        0x00 => 4,
        0x08 => 2,
        0x10 => 1,
        _ => 8,
    }
}

fn size_code(bytes: u32) -> Option<u8> {
    Some(match bytes {
        4 => 0x00,
        2 => 0x08,
        1 => 0x10,
        8 => 0x18,
        _ => return None,
    })
}

fn poison(insn: &mut Insn) {
    *insn = Insn::new(JMP_CALL, 0, 0, 0, POISON_IMM);
}

/// Applies `res` to instruction `at` of `insns` (libbpf's `bpf_core_patch_insn`).
///
/// # Errors
/// [`BtfError::CoreRelo`] when the instruction is not one a relocation can apply to, does
/// not hold the value the compiler should have written (when `res.validate`), or the new
/// offset does not fit 16 bits; [`BtfError::NoType`]-free: `at` past the end is
/// [`BtfError::CoreRelo`] too.
pub fn patch_insn(insns: &mut [Insn], at: usize, res: &CoreResult) -> BtfResult<PatchOutcome> {
    let err = |what| BtfError::CoreRelo {
        index: res.index,
        insn: res.insn,
        ty: res.type_name,
        access: res.access,
        what,
    };
    let insn = *insns
        .get(at)
        .ok_or(err("instruction index past the program"))?;
    let poisoned = |insns: &mut [Insn], reason: BtfError| {
        if insn.is_ld_imm64() {
            if let Some(next) = insns.get_mut(at + 1) {
                poison(next);
            }
        }
        if let Some(i) = insns.get_mut(at) {
            poison(i);
        }
        Ok(PatchOutcome::Poisoned { reason })
    };
    if let Some(reason) = res.poison {
        return poisoned(insns, reason);
    }
    let (orig, new) = (res.orig_val, res.new_val);
    match insn.code() & 0x07 {
        CLASS_ALU | CLASS_ALU64 => {
            if insn.code() & SRC_X != 0 {
                return Err(err("ALU instruction with a register source"));
            }
            if res.validate && insn.imm() as i64 as u64 != orig {
                return Err(err("ALU immediate is not the value the compiler computed"));
            }
            let to = new as i32;
            if let Some(i) = insns.get_mut(at) {
                i.set_imm(to);
            }
            Ok(PatchOutcome::Imm {
                from: insn.imm(),
                to,
            })
        }
        CLASS_LDX | CLASS_ST | CLASS_STX => {
            if res.validate && insn.off() as i64 as u64 != orig {
                return Err(err(
                    "LDX/ST/STX offset is not the value the compiler computed",
                ));
            }
            if new > i16::MAX as u64 {
                return Err(err("new offset does not fit 16 bits"));
            }
            if res.fail_memsz_adjust {
                return poisoned(
                    insns,
                    err("field changed size and is not a pointer or unsigned integer"),
                );
            }
            let to = new as i16;
            let mut code = insn.code();
            let mut size = None;
            if res.new_size != res.orig_size {
                if size_bytes(insn.code()) != res.orig_size {
                    return Err(err("LDX/ST/STX access size is not the field's size"));
                }
                let c = size_code(res.new_size).ok_or(err("new field size is not 1, 2, 4 or 8"))?;
                code = (insn.code() & 0xe0) | c | (insn.code() & 0x07);
                size = Some((res.orig_size, res.new_size));
            }
            if let Some(i) = insns.get_mut(at) {
                i.set_off(to);
                i.set_code(code);
            }
            Ok(PatchOutcome::Off {
                from: insn.off(),
                to,
                size,
            })
        }
        CLASS_LD => {
            let next = insns.get(at + 1).copied();
            let Some(next) = next.filter(|n| {
                insn.is_ld_imm64()
                    && insn.src() == 0
                    && insn.off() == 0
                    && n.code() == 0
                    && n.dst() == 0
                    && n.src() == 0
                    && n.off() == 0
            }) else {
                return Err(err("ld_imm64 of an unexpected form"));
            };
            let from = u64::from(insn.imm() as u32) | (u64::from(next.imm() as u32) << 32);
            if res.validate && from != orig {
                return Err(err(
                    "ld_imm64 immediate is not the value the compiler computed",
                ));
            }
            if let Some(i) = insns.get_mut(at) {
                i.set_imm(new as u32 as i32);
            }
            if let Some(i) = insns.get_mut(at + 1) {
                i.set_imm((new >> 32) as u32 as i32);
            }
            Ok(PatchOutcome::Imm64 { from, to: new })
        }
        _ => Err(err("instruction class cannot be relocated")),
    }
}
