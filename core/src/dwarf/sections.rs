//! The debug sections of one ELF file, inflated when compressed, and where a separate debug
//! file may be (build-id and `.gnu_debuglink`).
//!
//! The core reads no files: [`debug_file_candidates`] returns the paths to try, in the order
//! gdb and perf try them; the caller reads them and checks the CRC with [`debuglink_crc`].

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::OnceCell;

use super::error::Error;
use crate::elf::{Class, Elf, SectionHeader, SHF_COMPRESSED, SHT_NOBITS};

/// `ELFCOMPRESS_ZLIB`.
const ELFCOMPRESS_ZLIB: u32 = 1;
/// Largest section inflated (a bound on what an `Elf_Chdr` may ask for).
pub const MAX_INFLATED: u64 = 1 << 31;

/// The DWARF sections sluice reads, by their uncompressed names.
pub(super) const NAMES: [&str; 13] = [
    ".debug_info",
    ".debug_abbrev",
    ".debug_str",
    ".debug_line",
    ".debug_line_str",
    ".debug_loc",
    ".debug_loclists",
    ".debug_ranges",
    ".debug_rnglists",
    ".debug_addr",
    ".debug_str_offsets",
    ".debug_frame",
    ".debug_types",
];

/// How one debug section is stored in the file.
#[derive(Clone, Copy, Debug, Default)]
enum Stored<'a> {
    /// Not in the file.
    #[default]
    Absent,
    /// Plain bytes, borrowed as they are.
    Plain(&'a [u8]),
    /// `SHF_COMPRESSED`: an `Elf_Chdr` then a zlib stream.
    Chdr(&'a [u8]),
    /// The older `.zdebug_*` form: `ZLIB`, the size, then a zlib stream.
    Zdebug(&'a [u8]),
}

/// The debug sections of one file: borrowed when stored plain; a compressed one
/// (`SHF_COMPRESSED` zlib, or a `.zdebug_*` section) is inflated the first time it is asked
/// for, so a probe that never reads `.debug_frame` or the location lists never pays for
/// inflating them.
#[derive(Clone, Debug)]
pub struct DebugSections<'a> {
    stored: [Stored<'a>; NAMES.len()],
    inflated: [OnceCell<Vec<u8>>; NAMES.len()],
    class: Class,
    pub(super) little: bool,
}

impl<'a> DebugSections<'a> {
    /// Finds the debug sections of `elf`; compressed ones are only checked to be zlib here
    /// and inflated when first read ([`DebugSections::section`]).
    ///
    /// # Errors
    /// [`Error::NoDebugInfo`] when the file has no `.debug_info`; [`Error::Decompress`] for a
    /// compressed section that is not zlib.
    pub fn load(elf: &Elf<'a>) -> Result<Self, Error> {
        let mut stored: [Stored<'a>; NAMES.len()] = Default::default();
        let class = elf.header().class;
        let little = elf.header().is_little_endian();
        for (_, sh) in elf.sections() {
            if sh.sh_type == SHT_NOBITS {
                continue;
            }
            let name = elf.section_name(&sh);
            let (plain, zdebug) = match name.strip_prefix(".zdebug_") {
                Some(rest) => (rest, true),
                None => match name.strip_prefix(".debug_") {
                    Some(rest) => (rest, false),
                    None => continue,
                },
            };
            let Some(slot) = NAMES
                .iter()
                .position(|n| n.strip_prefix(".debug_") == Some(plain))
                .and_then(|i| stored.get_mut(i))
            else {
                continue;
            };
            let bytes = elf.section_data(&sh);
            *slot = if sh.flags & SHF_COMPRESSED != 0 {
                chdr(name, bytes, class, little)?;
                Stored::Chdr(bytes)
            } else if zdebug {
                Stored::Zdebug(bytes)
            } else {
                Stored::Plain(bytes)
            };
        }
        let info_empty = match stored.first() {
            Some(Stored::Plain(b) | Stored::Chdr(b) | Stored::Zdebug(b)) => b.is_empty(),
            _ => true,
        };
        if info_empty {
            return Err(Error::NoDebugInfo);
        }
        Ok(DebugSections {
            stored,
            inflated: Default::default(),
            class,
            little,
        })
    }

    /// The (inflated) contents of the section named `name` (`.debug_info`), empty if absent
    /// or not one of the sections sluice reads.
    ///
    /// # Errors
    /// [`Error::Decompress`] for a compressed section that does not inflate to its stated
    /// size.
    pub fn section(&self, name: &str) -> Result<&[u8], Error> {
        let Some(i) = NAMES.iter().position(|n| *n == name) else {
            return Ok(&[]);
        };
        let (Some(stored), Some(cell)) = (self.stored.get(i), self.inflated.get(i)) else {
            return Ok(&[]);
        };
        let deflated = match *stored {
            Stored::Absent => return Ok(&[]),
            Stored::Plain(b) => return Ok(b),
            Stored::Chdr(b) | Stored::Zdebug(b) => b,
        };
        if let Some(v) = cell.get() {
            return Ok(v);
        }
        let v = match *stored {
            Stored::Zdebug(_) => inflate_zdebug(name, deflated)?,
            _ => inflate_chdr(name, deflated, self.class, self.little)?,
        };
        Ok(cell.get_or_init(|| v))
    }

    /// Whether the section named `name` is stored compressed in the file.
    #[must_use]
    pub fn is_compressed(&self, name: &str) -> bool {
        NAMES
            .iter()
            .position(|n| *n == name)
            .and_then(|i| self.stored.get(i))
            .is_some_and(|s| matches!(s, Stored::Chdr(_) | Stored::Zdebug(_)))
    }

    /// Whether the section named `name` has been inflated (always false for one stored
    /// plain): what a test of the lazy inflation looks at.
    #[must_use]
    pub fn is_inflated(&self, name: &str) -> bool {
        NAMES
            .iter()
            .position(|n| *n == name)
            .and_then(|i| self.inflated.get(i))
            .is_some_and(|c| c.get().is_some())
    }
}

fn inflate(name: &str, deflated: &[u8], size: u64) -> Result<Vec<u8>, Error> {
    let bad = |what: &'static str| Error::Decompress {
        section: String::from(name),
        what,
    };
    if size > MAX_INFLATED {
        return Err(bad("stated size too large"));
    }
    let out = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(deflated, size as usize)
        .map_err(|_| bad("zlib stream does not inflate"))?;
    if out.len() as u64 != size {
        return Err(bad("inflated size differs from the stated size"));
    }
    Ok(out)
}

/// `Elf32_Chdr`/`Elf64_Chdr` then a zlib stream.
fn inflate_chdr(name: &str, bytes: &[u8], class: Class, little: bool) -> Result<Vec<u8>, Error> {
    let (size, hdr) = chdr(name, bytes, class, little)?;
    inflate(name, bytes.get(hdr..).unwrap_or_default(), size)
}

/// The inflated size and the header length of a zlib `Elf_Chdr`.
fn chdr(name: &str, bytes: &[u8], class: Class, little: bool) -> Result<(u64, usize), Error> {
    let rd32 = |at: usize| -> Option<u32> {
        let b: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    let rd64 = |at: usize| -> Option<u64> {
        let b: [u8; 8] = bytes.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(if little {
            u64::from_le_bytes(b)
        } else {
            u64::from_be_bytes(b)
        })
    };
    let (ty, size, hdr) = match class {
        Class::Elf64 => (rd32(0), rd64(8), 24),
        Class::Elf32 => (rd32(0), rd32(4).map(u64::from), 12),
    };
    let (Some(ty), Some(size)) = (ty, size) else {
        return Err(Error::Decompress {
            section: String::from(name),
            what: "truncated compression header",
        });
    };
    if ty != ELFCOMPRESS_ZLIB {
        return Err(Error::Decompress {
            section: String::from(name),
            what: "compression is not zlib (zstd is not supported)",
        });
    }
    Ok((size, hdr))
}

/// `.zdebug_*`: `ZLIB`, the size as 8 big-endian bytes, then a zlib stream.
fn inflate_zdebug(name: &str, bytes: &[u8]) -> Result<Vec<u8>, Error> {
    let size = bytes
        .strip_prefix(b"ZLIB")
        .and_then(|b| b.get(..8))
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_be_bytes)
        .ok_or_else(|| Error::Decompress {
            section: String::from(name),
            what: "no ZLIB header",
        })?;
    inflate(name, bytes.get(12..).unwrap_or_default(), size)
}

fn section_named<'a>(elf: &Elf<'a>, name: &str) -> Option<(SectionHeader, &'a [u8])> {
    elf.sections()
        .map(|(_, sh)| sh)
        .find(|sh| elf.section_name(sh) == name && sh.sh_type != SHT_NOBITS)
        .map(|sh| (sh, elf.section_data(&sh)))
}

/// The GNU build-id (`NT_GNU_BUILD_ID` in `.note.gnu.build-id`), if the file has one.
#[must_use]
pub fn build_id<'a>(elf: &Elf<'a>) -> Option<&'a [u8]> {
    let (_, mut notes) = section_named(elf, ".note.gnu.build-id")?;
    let little = elf.header().is_little_endian();
    let rd = |b: &[u8], at: usize| -> Option<u32> {
        let w: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
        Some(if little {
            u32::from_le_bytes(w)
        } else {
            u32::from_be_bytes(w)
        })
    };
    let align4 = |n: u32| (n as usize).checked_add(3).map(|n| n & !3);
    // Each note advances by at least its 12-byte header: bounded by the section size.
    while notes.len() >= 12 {
        let (namesz, descsz, ty) = (rd(notes, 0)?, rd(notes, 4)?, rd(notes, 8)?);
        let name_end = 12usize.checked_add(align4(namesz)?)?;
        let desc_end = name_end.checked_add(align4(descsz)?)?;
        let name = notes.get(12..12usize.checked_add(namesz as usize)?)?;
        if ty == 3 && name == b"GNU\0" {
            return notes.get(name_end..name_end.checked_add(descsz as usize)?);
        }
        notes = notes.get(desc_end..)?;
    }
    None
}

