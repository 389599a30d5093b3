//! [`RingBuf`]: the reader of a BPF ring buffer (`BPF_MAP_TYPE_RINGBUF`, Linux 5.8).
//!
//! One buffer shared by every CPU (unlike a perf event array's ring per CPU), written by
//! `bpf_ringbuf_output` / `bpf_ringbuf_reserve` + `submit`/`discard`. Each record is an
//! 8-byte header — a `u32` length whose bit 31 is BUSY (reserved, not yet committed) and
//! bit 30 DISCARD, then a `u32` page offset the kernel uses for itself — and the payload,
//! the whole rounded up to 8 bytes. Records carry nothing else: no pid, no CPU, no time.
//!
//! The reader walks `[consumer_pos, producer_pos)`: a BUSY record stops the walk (the
//! records after it may be committed, but the consumer position can only move past a
//! committed one, as in the kernel and libbpf); a DISCARD record is skipped and counted.
//! The mapping and its memory orderings are `sys::ringbuf_map`'s (see its module doc):
//! the data is mapped twice, so a record that wraps the end reads as one slice, in place.
//!
//! Wake-ups: the map fd polls readable when the kernel wakes it, which by default
//! (`flags` 0 to `bpf_ringbuf_output`/`submit`) happens when a record is committed while
//! the reader has caught up with it (`consumer_pos` at the record): draining to the end
//! at every wake-up is what keeps the wake-ups coming.

use std::fmt;
use std::os::fd::AsFd;

use crate::sys::ringbuf_map::{MapError, RingbufMapping};

/// `BPF_RINGBUF_BUSY_BIT`: the record is reserved and not committed yet.
#[doc(alias = "BPF_RINGBUF_BUSY_BIT")]
pub const RINGBUF_BUSY: u32 = 1 << 31;
/// `BPF_RINGBUF_DISCARD_BIT`: the record was discarded by its program.
#[doc(alias = "BPF_RINGBUF_DISCARD_BIT")]
pub const RINGBUF_DISCARD: u32 = 1 << 30;
/// `BPF_RINGBUF_HDR_SZ`: the header before each record's payload.
#[doc(alias = "BPF_RINGBUF_HDR_SZ")]
pub const RINGBUF_HEADER: u64 = 8;

/// Errors of a ring buffer.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// `mmap(2)` of the map failed.
    Map {
        /// The map's name.
        map: String,
        /// The errno.
        errno: rustix::io::Errno,
    },
    /// The map's size (`max_entries`) is not a power of two of at least a page.
    Size {
        /// The map's name.
        map: String,
        /// The size found.
        size: u64,
    },
    /// Registering the map fd with the async reactor failed.
    Reactor {
        /// The map's name.
        map: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Map { map, errno } => write!(f, "mmap of ring buffer '{map}': {errno}"),
            Error::Size { map, size } => write!(
                f,
                "ring buffer '{map}': size {size} is not a power of two of at least a page"
            ),
            Error::Reactor { map, source } => {
                write!(f, "ring buffer '{map}': cannot poll its fd: {source}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Map { errno, .. } => Some(errno),
            Error::Reactor { source, .. } => Some(source),
            Error::Size { .. } => None,
        }
    }
}

/// Counters of one ring buffer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingBufStats {
    /// Records handed out.
    pub records: u64,
    /// Records skipped because their program discarded them.
    pub discarded: u64,
    /// Records that passed the end of the data area (read in place from the second copy).
    pub wrapped: u64,
    /// Headers that did not fit `[consumer_pos, producer_pos)`: the reader skipped to
    /// `producer_pos` (a kernel bug or a foreign writer; never seen in practice).
    pub malformed: u64,
}

/// How a drain ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drained {
    /// Records handed out.
    pub records: usize,
    /// The walk stopped at a record still BUSY (reserved, not committed): more will come
    /// once its program commits it.
    pub busy: bool,
}

/// The mapped ring buffer of one `BPF_MAP_TYPE_RINGBUF` map.
#[derive(Debug)]
pub struct RingBuf {
    map: RingbufMapping,
    name: String,
    /// Our copy of `consumer_pos` (only we write it).
    cons: u64,
    stats: RingBufStats,
}

