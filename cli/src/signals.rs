//! The signals `record` handles: Ctrl-C (`SIGINT`), `SIGTERM` and `SIGHUP` end the
//! recording cleanly (the handler only records the signal; the loop does the rest), and
//! `SIGCHLD` wakes the loop when the workload exits.

use sluice_runtime::sys::signal::SignalPipe;

/// Signals that stop a recording.
pub const STOPPING: [i32; 3] = [
    libc_consts::SIGINT,
    libc_consts::SIGTERM,
    libc_consts::SIGHUP,
];

/// Signal numbers (Linux, every architecture sluice builds for).
pub mod libc_consts {
    /// Hang-up.
    pub const SIGHUP: i32 = 1;
    /// Ctrl-C.
    pub const SIGINT: i32 = 2;
    /// Termination request.
    pub const SIGTERM: i32 = 15;
    /// A child changed state.
    pub const SIGCHLD: i32 = 17;
}

/// Installs the handlers for the stopping signals and `SIGCHLD`.
///
/// # Errors
/// As [`SignalPipe::install`].
pub fn install() -> std::io::Result<SignalPipe> {
    let mut all = STOPPING.to_vec();
    all.push(libc_consts::SIGCHLD);
    SignalPipe::install(&all)
}

/// The shell's exit status for death by `sig`, `128 + sig`.
pub fn exit_code(sig: i32) -> u8 {
    u8::try_from(128 + sig).unwrap_or(1)
}
