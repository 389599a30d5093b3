//! The `sluice` command line: wires the runtime to arguments and prints results.
#![forbid(unsafe_code)]

mod cmd;
mod console;
mod demo;
mod fail;
mod logger;
mod output;
mod signals;

use std::process::ExitCode;

const USAGE: &str = "\
sluice: load eBPF filters for perf events

usage:
  sluice [-v|-vv] inspect [--disasm] [--load [--btf FILE] [CONFIG]] [FILE.o]
      show an object (default: the embedded demo): its maps and the programs it offers,
      each with what it attaches to; --load loads it into the running kernel and prints
      each program's id, tag and instruction count after the verifier;
      --btf: the kernel BTF for CO-RE when /sys/kernel/btf/vmlinux is missing
  sluice [-v] record [-e OBJ.o]... [--event PROG=SPEC]... [--duration S] [-m PAGES]
                [--wakeup-events N] [--raw-output] [--json] [-a | -p PID] [-C CPUS] [-o FILE]
                [--perf-data FILE|-] [--metrics [ADDR:]PORT] [--btf FILE] [--debuginfo VMLINUX]
                [CONFIG] [-F HZ] [--pmu MAP=EVENT]... [--decode MAP=TYPE|raw]...
                [--interval S [--clear]] [--top N] [--per-cpu] [--hist MAP=linear,STEP]...
                [-- CMD ARGS...]
      load the filters (default: the embedded demo, opens of files under /etc/), attach
      them to per-CPU perf events, run CMD (default: sleep 1; with -a and no CMD:
      system-wide until Ctrl-C or --duration; -p: the running process PID and every
      thread it has or makes, until it exits) on the CPUs of -C (e.g. 0-1,3; default:
      all online) and print each accepted sample like `perf script` (or JSON lines) on
      stdout or into FILE; Ctrl-C, SIGTERM and SIGHUP end it cleanly (exit 0); a summary
      goes to stderr: samples per event, lost per CPU, probes removed; what programs
      write into perf event arrays and BPF ring buffers (ringbuf:MAP, records without
      pid/cpu/time) prints by the object's BTF, as the struct whose size matches it
      (name=value ...; several or none: hex, -v lists them); --decode MAP=TYPE chooses
      (e.g. events='struct event'), MAP=raw keeps the hex; --raw-output: perf event
      array samples carry only those bytes (the kernel's least work per event: no
      pid/cpu/time, shown as ring-buffer records; not with --perf-data);
      the maps the objects declare (not .rodata/.data/.kconfig, perf event arrays,
      ring buffers, program and stack maps; .bss variables by index) print at exit, by BTF,
      per-CPU values summed (--per-cpu: each CPU's too), sorted by value, --top N
      largest; --interval S: also every S seconds under a HH:MM:SS (UTC) header, --clear
      empties them after each; a struct hist { u32 slots[N]; } value draws as a log2
      histogram like bpftrace's hist(), --hist MAP=linear,STEP as lhist(); --json: one
      object per map per print;
      --perf-data FILE writes perf's perf.data format instead (for perf script and
      perf report on any machine; atomically, an earlier FILE kept as FILE.old, links
      followed as for -o; text lines then only with -o FILE); --perf-data - writes
      perf's pipe format on stdout (| perf script), the workload's stdout on stderr;
      -F: samples a second of perf_event programs (default 49; the cycles counter,
      else cpu-clock); --pmu: fill perf event array MAP with one counter per CPU
      (cycles, instructions, cpu-clock, task-clock, ...) for bpf_perf_event_read_value
      --event PROG=SPEC: attach program PROG at SPEC instead of its section name; given
      again for one PROG, PROG is attached at each SPEC (one loaded copy per spec);
      PROG=@FILE: at each spec of FILE, one a line (what `prologue --emit` writes)
      CONFIG: --prog NAME[,NAME...] load and attach only those programs (SEC(\"?...\")
      programs are loaded only so); --set NAME=VALUE a .rodata/.data/.bss variable
      (integer, bool, enumerator, string); --map-size NAME=N max_entries of a map;
      --pin-root DIR where maps pinned by name live (default /sys/fs/bpf);
      --metrics [ADDR:]PORT serves GET /metrics (OpenMetrics, or Prometheus text when
      not asked for it) for Prometheus to scrape: samples per event, lost per CPU,
      programs attached, and each map as OBJECT_MAP (a label per key field, a family
      per integer member, log2 histograms as histograms), counters across --clear;
      alone it records quietly, system-wide until stopped
  sluice probes [--clean]
      list the kprobe/uprobe events of groups sluice and perf_bpf_probe; --clean removes
      those no perf event uses (left by killed runs)
  sluice prologue [--arch x86_64|i386|aarch64] [--debuginfo FILE] [--emit OUT | --lines] SPEC
      print the instructions that fetch SPEC's arguments into r2..r5 (as perf's
      bpf_prologue listing) and the equivalent kprobe-tracer fetch-args; typed specs
      such as 'kprobe/vfs_read(void *, char *buf, unsigned long)' need no debug info;
      variables ('uprobe//bin/app:process(file->f_mapping->a_ops, bytes)') are looked up
      in the uprobe's binary (or its build-id/debuglink debug file), a kprobe's in FILE
      (a vmlinux with DWARF); one listing per site (every inlined instance), each with
      its resolved spec (variables as fetch-args: no debug info needed to record it);
      --emit: write the resolved specs to OUT, one per line (a site each), for
      `record --event PROG=@OUT` elsewhere; --lines: per line of the function, where the
      variables are
  sluice --help | --version