/// What a walk of a ring buffer finds at a position.
pub(super) enum Step<'a> {
    /// Nothing more before `producer_pos`.
    End,
    /// A record still reserved by its program: the walk stops here.
    Busy,
    /// A header that does not fit: the reader skips to `producer_pos`.
    Malformed(&'static str),
    /// A discarded record of this total size (header and padding included).
    Discarded(u64),
    /// A committed record in place, its total size, and whether it wraps the data area.
    Record(&'a [u8], u64, bool),
}

impl RingBuf {
    /// Maps the ring buffer map `fd` named `name` (for messages), of `size` data bytes
    /// (its `max_entries`).
    ///
    /// The fd may be closed after this: the mapping keeps the map alive.
    ///
    /// # Errors
    /// [`Error::Size`] for a size the kernel would not have made, [`Error::Map`] when
    /// `mmap(2)` fails.
    pub fn map(fd: impl AsFd, name: &str, size: u64) -> Result<Self, Error> {
        let map = RingbufMapping::map_fd(fd.as_fd(), size).map_err(|e| map_error(e, name))?;
        Ok(Self::with(map, name))
    }

    /// A ring buffer in anonymous memory with no kernel behind it: [`RingBuf::produce`]
    /// plays the kernel's part. For tests and benchmarks of the reader.
    ///
    /// # Errors
    /// As [`RingBuf::map`].
    pub fn anonymous(size: u64) -> Result<Self, Error> {
        let map = RingbufMapping::anonymous(size).map_err(|e| map_error(e, "anonymous"))?;
        Ok(Self::with(map, "anonymous"))
    }

    fn with(map: RingbufMapping, name: &str) -> Self {
        let cons = map.consumer_pos();
        RingBuf {
            map,
            name: name.to_owned(),
            cons,
            stats: RingBufStats::default(),
        }
    }

    /// The map's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Size of the data area in bytes.
    #[must_use]
    pub fn size(&self) -> usize {
        self.map.size()
    }

    /// Counters so far.
    #[must_use]
    pub fn stats(&self) -> RingBufStats {
        self.stats
    }

    /// Bytes the producer has published past our consumer position.
    #[must_use]
    pub fn pending_bytes(&self) -> u64 {
        self.map.producer_pos().wrapping_sub(self.cons)
    }

    /// Hands every committed record up to `producer_pos` (read once, at entry: the loop is
    /// bounded by it) to `f`, in ring order, releasing each one's space to the kernel after
    /// `f` returns. Discarded records are skipped; the walk stops at a BUSY one.
    ///
    /// A header that does not fit (its record past `producer_pos`, or `producer_pos` more
    /// than the size ahead) is counted in [`RingBufStats::malformed`] and logged, and the
    /// reader skips to `producer_pos`.
    pub fn drain<F: FnMut(&[u8])>(&mut self, mut f: F) -> Drained {
        let prod = self.map.producer_pos();
        let mut out = Drained::default();
        loop {
            match self.step(self.cons, prod) {
                Step::End => break,
                Step::Busy => {
                    out.busy = true;
                    break;
                }
                Step::Malformed(why) => {
                    self.resync(prod, why);
                    break;
                }
                Step::Discarded(total) => {
                    self.stats.discarded += 1;
                    self.cons = self.cons.wrapping_add(total);
                }
                Step::Record(bytes, total, wrapped) => {
                    f(bytes);
                    self.stats.wrapped += u64::from(wrapped);
                    self.stats.records += 1;
                    out.records += 1;
                    self.cons = self.cons.wrapping_add(total);
                }
            }
            self.map.set_consumer_pos(self.cons);
        }
        out
    }

    /// `producer_pos` now (read once per walk: the walk is bounded by it).
    pub(super) fn producer_pos(&self) -> u64 {
        self.map.producer_pos()
    }

    /// Our consumer position.
    pub(super) fn consumer_pos(&self) -> u64 {
        self.cons
    }

    /// What is at `cons`, for a walk bounded by `prod`; the record is viewed in place
    /// (the data area is mapped twice, so a wrapping record is contiguous).
    pub(super) fn step(&self, cons: u64, prod: u64) -> Step<'_> {
        let size = self.map.size() as u64;
        if prod.wrapping_sub(cons) > size {
            return Step::Malformed("producer_pos more than the size ahead");
        }
        if cons == prod {
            return Step::End;
        }
        let hdr = self.map.header(cons);
        if hdr & RINGBUF_BUSY != 0 {
            return Step::Busy;
        }
        let len = u64::from(hdr & !(RINGBUF_BUSY | RINGBUF_DISCARD));
        // round_up(len + 8, 8), as the kernel reserves it.
        let total = (len + RINGBUF_HEADER + 7) & !7;
        if total > prod.wrapping_sub(cons) {
            return Step::Malformed("record past producer_pos");
        }
        let at = cons.wrapping_add(RINGBUF_HEADER);
        if hdr & RINGBUF_DISCARD != 0 {
            return Step::Discarded(total);
        }
        match self.map.bytes(at, len as usize) {
            Some(bytes) => Step::Record(bytes, total, (at & (size - 1)) + len > size),
            None => Step::Discarded(total),
        }
    }

    /// Gives the room before `cons` back to the producer, in a merge's walk (whose
    /// [`RingBuf::finish`] sets our copy).
    pub(super) fn release(&self, cons: u64) {
        self.map.set_consumer_pos(cons);
    }

    /// Ends a merge's walk: the consumer position goes to `cons` (or, after a malformed
    /// header, to `prod`, logged and counted), and the walk's counters are added.
    pub(super) fn finish(
        &mut self,
        cons: u64,
        prod: u64,
        malformed: Option<&str>,
        delta: &RingBufStats,
    ) {
        self.cons = cons;
        self.map.set_consumer_pos(cons);
        let s = &mut self.stats;
        s.records += delta.records;
        s.discarded += delta.discarded;
        s.wrapped += delta.wrapped;
        if let Some(why) = malformed {
            self.resync(prod, why);
        }
    }

    fn resync(&mut self, prod: u64, why: &str) {
        log::warn!(
            "ring buffer '{}': {why} (consumer {}, producer {prod}); skipped to producer_pos",
            self.name,
            self.cons
        );
        self.stats.malformed += 1;
        self.cons = prod;
        self.map.set_consumer_pos(prod);
    }

    /// Plays the kernel for a ring made by [`RingBuf::anonymous`]: reserves a record of
    /// `payload.len()` bytes at `producer_pos` and commits it (`discard`: as discarded),
    /// or leaves it BUSY with `busy`. Returns the record's position, `None` (writing
    /// nothing) when the space not yet consumed is too small or the ring is not
    /// anonymous.
    pub fn produce(&mut self, payload: &[u8], discard: bool, busy: bool) -> Option<u64> {
        let prod = self.map.producer_pos();
        let len = u32::try_from(payload.len()).ok()?;
        let total = (u64::from(len) + RINGBUF_HEADER + 7) & !7;
        let used = prod.wrapping_sub(self.map.consumer_pos());
        if total.checked_add(used)? > self.map.size() as u64 {
            return None;
        }
        let flags = if busy {
            RINGBUF_BUSY
        } else if discard {
            RINGBUF_DISCARD
        } else {
            0
        };
        let mut hdr = [0u8; 8];
        hdr.get_mut(..4)?
            .copy_from_slice(&(len | flags).to_ne_bytes());
        self.map
            .write(prod.wrapping_add(RINGBUF_HEADER), payload, None)?;
        self.map.write(prod, &hdr, Some(prod.wrapping_add(total)))?;
        Some(prod)
    }

    /// Commits a record left BUSY by [`RingBuf::produce`] at `pos` (anonymous rings only).
    pub fn commit(&mut self, pos: u64) -> Option<()> {
        let hdr = self.map.header(pos) & !RINGBUF_BUSY;
        self.map.write(pos, &hdr.to_ne_bytes(), None)
    }
}

