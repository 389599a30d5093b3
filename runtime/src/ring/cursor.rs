//! Walking the mapped ring: where the next record is, copied once when it wraps.

use crate::sys::ring_map::Mapping;

/// Where the next record is, and how to view it.
pub(crate) enum Step<'a> {
    /// No record between tail and head.
    Empty,
    /// A record, its header (read once here), and `true` when it wrapped and was copied
    /// into the scratch buffer.
    Record(&'a [u8], sluice_core::perf::record::Header, bool),
}

/// Finds the record at `tail`, copying it into `scratch` when it wraps.
///
/// `head - tail` must have been checked to be at most the data size. Errors (a header
/// that does not fit in `[tail, head)` or whose size is below 8) carry the ring position.
pub(crate) fn step<'a>(
    map: &'a Mapping,
    scratch: &'a mut Vec<u8>,
    tail: u64,
    head: u64,
) -> Result<Step<'a>, sluice_core::Error> {
    let avail = head.wrapping_sub(tail);
    if avail == 0 {
        return Ok(Step::Empty);
    }
    let mask = map.data_size() as u64 - 1;
    let off = (tail & mask) as usize;
    const HEADER: usize = sluice_core::perf::record::HEADER_SIZE;
    // In place, unless it wraps (or is cut short by the head): then copied.
    let header = match map.span(off, HEADER).filter(|_| avail >= HEADER as u64) {
        Some(hdr) => sluice_core::perf::record::Header::parse(hdr, tail)?,
        None => {
            let mut hdr = [0u8; HEADER];
            let hdr_len = HEADER.min(usize::try_from(avail).unwrap_or(usize::MAX));
            let hdr = hdr.get_mut(..hdr_len).unwrap_or_default();
            map.copy_wrapped(off, hdr)
                .ok_or(sluice_core::Error::Truncated {
                    what: "perf record header",
                    offset: tail,
                    len: 8,
                })?;
            sluice_core::perf::record::Header::parse(hdr, tail)?
        }
    };
    let len = usize::from(header.size);
    if len as u64 > avail {
        return Err(sluice_core::Error::Truncated {
            what: "perf record (size beyond data_head)",
            offset: tail,
            len: len as u64,
        });
    }
    if let Some(bytes) = map.span(off, len) {
        return Ok(Step::Record(bytes, header, false));
    }
    // The record wraps: copy it once. The scratch buffer grows to the largest record seen
    // (at most 64 KiB, `size` being a u16) and is reused.
    scratch.resize(len, 0);
    map.copy_wrapped(off, scratch)
        .ok_or(sluice_core::Error::Truncated {
            what: "perf record",
            offset: tail,
            len: len as u64,
        })?;
    Ok(Step::Record(scratch, header, true))
}
