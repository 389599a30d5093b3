//! Records of a perf ring buffer, viewed in place.
//!
//! Every record starts with `struct perf_event_header { u32 type; u16 misc; u16 size; }`
//! (`include/uapi/linux/perf_event.h`), `size` counting the header. The body of a
//! `PERF_RECORD_SAMPLE` is a sequence of optional fields whose presence is given by the
//! event's `sample_type` bitmask, always in the kernel's fixed order; [`SampleFormat`]
//! carries that mask (and `read_format`, which sizes the `READ` field) so [`Record::parse`]
//! can walk it.
//!
//! The ring is filled by the kernel, but its contents are untrusted here all the same: a
//! user-space writer with the mapping can scribble on it, and a reader that computed its
//! position wrong reads garbage. So every length is checked against the bytes given, a
//! header whose `size` is below 8 or beyond the bytes left is an error naming its offset,
//! and nothing here panics or reads out of bounds. Fields are native-endian, as the kernel
//! writes them.

use crate::error::{Error, Result};

/// Size of `struct perf_event_header`.
pub const HEADER_SIZE: usize = 8;

/// `PERF_RECORD_LOST`: the kernel dropped records because the ring was full.
#[doc(alias = "PERF_RECORD_LOST")]
pub const RECORD_LOST: u32 = 2;
/// `PERF_RECORD_THROTTLE`: sampling was throttled for the event.
#[doc(alias = "PERF_RECORD_THROTTLE")]
pub const RECORD_THROTTLE: u32 = 5;
/// `PERF_RECORD_UNTHROTTLE`: sampling resumed.
#[doc(alias = "PERF_RECORD_UNTHROTTLE")]
pub const RECORD_UNTHROTTLE: u32 = 6;
/// `PERF_RECORD_SAMPLE`: one sample, laid out by `sample_type`.
#[doc(alias = "PERF_RECORD_SAMPLE")]
pub const RECORD_SAMPLE: u32 = 9;
/// `PERF_RECORD_LOST_SAMPLES`: samples dropped before reaching the ring (e.g. by BPF).
#[doc(alias = "PERF_RECORD_LOST_SAMPLES")]
pub const RECORD_LOST_SAMPLES: u32 = 13;

/// The `sample_type` bitmask of a perf event (`enum perf_event_sample_format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SampleType(pub u64);

impl SampleType {
    /// `PERF_SAMPLE_IP`: instruction pointer.
    pub const IP: Self = Self(1 << 0);
    /// `PERF_SAMPLE_TID`: `u32 pid, tid`.
    pub const TID: Self = Self(1 << 1);
    /// `PERF_SAMPLE_TIME`: `u64` timestamp (perf clock, ns).
    pub const TIME: Self = Self(1 << 2);
    /// `PERF_SAMPLE_ADDR`: data address.
    pub const ADDR: Self = Self(1 << 3);
    /// `PERF_SAMPLE_READ`: counter values, laid out by `read_format`.
    pub const READ: Self = Self(1 << 4);
    /// `PERF_SAMPLE_CALLCHAIN`: `u64 nr, ips[nr]`.
    pub const CALLCHAIN: Self = Self(1 << 5);
    /// `PERF_SAMPLE_ID`: event id.
    pub const ID: Self = Self(1 << 6);
    /// `PERF_SAMPLE_CPU`: `u32 cpu, res`.
    pub const CPU: Self = Self(1 << 7);
    /// `PERF_SAMPLE_PERIOD`: sample period.
    pub const PERIOD: Self = Self(1 << 8);
    /// `PERF_SAMPLE_STREAM_ID`: id of the event that opened the stream.
    pub const STREAM_ID: Self = Self(1 << 9);
    /// `PERF_SAMPLE_RAW`: `u32 size, u8 data[size]` (tracepoint data, `bpf_perf_event_output`).
    pub const RAW: Self = Self(1 << 10);
    /// `PERF_SAMPLE_IDENTIFIER`: event id, first in the record.
    pub const IDENTIFIER: Self = Self(1 << 16);

