//! One module per subcommand.

pub mod config;
pub mod inspect;
pub mod probes;
pub mod prologue;
pub mod record;
mod record_args;
