//! The records of a perf.data data section: samples laid out by their event's
//! `sample_type` exactly as the kernel writes them, the kernel's side-band records that
//! perf synthesizes from `/proc` (`COMM`, `MMAP2`, `FORK`, `EXIT`), `LOST`, and perf's own
//! records (`FINISHED_ROUND`, and the pipe-mode `HEADER_ATTR`, `HEADER_TRACING_DATA`,
//! `HEADER_BUILD_ID`, `HEADER_FEATURE`).
//!
//! Every record is a `struct perf_event_header` (`u32 type, u16 misc, u16 size`) and a
//! body; `size` counts both and is a multiple of 8. A record whose size does not fit the
//! `u16` is [`Error::Capacity`]. Non-sample records of events with `sample_id_all` end with
//! a [`SampleId`]: the fields of `sample_type` among TID, TIME, ID, STREAM_ID, CPU and
//! IDENTIFIER, in that order (perf reads them back from the end of the record).

use super::sink::Sink;
use crate::error::Error;
use crate::perf::record::{SampleFields, SampleType, HEADER_SIZE, RECORD_LOST, RECORD_SAMPLE};

/// `PERF_RECORD_MMAP`.
pub const RECORD_MMAP: u32 = 1;
/// `PERF_RECORD_COMM`.
pub const RECORD_COMM: u32 = 3;
/// `PERF_RECORD_EXIT`.
pub const RECORD_EXIT: u32 = 4;
/// `PERF_RECORD_FORK`.
pub const RECORD_FORK: u32 = 7;
/// `PERF_RECORD_MMAP2`.
pub const RECORD_MMAP2: u32 = 10;
/// `PERF_RECORD_HEADER_ATTR` (pipe mode): an attr and its ids.
pub const RECORD_HEADER_ATTR: u32 = 64;
/// `PERF_RECORD_HEADER_TRACING_DATA` (pipe mode): the tracing data follows the record.
pub const RECORD_HEADER_TRACING_DATA: u32 = 66;
/// `PERF_RECORD_HEADER_BUILD_ID` (pipe mode): one `build_id_event`.
pub const RECORD_HEADER_BUILD_ID: u32 = 67;
/// `PERF_RECORD_FINISHED_ROUND`: no record before it sorts after one behind it.
pub const RECORD_FINISHED_ROUND: u32 = 68;
/// `PERF_RECORD_HEADER_FEATURE` (pipe mode): one header feature.
pub const RECORD_HEADER_FEATURE: u32 = 80;

/// `PERF_RECORD_MISC_KERNEL`.
pub const MISC_KERNEL: u16 = 1;
/// `PERF_RECORD_MISC_USER`.
pub const MISC_USER: u16 = 2;
/// `PERF_RECORD_MISC_COMM_EXEC`: the `COMM` of an `exec`.
pub const MISC_COMM_EXEC: u16 = 1 << 13;

/// Largest record: `perf_event_header.size` is a `u16`.
pub const MAX_RECORD: usize = u16::MAX as usize & !7;

/// The sample layouts the encoder writes (the others need data the sample does not
/// keep: READ, CALLCHAIN, BRANCH_STACK, registers, stacks ...).
pub const ENCODABLE: SampleType = SampleType(
    SampleType::IDENTIFIER.0
        | SampleType::IP.0
        | SampleType::TID.0
        | SampleType::TIME.0
        | SampleType::ADDR.0
        | SampleType::ID.0
        | SampleType::STREAM_ID.0
        | SampleType::CPU.0
        | SampleType::PERIOD.0
        | SampleType::RAW.0,
);

/// The sample-id trailer of a non-sample record (`sample_id_all`); absent fields as 0,
/// as perf writes them for the records it synthesizes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleId {
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// Time (perf clock, ns).
    pub time: u64,
    /// Event id (ID and IDENTIFIER).
    pub id: u64,
    /// CPU.
    pub cpu: u32,
}

