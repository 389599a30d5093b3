//! Which compilation units may hold a DIE of a given name, without parsing any unit.
//!
//! `perf probe` finds a function by walking every unit of the file (`.debug_pubnames`, its
//! only shortcut, lists neither static functions nor inlined instances, and vmlinux has
//! none): one probe per out-of-line copy and per inlined instance, in any unit. The symbol
//! table and `.debug_aranges` would find the out-of-line copies, but not the instances
//! inlined into other units, nor same-named static functions whose every call was inlined.
//! To keep perf's answer without parsing every unit, the resolver greps instead:
//!
//! ```text
//! "NAME\0" in .debug_str / .debug_line_str ──► the offsets a DW_FORM_strp / line_strp
//!                                              naming NAME can hold (every occurrence: the
//!                                              linker merges a string into the tail of a
//!                                              longer one)
//! those offsets as 4-byte words, and "NAME\0" ──grep .debug_info──► hit offsets
//! hit offsets ──unit headers (walked in the same pass)──► the candidate units, in order
//! ```
//!
//! A unit none of whose bytes hold such a word or string has no DIE named `NAME`, so no DIE
//! whose name (own or through `DW_AT_abstract_origin`/`DW_AT_specification` within the
//! unit) is `NAME`: parsing only the candidate units finds the same sites as parsing all.
//! That holds when names are `DW_FORM_string`/`strp`/`line_strp` and origins are unit-local
//! references, which [`indexable`] checks over the abbreviation tables once; otherwise
//! (names through `DW_FORM_strx*` as clang writes them, cross-unit `DW_FORM_ref_addr`
//! origins of LTO or dwz) every unit is a candidate, as before. A hit that is some other
//! value with the same bytes only costs parsing one more unit.
//!
//! The grep reads `.debug_info` once front to back in windows, and hands each window to the
//! caller's release hook when done (the runtime drops those pages of its read-only
//! mapping), so the resident set does not grow with the file.

use alloc::vec::Vec;

use memchr::memmem;

/// Bytes of `.debug_info` grepped before the window is released.
pub(super) const WINDOW: usize = 1 << 20;
/// Most words searched one by one (`memmem`); more go through the bitmap pass.
const FEW_WORDS: usize = 4;
/// Bits of a word indexing the bitmap of the many-words pass.
const BITMAP_BITS: u32 = 20;

/// What to grep `.debug_info` for to find references to one name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Needles {
    /// Offsets of `NAME\0` in `.debug_str` and `.debug_line_str`, sorted, deduplicated.
    words: Vec<u32>,
    /// `NAME\0`, as `DW_FORM_string` stores it.
    literal: Vec<u8>,
    little: bool,
}

impl Needles {
    /// The needles for `name`; `None` when an occurrence lies past 4 GiB (a word cannot
    /// hold it: the caller treats every unit as a candidate).
    pub(super) fn new(name: &[u8], strs: [&[u8]; 2], little: bool) -> Option<Self> {
        let mut literal = Vec::with_capacity(name.len().saturating_add(1));
        literal.extend_from_slice(name);
        literal.push(0);
        let finder = memmem::Finder::new(&literal);
        let mut words = Vec::new();
        for s in strs {
            for at in finder.find_iter(s) {
                words.push(u32::try_from(at).ok()?);
            }
        }
        words.sort_unstable();
        words.dedup();
        Some(Needles {
            words,
            literal,
            little,
        })
    }

    fn word_bytes(&self, w: u32) -> [u8; 4] {
        if self.little {
            w.to_le_bytes()
        } else {
            w.to_be_bytes()
        }
    }

    /// Longest needle, for the overlap between windows.
    fn longest(&self) -> usize {
        self.literal.len().max(4)
    }

