//! [`PerfRing`]: one mapped perf ring, drained in place; its configuration and errors.

use std::fmt;
use std::os::fd::AsFd;

use sluice_core::perf::abi::PerfEventAttr;
use sluice_core::perf::record::{Record, SampleFormat};

use super::cursor::{self, Step};
use crate::sys::ring_map::{MapError, Mapping};

/// `perf_event_attr` flag bit `watermark`: `wakeup_watermark` counts bytes, not events.
#[doc(alias = "watermark")]
pub const ATTR_FLAG_WATERMARK: u64 = sluice_core::perf::abi::attr_flags::WATERMARK;

/// Least number of data pages per CPU [`RingConfig::for_cpus`] gives, and what
/// [`RingConfig::default`] has: 1 MiB with 4 KiB pages.
///
/// Sized by `runtime/benches/vs_ringbuf.sh` (the `ringbuf` peer's workload: one 32-byte
/// record per syscall at the generator's full rate, 72 bytes a record in the ring): with
/// the quarter-ring watermark a wake-up comes every 256 KiB (~3,600 records), which keeps
/// the consumer under 0.1 µs of CPU per record, and the other 768 KiB (~10,000 records,
/// 2.5 ms at the generator's 4 M records/s) absorb the consumer being scheduled out. 64
/// pages (the peers' and libbpf's usual size) lost records in those runs. Above
/// `perf_event_mlock_kb` (516 KiB by default), the pages are charged to `RLIMIT_MEMLOCK`
/// unless the process has `CAP_IPC_LOCK` (root has).
pub const DEFAULT_DATA_PAGES: usize = 256;

/// Most data pages per CPU [`RingConfig::for_cpus`] gives: 4 MiB, 13 ms of the generator's
/// full rate. `sluice record`'s text and JSON output at that rate lost records in 5 of 12
/// runs with 256 pages and 2 of 14 with 512 (the consumer scheduled out, or its file write
/// held up, for a few ms), none in 12 with 1024.
pub const MAX_DEFAULT_DATA_PAGES: usize = 1024;

/// The data pages of all CPUs' rings of one event together that [`RingConfig::for_cpus`]
/// stays within above [`DEFAULT_DATA_PAGES`] per CPU: 64 MiB (16 CPUs at 4 MiB, 64 at 1).
pub const DEFAULT_PAGES_BUDGET: usize = 16 * 1024;

/// When the kernel wakes the reader of a ring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wakeup {
    /// After this many samples (`wakeup_events`; 0 acts as 1).
    Events(u32),
    /// After this many bytes (`wakeup_watermark`, with the `watermark` flag).
    Watermark(u32),
    /// A quarter of the data area (the default).
    #[default]
    QuarterRing,
}

impl Wakeup {
    /// The `perf_event_attr` fields for this wake-up policy on a ring with `data_pages`
    /// pages: the bit to OR into the flags word (0 or [`ATTR_FLAG_WATERMARK`]) and the value
    /// of the `wakeup_events`/`wakeup_watermark` union.
    #[must_use]
    pub fn attr_fields(self, data_pages: usize) -> (u64, u32) {
        match self {
            Wakeup::Events(n) => (0, n.max(1)),
            Wakeup::Watermark(bytes) => (ATTR_FLAG_WATERMARK, bytes.max(1)),
            Wakeup::QuarterRing => {
                let bytes = data_pages.saturating_mul(rustix::param::page_size()) / 4;
                (
                    ATTR_FLAG_WATERMARK,
                    u32::try_from(bytes).unwrap_or(u32::MAX).max(1),
                )
            }
        }
    }
}

/// What the samples of a program's bpf-output events carry (`perf_event_attr.sample_type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputLayout {
    /// Event id, IP, pid/tid, time, CPU and the program's bytes
    /// ([`bpf_output_sample_type`](crate::attach::bpf_output_sample_type)): who and when,
    /// CPUs merged by time, what perf.data needs. 88 bytes in the ring for a 32-byte record.
    #[default]
    Full,
    /// The program's bytes only (`PERF_SAMPLE_RAW`, as libbpf's `perf_buffer` samples):
    /// 48 bytes for a 32-byte record, the least the kernel writes per event. Samples carry
    /// no fields; with no time to merge by, such rings are drained one after the other.
    Raw,
}