/// Size of the sample-id trailer for `sample_type` (0 without `sample_id_all`).
#[must_use]
pub fn sample_id_size(sample_type: SampleType, sample_id_all: bool) -> usize {
    if !sample_id_all {
        return 0;
    }
    [
        SampleType::TID,
        SampleType::TIME,
        SampleType::ID,
        SampleType::STREAM_ID,
        SampleType::CPU,
        SampleType::IDENTIFIER,
    ]
    .iter()
    .filter(|b| sample_type.contains(**b))
    .count()
        * 8
}

/// How non-sample records end: the `sample_type` of their event and whether it has
/// `sample_id_all`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IdLayout {
    /// The event's `sample_type`.
    pub sample_type: SampleType,
    /// `attr.sample_id_all`.
    pub sample_id_all: bool,
}

impl IdLayout {
    fn size(self) -> usize {
        sample_id_size(self.sample_type, self.sample_id_all)
    }

    fn write<S: Sink>(self, out: &mut S, id: &SampleId) -> Result<(), S::Error> {
        if !self.sample_id_all {
            return Ok(());
        }
        let t = self.sample_type;
        if t.contains(SampleType::TID) {
            out.u32(id.pid)?;
            out.u32(id.tid)?;
        }
        if t.contains(SampleType::TIME) {
            out.u64(id.time)?;
        }
        if t.contains(SampleType::ID) {
            out.u64(id.id)?;
        }
        if t.contains(SampleType::STREAM_ID) {
            out.u64(id.id)?;
        }
        if t.contains(SampleType::CPU) {
            out.u32(id.cpu)?;
            out.u32(0)?;
        }
        if t.contains(SampleType::IDENTIFIER) {
            out.u64(id.id)?;
        }
        Ok(())
    }
}

/// `n` rounded up to a multiple of 8.
#[must_use]
pub const fn align8(n: usize) -> usize {
    (n + 7) & !7
}

fn record_size(body: usize) -> Result<u16, Error> {
    let size = HEADER_SIZE.saturating_add(body);
    if size > MAX_RECORD {
        return Err(Error::Capacity {
            what: "bytes in one perf record",
            limit: MAX_RECORD as u32,
        });
    }
    Ok(size as u16)
}

/// Writes a record header.
///
/// # Errors
/// The sink's.
pub fn header<S: Sink>(out: &mut S, kind: u32, misc: u16, size: u16) -> Result<(), S::Error> {
    out.u32(kind)?;
    out.u16(misc)?;
    out.u16(size)
}

