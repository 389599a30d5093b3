//! What the runtime asks of the running kernel: its architecture, version and configuration,
//! its symbols (`/proc/kallsyms`), its CPUs, the features it supports, and what its errnos
//! mean.

pub mod arch;
pub mod btf;
pub mod config;
pub mod cpus;
pub(crate) mod errno;
pub mod features;
pub mod hooks;
pub mod kallsyms;
pub mod version;
