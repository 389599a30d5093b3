//! The `.BTF` header (`struct btf_header`) and the byte readers shared by the module.

use super::error::{BtfError, BtfResult};
use scroll::Endian;

/// `BTF_MAGIC`, read in the section's own byte order.
pub const BTF_MAGIC: u16 = 0xeb9f;
/// The only BTF version there is.
pub const BTF_VERSION: u8 = 1;
/// Size of the header this reader knows; `hdr_len` may be larger (newer fields, ignored
/// when zero-filled is not checked: the kernel requires that, we only read ours).
pub const HEADER_LEN: u32 = 24;

/// Reads a `u32` at `off` in byte order `endian`; `None` past the end.
#[inline]
pub(crate) fn get_u32(data: &[u8], off: usize, endian: Endian) -> Option<u32> {
    let b: [u8; 4] = data.get(off..off.checked_add(4)?)?.try_into().ok()?;
    Some(if endian.is_little() {
        u32::from_le_bytes(b)
    } else {
        u32::from_be_bytes(b)
    })
}

/// Reads a `u32` of a record already validated to hold it (0 if not: unreachable after
/// validation, and never a panic).
#[inline]
pub(crate) fn rd32(data: &[u8], off: usize, endian: Endian) -> u32 {
    get_u32(data, off, endian).unwrap_or(0)
}

/// Finds the byte order from a magic number stored in the first two bytes.
pub(crate) fn endian_of(data: &[u8]) -> BtfResult<Endian> {
    match data.get(..2) {
        Some([0x9f, 0xeb]) => Ok(Endian::Little),
        Some([0xeb, 0x9f]) => Ok(Endian::Big),
        Some(&[a, b]) => Err(BtfError::BadHeader {
            what: "magic is not 0xeb9f in either byte order",
            value: u32::from(u16::from_le_bytes([a, b])),
        }),
        _ => Err(BtfError::Truncated {
            what: "magic",
            offset: 0,
            len: 2,
        }),
    }
}

/// The validated `.BTF` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[doc(alias = "btf_header")]
pub struct Header {
    /// Whether the section is little-endian (from the magic's byte order).
    pub little_endian: bool,
    /// `version` (always [`BTF_VERSION`]).
    pub version: u8,
    /// `flags` (unused, 0).
    pub flags: u8,
    /// `hdr_len`: where the sections' offsets count from.
    pub hdr_len: u32,
    /// `type_off`: start of the type section, from the end of the header.
    pub type_off: u32,
    /// `type_len`: bytes of the type section.
    pub type_len: u32,
    /// `str_off`: start of the string section, from the end of the header.
    pub str_off: u32,
    /// `str_len`: bytes of the string section.
    pub str_len: u32,
}

impl Header {
    /// Parses and checks the header of `data` (a whole `.BTF` section): magic, version,
    /// `hdr_len`, both sections inside the data, the type section 4-byte aligned, the string
    /// section starting and ending with NUL.
    ///
    /// # Errors
    /// [`BtfError::Truncated`] or [`BtfError::BadHeader`] naming the field.
    pub fn parse(data: &[u8]) -> BtfResult<Self> {
        let endian = endian_of(data)?;
        if data.len() < HEADER_LEN as usize {
            return Err(BtfError::Truncated {
                what: "header",
                offset: 0,
                len: HEADER_LEN,
            });
        }
        let byte = |i: usize| data.get(i).copied().unwrap_or(0);
        let word = |i: usize| rd32(data, i, endian);
        let h = Header {
            little_endian: endian.is_little(),
            version: byte(2),
            flags: byte(3),
            hdr_len: word(4),
            type_off: word(8),
            type_len: word(12),
            str_off: word(16),
            str_len: word(20),
        };
        let bad = |what, value| Err(BtfError::BadHeader { what, value });
        if h.version != BTF_VERSION {
            return bad("version is not 1", u32::from(h.version));
        }
        if h.hdr_len < HEADER_LEN {
            return bad("hdr_len shorter than 24", h.hdr_len);
        }
        let total = u64::try_from(data.len()).unwrap_or(u64::MAX);
        if u64::from(h.hdr_len) > total {
            return Err(BtfError::Truncated {
                what: "header (hdr_len)",
                offset: 0,
                len: h.hdr_len,
            });
        }
        let body = total - u64::from(h.hdr_len);
        if u64::from(h.type_off) + u64::from(h.type_len) > body {
            return Err(BtfError::Truncated {
                what: "type section",
                offset: h.hdr_len.saturating_add(h.type_off),
                len: h.type_len,
            });
        }
        if u64::from(h.str_off) + u64::from(h.str_len) > body {
            return Err(BtfError::Truncated {
                what: "string section",
                offset: h.hdr_len.saturating_add(h.str_off),
                len: h.str_len,
            });
        }
        if h.type_off % 4 != 0 {
            return bad("type section not 4-byte aligned", h.type_off);
        }
        // The kernel wants the two sections not to overlap (types first).
        if u64::from(h.type_off) + u64::from(h.type_len) > u64::from(h.str_off)
            && u64::from(h.str_off) + u64::from(h.str_len) > u64::from(h.type_off)
        {
            return bad("type and string sections overlap", h.str_off);
        }
        if h.str_len == 0 {
            return bad("empty string section", 0);
        }
        let strings = h.strings(data);
        if strings.first() != Some(&0) {
            return bad("string section does not start with NUL", h.str_off);
        }
        if strings.last() != Some(&0) {
            return bad("string section does not end with NUL", h.str_len);
        }
        Ok(h)
    }

    /// The byte order.
    #[must_use]
    pub fn endian(&self) -> Endian {
        if self.little_endian {
            Endian::Little
        } else {
            Endian::Big
        }
    }

    fn slice<'a>(&self, data: &'a [u8], off: u32, len: u32) -> &'a [u8] {
        let start = (self.hdr_len as usize).saturating_add(off as usize);
        data.get(start..)
            .and_then(|d| d.get(..len as usize))
            .unwrap_or_default()
    }

    /// The type section of `data` (the bytes this header was parsed from).
    #[must_use]
    pub fn types<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        self.slice(data, self.type_off, self.type_len)
    }

    /// The string section of `data` (the bytes this header was parsed from).
    #[must_use]
    pub fn strings<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        self.slice(data, self.str_off, self.str_len)
    }
}
