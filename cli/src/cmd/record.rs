//! `sluice record [-e OBJ.o]... [--event PROG=SPEC|PROG=@FILE]... [--duration S] [-m PAGES]
//! [--wakeup-events N] [--raw-output] [--json] [-a | -p PID] [-C CPUS] [-o FILE] [--perf-data FILE|-]
//! [-- CMD ARGS...]`: load
//! filters, attach them, run the workload (like `perf record`: forked, held until the
//! events exist, events enabled at its `exec`) or follow a running process (`-p`, every
//! thread, with `inherit`), print every sample that passed (on stdout or into `-o FILE`),
//! and a summary on stderr: samples per event, lost records per CPU, probes removed.
//! `--perf-data FILE` (or `-` for perf's pipe format on stdout) writes perf.data instead
//! ([`crate::output::perf_data`]).
//!
//! A program that sends a bpf-output record and returns 1 (so the probe's own sample is
//! recorded too) gets both printed on one line, its payload's words beside the kernel's
//! fetch-args: `... sluice:p_1_f: ip=.. __probe_ip=.. a=-3 b=250 | bpf(out): -3 250`; in
//! JSON `{"type":"pair","sample":{..},"output":{..,"words":[-3,250]}}`. The pairing rule
//! (same object, same thread, output first, nothing of that thread between, at most 1 ms
//! apart) is in [`crate::output::pair`].
//!
//! `SIGINT`, `SIGTERM` and `SIGHUP` end a recording the same way: events disabled, rings
//! drained, probes removed, summary printed, exit status 0 (the recording is complete; a
//! workload we started is sent the same signal). A process followed with `-p` is never
//! signalled.
//!
//! An output nobody reads (a full pipe on stdout) does not make a run deaf: the writer
//! waits for room only until a stop is asked (one of those signals, or the end of
//! `--duration`; `sys::out` in the runtime), then the run ends the same way, and says on
//! stderr, after the summary, how many records could not be written: exit status 1 (the
//! output is incomplete).

use std::ffi::OsString;
use std::io::Write as _;
use std::time::{Duration, Instant};

use super::record_args::{parse, Args};
use crate::fail::Failure;
use crate::output::pair::{Item, Pairer};
use crate::output::{self, json, perf_data, records, text, Comms};
use crate::{demo, signals};
use sluice_runtime::attach::Scope;
use sluice_runtime::ring::{OutputLayout, RingConfig, Wakeup};
use sluice_runtime::session::{
    Event, ObjectSource, RunControl, Session, SessionOptions, SourceKind, Stop,
};
use sluice_runtime::sys::out::{StopWriter, Stops};
use sluice_runtime::sys::process::HeldChild;
use sluice_runtime::tasks::Tasks;
use std::os::fd::AsFd as _;

/// The workload when none is given and not system-wide.
pub const DEFAULT_WORKLOAD: [&str; 2] = ["sleep", "1"];

/// Parses `record`'s arguments and runs it.
pub fn run(parser: &mut lexopt::Parser) -> Result<(), Failure> {
    let args = parse(parser)?;
    record(args)
}

fn read_objects(paths: &[std::path::PathBuf]) -> Result<Vec<ObjectSource>, Failure> {
    if paths.is_empty() {
        return Ok(vec![ObjectSource {
            name: demo::RECORD_NAME.into(),
            bytes: demo::RECORD_OBJECT.to_vec(),
        }]);
    }
    paths
        .iter()
        .map(|p| {
            sluice_runtime::sys::file::read_regular(p)
                .map(|bytes| ObjectSource {
                    name: p.display().to_string(),
                    bytes,
                })
                .map_err(|e| Failure::input(format!("{}: cannot read: {e}", p.display())))
        })
        .collect()
}

