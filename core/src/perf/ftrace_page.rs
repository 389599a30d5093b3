//! One page of an ftrace ring buffer, as `per_cpu/cpuN/trace_pipe_raw` hands it out
//! (`kernel/trace/ring_buffer.c`): a header (`u64 time_stamp`, `local_t commit`: the bytes
//! of events that follow, its top two bits flags of missed events; where the data starts
//! is `events/header_page`'s `data` offset), then events, each a `u32` header
//! (`type_len:5`, `time_delta:27`, native byte order) and its body:
//!
//! | `type_len` | what |
//! |---|---|
//! | 0 | data of `array[0] - 4` bytes after `array[0]` |
//! | 1..=28 | data of `type_len * 4` bytes |
//! | 29 | padding: the rest of the page when `time_delta` is 0, else `array[0]` bytes |
//! | 30 | time extend: `time_delta + (array[0] << 27)` more |
//! | 31 | absolute time stamp: `time_delta + (array[0] << 27)` (its low 59 bits) |
//!
//! A data event's time is the page's plus every delta up to and including its own. The
//! data is the trace event's record (`common_type`, ..., its fields), the same bytes a
//! perf tracepoint sample carries as `PERF_SAMPLE_RAW`.
//!
//! Events the kernel dropped before a page (its buffer was full) are flagged in `commit`:
//! bit 31 (`RB_MISSED_EVENTS`), and bit 30 (`RB_MISSED_STORED`) when their count, a
//! `long`, was stored right after the events.

/// A page that does not hold what its header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageError {
    /// Offset in the page of the event that does not fit.
    pub offset: usize,
}

