//! Per-program planning: a program's probe spec parsed once into a [`Plan`] (attach kind,
//! program type, prologues), its DWARF sites ([`debuginfo`]) and the tracefs fetch-args of
//! its arguments.

pub mod debuginfo;
mod events;
mod fetch;
mod hook;
mod plan;
mod spec;

pub use events::EventSpecs;
pub use fetch::{fetch_arg, fetch_args, unique_arg_names};
pub use hook::HookPlan;
pub use plan::{
    chosen_programs, plans, program_list, program_named, set_specs, Attach, Plan, ProbePlace,
    ProbePlan, Variant,
};
pub use spec::{place_file_offsets, probe_platform, program_spec, section_prog_type, AT_SYMBOL};