fn session_failure(e: &sluice_runtime::session::Error) -> Failure {
    use sluice_runtime::session::Error as E;
    // A refused program's message holds the verifier log after its first line: the line
    // is the message, the log its detail, each printed once.
    if let E::Load { source, .. } = e {
        if source.verifier_log().is_some() {
            let text = e.to_string();
            let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
            let detail = (!rest.trim().is_empty()).then(|| rest.trim_end().to_owned());
            let mut failure = Failure::runtime(first.to_owned(), detail);
            if source.is_bad_input() {
                failure.code = 2;
            }
            return failure;
        }
    }
    let detail = None;
    match e {
        E::Open { .. } | E::Spec { .. } | E::Cpu { .. } => Failure::input(e.to_string()),
        E::Load { source, .. } if source.is_bad_input() => Failure::input(e.to_string()),
        // A uprobe target that is no ELF file with that symbol, or a path tracefs cannot
        // take: what the user named is wrong, whatever the kernel.
        E::Tracefs {
            source:
                sluice_runtime::tracefs::Error::Symbol { .. }
                | sluice_runtime::tracefs::Error::Request { .. },
            ..
        } => Failure::input(e.to_string()),
        _ => Failure::runtime(e.to_string(), detail),
    }
}

/// The counters of `session`'s sources and the server of them (its address said on
/// stderr).
fn start_metrics(
    addr: std::net::SocketAddr,
    session: &Session,
    tables: &[std::sync::Arc<output::maps::MapTable>],
) -> Result<
    (
        std::sync::Arc<output::metrics::Counters>,
        output::metrics::Server,
    ),
    Failure,
> {
    use output::metrics::{exposition::Exposition, Counters, Limits, Server};
    let events = session.sources().iter().map(|s| s.name.clone()).collect();
    let attached = session
        .objects()
        .iter()
        .map(|o| o.programs().len())
        .sum::<usize>();
    let counters = std::sync::Arc::new(Counters::new(events, attached as u64));
    let families = tables
        .iter()
        .map(|t| {
            Box::new(output::metrics::maps::MapFamily::new(
                std::sync::Arc::clone(t),
            )) as Box<dyn output::metrics::exposition::Family>
        })
        .collect();
    let exposition = Exposition::new(std::sync::Arc::clone(&counters), families);
    let server = Server::start(addr, exposition, Limits::default())
        .map_err(|e| Failure::runtime(format!("--metrics {addr}: cannot listen: {e}"), None))?;
    crate::console::say!("sluice: metrics on http://{}/metrics", server.local_addr());
    Ok((counters, server))
}

/// The thread printing the maps every `every` (into a second fd of `file`, or of stdout);
/// it ends when the sender is dropped.
fn start_intervals(
    every: Duration,
    tables: &[std::sync::Arc<output::maps::MapTable>],
    args: &Args,
    file: Option<&std::fs::File>,
) -> Result<(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>), Failure> {
    let fd = match file {
        Some(f) => f.as_fd().try_clone_to_owned(),
        None => std::io::stdout().as_fd().try_clone_to_owned(),
    };
    let mut out =
        std::fs::File::from(fd.map_err(|e| Failure::runtime(format!("--interval: {e}"), None))?);
    let tables = tables.to_vec();
    let (clear, style) = (
        args.clear,
        output::maps::Style {
            json: args.json,
            ..args.style
        },
    );
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("sluice-intervals".into())
        .spawn(move || {
            let mut dump = String::new();
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(every) {
                dump.clear();
                output::maps::dump_all(&mut dump, &tables, clear, style);
                if out.write_all(dump.as_bytes()).is_err() {
                    return;
                }
            }
        })
        .map_err(|e| Failure::runtime(format!("--interval: {e}"), None))?;
    Ok((tx, thread))
}

