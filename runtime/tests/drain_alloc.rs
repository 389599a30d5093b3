//! The drain path allocates nothing per record in steady state: a counting global
//! allocator watches [`RingSet`]'s merge (the walk `Session::drain` makes) over two perf
//! rings (samples, a LOST record, records that wrap the data area) and a BPF ring buffer,
//! drained again and again once warm.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sluice_core::perf::record::{SampleFormat, SampleType, RECORD_LOST, RECORD_SAMPLE};
use sluice_runtime::ring::{Merged, PerfRing, RingBuf, RingSet};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// TID|TIME|CPU|RAW sample of `raw_len` payload bytes.
fn sample(tid: u32, time: u64, raw_len: usize) -> Vec<u8> {
    let raw_size = raw_len + 4;
    let size = 8 + 8 + 8 + 8 + raw_size.div_ceil(8) * 8;
    let mut v = Vec::with_capacity(size);
    v.extend_from_slice(&RECORD_SAMPLE.to_ne_bytes());
    v.extend_from_slice(&0u16.to_ne_bytes());
    v.extend_from_slice(&(size as u16).to_ne_bytes());
    v.extend_from_slice(&tid.to_ne_bytes());
    v.extend_from_slice(&tid.to_ne_bytes());
    v.extend_from_slice(&time.to_ne_bytes());
    v.extend_from_slice(&1u32.to_ne_bytes());
    v.extend_from_slice(&0u32.to_ne_bytes());
    v.extend_from_slice(&(raw_size as u32).to_ne_bytes());
    v.extend((0..raw_len).map(|i| i as u8));
    v.resize(size, 0);
    v
}

fn lost(n: u64) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&RECORD_LOST.to_ne_bytes());
    v.extend_from_slice(&0u16.to_ne_bytes());
    v.extend_from_slice(&24u16.to_ne_bytes());
    v.extend_from_slice(&[0; 8]);
    v.extend_from_slice(&n.to_ne_bytes());
    v
}

#[test]
fn merge_allocates_nothing_per_record_once_warm() {
    let f =
        SampleFormat::new(SampleType::TID | SampleType::TIME | SampleType::CPU | SampleType::RAW);
    let mut set = RingSet::new(Duration::from_secs(3600));
    let a = set.push_unpolled(PerfRing::anonymous(1, f).unwrap());
    let b = set.push_unpolled(PerfRing::anonymous(1, f).unwrap());
    let page = rustix::param::page_size() as u64;
    let rb = set
        .push_ringbuf(None, RingBuf::anonymous(page).unwrap())
        .unwrap();
    // Records prepared up front: the test's own allocations stay out of the count.
    let small: Vec<Vec<u8>> = (0..8u64).map(|t| sample(7, t, 32)).collect();
    let big = sample(8, 0, 1000);
    let lost5 = lost(5);
    let payload = [0xabu8; 40];
    let mut time = 0u64;
    let mut counted = 0u64;
    let mut allocs_after_warmup = 0u64;
    let mut records_after_warmup = 0u64;
    let mut wrapped = 0u64;
    for round in 0..400 {
        for (i, s) in small.iter().enumerate() {
            let mut s = s.clone();
            time += 1;
            s[16..24].copy_from_slice(&time.to_ne_bytes());
            let ring = if i % 2 == 0 { a } else { b };
            assert!(set.ring_mut(ring).unwrap().produce(&s));
        }
        let mut big = big.clone();
        time += 1;
        big[16..24].copy_from_slice(&time.to_ne_bytes());
        // 1 KiB records in a 4 KiB ring: they wrap every few rounds.
        assert!(set.ring_mut(a).unwrap().produce(&big));
        if round % 10 == 0 {
            assert!(set.ring_mut(b).unwrap().produce(&lost5));
        }
        set.ringbuf_mut(rb)
            .unwrap()
            .produce(&payload, false, false)
            .unwrap();
        let before = ALLOCS.load(Ordering::Relaxed);
        let mut m = set.take_merge();
        set.merge_begin(&mut m);
        let mut n = 0u64;
        let mut last = 0u64;
        while let Some(rec) = set.merge_next(&mut m) {
            match rec {
                Merged::Sample { fields, raw, ring } => {
                    if ring == rb {
                        assert_eq!(raw, &payload[..]);
                    } else {
                        let t = fields.time.unwrap();
                        assert!(t > last, "time order: {t} after {last}");
                        last = t;
                        // RAW's `size` counts the payload and the 4 bytes of padding to 8.
                        assert!(raw.len() == 36 || raw.len() == 1004, "{}", raw.len());
                        let payload = &raw[..raw.len() - 4];
                        assert!(payload.iter().enumerate().all(|(i, &x)| x == i as u8));
                    }
                }
                Merged::Lost { lost, .. } => assert_eq!(lost, 5),
                Merged::Skipped => panic!("nothing to skip"),
            }
            n += 1;
        }
        set.merge_end(m);
        let allocs = ALLOCS.load(Ordering::Relaxed) - before;
        let expect = 8 + 1 + 1 + u64::from(round % 10 == 0);
        assert_eq!(n, expect, "round {round}");
        counted += n;
        if round >= 50 {
            allocs_after_warmup += allocs;
            records_after_warmup += n;
        }
        wrapped = set.stats().wrapped;
    }
    assert!(wrapped > 10, "records wrapped: {wrapped}");
    assert_eq!(set.stats().lost, 40 * 5);
    assert!(set.take_errors().is_empty());
    assert_eq!(
        allocs_after_warmup, 0,
        "{allocs_after_warmup} allocations for {records_after_warmup} records once warm"
    );
    assert_eq!(set.stats().records + set.ringbuf_stats().records, counted);
}
