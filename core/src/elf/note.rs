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
    /// The GNU build id (the `desc` of the first `NT_GNU_BUILD_ID` note named `GNU`), if
    /// the file has one. Notes that do not fit their section end the scan of it.
    #[must_use]
    pub fn build_id(&self) -> Option<&'a [u8]> {
        let endian = self.endian();
        let u32_at = |b: &[u8], at: usize| -> Option<u32> {
            let w: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
            Some(if endian == scroll::Endian::Little {
                u32::from_le_bytes(w)
            } else {
                u32::from_be_bytes(w)
            })
        };
        let align4 = |n: usize| n.checked_add(3).map(|n| n & !3);
        for (_, sh) in self.sections() {
            if sh.sh_type != SHT_NOTE {
                continue;
            }
            let data = self.section_data(&sh);
            let mut at = 0usize;
            for _ in 0..NOTES_PER_SECTION {
                let (Some(namesz), Some(descsz), Some(kind)) =
                    (u32_at(data, at), u32_at(data, at + 4), u32_at(data, at + 8))
                else {
                    break;
                };
                let name_at = at + 12;
                let Some(desc_at) = align4(name_at.saturating_add(namesz as usize)) else {
                    break;
                };
                let Some(next) = align4(desc_at.saturating_add(descsz as usize)) else {
                    break;
                };
                let name = data.get(name_at..name_at.saturating_add(namesz as usize));
                let desc = data.get(desc_at..desc_at.saturating_add(descsz as usize));
                if kind == NT_GNU_BUILD_ID && name == Some(b"GNU\0".as_slice()) {
                    if let Some(d) = desc {
                        return Some(d);
                    }
                }
                if next <= at || next >= data.len() {
                    break;
                }
                at = next;
            }
        }
        None
    }
}
