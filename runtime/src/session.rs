//! A record session, end to end: objects in, filtered samples out, everything released.
//!
//! [`Session::start`] loads each object, makes the probe each program's section name (or a
//! caller's mapping) describes — kprobes and uprobes through tracefs, under names carrying
//! our pid; tracepoints need none; a program loaded once per DWARF site (an inlined function)
//! gets a probe per site —, opens one perf event per online CPU for it, attaches the
//! program, opens the `PERF_COUNT_SW_BPF_OUTPUT` events of every perf event array, maps
//! every ring and enables the events. [`Session::run`] then drains the rings until the
//! workload exits, a deadline passes or a signal arrives, and drains once more after
//! disabling, so nothing published is left behind.
//!
//! # The workload's pid
//! Perf event arrays are system-wide (a program may only write to the event of the CPU it
//! runs on, whoever runs there), so a filter that wants the workload only must check the
//! pid itself. When recording a task, the session writes its pid at key 0 of every
//! `BPF_MAP_TYPE_ARRAY` map named [`TARGET_TGID_MAP`] (4-byte key and value) before the
//! events are enabled.
//!
//! # Release order
//! Fields drop in declaration order: the ring mappings (which keep their events alive) go
//! first, then the perf events (each group disabled, then closed), then the tracefs probes
//! (removing a probe with an open event is `EBUSY`), then the programs and maps. A session
//! that fails half-way is dropped the same way, so every exit path releases everything.

use std::collections::BTreeMap;
use std::fmt;
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use sluice_core::perf::abi::map_type;
use sluice_core::probe::{self, Place, ProbeKind, Section, Target};
use sluice_core::Object;

use crate::attach::{self, EventOptions, PerCpuEvents, Scope};
use crate::error::SpecProblem;
use crate::load::{load, LoadOptions, LoadedObject};
use crate::probe::{fetch_args, probe_target, unique_arg_names};
use crate::ring::{PerfRing, RingConfig, RingEvent, RingSet, SampleEvent};
use crate::sys::signal::SignalPipe;
use crate::tracefs::{self, EventFormat, ProbeGuard, ProbeRequest, Tracefs};

/// Name of the array map the session fills with the workload's pid (module docs).
pub const TARGET_TGID_MAP: &str = "target_tgid";

/// How long [`Session::run`] sleeps at most between two drains.
pub const DRAIN_INTERVAL: Duration = Duration::from_millis(100);

/// How long a workload gets to exit after the signal forwarded to it, before `SIGKILL`.
pub const WORKLOAD_GRACE: Duration = Duration::from_secs(2);

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
    /// an opaque title get a probe (`--event PROG=SPEC`).
    pub events: BTreeMap<String, String>,
    /// Load options (program type of titles, verifier log ...).
    pub load: LoadOptions,
    /// CPUs to record on (`-C`); `None`: every online CPU. Each must be online.
    pub cpus: Option<Vec<u32>>,
}