/// Ring size and wake-up policy, one per perf event, and the bpf-output events' layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingConfig {
    /// Data pages: a power of two (the mapping has one more, the control page).
    pub data_pages: usize,
    /// Wake-up policy; put [`Wakeup::attr_fields`] into the event's attr.
    pub wakeup: Wakeup,
    /// The samples of bpf-output events (read by
    /// [`open_bpf_output`](crate::attach::open_bpf_output)); other events keep theirs.
    pub output_layout: OutputLayout,
}

impl Default for RingConfig {
    fn default() -> Self {
        RingConfig {
            data_pages: DEFAULT_DATA_PAGES,
            wakeup: Wakeup::default(),
            output_layout: OutputLayout::default(),
        }
    }
}

impl RingConfig {
    /// The default configuration with rings sized for recording on `cpus` CPUs of a
    /// machine of `memory` bytes: the largest power of two of data pages per CPU that
    /// keeps one event's rings within [`DEFAULT_PAGES_BUDGET`] and within 1/64 of the
    /// memory, between [`DEFAULT_DATA_PAGES`] and [`MAX_DEFAULT_DATA_PAGES`] (a small
    /// machine with memory to spare gets the most headroom; a large one, or a small
    /// appliance, is not made to pin what it cannot spare).
    #[must_use]
    pub fn for_machine(cpus: usize, memory: u64) -> Self {
        let by_memory = usize::try_from(memory / 64 / 4096).unwrap_or(usize::MAX);
        let fit = DEFAULT_PAGES_BUDGET.min(by_memory) / cpus.max(1);
        let pages = match fit.checked_ilog2() {
            Some(log) => 1usize << log,
            None => DEFAULT_DATA_PAGES,
        };
        RingConfig {
            data_pages: pages.clamp(DEFAULT_DATA_PAGES, MAX_DEFAULT_DATA_PAGES),
            ..RingConfig::default()
        }
    }

    /// [`RingConfig::for_machine`] for `cpus` CPUs of this machine (its memory from
    /// `sysinfo(2)`; the floor when that fails).
    #[must_use]
    pub fn for_cpus(cpus: usize) -> Self {
        let info = rustix::system::sysinfo();
        // `c_ulong`: u32 on 32-bit targets, u64 (this conversion a no-op) on 64-bit ones.
        #[allow(clippy::useless_conversion)]
        let total = u64::from(info.totalram);
        let memory = total.saturating_mul(u64::from(info.mem_unit.max(1)));
        RingConfig::for_machine(cpus, memory)
    }

    /// `(flags bit, wakeup value)` for the attr: see [`Wakeup::attr_fields`].
    #[must_use]
    pub fn attr_fields(&self) -> (u64, u32) {
        self.wakeup.attr_fields(self.data_pages)
    }

    /// Writes the wake-up policy into `attr`: sets or clears the `watermark` flag and sets
    /// `wakeup_events`/`wakeup_watermark`.
    pub fn apply(&self, attr: &mut PerfEventAttr) {
        let (flag, value) = self.attr_fields();
        attr.flags = (attr.flags & !ATTR_FLAG_WATERMARK) | flag;
        attr.wakeup_events = value;
    }
}

