//! A record session, end to end: objects in, filtered samples out, everything released.
//!
//! ```text
//! objects ──open──► plans (probe::plans) ──load──► programs, maps (+ the workload's pid)
//!         ──link──► a Link per program, one per perf event array ──rings──► enable
//!         ──run───► drain until exit / deadline / signal, disable, drain ──close──► released
//! ```
//!
//! [`Session::start`] opens each object, plans its programs (a spec parsed once each, see
//! [`crate::probe::Plan`]), loads them, writes the workload's pid where the filters look
//! ([`crate::load::set_target_tgid`]), makes a [`Link`] per loaded program (its tracefs
//! probe — a kprobe or uprobe, under a name carrying our pid; tracepoints need none; a
//! program loaded once per DWARF site gets a probe per site —, one perf event per CPU, the
//! program attached) and one per perf event array (its `PERF_COUNT_SW_BPF_OUTPUT` events),
//! maps every ring and enables the events. Every BPF ring buffer (`BPF_MAP_TYPE_RINGBUF`) of
//! every object is a source of its own (`ringbuf:MAP`, after those with a link), read
//! through the same [`RingSet`]: its records are handed out as samples with no fields (a
//! ring-buffer record carries no pid, CPU or time), and the last drain reads each buffer to
//! its end ([`Session::drain_to_end`]). [`Session::run`] then drains the rings until
//! the workload exits, a deadline passes or a signal arrives, and drains once more after
//! disabling, so nothing published is left behind.
//!
//! # Release order
//! Each [`Link`] releases its own parts in the kernel's order (events disabled, closed,
//! then its probe removed). One order is left to the session: the rings go before the
//! links, because a mapped ring holds its event open and a probe whose event is open cannot
//! be removed (`EBUSY`). Programs and maps go last. A session that fails half-way is
//! dropped the same way (fields drop in declaration order), so every exit path releases
//! everything.

mod choose;
mod counters;
mod error;
mod options;
mod report;
mod run;
mod watch;

use std::fmt;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use sluice_core::perf::abi::map_type;
use sluice_core::Object;

use crate::attach::{Link, Linker, Scope};
use crate::load::{load_planned, set_target_tgid, LoadedObject};
use crate::probe::{plans, set_specs, Attach};
use crate::ring::{Merged, PerfRing, RingBuf, RingSet, SampleView};
use crate::tracefs::Tracefs;

pub use crate::load::TARGET_TGID_MAP;
pub use error::Error;
pub use options::{ObjectSource, RunControl, SessionOptions};
pub use report::{Closed, Event, Skipped, Source, SourceKind, Stop, Summary};
pub use watch::WORKLOAD_GRACE;

/// How long [`Session::run`] sleeps at most between two drains.
pub const DRAIN_INTERVAL: Duration = Duration::from_millis(100);

/// How long the last drain waits at most for a ring-buffer record still reserved.
pub const RINGBUF_BUSY_WAIT: Duration = Duration::from_millis(50);

/// A running record session (see the module docs for the release order).
pub struct Session {
    // Rings before links: see the module docs.
    rings: RingSet,
    ring_source: Vec<usize>,
    /// One per source, indexed like `sources`.
    links: Vec<Link>,
    /// The counters of `--pmu` maps (no ring, no source).
    counters: Vec<crate::attach::PerCpuEvents>,
    loaded: Vec<LoadedObject>,
    sources: Vec<Source>,
    skipped: Vec<Skipped>,
    summary: Summary,
    enabled: bool,
    /// Drains that handed out at least one event ([`Session::rounds`]).
    rounds: u64,
    /// Per ring: the losses handed out from the kernel's count (`PERF_FORMAT_LOST`)
    /// rather than from `PERF_RECORD_LOST` records ([`Session::drain`]).
    lost_unreported: Vec<u64>,
    /// Tracepoints whose samples depend on more than one program ([`Session::shared`]).
    shared: Vec<crate::attach::SharedTracepoint>,
    /// This run's programs: kernel id and `OBJECT: PROGRAM`.
    program_ids: Vec<(u32, String)>,
    /// `OBJECT: PROGRAM` of the programs that call `bpf_trace_printk` ([`Session::add_printk`]):
    /// whether perf can see their lines, and the name.
    printers: Vec<(bool, String)>,
    /// Per-source sample counts of the drain under way (kept for the capacity).
    drain_counts: Vec<u64>,
    /// The LOST records of the drain under way.
    drain_lost: Vec<(Option<u32>, u64)>,
    /// The source of the printk instance ([`Linker::printk_instance`]), if one is read.
    printk_source: Option<usize>,
    /// Its lines read and not yet handed out, in time order ([`Session::drain_rings`]).
    printk_lines: Vec<PrintkLine>,
}

