//! The frame of a perf.data file: the file header (`struct perf_file_header`), the attr
//! section (`struct perf_file_attr`: an attr and where its ids are), the feature section
//! table after the data; and the pipe-mode header with the records that carry the same
//! in a stream (`HEADER_ATTR`, `HEADER_FEATURE`, `HEADER_TRACING_DATA`).
//!
//! ```text
//! file:  header | ids of each attr | attrs | data (records) | feature table | features
//! pipe:  magic, 16 | HEADER_ATTR ... | HEADER_FEATURE ... | HEADER_TRACING_DATA + data
//!        | records ...
//! ```

use super::records::{align8, header as record_header, RECORD_HEADER_ATTR};
use super::records::{RECORD_HEADER_FEATURE, RECORD_HEADER_TRACING_DATA};
use super::sink::Sink;
use crate::error::Error;
use crate::perf::abi::PerfEventAttr;

/// `PERFILE2`, as perf writes it (a `u64` in the writer's byte order).
pub const MAGIC: &[u8; 8] = b"PERFILE2";
/// Size of `struct perf_file_header`.
pub const FILE_HEADER_SIZE: u64 = 104;
/// Size of `struct perf_pipe_file_header`.
pub const PIPE_HEADER_SIZE: u64 = 16;
/// Size of the attrs written: `PERF_ATTR_SIZE_VER7`, what perf 6.1 to 6.2 read (a larger
/// attr is refused as "a more recent ABI" by those; newer ones read a smaller one as
/// zero-extended). `config3` (the one field after it) is never used by sluice.
pub const ATTR_SIZE: u32 = 128;
/// Size of one `struct perf_file_attr`: the attr and its ids section.
pub const FILE_ATTR_SIZE: u64 = ATTR_SIZE as u64 + 16;

/// `struct perf_file_section`: where something is in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Section {
    /// Offset from the start of the file.
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
}

impl Section {
    /// Writes it.
    ///
    /// # Errors
    /// The sink's.
    pub fn write<S: Sink>(&self, out: &mut S) -> Result<(), S::Error> {
        out.u64(self.offset)?;
        out.u64(self.size)
    }
}

/// The 256-bit feature bitmap of the file header (`adds_features`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features(pub [u64; 4]);

impl Features {
    /// Sets feature `bit` (`HEADER_*`, below 256; others are ignored).
    pub fn set(&mut self, bit: u32) {
        if let Some(w) = self.0.get_mut((bit / 64) as usize) {
            *w |= 1 << (bit % 64);
        }
    }

    /// Whether feature `bit` is set.
    #[must_use]
    pub fn has(&self, bit: u32) -> bool {
        self.0
            .get((bit / 64) as usize)
            .is_some_and(|w| w & (1 << (bit % 64)) != 0)
    }

    /// The set features, ascending: the order of the feature table.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..256).filter(|b| self.has(*b))
    }
}

/// `struct perf_file_header`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FileHeader {
    /// The attr section: [`FILE_ATTR_SIZE`] bytes per event.
    pub attrs: Section,
    /// The data section (the records).
    pub data: Section,
    /// Features present; their table starts right after the data.
    pub features: Features,
}

impl FileHeader {
    /// Writes the [`FILE_HEADER_SIZE`] bytes.
    ///
    /// # Errors
    /// The sink's.
    pub fn write<S: Sink>(&self, out: &mut S) -> Result<(), S::Error> {
        out.put(MAGIC)?;
        out.u64(FILE_HEADER_SIZE)?;
        out.u64(FILE_ATTR_SIZE)?;
        self.attrs.write(out)?;
        self.data.write(out)?;
        Section::default().write(out)?; // event_types: unused since perf 3.x
        for w in self.features.0 {
            out.u64(w)?;
        }
        Ok(())
    }
}

