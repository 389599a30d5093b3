//! `record`'s command line: [`Args`] from the parser, and `--event PROG=@FILE`'s spec files.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::time::Duration;

use crate::fail::Failure;
use crate::output::{self, records};
use sluice_runtime::probe::EventSpecs;

/// What the command line asked for.
#[derive(Debug, Default)]
pub(super) struct Args {
    pub(super) objects: Vec<std::path::PathBuf>,
    pub(super) events: EventSpecs,
    pub(super) duration: Option<Duration>,
    pub(super) pages: Option<usize>,
    pub(super) wakeup_events: Option<u32>,
    /// `--raw-output`: bpf-output samples with the program's bytes only.
    pub(super) raw_output: bool,
    pub(super) json: bool,
    pub(super) all: bool,
    pub(super) pid: Option<i32>,
    pub(super) cpus: Option<Vec<u32>>,
    pub(super) output: Option<std::path::PathBuf>,
    pub(super) perf_data: Option<std::path::PathBuf>,
    pub(super) metrics: Option<std::net::SocketAddr>,
    pub(super) btf: Option<std::path::PathBuf>,
    pub(super) debuginfo: Option<std::path::PathBuf>,
    /// `--prog`, `--set`, `--map-size`, `--pin-root` ([`super::config`]); `-F`.
    pub(super) load: sluice_runtime::LoadOptions,
    /// `--pmu MAP=EVENT`.
    pub(super) pmu: BTreeMap<String, String>,
    pub(super) decode: Vec<(String, records::Choice)>,
    /// `--interval S`: the maps printed every S seconds too.
    pub(super) interval: Option<Duration>,
    /// `--clear`: the maps emptied after each interval's print.
    pub(super) clear: bool,
    /// `--per-cpu`, `--top N`.
    pub(super) style: output::maps::Style,
    /// `--hist MAP=linear,STEP`.
    pub(super) hist: Vec<(String, Option<u64>)>,
    pub(super) command: Vec<OsString>,
}

