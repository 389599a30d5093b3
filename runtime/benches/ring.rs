//! Drain throughput of the perf ring reader over synthetic rings in memory (no kernel):
//! [`PerfRing::anonymous`] plays the kernel's writer, outside the timing, and the timed part
//! is `drain` handing every record, parsed, to a callback that touches its RAW bytes.
//!
//! Records are shaped like the `ringbuf` peer's (a tracepoint program's 32-byte output as
//! RAW, plus TID|TIME|CPU|PERIOD): 80 bytes each. `drain_wrapping` uses a one-page ring and
//! 48-byte records, so about one record in 85 straddles the end and is copied.
//! The peers in `shared/peers/ringbuf/` (libbpf perf_buffer / ring_buffer, `perf record`)
//! measure the whole kernel-to-consumer path; compare their per-event consumer CPU with
//! these figures as ratios, not as equal measures.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use divan::counter::ItemsCount;
use divan::Bencher;
use sluice_core::perf::record::{Record, SampleFormat, SampleType, RECORD_SAMPLE};
use sluice_runtime::ring::PerfRing;

fn main() {
    divan::main();
}

fn format() -> SampleFormat {
    SampleFormat::new(
        SampleType::TID | SampleType::TIME | SampleType::CPU | SampleType::PERIOD | SampleType::RAW,
    )
}

fn record(i: u64, raw_len: usize) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&1u32.to_ne_bytes());
    body.extend_from_slice(&(i as u32).to_ne_bytes());
    body.extend_from_slice(&i.to_ne_bytes());
    body.extend_from_slice(&[0u8; 8]);
    body.extend_from_slice(&1u64.to_ne_bytes());
    // RAW: u32 size + data, padded so the record stays 8-aligned.
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

/// A ring of `pages` data pages filled with records until full; returns it and the count.
fn filled(pages: usize, raw_len: usize, skew: usize) -> (PerfRing, usize) {
    let mut ring = PerfRing::anonymous(pages, format()).unwrap();
    // Advance the positions by `skew` bytes first so records straddle the end.
    if skew > 0 {
        let pad = record(0, skew.saturating_sub(48).max(4));
        assert!(ring.produce(&pad));
        ring.drain(|_| {}).unwrap();
    }
    let mut n = 0;
    while ring.produce(&record(n as u64, raw_len)) {
        n += 1;
    }
    (ring, n)
}

fn drain_all(ring: &mut PerfRing) -> u64 {
    let mut sum = 0u64;
    ring.drain(|r| {
        if let Record::Sample(s) = r {
            sum = sum.wrapping_add(u64::from(s.fields.tid.unwrap_or(0)));
            sum = sum.wrapping_add(u64::from(*s.raw.and_then(|r| r.last()).unwrap_or(&0)));
        }
    })
    .unwrap();
    sum
}

/// 64 data pages (256 KiB) of 80-byte records.
#[divan::bench(sample_count = 200, sample_size = 1)]
fn drain_64_pages(bencher: Bencher<'_, '_>) {
    let n = filled(64, 32, 0).1;
    bencher
        .counter(ItemsCount::new(n))
        .with_inputs(|| filled(64, 32, 0).0)
        .bench_local_values(|mut ring| {
            divan::black_box(drain_all(&mut ring));
            ring
        });
}

/// One data page of 48-byte records starting mid-page: the wrap path.
#[divan::bench(sample_count = 200, sample_size = 8)]
fn drain_wrapping(bencher: Bencher<'_, '_>) {
    let n = filled(1, 4, 1000).1;
    bencher
        .counter(ItemsCount::new(n))
        .with_inputs(|| filled(1, 4, 1000).0)
        .bench_local_values(|mut ring| {
            divan::black_box(drain_all(&mut ring));
            ring
        });
}
