//! Kernel tests of the ring: a `syscalls/sys_enter_getppid` tracepoint perf event, no
//! BPF. The oracle is the workload itself: it makes exactly N getppid calls on one thread,
//! and the events are bound to that thread, so exactly N samples must come out (or be
//! accounted for by LOST records), each carrying `__syscall_nr` = getppid's number.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod ring_support;

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use futures_lite::StreamExt;
use ring_support::*;
use sluice_core::perf::record::{Record, SampleFormat, SampleType};
use sluice_runtime::ring::{PerfRing, RingConfig, RingEvent, RingSet, Wakeup};
use sluice_runtime::tracefs::{Field, Tracefs};

const N: usize = 10_000;

fn sample_type() -> SampleType {
    SampleType::TID | SampleType::TIME | SampleType::CPU | SampleType::PERIOD | SampleType::RAW
}

/// The tracepoint that sees our getppid calls, and how to recognise them in RAW data.
struct GetppidEvent {
    id: u64,
    /// The syscall-number field.
    nr: Field,
    /// `common_pid`: the thread that hit the tracepoint.
    pid: Field,
    /// Whether the event fires for every syscall (so others must be filtered out).
    all_syscalls: bool,
}

impl GetppidEvent {
    fn is_getppid(&self, raw: &[u8]) -> bool {
        self.nr.read_i64(raw) == Some(nr_getppid())
    }

    /// Whether a sample of our thread counts: every one for `sys_enter_getppid` (and then
    /// it must be getppid), only getppid ones for `raw_syscalls/sys_enter`.
    fn counts(&self, raw: &[u8]) -> bool {
        !self.all_syscalls || self.is_getppid(raw)
    }
}

fn getppid_event() -> GetppidEvent {
    // A 32-bit x86 build usually runs on a 64-bit kernel, whose `syscalls/*` tracepoints
    // skip compat (int 0x80) syscalls (kernel/trace/trace_syscalls.c); `raw_syscalls`
    // sees them, with the i386 number in `id`.
    let (group, name, nr, all_syscalls) = if cfg!(target_arch = "x86") {
        ("raw_syscalls", "sys_enter", "id", true)
    } else {
        ("syscalls", "sys_enter_getppid", "__syscall_nr", false)
    };
    let tracefs = Tracefs::find().expect("tracefs");
    let id = tracefs.event_id(group, name).expect("tracepoint id");
    let format = tracefs.event_format(group, name).expect("format");
    assert_eq!(format.id, id, "format ID and id file agree");
    GetppidEvent {
        id,
        nr: format.field(nr).expect("syscall number field").clone(),
        pid: format
            .field("common_pid")
            .expect("common_pid field")
            .clone(),
        all_syscalls,
    }
}

/// getppid's syscall number, from linux-raw-sys (an independent table).
fn nr_getppid() -> i64 {
    i64::from(linux_raw_sys::general::__NR_getppid)
}

fn open_per_cpu(id: u64, tid: i32, cfg: &RingConfig) -> Vec<(u32, OwnedFd)> {
    let attr = tracepoint_attr(id, sample_type().0, cfg);
    sluice_runtime::kernel::cpus::online()
        .unwrap()
        .into_iter()
        .map(|cpu| {
            (
                cpu,
                perf_event_open(&attr, tid, cpu as i32).expect("perf_event_open"),
            )
        })
        .collect()
}

#[test]
fn every_getppid_is_one_sample_on_some_cpu() {
    if !kernel_or_skip("every_getppid_is_one_sample_on_some_cpu") {
        return;
    }
    let ev = getppid_event();
    let id = ev.id;
    let tid = gettid();
    // 2 MiB per CPU holds all N samples (64 bytes each; 112 with raw_syscalls) without
    // draining in between.
    let cfg = RingConfig {
        data_pages: 512,
        wakeup: Wakeup::default(),
        ..RingConfig::default()
    };
    let events = open_per_cpu(id, tid, &cfg);
    let sf = SampleFormat::new(sample_type());
    let mut rings: Vec<PerfRing> = events
        .iter()
        .map(|(cpu, fd)| PerfRing::map(fd, cfg.data_pages, sf, Some(*cpu)).expect("mmap ring"))
        .collect();
    let page = rustix::param::page_size();
    for r in &rings {
        // The kernel filled data_offset/data_size at 1040/1048: they must say one page and
        // the data pages we mapped.
        assert_eq!((r.data_offset(), r.data_size()), (page, 512 * page));
    }

    for (_, fd) in &events {
        enable(fd);
    }
    getppid_calls(N);
    for (_, fd) in &events {
        disable(fd);
    }

    let (mut ours, mut others, mut bad_nr, mut lost) = (0usize, 0usize, 0usize, 0u64);
    for ring in &mut rings {
        let ring_cpu = ring.cpu().unwrap();
        let mut last_time = 0;
        ring.drain(|rec| match rec {
            Record::Sample(s) => {
                if s.fields.tid != Some(tid as u32) {
                    others += 1;
                    return;
                }
                if !ev.counts(s.raw.unwrap()) {
                    return;
                }
                ours += 1;
                assert_eq!(
                    s.fields.cpu,
                    Some(ring_cpu),
                    "sample lands in its CPU's ring"
                );
                assert_eq!(s.fields.period, Some(1));
                let t = s.fields.time.unwrap();
                assert!(t >= last_time, "time goes forward within a ring");
                last_time = t;
                let raw = s.raw.unwrap();
                if !ev.is_getppid(raw) {
                    bad_nr += 1;
                }
                assert_eq!(ev.pid.read_i64(raw), Some(i64::from(tid)));
            }
            Record::Lost { lost: l, .. } => lost += l,
            _ => {}
        })
        .unwrap();
        assert_eq!(ring.stats().malformed, 0);
    }
    eprintln!(
        "getppid x{N}: {ours} samples, {lost} lost, {others} of other threads, rings {}",
        rings.len()
    );
    assert_eq!(lost, 0, "ring too small: enlarge data_pages");
    assert_eq!(ours, N);
    assert_eq!(others, 0, "events are bound to our thread");
    assert_eq!(bad_nr, 0, "__syscall_nr is getppid's ({})", nr_getppid());
}

