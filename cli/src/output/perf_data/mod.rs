//! `record --perf-data FILE`: the recording in perf's own format, for `perf script`,
//! `perf report` and the tools built on them, on this machine or any other.
//!
//! What goes in (the layouts are `sluice_core::perf::data`'s):
//! - one attr per event source of the session, with the id of each of its per-CPU (and
//!   per-thread) perf events (`PERF_EVENT_IOC_ID`), and one for a `dummy:u` side-band
//!   event ([`open_tracking`]) whose kernel records (`COMM` with the exec flag, `MMAP2`,
//!   `FORK`, `EXIT`) name tasks and map their addresses. Every event has
//!   `PERF_SAMPLE_IDENTIFIER` and `sample_id_all`, so each record names its attr;
//! - before the data, the records perf synthesizes from `/proc` for the tasks of interest
//!   (the workload, the `-p` process, every process system-wide; [`synth`]);
//! - the samples as the kernel wrote them (tracepoints, kprobes and uprobes with their
//!   fetch-args, bpf-output payloads as perf's `bpf-output` event has them), `LOST`
//!   records, and `FINISHED_ROUND` after each drain of every ring (as `perf record`
//!   writes it: no record sorts across it);
//! - the features `perf script` and `perf report` need to stand alone: `TRACING_DATA`
//!   (the format of every tracepoint and probe event, read while the probes exist, so
//!   fields decode by name), `EVENT_DESC`, `BUILD_ID` (the binaries probed and the kernel),
//!   `HOSTNAME`, `OSRELEASE`, `VERSION`, `ARCH`, `NRCPUS`, `CPUDESC`, `CMDLINE`.
//!
//! `--perf-data -` writes perf's pipe format on stdout instead: the same content as
//! `HEADER_ATTR`, `HEADER_FEATURE`, `HEADER_TRACING_DATA` and `HEADER_BUILD_ID` records
//! ahead of the data, flushed at every round, so `sluice record --perf-data - ... | perf
//! script` prints as the recording goes. A file is written atomically ([`target`]).
//!
//! A sample the encoder cannot write (a RAW payload over the record size) is skipped and
//! counted in [`Stats::malformed`]; nothing here panics on what a ring held.

mod meta;
mod synth;
mod target;

use std::fmt;

use sluice_core::perf::abi::PerfEventAttr;
use sluice_core::perf::data::header::{
    self as fheader, FileHeader, Section, FILE_ATTR_SIZE, FILE_HEADER_SIZE,
};
use sluice_core::perf::data::records::{self, IdLayout, SampleId, RECORD_HEADER_BUILD_ID};
use sluice_core::perf::data::tracing::{self, System, TracingFiles};
use sluice_core::perf::data::{features as feat, Sink};
use sluice_core::perf::record::{Record, SampleType};
use sluice_runtime::attach::{open_tracking, PerCpuEvents, Scope};
use sluice_runtime::ring::{PerfRing, RingConfig};
use sluice_runtime::session::{Event, Session, SourceKind};
use sluice_runtime::sys::out::Stops;
use sluice_runtime::tracefs::Tracefs;

pub use target::{Target, TargetError};

/// Bytes buffered before a write to the output.
const FLUSH_AT: usize = 1 << 20;

/// A growable buffer the encoders write into (it never fails).
#[derive(Debug, Default)]
pub struct Buf(pub Vec<u8>);

impl Sink for Buf {
    type Error = sluice_core::Error;

    fn put(&mut self, bytes: &[u8]) -> Result<(), sluice_core::Error> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }
}

/// Why a perf.data recording failed.
#[derive(Debug)]
pub enum Error {
    /// The output file.
    Target(TargetError),
    /// Writing the output.
    Write(std::io::Error),
    /// An encoder refused (a value that does not fit the format).
    Format(sluice_core::Error),
    /// The side-band event, or the ids of the session's events.
    Events(sluice_runtime::attach::Error),
    /// Mapping the side-band event's ring.
    Ring(sluice_runtime::ring::Error),
    /// Reading the event formats.
    Tracefs(sluice_runtime::tracefs::Error),
}