exit codes: 0 success, 1 runtime failure, 2 bad input or usage";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            console::say!("sluice: {}", e.message);
            if let Some(detail) = &e.detail {
                console::say!("{detail}");
            }
            ExitCode::from(e.code)
        }
    }
}

fn run() -> Result<(), fail::Failure> {
    use lexopt::prelude::*;
    let mut parser = lexopt::Parser::from_env();
    let mut verbose = 0u8;
    loop {
        match parser.next().map_err(fail::usage)? {
            Some(Short('v')) => verbose = verbose.saturating_add(1),
            Some(Long("verbose")) => verbose = verbose.saturating_add(1),
            Some(Short('h') | Long("help")) => {
                return console::out(&format!("{USAGE}\n"));
            }
            Some(Long("version") | Short('V')) => {
                return console::out(&format!("sluice {}\n", env!("CARGO_PKG_VERSION")));
            }
            Some(Value(cmd)) => {
                logger::init(verbose);
                let cmd = cmd.string().map_err(fail::usage)?;
                if let Some(text) = help_of(&cmd) {
                    return console::out(&text);
                }
                return match cmd.as_str() {
                    "inspect" => cmd::inspect::run(&mut parser),
                    "record" => cmd::record::run(&mut parser),
                    "probes" => cmd::probes::run(&mut parser),
                    "prologue" => cmd::prologue::run(&mut parser),
                    other => Err(fail::Failure::usage_msg(format!(
                        "unknown command '{other}'\n{USAGE}"
                    ))),
                };
            }
            Some(arg) => return Err(fail::usage(arg.unexpected())),
            None => {
                // No command: run the main job on the built-in default.
                logger::init(verbose);
                return cmd::inspect::show_default();
            }
        }
    }
}

/// `sluice CMD --help` (or `-h`, anywhere before a `--`): CMD's part of the usage.
fn help_of(cmd: &str) -> Option<String> {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let at = args.iter().position(|a| a == cmd)?;
    let asked = args
        .get(at + 1..)?
        .iter()
        .take_while(|a| *a != "--")
        .any(|a| a == "--help" || a == "-h");
    if !asked {
        return None;
    }
    // The lines from `  sluice ... CMD` to the next command's.
    let mut out = String::from("usage:\n");
    let mut inside = false;
    for line in USAGE.lines() {
        if let Some(rest) = line.strip_prefix("  sluice ") {
            let named = rest.split_whitespace().find(|w| !w.starts_with(['[', '-']));
            inside = named == Some(cmd);
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str("\nexit codes: 0 success, 1 runtime failure, 2 bad input or usage\n");
    Some(out)
}
