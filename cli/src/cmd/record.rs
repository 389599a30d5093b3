//! `sluice record [-e OBJ.o]... [--event PROG=SPEC]... [--duration S] [-m PAGES]
//! [--wakeup-events N] [--json] [-a] [-- CMD ARGS...]`: load filters, attach them, run the
//! workload (like `perf record`: forked, held until the events exist, events enabled at its
//! `exec`), print every sample that passed, and a summary on stderr.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write as _;
use std::time::{Duration, Instant};

use crate::fail::Failure;
use crate::output::{self, json, text, Comms};
use crate::{demo, signals};
use sluice_runtime::attach::Scope;
use sluice_runtime::ring::{RingConfig, Wakeup};
use sluice_runtime::session::{
    Event, ObjectSource, RunControl, Session, SessionOptions, SourceKind, Stop,
};
use sluice_runtime::sys::process::HeldChild;

/// The workload when none is given and not system-wide.
pub const DEFAULT_WORKLOAD: [&str; 2] = ["sleep", "1"];

/// What the command line asked for.
#[derive(Debug, Default)]
struct Args {
    objects: Vec<std::path::PathBuf>,
    events: BTreeMap<String, String>,
    duration: Option<Duration>,
    pages: Option<usize>,
    wakeup_events: Option<u32>,
    json: bool,
    all: bool,
    command: Vec<OsString>,
}

fn parse(parser: &mut lexopt::Parser) -> Result<Args, Failure> {
    use lexopt::prelude::*;
    let mut a = Args::default();
    let bad = |what: String| Failure::usage_msg(format!("record: {what} (see sluice --help)"));
    while let Some(arg) = parser.next().map_err(crate::fail::usage)? {
        match arg {
            Short('e') | Long("object") => a
                .objects
                .push(parser.value().map_err(crate::fail::usage)?.into()),
            Long("event") => {
                let v = parser
                    .value()
                    .map_err(crate::fail::usage)?
                    .string()
                    .map_err(crate::fail::usage)?;
                let (prog, spec) = v
                    .split_once('=')
                    .ok_or_else(|| bad(format!("--event wants PROG=SPEC, got '{v}'")))?;
                a.events.insert(prog.to_owned(), spec.to_owned());
            }
            Long("duration") | Short('d') => {
                let v: f64 = parser
                    .value()
                    .map_err(crate::fail::usage)?
                    .parse()
                    .map_err(crate::fail::usage)?;
                if !(v > 0.0 && v < 1e9) {
                    return Err(bad(format!("--duration {v}: want seconds > 0")));
                }
                a.duration = Some(Duration::from_secs_f64(v));
            }
            Short('m') | Long("mmap-pages") => {
                let v: usize = parser
                    .value()
                    .map_err(crate::fail::usage)?
                    .parse()
                    .map_err(crate::fail::usage)?;
                if !v.is_power_of_two() {
                    return Err(bad(format!(
                        "-m {v}: the data pages must be a power of two"
                    )));
                }
                a.pages = Some(v);
            }
            Long("wakeup-events") => {
                a.wakeup_events = Some(
                    parser
                        .value()
                        .map_err(crate::fail::usage)?
                        .parse()
                        .map_err(crate::fail::usage)?,
                );
            }
            Long("json") => a.json = true,
            Short('a') | Long("all-cpus") => a.all = true,
            Value(v) => {
                a.command.push(v);
                a.command
                    .extend(parser.raw_args().map_err(crate::fail::usage)?);
            }
            other => return Err(crate::fail::usage(other.unexpected())),
        }
    }
    Ok(a)
}

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
            std::fs::read(p)
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
    let detail = match e {
        E::Load { source, .. } => source
            .verifier_log()
            .map(|l| String::from_utf8_lossy(l).trim_end().to_owned()),
        _ => None,
    };
    match e {
        E::Open { .. } | E::Spec { .. } => Failure::input(e.to_string()),
        _ => Failure::runtime(e.to_string(), detail),
    }
}

