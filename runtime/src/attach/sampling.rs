//! Per-CPU events that are no tracepoint: the sampling event of a `perf_event` program
//! (the hardware cycles event at a frequency, or `cpu-clock` where the machine has no
//! hardware counters, as in most VMs), and the counters a `--pmu MAP=EVENT` puts in a
//! `BPF_MAP_TYPE_PERF_EVENT_ARRAY` for `bpf_perf_event_read_value`.

use std::os::fd::AsRawFd;

use rustix::io::Errno;
use sluice_core::perf::abi::{attr_flags, perf_type, PerfEventAttr};
use sluice_core::perf::record::{SampleFormat, SampleType};

use super::events::{cpus_in_array, open_all, open_scoped, Error, PerCpuEvents, Scope, IDENTIFIED};
use crate::load::{Map, UpdateMode};
use crate::ring::RingConfig;

/// The sampling frequency of `perf_event` programs when none is given (`-F`): 49 Hz, as
/// libbpf-tools' `profile` samples (a prime, so sampling does not run in step with a timer).
pub const DEFAULT_SAMPLE_FREQ: u64 = 49;

/// `PERF_COUNT_HW_CPU_CYCLES`.
const HW_CPU_CYCLES: u64 = 0;
/// `PERF_COUNT_SW_CPU_CLOCK`.
const SW_CPU_CLOCK: u64 = 0;

/// The counters `--pmu MAP=EVENT` knows, by perf's names: `(name, PERF_TYPE_*, config)`.
pub const COUNTERS: &[(&str, u32, u64)] = &[
    ("cycles", perf_type::HARDWARE, 0),
    ("instructions", perf_type::HARDWARE, 1),
    ("cache-references", perf_type::HARDWARE, 2),
    ("cache-misses", perf_type::HARDWARE, 3),
    ("branches", perf_type::HARDWARE, 4),
    ("branch-misses", perf_type::HARDWARE, 5),
    ("bus-cycles", perf_type::HARDWARE, 6),
    ("ref-cycles", perf_type::HARDWARE, 9),
    ("cpu-clock", perf_type::SOFTWARE, 0),
    ("task-clock", perf_type::SOFTWARE, 1),
    ("page-faults", perf_type::SOFTWARE, 2),
    ("context-switches", perf_type::SOFTWARE, 3),
    ("cpu-migrations", perf_type::SOFTWARE, 4),
    ("minor-faults", perf_type::SOFTWARE, 5),
    ("major-faults", perf_type::SOFTWARE, 6),
];

/// The `PERF_TYPE_*` and config of counter `name` (one of [`COUNTERS`]).
#[must_use]
pub fn counter(name: &str) -> Option<(u32, u64)> {
    COUNTERS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, t, c)| (t, c))
}

/// The sample layout of sampling events: IDENTIFIER, IP, TID, TIME, CPU, PERIOD (what a
/// `perf record -e cpu-clock` sample holds; a program that returns 1 lets one through).
#[must_use]
pub fn sampling_sample_type() -> SampleType {
    SampleType::IDENTIFIER
        | SampleType::IP
        | SampleType::TID
        | SampleType::TIME
        | SampleType::CPU
        | SampleType::PERIOD
}

/// Whether `perf_event_open` saying `errno` for a hardware event means the machine has no
/// such counter (perf falls back to `cpu-clock` on the same answers).
fn no_hardware(errno: Errno) -> bool {
    [
        Errno::NOENT,
        Errno::NODEV,
        Errno::NXIO,
        Errno::OPNOTSUPP,
        Errno::INVAL,
    ]
    .contains(&errno)
}

/// Opens the sampling events of a `perf_event` program: on every CPU of `cpus`, for the
/// tasks of `scope`, `freq` samples a second of the hardware cycles event, or of the
/// `cpu-clock` software event where the machine has no cycles counter. Disabled; the
/// caller attaches the program to each ([`PerCpuEvents::set_bpf`]). Returns the events
/// and the event's name (`cycles` or `cpu-clock`).
///
/// A CPU with nothing to run (a tickless idle CPU) gets no `cpu-clock` sample.
///
/// # Errors
/// [`Error::Open`] for the first CPU that refuses both.
pub fn open_sampling(
    freq: u64,
    scope: Scope,
    cpus: &[u32],
    ring: &RingConfig,
) -> Result<(PerCpuEvents, &'static str), Error> {
    let sample_type = sampling_sample_type();
    let format = SampleFormat::new(sample_type);
    let attr = |type_, config| {
        let mut a = PerfEventAttr::new(type_, config);
        a.sample_period = freq.max(1);
        a.sample_type = sample_type.0;
        a.flags = attr_flags::DISABLED | attr_flags::FREQ | IDENTIFIED;
        ring.apply(&mut a);
        a
    };
    match open_scoped(
        "cycles",
        &attr(perf_type::HARDWARE, HW_CPU_CYCLES),
        scope,
        cpus,
        format,
    ) {
        Ok(events) => Ok((events, "cycles")),
        Err(Error::Open { errno, .. }) if no_hardware(errno) => {
            log::info!("no hardware cycles event ({errno}): sampling cpu-clock");
            let a = attr(perf_type::SOFTWARE, SW_CPU_CLOCK);
            Ok((
                open_scoped("cpu-clock", &a, scope, cpus, format)?,
                "cpu-clock",
            ))
        }
        Err(e) => Err(e),
    }
}

/// For `--pmu MAP=EVENT`: opens counter `event` (one of [`COUNTERS`]) on every CPU of
/// `cpus`, counting every task, and stores each fd in perf event array `map` at key = the
/// CPU, where `bpf_perf_event_read_value(map, BPF_F_CURRENT_CPU, ...)` reads the counter
/// of the CPU the program runs on. CPUs at or past the map's `max_entries` are skipped
/// with a warning. The counters start disabled.
///
/// # Errors
/// [`Error::Open`] (`ENOENT` for a hardware counter the machine lacks, as in a VM),
/// [`Error::MapUpdate`]; an `event` not in [`COUNTERS`] is [`Error::Open`] with `EINVAL`
/// (the caller checks names first).
pub fn open_counters(map: &Map, event: &str, cpus: &[u32]) -> Result<PerCpuEvents, Error> {
    let what = format!("counter {event} of map '{}'", map.name());
    let Some((type_, config)) = counter(event) else {
        return Err(Error::Open {
            what,
            cpu: 0,
            errno: Errno::INVAL,
        });
    };
    let mut attr = PerfEventAttr::new(type_, config);
    attr.flags = attr_flags::DISABLED;
    let usable = cpus_in_array(map, cpus, "counter");
    let format = SampleFormat::new(SampleType(0));
    let events = open_all(&what, &attr, -1, &usable, format).map_err(|e| match e {
        Error::Open { what, cpu, errno } if type_ == perf_type::HARDWARE && no_hardware(errno) => {
            Error::Open {
                what: format!("{what} (a hardware counter: this machine has none, as in most VMs)"),
                cpu,
                errno,
            }
        }
        e => e,
    })?;
    for e in events.events() {
        let fd = u32::try_from(e.fd.as_raw_fd()).unwrap_or(u32::MAX);
        map.update(&e.cpu, &fd, UpdateMode::Any)
            .map_err(|source| Error::MapUpdate {
                map: map.name().to_owned(),
                cpu: e.cpu,
                source: Box::new(source),
            })?;
    }
    Ok(events)
}
