//! The header features perf script and perf report read (`HEADER_*` bits of the file
//! header, `PERF_RECORD_HEADER_FEATURE` in a pipe), each encoded as its section.

use super::header::{attr_bytes, ATTR_SIZE};
use super::records::{header as record_header, MISC_KERNEL, MISC_USER};
use super::sink::Sink;
use crate::error::Error;
use crate::perf::abi::PerfEventAttr;

/// `HEADER_TRACING_DATA`: event formats ([`super::tracing`]).
pub const TRACING_DATA: u32 = 1;
/// `HEADER_BUILD_ID`: `build_id_event` records.
pub const BUILD_ID: u32 = 2;
/// `HEADER_HOSTNAME`: a string (`uname -n`).
pub const HOSTNAME: u32 = 3;
/// `HEADER_OSRELEASE`: a string (`uname -r`).
pub const OSRELEASE: u32 = 4;
/// `HEADER_VERSION`: a string (the recording tool's version).
pub const VERSION: u32 = 5;
/// `HEADER_ARCH`: a string (`uname -m`).
pub const ARCH: u32 = 6;
/// `HEADER_NRCPUS`: CPUs available and online.
pub const NRCPUS: u32 = 7;
/// `HEADER_CPUDESC`: a string (the CPU model).
pub const CPUDESC: u32 = 8;
/// `HEADER_CMDLINE`: the recording command line, a string list.
pub const CMDLINE: u32 = 11;
/// `HEADER_EVENT_DESC`: each event's attr, name and ids.
pub const EVENT_DESC: u32 = 12;

/// Header strings are padded to this (perf's `NAME_ALIGN`).
pub const NAME_ALIGN: usize = 64;

/// Writes a `struct perf_header_string`: `u32 len`, the bytes, a NUL, zeros to `len`
/// (a multiple of [`NAME_ALIGN`]).
///
/// # Errors
/// [`Error::Capacity`] for a string of 4 GiB; the sink's.
pub fn string<S: Sink>(out: &mut S, s: &[u8]) -> Result<(), S::Error> {
    let len = (s.len() + 1).div_ceil(NAME_ALIGN) * NAME_ALIGN;
    out.u32(u32::try_from(len).map_err(|_| Error::Capacity {
        what: "bytes in a perf header string",
        limit: u32::MAX,
    })?)?;
    out.put(s)?;
    out.zeros(len - s.len())
}

/// Writes a `struct perf_header_string_list` of `items`.
///
/// # Errors
/// As [`string`].
pub fn string_list<S: Sink>(out: &mut S, items: &[&[u8]]) -> Result<(), S::Error> {
    out.u32(items.len() as u32)?;
    items.iter().try_for_each(|s| string(out, s))
}

/// Writes `HEADER_NRCPUS`: the CPUs the machine can have (highest present + 1), then those
/// online (the order perf writes and reads them).
///
/// # Errors
/// The sink's.
pub fn nr_cpus<S: Sink>(out: &mut S, available: u32, online: u32) -> Result<(), S::Error> {
    out.u32(available)?;
    out.u32(online)
}

/// One event of [`event_desc`].
#[derive(Clone, Copy, Debug)]
pub struct EventDesc<'a> {
    /// Its attr.
    pub attr: &'a PerfEventAttr,
    /// Its name (`GROUP:EVENT`, `bpf-output:MAP`, `dummy:u`).
    pub name: &'a [u8],
    /// The ids of its per-CPU (per-thread) events.
    pub ids: &'a [u64],
}

/// Writes `HEADER_EVENT_DESC`.
///
/// # Errors
/// As [`attr_bytes`] and [`string`]; the sink's.
pub fn event_desc<S: Sink>(out: &mut S, events: &[EventDesc<'_>]) -> Result<(), S::Error> {
    out.u32(events.len() as u32)?;
    out.u32(ATTR_SIZE)?;
    for e in events {
        out.put(&attr_bytes(e.attr)?)?;
        out.u32(e.ids.len() as u32)?;
        string(out, e.name)?;
        e.ids.iter().try_for_each(|&id| out.u64(id))?;
    }
    Ok(())
}

/// `PERF_RECORD_MISC_BUILD_ID_SIZE`: the build id's length is in the byte after it.
pub const MISC_BUILD_ID_SIZE: u16 = 1 << 15;
/// Longest build id (SHA-1).
pub const BUILD_ID_MAX: usize = 20;

/// Size of one [`build_id`] record for a file name of `filename_len` bytes.
#[must_use]
pub fn build_id_size(filename_len: usize) -> usize {
    36 + (filename_len + 1).div_ceil(NAME_ALIGN) * NAME_ALIGN
}

/// Writes a `struct build_id_event` (an entry of `HEADER_BUILD_ID`; in a pipe, the body of
/// `PERF_RECORD_HEADER_BUILD_ID`, whose type `kind` then is): `filename` has build id
/// `id`; `kernel` for the kernel and its modules. `pid` is -1 for the host, as perf
/// writes it.
///
/// # Errors
/// [`Error::Capacity`] for a build id over [`BUILD_ID_MAX`] bytes or a record over the
/// `u16` size; the sink's.
pub fn build_id<S: Sink>(
    out: &mut S,
    kind: u32,
    kernel: bool,
    id: &[u8],
    filename: &[u8],
) -> Result<(), S::Error> {
    if id.len() > BUILD_ID_MAX {
        return Err(Error::Capacity {
            what: "bytes in a build id",
            limit: BUILD_ID_MAX as u32,
        }
        .into());
    }
    let size = u16::try_from(build_id_size(filename.len())).map_err(|_| Error::Capacity {
        what: "bytes in a build_id_event",
        limit: u32::from(u16::MAX),
    })?;
    let misc = if kernel { MISC_KERNEL } else { MISC_USER } | MISC_BUILD_ID_SIZE;
    record_header(out, kind, misc, size)?;
    out.put(&(-1i32).to_ne_bytes())?;
    out.put(id)?;
    out.zeros(BUILD_ID_MAX - id.len())?;
    out.put(&[id.len() as u8, 0, 0, 0])?;
    let name_len = usize::from(size) - 36;
    out.put(filename)?;
    out.zeros(name_len - filename.len())
}
