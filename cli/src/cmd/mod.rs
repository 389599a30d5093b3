//! One module per subcommand.

pub mod inspect;
pub mod probes;
pub mod prologue;
pub mod record;
