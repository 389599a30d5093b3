//! USDT probes (`usdt/PATH:PROVIDER:NAME`): the `.note.stapsdt` notes of a binary, the
//! sites of one probe, and their argument specs in the layout libbpf's `usdt.bpf.h` reads.
//!
//! A `sys/sdt.h` probe site is a `nop` plus one `NT_STAPSDT` note (type 3, name
//! `stapsdt`) whose desc holds three ELF words — the site's link-time address, the
//! link-time address of `.stapsdt.base`, the semaphore's address (0: none) — then the
//! provider, the probe name and the argument string, each NUL-terminated. A probe used in
//! several places (or inlined) has a note per site.
//!
//! Prelinked binaries moved their sections after the notes were written: as libbpf does,
//! a site's address is moved by `.stapsdt.base`'s real address minus the one the note
//! recorded. File offsets (where the uprobe and the semaphore's `ref_ctr_offset` go) come
//! from the allocated section holding each address ([`Elf::file_offset`]).
//!
//! Nothing here allocates or panics on hostile bytes: a note that does not fit is an
//! [`Error`] naming its offset in the section.

mod arg;

pub use arg::{parse_arg, Arg, ArgError, ArgLoc, Spec, SpecError, MAX_ARGS, SPEC_SIZE};

use crate::elf::{Class, Elf, SHT_NOTE};

/// The notes' section.
pub const NOTE_SECTION: &str = ".note.stapsdt";
/// The section whose address prelink adjustment is measured against.
pub const BASE_SECTION: &str = ".stapsdt.base";
/// `NT_STAPSDT`.
pub const NT_STAPSDT: u32 = 3;
/// Most notes read from one section: a bound on a hostile file.
pub const MAX_NOTES: usize = 1 << 16;

/// Why a binary's USDT notes cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Error {
    /// The file has no `.note.stapsdt` section (built without `sys/sdt.h` probes).
    NoNotes,
    /// A note of [`NOTE_SECTION`] is malformed: its byte offset in the section and what.
    BadNote {
        /// Offset of the note's header in the section.
        offset: usize,
        /// What is wrong.
        what: &'static str,
    },
    /// More than [`MAX_NOTES`] notes.
    TooManyNotes,
    /// A site's address (after the prelink adjustment) is in no loaded section.
    SiteNotMapped {
        /// The note's offset in the section.
        offset: usize,
        /// The address.
        address: u64,
    },
    /// A semaphore's address is in no loaded section.
    SemaphoreNotMapped {
        /// The note's offset in the section.
        offset: usize,
        /// The address.
        address: u64,
    },
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::NoNotes => write!(f, "no {NOTE_SECTION} section (no USDT probes)"),
            Error::BadNote { offset, what } => {
                write!(f, "{NOTE_SECTION}: note at offset {offset:#x}: {what}")
            }
            Error::TooManyNotes => write!(f, "{NOTE_SECTION}: more than {MAX_NOTES} notes"),
            Error::SiteNotMapped { offset, address } => write!(
                f,
                "{NOTE_SECTION}: note at offset {offset:#x}: site address {address:#x} is in \
                 no loaded section"
            ),
            Error::SemaphoreNotMapped { offset, address } => write!(
                f,
                "{NOTE_SECTION}: note at offset {offset:#x}: semaphore address {address:#x} \
                 is in no loaded section"
            ),
        }
    }
}

impl core::error::Error for Error {}

/// One `NT_STAPSDT` note, as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Note<'a> {
    /// Offset of the note's header in [`NOTE_SECTION`].
    pub offset: usize,
    /// The site's link-time address.
    pub pc: u64,
    /// `.stapsdt.base`'s address when the note was written.
    pub base: u64,
    /// The semaphore's address (0: none).
    pub semaphore: u64,
    /// The provider.
    pub provider: &'a str,
    /// The probe name.
    pub name: &'a str,
    /// The argument specs, space-separated (`-4@%edi 8@-8(%rbp)`).
    pub args: &'a str,
}

/// One site of a probe, placed in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Site<'a> {
    /// Its note.
    pub note: Note<'a>,
    /// The site's address after the prelink adjustment.
    pub address: u64,
    /// Where the uprobe goes: the site's file offset.
    pub file_offset: u64,
    /// The semaphore's file offset (the uprobe's `ref_ctr_offset`), if it has one.
    pub semaphore_offset: Option<u64>,
}

