//! Perf ring buffers: one `1 + 2^n` page mapping per perf event (per CPU), drained in place;
//! and BPF ring buffers (`BPF_MAP_TYPE_RINGBUF`, [`RingBuf`]), one per map, read through
//! the same [`RingSet`].
//!
//! [`PerfRing`] maps a perf event fd and hands out its records, parsed by
//! [`sluice_core::perf::record`], either synchronously ([`PerfRing::drain`]) or, merged
//! across CPUs as an async [`Stream`](futures_core::Stream), through [`RingSet`].
//!
//! # Wake-ups
//! The kernel wakes a poller of the fd after `wakeup_events` samples, or (with the
//! `watermark` flag) after `wakeup_watermark` bytes. Waking once per event costs a
//! context switch per event (the `ringbuf` peer measured 0.52 M events/s that way versus
//! 2.57 M/s waking every 64), so the default here is batched: [`Wakeup::default`] is a
//! watermark of a quarter of the data area, leaving three quarters of headroom while the
//! reader catches up. [`RingSet`] also drains every ring on a timer, so records below the
//! watermark still arrive (late by at most the flush interval). The knob must go into the
//! `perf_event_attr` the caller builds: [`RingConfig::apply`].
//!
//! # Lost records
//! When the ring is full the kernel drops records and remembers how many; it writes the
//! `PERF_RECORD_LOST` saying so only when it next has room and something to write. So the
//! last losses of a session can stay invisible in the ring: read the event with
//! `PERF_FORMAT_LOST` (Linux 6.0) for a final count.
//!
//! # The mapping
//! The `unsafe` half (`mmap(2)`/`munmap(2)`, the atomic views of `data_head` and
//! `data_tail`, slices of the data area) lives in `sys::ring_map`; this module has none.
//! The protocol is the one of perf_event_open(2), "MMAP layout": the kernel writes records
//! then publishes `data_head`; we read `data_head` with Acquire, read records in
//! `[data_tail, data_head)`, then publish `data_tail` with Release.

mod cursor;
mod merge;
mod perf_ring;
mod reader;
mod ringbuf;

pub use crate::sys::ring_map::{
    DATA_HEAD_OFFSET, DATA_OFFSET_OFFSET, DATA_SIZE_OFFSET, DATA_TAIL_OFFSET,
};
pub use merge::{Merge, Merged};
pub use perf_ring::{
    Error, OutputLayout, PerfRing, RingConfig, RingStats, Wakeup, ATTR_FLAG_WATERMARK,
    DEFAULT_DATA_PAGES, DEFAULT_PAGES_BUDGET, MAX_DEFAULT_DATA_PAGES,
};
pub use reader::{RingEvent, RingSet, SampleEvent, SampleView, DEFAULT_FLUSH_INTERVAL};
pub use ringbuf::{
    Drained, Error as RingBufError, RingBuf, RingBufStats, RINGBUF_BUSY, RINGBUF_DISCARD,
    RINGBUF_HEADER,
};