/// Errors of a session, each naming the object and program concerned.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The object does not open.
    Open {
        /// Object.
        object: String,
        /// Why.
        source: sluice_core::Error,
    },
    /// Loading failed (the verifier log is in the source).
    Load {
        /// Object.
        object: String,
        /// Why.
        source: crate::Error,
    },
    /// A section name or mapping is not a probe spec we can honour.
    Spec {
        /// Object.
        object: String,
        /// Program.
        program: String,
        /// The spec.
        spec: String,
        /// What is wrong.
        problem: crate::error::SpecProblem,
    },
    /// tracefs refused (probe creation, event id or format).
    Tracefs {
        /// Program concerned, if any.
        program: Option<String>,
        /// Why.
        source: tracefs::Error,
    },
    /// Opening, attaching or enabling perf events failed.
    Attach {
        /// Object.
        object: String,
        /// Why.
        source: attach::Error,
    },
    /// Mapping a ring failed.
    Ring(crate::ring::Error),
    /// A CPU asked for is not online.
    Cpu {
        /// The CPU.
        cpu: u32,
        /// The online CPUs.
        online: Vec<u32>,
    },
    /// Reading the online CPUs failed.
    Cpus {
        /// Why.
        source: crate::kernel::cpus::Error,
    },
    /// Polling or waiting for the workload failed.
    Io {
        /// What we were doing.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Open { object, source } => write!(f, "{object}: {source}"),
            Error::Load { object, source } => write!(f, "{object}: {source}"),
            Error::Spec {
                object,
                program,
                spec,
                problem,
            } => write!(
                f,
                "{object}: program '{program}', probe '{spec}': {problem}"
            ),
            Error::Tracefs {
                program: Some(p),
                source,
            } => write!(f, "program '{p}': {source}"),
            Error::Tracefs {
                program: None,
                source,
            } => write!(f, "{source}"),
            Error::Attach { object, source } => write!(f, "{object}: {source}"),
            Error::Ring(e) => write!(f, "{e}"),
            Error::Cpu { cpu, online } => {
                let list: Vec<String> = online.iter().map(u32::to_string).collect();
                write!(f, "CPU {cpu} is not online (online: {})", list.join(","))
            }
            Error::Cpus { source } => write!(f, "reading the online CPUs: {source}"),
            Error::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Open { source, .. } => Some(source),
            Error::Load { source, .. } => Some(source),
            Error::Tracefs { source, .. } => Some(source),
            Error::Attach { source, .. } => Some(source),
            Error::Ring(e) => Some(e),
            Error::Io { source, .. } => Some(source),
            Error::Cpus { source } => Some(source),
            Error::Spec { problem, .. } => Some(problem),
            Error::Cpu { .. } => None,
        }
    }
}

/// What produced a sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceKind {
    /// A tracepoint, kprobe or uprobe event: RAW is laid out by `format`.
    Trace {
        /// The event's tracefs format (fields of the RAW data).
        format: EventFormat,
        /// The program attached.
        program: String,
    },
    /// A `PERF_COUNT_SW_BPF_OUTPUT` event of a perf event array: RAW is what the program
    /// passed to `bpf_perf_event_output`.
    Output {
        /// The map.
        map: String,
    },
}

/// One event source of the session (a group of per-CPU perf events).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// `GROUP:EVENT` for trace events, `bpf-output:MAP` for outputs.
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

/// One record out of the session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A sample of source `source` (an index into [`Session::sources`]).
    Sample {
        /// Index into [`Session::sources`].
        source: usize,
        /// The sample.
        sample: SampleEvent,
    },
    /// The kernel dropped `lost` records of source `source` on `cpu`.
    Lost {
        /// Index into [`Session::sources`].
        source: usize,
        /// The CPU of the ring.
        cpu: Option<u32>,
        /// How many.
        lost: u64,
    },
}

/// Why [`Session::run`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The workload exited.
    Exited(ExitStatus),
    /// The deadline passed.
    Duration,
    /// This signal arrived (the workload, if any, was sent it too).
    Signal(i32),
    /// The process followed ([`RunControl::process`]) exited.
    ProcessExited,
}

/// What ends [`Session::run`] besides its own events.
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

/// Totals of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Samples per source, indexed like [`Session::sources`].
    pub samples: Vec<u64>,
    /// Lost records per CPU (`None`: rings without a CPU), summed over sources; every CPU
    /// with a ring has an entry, 0 when nothing was lost there.
    pub lost: BTreeMap<Option<u32>, u64>,
    /// Records skipped as malformed, over all rings.
    pub malformed: u64,
}

/// What [`Session::close`] released.
#[derive(Debug, Default)]
pub struct Closed {
    /// tracefs probes made by the session and removed.
    pub probes_removed: usize,
    /// Probes left behind (`sluice probes --clean` removes them later), with the reason.
    pub errors: Vec<(String, tracefs::Error)>,
}

