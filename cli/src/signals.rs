//! The signals `record` handles: Ctrl-C (`SIGINT`), `SIGTERM` and `SIGHUP` (the terminal
//! went away, or a supervisor's reload) all end the recording cleanly and the same way —
//! events disabled, rings drained, probes removed, summary printed, exit status 0 — (the
//! handler only records the signal; the loop does the rest), and `SIGCHLD` wakes the loop
//! when the workload exits.

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
    /// A write to a pipe without a reader (ignored by Rust programs: the write returns
    /// `EPIPE`; `record` raises it itself to stop on a closed stdout).
    pub const SIGPIPE: i32 = 13;
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