/// Writes a `PERF_RECORD_SAMPLE` laid out by `sample_type` from the fields of a parsed
/// sample and its RAW bytes (`raw` as the ring had them: the kernel already padded them
/// so that the `u32` size and the bytes end on 8 bytes; other lengths are padded here).
/// The result is byte for byte what the kernel wrote for these layouts.
///
/// # Errors
/// [`Error::Usage`] for a `sample_type` bit outside [`ENCODABLE`];
/// [`Error::Capacity`] when the record exceeds [`MAX_RECORD`]; the sink's.
pub fn sample<S: Sink>(
    out: &mut S,
    sample_type: SampleType,
    f: &SampleFields,
    raw: &[u8],
) -> Result<(), S::Error> {
    let t = sample_type;
    if t.0 & !ENCODABLE.0 != 0 {
        return Err(Error::Usage {
            what: "sample_type bits the perf.data writer cannot encode",
            value: t.0 & !ENCODABLE.0,
        }
        .into());
    }
    let words = [
        SampleType::IDENTIFIER,
        SampleType::IP,
        SampleType::TID,
        SampleType::TIME,
        SampleType::ADDR,
        SampleType::ID,
        SampleType::STREAM_ID,
        SampleType::CPU,
        SampleType::PERIOD,
    ]
    .iter()
    .filter(|b| t.contains(**b))
    .count();
    let raw_len = if t.contains(SampleType::RAW) {
        align8(4 + raw.len())
    } else {
        0
    };
    let size = record_size(words * 8 + raw_len)?;
    header(out, RECORD_SAMPLE, f.misc, size)?;
    let v = |o: Option<u64>| o.unwrap_or(0);
    if t.contains(SampleType::IDENTIFIER) {
        out.u64(v(f.identifier.or(f.id)))?;
    }
    if t.contains(SampleType::IP) {
        out.u64(v(f.ip))?;
    }
    if t.contains(SampleType::TID) {
        out.u32(f.pid.unwrap_or(u32::MAX))?;
        out.u32(f.tid.unwrap_or(u32::MAX))?;
    }
    if t.contains(SampleType::TIME) {
        out.u64(v(f.time))?;
    }
    if t.contains(SampleType::ADDR) {
        out.u64(v(f.addr))?;
    }
    if t.contains(SampleType::ID) {
        out.u64(v(f.id.or(f.identifier)))?;
    }
    if t.contains(SampleType::STREAM_ID) {
        out.u64(v(f.stream_id))?;
    }
    if t.contains(SampleType::CPU) {
        out.u32(f.cpu.unwrap_or(0))?;
        out.u32(0)?;
    }
    if t.contains(SampleType::PERIOD) {
        out.u64(v(f.period))?;
    }
    if t.contains(SampleType::RAW) {
        let pad = raw_len - 4 - raw.len();
        out.u32((raw.len() + pad) as u32)?;
        out.put(raw)?;
        out.zeros(pad)?;
    }
    Ok(())
}

/// Writes a kernel record as the ring had it: its header fields and body (the body's
/// length sets the size).
///
/// # Errors
/// [`Error::Capacity`] beyond [`MAX_RECORD`] or for a body that is not whole 8-byte words
/// (perf steps records by their size and reads them aligned); the sink's.
pub fn verbatim<S: Sink>(out: &mut S, kind: u32, misc: u16, body: &[u8]) -> Result<(), S::Error> {
    if body.len() % 8 != 0 {
        return Err(Error::Usage {
            what: "perf record body that is not whole 8-byte words",
            value: body.len() as u64,
        }
        .into());
    }
    let size = record_size(body.len())?;
    header(out, kind, misc, size)?;
    out.put(body)
}

/// Writes a NUL-terminated string padded with NULs to 8 bytes (`comm`, `filename`).
fn string<S: Sink>(out: &mut S, s: &[u8]) -> Result<(), S::Error> {
    out.put(s)?;
    out.zeros(align8(s.len() + 1) - s.len())
}

/// Writes `PERF_RECORD_COMM`: thread `tid` of process `pid` is named `comm` (`exec`: it
/// got the name by an `exec`).
///
/// # Errors
/// [`Error::Capacity`] beyond [`MAX_RECORD`]; the sink's.
pub fn comm<S: Sink>(
    out: &mut S,
    layout: IdLayout,
    (pid, tid): (u32, u32),
    comm: &[u8],
    exec: bool,
    id: &SampleId,
) -> Result<(), S::Error> {
    let size = record_size(8 + align8(comm.len() + 1) + layout.size())?;
    header(
        out,
        RECORD_COMM,
        if exec { MISC_COMM_EXEC } else { 0 },
        size,
    )?;
    out.u32(pid)?;
    out.u32(tid)?;
    string(out, comm)?;
    layout.write(out, id)
}

/// One executable mapping, for [`mmap2`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mapping<'a> {
    /// Process.
    pub pid: u32,
    /// Thread.
    pub tid: u32,
    /// Start address.
    pub addr: u64,
    /// Length.
    pub len: u64,
    /// File offset of `addr`.
    pub pgoff: u64,
    /// Device major.
    pub maj: u32,
    /// Device minor.
    pub min: u32,
    /// Inode.
    pub ino: u64,
    /// `PROT_*`.
    pub prot: u32,
    /// `MAP_*`.
    pub flags: u32,
    /// The mapped file's path (or `[vdso]`, ...).
    pub filename: &'a [u8],
}