/// A line of the printk instance: its time, CPU, record, and whether a drain kept it.
struct PrintkLine {
    time: u64,
    cpu: u32,
    held: bool,
    raw: Vec<u8>,
}

impl PrintkLine {
    /// As a sample of the instance's source: the thread is the record's `common_pid`;
    /// the process is not in the record (`None`).
    fn view(&self) -> SampleView<'_> {
        let tid = self
            .raw
            .get(4..8)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_ne_bytes);
        SampleView {
            ring: usize::MAX,
            fields: sluice_core::perf::record::SampleFields {
                tid,
                time: Some(self.time),
                cpu: Some(self.cpu),
                ..Default::default()
            },
            raw: &self.raw,
        }
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("sources", &self.sources)
            .field("probes", &self.probe_names().len())
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
            links: Vec::new(),
            counters: Vec::new(),
            loaded: Vec::new(),
            sources: Vec::new(),
            skipped: Vec::new(),
            summary: Summary::default(),
            enabled: false,
            rounds: 0,
            lost_unreported: Vec::new(),
            drain_counts: Vec::new(),
            drain_lost: Vec::new(),
            shared: Vec::new(),
            program_ids: Vec::new(),
            printers: Vec::new(),
            printk_source: None,
            printk_lines: Vec::new(),
        };
        // `--event NAME=SPEC` must name a program of some object (bad input: before
        // anything is made).
        choose::names_in(objects, &opts.events.programs(), "--event")?;
        let scope = opts.scope.unwrap_or(Scope::System);
        let tracefs = Tracefs::find().map_err(|source| Error::Tracefs {
            program: None,
            source,
        })?;
        let cpus = cpus(opts.cpus.as_deref())?;
        let linker = Linker {
            tracefs: &tracefs,
            cpus: &cpus,
            scope,
            ring: opts.ring,
            pmu: !opts.tracefs_probes,
        };
        {
            // Probes made and their events opened under the shared lock, so that a
            // `sluice probes --clean` meanwhile never takes a new probe for a leftover.
            let _setup = crate::tracefs::SetupLock::take(crate::tracefs::LockKind::Shared);
            // `--prog` names over every object: each object loads those it has.
            let chosen = match &opts.load.programs {
                Some(names) => Some(choose::per_object(objects, names)?),
                None => None,
            };
            for (i, src) in objects.iter().enumerate() {
                let programs = chosen.as_ref().and_then(|c| c.get(i)).cloned();
                s.add_object(src, opts, programs, &linker)?;
            }
            counters::check(&s.loaded, objects, &opts.pmu)?;
            s.add_printk(&linker);
        }
        s.shared = s.find_shared();
        s.map_rings(opts.ring.data_pages)?;
        s.map_ringbufs(objects)?;
        // Output events were opened first so no program writes into nothing; all start now,
        // the trace events at the workload's exec with `on_exec`.
        let on_exec = matches!(scope, Scope::Task { on_exec: true, .. });
        for (link, source) in s.links.iter().zip(&s.sources) {
            if on_exec && link.program().is_some() {
                continue;
            }
            link.enable().map_err(|e| Error::Attach {
                object: source.object.clone(),
                source: e,
            })?;
        }
        for c in &s.counters {
            c.enable().map_err(|source| Error::Attach {
                object: String::new(),
                source,
            })?;
        }
        s.enabled = true;
        Ok(s)
    }

    /// Opens, plans, loads and links the programs of one object.
    fn add_object(
        &mut self,
        src: &ObjectSource,
        opts: &SessionOptions,
        programs: Option<Vec<String>>,
        linker: &Linker<'_>,
    ) -> Result<(), Error> {
        let object = || src.name.clone();
        let mut storage = sluice_core::object::ObjectStorage::new();
        let obj = Object::open(&src.bytes, &mut storage).map_err(|source| Error::Open {
            object: object(),
            source,
        })?;
        // `--event PROG=SPEC` replaces a section name for the loader too, so the prologue
        // (and, with debug info, its probe site) is computed from the spec that is attached.
        let mut load_opts = opts.load.clone();
        load_opts.programs = programs;
        set_specs(&obj, &opts.events, &mut load_opts);
        let load_err = |source| Error::Load {
            object: object(),
            source,
        };
        let plans = plans(&obj, &load_opts).map_err(load_err)?;
        self.loaded
            .push(load_planned(&obj, &plans, &load_opts).map_err(load_err)?);
        let Some(loaded) = self.loaded.last() else {
            return Ok(());
        };
        if let Some(pid) = linker.scope.target_pid() {
            set_target_tgid(loaded, pid).map_err(load_err)?;
        }
        for prog in loaded.programs() {
            if let Ok(info) = prog.info() {
                self.program_ids
                    .push((info.id, format!("{}: {}", src.name, prog.name())));
            }
        }
        // Output events first: the trace programs write into them.
        for map in loaded.maps() {
            if map.map_type() != map_type::PERF_EVENT_ARRAY {
                continue;
            }
            if let Some(event) = opts.pmu.get(map.name()) {
                let events = counters::open(map, event, linker.cpus).map_err(|e| match e {
                    counters::Failure::Config(source) => Error::Load {
                        object: object(),
                        source,
                    },
                    counters::Failure::Events(source) => Error::Attach {
                        object: object(),
                        source,
                    },
                })?;
                self.counters.push(events);
                continue;
            }
            let link = linker.output(map).map_err(|source| Error::Attach {
                object: object(),
                source,
            })?;
            self.sources.push(Source {
                name: link.name().to_owned(),
                object: object(),
                kind: SourceKind::Output {
                    map: map.name().to_owned(),
                },
            });
            self.links.push(link);
        }
        // The programs of one object share its __bpf_usdt_specs: one id sequence.
        let mut usdt_ids = crate::attach::SpecIds::new(opts.load.bpf_cookie());
        for prog in loaded.programs() {
            // A program given several specs is loaded once per spec: its plan is the one of
            // its spec.
            let Some(plan) = plans
                .iter()
                .find(|p| p.index() == prog.index() && p.spec() == prog.spec())
            else {
                continue;
            };
            if let Attach::Skip(why) = plan.attach() {
                log::warn!("{}: skipping program '{}': {why}", src.name, prog.name());
                self.skipped.push(Skipped {
                    object: object(),
                    program: prog.name().to_owned(),
                    why: why.clone(),
                });
                continue;
            }
            let (link, format) = linker
                .attach_usdt(
                    plan,
                    prog,
                    (
                        loaded.map(crate::attach::SPECS_MAP),
                        loaded.map(crate::attach::IP_MAP),
                    ),
                    &mut usdt_ids,
                )
                .map_err(|e| Error::link(e, &src.name, prog.name(), plan.spec()))?;
            if sluice_core::insn::prints::calls_trace_printk(prog.insns()) {
                let seen = !matches!(plan.attach(), Attach::Tracepoint { .. });
                self.printers
                    .push((seen, format!("{}: {}", src.name, prog.name())));
            }
            let program = prog.name().to_owned();
            self.sources.push(Source {
                name: link.name().to_owned(),
                object: object(),
                kind: match format {
                    Some(format) => SourceKind::Trace { format, program },
                    None => SourceKind::Hook { program },
                },
            });
            self.links.push(link);
        }
        Ok(())
    }

    /// When an attached program calls `bpf_trace_printk` (or `bpf_trace_vprintk`), records
    /// the [`PRINTK_EVENT`](crate::attach::PRINTK_EVENT) tracepoint for the session's scope
    /// as a source of its own (no object; its `program` names the programs that print), so
    /// the lines come in time order with the other samples instead of staying in
    /// `trace_pipe`. The tracepoint is system-wide: lines other programs print (for the
    /// scope's tasks) come too, which is said once.
    ///
    /// A program on a perf tracepoint (`tracepoint/`, the syscalls) runs inside perf's
    /// handler, which holds perf's recursion guard: the kernel drops the perf sample of
    /// the printk tracepoint it fires. Kprobes, uprobes, raw and BTF tracepoints, fentry
    /// and perf_event programs run outside it. When a program on a perf tracepoint
    /// prints, every line is read from a private ftrace instance instead
    /// ([`Linker::printk_instance`], for the same scope), merged in time with the samples.
    fn add_printk(&mut self, linker: &Linker<'_>) {
        let names = |seen: bool| -> Vec<&str> {
            self.printers
                .iter()
                .filter(|p| p.0 == seen)
                .map(|p| p.1.as_str())
                .collect()
        };
        let event = crate::attach::PRINTK_EVENT;
        let (seen, unseen) = (names(true), names(false));
        if seen.is_empty() && unseen.is_empty() {
            return;
        }
        let instance = !unseen.is_empty();
        let printers = [seen, unseen].concat().join(", ");
        let made = if instance {
            linker.printk_instance()
        } else {
            linker.printk()
        };
        match made {
            Ok((link, format)) => {
                log::info!(
                    "{event}: recorded for {printers}; the tracepoint is system-wide: \
                     bpf_trace_printk lines of other programs on this system show too"
                );
                if instance {
                    log::info!("{event}: read from an ftrace instance (a perf tracepoint prints)");
                    self.printk_source = Some(self.sources.len());
                }
                self.sources.push(Source {
                    name: link.name().to_owned(),
                    object: String::new(),
                    kind: SourceKind::Trace {
                        format,
                        program: printers,
                    },
                });
                self.links.push(link);
            }
            Err(e) => {
                log::warn!(
                    "{event}: not recorded ({e}): what {printers} print stays in trace_pipe"
                );
            }
        }
    }

    /// Maps the ring of every event and sends followers' records into them. Rings are
    /// drained in the order they are pushed: trace rings first, bpf-output rings last. A
    /// program writes its output before the kernel writes the probe's sample, so once a
    /// sample has been read its output is already in its ring and lands in the same batch
    /// (the text output pairs the two).
    fn map_rings(&mut self, data_pages: usize) -> Result<(), Error> {
        let traces = self
            .links
            .iter()
            .enumerate()
            .filter(|(_, l)| l.program().is_some());
        let outputs = self
            .links
            .iter()
            .enumerate()
            .filter(|(_, l)| l.program().is_none());
        for (source, link) in traces.chain(outputs) {
            let Some(events) = link.events() else {
                continue;
            };
            for e in events.events() {
                let ring = PerfRing::map(&e.fd, data_pages, events.format(), Some(e.cpu))
                    .map_err(Error::Ring)?;
                self.rings.push_unpolled(ring);
                self.ring_source.push(source);
            }
            events.redirect_followers().map_err(|e| Error::Attach {
                object: self
                    .sources
                    .get(source)
                    .map_or_else(String::new, |x| x.object.clone()),
                source: e,
            })?;
        }
        Ok(())
    }

    /// The tracepoints whose samples depend on more than one program: another process's
    /// programs beside ours, or several of this run's (module [`crate::attach`]'s
    /// `shared`). Worked out at start; a caller should warn about each
    /// ([`crate::attach::SharedTracepoint::warning`]).
    #[must_use]
    pub fn shared(&self) -> &[crate::attach::SharedTracepoint] {
        &self.shared
    }

    /// Asks the kernel which programs are on each tracepoint we attached to
    /// ([`crate::attach::programs_on`]); a query the kernel refuses is logged and skipped.
    fn find_shared(&self) -> Vec<crate::attach::SharedTracepoint> {
        let ours = &self.program_ids;
        let mut found: Vec<crate::attach::SharedTracepoint> = Vec::new();
        for link in &self.links {
            let (Some(_), Some(events)) = (link.program(), link.events()) else {
                continue;
            };
            if found.iter().any(|f| f.event == link.name()) {
                continue;
            }
            match crate::attach::programs_on(events) {
                Ok((ids, total)) => found.extend(crate::attach::sharing(
                    link.name(),
                    (&ids, total),
                    ours,
                    crate::attach::program_name,
                )),
                Err(e) => log::debug!("PERF_EVENT_IOC_QUERY_BPF on {}: {e}", link.name()),
            }
        }
        found
    }

    /// Maps every ring buffer of every object, each a source of its own after those with a
    /// link (so `links[i]` stays the link of `sources[i]`), its ring after the perf rings.
    fn map_ringbufs(&mut self, objects: &[ObjectSource]) -> Result<(), Error> {
        for (loaded, src) in self.loaded.iter().zip(objects) {
            for map in loaded.maps() {
                if map.map_type() != map_type::RINGBUF {
                    continue;
                }
                let ring = RingBuf::map(map, map.name(), u64::from(map.max_entries())).map_err(
                    |source| Error::RingBuf {
                        object: src.name.clone(),
                        source,
                    },
                )?;
                // Not polled by the set: `run` polls the map fds with the perf rings'.
                let index =
                    self.rings
                        .push_ringbuf(None, ring)
                        .map_err(|source| Error::RingBuf {
                            object: src.name.clone(),
                            source,
                        })?;
                self.ring_source.resize(index, 0);
                self.ring_source.push(self.sources.len());
                self.sources.push(Source {
                    name: format!("ringbuf:{}", map.name()),
                    object: src.name.clone(),
                    kind: SourceKind::RingBuf {
                        map: map.name().to_owned(),
                    },
                });
            }
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

    /// The perf events of source `source` (an index into [`Session::sources`]): their
    /// attr and ids, for a perf.data file.
    #[must_use]
    pub fn events(&self, source: usize) -> Option<&crate::attach::PerCpuEvents> {
        self.links.get(source).and_then(Link::events)
    }

    /// How many drains so far handed out events: it changes between two events exactly
    /// when every ring was read again (perf's rounds: a sink that sees it change may write
    /// `FINISHED_ROUND`).
    #[must_use]
    pub fn rounds(&self) -> u64 {
        self.rounds
    }

    /// Counters of the ring buffers, summed (records, discarded, wrapped, malformed).
    #[must_use]
    pub fn ringbuf_stats(&self) -> crate::ring::RingBufStats {
        self.rings.ringbuf_stats()
    }

    /// Names of the tracefs probes made (`group/event`).
    #[must_use]
    pub fn probe_names(&self) -> Vec<String> {
        self.links.iter().filter_map(Link::probe_name).collect()
    }

    /// Totals so far.
    #[must_use]
    pub fn summary(&self) -> Summary {
        let mut s = self.summary.clone();
        s.samples.resize(self.sources.len(), 0);
        for ring in self.rings.rings() {
            s.lost.entry(ring.cpu()).or_insert(0);
        }
        let bufs = self.rings.ringbuf_stats();
        s.malformed = self.rings.stats().malformed + bufs.malformed;
        s.discarded = bufs.discarded;
        s
    }

    /// Drains every ring now and hands the events to `sink`, time-ordered per batch.
    /// Returns how many events were handed out.
    ///
    /// Once the events are disabled ([`Session::disable`]), the drain also hands out, as
    /// one [`Event::Lost`] per ring, the losses the kernel counted but never wrote as a
    /// `PERF_RECORD_LOST` (it writes one only when the next record fits, and none comes
    /// after the end): the kernel's count of each ring's events ([`PerCpuEvents::lost_on`],
    /// Linux 6.0) less what the ring's records said. Samples and lost then add up to what
    /// was emitted, exactly.
    ///
    /// [`PerCpuEvents::lost_on`]: crate::attach::PerCpuEvents::lost_on
    pub fn drain(&mut self, sink: &mut dyn FnMut(&Session, &Event<'_>)) -> usize {
        let n = self.drain_rings(sink);
        if self.enabled {
            n
        } else {
            n + self.drain_unreported_lost(sink)
        }
    }

    /// [`Session::drain`]'s final part: losses not reported by a record, per ring.
    fn drain_unreported_lost(&mut self, sink: &mut dyn FnMut(&Session, &Event<'_>)) -> usize {
        let counted: Vec<(usize, Option<u32>, u64)> = self
            .rings
            .rings()
            .zip(&self.ring_source)
            .map(|(r, &source)| (source, r.cpu(), r.stats().lost))
            .collect();
        self.lost_unreported.resize(counted.len(), 0);
        let mut n = 0;
        for (index, (source, cpu, from_records)) in counted.into_iter().enumerate() {
            let kernel = cpu.and_then(|c| {
                self.links
                    .get(source)
                    .and_then(Link::events)
                    .and_then(|e| e.lost_on(c))
            });
            let (Some(kernel), Some(done)) = (kernel, self.lost_unreported.get_mut(index)) else {
                continue;
            };
            let lost = kernel.saturating_sub(from_records.saturating_add(*done));
            if lost == 0 {
                continue;
            }
            *done += lost;
            *self.summary.lost.entry(cpu).or_insert(0) += lost;
            sink(self, &Event::Lost { source, cpu, lost });
            n += 1;
        }
        n
    }

    /// Drains the rings themselves (see [`Session::drain`]): the rings' merge walked in
    /// place, each record handed to `sink` as it is read (no copy, no allocation).
    fn drain_rings(&mut self, sink: &mut dyn FnMut(&Session, &Event<'_>)) -> usize {
        let mut m = self.rings.take_merge();
        self.rings.merge_begin(&mut m);
        let mut counts = std::mem::take(&mut self.drain_counts);
        counts.clear();
        counts.resize(self.sources.len(), 0);
        let mut lost_seen = std::mem::take(&mut self.drain_lost);
        lost_seen.clear();
        // The printk instance is read after the rings' heads: a sample read now has the
        // line its program printed before it in there already.
        let mut lines = std::mem::take(&mut self.printk_lines);
        if let Some(i) = self.printk_source {
            if let Some(inst) = self.links.get_mut(i).and_then(Link::instance_mut) {
                // In time order: each CPU's come in order, after the lines kept.
                inst.read(&mut |cpu, time, raw| {
                    let at = lines.partition_point(|l| l.time <= time);
                    let line = PrintkLine {
                        time,
                        cpu,
                        held: false,
                        raw: raw.to_vec(),
                    };
                    lines.insert(at, line);
                });
                lost_seen.extend(inst.take_missed().into_iter().map(|(c, n)| (Some(c), n)));
            }
        }
        let printk = self.printk_source.unwrap_or(usize::MAX);
        let mut next_line = 0usize;
        // A sink that sees `rounds` change knows every ring was read again.
        self.rounds += 1;
        let mut n = 0usize;
        while let Some(rec) = self.rings.merge_next(&mut m) {
            let ev = match rec {
                Merged::Sample { ring, fields, raw } => {
                    let source = self.ring_source.get(ring).copied().unwrap_or(0);
                    if let Some(c) = counts.get_mut(source) {
                        *c += 1;
                    }
                    Event::Sample {
                        source,
                        sample: SampleView { ring, fields, raw },
                    }
                }
                Merged::Lost { ring, cpu, lost } => {
                    let source = self.ring_source.get(ring).copied().unwrap_or(0);
                    lost_seen.push((cpu, lost));
                    Event::Lost { source, cpu, lost }
                }
                Merged::Skipped => continue,
            };
            // The instance's lines up to this sample's time go first.
            let time = match &ev {
                Event::Sample { sample, .. } => sample.fields.time,
                Event::Lost { .. } | Event::Drained => None,
            };
            while let Some(l) = lines
                .get(next_line)
                .filter(|l| time.is_some_and(|t| l.time <= t))
            {
                sink(
                    self,
                    &Event::Sample {
                        source: printk,
                        sample: l.view(),
                    },
                );
                next_line += 1;
                n += 1;
            }
            n += 1;
            sink(self, &ev);
        }
        // Lines newer than every sample wait one drain for samples older than them that
        // the rings had not shown yet; the last drain hands out all.
        while let Some(l) = lines.get(next_line).filter(|l| l.held || !self.enabled) {
            sink(
                self,
                &Event::Sample {
                    source: printk,
                    sample: l.view(),
                },
            );
            next_line += 1;
            n += 1;
        }
        if let Some(c) = counts.get_mut(printk) {
            *c += next_line as u64;
        }
        lines.drain(..next_line);
        for l in &mut lines {
            l.held = true;
        }
        self.printk_lines = lines;
        if n == 0 {
            self.rounds -= 1;
        }
        self.rings.merge_end(m);
        self.rings.take_errors();
        self.summary.samples.resize(self.sources.len(), 0);
        for (total, c) in self.summary.samples.iter_mut().zip(&counts) {
            *total += c;
        }
        for &(cpu, lost) in &lost_seen {
            *self.summary.lost.entry(cpu).or_insert(0) += lost;
        }
        self.drain_counts = counts;
        self.drain_lost = lost_seen;
        n
    }

    /// What a run waits on: every ring's event, then the ring-buffer maps (readable when
    /// the kernel wakes a reader). The same order every time ([`watch::Waiter`]).
    fn wake_fds(&self) -> impl Iterator<Item = BorrowedFd<'_>> {
        let rings = self.links.iter().filter_map(Link::events);
        let events = rings.flat_map(|g| g.events().iter().map(|e| e.fd.as_fd()));
        let maps = self.loaded.iter().flat_map(LoadedObject::maps);
        events.chain(
            maps.filter(|m| m.map_type() == map_type::RINGBUF)
                .map(AsFd::as_fd),
        )
    }

    /// The last drain, after the events are disabled: a ring-buffer record reserved by a
    /// program still running when its link went away is committed within microseconds,
    /// so a drain that stopped at one (BUSY) is repeated, for at most
    /// [`RINGBUF_BUSY_WAIT`].
    pub fn drain_to_end(&mut self, sink: &mut dyn FnMut(&Session, &Event<'_>)) -> usize {
        let mut n = self.drain(sink);
        let until = Instant::now() + RINGBUF_BUSY_WAIT;
        while self.rings.ringbuf_busy() && Instant::now() < until {
            std::thread::sleep(Duration::from_micros(200));
            n += self.drain(sink);
        }
        if self.rings.ringbuf_busy() {
            log::warn!(
                "a ring-buffer record stayed reserved (BUSY): the records after it are left unread"
            );
        }
        n
    }

    /// Releases everything in the order of the module docs and reports what was removed:
    /// how many tracefs probes were made and removed, and the errors of those that stayed.
    pub fn close(self) -> Closed {
        let Session {
            rings,
            links,
            counters,
            loaded,
            ..
        } = self;
        drop(rings);
        let mut closed = Closed::default();
        for (name, removed) in links.into_iter().filter_map(Link::close) {
            match removed {
                Ok(()) => closed.probes_removed += 1,
                Err(e) => closed.errors.push((name, e)),
            }
        }
        drop(counters);
        drop(loaded);
        closed
    }

    /// Stops every event (the rings stay readable).
    pub fn disable(&mut self) {
        if self.enabled {
            for link in &self.links {
                link.disable();
            }
            for c in &self.counters {
                c.disable();
            }
            self.enabled = false;
        }
    }
}

/// The CPUs to record on: `asked`, each of which must be online, else every online CPU.
fn cpus(asked: Option<&[u32]>) -> Result<Vec<u32>, Error> {
    let online = crate::kernel::cpus::online().map_err(|source| Error::Cpus { source })?;
    match asked {
        None => Ok(online),
        Some(asked) => match asked.iter().find(|c| !online.contains(c)) {
            Some(&cpu) => Err(Error::Cpu { cpu, online }),
            None => Ok(asked.to_vec()),
        },
    }
}