impl Error {
    /// A write to a pipe whose reader is gone (`| perf script` ended early).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Write(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Target(e) => write!(f, "{e}"),
            Error::Write(e) => write!(f, "writing the perf.data output: {e}"),
            Error::Format(e) => write!(f, "encoding the perf.data output: {e}"),
            Error::Events(e) => write!(f, "perf.data side-band event: {e}"),
            Error::Ring(e) => write!(f, "perf.data side-band ring: {e}"),
            Error::Tracefs(e) => write!(f, "perf.data tracing data: {e}"),
        }
    }
}

impl From<sluice_core::Error> for Error {
    fn from(e: sluice_core::Error) -> Self {
        Error::Format(e)
    }
}

/// Counts of what was written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Samples.
    pub samples: u64,
    /// `LOST` records.
    pub lost: u64,
    /// Side-band records of the kernel (`COMM`, `MMAP2`, `FORK`, `EXIT`, ...).
    pub side_band: u64,
    /// Records synthesized from `/proc`.
    pub synthesized: u64,
    /// `FINISHED_ROUND` records.
    pub rounds: u64,
    /// Records skipped because they could not be encoded.
    pub malformed: u64,
    /// Bytes of the data section.
    pub data_bytes: u64,
}

/// What the writer keeps of one event source.
#[derive(Debug)]
struct SourceIds {
    sample_type: SampleType,
    /// `(cpu, id)` of each perf event with a ring.
    by_cpu: Vec<(u32, u64)>,
}

/// The side-band event and its rings (rings first: they go before the events).
struct Tracking {
    rings: Vec<PerfRing>,
    events: PerCpuEvents,
}

/// What [`Recording::begin`] needs besides the session.
#[derive(Clone, Copy, Debug)]
pub struct Setup<'a> {
    /// Whose events the session records.
    pub scope: Scope,
    /// The session's ring configuration (the side-band rings get the same).
    pub ring: RingConfig,
    /// The command line, for `HEADER_CMDLINE`.
    pub argv: &'a [String],
}

/// A perf.data recording in progress.
pub struct Recording<'s> {
    // Tracking before target: its rings and events are released first.
    tracking: Option<Tracking>,
    target: Target,
    buf: Buf,
    sources: Vec<Option<SourceIds>>,
    layout: IdLayout,
    attrs: Section,
    data_start: u64,
    features: Vec<(u32, Vec<u8>)>,
    round: u64,
    round_open: bool,
    last_time: u64,
    stats: Stats,
    error: Option<Error>,
    /// What ends a wait for room on a pipe ([`Recording::watch`]).
    stops: Option<Stops<'s>>,
}

impl fmt::Debug for Recording<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recording")
            .field("target", &self.target)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// One attr of the output: its attr, name and ids.
struct AttrOut {
    attr: PerfEventAttr,
    name: String,
    ids: Vec<u64>,
}

impl<'s> Recording<'s> {
    /// Starts the recording once `session` has opened its events (and before a workload
    /// held for `exec` is released): opens the side-band event, reads the event formats,
    /// and writes everything that goes before the data, synthesized records included.
    ///
    /// # Errors
    /// [`Error`] of the step that failed.
    /// A pipe that stays full while the preamble is written gives up once one of `stops` is
    /// asked, as later writes do ([`Recording::watch`]).
    pub fn begin(
        target: Target,
        session: &Session,
        setup: &Setup<'_>,
        stops: Stops<'s>,
    ) -> Result<Self, Error> {
        let mut outs: Vec<AttrOut> = Vec::new();
        let mut sources = Vec::new();
        let mut cpus: Vec<u32> = Vec::new();
        for (i, src) in session.sources().iter().enumerate() {
            let Some(events) = session.events(i) else {
                sources.push(None);
                continue;
            };
            let ids = events.ids().map_err(Error::Events)?;
            let by_cpu = events
                .events()
                .iter()
                .map(|e| e.cpu)
                .zip(ids.iter().copied())
                .collect();
            cpus.extend(events.events().iter().map(|e| e.cpu));
            sources.push(Some(SourceIds {
                sample_type: SampleType(events.attr().sample_type),
                by_cpu,
            }));
            outs.push(AttrOut {
                attr: *events.attr(),
                name: src.name.clone(),
                ids,
            });
        }
        cpus.sort_unstable();
        cpus.dedup();
        let tracking = open_side_band(setup, &cpus)?;
        outs.push(AttrOut {
            attr: *tracking.events.attr(),
            name: "dummy:u".into(),
            ids: tracking.events.ids().map_err(Error::Events)?,
        });
        let layout = IdLayout {
            sample_type: SampleType(tracking.events.attr().sample_type),
            sample_id_all: true,
        };
        let mut r = Recording {
            tracking: Some(tracking),
            target,
            buf: Buf(Vec::with_capacity(FLUSH_AT + (64 << 10))),
            sources,
            layout,
            attrs: Section::default(),
            data_start: 0,
            features: features(session, &outs, setup)?,
            round: session.rounds(),
            round_open: false,
            last_time: 0,
            stats: Stats::default(),
            error: None,
            stops: Some(stops),
        };
        r.preamble(&outs)?;
        r.synthesize(setup.scope)?;
        // Not flushed here: the preamble (its tracing data alone can be larger than a pipe)
        // goes out with the first round, once the run's loop watches for stops and can end
        // a run whose pipe nobody reads with its summary.
        r.error.take().map_or(Ok(r), Err)
    }