fn record(args: Args) -> Result<(), Failure> {
    let objects = read_objects(&args.objects)?;
    // An exporter (`--metrics` alone) records system-wide until it is stopped.
    let command: Vec<OsString> =
        if args.command.is_empty() && !args.all && args.pid.is_none() && args.metrics.is_none() {
            DEFAULT_WORKLOAD.iter().map(OsString::from).collect()
        } else {
            args.command.clone()
        };
    // Rings sized for the CPUs recorded on (-C, else the online ones), unless -m says.
    let recorded_cpus = match &args.cpus {
        Some(c) => c.len(),
        None => sluice_runtime::kernel::cpus::online().map_or(1, |c| c.len()),
    };
    let mut ring = RingConfig::for_cpus(recorded_cpus);
    if let Some(p) = args.pages {
        ring.data_pages = p;
    }
    if let Some(n) = args.wakeup_events {
        ring.wakeup = Wakeup::Events(n);
    }
    if args.raw_output {
        ring.output_layout = OutputLayout::Raw;
    }
    // The output path checked before anything is loaded (a bad path costs nothing); the
    // file itself is created only once the recording has started.
    if let Some(path) = &args.output {
        output::file::check(path)?;
    }
    // The perf.data target too (`-` is pipe mode on stdout): a symbolic link of another
    // user is refused before anything is loaded, as for `-o`. Text lines then go only to
    // `-o FILE`, when given.
    let perf_target = match &args.perf_data {
        Some(path) => Some(perf_data::Target::open(path).map_err(|e| match e {
            perf_data::TargetError::Symlink { .. } => Failure::input(e.to_string()),
            perf_data::TargetError::Io { .. } => Failure::runtime(e.to_string(), None),
        })?),
        None => None,
    };
    // `--metrics` alone records quietly: the numbers are for the scraper.
    let text_out =
        (perf_target.is_none() && (args.metrics.is_none() || args.json)) || args.output.is_some();
    // Handlers first: a Ctrl-C during set-up then ends the run at its first step, through
    // the same release path.
    let sigs = signals::install()
        .map_err(|e| Failure::runtime(format!("installing signal handlers: {e}"), None))?;
    let held = match command.split_first() {
        Some((prog, rest)) => {
            let mut cmd = std::process::Command::new(prog);
            cmd.args(rest);
            // In pipe mode stdout carries the perf.data stream: the workload's own output
            // goes to stderr instead.
            if perf_target.as_ref().is_some_and(perf_data::Target::is_pipe) {
                use std::os::fd::AsFd as _;
                if let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() {
                    cmd.stdout(fd);
                }
            }
            Some(HeldChild::spawn(cmd).map_err(|e| {
                Failure::runtime(
                    format!("cannot start {}: {e}", prog.to_string_lossy()),
                    None,
                )
            })?)
        }
        None => None,
    };
    let scope = match (&held, args.all, args.pid) {
        (_, _, Some(pid)) => Scope::Process { pid },
        (Some(h), false, None) => Scope::Task {
            pid: h.pid(),
            on_exec: true,
        },
        _ => Scope::System,
    };
    let mut opts = SessionOptions {
        scope: Some(scope),
        ring,
        events: args.events.clone(),
        cpus: args.cpus.clone(),
        load: args.load.clone(),
        pmu: args.pmu.clone(),
        // perf.data describes every event by its tracefs format.
        tracefs_probes: args.perf_data.is_some(),
    };
    opts.load.target_btf = args.btf.clone();
    opts.load.debuginfo = args.debuginfo.clone();
    // On failure `held` is dropped unreleased: the child exits without running the command.
    let mut session = Session::start(&objects, &opts).map_err(|e| session_failure(&e))?;
    for s in session.skipped() {
        crate::console::say!(
            "sluice: warning: {}: program '{}' skipped: {}",
            s.object,
            s.program,
            s.why
        );
    }
    // Another process's programs on our tracepoints, or several of ours on one: the
    // kernel drops a sample for every reader when any of them rejects it.
    for shared in session.shared() {
        crate::console::say!("sluice: warning: {}", shared.warning());
    }
    if session.sources().is_empty() {
        return Err(Failure::input(
            "record: no program has a probe and no map an output: nothing to record".into(),
        ));
    }
    // Loaded and attached: now the output may be created, before the workload is let go
    // (on failure `held` is dropped unreleased, and the session releases everything).
    let file = match &args.output {
        Some(path) => Some(output::file::create(path)?),
        None => None,
    };
    // The perf.data preamble (attrs and ids, formats, side-band event, /proc) before the
    // workload runs.
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut recording = match perf_target {
        Some(t) => {
            let setup = perf_data::Setup {
                scope,
                ring,
                argv: &argv,
            };
            // A stop asked while an unread pipe is full ends the preamble's writes.
            let stops = Stops {
                signals: Some(&sigs),
                stopping: &signals::STOPPING,
                deadline: None,
            };
            Some(
                perf_data::Recording::begin(t, &session, &setup, stops)
                    .map_err(|e| Failure::runtime(e.to_string(), None))?,
            )
        }
        None => None,
    };
    // The maps the objects declare, each through a second fd: read at exit, every
    // interval and at each scrape, off the drain's path.
    let tables = output::maps::tables(&objects, session.objects(), &args.hist)
        .map_err(|e| Failure::usage_msg(format!("record: {e}")))?;
    // The metrics server, before the workload runs: its first scrape sees every event.
    let metrics = match args.metrics {
        Some(addr) => Some(start_metrics(addr, &session, &tables)?),
        None => None,
    };
    // Names and the process tree from the kernel's COMM/FORK/EXIT records (runtime::tasks),
    // opened before the workload runs: its first fork is seen.
    let tasks = if text_out {
        let mut cpus: Vec<u32> = (0..session.sources().len())
            .filter_map(|i| session.events(i))
            .flat_map(|e| e.events().iter().map(|c| c.cpu))
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        if cpus.is_empty() {
            cpus = sluice_runtime::kernel::cpus::online().unwrap_or_default();
        }
        // The task records (COMM, FORK, EXIT) are few: their rings keep the floor, or -m.
        let task_ring = RingConfig {
            data_pages: args
                .pages
                .unwrap_or(sluice_runtime::ring::DEFAULT_DATA_PAGES),
            ..ring
        };
        match Tasks::open(scope, &cpus, &task_ring) {
            Ok(t) => Some(t),
            Err(e) => {
                crate::console::say!("sluice: warning: {e}: names from /proc, samples unfiltered");
                None
            }
        }
    } else {
        None
    };
    let mut child = match held {
        Some(h) => Some(h.release().map_err(|e| {
            let name = command
                .first()
                .map_or_else(String::new, |c| c.to_string_lossy().into_owned());
            Failure::runtime(format!("cannot run {name}: {e}"), None)
        })?),
        None => None,
    };
    let mut indices = records::Indices::new(&objects);
    let decoder = records::Records::new(&objects, &mut indices, session.sources(), &args.decode)
        .map_err(|e| Failure::usage_msg(format!("record: {e}")))?;
    let started = Instant::now();
    let deadline = args.duration.map(|d| started + d);
    // `--interval S`: the maps printed every S seconds by a thread of their own (the drain
    // never waits for a dump), into a second fd of the output.
    let intervals = match args.interval.filter(|_| text_out && !tables.is_empty()) {
        Some(every) => Some(start_intervals(every, &tables, &args, file.as_ref())?),
        None => None,
    };
    // A full output nobody reads must not make the run deaf to a stop: the writer waits
    // for room only until a stop is asked, then says so (sys::out).
    let stops = Stops {
        signals: Some(&sigs),
        stopping: &signals::STOPPING,
        deadline,
    };
    if let Some(r) = recording.as_mut() {
        r.watch(stops);
    }
    let stdout = std::io::stdout();
    let sink_to: Box<dyn std::io::Write + '_> = match file.as_ref() {
        Some(f) => Box::new(StopWriter::new(f.as_fd(), stops)),
        None if text_out => Box::new(StopWriter::new(stdout.as_fd(), stops)),
        None => Box::new(std::io::sink()),
    };
    let mut lines = Lines {
        out: std::io::BufWriter::with_capacity(LINES_BUFFER, sink_to),
        error: None,
        unwritten: 0,
        buf: String::with_capacity(512),
        comms: Comms::default(),
        tasks,
        seen: 0,
        json: args.json,
        records: decoder,
    };
    // A program's output and its probe's sample of one hit print together (output::pair).
    let mut pairer = Pairer::new(session.sources());
    let mut stopped_by_output = false;
    let counters = metrics.as_ref().map(|(c, _)| std::sync::Arc::clone(c));
    // The first loss says, once, what to raise: the ring was too small for the rate.
    let mut lost_hint = Some(ring.data_pages);
    let mut sink = |s: &Session, e: &Event<'_>| {
        if let Some(r) = recording.as_mut() {
            r.event(s, e);
        }
        if let (Event::Lost { .. }, Some(pages)) = (e, lost_hint.take()) {
            crate::console::say!(
                "sluice record: records were lost: the reader fell behind its rings of {pages} \
                 data pages per CPU; raise them with -m {} (a power of two)",
                pages.saturating_mul(4)
            );
        }
        if let Some(c) = &counters {
            match e {
                Event::Lost { cpu, lost, .. } => c.lost(*cpu, *lost),
                Event::Sample { source, .. } => c.sample(*source),
                Event::Drained => {}
            }
        }
        if text_out {
            match e {
                Event::Drained => lines.drained(),
                Event::Lost { source, cpu, lost } => lines.lost(s, *source, *cpu, *lost),
                Event::Sample { source, sample } if !lines.produced_here(s, *source, sample) => {}
                Event::Sample { source, sample } => {
                    // A line of the printk instance names only its thread.
                    let mut sample = *sample;
                    if let (None, Some(tid)) = (sample.fields.pid, sample.fields.tid) {
                        let pid = lines.tasks.as_mut().and_then(|t| t.pid_of(tid));
                        sample.fields.pid = Some(pid.unwrap_or(tid));
                    }
                    let sample = &sample;
                    // What the object's BTF decodes prints with its names, never paired;
                    // so does what --decode MAP=raw keeps as hex.
                    if lines.records.stands_alone(*source, sample.raw.len()) {
                        lines.item(s, Item::One(*source, *sample));
                    } else {
                        pairer.push(*source, *sample, &mut |item| lines.item(s, item));
                    }
                }
            }
        }
        // Nothing more can be written (the reader of stdout or of the perf.data pipe is
        // gone, the disk is full): end the run as a stopping signal does (drain, probes
        // removed, summary).
        // (An output that gave up waiting for room did so because a stop was asked
        // already: that stop is the reason, not this.)
        let blocked = lines
            .error
            .as_ref()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::WouldBlock);
        let failed = (lines.error.is_some() && !blocked)
            || recording.as_ref().is_some_and(perf_data::Recording::failed);
        if failed && !stopped_by_output {
            stopped_by_output = true;
            sigs.raise(signals::libc_consts::SIGPIPE);
        }
    };
    let ctl = RunControl {
        child: child.as_mut(),
        deadline,
        signals: Some(&sigs),
        process: args.pid,
    };
    let stop = session
        .run(ctl, &mut sink)
        .map_err(|e| session_failure(&e))?;
    pairer.flush(&mut |item| lines.item(&session, item));
    // The intervals' thread ends, then the maps print once more, as they are at exit.
    if let Some((stop, thread)) = intervals {
        drop(stop);
        let _ = thread.join();
    }
    if text_out && !tables.is_empty() && lines.error.is_none() {
        let mut dump = String::new();
        output::maps::dump_all(
            &mut dump,
            &tables,
            false,
            output::maps::Style {
                json: args.json,
                ..args.style
            },
        );
        if let Err(e) = lines.out.write_all(dump.as_bytes()) {
            lines.error = Some(e);
        }
    }
    drop(tables);
    let mut write_error = lines.error.take();
    if let Err(e) = lines.out.flush() {
        write_error.get_or_insert(e);
    }
    let unwritten = (lines.unwritten, lines.out.buffer().len());
    let short = lines.records.short();
    let left_out = lines.tasks.as_ref().map(|t| (t.has_tree(), t.left_out()));
    drop(lines);
    let perf_result = recording.map(perf_data::Recording::finish);
    let scrapes = metrics.map(|(_, server)| {
        server
            .stats()
            .scrapes
            .load(std::sync::atomic::Ordering::Relaxed)
    });
    let summary = session.summary();
    let names: Vec<String> = session.sources().iter().map(|s| s.name.clone()).collect();
    let ringbufs = session
        .sources()
        .iter()
        .any(|s| matches!(s.kind, SourceKind::RingBuf { .. }));
    let raw_outputs = args.raw_output
        && session
            .sources()
            .iter()
            .any(|s| matches!(s.kind, SourceKind::Output { .. }));
    // Release everything (events, then probes, then programs) before reporting.
    let closed = session.close();
    for (name, e) in &closed.errors {
        crate::console::say!(
            "sluice: warning: probe {name} left behind ({e}); `sluice probes --clean` removes it"
        );
    }
    let total: u64 = summary.samples.iter().sum();
    let per_event: Vec<String> = names
        .iter()
        .zip(&summary.samples)
        .map(|(n, c)| format!("{n} {c}"))
        .collect();
    let lost_total: u64 = summary.lost.values().sum();
    let per_cpu: Vec<String> = summary
        .lost
        .iter()
        .map(|(c, n)| format!("cpu{} {n}", c.map_or_else(|| "?".into(), |c| c.to_string())))
        .collect();
    let lost = format!(
        "{} {lost_total} ({})",
        if lost_total == 0 { "lost" } else { "LOST" },
        per_cpu.join(", ")
    );
    let why = match stop {
        Stop::Exited(st) => format!("workload exited ({st})"),
        Stop::Duration => "duration elapsed".to_owned(),
        Stop::Signal(signals::libc_consts::SIGPIPE) => "output closed".to_owned(),
        Stop::Signal(s) => format!("signal {s}"),
        Stop::ProcessExited => format!("process {} exited", args.pid.unwrap_or(0)),
    };
    // Ring-buffer records say nothing of who wrote them: the summary says so.
    let bufs = if ringbufs {
        format!(
            "; ring-buffer records carry no pid/cpu/time (shown as the program wrote them), \
             {} discarded by their programs",
            summary.discarded
        )
    } else {
        String::new()
    };
    // So do the samples of --raw-output: nothing is made up for them.
    let raw = if raw_outputs {
        "; --raw-output: bpf-output samples carry no pid/cpu/time (shown as the program \
         wrote them, ring by ring, from any process, never paired)"
    } else {
        ""
    };
    let left_out = match left_out {
        Some((true, n)) => format!("; {n} samples from outside the process tree not shown"),
        Some((false, n)) if n > 0 => format!("; {n} samples of sluice itself not shown"),
        _ => String::new(),
    };
    let short = if short > 0 {
        format!("; {short} records shorter than their type (shown raw)")
    } else {
        String::new()
    };
    crate::console::say!(
        "sluice record: {total} samples in {:.3} s: {}; {lost}; malformed {}; \
         probes removed {}; stopped: {why}{left_out}{bufs}{raw}{short}",
        started.elapsed().as_secs_f64(),
        per_event.join(", "),
        summary.malformed,
        closed.probes_removed,
    );
    if let Some(n) = scrapes {
        crate::console::say!("sluice record: metrics: {n} scrapes answered");
    }
    match &perf_result {
        Some(Ok(st)) => crate::console::say!(
            "sluice record: perf.data {}: {} samples, {} lost records, {} side-band, {} \
             synthesized, {} rounds, {} skipped as malformed",
            args.perf_data
                .as_ref()
                .map_or_else(String::new, |p| p.display().to_string()),
            st.samples,
            st.lost,
            st.side_band,
            st.synthesized,
            st.rounds,
            st.malformed,
        ),
        // The reader of the pipe has what it wanted: a clean end, as after Ctrl-C.
        Some(Err(e)) if e.is_broken_pipe() => {}
        Some(Err(e)) => return Err(Failure::runtime(e.to_string(), None)),
        None => {}
    }
    let target = || {
        args.output
            .as_ref()
            .map_or_else(|| "stdout".into(), |p| p.display().to_string())
    };
    match write_error {
        // The reader has what it wanted (`| head`): a clean end, as after Ctrl-C.
        Some(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        // Nobody read the output when the run was asked to stop: what could not be
        // written is said, and the run fails (the summary above is complete).
        Some(e) if e.kind() == std::io::ErrorKind::WouldBlock => Err(Failure::runtime(
            format!(
                "{} was not being read when the run stopped (writes blocked): {} lines, \
                 and {} bytes buffered before them, were not written",
                target(),
                unwritten.0,
                unwritten.1
            ),
            None,
        )),
        Some(e) => Err(Failure::runtime(
            format!("writing the samples to {}: {e}", target()),
            None,
        )),
        None => Ok(()),
    }
}

