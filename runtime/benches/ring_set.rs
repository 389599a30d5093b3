//! A [`RingSet`]'s drain of anonymous rings, no kernel: the cost per record of the merge
//! across rings (`merge`: what `Session::drain` walks, records in place) and of the owned
//! batch (`batch`: `RingSet::drain_batch`, each sample copied out), for 1 and 8 rings
//! and for 32-byte and 4 KiB records — the "flat cost" figures of issue 17.
//!
//! ```text
//! cargo bench -p sluice-runtime --bench ring_set
//! RING_SET_ONE=RINGS,BYTES[,raw] valgrind --tool=callgrind BENCH_BINARY
//! ```
//! With `RING_SET_ONE`, one case of `merge` runs 20 times outside divan and prints its
//! record count: instructions per record are then the inclusive cost of
//! `RingSet::merge_next` over that count (repeatable, unlike times on a shared machine).
//! `raw`: samples of `PERF_SAMPLE_RAW` only (`OutputLayout::Raw`).
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::time::Duration;

use divan::counter::ItemsCount;
use divan::Bencher;
use sluice_core::perf::record::{SampleFormat, SampleType, RECORD_SAMPLE};
use sluice_runtime::ring::{PerfRing, RingSet};

fn main() {
    let Ok(one) = std::env::var("RING_SET_ONE") else {
        return divan::main();
    };
    let mut it = one.split(',');
    let rings: usize = it.next().unwrap().parse().unwrap();
    let raw_len: usize = it.next().unwrap().parse().unwrap();
    let raw = it.next() == Some("raw");
    let mut records = 0;
    for _ in 0..20 {
        let (set, n) = filled(rings, raw_len, raw);
        records += n;
        divan::black_box(walk(set));
    }
    println!("records {records}");
}

fn format(raw: bool) -> SampleFormat {
    SampleFormat::new(if raw {
        SampleType::RAW
    } else {
        SampleType::TID | SampleType::TIME | SampleType::CPU | SampleType::RAW
    })
}

fn record(time: u64, raw_len: usize, raw: bool) -> Vec<u8> {
    let mut body = Vec::new();
    if !raw {
        body.extend_from_slice(&1u32.to_ne_bytes());
        body.extend_from_slice(&1u32.to_ne_bytes());
        body.extend_from_slice(&time.to_ne_bytes());
        body.extend_from_slice(&[0u8; 8]);
    }
    let padded = (4 + raw_len).next_multiple_of(8);
    body.extend_from_slice(&((padded - 4) as u32).to_ne_bytes());
    body.extend((0..padded - 4).map(|b| b as u8));
    let mut v = Vec::with_capacity(8 + body.len());
    v.extend_from_slice(&RECORD_SAMPLE.to_ne_bytes());
    v.extend_from_slice(&0u16.to_ne_bytes());
    v.extend_from_slice(&((8 + body.len()) as u16).to_ne_bytes());
    v.extend(body);
    v
}

/// `rings` rings of 64 pages (256 KiB), filled round-robin by time with records of
/// `raw_len` bytes until the first is full. Returns the set and the record count.
fn filled(rings: usize, raw_len: usize, raw: bool) -> (RingSet, usize) {
    let mut set = RingSet::new(Duration::from_secs(3600));
    let ids: Vec<usize> = (0..rings)
        .map(|_| set.push_unpolled(PerfRing::anonymous(64, format(raw)).unwrap()))
        .collect();
    let mut n = 0;
    'fill: for t in 0.. {
        let rec = record(t, raw_len, raw);
        if !set.ring_mut(ids[t as usize % rings]).unwrap().produce(&rec) {
            break 'fill;
        }
        n += 1;
    }
    (set, n)
}

const CASES: &[(usize, usize)] = &[(1, 32), (8, 32), (1, 4096), (8, 4096)];

#[divan::bench(args = CASES, sample_count = 60, sample_size = 1)]
fn batch(bencher: Bencher<'_, '_>, &(rings, raw_len): &(usize, usize)) {
    let n = filled(rings, raw_len, false).1;
    bencher
        .counter(ItemsCount::new(n))
        .with_inputs(|| filled(rings, raw_len, false).0)
        .bench_local_values(|mut set| {
            // Warm: the batch and the RAW pool as a drain loop keeps them.
            let mut sum = 0u64;
            let mut batch = set.drain_batch();
            for (_, ev) in batch.drain(..) {
                if let sluice_runtime::ring::RingEvent::Sample(s) = ev {
                    sum = sum.wrapping_add(s.fields.time.unwrap_or(0));
                    sum = sum.wrapping_add(u64::from(s.raw.last().copied().unwrap_or(0)));
                    set.recycle(s.raw);
                }
            }
            set.return_batch(batch);
            divan::black_box(sum);
            set
        });
}

/// The merge's walk of every record (what `Session::drain` does), each record's time and
/// last byte read.
fn walk(mut set: RingSet) -> (RingSet, u64) {
    use sluice_runtime::ring::Merged;
    let mut sum = 0u64;
    let mut m = set.take_merge();
    set.merge_begin(&mut m);
    while let Some(rec) = set.merge_next(&mut m) {
        if let Merged::Sample { fields, raw, .. } = rec {
            sum = sum.wrapping_add(fields.time.unwrap_or(0));
            sum = sum.wrapping_add(u64::from(raw.last().copied().unwrap_or(0)));
        }
    }
    set.merge_end(m);
    (set, sum)
}

#[divan::bench(args = CASES, sample_count = 60, sample_size = 1)]
fn merge(bencher: Bencher<'_, '_>, &(rings, raw_len): &(usize, usize)) {
    let n = filled(rings, raw_len, false).1;
    bencher
        .counter(ItemsCount::new(n))
        .with_inputs(|| filled(rings, raw_len, false).0)
        .bench_local_values(walk);
}

/// The same walk over rings of the raw layout (`PERF_SAMPLE_RAW` only): drained ring by
/// ring, no time to merge by.
#[divan::bench(args = CASES, sample_count = 60, sample_size = 1)]
fn merge_raw(bencher: Bencher<'_, '_>, &(rings, raw_len): &(usize, usize)) {
    let n = filled(rings, raw_len, true).1;
    bencher
        .counter(ItemsCount::new(n))
        .with_inputs(|| filled(rings, raw_len, true).0)
        .bench_local_values(walk);
}
