//! Several CPUs' rings as one async stream of owned events.
//!
//! Each ring's fd is registered with `async-io`'s reactor; when any becomes readable (the
//! kernel's wake-up, see the module doc of [`super`]) or the flush timer fires, every ring is
//! drained into one batch by the k-way merge of `merge.rs` (by sample time; records of one
//! ring keep their order, records without a time stay after the one before them, equal
//! times go in ring order), and its events are yielded one by one. A consumer that needs
//! no owned events walks the merge itself ([`RingSet::merge_next`]): records in place. Order holds within a batch; across batches the
//! kernel gives no guarantee either (a CPU may publish late), as with `perf record`.

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use async_io::{Async, Timer};
use futures_core::Stream;
use sluice_core::perf::record::SampleFields;

use super::merge::{BufEntry, Entry, Merge, Merged};
use super::perf_ring::{Error, PerfRing, RingStats};
use super::ringbuf::{self, RingBuf, RingBufStats};

/// Most RAW buffers kept for reuse by [`RingSet::recycle`].
const RAW_POOL_LIMIT: usize = 4096;

/// How often [`RingSet`] drains every ring even without a wake-up.
pub const DEFAULT_FLUSH_INTERVAL: Duration = Duration::from_millis(100);

/// Readiness without any record this many times in a row: the fd is taken as hung up
/// (a per-task event whose task exited polls `POLLHUP` for ever) and only the timer
/// drains that ring from then on.
const IDLE_READY_LIMIT: u32 = 3;

/// A sample copied out of its ring: its fixed fields as parsed, its RAW bytes owned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SampleEvent {
    /// Index of the ring in its [`RingSet`] (order of [`RingSet::push`]).
    pub ring: usize,
    /// The fixed fields; `id` is `PERF_SAMPLE_ID`, else `PERF_SAMPLE_IDENTIFIER`.
    pub fields: SampleFields,
    /// `PERF_SAMPLE_RAW` bytes (empty when absent).
    pub raw: Vec<u8>,
}

impl SampleEvent {
    /// A view of this sample, as [`RingSet::merge_next`] hands samples out.
    #[must_use]
    pub fn view(&self) -> SampleView<'_> {
        SampleView {
            ring: self.ring,
            fields: self.fields,
            raw: &self.raw,
        }
    }
}

/// A sample borrowed from its ring (its RAW bytes in place, or in the ring's scratch
/// buffer when the record wrapped): valid while the drain that handed it out runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleView<'a> {
    /// Index of the ring in its [`RingSet`] (order of [`RingSet::push`]).
    pub ring: usize,
    /// The fixed fields; `id` is `PERF_SAMPLE_ID`, else `PERF_SAMPLE_IDENTIFIER`.
    pub fields: SampleFields,
    /// `PERF_SAMPLE_RAW` bytes (empty when absent).
    pub raw: &'a [u8],
}

impl SampleView<'_> {
    /// Copies the sample out.
    #[must_use]
    pub fn to_owned(&self) -> SampleEvent {
        SampleEvent {
            ring: self.ring,
            fields: self.fields,
            raw: self.raw.to_vec(),
        }
    }

    /// Copies the sample into `out`, reusing its RAW buffer.
    pub fn copy_into(&self, out: &mut SampleEvent) {
        out.ring = self.ring;
        out.fields = self.fields;
        out.raw.clear();
        out.raw.extend_from_slice(self.raw);
    }
}

/// One event of a [`RingSet`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RingEvent {
    /// A sample.
    Sample(SampleEvent),
    /// The kernel dropped `lost` records of ring `ring` (its CPU is `cpu`) because it was
    /// full.
    Lost {
        /// Index of the ring.
        ring: usize,
        /// CPU of the ring, when given.
        cpu: Option<u32>,
        /// How many records.
        lost: u64,
    },
}

/// The rings of one session (typically one per online CPU), read as a [`Stream`].
///
/// The stream does not end by itself: per-CPU events never hang up. Stop polling when the
/// workload is done, then call [`RingSet::drain_now`] once more for what is left.
pub struct RingSet {
    entries: Vec<Entry>,
    bufs: Vec<BufEntry>,
    /// Rings pushed so far: the next one's index.
    next: usize,
    pending: VecDeque<RingEvent>,
    /// RAW buffers of samples already consumed, for the next ones.
    pool: Vec<Vec<u8>>,
    /// The batch being merged, kept for its capacity.
    batch: Vec<(u64, RingEvent)>,
    timer: Timer,
    errors: VecDeque<Error>,
    /// The last drain stopped at a BUSY ring-buffer record.
    busy: bool,
    /// The cursors of the merge, kept between drains.
    merge: Merge,
}