/// The output lines and the first write error; each line is built in one reused buffer.
struct Lines<'a> {
    out: std::io::BufWriter<Box<dyn std::io::Write + 'a>>,
    error: Option<std::io::Error>,
    /// Lines not written because of the error (the one that met it included).
    unwritten: u64,
    buf: String,
    comms: Comms,
    /// Names and the process tree from the kernel's task records (else /proc only).
    tasks: Option<Tasks>,
    /// Samples seen, to read the task rings every [`TASKS_EVERY`].
    seen: u64,
    json: bool,
    records: records::Records<'a>,
}

/// The output's buffer: written when full, and whenever the session waits for more
/// ([`Event::Drained`]). Large writes cost the kernel less per byte (380 MB to ext4 in
/// 13 KB writes took 1.8× the system time of 256 KiB ones).
const LINES_BUFFER: usize = 256 * 1024;

/// Samples between two reads of the task rings (they are read too whenever a pid or a
/// name is not known yet).
const TASKS_EVERY: u64 = 256;

/// The name of `tid` at `time`: the task records' (a process gone keeps its name), else
/// `/proc`'s.
fn comm<'a>(
    tasks: &'a mut Option<Tasks>,
    comms: &'a mut Comms,
    s: sluice_runtime::ring::SampleView<'_>,
) -> &'a str {
    if let (Some(t), Some(tid)) = (tasks.as_mut(), s.fields.tid.or(s.fields.pid)) {
        if let Some(n) = t.name(tid, s.fields.time.unwrap_or(u64::MAX)) {
            return n;
        }
    }
    comms.get(s.fields.pid, s.fields.tid)
}

