//! The embedded demo object: the seed's `generic_perform_write` filter, compiled from
//! `tests/bpf/seed_write.c`, so `sluice` with no file shows something real.

/// Bytes of the demo object.
pub const OBJECT: &[u8] = include_bytes!("../../tests/bpf/seed_write.o");
/// Name shown for it.
pub const NAME: &str = "<embedded demo: tests/bpf/seed_write.o>";

/// The filter `sluice record` uses without `-e`: opens of files under `/etc/`, compiled
/// from `tests/bpf/record_demo.c`.
pub const RECORD_OBJECT: &[u8] = include_bytes!("../../tests/bpf/record_demo.o");
/// Name shown for it.
pub const RECORD_NAME: &str = "<embedded demo: tests/bpf/record_demo.o>";