    /// Writes what precedes the data: a file's header (rewritten at the end), ids and
    /// attrs; or the pipe header and the header records.
    fn preamble(&mut self, outs: &[AttrOut]) -> Result<(), Error> {
        let b = &mut self.buf;
        if self.target.is_pipe() {
            fheader::pipe_header(b)?;
            for o in outs {
                fheader::header_attr(b, &o.attr, &o.ids)?;
            }
            for (id, body) in &self.features {
                match *id {
                    feat::TRACING_DATA => {
                        fheader::header_tracing_data(b, body.len())?;
                        b.put(body)?;
                        b.zeros(fheader::tracing_padding(body.len()))?;
                    }
                    feat::BUILD_ID => b.put(body)?,
                    _ => fheader::header_feature(b, *id, body)?,
                }
            }
            return Ok(());
        }
        b.zeros(FILE_HEADER_SIZE as usize)?;
        let mut at = FILE_HEADER_SIZE;
        let mut sections = Vec::with_capacity(outs.len());
        for o in outs {
            fheader::ids(b, &o.ids)?;
            let size = o.ids.len() as u64 * 8;
            sections.push(Section { offset: at, size });
            at += size;
        }
        self.attrs = Section {
            offset: at,
            size: outs.len() as u64 * FILE_ATTR_SIZE,
        };
        for (o, ids) in outs.iter().zip(sections) {
            fheader::file_attr(b, &o.attr, ids)?;
        }
        self.data_start = self.attrs.offset + self.attrs.size;
        Ok(())
    }

    /// The records perf synthesizes for tasks that exist before the events.
    fn synthesize(&mut self, scope: Scope) -> Result<(), Error> {
        let pids = match scope {
            Scope::System => synth::all_pids(),
            Scope::Task { pid, .. } | Scope::Process { pid } => {
                vec![u32::try_from(pid).unwrap_or(0)]
            }
        };
        self.stats.synthesized += synth::kernel(&mut self.buf, self.layout)?;
        for pid in pids {
            let n = self.buf.0.len();
            synth::process(&mut self.buf, self.layout, pid)?;
            self.stats.synthesized += count_records(self.buf.0.get(n..).unwrap_or_default());
            if self.buf.0.len() > FLUSH_AT {
                self.flush();
            }
        }
        self.round_open = true;
        Ok(())
    }

    /// Whether a write failed (nothing more will be written: the run should end) for a
    /// reason of its own: a pipe that gave up waiting did so because a stop was asked
    /// already ([`Recording::watch`]), and that stop is the run's reason.
    pub fn failed(&self) -> bool {
        self.error.as_ref().is_some_and(
            |e| !matches!(e, Error::Write(w) if w.kind() == std::io::ErrorKind::WouldBlock),
        )
    }

    /// From now on a write to a pipe that stays full gives up once one of `stops` is asked
    /// (as stdout's text does: [`sluice_runtime::sys::out`]): an unread `--perf-data -`
    /// cannot make the run deaf to Ctrl-C or SIGTERM. A file is written as before.
    pub fn watch(&mut self, stops: Stops<'s>) {
        self.stops = Some(stops);
    }