fn record(args: Args) -> Result<(), Failure> {
    let objects = read_objects(&args.objects)?;
    let command: Vec<OsString> = if args.command.is_empty() && !args.all {
        DEFAULT_WORKLOAD.iter().map(OsString::from).collect()
    } else {
        args.command.clone()
    };
    let mut ring = RingConfig::default();
    if let Some(p) = args.pages {
        ring.data_pages = p;
    }
    if let Some(n) = args.wakeup_events {
        ring.wakeup = Wakeup::Events(n);
    }
    // Handlers first: a Ctrl-C during set-up then ends the run at its first step, through
    // the same release path.
    let sigs = signals::install()
        .map_err(|e| Failure::runtime(format!("installing signal handlers: {e}"), None))?;
    let held = match command.split_first() {
        Some((prog, rest)) => {
            let mut cmd = std::process::Command::new(prog);
            cmd.args(rest);
            Some(HeldChild::spawn(cmd).map_err(|e| {
                Failure::runtime(
                    format!("cannot start {}: {e}", prog.to_string_lossy()),
                    None,
                )
            })?)
        }
        None => None,
    };
    let scope = match (&held, args.all) {
        (Some(h), false) => Scope::Task {
            pid: h.pid(),
            on_exec: true,
        },
        _ => Scope::System,
    };
    let opts = SessionOptions {
        scope: Some(scope),
        ring,
        events: args.events.clone(),
        ..SessionOptions::default()
    };
    // On failure `held` is dropped unreleased: the child exits without running the command.
    let mut session = Session::start(&objects, &opts).map_err(|e| session_failure(&e))?;
    for s in session.skipped() {
        eprintln!(
            "sluice: warning: {}: program '{}' skipped: {}",
            s.object, s.program, s.why
        );
    }
    if session.sources().is_empty() {
        return Err(Failure::input(
            "record: no program has a probe and no map an output: nothing to record".into(),
        ));
    }
    let mut child = match held {
        Some(h) => Some(h.release().map_err(|e| {
            let name = command
                .first()
                .map_or_else(String::new, |c| c.to_string_lossy().into_owned());
            Failure::runtime(format!("cannot run {name}: {e}"), None)
        })?),
        None => None,
    };
    let started = Instant::now();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut comms = Comms::default();
    let mut lines = 0u64;
    let json_mode = args.json;
    let mut sink = |s: &Session, e: &Event| {
        if let Some(line) = format_event(s, e, json_mode, &mut comms) {
            let _ = writeln!(out, "{line}");
            lines += 1;
            if lines % 64 == 0 {
                let _ = out.flush();
            }
        }
    };
    let ctl = RunControl {
        child: child.as_mut(),
        deadline: args.duration.map(|d| started + d),
        signals: Some(&sigs),
    };
    let stop = session
        .run(ctl, &mut sink)
        .map_err(|e| session_failure(&e))?;
    let _ = out.flush();
    drop(out);
    let summary = session.summary();
    let names: Vec<String> = session.sources().iter().map(|s| s.name.clone()).collect();
    // Release everything (events, then probes, then programs) before reporting.
    drop(session);
    let total: u64 = summary.samples.iter().sum();
    let per_event: Vec<String> = names
        .iter()
        .zip(&summary.samples)
        .map(|(n, c)| format!("{n} {c}"))
        .collect();
    let lost_total: u64 = summary.lost.values().sum();
    let lost = if summary.lost.is_empty() {
        "lost 0".to_owned()
    } else {
        let per_cpu: Vec<String> = summary
            .lost
            .iter()
            .map(|(c, n)| format!("cpu{} {n}", c.map_or_else(|| "?".into(), |c| c.to_string())))
            .collect();
        format!("LOST {lost_total} ({})", per_cpu.join(", "))
    };
    let why = match stop {
        Stop::Exited(st) => format!("workload exited ({st})"),
        Stop::Duration => "duration elapsed".to_owned(),
        Stop::Signal(s) => format!("signal {s}"),
    };
    eprintln!(
        "sluice record: {total} samples in {:.3} s: {}; {lost}; malformed {}; stopped: {why}",
        started.elapsed().as_secs_f64(),
        per_event.join(", "),
        summary.malformed
    );
    match stop {
        Stop::Signal(s) if s != signals::libc_consts::SIGINT => Err(Failure {
            message: format!("stopped by signal {s}; every probe removed"),
            detail: None,
            code: signals::exit_code(s),
        }),
        _ => Ok(()),
    }
}

fn format_event(s: &Session, e: &Event, json_mode: bool, comms: &mut Comms) -> Option<String> {
    match e {
        Event::Lost { source, cpu, lost } => {
            let name = s.sources().get(*source).map_or("?", |x| x.name.as_str());
            if json_mode {
                Some(json::lost_line(name, *cpu, *lost))
            } else {
                eprintln!(
                    "sluice: LOST {lost} records of {name} on CPU {}",
                    cpu.map_or_else(|| "?".into(), |c| c.to_string())
                );
                None
            }
        }
        Event::Sample { source, sample } => {
            let src = s.sources().get(*source)?;
            let comm = comms.get(sample.pid, sample.tid);
            match &src.kind {
                SourceKind::Trace { format, .. } => {
                    let fields = output::decode(format, &sample.raw);
                    Some(if json_mode {
                        let h = head(&comm, sample, &src.name);
                        json::trace_line(&h, sample.ip, &fields)
                    } else {
                        let h = text::head(
                            &comm,
                            sample.pid,
                            sample.tid,
                            sample.cpu,
                            sample.time,
                            &src.name,
                        );
                        text::trace_line(&h, sample.ip, &fields)
                    })
                }
                SourceKind::Output { map } => Some(if json_mode {
                    json::output_line(&head(&comm, sample, &src.name), map, &sample.raw)
                } else {
                    let h = text::head(
                        &comm,
                        sample.pid,
                        sample.tid,
                        sample.cpu,
                        sample.time,
                        &src.name,
                    );
                    text::output_line(&h, map, &sample.raw)
                }),
            }
        }
    }
}

fn head<'a>(
    comm: &'a str,
    s: &sluice_runtime::ring::SampleEvent,
    event: &'a str,
) -> json::Head<'a> {
    json::Head {
        comm,
        pid: s.pid,
        tid: s.tid,
        cpu: s.cpu,
        time: s.time,
        event,
    }
}
