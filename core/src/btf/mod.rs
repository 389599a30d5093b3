//! BTF: the `.BTF` type information, the `.BTF.ext` per-instruction records, BTF-defined
//! maps and CO-RE relocation resolution.
//!
//! Zero-copy and allocation-free, like the rest of the core:
//!
//! ```text
//! .BTF bytes ──Btf::parse(bytes, &mut index)──► Btf: header, types, strings (validated once)
//! .BTF.ext bytes ──BtfExt::parse(bytes, &btf)──► func_info / line_info / core_relo iterators
//! Btf + `.maps` DATASEC id ──btf_maps──► BtfMapDef per map (type, sizes, flags, inner map)
//! local Btf + target Btf (the kernel's) ──CoreResolver──► new imm/offset per relocation, or poison
//! Btf + type id + record bytes ──walk──► a Visitor's fields (value.rs: records decoded)
//! ```
//!
//! # The type index
//! Looking a type up by id in O(1) needs the byte offset of every record. [`Btf::parse`]
//! writes them into a caller-provided `&mut [u32]` holding one entry per type:
//! [`Btf::count_types`] says how many (an object's `.BTF` has tens to a few thousand; the
//! kernel's `/sys/kernel/btf/vmlinux` about 150 000, so 600 KB). A buffer too small is
//! [`BtfError::Capacity`], never a truncation.
//!
//! # Validation
//! [`Btf::parse`] checks every record's extent and kind, every name offset (inside the
//! string section, UTF-8), every referenced type id (in range, and of the right kind where
//! the format says so: FUNC → FUNC_PROTO, DATASEC entries → VAR/FUNC). After that the
//! accessors of [`Type`] cannot fail. Walks that follow type references ([`Btf::resolve`],
//! [`Btf::size_of`], the CO-RE matcher) are bounded by [`MAX_RESOLVE_DEPTH`]: a cycle is
//! [`BtfError::TooDeep`], never a hang.
//!
//! Both byte orders are read (the order is taken from the magic number and carried as a
//! value).
//!
//! Split BTF (kernel modules' BTF on top of vmlinux's) is not read: its ids continue
//! vmlinux's.

pub(crate) mod check;
mod core_relo;
mod error;
mod ext;
mod header;
pub(crate) mod maps;
mod section;
mod types;
mod value;
mod var;

pub use core_relo::{
    essential_name_len, patch_insn, Candidate, CandidateIndex, CoreReloKind, CoreResolver,
    CoreResult, PatchOutcome, MAX_SPEC_LEN, POISON_IMM,
};
pub use error::{BtfError, BtfResult, ErrName, NAME_IN_ERROR};
pub use ext::{
    BtfExt, CoreRelo, ExtHeader, ExtRecord, ExtRecords, ExtSection, ExtSections, FuncInfo,
    LineInfo, BTF_EXT_HEADER_LEN,
};
pub use header::{Header, BTF_MAGIC, BTF_VERSION, HEADER_LEN};
pub use maps::{btf_maps, BtfMapDef, BtfMaps, InnerMapDef, MapAttrs};
pub use section::{Btf, MAX_RESOLVE_DEPTH};
pub use types::{
    ArrayInfo, Entries, Entry, EnumValue, IntInfo, Kind, Member, Param, Type, VarSecInfo, INT_BOOL,
    INT_CHAR, INT_SIGNED, LINKAGE_EXTERN, LINKAGE_GLOBAL, LINKAGE_STATIC, TYPE_HEADER_LEN,
};
pub use value::{
    find_c_type, record_candidates, walk, Int, RecordFit, ValueError, Visitor, MAX_VALUES,
    MAX_VALUE_DEPTH,
};
pub use var::{
    encode_value, find_global_var, global_vars, is_data_section, value_kind, GlobalVar, SetError,
    ValueKind,
};

#[cfg(test)]
mod tests;