    /// Whether every bit of `other` is set.
    #[must_use]
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for SampleType {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// `read_format` bits that size the `PERF_SAMPLE_READ` field.
pub mod read_format {
    /// `PERF_FORMAT_TOTAL_TIME_ENABLED`.
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    /// `PERF_FORMAT_TOTAL_TIME_RUNNING`.
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    /// `PERF_FORMAT_ID`.
    pub const ID: u64 = 1 << 2;
    /// `PERF_FORMAT_GROUP`.
    pub const GROUP: u64 = 1 << 3;
    /// `PERF_FORMAT_LOST`.
    pub const LOST: u64 = 1 << 4;
}

/// What the records of one perf event look like: its `sample_type` and `read_format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SampleFormat {
    /// `perf_event_attr.sample_type`.
    pub sample_type: SampleType,
    /// `perf_event_attr.read_format` (only used when `sample_type` has `READ`).
    pub read_format: u64,
}

impl SampleFormat {
    /// A format with `sample_type` and no `read_format`.
    #[must_use]
    pub const fn new(sample_type: SampleType) -> Self {
        Self {
            sample_type,
            read_format: 0,
        }
    }

    /// Where `PERF_SAMPLE_TIME` is in a sample record (from the record's start, header
    /// included), when the format has it: after IDENTIFIER, IP and TID, each fixed-size.
    #[must_use]
    pub const fn time_offset(&self) -> Option<usize> {
        let t = self.sample_type;
        if !t.contains(SampleType::TIME) {
            return None;
        }
        let mut off = HEADER_SIZE;
        if t.contains(SampleType::IDENTIFIER) {
            off += 8;
        }
        if t.contains(SampleType::IP) {
            off += 8;
        }
        if t.contains(SampleType::TID) {
            off += 8;
        }
        Some(off)
    }
}

/// `struct perf_event_header`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Header {
    /// Record type (`PERF_RECORD_*`).
    pub kind: u32,
    /// `misc` flags (CPU mode, ...).
    pub misc: u16,
    /// Size of the whole record, header included.
    pub size: u16,
}

impl Header {
    /// Reads the header at the start of `bytes`; `offset` is where `bytes` starts in the
    /// stream, used in errors.
    ///
    /// # Errors
    /// [`Error::Truncated`] when fewer than 8 bytes are given, or when the header's own
    /// `size` is below 8 (such a record could never be stepped over).
    pub fn parse(bytes: &[u8], offset: u64) -> Result<Self> {
        let mut r = Reader {
            bytes,
            pos: 0,
            base: offset,
        };
        let kind = r.u32("perf_event_header")?;
        let misc = r.u16("perf_event_header")?;
        let size = r.u16("perf_event_header")?;
        if usize::from(size) < HEADER_SIZE {
            return Err(Error::Truncated {
                what: "perf record whose header size is below 8",
                offset,
                len: HEADER_SIZE as u64,
            });
        }
        Ok(Header { kind, misc, size })
    }
}

/// The `u64` instruction pointers of a `PERF_SAMPLE_CALLCHAIN`, viewed in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Callchain<'a> {
    bytes: &'a [u8],
}

impl<'a> Callchain<'a> {
    /// Number of entries.
    #[must_use]
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    /// Whether there is no entry.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The entries (including the kernel's `PERF_CONTEXT_*` markers).
    pub fn iter(&self) -> impl Iterator<Item = u64> + 'a {
        self.bytes.chunks_exact(8).map(ne_u64)
    }
}

/// The fixed-size fields of a `PERF_RECORD_SAMPLE`: each is `Some` exactly when its
/// `sample_type` bit was set. [`Sample`] embeds them beside the borrowed variable-size
/// fields; an owner of a copied-out sample can embed them the same way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleFields {
    /// `misc` of the header.
    pub misc: u16,
    /// `PERF_SAMPLE_IDENTIFIER`.
    pub identifier: Option<u64>,
    /// `PERF_SAMPLE_IP`.
    pub ip: Option<u64>,
    /// `PERF_SAMPLE_TID`: process id.
    pub pid: Option<u32>,
    /// `PERF_SAMPLE_TID`: thread id.
    pub tid: Option<u32>,
    /// `PERF_SAMPLE_TIME`.
    pub time: Option<u64>,
    /// `PERF_SAMPLE_ADDR`.
    pub addr: Option<u64>,
    /// `PERF_SAMPLE_ID`.
    pub id: Option<u64>,
    /// `PERF_SAMPLE_STREAM_ID`.
    pub stream_id: Option<u64>,
    /// `PERF_SAMPLE_CPU`.
    pub cpu: Option<u32>,
    /// `PERF_SAMPLE_PERIOD`.
    pub period: Option<u64>,
}

