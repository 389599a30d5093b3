//! `sluice-runtime`: the std half of sluice — syscalls, loader, probes, attach, rings.
//!
//! By concern, each folder reaching only those below it: [`sys`] (the syscall funnel and
//! typed wrappers), [`kernel`] (version, config, kallsyms, CPUs, features, errnos),
//! [`tracefs`], [`probe`] (a plan per program: its spec parsed once, prologues, DWARF sites),
//! [`load`](mod@load) (maps, BTF, programs), [`attach`] (a link per program), [`ring`], and
//! [`session`], which puts them together. [`error`] is data only.
#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod attach;
pub mod error;
pub mod int_map;
pub mod kernel;
pub mod load;
pub mod probe;
pub mod ring;
pub mod session;
pub mod sys;
pub mod tasks;
pub mod tracefs;

pub use error::{Error, Result};
pub use load::{
    load, LoadOptions, LoadedObject, LoadedProgram, Map, MapSpec, Plain, ProgInfo, UpdateMode,
};