/// Errors of the ring.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// `mmap(2)` of the event failed (`EINVAL`: the page count is not `1 + 2^n`;
    /// `EPERM`: over `perf_event_mlock_kb`).
    Map {
        /// CPU of the ring, when known.
        cpu: Option<u32>,
        /// Data pages asked for.
        data_pages: usize,
        /// The errno.
        errno: rustix::io::Errno,
    },
    /// The control page announces a data area that does not fit the mapping, or the page
    /// count asked for is not a power of two.
    Layout {
        /// CPU of the ring, when known.
        cpu: Option<u32>,
        /// `data_offset` found (or the page size).
        data_offset: u64,
        /// `data_size` found (or the page count asked for).
        data_size: u64,
    },
    /// A record header in the ring is malformed; the ring was skipped to `data_head`.
    Record {
        /// CPU of the ring, when known.
        cpu: Option<u32>,
        /// What and where (the offset is the ring position).
        source: sluice_core::Error,
    },
    /// Registering a ring fd with the async reactor failed.
    Reactor {
        /// CPU of the ring, when known.
        cpu: Option<u32>,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cpu = |c: &Option<u32>| c.map_or_else(String::new, |c| format!(" of CPU {c}"));
        match self {
            Error::Map {
                cpu: c,
                data_pages,
                errno,
            } => {
                write!(
                    f,
                    "mmap of the perf ring{} (1 + {data_pages} pages): {errno}",
                    cpu(c)
                )
            }
            Error::Layout {
                cpu: c,
                data_offset,
                data_size,
            } => write!(
                f,
                "perf ring{}: data area (offset {data_offset}, size {data_size}) \
                 does not fit a 1 + 2^n page mapping",
                cpu(c)
            ),
            Error::Record { cpu: c, source } => {
                write!(f, "perf ring{}: {source}; skipped to data_head", cpu(c))
            }
            Error::Reactor { cpu: c, source } => {
                write!(f, "perf ring{}: cannot poll its fd: {source}", cpu(c))
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Map { errno, .. } => Some(errno),
            Error::Record { source, .. } => Some(source),
            Error::Reactor { source, .. } => Some(source),
            Error::Layout { .. } => None,
        }
    }
}

/// Counters of one ring.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingStats {
    /// Records handed out.
    pub records: u64,
    /// Sum of the `lost` fields of `PERF_RECORD_LOST` records: records the kernel dropped
    /// because the ring was full.
    pub lost: u64,
    /// Records whose body did not fit their announced format (skipped, not handed out).
    pub malformed: u64,
    /// Times the ring was skipped to `data_head` after a malformed header.
    pub resyncs: u64,
    /// Records that wrapped the end of the data area (copied once into scratch).
    pub wrapped: u64,
}

/// The mapped ring of one perf event.
#[derive(Debug)]
pub struct PerfRing {
    map: Mapping,
    /// Our copy of `data_tail` (the kernel never writes it).
    tail: u64,
    scratch: Vec<u8>,
    format: SampleFormat,
    cpu: Option<u32>,
    stats: RingStats,
}

impl PerfRing {
    /// Maps the ring of the perf event `fd` (opened with a sampling attr), `1 + data_pages`
    /// pages, whose samples are laid out by `format` (the attr's `sample_type` and
    /// `read_format`). `cpu` only labels errors and events.
    ///
    /// The fd may be closed after this: the mapping keeps the event alive.
    ///
    /// # Errors
    /// [`Error::Map`] when `mmap(2)` fails, [`Error::Layout`] when `data_pages` is not a
    /// power of two or the kernel's control page disagrees with the mapping.
    pub fn map(
        fd: impl AsFd,
        data_pages: usize,
        format: SampleFormat,
        cpu: Option<u32>,
    ) -> Result<Self, Error> {
        let map =
            Mapping::map_fd(fd.as_fd(), data_pages).map_err(|e| map_error(e, cpu, data_pages))?;
        Ok(Self::with(map, format, cpu))
    }

    /// A ring in anonymous memory, with no kernel behind it: [`PerfRing::produce`] plays
    /// the kernel's part. For tests and benchmarks of the reader.
    ///
    /// # Errors
    /// As [`PerfRing::map`].
    pub fn anonymous(data_pages: usize, format: SampleFormat) -> Result<Self, Error> {
        let map = Mapping::anonymous(data_pages).map_err(|e| map_error(e, None, data_pages))?;
        Ok(Self::with(map, format, None))
    }

    fn with(map: Mapping, format: SampleFormat, cpu: Option<u32>) -> Self {
        let tail = map.tail();
        PerfRing {
            map,
            tail,
            scratch: Vec::new(),
            format,
            cpu,
            stats: RingStats::default(),
        }
    }

    /// Size of the data area in bytes (`data_size` of the control page).
    #[must_use]
    pub fn data_size(&self) -> usize {
        self.map.data_size()
    }