/// A decoded `PERF_RECORD_SAMPLE`: each field is `Some` exactly when its `sample_type` bit
/// was set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample<'a> {
    /// The fixed-size fields.
    pub fields: SampleFields,
    /// `PERF_SAMPLE_READ`, undecoded (its layout follows `read_format`).
    pub read: Option<&'a [u8]>,
    /// `PERF_SAMPLE_CALLCHAIN`.
    pub callchain: Option<Callchain<'a>>,
    /// `PERF_SAMPLE_RAW`: the `size` bytes after the `u32 size` (the record's padding to
    /// 8 bytes is not included).
    pub raw: Option<&'a [u8]>,
}

/// One record of a perf ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record<'a> {
    /// `PERF_RECORD_SAMPLE`.
    Sample(Sample<'a>),
    /// `PERF_RECORD_LOST`: `lost` records were dropped since the previous one.
    Lost {
        /// Id of the event that lost them.
        id: u64,
        /// How many.
        lost: u64,
    },
    /// `PERF_RECORD_LOST_SAMPLES`.
    LostSamples {
        /// How many.
        lost: u64,
    },
    /// `PERF_RECORD_THROTTLE`.
    Throttle {
        /// Timestamp.
        time: u64,
        /// Event id.
        id: u64,
        /// Stream id.
        stream_id: u64,
    },
    /// `PERF_RECORD_UNTHROTTLE`.
    Unthrottle {
        /// Timestamp.
        time: u64,
        /// Event id.
        id: u64,
        /// Stream id.
        stream_id: u64,
    },
    /// Any other record type, skipped by its size.
    Other {
        /// Its header.
        header: Header,
        /// Its body (after the header).
        body: &'a [u8],
    },
}

impl<'a> Record<'a> {
    /// Parses the record at the start of `bytes`, returning it and its size.
    ///
    /// `offset` is where `bytes` starts in the stream (e.g. the ring position), so errors
    /// say where the bad record is. Bytes after the record are not looked at.
    ///
    /// # Errors
    /// [`Error::Truncated`] when the header is short, its `size` is below 8 or beyond
    /// `bytes`, or a field the format announces does not fit in the record.
    pub fn parse(bytes: &'a [u8], format: &SampleFormat, offset: u64) -> Result<(Self, usize)> {
        let header = Header::parse(bytes, offset)?;
        Self::parse_with(header, bytes, format, offset)
    }

    /// As [`Record::parse`], with the header already read by the caller (a ring reader that
    /// needed its size to find the record): the header is not parsed again.
    ///
    /// # Errors
    /// As [`Record::parse`].
    pub fn parse_with(
        header: Header,
        bytes: &'a [u8],
        format: &SampleFormat,
        offset: u64,
    ) -> Result<(Self, usize)> {
        let size = usize::from(header.size);
        let Some(record) = bytes.get(..size) else {
            return Err(Error::Truncated {
                what: "perf record",
                offset,
                len: size as u64,
            });
        };
        let body = record.get(HEADER_SIZE..).unwrap_or_default();
        let mut r = Reader {
            bytes: body,
            pos: 0,
            base: offset + HEADER_SIZE as u64,
        };
        let rec = match header.kind {
            RECORD_SAMPLE => Record::Sample(parse_sample(&mut r, header.misc, format)?),
            RECORD_LOST => Record::Lost {
                id: r.u64("LOST id")?,
                lost: r.u64("LOST lost")?,
            },
            RECORD_LOST_SAMPLES => Record::LostSamples {
                lost: r.u64("LOST_SAMPLES lost")?,
            },
            RECORD_THROTTLE | RECORD_UNTHROTTLE => {
                let time = r.u64("THROTTLE time")?;
                let id = r.u64("THROTTLE id")?;
                let stream_id = r.u64("THROTTLE stream_id")?;
                if header.kind == RECORD_THROTTLE {
                    Record::Throttle {
                        time,
                        id,
                        stream_id,
                    }
                } else {
                    Record::Unthrottle {
                        time,
                        id,
                        stream_id,
                    }
                }
            }
            _ => Record::Other { header, body },
        };
        Ok((rec, size))
    }
}

