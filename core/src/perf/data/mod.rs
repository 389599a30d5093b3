//! Writing perf's own file format (`tools/perf/Documentation/perf.data-file-format.txt`),
//! so that `perf script` and `perf report` read what sluice recorded, on any machine.
//!
//! No allocation: every encoder writes into a caller's [`Sink`] (a `&mut [u8]` through
//! [`SliceSink`], whose end is [`Error::Capacity`](crate::Error::Capacity), or the
//! caller's writer). Files, each using only those before it: `sink`, `records` (the data
//! section's records), `header` (file and pipe headers, attrs, feature framing),
//! `features` (the header features), `tracing` (the event formats).

pub mod features;
pub mod header;
pub mod records;
mod sink;
pub mod tracing;

pub use sink::{CountSink, Sink, SliceSink};

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests;
