//! A deterministic corruption sweep of the record decoder (`sluice_core::btf::walk`,
//! `record_candidates`): the `.BTF` of every fixture that has one, with each 4-byte word
//! of its type section (a stride of them on the big ones) replaced by hostile values, then
//! every type of what still parses walked over hostile records of many lengths. Nothing may
//! panic or hang; every string and byte run the walk reports lies inside the record; the
//! walk visits at most `MAX_VALUES` values; and a record shorter than a struct whose every
//! member fits is `ValueError::Truncated` (what the CLI shows raw and counts). The fuzz
//! target `btf_value` explores the same surface at random; this runs in the normal suite.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod btf_common;

use btf_common::*;
use sluice_core::btf::{
    record_candidates, walk, Btf, Int, RecordFit, ValueError, Visitor, MAX_VALUES,
};

/// Checks every value a walk reports against the record it walks.
struct Check<'r> {
    record: &'r [u8],
    values: u32,
}

impl Check<'_> {
    fn inside(&self, b: &[u8]) {
        let start = self.record.as_ptr() as usize;
        let p = b.as_ptr() as usize;
        assert!(
            b.is_empty() || (p >= start && p + b.len() <= start + self.record.len()),
            "a slice outside the record"
        );
    }
    fn one(&mut self) {
        self.values += 1;
        assert!(self.values <= MAX_VALUES + 1, "more than MAX_VALUES values");
    }
}

impl Visitor for Check<'_> {
    fn int(&mut self, _: &str, _: Int, _: u8) {
        self.one();
    }
    fn bool(&mut self, _: &str, _: bool) {
        self.one();
    }
    fn enumerator(&mut self, _: &str, _: Option<&str>, _: Int) {
        self.one();
    }
    fn string(&mut self, _: &str, text: &[u8]) {
        self.inside(text);
        self.one();
    }
    fn pointer(&mut self, _: &str, _: u64) {
        self.one();
    }
    fn bytes(&mut self, _: &str, bytes: &[u8]) {
        self.inside(bytes);
        self.one();
    }
    fn begin_struct(&mut self, _: &str, _: bool) {
        self.one();
    }
    fn end_struct(&mut self) {}
    fn begin_array(&mut self, _: &str, _: u32) {
        self.one();
    }
    fn end_array(&mut self) {}
}

/// The words a corruption puts in place of one: zero, all ones, a huge count, a type id
/// just past a small table, a kind byte with `vlen` and `kind_flag` set, the word plus one.
fn hostile(word: u32) -> [u32; 6] {
    [
        0,
        u32::MAX,
        0x7fff_ffff,
        3,
        0x8d00_ffff,
        word.wrapping_add(1),
    ]
}

/// Records of hostile contents at the lengths a struct of this BTF could be walked over.
fn records() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for len in [0usize, 1, 3, 4, 7, 8, 15, 16, 31, 64, 100, 257] {
        v.push(vec![0xff; len]);
        v.push((0..len).map(|i| (i * 37 + 11) as u8).collect());
        // No NUL anywhere: a char array must stop at the record's end.
        v.push(vec![b'A'; len]);
    }
    v
}

/// Walks every type id of `btf` (and a few past its end) over every record and every
/// prefix of it a struct could be cut at; returns how many walks ran.
fn walk_all(btf: &Btf<'_>, count: u32, records: &[Vec<u8>]) -> usize {
    let mut walks = 0;
    let mut out = [0u32; 4];
    for r in records {
        for fit in [RecordFit::Exact, RecordFit::Padded] {
            let k = record_candidates(btf, r.len(), fit, &mut out);
            for &id in out.iter().take(k.min(out.len())) {
                assert!(btf.ty(id).is_some(), "candidate {id} is no type");
            }
        }
    }
    for id in 0..count.saturating_add(3).min(160) {
        for r in records {
            let mut c = Check {
                record: r,
                values: 0,
            };
            let _ = walk(btf, id, r, &mut c);
            walks += 1;
        }
    }
    walks
}

