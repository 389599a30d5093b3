//! Kernel test of the BPF ring-buffer reader: `tests/bpf/ringbuf_records.o` submits a
//! known sequence of records (a 64-byte `struct event` per hit, discarding every fourth,
//! and a 3000-byte `struct big` every eighth hit, which wraps the 16 KiB ring's end), and
//! the session must hand out exactly those, with their contents, and count the discarded
//! ones. Oracles: the hit number each record carries, and the program's own counters in
//! its `stats` map (hits, submitted, discarded, big, failed reservations).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Mutex;

use sluice_runtime::load::UpdateMode;
use sluice_runtime::session::{Event, ObjectSource, Session, SessionOptions, SourceKind};

static SERIAL: Mutex<()> = Mutex::new(());

const EVENT_MAGIC: u32 = 0x51c0_ffee;
const BIG_SIZE: usize = 3000;

fn gettid() -> u32 {
    rustix::thread::gettid().as_raw_nonzero().get() as u32
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
}

#[test]
fn ring_buffer_records_arrive_exactly_with_their_contents() {
    if !common::kernel("ring_buffer_records_arrive_exactly_with_their_contents") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const HITS: u64 = 2_000;
    // Drained every 8 hits: 6 events (72 bytes each in the ring) and a big (3008) at most,
    // well under the 16 KiB ring, so no reservation may fail.
    const ROUND: u64 = 8;
    let obj = ObjectSource {
        name: "ringbuf_records.o".into(),
        bytes: common::fixture("ringbuf_records.o"),
    };
    let mut s = Session::start(&[obj], &SessionOptions::default()).expect("session");
    let rb = s
        .sources()
        .iter()
        .position(|x| matches!(&x.kind, SourceKind::RingBuf { map } if map == "events"))
        .unwrap_or_else(|| panic!("no ring-buffer source: {:?}", s.sources()));
    assert_eq!(s.sources()[rb].name, "ringbuf:events");
    let tid = gettid();
    let mut config = [0u8; 16];
    config[0..4].copy_from_slice(&tid.to_ne_bytes());
    config[8..16].copy_from_slice(&i64::from(linux_raw_sys::general::__NR_getppid).to_ne_bytes());
    s.objects()[0]
        .map("config")
        .unwrap()
        .update_bytes(&0u32.to_ne_bytes(), &config, UpdateMode::Any)
        .unwrap();

    let mut events: Vec<Vec<u8>> = Vec::new();
    let mut bigs: Vec<Vec<u8>> = Vec::new();
    let mut other = 0usize;
    let mut take = |s: &Session, e: &Event| match e {
        Event::Sample { source, sample } if *source == rb => {
            assert_eq!(
                sample.fields,
                Default::default(),
                "ring-buffer records carry no fields"
            );
            match sample.raw.len() {
                64 => events.push(sample.raw.clone()),
                BIG_SIZE => bigs.push(sample.raw.clone()),
                n => panic!("record of {n} bytes from {}", s.sources()[*source].name),
            }
        }
        _ => other += 1,
    };
    for _ in 0..HITS / ROUND {
        for _ in 0..ROUND {
            std::hint::black_box(rustix::process::getppid());
        }
        s.drain(&mut take);
    }
    s.disable();
    s.drain_to_end(&mut take);

    let stats = s.objects()[0].map("stats").unwrap();
    let stat = |k: u32| stats.get::<u32, u64>(&k).unwrap().unwrap();
    let (hits, submitted, discarded, big, failed) = (stat(0), stat(1), stat(2), stat(3), stat(4));
    let want_discarded = (0..HITS).filter(|q| q % 4 == 3).count() as u64;
    let want_big = (0..HITS).filter(|q| q % 8 == 5).count() as u64;
    let rs = s.ringbuf_stats();
    eprintln!(
        "ringbuf: {hits} hits, {} events ({submitted} submitted), {} bigs ({big}), \
         discarded {} ({discarded}), failed {failed}, wrapped {}, other {other}",
        events.len(),
        bigs.len(),
        rs.discarded,
        rs.wrapped
    );
    assert_eq!(hits, HITS);
    assert_eq!(failed, 0);
    assert_eq!(discarded, want_discarded);
    assert_eq!(big, want_big);
    assert_eq!(submitted, HITS - want_discarded);
    assert_eq!(events.len() as u64, submitted);
    assert_eq!(bigs.len() as u64, big);
    assert_eq!(rs.discarded, discarded);
    assert_eq!(rs.records, submitted + big);
    assert_eq!(rs.malformed, 0);
    assert!(
        rs.wrapped > 0,
        "3000-byte records must have wrapped the 16 KiB ring"
    );
    assert_eq!(s.summary().discarded, discarded);
    assert_eq!(s.summary().samples[rb], submitted + big);

    // Contents: in order, exactly the hits not discarded, each field as the program set it.
    let seqs: Vec<u64> = events.iter().map(|e| u64_at(e, 8)).collect();
    let want: Vec<u64> = (0..HITS).filter(|q| q % 4 != 3).collect();
    assert_eq!(seqs, want);
    for e in &events {
        let seq = u64_at(e, 8);
        assert_eq!(u32_at(e, 0), EVENT_MAGIC);
        assert_eq!(u32_at(e, 4), tid);
        assert_eq!(u32_at(e, 16) as i32, -(seq as i32));
        assert_eq!(e[24], (seq & 1) as u8);
        assert_eq!(u32_at(e, 52), seq as u32);
        assert_eq!(u32_at(e, 60), (seq * 3) as u32);
    }
    let big_seqs: Vec<u64> = bigs.iter().map(|b| u64_at(b, 0)).collect();
    assert_eq!(
        big_seqs,
        (0..HITS).filter(|q| q % 8 == 5).collect::<Vec<_>>()
    );
    for b in &bigs {
        let seq = u64_at(b, 0);
        assert_eq!(b[8], 0xab);
        assert_eq!(b[8 + BIG_SIZE - 17], 0xcd);
        assert_eq!(u64_at(b, BIG_SIZE - 8), seq ^ u64::from(EVENT_MAGIC));
    }
    s.close();
}
