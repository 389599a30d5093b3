//! The embedded demo object: the seed's `generic_perform_write` filter, compiled from
//! `tests/bpf/seed_write.c`, so `sluice` with no file shows something real.

/// Bytes of the demo object.
pub const OBJECT: &[u8] = include_bytes!("../../tests/bpf/seed_write.o");
/// Name shown for it.
pub const NAME: &str = "<embedded demo: tests/bpf/seed_write.o>";
