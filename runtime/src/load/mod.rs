//! The load phase: an opened [`sluice_core::Object`] in, maps and programs in the kernel out.
//!
//! [`load`] creates the maps ([`Map`]), fixes up and loads the object's BTF ([`btf`]),
//! sets `.kconfig`, relocates every program behind its prologue and loads it with
//! [`program`] (one function, its verifier log retried as [`LoadLog`] says); a session then
//! writes the workload's pid into the filters' [`TARGET_TGID_MAP`] ([`set_target_tgid`]).

pub mod btf;
mod globals;
mod kconfig;
mod map;
mod object;
mod options;
mod pin;
mod program;
mod target;

pub use kconfig::kconfig_value;
pub use map::{KeysBytes, Map, MapExtra, MapSpec, Plain, UpdateMode};
pub use object::{load, load_planned, LoadedObject, LoadedProgram, ProgramReport};
pub use options::LoadOptions;
pub use pin::{pin_path, DEFAULT_PIN_ROOT, PIN_BY_NAME};
pub use program::{
    prog_info, program, LoadLog, ProgInfo, ProgramLoad, DEFAULT_LOG_SIZE, MAX_LOG_SIZE,
};
pub use target::{set_target_tgid, TARGET_TGID_MAP};
