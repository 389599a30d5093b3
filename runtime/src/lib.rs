//! `sluice-runtime`: the std half of sluice — syscalls, loader, probes, attach, rings.
#![deny(unsafe_code)]

pub mod cpus;
#[allow(unsafe_code)]
pub mod ring;
pub mod tracefs;