/// A running record session (see the module docs for the release order).
pub struct Session {
    // Field order is the release order: see the module docs.
    rings: RingSet,
    ring_source: Vec<usize>,
    groups: Vec<PerCpuEvents>,
    /// Whether each group was enabled by ENABLE (false: enable_on_exec).
    probes: Vec<ProbeGuard>,
    loaded: Vec<LoadedObject>,
    sources: Vec<Source>,
    skipped: Vec<Skipped>,
    summary: Summary,
    enabled: bool,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("sources", &self.sources)
            .field("probes", &self.probes.len())
            .field("skipped", &self.skipped)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Loads `objects`, makes their probes, attaches and enables everything.
    ///
    /// With [`Scope::Task`] and `on_exec`, the trace events start at the workload's `exec`;
    /// otherwise now.
    ///
    /// # Errors
    /// The first failure; everything made before it is released (module docs).
    pub fn start(objects: &[ObjectSource], opts: &SessionOptions) -> Result<Session, Error> {
        let mut s = Session {
            rings: RingSet::new(DRAIN_INTERVAL),
            ring_source: Vec::new(),
            groups: Vec::new(),
            probes: Vec::new(),
            loaded: Vec::new(),
            sources: Vec::new(),
            skipped: Vec::new(),
            summary: Summary::default(),
            enabled: false,
        };
        let scope = opts.scope.unwrap_or(Scope::System);
        let tracefs = Tracefs::find().map_err(|source| Error::Tracefs {
            program: None,
            source,
        })?;
        let online = crate::kernel::cpus::online().map_err(|source| Error::Cpus { source })?;
        let cpus = match &opts.cpus {
            None => online,
            Some(asked) => {
                if let Some(&cpu) = asked.iter().find(|c| !online.contains(c)) {
                    return Err(Error::Cpu { cpu, online });
                }
                asked.clone()
            }
        };
        for src in objects {
            s.add_object(src, opts, scope, &tracefs, &cpus)?;
        }
        // Rings, then enable: output events first so no program writes into nothing.
        // Rings are drained in the order they are pushed: trace rings first, bpf-output
        // rings last. A program writes its output before the kernel writes the probe's
        // sample, so once a sample has been read its output is already in its ring and
        // lands in the same batch (the text output pairs the two).
        let mut order: Vec<usize> = (0..s.groups.len()).collect();
        order.sort_by_key(|&gi| {
            s.sources
                .get(gi)
                .is_some_and(|x| matches!(x.kind, SourceKind::Output { .. }))
        });
        for gi in order {
            let Some(group) = s.groups.get(gi) else {
                continue;
            };
            for e in group.events() {
                let ring = PerfRing::map(&e.fd, opts.ring.data_pages, group.format(), Some(e.cpu))
                    .map_err(Error::Ring)?;
                s.rings.push_unpolled(ring);
                s.ring_source.push(gi);
            }
            group.redirect_followers().map_err(|e| Error::Attach {
                object: s
                    .sources
                    .get(gi)
                    .map_or_else(String::new, |x| x.object.clone()),
                source: e,
            })?;
        }
        let on_exec = matches!(scope, Scope::Task { on_exec: true, .. });
        for (group, source) in s.groups.iter().zip(&s.sources) {
            if on_exec && matches!(source.kind, SourceKind::Trace { .. }) {
                continue;
            }
            group.enable().map_err(|e| Error::Attach {
                object: source.object.clone(),
                source: e,
            })?;
        }
        s.enabled = true;
        Ok(s)
    }