/// The first [`ATTR_SIZE`] bytes of `attr`, its `size` field set to [`ATTR_SIZE`].
///
/// # Errors
/// [`Error::Usage`] when `attr.config3` is set (it does not fit [`ATTR_SIZE`]).
pub fn attr_bytes(attr: &PerfEventAttr) -> Result<[u8; ATTR_SIZE as usize], Error> {
    if attr.config3 != 0 {
        return Err(Error::Usage {
            what: "perf_event_attr.config3 (beyond the attr size perf.data files carry)",
            value: attr.config3,
        });
    }
    let mut b = [0u8; ATTR_SIZE as usize];
    let mut s = super::sink::SliceSink::new(&mut b);
    let a = attr;
    s.u32(a.type_)?;
    s.u32(ATTR_SIZE)?;
    for v in [
        a.config,
        a.sample_period,
        a.sample_type,
        a.read_format,
        a.flags,
    ] {
        s.u64(v)?;
    }
    s.u32(a.wakeup_events)?;
    s.u32(a.bp_type)?;
    for v in [
        a.config1,
        a.config2,
        a.branch_sample_type,
        a.sample_regs_user,
    ] {
        s.u64(v)?;
    }
    s.u32(a.sample_stack_user)?;
    s.put(&a.clockid.to_ne_bytes())?;
    s.u64(a.sample_regs_intr)?;
    s.u32(a.aux_watermark)?;
    s.u16(a.sample_max_stack)?;
    s.u16(a.reserved2)?;
    s.u32(a.aux_sample_size)?;
    s.u32(a.reserved3)?;
    s.u64(a.sig_data)?;
    Ok(b)
}

/// Writes one `struct perf_file_attr`: the attr and where its `u64` ids are.
///
/// # Errors
/// As [`attr_bytes`]; the sink's.
pub fn file_attr<S: Sink>(out: &mut S, attr: &PerfEventAttr, ids: Section) -> Result<(), S::Error> {
    out.put(&attr_bytes(attr)?)?;
    ids.write(out)
}

/// Writes `ids` as the `u64` array an attr's ids section points at.
///
/// # Errors
/// The sink's.
pub fn ids<S: Sink>(out: &mut S, ids: &[u64]) -> Result<(), S::Error> {
    ids.iter().try_for_each(|&id| out.u64(id))
}

/// Writes `struct perf_pipe_file_header`.
///
/// # Errors
/// The sink's.
pub fn pipe_header<S: Sink>(out: &mut S) -> Result<(), S::Error> {
    out.put(MAGIC)?;
    out.u64(PIPE_HEADER_SIZE)
}

/// Writes `PERF_RECORD_HEADER_ATTR`: the attr and its ids.
///
/// # Errors
/// [`Error::Capacity`] for more ids than one record holds; as [`attr_bytes`]; the sink's.
pub fn header_attr<S: Sink>(
    out: &mut S,
    attr: &PerfEventAttr,
    ids: &[u64],
) -> Result<(), S::Error> {
    let bytes = attr_bytes(attr)?;
    let size = 8 + ATTR_SIZE as usize + ids.len().saturating_mul(8);
    let size = u16::try_from(size).map_err(|_| Error::Capacity {
        what: "event ids in one HEADER_ATTR record",
        limit: (u16::MAX as u32 - 8 - ATTR_SIZE) / 8,
    })?;
    record_header(out, RECORD_HEADER_ATTR, 0, size)?;
    out.put(&bytes)?;
    self::ids(out, ids)
}

/// Writes `PERF_RECORD_HEADER_FEATURE` for feature `feature` whose section (as a file
/// would hold it) is `body`, padded to 8 bytes.
///
/// # Errors
/// [`Error::Capacity`] when it does not fit one record; the sink's.
pub fn header_feature<S: Sink>(out: &mut S, feature: u32, body: &[u8]) -> Result<(), S::Error> {
    let padded = align8(body.len());
    let size = u16::try_from(16 + padded).map_err(|_| Error::Capacity {
        what: "bytes of a feature in one HEADER_FEATURE record",
        limit: u16::MAX as u32 - 16,
    })?;
    record_header(out, RECORD_HEADER_FEATURE, 0, size)?;
    out.u64(u64::from(feature))?;
    out.put(body)?;
    out.zeros(padded - body.len())
}

/// Writes `PERF_RECORD_HEADER_TRACING_DATA` (12 bytes: the header and the `u32` size)
/// for tracing data of `len` bytes; the caller writes the data next, then
/// [`tracing_padding`] zeros.
///
/// # Errors
/// [`Error::Capacity`] for tracing data of 4 GiB or more; the sink's.
pub fn header_tracing_data<S: Sink>(out: &mut S, len: usize) -> Result<(), S::Error> {
    let padded = u32::try_from(align8(len)).map_err(|_| Error::Capacity {
        what: "bytes of tracing data",
        limit: u32::MAX,
    })?;
    record_header(out, RECORD_HEADER_TRACING_DATA, 0, 12)?;
    out.u32(padded)
}

/// The zeros after `len` bytes of tracing data in a pipe.
#[must_use]
pub fn tracing_padding(len: usize) -> usize {
    align8(len) - len
}