    /// Offsets (in `hay`'s coordinates, below `end`) where a needle starts.
    pub(super) fn grep(&self, hay: &[u8], end: usize, hits: &mut Vec<usize>) {
        for at in memmem::find_iter(hay, &self.literal) {
            if at < end {
                hits.push(at);
            }
        }
        if self.words.len() <= FEW_WORDS {
            for &w in &self.words {
                let bytes = self.word_bytes(w);
                for at in memmem::find_iter(hay, &bytes) {
                    if at < end {
                        hits.push(at);
                    }
                }
            }
            return;
        }
        // Many words (a short name merged into the tails of many strings): one pass,
        // each position's word tested against a bitmap of the words' low bits first.
        let mask = (1u32 << BITMAP_BITS) - 1;
        let mut bitmap = alloc::vec![0u64; 1 << (BITMAP_BITS - 6)];
        let max = self.words.last().copied().unwrap_or(0);
        for &w in &self.words {
            let b = (w & mask) as usize;
            if let Some(slot) = bitmap.get_mut(b >> 6) {
                *slot |= 1 << (b & 63);
            }
        }
        for (at, win) in hay.windows(4).enumerate() {
            if at >= end {
                break;
            }
            let &[a, b, c, d] = win else { continue };
            let w = if self.little {
                u32::from_le_bytes([a, b, c, d])
            } else {
                u32::from_be_bytes([a, b, c, d])
            };
            if w > max {
                continue;
            }
            let bit = (w & mask) as usize;
            let set = bitmap
                .get(bit >> 6)
                .is_some_and(|slot| slot & (1 << (bit & 63)) != 0);
            if set && self.words.binary_search(&w).is_ok() {
                hits.push(at);
            }
        }
    }

    /// The window overlap this set of needles needs.
    pub(super) fn overlap(&self) -> usize {
        self.longest().saturating_sub(1)
    }
}

/// `DW_AT_name`.
const AT_NAME: u64 = 0x03;
/// `DW_FORM_implicit_const`: its value follows in the abbreviation.
const FORM_IMPLICIT_CONST: u64 = 0x21;

/// Whether the grep finds every unit naming a DIE: every abbreviation in `.debug_abbrev`
/// gives `DW_AT_name` a string form the grep reads (`DW_FORM_string` 0x08, `strp` 0x0e,
/// `line_strp` 0x1f) and `DW_AT_abstract_origin` (0x31) / `DW_AT_specification` (0x47) /
/// `DW_AT_import` (0x18) a unit-local reference form (`ref1`..`ref8`, `ref_udata`:
/// 0x11..=0x15). An abbreviation section that does not parse is not indexable (the
/// exhaustive walk then reports what is wrong where it matters). One tight pass: 5 MB of
/// vmlinux abbreviations in a few milliseconds; every step consumes a byte, so it ends.
pub(super) fn indexable(d: &[u8]) -> bool {
    let mut i = 0usize;
    while i < d.len() {
        // One declaration, or the 0 that ends a table.
        let Some(code) = uleb(d, &mut i) else {
            return false;
        };
        if code == 0 {
            continue;
        }
        // The tag, then DW_CHILDREN_yes/no.
        if uleb(d, &mut i).is_none() {
            return false;
        }
        i = i.saturating_add(1);
        loop {
            let (Some(attr), Some(form)) = (uleb(d, &mut i), uleb(d, &mut i)) else {
                return false;
            };
            match attr {
                0 if form == 0 => break,
                AT_NAME if !matches!(form, 0x08 | 0x0e | 0x1f) => return false,
                0x31 | 0x47 | 0x18 if !matches!(form, 0x11..=0x15) => return false,
                _ => {}
            }
            if form == FORM_IMPLICIT_CONST {
                // Skip the SLEB128 value.
                loop {
                    let Some(&b) = d.get(i) else {
                        return false;
                    };
                    i = i.saturating_add(1);
                    if b < 0x80 {
                        break;
                    }
                }
            }
        }
    }
    true
}