impl std::fmt::Debug for RingSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RingSet")
            .field("rings", &self.entries.len())
            .field("ring_buffers", &self.bufs.len())
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl Default for RingSet {
    fn default() -> Self {
        Self::new(DEFAULT_FLUSH_INTERVAL)
    }
}

impl RingSet {
    /// An empty set that drains every ring at least every `flush` (so records below the
    /// wake-up threshold still arrive).
    #[must_use]
    pub fn new(flush: Duration) -> Self {
        RingSet {
            entries: Vec::new(),
            bufs: Vec::new(),
            next: 0,
            pending: VecDeque::new(),
            pool: Vec::new(),
            batch: Vec::new(),
            timer: Timer::interval(flush),
            errors: VecDeque::new(),
            busy: false,
            merge: Merge::default(),
        }
    }

    /// Adds a ring and the fd of its event, which is polled for wake-ups (and closed when
    /// the set is dropped). Returns the ring's index.
    ///
    /// # Errors
    /// [`Error::Reactor`] when the fd cannot be registered with the reactor.
    pub fn push(&mut self, fd: OwnedFd, ring: PerfRing) -> Result<usize, Error> {
        let cpu = ring.cpu();
        // The fd is never read, so its blocking mode does not matter: do not change it.
        let fd = Async::new_nonblocking(fd).map_err(|source| Error::Reactor { cpu, source })?;
        Ok(self.push_entry(ring, Some(fd)))
    }

    fn push_entry(&mut self, ring: PerfRing, fd: Option<Async<OwnedFd>>) -> usize {
        let index = self.next;
        self.next += 1;
        self.entries.push(Entry {
            index,
            ring,
            fd,
            idle_ready: 0,
        });
        index
    }

    /// Adds a BPF ring buffer, with the fd of its map when it is to be polled for
    /// wake-ups (`None`: only the flush timer and [`RingSet::drain_now`] drain it). Its
    /// records come out as [`RingEvent::Sample`]s whose fields are all empty (a ring-buffer
    /// record carries no pid, CPU or time), after the perf samples of the same batch.
    /// Returns the ring's index.
    ///
    /// # Errors
    /// [`ringbuf::Error::Reactor`] when the fd cannot be registered with the reactor.
    pub fn push_ringbuf(
        &mut self,
        fd: Option<OwnedFd>,
        ring: RingBuf,
    ) -> Result<usize, ringbuf::Error> {
        let fd = fd
            .map(Async::new_nonblocking)
            .transpose()
            .map_err(|source| ringbuf::Error::Reactor {
                map: ring.name().to_owned(),
                source,
            })?;
        let index = self.next;
        self.next += 1;
        self.bufs.push(BufEntry { index, ring, fd });
        Ok(index)
    }

    /// The ring buffers, in push order, with their indices.
    pub fn ringbufs(&self) -> impl Iterator<Item = (usize, &RingBuf)> {
        self.bufs.iter().map(|b| (b.index, &b.ring))
    }

    /// Mutable access to the ring buffer of index `index` (e.g. to
    /// [`RingBuf::produce`] into an anonymous one).
    pub fn ringbuf_mut(&mut self, index: usize) -> Option<&mut RingBuf> {
        self.bufs
            .iter_mut()
            .find(|b| b.index == index)
            .map(|b| &mut b.ring)
    }

    /// Counters summed over the ring buffers.
    #[must_use]
    pub fn ringbuf_stats(&self) -> RingBufStats {
        self.bufs.iter().fold(RingBufStats::default(), |a, b| {
            let s = b.ring.stats();
            RingBufStats {
                records: a.records + s.records,
                discarded: a.discarded + s.discarded,
                wrapped: a.wrapped + s.wrapped,
                malformed: a.malformed + s.malformed,
            }
        })
    }

    /// Whether the last drain stopped at a ring-buffer record still reserved (BUSY): its
    /// program has not committed it yet.
    #[must_use]
    pub fn ringbuf_busy(&self) -> bool {
        self.busy
    }