/// The notes of [`NOTE_SECTION`] of an ELF file, in order; stops after the first error.
#[derive(Clone, Debug)]
pub struct Notes<'a> {
    data: &'a [u8],
    at: usize,
    little: bool,
    word: usize,
    count: usize,
    done: bool,
}

impl<'a> Notes<'a> {
    /// The notes of `elf`.
    ///
    /// # Errors
    /// [`Error::NoNotes`] without a `SHT_NOTE` section named [`NOTE_SECTION`].
    pub fn of(elf: &Elf<'a>) -> Result<Notes<'a>, Error> {
        let sh = elf
            .sections()
            .map(|(_, sh)| sh)
            .find(|sh| sh.sh_type == SHT_NOTE && elf.section_name(sh) == NOTE_SECTION)
            .ok_or(Error::NoNotes)?;
        let word = if elf.header().class == Class::Elf64 {
            8
        } else {
            4
        };
        Ok(Notes::new(
            elf.section_data(&sh),
            elf.header().is_little_endian(),
            word,
        ))
    }

    /// The notes in the raw section bytes `data` (byte order `little`, addresses of
    /// `word` bytes: 4 or 8).
    #[must_use]
    pub fn new(data: &'a [u8], little: bool, word: usize) -> Notes<'a> {
        Notes {
            data,
            at: 0,
            little,
            word,
            count: 0,
            done: false,
        }
    }

    fn uint(&self, at: usize, len: usize) -> Option<u64> {
        let b = self.data.get(at..at.checked_add(len)?)?;
        let mut v = 0u64;
        for i in 0..len {
            let byte = if self.little {
                b.get(len - 1 - i)
            } else {
                b.get(i)
            };
            v = (v << 8) | u64::from(*byte?);
        }
        Some(v)
    }

    fn next_note(&mut self) -> Result<Option<Note<'a>>, Error> {
        let at = self.at;
        if at >= self.data.len() {
            return Ok(None);
        }
        let bad = |what| Error::BadNote { offset: at, what };
        let u32_at = |off: usize| {
            at.checked_add(off)
                .and_then(|o| self.uint(o, 4))
                .ok_or(bad("header truncated"))
        };
        let (namesz, descsz, kind) = (u32_at(0)? as usize, u32_at(4)? as usize, u32_at(8)?);
        let align4 = |n: usize| n.checked_add(3).map(|n| n & !3);
        let name_at = at.checked_add(12).ok_or(bad("header truncated"))?;
        let name_end = name_at.checked_add(namesz).ok_or(bad("name size"))?;
        let desc_at = align4(name_end).ok_or(bad("name size"))?;
        let desc_end = desc_at.checked_add(descsz).ok_or(bad("desc size"))?;
        let next = align4(desc_end).ok_or(bad("desc size"))?;
        let name = self
            .data
            .get(name_at..name_end)
            .ok_or(bad("name beyond the section"))?;
        let desc = self
            .data
            .get(desc_at..desc_end)
            .ok_or(bad("desc beyond the section"))?;
        self.at = next;
        if kind != u64::from(NT_STAPSDT) || name != b"stapsdt\0" {
            // Another owner's note: skipped, as libbpf does.
            return self.next_note();
        }
        let w = self.word;
        let words = w.checked_mul(3).ok_or(bad("desc truncated"))?;
        if desc.len() < words {
            return Err(bad("desc shorter than its three addresses"));
        }
        let word = |i: usize| {
            desc_at
                .checked_add(i * w)
                .and_then(|o| self.uint(o, w))
                .ok_or(bad("desc truncated"))
        };
        let (pc, base, semaphore) = (word(0)?, word(1)?, word(2)?);
        let mut strings = desc.get(words..).unwrap_or(&[]).split(|&b| b == 0);
        let mut text = |what| {
            let s = strings.next().ok_or(bad(what))?;
            core::str::from_utf8(s).map_err(|_| bad("a string that is not UTF-8"))
        };
        let provider = text("no provider")?;
        let probe = text("no probe name")?;
        let args = text("no argument string")?;
        if desc.last() != Some(&0) {
            return Err(bad("strings not NUL-terminated"));
        }
        if provider.is_empty() || probe.is_empty() {
            return Err(bad("an empty provider or probe name"));
        }
        Ok(Some(Note {
            offset: at,
            pc,
            base,
            semaphore,
            provider,
            name: probe,
            args,
        }))
    }
}

impl<'a> Iterator for Notes<'a> {
    type Item = Result<Note<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.count >= MAX_NOTES {
            self.done = true;
            return Some(Err(Error::TooManyNotes));
        }
        self.count += 1;
        match self.next_note() {
            Ok(Some(n)) => Some(Ok(n)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// The address of `.stapsdt.base` in `elf`, if it has one.
#[must_use]
pub fn base_address(elf: &Elf<'_>) -> Option<u64> {
    elf.sections()
        .map(|(_, sh)| sh)
        .find(|sh| elf.section_name(sh) == BASE_SECTION)
        .map(|sh| sh.addr)
}

/// `note` placed in `elf` (whose `.stapsdt.base` is at `base`): its address after the
/// prelink adjustment, its file offset and its semaphore's.
///
/// # Errors
/// [`Error::SiteNotMapped`], [`Error::SemaphoreNotMapped`].
pub fn place<'a>(elf: &Elf<'_>, base: Option<u64>, note: Note<'a>) -> Result<Site<'a>, Error> {
    let address = match base {
        Some(real) if note.base != 0 => note.pc.wrapping_add(real.wrapping_sub(note.base)),
        _ => note.pc,
    };
    let file_offset = elf.file_offset(address).ok_or(Error::SiteNotMapped {
        offset: note.offset,
        address,
    })?;
    let semaphore_offset = match note.semaphore {
        0 => None,
        s => Some(elf.file_offset(s).ok_or(Error::SemaphoreNotMapped {
            offset: note.offset,
            address: s,
        })?),
    };
    Ok(Site {
        note,
        address,
        file_offset,
        semaphore_offset,
    })
}

/// Every site of probe `provider:name` in `elf`, in note order (none: the probe is not
/// there).
///
/// # Errors
/// As [`Notes::of`] and [`place`], and any malformed note of the section.
pub fn sites<'e, 'a: 'e>(
    elf: &'e Elf<'a>,
    provider: &'e str,
    name: &'e str,
) -> Result<impl Iterator<Item = Result<Site<'a>, Error>> + 'e, Error> {
    let base = base_address(elf);
    Ok(Notes::of(elf)?.filter_map(move |n| match n {
        Ok(n) if n.provider == provider && n.name == name => Some(place(elf, base, n)),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use std::vec::Vec;

    pub(crate) fn note(pc: u64, base: u64, sem: u64, strings: &[u8]) -> Vec<u8> {
        let mut desc = Vec::new();
        for w in [pc, base, sem] {
            desc.extend_from_slice(&w.to_le_bytes());
        }
        desc.extend_from_slice(strings);
        let mut v = Vec::new();
        v.extend_from_slice(&8u32.to_le_bytes());
        v.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        v.extend_from_slice(&3u32.to_le_bytes());
        v.extend_from_slice(b"stapsdt\0");
        v.extend_from_slice(&desc);
        v.resize(v.len().div_ceil(4) * 4, 0);
        v
    }

    #[test]
    fn notes_read_and_hostile_bytes_never_panic() {
        let mut data = note(0x1139, 0x2004, 0, b"prov\0one\0-4@%edi 8@%rsi\0");
        let first = data.len();
        data.extend(note(0x1150, 0x2004, 0x4010, b"prov\0two\0\0"));
        let notes: Vec<_> = Notes::new(&data, true, 8).collect();
        assert_eq!(notes.len(), 2);
        let one = notes[0].unwrap();
        assert_eq!((one.pc, one.provider, one.name), (0x1139, "prov", "one"));
        assert_eq!(one.args, "-4@%edi 8@%rsi");
        let two = notes[1].unwrap();
        assert_eq!((two.semaphore, two.args, two.offset), (0x4010, "", first));
        for n in 0..data.len() {
            for r in Notes::new(&data[..n], true, 8) {
                let _ = r;
            }
            let mut bad = data.clone();
            bad[n] ^= 0xff;
            assert!(Notes::new(&bad, true, 8).count() <= bad.len() / 12 + 1);
        }
        let mut huge = data.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            Notes::new(&huge, true, 8).next(),
            Some(Err(Error::BadNote { offset: 0, .. }))
        ));
    }
}