/// Where the type section of a `.BTF` starts and ends (its header's `type_off`/`type_len`).
fn type_section(b: &[u8]) -> (usize, usize) {
    let u = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let hdr = u(4);
    (hdr + u(8), hdr + u(8) + u(12))
}

#[test]
fn corrupted_btf_of_every_fixture_walks_without_panic_or_reads_past_the_record() {
    let records = records();
    let (mut variants, mut parsed, mut walks) = (0usize, 0usize, 0usize);
    for name in fixtures() {
        let o = std::fs::read(&name).unwrap();
        let Some(sec) = section(&o, ".BTF") else {
            continue;
        };
        if sec.len() < 24 || u16::from_le_bytes([sec[0], sec[1]]) != 0xeb9f {
            continue; // a big-endian fixture: its words are not ours to patch as LE
        }
        let (start, end) = type_section(sec);
        let words = (end.min(sec.len()) - start) / 4;
        // Every word of a small section, a stride of at most 48 words over a big one.
        let stride = (words / 48).max(1);
        for w in (0..words).step_by(stride) {
            let at = start + 4 * w;
            let word = u32::from_le_bytes(sec[at..at + 4].try_into().unwrap());
            for bad in hostile(word) {
                let mut b = sec.to_vec();
                b[at..at + 4].copy_from_slice(&bad.to_le_bytes());
                variants += 1;
                let Ok(count) = Btf::count_types(&b) else {
                    continue;
                };
                let mut index = vec![0u32; count as usize];
                let Ok(btf) = Btf::parse(&b, &mut index) else {
                    continue;
                };
                parsed += 1;
                walks += walk_all(&btf, count, &records);
            }
        }
    }
    eprintln!("{variants} corrupted .BTF, {parsed} parsed, {walks} walks");
    // The sweep did sweep: most corruptions are caught by the parser, many are not.
    assert!(
        variants > 1_000 && parsed > 100 && walks > 10_000,
        "{variants} {parsed} {walks}"
    );
}

#[test]
fn every_struct_cut_short_is_truncated_and_nothing_past_it_is_read() {
    let mut cut = 0usize;
    for name in fixtures() {
        let o = std::fs::read(&name).unwrap();
        let Some(sec) = section(&o, ".BTF") else {
            continue;
        };
        let btf = parse(sec);
        for t in btf.types() {
            let Some(size) = t.size().filter(|&s| (1..=4096).contains(&s)) else {
                continue;
            };
            if !matches!(t.kind(), sluice_core::btf::Kind::Struct) {
                continue;
            }
            let full = vec![0x5au8; size as usize];
            if walk(
                &btf,
                t.id(),
                &full,
                &mut Check {
                    record: &full,
                    values: 0,
                },
            )
            .is_err()
            {
                continue; // too many values, or a member it cannot print: not this test's
            }
            // A struct with a member at its end: one byte short must be Truncated.
            for len in [0, size as usize / 2, size as usize - 1] {
                let short = &full[..len];
                let r = walk(
                    &btf,
                    t.id(),
                    short,
                    &mut Check {
                        record: short,
                        values: 0,
                    },
                );
                if len == 0 || ends_with_member(&btf, t.id(), size) {
                    assert!(
                        matches!(r, Err(ValueError::Truncated { .. })),
                        "{name:?} {} at {len} of {size}: {r:?}",
                        t.name()
                    );
                    cut += 1;
                }
            }
        }
    }
    eprintln!("{cut} short records");
    assert!(cut > 50, "{cut}");
}

/// Whether a member of struct `id` reaches its last byte (else a record one byte short
/// only loses padding and decodes whole).
fn ends_with_member(btf: &Btf<'_>, id: u32, size: u32) -> bool {
    let Some(t) = btf.ty(id) else {
        return false;
    };
    t.members().any(|m| {
        let Ok(msize) = btf.size_of(m.type_id) else {
            return false;
        };
        msize > 0 && m.bit_offset / 8 + msize >= size
    })
}
