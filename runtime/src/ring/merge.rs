//! The k-way merge of a `RingSet`'s rings: one cursor per ring, records viewed in place.
//!
//! A drain is a walk bounded by each ring's head read at its start (`RingSet::merge_begin`);
//! a ring buffer's walk reads its `producer_pos` again when it gets there, up to its size.
//! Each perf ring's cursor holds the record at its position: its header (read once, by
//! [`cursor::step`]) and its merge key, the sample time (read at the format's fixed
//! offset) or, for a record without one (LOST), the time of the ring's record before it;
//! a ring whose samples carry no time (`OutputLayout::Raw`) keeps key 0, so such rings
//! are drained one after the other, by position, before the others.
//! `RingSet::merge_next` hands out the record of least key (ties: the ring pushed
//! first; the keys sit in an array of their own, so the scan costs little per ring),
//! parsed once, borrowed from the mapping (or from the cursor's scratch buffer
//! when it wraps the data area), then the ring buffers' records in push order, in place.
//! `RingSet::merge_end` releases the space walked to the kernel. Nothing is allocated
//! per record: the cursors, and their scratch buffers, are kept from one drain to the next.

use sluice_core::perf::record::{Header, Record, SampleFields, RECORD_LOST, RECORD_SAMPLE};

use super::cursor::{self, Step};
use super::perf_ring::PerfRing;
use super::perf_ring::{cpu_label, Error, RingStats};
use super::ringbuf::{self, RingBuf, RingBufStats};
use std::collections::VecDeque;
use std::os::fd::OwnedFd;

use async_io::Async;

/// One record of a merge, borrowed from its ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Merged<'a> {
    /// A sample of ring `ring` (a ring buffer's record: fields all empty).
    Sample {
        /// Index of the ring in its `RingSet`.
        ring: usize,
        /// The fixed fields; `id` is `PERF_SAMPLE_ID`, else `PERF_SAMPLE_IDENTIFIER`.
        fields: SampleFields,
        /// The `PERF_SAMPLE_RAW` bytes (a ring buffer's record: all of it), in place.
        raw: &'a [u8],
    },
    /// The kernel dropped `lost` records of ring `ring` (CPU `cpu`).
    Lost {
        /// Index of the ring.
        ring: usize,
        /// CPU of the ring, when given.
        cpu: Option<u32>,
        /// How many records.
        lost: u64,
    },
    /// A record to skip: its body did not fit its format (counted, logged), or it is of
    /// a type no consumer needs (THROTTLE ...).
    Skipped,
}

pub(crate) struct Entry {
    /// The ring's index in the set (push order over perf rings and ring buffers).
    pub(crate) index: usize,
    pub(crate) ring: PerfRing,
    pub(crate) fd: Option<Async<OwnedFd>>,
    pub(crate) idle_ready: u32,
}

/// A BPF ring buffer of the set: its records are samples without fields.
pub(crate) struct BufEntry {
    pub(crate) index: usize,
    pub(crate) ring: RingBuf,
    pub(crate) fd: Option<Async<OwnedFd>>,
}

/// A perf ring's place in a merge.
#[derive(Debug, Default)]
struct PerfCursor {
    pos: u64,
    head: u64,
    /// The record at `pos`, when there is one: its header and whether it wrapped.
    at: Option<(Header, bool)>,
    key: u64,
    last_time: u64,
    /// The `lost` count of the LOST record at `pos`.
    lost: u64,
    scratch: Vec<u8>,
    delta: RingStats,
    /// Records handed out by this walk.
    handed: u64,
    error: Option<sluice_core::Error>,
}

impl PerfCursor {
    fn key_or_max(&self) -> u64 {
        if self.at.is_some() {
            self.key
        } else {
            u64::MAX
        }
    }
}

/// A ring buffer's place in a merge.
#[derive(Debug, Default)]
struct BufCursor {
    /// The consumer position at the start of the walk.
    start: u64,
    cons: u64,
    prod: u64,
    done: bool,
    busy: bool,
    malformed: Option<&'static str>,
    delta: RingBufStats,
}

/// The cursors of a `RingSet`'s merge, kept for their capacity (take it with
/// `RingSet::take_merge`, give it back with `RingSet::merge_end`).
#[derive(Debug, Default)]
pub struct Merge {
    perf: Vec<PerfCursor>,
    /// Each perf cursor's key, `u64::MAX` when it has no record: the scan for the least
    /// reads these 8 bytes a ring, not the cursors.
    keys: Vec<u64>,
    bufs: Vec<BufCursor>,
    /// The perf ring whose record was handed out last: advanced at the next call.
    advance: Option<usize>,
    /// The ring buffer walked now.
    buf: usize,
    /// The record handed out last was malformed.
    bad: bool,
}

impl Merge {
    /// Records handed out by ring `pos` (push order among perf rings) in this walk.
    pub(super) fn handed(&self, pos: usize) -> u64 {
        self.perf.get(pos).map_or(0, |c| c.handed)
    }
}

