//! `sluice-runtime`: the std half of sluice — syscalls, loader, probes, attach, rings.
#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod attach;
pub mod btf;
pub mod cpus;
pub mod debuginfo;
pub mod error;
pub mod kallsyms;
pub mod loader;
pub mod maps;
pub mod ring;
pub mod session;
pub mod sys;
pub mod tracefs;

pub use error::{Error, Result};
pub use loader::{load, LoadOptions, LoadedObject, LoadedProgram, ProgInfo};
pub use maps::{Map, MapSpec, Plain, UpdateMode};
