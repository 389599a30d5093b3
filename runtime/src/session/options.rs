//! What a session is started and run with.

use std::collections::BTreeMap;
use std::process::Child;
use std::time::Instant;

use crate::attach::Scope;
use crate::load::LoadOptions;
use crate::probe::EventSpecs;
use crate::ring::RingConfig;
use crate::sys::signal::SignalPipe;

/// An object to record with.
#[derive(Clone, Debug)]
pub struct ObjectSource {
    /// Name for messages (the file name).
    pub name: String,
    /// The ELF bytes.
    pub bytes: Vec<u8>,
}

/// How to start a session.
#[derive(Clone, Debug, Default)]
pub struct SessionOptions {
    /// Whose events: system-wide, or a workload's pid.
    pub scope: Option<Scope>,
    /// Ring size and wake-up policy of every event.
    pub ring: RingConfig,
    /// Probe specs replacing section names, by program (function) name: how programs with
    /// an opaque title get a probe (`--event PROG=SPEC`); a program given several is
    /// attached at each. A name no object has a program of is refused
    /// ([`ConfigError::UnknownProgram`](crate::error::ConfigError::UnknownProgram)).
    pub events: EventSpecs,
    /// Load options (program type of titles, verifier log ...).
    pub load: LoadOptions,
    /// CPUs to record on (`-C`); `None`: every online CPU. Each must be online.
    pub cpus: Option<Vec<u32>>,
    /// Perf event arrays to fill with counters instead of bpf-output events, by map name:
    /// the counter's name (`--pmu MAP=EVENT`, one of [`crate::attach::COUNTERS`]), for
    /// programs that call `bpf_perf_event_read_value`.
    pub pmu: BTreeMap<String, String>,
    /// Keep every kprobe and uprobe in tracefs, with its sample events, even those whose
    /// program always returns 0 (which otherwise go through the kprobe/uprobe PMUs and
    /// leave nothing in tracefs): a perf.data file describes each event by its tracefs
    /// format.
    pub tracefs_probes: bool,
}

/// What ends [`Session::run`](super::Session::run) besides its own events.
#[derive(Debug, Default)]
pub struct RunControl<'a> {
    /// The workload: the run ends when it exits.
    pub child: Option<&'a mut Child>,
    /// The run ends then.
    pub deadline: Option<Instant>,
    /// Signals: the run ends at the first (`SIGCHLD` only wakes it up).
    pub signals: Option<&'a SignalPipe>,
    /// A process that is not our child (`record -p`): the run ends when it exits (watched
    /// through a pidfd, Linux 5.3). It is never sent a signal.
    pub process: Option<i32>,
}