    /// Hands one session event to the file (the session's sink calls this).
    pub fn event(&mut self, s: &Session, e: &Event<'_>) {
        if self.error.is_some() {
            return;
        }
        if s.rounds() != self.round {
            self.round = s.rounds();
            self.end_round();
        }
        let wrote = match e {
            // Rounds end by the session's count (above), not by its waits.
            Event::Drained => return,
            Event::Sample { source, sample } => {
                let Some(Some(src)) = self.sources.get(*source) else {
                    return;
                };
                let r = records::sample(&mut self.buf, src.sample_type, &sample.fields, sample.raw);
                if r.is_ok() {
                    self.stats.samples += 1;
                    self.last_time = self.last_time.max(sample.fields.time.unwrap_or(0));
                }
                r
            }
            Event::Lost { source, cpu, lost } => {
                let Some(Some(src)) = self.sources.get(*source) else {
                    return;
                };
                let id = src
                    .by_cpu
                    .iter()
                    .find(|(c, _)| Some(*c) == *cpu)
                    .or(src.by_cpu.first())
                    .map_or(0, |(_, id)| *id);
                let sid = SampleId {
                    pid: u32::MAX,
                    tid: u32::MAX,
                    time: self.last_time,
                    id,
                    cpu: cpu.unwrap_or(0),
                };
                let layout = IdLayout {
                    sample_type: src.sample_type,
                    sample_id_all: true,
                };
                let r = records::lost(&mut self.buf, layout, *lost, &sid);
                if r.is_ok() {
                    self.stats.lost += 1;
                }
                r
            }
        };
        match wrote {
            Ok(()) => self.round_open = true,
            Err(_) => self.stats.malformed += 1,
        }
        if self.buf.0.len() >= FLUSH_AT {
            self.flush();
        }
    }

    /// Drains the side-band rings and closes the round (`FINISHED_ROUND`); a pipe is
    /// flushed so its reader sees the round.
    fn end_round(&mut self) {
        self.drain_side_band();
        if self.round_open {
            if records::finished_round(&mut self.buf).is_ok() {
                self.stats.rounds += 1;
            }
            self.round_open = false;
        }
        if self.target.is_pipe() {
            self.flush();
        }
    }

    fn drain_side_band(&mut self) {
        let Some(t) = &mut self.tracking else {
            return;
        };
        let (buf, stats) = (&mut self.buf, &mut self.stats);
        let (layout, time) = (self.layout, self.last_time);
        let mut wrote = false;
        for ring in &mut t.rings {
            let result = ring.drain(|rec| {
                let ok = match rec {
                    Record::Other { header, body } => {
                        records::verbatim(buf, header.kind, header.misc, body).is_ok()
                    }
                    Record::Lost { id, lost } => {
                        let sid = SampleId {
                            pid: u32::MAX,
                            tid: u32::MAX,
                            time,
                            id,
                            cpu: 0,
                        };
                        records::lost(buf, layout, lost, &sid).is_ok() && {
                            stats.lost += 1;
                            true
                        }
                    }
                    _ => return,
                };
                if ok {
                    stats.side_band += 1;
                    wrote = true;
                } else {
                    stats.malformed += 1;
                }
            });
            if let Err(e) = result {
                log::warn!("perf.data side-band ring: {e}");
                stats.malformed += 1;
            }
        }
        self.round_open |= wrote;
    }

    /// Writes the buffer out (the first write error is kept; nothing more is written).
    fn flush(&mut self) {
        if self.buf.0.is_empty() {
            return;
        }
        if self.error.is_none() {
            if let Err(e) = self.target.write_all(&self.buf.0, self.stops) {
                self.error = Some(Error::Write(e));
            }
        }
        self.buf.0.clear();
    }

    /// Ends the recording after the session's last drain: the side-band event stopped and
    /// drained, the last round closed, and a file's features and final header written
    /// before it takes its name.
    ///
    /// # Errors
    /// The first write error of the recording, or of this step.
    pub fn finish(mut self) -> Result<Stats, Error> {
        if let Some(t) = &self.tracking {
            t.events.disable();
        }
        self.end_round();
        self.tracking = None;
        self.flush();
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if !self.target.is_pipe() {
            self.trailer()?;
        }
        self.target.commit().map_err(Error::Target)?;
        Ok(self.stats)
    }

