//! The one error type of the core: `Copy`, allocation-free, and saying what and where.

use core::fmt;

/// Result alias of the core.
pub type Result<T> = core::result::Result<T, Error>;

/// Longest section name kept inside an error; longer names are shown cut with `...`.
pub const SECTION_NAME_IN_ERROR: usize = 40;

/// A section named in an error: its index and (a copy of the start of) its name.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SectionRef {
    /// Section header index.
    pub index: u32,
    name: [u8; SECTION_NAME_IN_ERROR],
    len: u8,
    cut: bool,
}

impl SectionRef {
    /// A reference to section `index` named `name` (empty when the name is unknown).
    #[must_use]
    pub fn new(index: u32, name: &str) -> Self {
        let mut buf = [0u8; SECTION_NAME_IN_ERROR];
        // Cut on a char boundary so the copy stays valid UTF-8.
        let mut len = name.len().min(SECTION_NAME_IN_ERROR);
        while !name.is_char_boundary(len) {
            len -= 1;
        }
        let src = name.as_bytes().get(..len).unwrap_or_default();
        if let Some(dst) = buf.get_mut(..len) {
            dst.copy_from_slice(src);
        }
        SectionRef {
            index,
            name: buf,
            len: len as u8,
            cut: len < name.len(),
        }
    }

    /// The (possibly cut) section name.
    #[must_use]
    pub fn name(&self) -> &str {
        let bytes = self.name.get(..usize::from(self.len)).unwrap_or_default();
        core::str::from_utf8(bytes).unwrap_or("?")
    }
}

impl fmt::Debug for SectionRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for SectionRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len == 0 {
            write!(f, "section #{}", self.index)
        } else {
            write!(
                f,
                "section #{} '{}{}'",
                self.index,
                self.name(),
                if self.cut { "..." } else { "" }
            )
        }
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for SectionRef {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "section #{} '{=str}'", self.index, self.name());
    }
}

/// Everything that can go wrong in the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// The input ends before `what`, which starts at byte `offset` and needs `len` bytes.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// File offset where it starts.
        offset: u64,
        /// Bytes it needs.
        len: u64,
    },
    /// The ELF header is not one we read (bad magic, class, type, machine ...).
    BadHeader {
        /// What is wrong.
        what: &'static str,
        /// File offset of the offending field.
        offset: u64,
        /// The value found.
        value: u64,
    },
    /// The object's byte order is not the target's (the seed's rule: no conversion).
    ByteOrder {
        /// Whether the object is little-endian.
        object_little: bool,
    },
    /// A section header or its contents are malformed.
    BadSection {
        /// The section.
        section: SectionRef,
        /// What is wrong.
        what: &'static str,
    },
    /// A symbol is malformed.
    BadSymbol {
        /// Symbol table index.
        index: u32,
        /// What is wrong.
        what: &'static str,
    },
    /// A relocation is malformed or points at the wrong instruction.
    BadReloc {
        /// The program section the relocation applies to.
        section: SectionRef,
        /// Index of the relocation inside its REL section.
        index: u32,
        /// Instruction index (`r_offset / 8`) it points at.
        insn: u64,
        /// What is wrong.
        what: &'static str,
    },
    /// A legacy `maps` section whose per-map size is no known `bpf_map_def` layout.
    BadMapDef {
        /// The maps section.
        section: SectionRef,
        /// Bytes per map definition found.
        def_size: u64,
        /// Number of map symbols found.
        maps: u32,
    },
    /// An instruction that cannot be decoded.
    BadInsn {
        /// Instruction index in its program.
        index: u32,
        /// Its opcode byte.
        opcode: u8,
    },
    /// A fixed capacity is exhausted.
    Capacity {
        /// What ran out.
        what: &'static str,
        /// The capacity.
        limit: u32,
    },
    /// A section name or argument spec does not parse.
    Probe {
        /// The program section whose name it is.
        section: SectionRef,
        /// Where in the name, and what.
        error: crate::probe::ProbeError,
    },
    /// A request the caller made does not fit the object (unknown program, missing fd ...).
    Usage {
        /// What is wrong.
        what: &'static str,
        /// The index or value concerned.
        value: u64,
    },
    /// A feature the object uses that this version cannot handle yet.
    Unsupported {
        /// The feature.
        what: &'static str,
        /// Where: section of the program.
        section: SectionRef,
        /// Instruction index, relocation index or offset.
        at: u64,
    },
    /// The object's `.BTF` / `.BTF.ext` (or a BTF-defined map, or a CO-RE relocation) is
    /// malformed or cannot be applied.
    Btf(crate::btf::BtfError),
}

impl From<crate::btf::BtfError> for Error {
    fn from(e: crate::btf::BtfError) -> Self {
        Error::Btf(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated { what, offset, len } => {
                write!(f, "truncated: {what} at offset {offset:#x} needs {len} bytes past the end of the input")
            }
            Error::BadHeader { what, offset, value } => {
                write!(f, "bad ELF header: {what} (value {value:#x} at offset {offset:#x})")
            }
            Error::ByteOrder { object_little } => write!(
                f,
                "object is {}-endian but this target is {}-endian; recompile it with clang -target {}",
                if *object_little { "little" } else { "big" },
                if cfg!(target_endian = "little") { "little" } else { "big" },
                if cfg!(target_endian = "little") { "bpfel" } else { "bpfeb" },
            ),
            Error::BadSection { section, what } => write!(f, "{section}: {what}"),
            Error::BadSymbol { index, what } => write!(f, "symbol #{index}: {what}"),
            Error::BadReloc { section, index, insn, what } => {
                write!(f, "{section}: relocation #{index} on instruction {insn}: {what}")
            }
            Error::BadMapDef { section, def_size, maps } => write!(
                f,
                "{section}: {maps} map symbol(s) give {def_size} bytes per map definition, \
                 which is no known bpf_map_def layout (16, 20, 24, 28 or 36 bytes)"
            ),
            Error::BadInsn { index, opcode } => {
                write!(f, "instruction {index}: invalid opcode {opcode:#04x}")
            }
            Error::Capacity { what, limit } => {
                write!(f, "capacity exhausted: more than {limit} {what}")
            }
            Error::Probe { section, error } => write!(f, "{section}: {error}"),
            Error::Usage { what, value } => write!(f, "{what} ({value})"),
            Error::Unsupported { what, section, at } => {
                write!(f, "{section}: unsupported {what} at {at}")
            }
            Error::Btf(e) => write!(f, "BTF: {e}"),
        }
    }
}

impl core::error::Error for Error {}