pub(super) fn parse(parser: &mut lexopt::Parser) -> Result<Args, Failure> {
    use lexopt::prelude::*;
    let mut a = Args::default();
    let bad = |what: String| Failure::usage_msg(format!("record: {what} (see sluice --help)"));
    while let Some(arg) = parser.next().map_err(crate::fail::usage)? {
        if let Long(flag) = arg {
            if super::config::is_flag(flag) {
                let flag = flag.to_owned();
                super::config::parse(&flag, parser, &mut a.load)?;
                continue;
            }
        }
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
                match spec.strip_prefix('@') {
                    // The specs `sluice prologue --emit` wrote, one a line.
                    Some(file) => {
                        for spec in specs_file(std::path::Path::new(file))? {
                            a.events.insert(prog.to_owned(), spec);
                        }
                    }
                    None => a.events.insert(prog.to_owned(), spec.to_owned()),
                }
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
            Long("raw-output") => a.raw_output = true,
            Long("interval") | Short('i') => {
                let v: f64 = parser
                    .value()
                    .map_err(crate::fail::usage)?
                    .parse()
                    .map_err(crate::fail::usage)?;
                if !(0.01..1e9).contains(&v) {
                    return Err(bad(format!("--interval {v}: want seconds >= 0.01")));
                }
                a.interval = Some(Duration::from_secs_f64(v));
            }
            Long("clear") => a.clear = true,
            Long("per-cpu") => a.style.per_cpu = true,
            Long("top") => {
                let v: usize = parser
                    .value()
                    .map_err(crate::fail::usage)?
                    .parse()
                    .map_err(crate::fail::usage)?;
                a.style.top = Some(v);
            }
            Long("hist") => {
                let v = parser
                    .value()
                    .map_err(crate::fail::usage)?
                    .string()
                    .map_err(crate::fail::usage)?;
                a.hist.push(output::maps::parse_hist(&v).map_err(&bad)?);
            }
            // perf_event programs' sampling frequency.
            Short('F') | Long("freq") => {
                let v = parser.value().map_err(crate::fail::usage)?;
                let text = v.to_string_lossy().into_owned();
                match text.parse::<u64>() {
                    Ok(hz) if hz > 0 => a.load.sample_freq = Some(hz),
                    _ => return Err(bad(format!("-F {text}: want samples a second > 0"))),
                }
            }
            Long("pmu") => {
                let v = parser
                    .value()
                    .map_err(crate::fail::usage)?
                    .string()
                    .map_err(crate::fail::usage)?;
                let (map, event) = v
                    .split_once('=')
                    .filter(|(m, e)| !m.is_empty() && !e.is_empty())
                    .ok_or_else(|| bad(format!("--pmu wants MAP=EVENT, got '{v}'")))?;
                a.pmu.insert(map.to_owned(), event.to_owned());
            }
            Long("decode") => {
                let v = parser
                    .value()
                    .map_err(crate::fail::usage)?
                    .string()
                    .map_err(crate::fail::usage)?;
                a.decode.push(records::parse_decode(&v).map_err(&bad)?);
            }
            // The kernel's BTF for CO-RE when /sys/kernel/btf/vmlinux is missing (appliances
            // often lack it), and a vmlinux with DWARF for kprobe arguments that are variables.
            Long("btf") => a.btf = Some(parser.value().map_err(crate::fail::usage)?.into()),
            Long("debuginfo") => {
                a.debuginfo = Some(parser.value().map_err(crate::fail::usage)?.into());
            }
            Short('a') | Long("all-cpus") => a.all = true,
            Short('p') | Long("pid") => {
                let v = parser.value().map_err(crate::fail::usage)?;
                let text = v.to_string_lossy().into_owned();
                match text.parse::<i32>() {
                    Ok(pid) if pid > 0 => a.pid = Some(pid),
                    _ => return Err(bad(format!("-p {text}: want a process id"))),
                }
            }
            Short('C') | Long("cpu") => {
                let v = parser.value().map_err(crate::fail::usage)?;
                let text = v.to_string_lossy().into_owned();
                let cpus = sluice_runtime::kernel::cpus::parse(&text)
                    .map_err(|e| bad(format!("-C {text}: {e}")))?;
                if cpus.is_empty() {
                    return Err(bad(format!("-C '{text}': no CPU")));
                }
                a.cpus = Some(cpus);
            }
            Short('o') | Long("output") => {
                a.output = Some(parser.value().map_err(crate::fail::usage)?.into());
            }
            Long("perf-data") => {
                a.perf_data = Some(parser.value().map_err(crate::fail::usage)?.into());
            }
            Long("metrics") => {
                let v = parser.value().map_err(crate::fail::usage)?;
                let text = v.to_string_lossy().into_owned();
                a.metrics = Some(output::metrics::parse_addr(&text).map_err(bad)?);
            }
            Value(v) => {
                a.command.push(v);
                a.command
                    .extend(parser.raw_args().map_err(crate::fail::usage)?);
            }
            other => return Err(crate::fail::usage(other.unexpected())),
        }
    }
    if a.clear && a.interval.is_none() {
        return Err(bad(
            "--clear empties the maps after each --interval: give one".into(),
        ));
    }
    if a.raw_output && a.perf_data.is_some() {
        return Err(bad(
            "--raw-output leaves the ids, pids, CPUs and times out of the \
             samples, and perf.data needs them: not with --perf-data"
                .into(),
        ));
    }
    if a.pid.is_some() && (a.all || !a.command.is_empty()) {
        return Err(bad(
            "-p follows a running process: no -a and no command with it".into(),
        ));
    }
    Ok(a)
}

/// The specs of `--event PROG=@FILE`: one a line, as `sluice prologue --emit` writes them
/// (one per site); blank lines and lines starting with `#` are skipped.
fn specs_file(path: &std::path::Path) -> Result<Vec<String>, Failure> {
    let bytes = sluice_runtime::sys::file::read_regular(path).map_err(|e| {
        Failure::input(format!(
            "record: --event @{}: cannot read: {e}",
            path.display()
        ))
    })?;
    let text = String::from_utf8(bytes).map_err(|_| {
        Failure::input(format!(
            "record: --event @{}: not UTF-8 text",
            path.display()
        ))
    })?;
    let specs: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    if specs.is_empty() {
        return Err(Failure::input(format!(
            "record: --event @{}: no spec in the file (one a line, as `sluice prologue --emit` \
             writes them)",
            path.display()
        )));
    }
    Ok(specs)
}