    /// A file's feature table and features after the data, then its header.
    fn trailer(&mut self) -> Result<(), Error> {
        let end = self.file_len()?;
        let data = Section {
            offset: self.data_start,
            size: end - self.data_start,
        };
        self.stats.data_bytes = data.size;
        let mut header = FileHeader {
            attrs: self.attrs,
            data,
            ..FileHeader::default()
        };
        let mut at = end + self.features.len() as u64 * 16;
        for (id, body) in &self.features {
            header.features.set(*id);
            Section {
                offset: at,
                size: body.len() as u64,
            }
            .write(&mut self.buf)?;
            at += body.len() as u64;
        }
        for (_, body) in &self.features {
            self.buf.0.extend_from_slice(body);
        }
        self.flush();
        let mut head = Buf::default();
        header.write(&mut head)?;
        self.target.write_at(0, &head.0).map_err(Error::Write)?;
        self.error.take().map_or(Ok(()), Err)
    }

    fn file_len(&mut self) -> Result<u64, Error> {
        match &mut self.target {
            Target::File { file: Some(f), .. } => {
                use std::io::Seek as _;
                f.stream_position().map_err(Error::Write)
            }
            _ => Err(Error::Write(std::io::ErrorKind::NotConnected.into())),
        }
    }
}

/// Opens, maps and (unless the workload's `exec` does it) enables the side-band event.
fn open_side_band(setup: &Setup<'_>, cpus: &[u32]) -> Result<Tracking, Error> {
    let events = open_tracking(setup.scope, cpus, &setup.ring).map_err(Error::Events)?;
    let mut rings = Vec::with_capacity(events.events().len());
    for e in events.events() {
        rings.push(
            PerfRing::map(&e.fd, setup.ring.data_pages, events.format(), Some(e.cpu))
                .map_err(Error::Ring)?,
        );
    }
    events.redirect_followers().map_err(Error::Events)?;
    if !matches!(setup.scope, Scope::Task { on_exec: true, .. }) {
        events.enable().map_err(Error::Events)?;
    }
    Ok(Tracking { rings, events })
}

/// How many records `bytes` (whole records) holds.
fn count_records(bytes: &[u8]) -> u64 {
    let mut n = 0;
    let mut at = 0usize;
    while let Some(size) = bytes.get(at + 6..at + 8) {
        let size = size.try_into().map_or(0, u16::from_ne_bytes) as usize;
        if size == 0 {
            break;
        }
        at += size;
        n += 1;
    }
    n
}

/// Every feature section, in bit order.
fn features(
    session: &Session,
    outs: &[AttrOut],
    setup: &Setup<'_>,
) -> Result<Vec<(u32, Vec<u8>)>, Error> {
    let mut v: Vec<(u32, Vec<u8>)> = Vec::new();
    let mut one = |id: u32, f: &mut dyn FnMut(&mut Buf) -> Result<(), sluice_core::Error>| {
        let mut b = Buf::default();
        f(&mut b).map(|()| v.push((id, b.0)))
    };
    if let Some(t) = tracing_data(session)? {
        one(feat::TRACING_DATA, &mut |b| b.put(&t))?;
    }
    let ids = build_ids(session);
    if !ids.is_empty() {
        one(feat::BUILD_ID, &mut |b| {
            for (kernel, id, name) in &ids {
                // The same record is the body of PERF_RECORD_HEADER_BUILD_ID in a pipe.
                feat::build_id(b, RECORD_HEADER_BUILD_ID, *kernel, id, name.as_bytes())?;
            }
            Ok(())
        })?;
    }
    let strings = [
        (feat::HOSTNAME, meta::text("/proc/sys/kernel/hostname")),
        (feat::OSRELEASE, meta::text("/proc/sys/kernel/osrelease")),
        (
            feat::VERSION,
            format!("{} (sluice)", env!("CARGO_PKG_VERSION")),
        ),
        (feat::ARCH, std::env::consts::ARCH.to_owned()),
    ];
    for (id, s) in &strings {
        one(*id, &mut |b| feat::string(b, s.as_bytes()))?;
    }
    let (avail, online) = meta::nr_cpus();
    one(feat::NRCPUS, &mut |b| feat::nr_cpus(b, avail, online))?;
    let desc = meta::cpu_desc();
    one(feat::CPUDESC, &mut |b| feat::string(b, desc.as_bytes()))?;
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "sluice".into());
    let mut argv: Vec<&[u8]> = vec![exe.as_bytes()];
    argv.extend(setup.argv.iter().skip(1).map(|a| a.as_bytes()));
    one(feat::CMDLINE, &mut |b| feat::string_list(b, &argv))?;
    let descs: Vec<feat::EventDesc<'_>> = outs
        .iter()
        .map(|o| feat::EventDesc {
            attr: &o.attr,
            name: o.name.as_bytes(),
            ids: &o.ids,
        })
        .collect();
    one(feat::EVENT_DESC, &mut |b| feat::event_desc(b, &descs))?;
    v.sort_by_key(|(id, _)| *id);
    Ok(v)
}

