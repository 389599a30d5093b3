//! The ELF file header (`Elf32_Ehdr` / `Elf64_Ehdr`).

use super::record::{Class, Fields};
use crate::error::{Error, Result};
use scroll::Endian;

/// `e_type` of a relocatable object, what `clang -target bpf -c` writes.
pub const ET_REL: u16 = 1;
/// `e_type` of an executable linked at fixed addresses (`-no-pie`).
pub const ET_EXEC: u16 = 2;
/// `e_type` of a shared object: a library, or a position-independent executable.
pub const ET_DYN: u16 = 3;
/// `e_machine` of eBPF.
pub const EM_BPF: u16 = 247;
/// `e_machine` 0, what LLVM wrote for BPF in 2015.
pub const EM_NONE: u16 = 0;

const SHN_XINDEX: u16 = 0xffff;

/// The fields of the ELF header sluice uses, validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// 32- or 64-bit.
    pub class: Class,
    /// Byte order of every multi-byte field in the file.
    pub endian: Endian,
    /// `e_type`.
    pub e_type: u16,
    /// `e_machine`.
    pub machine: u16,
    /// `e_flags`.
    pub flags: u32,
    /// File offset of the section header table.
    pub shoff: u64,
    /// Size of one section header.
    pub shentsize: u16,
    /// Number of section headers (extended numbering resolved).
    pub shnum: u32,
    /// Index of the section name string table (extended numbering resolved).
    pub shstrndx: u32,
}

impl Header {
    /// Parses and validates the header and the extent of the section header table.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the file is shorter than the header or the table;
    /// [`Error::BadHeader`] for a bad magic, class, data encoding, version or entry size.
    pub fn parse(data: &[u8]) -> Result<Self> {
        // The target's byte order is the usual one: its copy reads every field natively.
        let native: u8 = if cfg!(target_endian = "little") { 1 } else { 2 };
        if data.get(5) == Some(&native) {
            Self::parse_in(data, native)
        } else {
            Self::parse_in(data, 0)
        }
    }

    /// [`Header::parse`] where `EI_DATA` is known to be `ei_data` (0: not known).
    #[inline(always)]
    fn parse_in(data: &[u8], ei_data: u8) -> Result<Self> {
        let ident = data.get(..16).ok_or(Error::Truncated {
            what: "ELF identification",
            offset: 0,
            len: 16,
        })?;
        if ident.get(..4) != Some(b"\x7fELF".as_slice()) {
            return Err(Error::BadHeader {
                what: "not an ELF file (magic)",
                offset: 0,
                value: 0,
            });
        }
        let byte = |i: usize| ident.get(i).copied().unwrap_or(0);
        let class = match byte(4) {
            1 => Class::Elf32,
            2 => Class::Elf64,
            v => {
                return Err(Error::BadHeader {
                    what: "EI_CLASS",
                    offset: 4,
                    value: v.into(),
                })
            }
        };
        let endian = match if ei_data != 0 { ei_data } else { byte(5) } {
            1 => Endian::Little,
            2 => Endian::Big,
            v => {
                return Err(Error::BadHeader {
                    what: "EI_DATA (byte order)",
                    offset: 5,
                    value: v.into(),
                })
            }
        };
        if byte(6) != 1 {
            return Err(Error::BadHeader {
                what: "EI_VERSION",
                offset: 6,
                value: byte(6).into(),
            });
        }
        let ehsize = match class {
            Class::Elf32 => 52,
            Class::Elf64 => 64,
        };
        if data.len() < ehsize {
            return Err(Error::Truncated {
                what: "ELF header",
                offset: 0,
                len: ehsize as u64,
            });
        }
        // One cut of the whole header, then plain loads (the length was checked above).
        let little = endian == Endian::Little;
        let truncated = Error::Truncated {
            what: "ELF header",
            offset: 0,
            len: ehsize as u64,
        };
        let (e_type, machine, shoff, flags, base) = match class {
            Class::Elf32 => {
                let f = Fields::<52>::at(data, 0, little).ok_or(truncated)?;
                (f.u16(16), f.u16(18), f.u32(32).into(), f.u32(36), 46)
            }
            Class::Elf64 => {
                let f = Fields::<64>::at(data, 0, little).ok_or(truncated)?;
                (f.u16(16), f.u16(18), f.u64(40), f.u32(48), 58)
            }
        };
        let tail = Fields::<6>::at(data, base, little).ok_or(truncated)?;
        let (shentsize, raw_shnum, raw_shstrndx) = (tail.u16(0), tail.u16(2), tail.u16(4));
        let mut shnum = u32::from(raw_shnum);
        let mut shstrndx = u32::from(raw_shstrndx);
        let want_entsize: u16 = match class {
            Class::Elf32 => 40,
            Class::Elf64 => 64,
        };
        let mut header = Header {
            class,
            endian,
            e_type,
            machine,
            flags,
            shoff,
            shentsize,
            shnum,
            shstrndx,
        };
        if shoff == 0 {
            header.shnum = 0;
            header.shstrndx = 0;
            return Ok(header);
        }
        if shentsize != want_entsize {
            return Err(Error::BadHeader {
                what: "e_shentsize",
                offset: base as u64,
                value: shentsize.into(),
            });
        }
        // Extended numbering: section 0 holds the real count / string table index.
        if shnum == 0 || raw_shstrndx == SHN_XINDEX {
            let sh0 = super::section::SectionHeader::read(
                data,
                usize::try_from(shoff).unwrap_or(usize::MAX),
                class,
                endian,
            )?;
            if shnum == 0 {
                shnum = u32::try_from(sh0.size).map_err(|_| Error::BadHeader {
                    what: "extended section count",
                    offset: shoff,
                    value: sh0.size,
                })?;
            }
            if raw_shstrndx == SHN_XINDEX {
                shstrndx = sh0.link;
            }
        }
        let table = u64::from(shnum) * u64::from(shentsize);
        let end = shoff.saturating_add(table);
        if end > data.len() as u64 {
            return Err(Error::Truncated {
                what: "section header table",
                offset: shoff,
                len: table,
            });
        }
        if shstrndx >= shnum && shstrndx != 0 {
            return Err(Error::BadHeader {
                what: "e_shstrndx past the section table",
                offset: base as u64 + 4,
                value: shstrndx.into(),
            });
        }
        header.shnum = shnum;
        header.shstrndx = shstrndx;
        Ok(header)
    }

    /// Whether the file is little-endian.
    #[must_use]
    pub fn is_little_endian(&self) -> bool {
        self.endian == Endian::Little
    }
}