impl Merge {
    /// Starts a walk of every ring, bounded by the heads read now.
    pub(super) fn begin(&mut self, entries: &[Entry], bufs: &[BufEntry]) {
        let m = self;
        let n = entries.len();
        m.perf.resize_with(n, PerfCursor::default);
        m.advance = None;
        m.buf = 0;
        for (e, c) in entries.iter().zip(&mut m.perf) {
            let map = e.ring.mapping();
            c.pos = e.ring.tail_pos();
            c.head = map.head();
            c.delta = RingStats::default();
            c.handed = 0;
            c.error = None;
            c.at = None;
            if c.head.wrapping_sub(c.pos) > map.data_size() as u64 {
                c.error = Some(sluice_core::Error::Truncated {
                    what: "perf ring (data_head more than a ring ahead of data_tail)",
                    offset: c.pos,
                    len: c.head.wrapping_sub(c.pos),
                });
                c.delta.resyncs += 1;
                c.pos = c.head;
                continue;
            }
            peek(e, c);
        }
        m.keys.clear();
        m.keys.extend(m.perf.iter().map(PerfCursor::key_or_max));
        m.bufs.resize_with(bufs.len(), BufCursor::default);
        for (b, c) in bufs.iter().zip(&mut m.bufs) {
            let cons = b.ring.consumer_pos();
            *c = BufCursor {
                start: cons,
                cons,
                prod: b.ring.producer_pos(),
                ..BufCursor::default()
            };
        }
    }

    /// The next record of the walk: perf records by time, then ring-buffer records.
    pub(super) fn next<'a>(
        &'a mut self,
        entries: &'a [Entry],
        bufs: &'a [BufEntry],
    ) -> Option<Merged<'a>> {
        let m = self;
        if let Some(i) = m.advance.take() {
            if let (Some(e), Some(c)) = (entries.get(i), m.perf.get_mut(i)) {
                if let Some((h, _)) = c.at {
                    c.pos = c.pos.wrapping_add(u64::from(h.size));
                }
                if std::mem::take(&mut m.bad) {
                    c.delta.records -= 1;
                    c.delta.malformed += 1;
                }
                peek(e, c);
                if let Some(k) = m.keys.get_mut(i) {
                    *k = c.key_or_max();
                }
            }
        }
        // The least key, first of equals; `u64::MAX` (a ring without a record, or a time
        // no clock reaches) is checked against its cursor.
        let (mut best, mut least) = (0, u64::MAX);
        for (i, &k) in m.keys.iter().enumerate() {
            if k < least {
                (best, least) = (i, k);
            }
        }
        let best = if least < u64::MAX {
            Some(best)
        } else {
            m.perf.iter().position(|c| c.at.is_some())
        };
        if let Some(i) = best {
            m.advance = Some(i);
            let (e, c) = (entries.get(i)?, m.perf.get_mut(i)?);
            let (h, wrapped) = c.at?;
            c.delta.records += 1;
            c.delta.wrapped += u64::from(wrapped);
            if h.kind == RECORD_LOST {
                c.delta.lost = c.delta.lost.saturating_add(c.lost);
            }
            let len = usize::from(h.size);
            let map = e.ring.mapping();
            let bytes = if wrapped {
                c.scratch.get(..len)
            } else {
                let mask = map.data_size() as u64 - 1;
                map.span((c.pos & mask) as usize, len)
            };
            let c = &*c;
            let parsed = bytes.map(|b| Record::parse_with(h, b, &e.ring.format(), c.pos));
            return Some(match parsed {
                Some(Ok((Record::Sample(s), _))) => {
                    let mut fields = s.fields;
                    fields.id = fields.id.or(fields.identifier);
                    Merged::Sample {
                        ring: e.index,
                        fields,
                        raw: s.raw.unwrap_or_default(),
                    }
                }
                Some(Ok((Record::Lost { lost, .. }, _))) => Merged::Lost {
                    ring: e.index,
                    cpu: e.ring.cpu(),
                    lost,
                },
                Some(Ok(_)) => Merged::Skipped,
                Some(Err(err)) => {
                    m.bad = true;
                    log::warn!(
                        "perf ring{}: skipped a malformed record: {err}",
                        cpu_label(e.ring.cpu())
                    );
                    Merged::Skipped
                }
                None => {
                    m.bad = true;
                    Merged::Skipped
                }
            });
        }
        // The ring buffers, each to its end (or its first BUSY record).
        loop {
            let i = m.buf;
            let (b, c) = (bufs.get(i)?, m.bufs.get_mut(i)?);
            // The record handed out last is done with (its borrow ended): its room goes
            // back to the producer now, not at the end of the walk, so programs can
            // reserve while the records before are printed (as libbpf releases each).
            b.ring.release(c.cons);
            if c.done {
                m.buf += 1;
                continue;
            }
            match b.ring.step(c.cons, c.prod) {
                ringbuf::Step::End => {
                    // Records committed since the walk began are read in it too (as
                    // libbpf's ringbuf_process_ring does), up to a ring's size walked:
                    // otherwise each would cost a round of poll(2), which returns at
                    // once while data is pending, and the walk ends only once caught up.
                    let prod = b.ring.producer_pos();
                    if prod == c.prod || c.cons.wrapping_sub(c.start) >= b.ring.size() as u64 {
                        c.done = true;
                    }
                    c.prod = prod;
                }
                ringbuf::Step::Busy => {
                    c.busy = true;
                    c.done = true;
                }
                ringbuf::Step::Malformed(why) => {
                    c.malformed = Some(why);
                    c.done = true;
                }
                ringbuf::Step::Discarded(total) => {
                    c.delta.discarded += 1;
                    c.cons = c.cons.wrapping_add(total);
                }
                ringbuf::Step::Record(bytes, total, wrapped) => {
                    c.delta.records += 1;
                    c.delta.wrapped += u64::from(wrapped);
                    c.cons = c.cons.wrapping_add(total);
                    return Some(Merged::Sample {
                        ring: b.index,
                        fields: SampleFields::default(),
                        raw: bytes,
                    });
                }
            }
        }
    }

    /// Ends the walk: releases what was walked to the kernel, adds the counters, keeps
    /// the ring errors (logged) in `errors`. Returns whether a ring buffer stopped at a
    /// BUSY record.
    pub(super) fn end(
        &mut self,
        entries: &mut [Entry],
        bufs: &mut [BufEntry],
        errors: &mut VecDeque<Error>,
    ) -> bool {
        let m = self;
        if let Some(i) = m.advance.take() {
            if let Some(c) = m.perf.get_mut(i) {
                if let Some((h, _)) = c.at.take() {
                    c.pos = c.pos.wrapping_add(u64::from(h.size));
                }
                if std::mem::take(&mut m.bad) {
                    c.delta.records -= 1;
                    c.delta.malformed += 1;
                }
            }
        }
        for (e, c) in entries.iter_mut().zip(&mut m.perf) {
            e.ring.finish(c.pos, &c.delta);
            if let Some(source) = c.error.take() {
                let err = Error::Record {
                    cpu: e.ring.cpu(),
                    source,
                };
                log::warn!("{err}");
                errors.push_back(err);
            }
        }
        let mut busy = false;
        for (b, c) in bufs.iter_mut().zip(&m.bufs) {
            b.ring.finish(c.cons, c.prod, c.malformed, &c.delta);
            busy |= c.busy;
        }
        busy
    }
}