fn map_error(e: MapError, name: &str) -> Error {
    match e {
        MapError::Errno(errno) => Error::Map {
            map: name.to_owned(),
            errno,
        },
        MapError::Size(size) => Error::Size {
            map: name.to_owned(),
            size,
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

    fn page() -> u64 {
        rustix::param::page_size() as u64
    }

    fn collect(rb: &mut RingBuf) -> (Vec<Vec<u8>>, Drained) {
        let mut got = Vec::new();
        let d = rb.drain(|b| got.push(b.to_vec()));
        (got, d)
    }

    #[test]
    fn records_in_order_discarded_skipped() {
        let mut rb = RingBuf::anonymous(page()).unwrap();
        rb.produce(b"one", false, false).unwrap();
        rb.produce(b"two!", true, false).unwrap();
        rb.produce(&[7; 17], false, false).unwrap();
        let (got, d) = collect(&mut rb);
        assert_eq!(got, vec![b"one".to_vec(), vec![7; 17]]);
        assert_eq!(
            d,
            Drained {
                records: 2,
                busy: false
            }
        );
        assert_eq!(rb.stats().discarded, 1);
        assert_eq!(rb.pending_bytes(), 0);
        // Positions move by round_up(len + 8, 8): 16 + 16 + 32.
        assert_eq!(rb.map.consumer_pos(), 64);
    }

    #[test]
    fn busy_record_stops_the_walk_until_committed() {
        let mut rb = RingBuf::anonymous(page()).unwrap();
        rb.produce(b"a", false, false).unwrap();
        let busy = rb.produce(b"b", false, true).unwrap();
        rb.produce(b"c", false, false).unwrap();
        let (got, d) = collect(&mut rb);
        assert_eq!(got, vec![b"a".to_vec()]);
        assert!(d.busy);
        let (got, _) = collect(&mut rb);
        assert!(got.is_empty());
        rb.commit(busy).unwrap();
        let (got, d) = collect(&mut rb);
        assert_eq!(got, vec![b"b".to_vec(), b"c".to_vec()]);
        assert!(!d.busy);
    }

    #[test]
    fn a_record_across_the_end_reads_whole() {
        let size = page();
        let mut rb = RingBuf::anonymous(size).unwrap();
        let big: Vec<u8> = (0..(size as usize / 2 + 100)).map(|i| i as u8).collect();
        let mut seen = 0;
        for round in 0..6u8 {
            let mut p = big.clone();
            p[0] = round;
            rb.produce(&p, false, false).unwrap();
            let (got, _) = collect(&mut rb);
            assert_eq!(got, vec![p]);
            seen += 1;
        }
        assert_eq!(seen, 6);
        assert!(rb.stats().wrapped >= 2, "{:?}", rb.stats());
    }

    #[test]
    fn full_ring_refuses_and_hostile_positions_resync() {
        let size = page();
        let mut rb = RingBuf::anonymous(size).unwrap();
        let n = (0..)
            .take_while(|_| rb.produce(&[1; 56], false, false).is_some())
            .count();
        assert_eq!(n as u64, size / 64);
        let (got, _) = collect(&mut rb);
        assert_eq!(got.len(), n);
        // A header claiming more than was published.
        let pos = rb.map.producer_pos();
        rb.map
            .write(pos, &(4000u32).to_ne_bytes(), Some(pos + 16))
            .unwrap();
        let (got, _) = collect(&mut rb);
        assert!(got.is_empty());
        assert_eq!(rb.stats().malformed, 1);
        // producer_pos far ahead.
        let pos = rb.map.producer_pos();
        rb.map.write(pos, &[0; 8], Some(pos + 10 * size)).unwrap();
        let (got, _) = collect(&mut rb);
        assert!(got.is_empty());
        assert_eq!(rb.stats().malformed, 2);
        assert_eq!(rb.pending_bytes(), 0);
        assert!(RingBuf::anonymous(size + 8).is_err());
    }
}