fn parse_sample<'a>(r: &mut Reader<'a>, misc: u16, format: &SampleFormat) -> Result<Sample<'a>> {
    let t = format.sample_type;
    let mut s = Sample::default();
    let f = &mut s.fields;
    f.misc = misc;
    // The kernel's order (perf_output_sample): IDENTIFIER, IP, TID, TIME, ADDR, ID,
    // STREAM_ID, CPU, PERIOD, READ, CALLCHAIN, RAW, then fields we do not decode.
    if t.contains(SampleType::IDENTIFIER) {
        f.identifier = Some(r.u64("sample identifier")?);
    }
    if t.contains(SampleType::IP) {
        f.ip = Some(r.u64("sample ip")?);
    }
    if t.contains(SampleType::TID) {
        f.pid = Some(r.u32("sample pid")?);
        f.tid = Some(r.u32("sample tid")?);
    }
    if t.contains(SampleType::TIME) {
        f.time = Some(r.u64("sample time")?);
    }
    if t.contains(SampleType::ADDR) {
        f.addr = Some(r.u64("sample addr")?);
    }
    if t.contains(SampleType::ID) {
        f.id = Some(r.u64("sample id")?);
    }
    if t.contains(SampleType::STREAM_ID) {
        f.stream_id = Some(r.u64("sample stream_id")?);
    }
    if t.contains(SampleType::CPU) {
        f.cpu = Some(r.u32("sample cpu")?);
        r.u32("sample cpu")?;
    }
    if t.contains(SampleType::PERIOD) {
        f.period = Some(r.u64("sample period")?);
    }
    if t.contains(SampleType::READ) {
        let len = read_size(r, format.read_format)?;
        s.read = Some(r.bytes("sample read", len)?);
    }
    if t.contains(SampleType::CALLCHAIN) {
        let nr = r.u64("sample callchain nr")?;
        let len = usize::try_from(nr)
            .ok()
            .and_then(|n| n.checked_mul(8))
            .ok_or(r.truncated("sample callchain", u64::MAX))?;
        s.callchain = Some(Callchain {
            bytes: r.bytes("sample callchain", len)?,
        });
    }
    if t.contains(SampleType::RAW) {
        let len = r.u32("sample raw size")?;
        s.raw = Some(r.bytes("sample raw data", len as usize)?);
    }
    Ok(s)
}

/// Size of the `READ` field for `read_format`, peeking at `nr` for a group.
fn read_size(r: &Reader<'_>, read_format: u64) -> Result<usize> {
    let has = |bit| usize::from(read_format & bit != 0);
    let times = has(read_format::TOTAL_TIME_ENABLED) + has(read_format::TOTAL_TIME_RUNNING);
    let per_value = 1 + has(read_format::ID) + has(read_format::LOST);
    if read_format & read_format::GROUP == 0 {
        return Ok((per_value + times) * 8);
    }
    // { u64 nr; [time_enabled]; [time_running]; { value; [id]; [lost] } cntr[nr]; }
    let nr = r.peek_u64("sample read nr")?;
    usize::try_from(nr)
        .ok()
        .and_then(|n| n.checked_mul(per_value))
        .and_then(|n| n.checked_add(1 + times))
        .and_then(|n| n.checked_mul(8))
        .ok_or(r.truncated("sample read", u64::MAX))
}

/// Iterates the records of a contiguous buffer; stops after the first error.
#[derive(Clone, Debug)]
pub struct Records<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
    format: SampleFormat,
    failed: bool,
}

impl<'a> Records<'a> {
    /// The records of `bytes`, which starts at stream offset `base`.
    #[must_use]
    pub fn new(bytes: &'a [u8], format: SampleFormat, base: u64) -> Self {
        Records {
            bytes,
            pos: 0,
            base,
            format,
            failed: false,
        }
    }
}