/// How many records ahead a header is fetched before its read, at the stride of the record
/// just read (a program's records are mostly of one size): each header of a large record
/// is on a line of its own, just written by another CPU, a miss the read would wait for.
const PREFETCH_AHEAD: u64 = 6;

/// Prefetches the header lines of the record [`PREFETCH_AHEAD`] records after `pos`,
/// guessing they are all `size` long, when it is before `head`. Once per record read:
/// the others are on their way already (prefetching all of them again filled the CPU's
/// fill buffers and stalled). Small records share lines the CPU's own prefetcher follows.
fn prefetch_ahead(map: &crate::sys::ring_map::Mapping, pos: u64, head: u64, size: u64) {
    let at = pos.wrapping_add(PREFETCH_AHEAD * size);
    if size >= 256 && at.wrapping_sub(pos) < head.wrapping_sub(pos) {
        // The header's line and the next: the sample's fields may cross into it.
        map.prefetch(at as usize);
        map.prefetch((at as usize).wrapping_add(64));
    }
}

/// Reads the record at the cursor's position: its header, and its key. A malformed
/// header ends the ring's walk (skipped to its head, the error kept).
fn peek(e: &Entry, c: &mut PerfCursor) {
    let map = e.ring.mapping();
    match cursor::step(map, &mut c.scratch, c.pos, c.head) {
        Ok(Step::Empty) => c.at = None,
        Ok(Step::Record(bytes, h, wrapped)) => {
            c.at = Some((h, wrapped));
            prefetch_ahead(map, c.pos, c.head, u64::from(h.size));
            if h.kind == RECORD_SAMPLE {
                let time = e.ring.format().time_offset().and_then(|o| {
                    let b = bytes.get(o..o + 8)?;
                    Some(u64::from_ne_bytes(b.try_into().ok()?))
                });
                c.last_time = time.unwrap_or(c.last_time);
            }
            c.key = c.last_time;
            if h.kind == RECORD_LOST {
                // header, id, lost
                c.lost = bytes
                    .get(16..24)
                    .and_then(|b| b.try_into().ok())
                    .map_or(0, u64::from_ne_bytes);
            }
            if h.kind == RECORD_SAMPLE || h.kind == RECORD_LOST {
                c.handed += 1;
            }
        }
        Err(err) => {
            c.at = None;
            c.delta.resyncs += 1;
            c.pos = c.head;
            c.error = Some(err);
        }
    }
}