/// `HEADER_TRACING_DATA` for the session's trace events (`None` without any).
fn tracing_data(session: &Session) -> Result<Option<Vec<u8>>, Error> {
    let names: Vec<(&str, &str)> = session
        .sources()
        .iter()
        .filter(|s| matches!(s.kind, SourceKind::Trace { .. }))
        .filter_map(|s| s.name.split_once(':'))
        .collect();
    if names.is_empty() {
        return Ok(None);
    }
    let tracefs = Tracefs::find().map_err(Error::Tracefs)?;
    let t = tracefs.tracing_texts(&names).map_err(Error::Tracefs)?;
    let formats: Vec<Vec<&[u8]>> = t
        .systems
        .iter()
        .map(|(_, f)| f.iter().map(Vec::as_slice).collect())
        .collect();
    let systems: Vec<System<'_>> = t
        .systems
        .iter()
        .zip(&formats)
        .map(|((name, _), formats)| System {
            name: name.as_bytes(),
            formats,
        })
        .collect();
    let files = TracingFiles {
        big_endian: cfg!(target_endian = "big"),
        long_size: std::mem::size_of::<usize>() as u8,
        page_size: page_size(&t.header_page),
        header_page: &t.header_page,
        header_event: &t.header_event,
        // perf writes the `ftrace` system's formats only for those of its events recorded:
        // sluice records none.
        ftrace: &[],
        systems: &systems,
        kallsyms: &[],
        printk: &t.printk,
        cmdlines: &t.cmdlines,
    };
    let mut b = Buf::default();
    tracing::write(&mut b, &files)?;
    Ok(Some(b.0))
}

/// The page size: the kernel's, as its ring-buffer page header implies (`data` is at
/// offset 16 of a page with `size:4080` on 4 KiB pages...), else 4096.
fn page_size(header_page: &[u8]) -> u32 {
    // field: char data;	offset:16;	size:4080;	signed:0;
    let text = String::from_utf8_lossy(header_page);
    text.lines()
        .find(|l| l.contains(" data;"))
        .and_then(|l| {
            let num = |key: &str| -> Option<u32> {
                let rest = l.split(key).nth(1)?;
                rest.split(';').next()?.trim().parse().ok()
            };
            Some(num("offset:")? + num("size:")?)
        })
        .filter(|n| n.is_power_of_two())
        .unwrap_or(4096)
}

/// The build ids of the binaries probed (uprobe events of the session) and the kernel.
fn build_ids(session: &Session) -> Vec<(bool, Vec<u8>, String)> {
    let mut out = Vec::new();
    let probes = Tracefs::find()
        .and_then(|t| t.list_ours())
        .unwrap_or_default();
    let mut seen: Vec<String> = Vec::new();
    for src in session.sources() {
        let Some((group, event)) = src.name.split_once(':') else {
            continue;
        };
        let Some(p) = probes.iter().find(|p| p.group == group && p.event == event) else {
            continue;
        };
        let Some(bin) = meta::uprobe_binary(&p.definition) else {
            continue;
        };
        if seen.iter().any(|s| s == bin) {
            continue;
        }
        seen.push(bin.to_owned());
        if bin.starts_with('/') {
            if let Some(id) = meta::build_id(bin) {
                out.push((false, id, bin.to_owned()));
            }
        }
    }
    if let Some(id) = meta::kernel_build_id() {
        out.push((true, id, "[kernel.kallsyms]".to_owned()));
    }
    out
}