    /// Adds a ring with no fd to poll (an anonymous ring, or one whose fd the caller
    /// keeps): only the flush timer and [`RingSet::drain_now`] drain it.
    pub fn push_unpolled(&mut self, ring: PerfRing) -> usize {
        self.push_entry(ring, None)
    }

    /// The rings, in push order.
    pub fn rings(&self) -> impl Iterator<Item = &PerfRing> {
        self.entries.iter().map(|e| &e.ring)
    }

    /// Mutable access to ring `index` (e.g. to [`PerfRing::produce`] into an anonymous one).
    pub fn ring_mut(&mut self, index: usize) -> Option<&mut PerfRing> {
        self.entries
            .iter_mut()
            .find(|e| e.index == index)
            .map(|e| &mut e.ring)
    }

    /// Lost-record counts, one per ring in push order: `(cpu, lost)`.
    #[must_use]
    pub fn lost(&self) -> Vec<(Option<u32>, u64)> {
        self.entries
            .iter()
            .map(|e| (e.ring.cpu(), e.ring.stats().lost))
            .collect()
    }

    /// Counters summed over all rings.
    #[must_use]
    pub fn stats(&self) -> RingStats {
        self.entries.iter().fold(RingStats::default(), |a, e| {
            let s = e.ring.stats();
            RingStats {
                records: a.records + s.records,
                lost: a.lost + s.lost,
                malformed: a.malformed + s.malformed,
                resyncs: a.resyncs + s.resyncs,
                wrapped: a.wrapped + s.wrapped,
            }
        })
    }

    /// Drains every ring now into one time-ordered batch (appended after events already
    /// queued) and returns the events queued, removing them. Ring errors are returned after
    /// the events, in [`RingSet::take_errors`] order.
    pub fn drain_now(&mut self) -> (Vec<RingEvent>, Vec<Error>) {
        self.fill_batch(None);
        (
            self.pending.drain(..).collect(),
            self.errors.drain(..).collect(),
        )
    }

    /// Drains every ring now into one time-ordered batch and hands it out whole (events
    /// already queued by the stream come first); ring errors are logged and kept for
    /// [`RingSet::take_errors`]. Give the vector back with [`RingSet::return_batch`] to
    /// keep its capacity: the cheap path of a synchronous drain loop.
    pub fn drain_batch(&mut self) -> Vec<(u64, RingEvent)> {
        let mut queued: Vec<(u64, RingEvent)> = self.pending.drain(..).map(|e| (0, e)).collect();
        self.fill_into_batch(None);
        let mut batch = std::mem::take(&mut self.batch);
        if !queued.is_empty() {
            queued.append(&mut batch);
            batch = queued;
        }
        batch
    }

    /// Returns a batch of [`RingSet::drain_batch`] (emptied) for reuse.
    pub fn return_batch(&mut self, mut batch: Vec<(u64, RingEvent)>) {
        batch.clear();
        if batch.capacity() > self.batch.capacity() {
            self.batch = batch;
        }
    }

    /// Gives back the RAW buffer of a consumed [`SampleEvent`]: the next samples are
    /// copied into recycled buffers instead of fresh allocations (a drain of millions of
    /// records per second then allocates nothing).
    pub fn recycle(&mut self, raw: Vec<u8>) {
        if self.pool.len() < RAW_POOL_LIMIT && raw.capacity() > 0 {
            self.pool.push(raw);
        }
    }

    /// The merge state, to walk the rings with [`RingSet::merge_begin`],
    /// [`RingSet::merge_next`] and [`RingSet::merge_end`] while `self` stays shared (a
    /// consumer may read the set, or what owns it, for each record).
    pub fn take_merge(&mut self) -> Merge {
        std::mem::take(&mut self.merge)
    }

    /// Starts a walk of every ring, bounded by the heads read now.
    pub fn merge_begin(&self, m: &mut Merge) {
        m.begin(&self.entries, &self.bufs);
    }

    /// The next record of the walk: perf records by time, then ring-buffer records, each
    /// in place.
    pub fn merge_next<'a>(&'a self, m: &'a mut Merge) -> Option<Merged<'a>> {
        m.next(&self.entries, &self.bufs)
    }

