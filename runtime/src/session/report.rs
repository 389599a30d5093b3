//! What a session hands out: its event sources, the programs it left out, its records,
//! why a run stopped, the totals, and what closing released.

use std::collections::BTreeMap;
use std::process::ExitStatus;

use crate::ring::SampleView;
use crate::tracefs::{self, EventFormat};

/// What produced a sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// A tracepoint, kprobe or uprobe event: RAW is laid out by `format`.
    Trace {
        /// The event's tracefs format (fields of the RAW data).
        format: EventFormat,
        /// The program attached (for [`PRINTK_EVENT`](crate::attach::PRINTK_EVENT): the
        /// programs that print, `OBJECT: PROGRAM` comma-separated).
        program: String,
    },
    /// A program attached without sample events (a BPF link to `tp_btf`, `fentry`,
    /// `raw_tp` ..., or a kprobe/uprobe PMU probe): it writes no samples of its own; what
    /// it observes comes through its maps and outputs.
    Hook {
        /// The program attached.
        program: String,
    },
    /// A `PERF_COUNT_SW_BPF_OUTPUT` event of a perf event array: RAW is what the program
    /// passed to `bpf_perf_event_output`.
    Output {
        /// The map.
        map: String,
    },
    /// A BPF ring buffer (`BPF_MAP_TYPE_RINGBUF`): RAW is one record as the program wrote
    /// it. The sample's fields are all empty: a ring-buffer record carries no pid, CPU or
    /// time.
    RingBuf {
        /// The map.
        map: String,
    },
}

/// One event source of the session (a group of per-CPU perf events).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// `GROUP:EVENT` for trace events, `bpf-output:MAP` for outputs, `ringbuf:MAP` for ring
    /// buffers.
    pub name: String,
    /// The object it comes from.
    pub object: String,
    /// What it is.
    pub kind: SourceKind,
}

/// A program left out of the session, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// Object.
    pub object: String,
    /// Program.
    pub program: String,
    /// Why.
    pub why: String,
}

/// One record out of the session, borrowed from its ring for the call of the sink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// A sample of source `source` (an index into [`Session::sources`](super::Session::sources)).
    Sample {
        /// Index into [`Session::sources`](super::Session::sources).
        source: usize,
        /// The sample, in place (copy it with [`SampleView::to_owned`] to keep it).
        sample: SampleView<'a>,
    },
    /// The kernel dropped `lost` records of source `source` on `cpu`.
    Lost {
        /// Index into [`Session::sources`](super::Session::sources).
        source: usize,
        /// The CPU of the ring.
        cpu: Option<u32>,
        /// How many.
        lost: u64,
    },
    /// [`Session::run`](super::Session::run) handed out what its rings held and waits
    /// next: a sink that holds output back (a buffered writer) writes it out now, so that
    /// readers see lines as the events come without a write per line.
    Drained,
}

/// Why [`Session::run`](super::Session::run) stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The workload exited.
    Exited(ExitStatus),
    /// The deadline passed.
    Duration,
    /// This signal arrived (the workload, if any, was sent it too).
    Signal(i32),
    /// The process followed ([`RunControl::process`](super::RunControl::process)) exited.
    ProcessExited,
}

/// Totals of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Samples per source, indexed like [`Session::sources`](super::Session::sources).
    pub samples: Vec<u64>,
    /// Lost records per CPU (`None`: rings without a CPU), summed over sources; every CPU
    /// with a ring has an entry, 0 when nothing was lost there.
    pub lost: BTreeMap<Option<u32>, u64>,
    /// Records skipped as malformed, over all rings.
    pub malformed: u64,
    /// Ring-buffer records their programs discarded (`bpf_ringbuf_discard`), over all ring
    /// buffers.
    pub discarded: u64,
}

/// What [`Session::close`](super::Session::close) released.
#[derive(Debug, Default)]
pub struct Closed {
    /// tracefs probes made by the session and removed.
    pub probes_removed: usize,
    /// Probes left behind (`sluice probes --clean` removes them later), with the reason.
    pub errors: Vec<(String, tracefs::Error)>,
}
