//! `HEADER_TRACING_DATA`: what perf needs to decode tracepoint samples by field name on
//! any machine — the tracefs format files of the events recorded, in the layout of perf's
//! `tracing_data` (version 0.6):
//!
//! ```text
//! "\x17\x08\x44tracing" "0.6\0" u8 big_endian u8 sizeof(long) u32 page_size
//! "header_page\0"  u64 size, events/header_page
//! "header_event\0" u64 size, events/header_event
//! u32 n, n × (u64 size, events/ftrace/*/format)
//! u32 systems, each: "SYSTEM\0" u32 n, n × (u64 size, events/SYSTEM/EVENT/format)
//! u32 size, kallsyms          (0: none, as perf writes since it resolves symbols itself)
//! u32 size, printk_formats
//! u64 size, saved_cmdlines
//! ```

use super::sink::Sink;
use crate::error::Error;

/// The version written.
pub const VERSION: &[u8] = b"0.6\0";

/// One event system and the format files of its events recorded.
#[derive(Clone, Copy, Debug)]
pub struct System<'a> {
    /// The system (tracefs group: `syscalls`, `sluice`).
    pub name: &'a [u8],
    /// Each event's `format` file.
    pub formats: &'a [&'a [u8]],
}

/// The files of the tracing data, as tracefs gave them.
#[derive(Clone, Copy, Debug, Default)]
pub struct TracingFiles<'a> {
    /// The recording machine is big-endian.
    pub big_endian: bool,
    /// Its `sizeof(long)`.
    pub long_size: u8,
    /// Its page size.
    pub page_size: u32,
    /// `events/header_page`.
    pub header_page: &'a [u8],
    /// `events/header_event`.
    pub header_event: &'a [u8],
    /// `events/ftrace/*/format`.
    pub ftrace: &'a [&'a [u8]],
    /// The systems of the events recorded.
    pub systems: &'a [System<'a>],
    /// `/proc/kallsyms` (may be empty).
    pub kallsyms: &'a [u8],
    /// `printk_formats`.
    pub printk: &'a [u8],
    /// `saved_cmdlines`.
    pub cmdlines: &'a [u8],
}

fn u32_len(n: usize) -> Result<u32, Error> {
    u32::try_from(n).map_err(|_| Error::Capacity {
        what: "entries or bytes in a tracing data part",
        limit: u32::MAX,
    })
}

/// Writes the tracing data.
///
/// # Errors
/// [`Error::Capacity`] for a count or a `u32`-sized part over 4 Gi; [`Error::Usage`] for a
/// system name with a NUL; the sink's.
pub fn write<S: Sink>(out: &mut S, t: &TracingFiles<'_>) -> Result<(), S::Error> {
    out.put(&[0x17, 0x08, 0x44])?;
    out.put(b"tracing")?;
    out.put(VERSION)?;
    out.put(&[u8::from(t.big_endian), t.long_size])?;
    out.u32(t.page_size)?;
    out.put(b"header_page\0")?;
    out.u64(t.header_page.len() as u64)?;
    out.put(t.header_page)?;
    out.put(b"header_event\0")?;
    out.u64(t.header_event.len() as u64)?;
    out.put(t.header_event)?;
    out.u32(u32_len(t.ftrace.len())?)?;
    for f in t.ftrace {
        out.u64(f.len() as u64)?;
        out.put(f)?;
    }
    out.u32(u32_len(t.systems.len())?)?;
    for s in t.systems {
        if s.name.contains(&0) {
            return Err(Error::Usage {
                what: "event system name with a NUL byte",
                value: s.name.len() as u64,
            }
            .into());
        }
        out.put(s.name)?;
        out.put(&[0])?;
        out.u32(u32_len(s.formats.len())?)?;
        for f in s.formats {
            out.u64(f.len() as u64)?;
            out.put(f)?;
        }
    }
    out.u32(u32_len(t.kallsyms.len())?)?;
    out.put(t.kallsyms)?;
    out.u32(u32_len(t.printk.len())?)?;
    out.put(t.printk)?;
    out.u64(t.cmdlines.len() as u64)?;
    out.put(t.cmdlines)
}