    /// Ends the walk: releases what was walked to the kernel, adds the counters, keeps
    /// the ring errors (logged) for [`RingSet::take_errors`], and keeps `m` for the next.
    pub fn merge_end(&mut self, mut m: Merge) {
        self.busy = m.end(&mut self.entries, &mut self.bufs, &mut self.errors);
        self.merge = m;
    }

    /// Drains all rings into `pending`; `ready` flags the rings whose fd woke us.
    /// Returns the number of events added.
    fn fill_batch(&mut self, ready: Option<&[bool]>) -> usize {
        let n = self.fill_into_batch(ready);
        let mut batch = std::mem::take(&mut self.batch);
        self.pending.extend(batch.drain(..).map(|(_, e)| e));
        self.batch = batch;
        n
    }

    /// Drains all rings into `self.batch` (cleared first), time-ordered (the merge of
    /// [`RingSet::merge_next`], each sample copied out into a pooled buffer).
    fn fill_into_batch(&mut self, ready: Option<&[bool]>) -> usize {
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        let mut pool = std::mem::take(&mut self.pool);
        let mut m = self.take_merge();
        self.merge_begin(&mut m);
        while let Some(rec) = self.merge_next(&mut m) {
            match rec {
                Merged::Sample { ring, fields, raw } => {
                    let mut buf = pool.pop().unwrap_or_default();
                    buf.clear();
                    buf.extend_from_slice(raw);
                    batch.push((
                        fields.time.unwrap_or(0),
                        RingEvent::Sample(SampleEvent {
                            ring,
                            fields,
                            raw: buf,
                        }),
                    ));
                }
                Merged::Lost { ring, cpu, lost } => {
                    batch.push((0, RingEvent::Lost { ring, cpu, lost }));
                }
                Merged::Skipped => {}
            }
        }
        for (pos, entry) in self.entries.iter_mut().enumerate() {
            if ready.and_then(|r| r.get(pos)).copied().unwrap_or(false) {
                if m.handed(pos) == 0 {
                    entry.idle_ready += 1;
                    if entry.idle_ready >= IDLE_READY_LIMIT {
                        log::debug!(
                            "perf ring {}: fd keeps polling ready with no data; timer only",
                            entry.index
                        );
                        entry.fd = None;
                    }
                } else {
                    entry.idle_ready = 0;
                }
            }
        }
        self.merge_end(m);
        self.pool = pool;
        let n = batch.len();
        self.batch = batch;
        n
    }

    /// Takes the ring errors met so far (they are also logged).
    pub fn take_errors(&mut self) -> Vec<Error> {
        self.errors.drain(..).collect()
    }
}

