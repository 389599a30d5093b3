//! Per-program planning: a program's probe spec, what it implies (program type, prologue),
//! its DWARF sites ([`debuginfo`]) and the tracefs fetch-args of its arguments.

pub mod debuginfo;
mod fetch;
mod spec;

pub(crate) use fetch::probe_target;
pub use fetch::{fetch_args, unique_arg_names};
pub(crate) use spec::variants;
pub use spec::{program_spec, prologue_for, section_prog_type, site_prologues};