impl core::fmt::Display for PageError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "ftrace page: the event at offset {} runs past the page's data",
            self.offset
        )
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// Calls `each(time, data)` for every data event of `page`, whose events start at
/// `data_offset` (16 with a 64-bit `local_t`, 12 with a 32-bit one), and returns how many
/// events the kernel dropped before it: 0, the count it stored, or 1 (at least one) when
/// it flagged a loss without room to store the count.
///
/// # Errors
/// [`PageError`] for an event that runs past the committed bytes (the events before it
/// were handed out).
pub fn page_events<'p>(
    page: &'p [u8],
    data_offset: usize,
    each: &mut dyn FnMut(u64, &'p [u8]),
) -> Result<u64, PageError> {
    let bad = |offset| PageError { offset };
    let (Some(head), Some(commit)) = (page.get(..8), u32_at(page, 8)) else {
        return Err(bad(0));
    };
    let mut time = u64::from_ne_bytes(head.try_into().map_err(|_| bad(0))?);
    // Little-endian `local_t` of 8 bytes: its low half holds the length and the flags.
    let commit = if cfg!(target_endian = "big") && data_offset >= 16 {
        u32_at(page, 12).ok_or(bad(8))?
    } else {
        commit
    };
    let len = (commit & 0x3fff_ffff) as usize;
    let data = data_offset
        .checked_add(len)
        .and_then(|end| page.get(data_offset..end))
        .ok_or(bad(8))?;
    let stored = || {
        let at = data_offset + len;
        let word = page.get(at..at + data_offset.saturating_sub(8))?;
        Some(match *word {
            [a, b, c, d] => u64::from(u32::from_ne_bytes([a, b, c, d])),
            _ => u64::from_ne_bytes(word.try_into().ok()?),
        })
    };
    let missed = match commit >> 30 {
        0 | 1 => 0,
        2 => 1,
        _ => stored().unwrap_or(1).max(1),
    };
    let mut at = 0usize;
    while at < data.len() {
        let h = u32_at(data, at).ok_or(bad(data_offset + at))?;
        let (kind, delta) = (h & 0x1f, u64::from(h >> 5));
        let word = || {
            u32_at(data, at + 4)
                .map(u64::from)
                .ok_or(bad(data_offset + at))
        };
        let (size, body) = match kind {
            0 => {
                // `array[0]` counts itself.
                let n = (word()? as usize)
                    .checked_sub(4)
                    .ok_or(bad(data_offset + at))?;
                (n + 8, Some((8, n)))
            }
            1..=28 => (4 + kind as usize * 4, Some((4, kind as usize * 4))),
            29 if delta == 0 => return Ok(missed),
            29 => (word()? as usize + 4, None),
            30 => {
                time = time.wrapping_add(delta + (word()? << 27));
                (8, None)
            }
            _ => {
                let abs = delta + (word()? << 27);
                time = (time & !((1u64 << 59) - 1)) | abs;
                (8, None)
            }
        };
        if let Some((from, n)) = body {
            time = time.wrapping_add(delta);
            let event = data
                .get(at + from..at + from + n)
                .ok_or(bad(data_offset + at))?;
            each(time, event);
        }
        if at + size > data.len() {
            return Err(bad(data_offset + at));
        }
        at += size;
    }
    Ok(missed)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn page(events: &[u32]) -> [u8; 256] {
        let mut p = [0u8; 256];
        p[..8].copy_from_slice(&1000u64.to_ne_bytes());
        let len = events.len() as u32 * 4;
        p[8..12].copy_from_slice(&(len | 1 << 31).to_ne_bytes());
        for (i, w) in events.iter().enumerate() {
            p[16 + 4 * i..20 + 4 * i].copy_from_slice(&w.to_ne_bytes());
        }
        p
    }

    /// Each event's time, first word and length.
    fn events(p: &[u8]) -> Result<heapless::Vec<(u64, u32, usize), 8>, PageError> {
        let mut out = heapless::Vec::new();
        page_events(p, 16, &mut |t, d| {
            let _ = out.push((t, u32_at(d, 0).unwrap_or(0), d.len()));
        })?;
        Ok(out)
    }

    #[test]
    fn deltas_extends_and_long_events() {
        let p = page(&[
            1 | 5 << 5,  // 4 data bytes, +5
            0xaa,        //
            30 | 1 << 5, // extend by 1 + (2 << 27)
            2,           //
            3 << 5,      // type_len 0, long: array[0] = 8 (4 data bytes), +3
            8,           //
            0xbb,        //
            29 | 1 << 5, // discarded event of 8 bytes
            4,           //
            31 | 7 << 5, // absolute 7
            0,           //
            1,           // 4 data bytes, +0
            0xcc,
        ]);
        let got = events(&p).unwrap();
        let ext = 1005 + 1 + (2u64 << 27);
        assert_eq!(
            got.as_slice(),
            &[(1005, 0xaa, 4), (ext + 3, 0xbb, 4), (7, 0xcc, 4)]
        );
    }

    #[test]
    fn padding_ends_and_short_pages_fail() {
        assert_eq!(events(&page(&[1, 0xaa, 29, 0, 1, 0xbb])).unwrap().len(), 1);
        // An event past the committed bytes.
        assert_eq!(events(&page(&[2, 0xaa])), Err(PageError { offset: 16 }));
        assert_eq!(events(&page(&[0, 0x100, 0])), Err(PageError { offset: 16 }));
        assert_eq!(events(&page(&[0, 0, 0])), Err(PageError { offset: 16 }));
        let mut short = page(&[1, 0xaa]);
        short[8..12].copy_from_slice(&4000u32.to_ne_bytes());
        assert_eq!(events(&short), Err(PageError { offset: 8 }));
        assert!(events(&[0u8; 4]).is_err());
        assert!(events(&page(&[])).unwrap().is_empty());
    }

    #[test]
    fn missed_events_are_counted() {
        let mut p = page(&[1, 0xaa]);
        let missed = |p: &[u8]| page_events(p, 16, &mut |_, _| {});
        // Flagged (bit 31), no count stored: at least one.
        assert_eq!(missed(&p), Ok(1));
        // Stored (bit 30 too): the long after the 8 bytes of events.
        p[8..12].copy_from_slice(&(8u32 | 3 << 30).to_ne_bytes());
        p[24..32].copy_from_slice(&4242u64.to_ne_bytes());
        assert_eq!(missed(&p), Ok(4242));
        // No flag: none.
        p[8..12].copy_from_slice(&8u32.to_ne_bytes());
        assert_eq!(missed(&p), Ok(0));
        // A 32-bit kernel's 4-byte long.
        let mut q = [0u8; 64];
        q[8..12].copy_from_slice(&(8u32 | 3 << 30).to_ne_bytes());
        q[12..16].copy_from_slice(&(1u32 | 5 << 5).to_ne_bytes());
        q[20..24].copy_from_slice(&7u32.to_ne_bytes());
        assert_eq!(page_events(&q, 12, &mut |_, _| {}), Ok(7));
    }
}