impl Stream for RingSet {
    type Item = RingEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<RingEvent>> {
        let this = &mut *self;
        // Bounded: each round either yields, or drains rings that had become ready; a
        // ready-but-empty fd is retired after IDLE_READY_LIMIT rounds.
        for _ in 0..16 {
            if let Some(ev) = this.pending.pop_front() {
                return Poll::Ready(Some(ev));
            }
            let mut ready = vec![false; this.entries.len()];
            let mut any = false;
            for (flag, entry) in ready.iter_mut().zip(&this.entries) {
                if let Some(fd) = &entry.fd {
                    // Ready consumes the readiness; the next call re-arms and registers
                    // the waker, so poll until Pending (at most twice in practice).
                    for _ in 0..4 {
                        match fd.poll_readable(cx) {
                            Poll::Ready(Ok(())) => *flag = true,
                            Poll::Ready(Err(e)) => {
                                log::warn!("polling a perf ring fd: {e}");
                                *flag = true;
                                break;
                            }
                            Poll::Pending => break,
                        }
                    }
                }
                any |= *flag;
            }
            for b in &this.bufs {
                if let Some(fd) = &b.fd {
                    for _ in 0..4 {
                        match fd.poll_readable(cx) {
                            Poll::Ready(Ok(())) => any = true,
                            Poll::Ready(Err(e)) => {
                                log::warn!("polling ring buffer '{}': {e}", b.ring.name());
                                any = true;
                                break;
                            }
                            Poll::Pending => break,
                        }
                    }
                }
            }
            // Drain the timer's ticks the same way so its waker is registered.
            let mut tick = false;
            while let Poll::Ready(Some(_)) = Pin::new(&mut this.timer).poll_next(cx) {
                tick = true;
            }
            if !any && !tick {
                return Poll::Pending;
            }
            this.fill_batch(Some(&ready));
        }
        // Still nothing after many wake-ups: yield to the executor, asking to be polled again.
        cx.waker().wake_by_ref();
        Poll::Pending
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
    use futures_lite::StreamExt;
    use sluice_core::perf::record::{SampleFormat, SampleType, RECORD_LOST, RECORD_SAMPLE};

    fn sample(tid: u32, time: u64) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&RECORD_SAMPLE.to_ne_bytes());
        v.extend_from_slice(&0u16.to_ne_bytes());
        v.extend_from_slice(&24u16.to_ne_bytes());
        v.extend_from_slice(&tid.to_ne_bytes());
        v.extend_from_slice(&tid.to_ne_bytes());
        v.extend_from_slice(&time.to_ne_bytes());
        v
    }

    #[test]
    fn batches_merge_rings_in_time_order() {
        let f = SampleFormat::new(SampleType::TID | SampleType::TIME);
        let mut set = RingSet::new(Duration::from_millis(5));
        let a = set.push_unpolled(PerfRing::anonymous(1, f).unwrap());
        let b = set.push_unpolled(PerfRing::anonymous(1, f).unwrap());
        for t in [1u64, 4, 5, 9] {
            assert!(set.ring_mut(a).unwrap().produce(&sample(0, t)));
        }
        for t in [2u64, 3, 6, 10] {
            assert!(set.ring_mut(b).unwrap().produce(&sample(1, t)));
        }
        let mut lost = Vec::new();
        lost.extend_from_slice(&RECORD_LOST.to_ne_bytes());
        lost.extend_from_slice(&0u16.to_ne_bytes());
        lost.extend_from_slice(&24u16.to_ne_bytes());
        lost.extend_from_slice(&[0; 8]);
        lost.extend_from_slice(&5u64.to_ne_bytes());
        assert!(set.ring_mut(b).unwrap().produce(&lost));
        // Through the stream: the timer drains the unpolled rings.
        let got: Vec<RingEvent> = futures_lite::future::block_on((&mut set).take(9).collect());
        let times: Vec<_> = got
            .iter()
            .map(|e| match e {
                RingEvent::Sample(s) => s.fields.time.unwrap(),
                RingEvent::Lost { lost, .. } => 100 + lost,
            })
            .collect();
        // LOST keeps its place after ring b's sample at time 10.
        assert_eq!(times, [1, 2, 3, 4, 5, 6, 9, 10, 105]);
        assert_eq!(set.lost(), [(None, 0), (None, 5)]);
        assert_eq!(set.stats().records, 9);
    }

    /// A RAW-only sample (`OutputLayout::Raw`): the size word and `tag` padded to 8.
    fn raw_sample(tag: u32) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&RECORD_SAMPLE.to_ne_bytes());
        v.extend_from_slice(&0u16.to_ne_bytes());
        v.extend_from_slice(&16u16.to_ne_bytes());
        v.extend_from_slice(&4u32.to_ne_bytes());
        v.extend_from_slice(&tag.to_ne_bytes());
        v
    }

    /// Runs of one ring (handed out without a scan while ahead of the runner-up), ties to
    /// the ring pushed first, and rings without time drained one after the other first.
    #[test]
    fn merge_runs_ties_and_rings_without_time() {
        let f = SampleFormat::new(SampleType::TID | SampleType::TIME);
        let raw = SampleFormat::new(SampleType::RAW);
        let mut set = RingSet::new(Duration::from_millis(5));
        let rings =
            [f, raw, f, f, raw].map(|f| set.push_unpolled(PerfRing::anonymous(1, f).unwrap()));
        let timed: [(usize, &[u64]); 3] = [(0, &[1, 2, 3, 8]), (2, &[4, 5, 9]), (3, &[4, 6, 7])];
        for (r, times) in timed {
            for &t in times {
                assert!(set
                    .ring_mut(rings[r])
                    .unwrap()
                    .produce(&sample(r as u32, t)));
            }
        }
        for (r, tags) in [(1, [11u32, 12, 13]), (4, [41, 42, 43])] {
            for t in tags {
                assert!(set.ring_mut(rings[r]).unwrap().produce(&raw_sample(t)));
            }
        }
        let mut m = set.take_merge();
        set.merge_begin(&mut m);
        let mut got = Vec::new();
        while let Some(rec) = set.merge_next(&mut m) {
            let Merged::Sample { ring, fields, raw } = rec else {
                panic!("{rec:?}")
            };
            let tag = raw
                .get(..4)
                .map_or(0, |b| u32::from_ne_bytes(b.try_into().unwrap()));
            got.push((ring, fields.time.map_or(u64::from(tag), |t| t)));
        }
        set.merge_end(m);
        assert_eq!(
            got,
            [
                (1, 11),
                (1, 12),
                (1, 13),
                (4, 41),
                (4, 42),
                (4, 43),
                (0, 1),
                (0, 2),
                (0, 3),
                (2, 4),
                (3, 4),
                (2, 5),
                (3, 6),
                (3, 7),
                (0, 8),
                (2, 9)
            ]
        );
    }

    #[test]
    fn ring_buffer_records_follow_the_perf_samples_of_their_batch() {
        let f = SampleFormat::new(SampleType::TID | SampleType::TIME);
        let mut set = RingSet::new(Duration::from_millis(5));
        let page = rustix::param::page_size() as u64;
        let rb = set
            .push_ringbuf(None, RingBuf::anonymous(page).unwrap())
            .unwrap();
        let perf = set.push_unpolled(PerfRing::anonymous(1, f).unwrap());
        assert_eq!((rb, perf), (0, 1));
        let r = set.ringbuf_mut(rb).unwrap();
        r.produce(b"first", false, false).unwrap();
        r.produce(b"dropped", true, false).unwrap();
        let busy = r.produce(b"late", false, true).unwrap();
        assert!(set.ring_mut(perf).unwrap().produce(&sample(3, 7)));
        let (events, errors) = set.drain_now();
        assert!(errors.is_empty());
        let got: Vec<(usize, Vec<u8>, Option<u64>)> = events
            .iter()
            .map(|e| match e {
                RingEvent::Sample(s) => (s.ring, s.raw.clone(), s.fields.time),
                RingEvent::Lost { .. } => panic!("{e:?}"),
            })
            .collect();
        assert_eq!(got, [(1, vec![], Some(7)), (0, b"first".to_vec(), None)]);
        assert!(set.ringbuf_busy(), "stopped at the reserved record");
        set.ringbuf_mut(rb).unwrap().commit(busy).unwrap();
        // Through the stream, the timer drains it.
        let next = futures_lite::future::block_on(set.next()).unwrap();
        let RingEvent::Sample(s) = next else {
            panic!("{next:?}")
        };
        assert_eq!((s.ring, s.raw.as_slice()), (0, &b"late"[..]));
        assert_eq!(s.fields, SampleFields::default());
        assert!(!set.ringbuf_busy());
        let st = set.ringbuf_stats();
        assert_eq!((st.records, st.discarded), (2, 1));
    }

    /// A ring buffer's record goes back to the producer once the next one is asked for,
    /// in the walk: a program can reserve again while the rest is still being handed out.
    #[test]
    fn ring_buffer_room_is_released_record_by_record() {
        let mut set = RingSet::new(Duration::from_millis(5));
        let page = rustix::param::page_size() as u64;
        let rb = set
            .push_ringbuf(None, RingBuf::anonymous(page).unwrap())
            .unwrap();
        let r = set.ringbuf_mut(rb).unwrap();
        let record = [7u8; 1016];
        let mut n = 0;
        while r.produce(&record, false, false).is_some() {
            n += 1;
        }
        assert!(n >= 3, "{n} records fill a page");
        let mut m = set.take_merge();
        set.merge_begin(&mut m);
        assert!(set.merge_next(&mut m).is_some());
        assert!(set.merge_next(&mut m).is_some());
        // The first record's room is the producer's again; the second's is still lent.
        let r = set.ringbuf_mut(rb).unwrap();
        assert!(
            r.produce(&record, false, false).is_some(),
            "room after one record"
        );
        assert!(
            r.produce(&record, false, false).is_none(),
            "only one record's room"
        );
        let mut seen = 2;
        let mut m2 = m;
        while set.merge_next(&mut m2).is_some() {
            seen += 1;
        }
        set.merge_end(m2);
        assert_eq!(
            seen, n,
            "the walk is bounded by the producer position at its start"
        );
    }
}