    fn add_object(
        &mut self,
        src: &ObjectSource,
        opts: &SessionOptions,
        scope: Scope,
        tracefs: &Tracefs,
        cpus: &[u32],
    ) -> Result<(), Error> {
        let mut storage = sluice_core::object::ObjectStorage::new();
        let obj = Object::open(&src.bytes, &mut storage).map_err(|source| Error::Open {
            object: src.name.clone(),
            source,
        })?;
        // `--event PROG=SPEC` replaces a section name for the loader too, so the prologue
        // (and, with debug info, its probe site) is computed from the spec that is attached.
        let mut load_opts = opts.load.clone();
        for (i, p) in obj.programs().iter().enumerate() {
            if let Some(spec) = p.name.and_then(|n| opts.events.get(n)) {
                if load_opts.specs.len() <= i {
                    load_opts.specs.resize(i + 1, None);
                }
                if let Some(slot) = load_opts.specs.get_mut(i) {
                    *slot = Some(spec.clone());
                }
            }
        }
        let loaded = load(&obj, &load_opts).map_err(|source| Error::Load {
            object: src.name.clone(),
            source,
        })?;
        self.loaded.push(loaded);
        let Some(loaded) = self.loaded.last() else {
            return Ok(());
        };
        if let Some(pid) = scope.target_pid() {
            for map in loaded.maps() {
                if map.name() == TARGET_TGID_MAP
                    && map.map_type() == map_type::ARRAY
                    && map.key_size() == 4
                    && map.value_size() == 4
                {
                    let tgid = u32::try_from(pid).unwrap_or(0);
                    map.update(&0u32, &tgid, crate::load::UpdateMode::Any)
                        .map_err(|source| Error::Load {
                            object: src.name.clone(),
                            source,
                        })?;
                }
            }
        }
        // Output events first: the trace programs write into them.
        for map in loaded.maps() {
            if map.map_type() != map_type::PERF_EVENT_ARRAY {
                continue;
            }
            let group =
                attach::open_bpf_output(map, cpus, &opts.ring).map_err(|source| Error::Attach {
                    object: src.name.clone(),
                    source,
                })?;
            self.groups.push(group);
            self.sources.push(Source {
                name: format!("bpf-output:{}", map.name()),
                object: src.name.clone(),
                kind: SourceKind::Output {
                    map: map.name().to_owned(),
                },
            });
        }
        for prog in loaded.programs() {
            let spec_text = opts
                .events
                .get(prog.name())
                .map_or(prog.section_name(), String::as_str);
            let spec_err = |problem| Error::Spec {
                object: src.name.clone(),
                program: prog.name().to_owned(),
                spec: spec_text.to_owned(),
                problem,
            };
            let spec = match probe::parse(spec_text) {
                Ok(Section::Probe(spec)) => spec,
                Ok(Section::Title(t)) => {
                    let why = format!(
                        "section '{t}' names no probe; map it with --event {}=SPEC",
                        prog.name()
                    );
                    log::warn!("{}: skipping program '{}': {why}", src.name, prog.name());
                    self.skipped.push(Skipped {
                        object: src.name.clone(),
                        program: prog.name().to_owned(),
                        why,
                    });
                    continue;
                }
                Err(e) => return Err(spec_err(SpecProblem::Parse(e))),
            };
            let tracefs_err = |source| Error::Tracefs {
                program: Some(prog.name().to_owned()),
                source,
            };
            let (group, event) = match spec.target() {
                Target::Tracepoint { category, name } => (category.to_owned(), name.to_owned()),
                target => {
                    let kind = match spec.kind() {
                        ProbeKind::Kprobe => tracefs::ProbeKind::Kprobe,
                        ProbeKind::Kretprobe => tracefs::ProbeKind::Kretprobe,
                        ProbeKind::Uprobe => tracefs::ProbeKind::Uprobe,
                        ProbeKind::Uretprobe => tracefs::ProbeKind::Uretprobe,
                        ProbeKind::Tracepoint => {
                            return Err(spec_err(SpecProblem::TracepointWithoutTarget))
                        }
                    };
                    let req = if let Some(site) = prog.site() {
                        // The loader built this program's prologue for one DWARF site (`FUNC`
                        // alone is after the function's prologue, as perf places it; an
                        // inlined function has a program per instance): the probe must sit
                        // exactly there, with the kernel's own fetch of the same values
                        // alongside.
                        ProbeRequest {
                            kind,
                            target: site.target.clone(),
                            args: unique_arg_names(&site.fetch_args).join(" "),
                        }
                    } else if crate::probe::debuginfo::spec_needs_debug_info(&spec) {
                        return Err(spec_err(SpecProblem::NoSite));
                    } else {
                        let offset = match spec.place() {
                            Place::Line(_) => return Err(spec_err(SpecProblem::NoLineSite)),
                            Place::Offset(off) => off,
                            Place::Entry | Place::Return => 0,
                        };
                        ProbeRequest {
                            kind,
                            target: probe_target(target, offset).map_err(|e| match e {
                                Ok(t) => tracefs_err(t),
                                Err(problem) => spec_err(problem),
                            })?,
                            args: fetch_args(&spec),
                        }
                    };
                    let guard = tracefs
                        .add_probe_in(spec.group_or_default(), &req)
                        .map_err(tracefs_err)?;
                    let names = (guard.group().to_owned(), guard.event().to_owned());
                    log::info!("created probe {}/{} for '{spec}'", names.0, names.1);
                    self.probes.push(guard);
                    names
                }
            };
            let id = tracefs.event_id(&group, &event).map_err(tracefs_err)?;
            let format = tracefs.event_format(&group, &event).map_err(tracefs_err)?;
            let name = format!("{group}:{event}");
            let eopts = EventOptions {
                scope,
                ring: opts.ring,
                sample_ip: spec.kind() != ProbeKind::Tracepoint,
            };
            let events = attach::open_tracepoint(&name, id, cpus, &eopts).map_err(|source| {
                Error::Attach {
                    object: src.name.clone(),
                    source,
                }
            })?;
            // Kept before attaching so that a failure below still releases the events first.
            self.groups.push(events);
            if let Some(events) = self.groups.last() {
                events
                    .set_bpf(prog.name(), prog.as_fd())
                    .map_err(|source| Error::Attach {
                        object: src.name.clone(),
                        source,
                    })?;
            }
            self.sources.push(Source {
                name,
                object: src.name.clone(),
                kind: SourceKind::Trace {
                    format,
                    program: prog.name().to_owned(),
                },
            });
        }
        Ok(())
    }