/// Writes `PERF_RECORD_MMAP` (the old layout, what perf synthesizes for the kernel:
/// pid -1, `[kernel.kallsyms]_text` with `pgoff` the address of `_text`).
///
/// # Errors
/// [`Error::Capacity`] beyond [`MAX_RECORD`]; the sink's.
pub fn mmap<S: Sink>(
    out: &mut S,
    layout: IdLayout,
    misc: u16,
    m: &Mapping<'_>,
    id: &SampleId,
) -> Result<(), S::Error> {
    let size = record_size(32 + align8(m.filename.len() + 1) + layout.size())?;
    header(out, RECORD_MMAP, misc, size)?;
    out.u32(m.pid)?;
    out.u32(m.tid)?;
    out.u64(m.addr)?;
    out.u64(m.len)?;
    out.u64(m.pgoff)?;
    string(out, m.filename)?;
    layout.write(out, id)
}

/// Writes `PERF_RECORD_MMAP2` (`misc` carries the CPU mode: [`MISC_USER`] or
/// [`MISC_KERNEL`]).
///
/// # Errors
/// [`Error::Capacity`] beyond [`MAX_RECORD`]; the sink's.
pub fn mmap2<S: Sink>(
    out: &mut S,
    layout: IdLayout,
    misc: u16,
    m: &Mapping<'_>,
    id: &SampleId,
) -> Result<(), S::Error> {
    let size = record_size(64 + align8(m.filename.len() + 1) + layout.size())?;
    header(out, RECORD_MMAP2, misc, size)?;
    out.u32(m.pid)?;
    out.u32(m.tid)?;
    out.u64(m.addr)?;
    out.u64(m.len)?;
    out.u64(m.pgoff)?;
    out.u32(m.maj)?;
    out.u32(m.min)?;
    out.u64(m.ino)?;
    out.u64(0)?; // ino_generation
    out.u32(m.prot)?;
    out.u32(m.flags)?;
    string(out, m.filename)?;
    layout.write(out, id)
}

/// A task event, for [`task`]: `FORK` (a new task) or `EXIT`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Task {
    /// Process.
    pub pid: u32,
    /// Parent process.
    pub ppid: u32,
    /// Thread.
    pub tid: u32,
    /// Parent thread.
    pub ptid: u32,
    /// When.
    pub time: u64,
}

/// Writes `PERF_RECORD_FORK` (`exit == false`) or `PERF_RECORD_EXIT`.
///
/// # Errors
/// The sink's.
pub fn task<S: Sink>(
    out: &mut S,
    layout: IdLayout,
    exit: bool,
    t: &Task,
    id: &SampleId,
) -> Result<(), S::Error> {
    let size = record_size(24 + layout.size())?;
    let kind = if exit { RECORD_EXIT } else { RECORD_FORK };
    header(out, kind, 0, size)?;
    out.u32(t.pid)?;
    out.u32(t.ppid)?;
    out.u32(t.tid)?;
    out.u32(t.ptid)?;
    out.u64(t.time)?;
    layout.write(out, id)
}

/// Writes `PERF_RECORD_LOST`: the event `id.id` lost `lost` records.
///
/// # Errors
/// The sink's.
pub fn lost<S: Sink>(
    out: &mut S,
    layout: IdLayout,
    lost: u64,
    id: &SampleId,
) -> Result<(), S::Error> {
    let size = record_size(16 + layout.size())?;
    header(out, RECORD_LOST, 0, size)?;
    out.u64(id.id)?;
    out.u64(lost)?;
    layout.write(out, id)
}

/// Writes `PERF_RECORD_FINISHED_ROUND`.
///
/// # Errors
/// The sink's.
pub fn finished_round<S: Sink>(out: &mut S) -> Result<(), S::Error> {
    header(out, RECORD_FINISHED_ROUND, 0, HEADER_SIZE as u16)
}