    /// Offset of the data area in the mapping (`data_offset`; one page).
    #[must_use]
    pub fn data_offset(&self) -> usize {
        self.map.data_offset()
    }

    /// The CPU given at creation.
    #[must_use]
    pub fn cpu(&self) -> Option<u32> {
        self.cpu
    }

    /// The sample layout given at creation.
    #[must_use]
    pub fn format(&self) -> SampleFormat {
        self.format
    }

    /// Counters so far.
    #[must_use]
    pub fn stats(&self) -> RingStats {
        self.stats
    }

    /// Bytes published by the kernel and not yet drained.
    #[must_use]
    pub fn pending_bytes(&self) -> u64 {
        self.map.head().wrapping_sub(self.tail)
    }

    /// Hands every record published so far to `f`, in ring order, then releases their
    /// space to the kernel. Returns the number of records handed out.
    ///
    /// A record that wraps the end of the data area is copied once into a scratch buffer;
    /// others are viewed in place. `PERF_RECORD_LOST` records are counted in
    /// [`RingStats::lost`] and handed out too. A record whose body does not fit its format
    /// is skipped and counted in [`RingStats::malformed`]. The loop is bounded by the
    /// `data_head` read at entry.
    ///
    /// # Errors
    /// [`Error::Record`] when a header is malformed (size below 8, or beyond `data_head`),
    /// or `data_head` is more than a ring ahead of the tail: the records before it were
    /// handed out, and the ring is skipped to `data_head` so the next drain starts clean.
    pub fn drain<F: FnMut(Record<'_>)>(&mut self, mut f: F) -> Result<usize, Error> {
        let PerfRing {
            map,
            tail,
            scratch,
            format,
            cpu,
            stats,
        } = self;
        let head = map.head();
        let mut pos = *tail;
        let mut n = 0usize;
        let result = if head.wrapping_sub(pos) > map.data_size() as u64 {
            Err(sluice_core::Error::Truncated {
                what: "perf ring (data_head more than a ring ahead of data_tail)",
                offset: pos,
                len: head.wrapping_sub(pos),
            })
        } else {
            loop {
                match cursor::step(map, scratch, pos, head) {
                    Ok(Step::Empty) => break Ok(()),
                    Ok(Step::Record(bytes, header, wrapped)) => {
                        stats.wrapped += u64::from(wrapped);
                        let len = bytes.len() as u64;
                        match Record::parse_with(header, bytes, format, pos) {
                            Ok((rec, _)) => {
                                if let Record::Lost { lost, .. } = rec {
                                    stats.lost = stats.lost.saturating_add(lost);
                                }
                                stats.records += 1;
                                n += 1;
                                f(rec);
                            }
                            Err(e) => {
                                stats.malformed += 1;
                                log::warn!(
                                    "perf ring{}: skipped a malformed record: {e}",
                                    cpu_label(*cpu)
                                );
                            }
                        }
                        pos = pos.wrapping_add(len);
                    }
                    Err(e) => break Err(e),
                }
            }
        };
        let result = result.map_err(|source| {
            stats.resyncs += 1;
            pos = head;
            Error::Record { cpu: *cpu, source }
        });
        *tail = pos;
        map.set_tail(pos);
        result.map(|()| n)
    }

    /// The mapping, for the merge of a [`super::RingSet`].
    pub(super) fn mapping(&self) -> &Mapping {
        &self.map
    }

    /// Our `data_tail`.
    pub(super) fn tail_pos(&self) -> u64 {
        self.tail
    }

    /// Ends a merge's walk of this ring: releases the space up to `pos` to the kernel and
    /// adds the walk's counters.
    pub(super) fn finish(&mut self, pos: u64, delta: &RingStats) {
        self.tail = pos;
        self.map.set_tail(pos);
        let s = &mut self.stats;
        s.records += delta.records;
        s.lost = s.lost.saturating_add(delta.lost);
        s.malformed += delta.malformed;
        s.resyncs += delta.resyncs;
        s.wrapped += delta.wrapped;
    }