/// An unsigned LEB128 at `*i`, advancing past it; `None` when truncated or over 64 bits.
#[inline(always)]
fn uleb(d: &[u8], i: &mut usize) -> Option<u64> {
    let b = *d.get(*i)?;
    *i = i.saturating_add(1);
    if b < 0x80 {
        return Some(u64::from(b));
    }
    let mut v = u64::from(b & 0x7f);
    let mut shift = 7u32;
    loop {
        let b = *d.get(*i)?;
        *i = i.saturating_add(1);
        if shift >= 64 {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some(v);
        }
        shift += 7;
    }
}

/// The index of the unit holding `offset`: the last unit starting at or before it.
pub(super) fn unit_at(starts: &[usize], offset: usize) -> Option<usize> {
    starts.partition_point(|&s| s <= offset).checked_sub(1)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn needles_take_every_tail() {
        // "init" alone and as the tail of "module_init": two offsets a strp may hold.
        let strs = b"x\0module_init\0init\0initial\0";
        let n = Needles::new(b"init", [strs, b"\0init\0"], true).unwrap();
        assert_eq!(n.words, [1, 9, 14]);
        assert_eq!(n.literal, b"init\0");
    }

    #[test]
    fn grep_finds_words_and_literals() {
        let strs: Vec<u8> = (0..40u8)
            .flat_map(|i| {
                let mut s = alloc::format!("f{i}_run").into_bytes();
                s.push(0);
                s
            })
            .collect();
        for (name, many) in [(&b"f7_run"[..], false), (&b"run"[..], true)] {
            let n = Needles::new(name, [&strs, b""], true).unwrap();
            assert_eq!(n.words.len() > FEW_WORDS, many);
            let w = n.words[0];
            let mut hay = alloc::vec![0xeeu8; 64];
            hay[10..14].copy_from_slice(&w.to_le_bytes());
            hay[40..40 + n.literal.len()].copy_from_slice(&n.literal);
            let mut hits = Vec::new();
            n.grep(&hay, hay.len(), &mut hits);
            hits.sort_unstable();
            assert_eq!(hits, [10, 40], "{name:?}");
            // Hits past `end` belong to the next window.
            let mut hits = Vec::new();
            n.grep(&hay, 20, &mut hits);
            assert_eq!(hits, [10]);
            // Big-endian files store the word the other way round.
            let be = Needles::new(name, [&strs, b""], false).unwrap();
            let mut hay = alloc::vec![0xeeu8; 16];
            hay[3..7].copy_from_slice(&w.to_be_bytes());
            let mut hits = Vec::new();
            be.grep(&hay, hay.len(), &mut hits);
            assert_eq!(hits, [3]);
        }
    }

    #[test]
    fn abbreviations_decide() {
        // code 1, DW_TAG_subprogram, children; name strp; origin ref4; end; end of table.
        let ok = [1, 0x2e, 1, 0x03, 0x0e, 0x31, 0x13, 0, 0, 0];
        assert!(indexable(&ok));
        // implicit_const carries a value.
        let implicit = [1, 0x34, 0, 0x3b, 0x21, 0x7f, 0x03, 0x08, 0, 0, 0];
        assert!(indexable(&implicit));
        // DW_FORM_strx1 names, DW_FORM_ref_addr origins: not indexable.
        assert!(!indexable(&[1, 0x2e, 1, 0x03, 0x25, 0, 0, 0]));
        assert!(!indexable(&[1, 0x1d, 0, 0x31, 0x10, 0, 0, 0]));
        // Truncated.
        assert!(!indexable(&[1, 0x2e, 1, 0x03]));
        assert!(indexable(&[]));
    }

    #[test]
    fn units_by_offset() {
        let starts = [0, 100, 250];
        assert_eq!(unit_at(&starts, 0), Some(0));
        assert_eq!(unit_at(&starts, 99), Some(0));
        assert_eq!(unit_at(&starts, 100), Some(1));
        assert_eq!(unit_at(&starts, 10_000), Some(2));
        assert_eq!(unit_at(&[5], 1), None);
    }
}
