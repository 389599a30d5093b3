//! ELF notes: the GNU build id (`NT_GNU_BUILD_ID` in a `SHT_NOTE` section), which perf
//! keys its symbol caches by.

use super::file::Elf;

/// `SHT_NOTE`.
pub const SHT_NOTE: u32 = 7;
/// `NT_GNU_BUILD_ID`.
pub const NT_GNU_BUILD_ID: u32 = 3;

/// Most notes looked at per section: a bound on a hostile section.
const NOTES_PER_SECTION: usize = 64;

impl<'a> Elf<'a> {
    /// The GNU build id (the `desc` of the first `NT_GNU_BUILD_ID` note named `GNU` of a
    /// `SHT_NOTE` section), if the file has one.
    #[must_use]
    pub fn build_id(&self) -> Option<&'a [u8]> {
        let little = self.endian() == scroll::Endian::Little;
        self.sections()
            .filter(|(_, sh)| sh.sh_type == SHT_NOTE)
            .find_map(|(_, sh)| build_id_in_notes(self.section_data(&sh), little))
    }
}

/// The GNU build id among raw ELF notes (`Elf_Nhdr`s, each name and desc padded to 4
/// bytes: a `SHT_NOTE` section, or the kernel's `/sys/kernel/notes`). A note that does not
/// fit ends the scan; at most [`NOTES_PER_SECTION`] are looked at.
#[must_use]
pub fn build_id_in_notes(data: &[u8], little: bool) -> Option<&[u8]> {
    let u32_at = |at: usize| -> Option<u32> {
        let w: [u8; 4] = data.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(if little {
            u32::from_le_bytes(w)
        } else {
            u32::from_be_bytes(w)
        })
    };
    let align4 = |n: usize| n.checked_add(3).map(|n| n & !3);
    let mut at = 0usize;
    for _ in 0..NOTES_PER_SECTION {
        let (namesz, descsz, kind) = (u32_at(at)?, u32_at(at + 4)?, u32_at(at + 8)?);
        let name_at = at.checked_add(12)?;
        let name_end = name_at.checked_add(namesz as usize)?;
        let desc_at = align4(name_end)?;
        let desc_end = desc_at.checked_add(descsz as usize)?;
        if kind == NT_GNU_BUILD_ID && data.get(name_at..name_end) == Some(b"GNU\0".as_slice()) {
            return data.get(desc_at..desc_end);
        }
        let next = align4(desc_end)?;
        if next <= at {
            return None;
        }
        at = next;
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> std::vec::Vec<u8> {
        let mut v = std::vec::Vec::new();
        v.extend_from_slice(&(name.len() as u32).to_le_bytes());
        v.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        v.extend_from_slice(&kind.to_le_bytes());
        v.extend_from_slice(name);
        v.resize(v.len().div_ceil(4) * 4, 0);
        v.extend_from_slice(desc);
        v.resize(v.len().div_ceil(4) * 4, 0);
        v
    }

    #[test]
    fn build_id_is_the_gnu_note_of_type_3() {
        let mut notes = note(b"Xen\0", 3, &[9; 4]);
        notes.extend(note(b"GNU\0", 1, &[8; 16]));
        notes.extend(note(b"GNU\0", 3, &[0xab; 20]));
        assert_eq!(build_id_in_notes(&notes, true), Some(&[0xab; 20][..]));
        for n in 0..notes.len() {
            let _ = build_id_in_notes(&notes[..n], true);
        }
        let mut huge = note(b"GNU\0", 3, &[1; 4]);
        huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(build_id_in_notes(&huge, true), None);
    }
}