    /// Plays the kernel: appends `record` (a complete record, header included) at
    /// `data_head` and publishes it. Returns `false`, writing nothing, when the free space
    /// (what the reader has not released) is too small. Only rings made by
    /// [`PerfRing::anonymous`] should be written this way: a kernel ring's head belongs to
    /// the kernel.
    pub fn produce(&mut self, record: &[u8]) -> bool {
        let head = self.map.head();
        let used = head.wrapping_sub(self.map.tail());
        let free = (self.map.data_size() as u64).saturating_sub(used);
        if record.len() as u64 > free {
            return false;
        }
        let off = (head & (self.map.data_size() as u64 - 1)) as usize;
        if self.map.write_wrapped(off, record).is_none() {
            return false;
        }
        self.map.set_head(head.wrapping_add(record.len() as u64));
        true
    }
}

pub(super) fn cpu_label(cpu: Option<u32>) -> String {
    cpu.map_or_else(String::new, |c| format!(" of CPU {c}"))
}

fn map_error(e: MapError, cpu: Option<u32>, data_pages: usize) -> Error {
    match e {
        MapError::Errno(errno) => Error::Map {
            cpu,
            data_pages,
            errno,
        },
        MapError::Layout {
            data_offset,
            data_size,
        } => Error::Layout {
            cpu,
            data_offset,
            data_size,
        },
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;
    use sluice_core::perf::record::{SampleType, RECORD_LOST, RECORD_SAMPLE};

    /// Small machines with memory get the most pages, large ones stay within the budget,
    /// a small appliance within 1/64 of its memory; never below the floor; always a power
    /// of two.
    #[test]
    fn rings_are_sized_by_the_cpus_and_the_memory() {
        const GIB: u64 = 1 << 30;
        let pages = |n, mem| RingConfig::for_machine(n, mem).data_pages;
        assert_eq!(pages(0, 16 * GIB), MAX_DEFAULT_DATA_PAGES);
        assert_eq!(pages(2, 16 * GIB), MAX_DEFAULT_DATA_PAGES);
        assert_eq!(pages(16, 16 * GIB), 1024);
        assert_eq!(pages(17, 16 * GIB), 512);
        assert_eq!(pages(32, 64 * GIB), 512);
        assert_eq!(pages(64, 256 * GIB), 256);
        assert_eq!(pages(4096, 1024 * GIB), DEFAULT_DATA_PAGES);
        // 1 GiB, 4 CPUs: 16 MiB for the rings of an event, 4 MiB each; 256 MiB: 1 MiB.
        assert_eq!(pages(4, GIB), 1024);
        assert_eq!(pages(4, GIB / 4), DEFAULT_DATA_PAGES);
        assert_eq!(pages(2, 0), DEFAULT_DATA_PAGES);
        assert!((1..300).all(|n| pages(n, 8 * GIB).is_power_of_two()));
        assert!((1..300).all(|n| n * pages(n, 8 * GIB) <= DEFAULT_PAGES_BUDGET.max(n * 256)));
        assert_eq!(RingConfig::for_cpus(8).wakeup, RingConfig::default().wakeup);
        assert!(RingConfig::for_cpus(2).data_pages >= DEFAULT_DATA_PAGES);
    }

    fn sample(tid: u32, raw: &[u8]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend_from_slice(&1u32.to_ne_bytes());
        body.extend_from_slice(&tid.to_ne_bytes());
        body.extend_from_slice(&(raw.len() as u32).to_ne_bytes());
        body.extend_from_slice(raw);
        while (body.len() + 8) % 8 != 0 {
            body.push(0);
        }
        let mut v = Vec::new();
        v.extend_from_slice(&RECORD_SAMPLE.to_ne_bytes());
        v.extend_from_slice(&0u16.to_ne_bytes());
        v.extend_from_slice(&((body.len() + 8) as u16).to_ne_bytes());
        v.extend(body);
        v
    }

    fn fmt() -> SampleFormat {
        SampleFormat::new(SampleType::TID | SampleType::RAW)
    }

    #[test]
    fn records_that_wrap_are_copied_intact() {
        let mut ring = PerfRing::anonymous(1, fmt()).unwrap();
        let size = ring.data_size();
        assert!(size.is_power_of_two());
        // Records of 8 + 8 + 4 + 13 -> 40 bytes (padded): never a divisor of the page, so
        // records wrap at every offset class over many rounds.
        let mut want = 0u32;
        let mut got = 0u32;
        let mut wrapped = 0;
        for round in 0..2_000u32 {
            for _ in 0..(round % 150) {
                let raw: Vec<u8> = (0..13).map(|i| (want as u8).wrapping_add(i)).collect();
                let head_before = ring.map.head();
                if !ring.produce(&sample(want, &raw)) {
                    break;
                }
                let off = (head_before % size as u64) as usize;
                if off + 40 > size {
                    wrapped += 1;
                }
                want += 1;
            }
            ring.drain(|r| {
                let Record::Sample(s) = r else {
                    panic!("{r:?}")
                };
                assert_eq!(s.fields.tid, Some(got));
                let raw: Vec<u8> = (0..13).map(|i| (got as u8).wrapping_add(i)).collect();
                assert_eq!(s.raw.unwrap(), &raw[..]);
                got += 1;
            })
            .unwrap();
        }
        assert_eq!(got, want);
        assert!(wrapped > 100, "{wrapped}");
        assert_eq!(ring.stats().wrapped, wrapped);
        assert_eq!(ring.stats().records, u64::from(got));
    }

    #[test]
    fn lost_counted_and_bad_header_resyncs() {
        let mut ring = PerfRing::anonymous(1, fmt()).unwrap();
        let mut lost = Vec::new();
        lost.extend_from_slice(&RECORD_LOST.to_ne_bytes());
        lost.extend_from_slice(&0u16.to_ne_bytes());
        lost.extend_from_slice(&24u16.to_ne_bytes());
        lost.extend_from_slice(&7u64.to_ne_bytes());
        lost.extend_from_slice(&33u64.to_ne_bytes());
        assert!(ring.produce(&lost));
        assert!(ring.produce(&sample(1, b"x")));
        // A header claiming 4 bytes: cannot be stepped over.
        assert!(ring.produce(&[9, 0, 0, 0, 0, 0, 4, 0]));
        assert!(ring.produce(&sample(2, b"y")));
        let mut seen = 0;
        let e = ring.drain(|_| seen += 1).unwrap_err();
        assert!(matches!(e, Error::Record { .. }), "{e}");
        assert_eq!(seen, 2);
        assert_eq!(ring.stats().lost, 33);
        assert_eq!(ring.stats().resyncs, 1);
        assert_eq!(ring.pending_bytes(), 0);
        // After the resync the ring works again.
        assert!(ring.produce(&sample(3, b"z")));
        assert_eq!(ring.drain(|_| {}).unwrap(), 1);
        // A body that does not fit its format is skipped, not fatal.
        let mut bad = sample(4, b"abc");
        bad[16..20].copy_from_slice(&999u32.to_ne_bytes());
        assert!(ring.produce(&bad));
        assert!(ring.produce(&sample(5, b"ok")));
        assert_eq!(ring.drain(|_| {}).unwrap(), 1);
        assert_eq!(ring.stats().malformed, 1);
    }

    #[test]
    fn full_ring_refuses_writes_until_drained() {
        let mut ring = PerfRing::anonymous(1, fmt()).unwrap();
        let rec = sample(1, &[0; 100]);
        let mut n = 0;
        while ring.produce(&rec) {
            n += 1;
        }
        assert_eq!(n, ring.data_size() / rec.len());
        assert_eq!(ring.drain(|_| {}).unwrap(), n);
        assert!(ring.produce(&rec));
    }

    #[test]
    fn pages_must_be_a_power_of_two() {
        assert!(matches!(
            PerfRing::anonymous(3, fmt()),
            Err(Error::Layout { .. })
        ));
    }

    #[test]
    fn wakeup_fields() {
        assert_eq!(Wakeup::Events(0).attr_fields(8), (0, 1));
        assert_eq!(
            Wakeup::Watermark(4096).attr_fields(8),
            (ATTR_FLAG_WATERMARK, 4096)
        );
        let page = rustix::param::page_size() as u32;
        assert_eq!(
            RingConfig::default().attr_fields(),
            (ATTR_FLAG_WATERMARK, 64 * page)
        );
    }
}