impl Lines<'_> {
    /// Whether a perf sample came from the recorded process tree (`-- CMD`, `-p PID`), or
    /// system-wide from anyone but sluice; ring-buffer records carry no producer and pass.
    fn produced_here(
        &mut self,
        s: &Session,
        source: usize,
        sample: &sluice_runtime::ring::SampleView<'_>,
    ) -> bool {
        let Some(t) = self.tasks.as_mut() else {
            return true;
        };
        self.seen += 1;
        if self.seen % TASKS_EVERY == 0 {
            t.update();
        }
        let ringbuf = s
            .sources()
            .get(source)
            .is_some_and(|x| matches!(x.kind, SourceKind::RingBuf { .. }));
        ringbuf || t.shown(sample.fields.pid)
    }

    /// Writes the line in `buf` and empties it.
    fn put(&mut self) {
        self.buf.push('\n');
        // After a failure nothing more is written: the line is counted as not written.
        if self.error.is_some() {
            self.unwritten += 1;
        } else if let Err(e) = self.out.write_all(self.buf.as_bytes()) {
            self.error = Some(e);
            self.unwritten += 1;
        }
        self.buf.clear();
    }

    /// The session waits for more: what the buffer holds is written, so that readers (a
    /// terminal, a pipe, `tail -f FILE`) see lines as they come.
    fn drained(&mut self) {
        if self.error.is_none() {
            if let Err(e) = self.out.flush() {
                self.error = Some(e);
            }
        }
    }

    fn lost(&mut self, s: &Session, source: usize, cpu: Option<u32>, lost: u64) {
        let name = s.sources().get(source).map_or("?", |x| x.name.as_str());
        if self.json {
            json::lost_line(&mut self.buf, name, cpu, lost);
            self.put();
        } else {
            crate::console::say!(
                "sluice: LOST {lost} records of {name} on CPU {}",
                cpu.map_or_else(|| "?".into(), |c| c.to_string())
            );
        }
    }

    fn item(&mut self, s: &Session, item: Item<'_>) {
        let sources = s.sources();
        let buf = &mut self.buf;
        match item {
            Item::One(source, sample) => {
                let Some(src) = sources.get(source) else {
                    return;
                };
                let recs = &mut self.records;
                let json_mode = self.json;
                let mut decode = |o: &mut String| recs.fields(o, source, sample.raw, json_mode);
                // A ring-buffer record, or a bpf-output sample of --raw-output (no fields):
                // the program's bytes and nothing else.
                let bare = match &src.kind {
                    SourceKind::RingBuf { map } => Some(map),
                    SourceKind::Output { map } if sample.fields.tid.is_none() => Some(map),
                    _ => None,
                };
                if let Some(map) = bare {
                    if json_mode {
                        json::record_line(buf, &src.name, map, sample.raw, &mut decode);
                    } else {
                        text::record_line(buf, &src.name, map, sample.raw, &mut decode);
                    }
                    self.put();
                    return;
                }
                let h = head(
                    comm(&mut self.tasks, &mut self.comms, sample),
                    sample,
                    &src.name,
                );
                match (&src.kind, self.json) {
                    (SourceKind::Trace { format, .. }, json_mode) => {
                        let fields = output::decode(format, sample.raw);
                        if json_mode {
                            json::trace_line(buf, &h, sample.fields.ip, &fields);
                        } else if src.name == sluice_runtime::attach::PRINTK_EVENT {
                            text::printk_line(buf, &h, &fields);
                        } else {
                            text::trace_line(buf, &h, sample.fields.ip, &fields);
                        }
                    }
                    (SourceKind::Output { map }, true) => {
                        json::output_line(buf, &h, map, sample.raw, &mut decode)
                    }
                    (SourceKind::Output { map }, false) => {
                        text::output_line(buf, &h, map, sample.raw, &mut decode)
                    }
                    // Writes no samples of its own.
                    (SourceKind::Hook { .. }, _) => return,
                    (SourceKind::RingBuf { .. }, _) => {}
                }
            }
            Item::Pair { output, trace } => {
                let (Some(t_src), Some(o_src)) = (sources.get(trace.0), sources.get(output.0))
                else {
                    return;
                };
                let (SourceKind::Trace { format, .. }, SourceKind::Output { map }) =
                    (&t_src.kind, &o_src.kind)
                else {
                    return;
                };
                let fields = output::decode(format, trace.1.raw);
                let t = trace.1;
                let comm = comm(&mut self.tasks, &mut self.comms, t);
                let th = head(comm, t, &t_src.name);
                let raw = output.1.raw;
                if self.json {
                    let oh = head(comm, output.1, &o_src.name);
                    json::pair_line(buf, (&th, t.fields.ip), &fields, (&oh, map), raw);
                } else {
                    text::pair_line(buf, (&th, t.fields.ip), &fields, map, raw);
                }
            }
        }
        self.put();
    }
}

fn head<'a>(
    comm: &'a str,
    s: sluice_runtime::ring::SampleView<'_>,
    event: &'a str,
) -> output::Head<'a> {
    output::Head {
        comm,
        pid: s.fields.pid,
        tid: s.fields.tid,
        cpu: s.fields.cpu,
        time: s.fields.time,
        event,
    }
}