    /// The event sources, in the order of [`Event`]'s `source` indices.
    #[must_use]
    pub fn sources(&self) -> &[Source] {
        &self.sources
    }

    /// Programs left out (opaque titles without a mapping).
    #[must_use]
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// The loaded objects (to fill maps before the workload starts).
    #[must_use]
    pub fn objects(&self) -> &[LoadedObject] {
        &self.loaded
    }

    /// Names of the tracefs probes made (`group/event`).
    #[must_use]
    pub fn probe_names(&self) -> Vec<String> {
        self.probes
            .iter()
            .map(|p| format!("{}/{}", p.group(), p.event()))
            .collect()
    }

    /// Totals so far.
    #[must_use]
    pub fn summary(&self) -> Summary {
        let mut s = self.summary.clone();
        s.samples.resize(self.sources.len(), 0);
        for ring in self.rings.rings() {
            s.lost.entry(ring.cpu()).or_insert(0);
        }
        s.malformed = self.rings.stats().malformed;
        s
    }

    /// Drains every ring now and hands the events to `sink`, time-ordered per batch.
    /// Returns how many events were handed out.
    pub fn drain(&mut self, sink: &mut dyn FnMut(&Session, &Event)) -> usize {
        let mut batch = self.rings.drain_batch();
        self.rings.take_errors();
        self.summary.samples.resize(self.sources.len(), 0);
        let n = batch.len();
        for (_, ev) in batch.drain(..) {
            let out = match ev {
                RingEvent::Sample(sample) => {
                    let source = self.ring_source.get(sample.ring).copied().unwrap_or(0);
                    if let Some(c) = self.summary.samples.get_mut(source) {
                        *c += 1;
                    }
                    Event::Sample { source, sample }
                }
                RingEvent::Lost { ring, cpu, lost } => {
                    let source = self.ring_source.get(ring).copied().unwrap_or(0);
                    *self.summary.lost.entry(cpu).or_insert(0) += lost;
                    Event::Lost { source, cpu, lost }
                }
            };
            sink(self, &out);
            if let Event::Sample { sample, .. } = out {
                self.rings.recycle(sample.raw);
            }
        }
        self.rings.return_batch(batch);
        n
    }

    /// Releases everything in the order of the module docs and reports what was removed:
    /// how many tracefs probes were made and removed, and the errors of those that stayed.
    pub fn close(self) -> Closed {
        let Session {
            rings,
            ring_source,
            groups,
            probes,
            loaded,
            ..
        } = self;
        drop(rings);
        drop(ring_source);
        drop(groups);
        let made = probes.len();
        let mut errors = Vec::new();
        for p in probes {
            let name = format!("{}/{}", p.group(), p.event());
            if let Err(e) = p.remove() {
                errors.push((name, e));
            }
        }
        drop(loaded);
        Closed {
            probes_removed: made - errors.len(),
            errors,
        }
    }

    /// Stops every event (the rings stay readable).
    pub fn disable(&mut self) {
        if self.enabled {
            for g in &self.groups {
                g.disable();
            }
            self.enabled = false;
        }
    }