impl<'a> Iterator for Records<'a> {
    /// The stream offset of the record, and the record.
    type Item = Result<(u64, Record<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = self.bytes.get(self.pos..)?;
        if rest.is_empty() {
            return None;
        }
        let offset = self.base.wrapping_add(self.pos as u64);
        match Record::parse(rest, &self.format, offset) {
            Ok((rec, size)) => {
                self.pos = self.pos.saturating_add(size);
                Some(Ok((offset, rec)))
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

impl core::iter::FusedIterator for Records<'_> {}

/// A bounds-checked cursor over native-endian fields.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Reader<'a> {
    fn truncated(&self, what: &'static str, len: u64) -> Error {
        Error::Truncated {
            what,
            offset: self.base.wrapping_add(self.pos as u64),
            len,
        }
    }

    fn bytes(&mut self, what: &'static str, len: usize) -> Result<&'a [u8]> {
        let out = self
            .pos
            .checked_add(len)
            .and_then(|end| self.bytes.get(self.pos..end))
            .ok_or(self.truncated(what, len as u64))?;
        self.pos += len;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        let b = self.bytes(what, N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(b);
        Ok(out)
    }

    fn u16(&mut self, what: &'static str) -> Result<u16> {
        self.array(what).map(u16::from_ne_bytes)
    }

    fn u32(&mut self, what: &'static str) -> Result<u32> {
        self.array(what).map(u32::from_ne_bytes)
    }

    fn u64(&mut self, what: &'static str) -> Result<u64> {
        self.array(what).map(u64::from_ne_bytes)
    }

    fn peek_u64(&self, what: &'static str) -> Result<u64> {
        let mut copy = Reader {
            bytes: self.bytes,
            pos: self.pos,
            base: self.base,
        };
        copy.u64(what)
    }
}

fn ne_u64(chunk: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(chunk.get(..8).unwrap_or(&[0; 8]));
    u64::from_ne_bytes(b)
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
    use std::vec;
    use std::vec::Vec;

    /// Builds a record: header + body, `size` = 8 + body length (or `size` when given).
    fn rec(kind: u32, misc: u16, body: &[u8], size: Option<u16>) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(&misc.to_ne_bytes());
        let size = size.unwrap_or((HEADER_SIZE + body.len()) as u16);
        v.extend_from_slice(&size.to_ne_bytes());
        v.extend_from_slice(body);
        v
    }

    fn u64s(vals: &[u64]) -> Vec<u8> {
        vals.iter().flat_map(|v| v.to_ne_bytes()).collect()
    }

    fn raw_field(data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&(data.len() as u32).to_ne_bytes());
        v.extend_from_slice(data);
        while v.len() % 8 != 0 {
            v.push(0);
        }
        v
    }

    #[test]
    fn sample_all_fields_in_kernel_order() {
        let t = SampleType::IDENTIFIER
            | SampleType::IP
            | SampleType::TID
            | SampleType::TIME
            | SampleType::ADDR
            | SampleType::ID
            | SampleType::STREAM_ID
            | SampleType::CPU
            | SampleType::PERIOD
            | SampleType::RAW;
        let mut body = u64s(&[0x1d, 0x1234]);
        body.extend_from_slice(&7u32.to_ne_bytes());
        body.extend_from_slice(&8u32.to_ne_bytes());
        body.extend(u64s(&[99, 0xadd, 0x1d, 0x5d]));
        body.extend_from_slice(&3u32.to_ne_bytes());
        body.extend_from_slice(&0u32.to_ne_bytes());
        body.extend(u64s(&[1]));
        body.extend(raw_field(b"hello"));
        let bytes = rec(RECORD_SAMPLE, 2, &body, None);
        let (r, size) = Record::parse(&bytes, &SampleFormat::new(t), 0).unwrap();
        assert_eq!(size, bytes.len());
        let Record::Sample(s) = r else {
            panic!("{r:?}")
        };
        assert_eq!(s.fields.misc, 2);
        assert_eq!(s.fields.identifier, Some(0x1d));
        assert_eq!(s.fields.ip, Some(0x1234));
        assert_eq!((s.fields.pid, s.fields.tid), (Some(7), Some(8)));
        assert_eq!(s.fields.time, Some(99));
        assert_eq!(s.fields.addr, Some(0xadd));
        assert_eq!(s.fields.id, Some(0x1d));
        assert_eq!(s.fields.stream_id, Some(0x5d));
        assert_eq!(s.fields.cpu, Some(3));
        assert_eq!(s.fields.period, Some(1));
        assert_eq!(s.raw, Some(&b"hello"[..]));
        assert_eq!(s.read, None);
        assert!(s.callchain.is_none());
    }

    #[test]
    fn sample_subset_skips_absent_fields() {
        // TID | CPU | RAW: the tracepoint test's layout minus TIME/PERIOD.
        let t = SampleType::TID | SampleType::CPU | SampleType::RAW;
        let mut body = Vec::new();
        for v in [10u32, 11, 1, 0] {
            body.extend_from_slice(&v.to_ne_bytes());
        }
        body.extend(raw_field(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]));
        let bytes = rec(RECORD_SAMPLE, 0, &body, None);
        let (Record::Sample(s), _) = Record::parse(&bytes, &SampleFormat::new(t), 0).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (s.fields.pid, s.fields.tid, s.fields.cpu, s.fields.time),
            (Some(10), Some(11), Some(1), None)
        );
        assert_eq!(s.raw.unwrap().len(), 12);
    }

    #[test]
    fn sample_read_and_callchain() {
        let t = SampleType::TID | SampleType::READ | SampleType::CALLCHAIN | SampleType::RAW;
        // Group read with ID: nr=2, time_enabled, {value,id} x2.
        let rf = read_format::GROUP | read_format::ID | read_format::TOTAL_TIME_ENABLED;
        let mut body = Vec::new();
        body.extend_from_slice(&1u32.to_ne_bytes());
        body.extend_from_slice(&2u32.to_ne_bytes());
        body.extend(u64s(&[2, 500, 10, 100, 20, 200]));
        body.extend(u64s(&[3, 0xa, 0xb, 0xc]));
        body.extend(raw_field(&[]));
        let bytes = rec(RECORD_SAMPLE, 0, &body, None);
        let f = SampleFormat {
            sample_type: t,
            read_format: rf,
        };
        let (Record::Sample(s), _) = Record::parse(&bytes, &f, 0).unwrap() else {
            panic!()
        };
        assert_eq!(s.read.unwrap().len(), 6 * 8);
        let cc = s.callchain.unwrap();
        assert_eq!(cc.len(), 3);
        assert_eq!(cc.iter().collect::<Vec<_>>(), [0xa, 0xb, 0xc]);
        assert_eq!(s.raw, Some(&[][..]));
        // Non-group read: value + running.
        let f = SampleFormat {
            sample_type: SampleType::READ,
            read_format: read_format::TOTAL_TIME_RUNNING,
        };
        let bytes = rec(RECORD_SAMPLE, 0, &u64s(&[1, 2]), None);
        let (Record::Sample(s), _) = Record::parse(&bytes, &f, 0).unwrap() else {
            panic!()
        };
        assert_eq!(s.read.unwrap().len(), 16);
    }

    #[test]
    fn lost_throttle_and_unknown() {
        let f = SampleFormat::new(SampleType::RAW);
        // LOST with a trailing sample_id (sample_id_all) that we ignore.
        let cases: &[(u32, Vec<u8>, Record<'static>)] = &[
            (
                RECORD_LOST,
                u64s(&[5, 42, 0xfff]),
                Record::Lost { id: 5, lost: 42 },
            ),
            (
                RECORD_LOST_SAMPLES,
                u64s(&[9]),
                Record::LostSamples { lost: 9 },
            ),
            (
                RECORD_THROTTLE,
                u64s(&[1, 2, 3]),
                Record::Throttle {
                    time: 1,
                    id: 2,
                    stream_id: 3,
                },
            ),
            (
                RECORD_UNTHROTTLE,
                u64s(&[4, 5, 6]),
                Record::Unthrottle {
                    time: 4,
                    id: 5,
                    stream_id: 6,
                },
            ),
        ];
        for (kind, body, want) in cases {
            let bytes = rec(*kind, 0, body, None);
            assert_eq!(Record::parse(&bytes, &f, 0).unwrap(), (*want, bytes.len()));
        }
        let bytes = rec(3 /* COMM */, 1, b"12345678", None);
        let (r, n) = Record::parse(&bytes, &f, 0).unwrap();
        assert_eq!(n, 16);
        assert!(
            matches!(r, Record::Other { header: Header { kind: 3, misc: 1, size: 16 }, body } if body == b"12345678")
        );
    }

    #[test]
    fn iterator_walks_and_reports_offsets() {
        let f = SampleFormat::new(SampleType::TID);
        let mut buf = rec(RECORD_SAMPLE, 0, &u64s(&[0x0000_0002_0000_0001]), None);
        buf.extend(rec(RECORD_LOST, 0, &u64s(&[1, 2]), None));
        buf.extend(rec(77, 0, &[], None));
        let got: Vec<_> = Records::new(&buf, f, 1000).map(|r| r.unwrap()).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(
            got.iter().map(|(o, _)| *o).collect::<Vec<_>>(),
            [1000, 1016, 1040]
        );
        let Record::Sample(s) = got[0].1 else {
            panic!()
        };
        if cfg!(target_endian = "little") {
            assert_eq!((s.fields.pid, s.fields.tid), (Some(1), Some(2)));
        }
    }

    #[test]
    fn malformed_records_are_errors_with_offsets() {
        let f = SampleFormat::new(SampleType::TID | SampleType::TIME | SampleType::RAW);
        // (bytes, expected error offset)
        let cases: Vec<(Vec<u8>, u64)> = vec![
            (vec![9, 0, 0], 100),                                // short header
            (rec(RECORD_SAMPLE, 0, &[], Some(0)), 100),          // size 0: would loop forever
            (rec(RECORD_SAMPLE, 0, &[], Some(7)), 100),          // size < 8
            (rec(RECORD_SAMPLE, 0, &[0; 8], Some(64)), 100),     // size beyond the buffer
            (rec(RECORD_SAMPLE, 0, &[0; 8], None), 108 + 8),     // TIME missing
            (rec(RECORD_LOST, 0, &[0; 8], None), 108 + 8),       // LOST lost missing
            (rec(RECORD_THROTTLE, 0, &[0; 16], None), 108 + 16), // stream_id missing
        ];
        for (bytes, off) in cases {
            let e = Record::parse(&bytes, &f, 100).unwrap_err();
            let Error::Truncated { offset, .. } = e else {
                panic!("{e:?}")
            };
            assert_eq!(offset, off, "{bytes:?}");
        }
        // RAW size larger than the record.
        let mut body = u64s(&[0, 0]);
        body.extend_from_slice(&1000u32.to_ne_bytes());
        body.extend_from_slice(&[0; 4]);
        let bytes = rec(RECORD_SAMPLE, 0, &body, None);
        let e = Record::parse(&bytes, &f, 0).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Truncated {
                    what: "sample raw data",
                    offset: 28,
                    len: 1000
                }
            ),
            "{e:?}"
        );
        // Huge callchain / group read counts do not overflow.
        let f2 = SampleFormat::new(SampleType::CALLCHAIN);
        let bytes = rec(RECORD_SAMPLE, 0, &u64s(&[u64::MAX, 0]), None);
        assert!(Record::parse(&bytes, &f2, 0).is_err());
        let f3 = SampleFormat {
            sample_type: SampleType::READ,
            read_format: read_format::GROUP | read_format::ID,
        };
        let bytes = rec(RECORD_SAMPLE, 0, &u64s(&[u64::MAX / 2, 0]), None);
        assert!(Record::parse(&bytes, &f3, 0).is_err());
        // The iterator yields the good record, then the error, then stops.
        let mut buf = rec(RECORD_LOST, 0, &u64s(&[1, 2]), None);
        buf.extend(rec(RECORD_SAMPLE, 0, &[], Some(3)));
        let mut it = Records::new(&buf, f, 0);
        assert!(it.next().unwrap().is_ok());
        assert!(matches!(
            it.next(),
            Some(Err(Error::Truncated { offset: 24, .. }))
        ));
        assert!(it.next().is_none());
    }

    #[test]
    fn garbage_never_panics() {
        // A deterministic xorshift sweep of random buffers and formats.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut buf = [0u8; 256];
        for _ in 0..20_000 {
            let len = (next() % 257) as usize;
            for b in buf.iter_mut() {
                *b = next() as u8;
            }
            // Make headers plausible often enough to reach the sample decoder.
            if len >= 8 && next() % 2 == 0 {
                buf[0..4].copy_from_slice(&RECORD_SAMPLE.to_ne_bytes());
                let size = (next() % (len as u64 + 1)) as u16;
                buf[6..8].copy_from_slice(&size.to_ne_bytes());
            }
            let f = SampleFormat {
                sample_type: SampleType(next()),
                read_format: next(),
            };
            for r in Records::new(&buf[..len], f, 0).take(64) {
                let _ = r;
            }
        }
    }
}
