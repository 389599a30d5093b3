//! The BTF error type: `Copy`, allocation-free, naming the type id, map or access string.

use core::fmt;

/// Longest name (map, field, access string, type) kept inside a [`BtfError`]; longer ones
/// are shown cut with `...`.
pub const NAME_IN_ERROR: usize = 40;

/// A name copied into an error (the input it came from may be gone when the error is
/// printed).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ErrName {
    buf: [u8; NAME_IN_ERROR],
    len: u8,
    cut: bool,
}

impl ErrName {
    /// A copy of (the start of) `name`; bytes that are not UTF-8 are kept and shown as `?`.
    #[must_use]
    pub fn new(name: &[u8]) -> Self {
        let mut buf = [0u8; NAME_IN_ERROR];
        let len = name.len().min(NAME_IN_ERROR);
        if let (Some(dst), Some(src)) = (buf.get_mut(..len), name.get(..len)) {
            dst.copy_from_slice(src);
        }
        ErrName {
            buf,
            len: len as u8,
            cut: len < name.len(),
        }
    }

    /// The empty name.
    #[must_use]
    pub const fn empty() -> Self {
        ErrName {
            buf: [0; NAME_IN_ERROR],
            len: 0,
            cut: false,
        }
    }

    /// The kept bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        self.buf.get(..usize::from(self.len)).unwrap_or_default()
    }

    /// The kept bytes as text (the longest valid UTF-8 prefix).
    #[must_use]
    pub fn as_str(&self) -> &str {
        let b = self.bytes();
        match core::str::from_utf8(b) {
            Ok(s) => s,
            Err(e) => core::str::from_utf8(b.get(..e.valid_up_to()).unwrap_or_default())
                .unwrap_or_default(),
        }
    }

    /// Whether the original name was longer than what is kept.
    #[must_use]
    pub fn is_cut(&self) -> bool {
        self.cut
    }
}

impl fmt::Debug for ErrName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())?;
        if self.cut {
            f.write_str("...")?;
        }
        Ok(())
    }
}

impl fmt::Display for ErrName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())?;
        if self.cut {
            f.write_str("...")?;
        }
        Ok(())
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for ErrName {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str}", self.as_str());
    }
}

/// Everything that can go wrong reading `.BTF` / `.BTF.ext`, decoding BTF-defined maps or
/// resolving CO-RE relocations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum BtfError {
    /// The input ends before `what`, which starts at byte `offset` (of the section) and
    /// needs `len` bytes.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Offset in the section where it starts.
        offset: u32,
        /// Bytes it needs.
        len: u32,
    },
    /// The `.BTF` or `.BTF.ext` header is not one we read.
    BadHeader {
        /// What is wrong.
        what: &'static str,
        /// The value found.
        value: u32,
    },
    /// Type `id` is malformed.
    BadType {
        /// Type id.
        id: u32,
        /// What is wrong.
        what: &'static str,
    },
    /// Type `id` has a kind number no BTF version defines.
    #[doc(alias = "BTF_KIND_MAX")]
    BadKind {
        /// Type id.
        id: u32,
        /// The kind number found.
        kind: u8,
    },
    /// Type `id` refers to type `target`, which does not exist or has the wrong kind.
    BadTypeRef {
        /// The referring type.
        id: u32,
        /// The id it refers to.
        target: u32,
        /// What is wrong.
        what: &'static str,
    },
    /// A string offset (a name) of type `id` lies outside the string section or is not
    /// UTF-8.
    BadString {
        /// The type whose name it is (0 for `.BTF.ext` records).
        id: u32,
        /// The string offset.
        offset: u32,
        /// What is wrong.
        what: &'static str,
    },
    /// A walk from type `id` through typedefs, modifiers or arrays went deeper than `limit`
    /// steps: a cycle, or a chain longer than any compiler writes.
    TooDeep {
        /// Where the walk started.
        id: u32,
        /// The depth limit.
        limit: u32,
    },
    /// Type `id` has no size (void, a function, a forward declaration ...) or its size
    /// overflows 32 bits.
    NoSize {
        /// The type.
        id: u32,
    },
    /// The caller asked for a type id that is not in this BTF, or of the wrong kind.
    NoType {
        /// The id asked for.
        id: u32,
        /// What was expected.
        what: &'static str,
    },
    /// A caller-provided buffer is too small.
    Capacity {
        /// What ran out.
        what: &'static str,
        /// The capacity.
        limit: u32,
    },
    /// A `.BTF.ext` section or record is malformed.
    BadExt {
        /// What is wrong.
        what: &'static str,
        /// Offset in the `.BTF.ext` section.
        offset: u32,
    },
    /// A BTF-defined map (`.maps`) is malformed.
    Map {
        /// The map (variable) name; `NAME.inner` for the inner map of a map-in-map.
        map: ErrName,
        /// The field (`key_size`, `values` ...), empty when the whole definition is wrong.
        field: ErrName,
        /// What is wrong.
        what: &'static str,
    },
    /// A CO-RE relocation cannot be applied.
    CoreRelo {
        /// Index of the relocation in its section's record list.
        index: u32,
        /// Instruction index it applies to (`insn_off / 8`).
        insn: u32,
        /// Name of the local root type.
        ty: ErrName,
        /// The access string, e.g. `0:1:2`.
        access: ErrName,
        /// What is wrong.
        what: &'static str,
    },
}

impl fmt::Display for BtfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BtfError::Truncated { what, offset, len } => {
                write!(
                    f,
                    "BTF truncated: {what} at offset {offset:#x} needs {len} bytes"
                )
            }
            BtfError::BadHeader { what, value } => {
                write!(f, "bad BTF header: {what} (value {value:#x})")
            }
            BtfError::BadType { id, what } => write!(f, "BTF type [{id}]: {what}"),
            BtfError::BadKind { id, kind } => write!(f, "BTF type [{id}]: unknown kind {kind}"),
            BtfError::BadTypeRef { id, target, what } => {
                write!(f, "BTF type [{id}]: refers to type [{target}]: {what}")
            }
            BtfError::BadString { id, offset, what } => {
                write!(f, "BTF type [{id}]: string at offset {offset:#x}: {what}")
            }
            BtfError::TooDeep { id, limit } => write!(
                f,
                "BTF type [{id}]: chain of typedefs/modifiers/arrays longer than {limit} (a cycle?)"
            ),
            BtfError::NoSize { id } => write!(f, "BTF type [{id}] has no size"),
            BtfError::NoType { id, what } => write!(f, "no BTF type [{id}]: {what}"),
            BtfError::Capacity { what, limit } => {
                write!(f, "capacity exhausted: more than {limit} {what}")
            }
            BtfError::BadExt { what, offset } => {
                write!(f, "bad .BTF.ext at offset {offset:#x}: {what}")
            }
            BtfError::Map { map, field, what } => {
                if field.bytes().is_empty() {
                    write!(f, "map '{map}': {what}")
                } else {
                    write!(f, "map '{map}': field '{field}': {what}")
                }
            }
            BtfError::CoreRelo {
                index,
                insn,
                ty,
                access,
                what,
            } => write!(
                f,
                "CO-RE relocation #{index} on instruction {insn} ({ty} access {access}): {what}"
            ),
        }
    }
}

impl core::error::Error for BtfError {}

/// Result alias of the BTF module.
pub type BtfResult<T> = core::result::Result<T, BtfError>;