/// The `.gnu_debuglink` file name and CRC-32, if the file has one.
#[must_use]
pub fn debuglink<'a>(elf: &Elf<'a>) -> Option<(&'a str, u32)> {
    let (_, data) = section_named(elf, ".gnu_debuglink")?;
    let nul = data.iter().position(|&b| b == 0)?;
    let name = core::str::from_utf8(data.get(..nul)?).ok()?;
    let at = nul.checked_add(4)? & !3;
    let crc: [u8; 4] = data.get(at..at.checked_add(4)?)?.try_into().ok()?;
    let crc = if elf.header().is_little_endian() {
        u32::from_le_bytes(crc)
    } else {
        u32::from_be_bytes(crc)
    };
    (!name.is_empty()).then_some((name, crc))
}

/// The CRC-32 `.gnu_debuglink` records for a debug file's bytes (IEEE 802.3, as zlib's).
#[must_use]
pub fn debuglink_crc(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// Default global debug directory, as gdb and perf use it.
pub const DEBUG_DIR: &str = "/usr/lib/debug";

/// Paths where the separate debug file of `elf` (found at `path`) may be, most specific
/// first: `DEBUG_DIR/.build-id/xx/yyyy.debug` from the build-id, then for a
/// `.gnu_debuglink` name `N`: `DIR/N`, `DIR/.debug/N`, `DEBUG_DIR/DIR/N` (`DIR` = the
/// directory of `path`). Empty when the file names neither.
#[must_use]
pub fn debug_file_candidates(elf: &Elf<'_>, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(id) = build_id(elf) {
        if let Some((first, rest)) = id.split_first() {
            if !rest.is_empty() {
                let mut hex = String::new();
                for b in rest {
                    hex.push_str(&format!("{b:02x}"));
                }
                out.push(format!("{DEBUG_DIR}/.build-id/{first:02x}/{hex}.debug"));
            }
        }
    }
    if let Some((name, _)) = debuglink(elf) {
        let dir = path
            .rsplit_once('/')
            .map_or(".", |(d, _)| if d.is_empty() { "/" } else { d });
        let dir = dir.trim_end_matches('/');
        out.push(format!("{dir}/{name}"));
        out.push(format!("{dir}/.debug/{name}"));
        let abs = dir.trim_start_matches('/');
        if abs.is_empty() {
            out.push(format!("{DEBUG_DIR}/{name}"));
        } else {
            out.push(format!("{DEBUG_DIR}/{abs}/{name}"));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_zlib() {
        assert_eq!(debuglink_crc(b""), 0);
        assert_eq!(debuglink_crc(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn zdebug_header() {
        assert!(inflate_zdebug(".zdebug_info", b"ZLIB").is_err());
        assert!(inflate_zdebug(".zdebug_info", b"nope").is_err());
        let packed = miniz_oxide::deflate::compress_to_vec_zlib(b"hello dwarf", 6);
        let mut z = alloc::vec::Vec::from(&b"ZLIB"[..]);
        z.extend_from_slice(&11u64.to_be_bytes());
        z.extend_from_slice(&packed);
        assert_eq!(inflate_zdebug(".zdebug_info", &z).unwrap(), b"hello dwarf");
        // A stated size that lies is an error, not a truncation.
        let mut lie = z.clone();
        lie.get_mut(4..12)
            .unwrap()
            .copy_from_slice(&5u64.to_be_bytes());
        assert!(inflate_zdebug(".zdebug_info", &lie).is_err());
    }
}