    /// Records until the workload exits, the deadline passes or a signal comes, handing
    /// every event to `sink`; then disables the events and drains what is left.
    ///
    /// A signal is forwarded to the workload, which gets [`WORKLOAD_GRACE`] to exit before
    /// `SIGKILL`; a workload still running at the deadline gets `SIGTERM` the same way.
    ///
    /// # Errors
    /// [`Error::Io`] when polling or waiting for the workload fails.
    pub fn run(
        &mut self,
        ctl: RunControl<'_>,
        sink: &mut dyn FnMut(&Session, &Event),
    ) -> Result<Stop, Error> {
        let RunControl {
            mut child,
            deadline,
            signals,
            process,
        } = ctl;
        let pidfd = match process.map(watch_process).transpose()? {
            Some(None) => {
                // Already gone: nothing more can come from it.
                self.disable();
                self.drain(sink);
                return Ok(Stop::ProcessExited);
            }
            Some(Some(fd)) => Some(fd),
            None => None,
        };
        let stop = loop {
            if let Some(sig) = signals
                .map(SignalPipe::take)
                .and_then(|v| v.into_iter().find(|&s| s != libc::SIGCHLD))
            {
                if let Some(c) = child.as_deref_mut() {
                    end_workload(c, sig);
                }
                break Stop::Signal(sig);
            }
            if let Some(c) = child.as_deref_mut() {
                if let Some(status) = c.try_wait().map_err(|source| Error::Io {
                    what: "waiting for the workload",
                    source,
                })? {
                    break Stop::Exited(status);
                }
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                if let Some(c) = child.as_deref_mut() {
                    end_workload(c, libc::SIGTERM);
                }
                break Stop::Duration;
            }
            if let Some(fd) = &pidfd {
                if process_exited(fd) {
                    break Stop::ProcessExited;
                }
            }
            let wait = deadline.map_or(DRAIN_INTERVAL, |d| (d - now).min(DRAIN_INTERVAL));
            self.wait(signals, pidfd.as_ref(), wait)?;
            self.drain(sink);
        };
        self.disable();
        self.drain(sink);
        Ok(stop)
    }

    /// Sleeps until a ring or the signal pipe is readable, or `timeout`.
    fn wait(
        &self,
        signals: Option<&SignalPipe>,
        process: Option<&OwnedFd>,
        timeout: Duration,
    ) -> Result<(), Error> {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let mut fds: Vec<PollFd<'_>> = self
            .groups
            .iter()
            .flat_map(|g| g.events().iter())
            .map(|e| PollFd::new(&e.fd, PollFlags::IN))
            .collect();
        let sig = signals.map(SignalPipe::fd);
        if let Some(fd) = &sig {
            fds.push(PollFd::new(fd, PollFlags::IN));
        }
        if let Some(fd) = process {
            fds.push(PollFd::new(fd, PollFlags::IN));
        }
        let ts = Timespec {
            tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        match poll(&mut fds, Some(&ts)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => {
                return Err(Error::Io {
                    what: "poll(2) on the perf rings",
                    source: e.into(),
                })
            }
        }
        // A per-task event of an exited task polls POLLHUP for ever: do not spin on it.
        if fds
            .iter()
            .any(|f| f.revents().contains(PollFlags::HUP) && !f.revents().contains(PollFlags::IN))
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }
}

/// A pidfd for `pid` (`pidfd_open(2)`), `None` when the process is already gone.
fn watch_process(pid: i32) -> Result<Option<OwnedFd>, Error> {
    let io = |source: std::io::Error| Error::Io {
        what: "watching the process (pidfd_open, Linux 5.3)",
        source,
    };
    let p = rustix::process::Pid::from_raw(pid)
        .ok_or_else(|| io(std::io::Error::from_raw_os_error(libc::ESRCH)))?;
    match rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(rustix::io::Errno::SRCH) => Ok(None),
        Err(e) => Err(io(e.into())),
    }
}

/// Whether the process of `pidfd` exited (the pidfd polls readable then).
fn process_exited(pidfd: &OwnedFd) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
}

/// Sends `sig` to the workload, waits up to [`WORKLOAD_GRACE`], then kills it; reaps it.
fn end_workload(child: &mut Child, sig: i32) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        return;
    }
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    let signal =
        rustix::process::Signal::from_named_raw(sig).unwrap_or(rustix::process::Signal::TERM);
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process(pid, signal);
    }
    let until = Instant::now() + WORKLOAD_GRACE;
    while Instant::now() < until {
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}