#[test]
fn async_set_merges_cpus_and_accounts_for_every_call() {
    if !kernel_or_skip("async_set_merges_cpus_and_accounts_for_every_call") {
        return;
    }
    let ev = getppid_event();
    let id = ev.id;
    // The workload runs on its own thread, in bursts of 100 calls 1 ms apart so the reader
    // is woken many times while it runs; events follow that thread on every CPU. After the
    // N calls and a signal from the reader, it makes one more call: the kernel writes a
    // pending LOST record only when it next writes to the ring, so that extra sample
    // flushes any loss into view and the accounting below is exact.
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let (flush_tx, flush_rx) = std::sync::mpsc::channel::<()>();
    let worker = std::thread::spawn(move || {
        tid_tx.send(gettid()).unwrap();
        go_rx.recv().unwrap();
        for _ in 0..N / 100 {
            getppid_calls(100);
            std::thread::sleep(Duration::from_millis(1));
        }
        flush_rx.recv().unwrap();
        getppid_calls(1);
    });
    let tid = tid_rx.recv().unwrap();
    // Batched wake-up (every 64 samples) exercises the readiness path; 2 MiB per CPU holds
    // all N samples, so a reader starved by a loaded machine (CI runs tests in parallel on
    // two cores) still loses nothing and the accounting below stays exact.
    let cfg = RingConfig {
        data_pages: 512,
        wakeup: Wakeup::Events(64),
        ..RingConfig::default()
    };
    let events = open_per_cpu(id, tid, &cfg);
    let sf = SampleFormat::new(sample_type());
    let mut set = RingSet::new(Duration::from_millis(50));
    for (cpu, fd) in &events {
        let ring = PerfRing::map(fd, cfg.data_pages, sf, Some(*cpu)).unwrap();
        set.push(fd.try_clone().unwrap(), ring).unwrap();
    }
    for (_, fd) in &events {
        enable(fd);
    }
    go_tx.send(()).unwrap();

    let deadline = Instant::now() + Duration::from_secs(30);
    let want = N + 1;
    let (mut ours, mut lost, mut bad_nr, mut inversions) = (0usize, 0u64, 0usize, 0usize);
    let mut last_time = 0u64;
    let mut flush_tx = Some(flush_tx);
    futures_lite::future::block_on(async {
        while ours + (lost as usize) < want && Instant::now() < deadline {
            // Flush once everything arrived, or after 5 s when losses may be pending.
            if ours + (lost as usize) >= N || Instant::now() + Duration::from_secs(25) > deadline {
                if let Some(tx) = flush_tx.take() {
                    tx.send(()).unwrap();
                }
            }
            let next = futures_lite::future::or(set.next(), async {
                async_io::Timer::after(Duration::from_millis(200)).await;
                None
            });
            match next.await {
                Some(RingEvent::Sample(s))
                    if s.fields.tid == Some(tid as u32) && ev.counts(&s.raw) =>
                {
                    ours += 1;
                    if !ev.is_getppid(&s.raw) {
                        bad_nr += 1;
                    }
                    let t = s.fields.time.unwrap();
                    // Order is promised within a batch only; count inversions to report.
                    inversions += usize::from(t < last_time);
                    last_time = t;
                }
                Some(RingEvent::Lost { lost: l, .. }) => lost += l,
                _ => {}
            }
        }
    });
    if let Some(tx) = flush_tx.take() {
        tx.send(()).unwrap();
    }
    worker.join().unwrap();
    let via_stream = ours;
    for (_, fd) in &events {
        disable(fd);
    }
    let (rest, errors) = set.drain_now();
    assert!(errors.is_empty(), "{errors:?}");
    for e in rest {
        match e {
            RingEvent::Sample(s) if s.fields.tid == Some(tid as u32) && ev.counts(&s.raw) => {
                ours += 1
            }
            RingEvent::Lost { lost: l, .. } => lost += l,
            _ => {}
        }
    }
    eprintln!(
        "async: {ours} samples + {lost} lost of {want} calls ({via_stream} through the stream) over {} rings; per-ring lost {:?}; \
         {inversions} time inversions across batches",
        events.len(),
        set.lost()
    );
    assert_eq!(
        ours + lost as usize,
        want,
        "every call is a sample or counted as lost"
    );
    assert_eq!(set.stats().lost, lost);
    assert_eq!(lost, 0, "the reader fell behind: enlarge data_pages");
    assert_eq!(bad_nr, 0);
}

#[test]
fn one_page_ring_wraps_many_times_intact() {
    if !kernel_or_skip("one_page_ring_wraps_many_times_intact") {
        return;
    }
    let ev = getppid_event();
    let id = ev.id;
    let tid = gettid();
    // TID|TIME|RAW: 48-byte records (96 with raw_syscalls), which do not divide a page, so
    // records straddle the end of the data area and must be reassembled.
    let st = SampleType::TID | SampleType::TIME | SampleType::RAW;
    let cfg = RingConfig {
        data_pages: 1,
        wakeup: Wakeup::Events(1_000_000),
        ..RingConfig::default()
    };
    let attr = tracepoint_attr(id, st.0, &cfg);
    // One event following our thread on any CPU: one ring.
    let fd = perf_event_open(&attr, tid, -1).unwrap();
    let mut ring = PerfRing::map(&fd, 1, SampleFormat::new(st), None).unwrap();
    enable(&fd);
    let (mut seen, mut intact, mut lost) = (0usize, 0usize, 0u64);
    let rounds = 500;
    let per_round = 20; // at most 1,920 bytes: under a page, so nothing is lost.
    for _ in 0..rounds {
        getppid_calls(per_round);
        ring.drain(|rec| match rec {
            Record::Sample(s) if s.fields.tid == Some(tid as u32) && ev.counts(s.raw.unwrap()) => {
                seen += 1;
                let raw = s.raw.unwrap();
                if ev.is_getppid(raw) && ev.pid.read_i64(raw) == Some(i64::from(tid)) {
                    intact += 1;
                }
            }
            Record::Lost { lost: l, .. } => lost += l,
            _ => {}
        })
        .unwrap();
    }
    disable(&fd);
    ring.drain(|_| {}).unwrap();
    let stats = ring.stats();
    eprintln!(
        "1-page ring: {seen} samples, {} wrapped, {lost} lost",
        stats.wrapped
    );
    assert_eq!(lost, 0);
    assert_eq!(seen, rounds * per_round);
    assert_eq!(intact, seen, "records copied across the wrap are intact");
    // 10,000 x 48 bytes through a 4 KiB ring: ~117 passes over the end, most straddling it.
    assert!(stats.wrapped > 50, "{stats:?}");
}

#[test]
fn overflow_is_reported_as_lost() {
    if !kernel_or_skip("overflow_is_reported_as_lost") {
        return;
    }
    let ev = getppid_event();
    let id = ev.id;
    let tid = gettid();
    let st = SampleType::TID | SampleType::RAW;
    let cfg = RingConfig {
        data_pages: 1,
        wakeup: Wakeup::Events(1_000_000),
        ..RingConfig::default()
    };
    let fd = perf_event_open(&tracepoint_attr(id, st.0, &cfg), tid, -1).unwrap();
    let mut ring = PerfRing::map(&fd, 1, SampleFormat::new(st), None).unwrap();
    enable(&fd);
    // 1,000 samples (40 bytes each; 96 with raw_syscalls) into 4 KiB without reading:
    // most are dropped.
    getppid_calls(1_000);
    let mut samples = 0u64;
    let mut count = |r: Record<'_>| match r {
        Record::Sample(s) if ev.counts(s.raw.unwrap()) => samples += 1,
        _ => {}
    };
    ring.drain(&mut count).unwrap();
    // The kernel writes the pending LOST record when it next has room: one more call.
    getppid_calls(1);
    disable(&fd);
    let mut lost_records = 0;
    ring.drain(|r| match r {
        Record::Lost { .. } => lost_records += 1,
        r => count(r),
    })
    .unwrap();
    let lost = ring.stats().lost;
    eprintln!("overflow: {samples} samples, {lost} lost in {lost_records} LOST record(s)");
    assert_eq!(lost_records, 1);
    assert!(lost > 800, "{lost}");
    assert_eq!(samples + lost, 1_001);
}
