//! The whole kernel-to-consumer drain through [`Session`], against the `ringbuf` peer
//! (`shared/peers/ringbuf/drain.c`): a generator process makes N `getppid` syscalls, the
//! fixture `tests/bpf/bench_drain.o` sends a 32-byte record per call through a perf event
//! array (`tests/bpf/bench_ringbuf.o`: through a BPF ring buffer), and this program is the
//! consumer — the session's own loop (`poll`, drain every
//! ring, hand each sample to a sink) with a sink that only counts and checks sequence
//! numbers, so the figure is sluice's drain and nothing else (no formatting: the CLI with
//! `-o /dev/null` measures that separately, see `vs_ringbuf.sh`).
//!
//! ```text
//! ring_drain OBJ N GEN_CPU GEN [PAGES] [WAKEUP] [raw] [NAME=VALUE]...
//!   PAGES       data pages per CPU (default: RingConfig::for_cpus, as `sluice record`)
//!   WAKEUP      events:N or bytes:N (default: RingConfig::default())
//!   raw         OutputLayout::Raw: samples of the program's bytes only
//!   NAME=VALUE  a global of the object set before load (bench_flat.bpf.c's `size`, `rings`)
//! ```
//! Prints one `RESULT` line in the peer's format
//! (`system config sent received lost consumer_cpu_s wall_s events_per_s`) and a `DETAIL`
//! line on stderr. Consumer CPU is this process's CPU time (`CLOCK_PROCESS_CPUTIME_ID`) from the generator's release to
//! the end of the last drain; pin the process with `taskset` (the generator is pinned to
//! GEN_CPU through `taskset -c GEN_CPU`).
//!
//! Run by `cargo bench` without arguments it needs root and does a short self-contained
//! run (N = 200,000, generator = this binary's `--gen` mode) so the bench never rots.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::process::Command;
use std::time::Instant;

use sluice_runtime::attach::Scope;
use sluice_runtime::ring::{OutputLayout, RingConfig, Wakeup};
use sluice_runtime::session::{Event, ObjectSource, RunControl, Session, SessionOptions};
use sluice_runtime::sys::process::HeldChild;

/// CPU time of this process, every thread, user and system (`CLOCK_PROCESS_CPUTIME_ID`:
/// what getrusage(RUSAGE_SELF) sums, at nanosecond resolution).
fn cpu_self() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--gen") {
        // A stand-in for gen.c: N raw getppid syscalls.
        let n: u64 = args[2].parse().unwrap();
        for _ in 0..n {
            std::hint::black_box(rustix::process::getppid());
        }
        return;
    }
    let (obj, _n, gen_cpu, gen, knobs) = if args.len() >= 5 && args[1] != "--bench" {
        (
            args[1].clone(),
            args[2].clone(),
            args[3].clone(),
            vec![args[4].clone(), args[2].clone()],
            args[5..].to_vec(),
        )
    } else {
        if !rustix::process::geteuid().is_root() {
            eprintln!("*** ring_drain: SKIPPED (needs root; see runtime/benches/vs_ringbuf.sh)");
            return;
        }
        let obj = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/bpf/bench_drain.o");
        let me = std::env::current_exe().unwrap().display().to_string();
        (
            obj.to_owned(),
            "200000".to_owned(),
            "0".to_owned(),
            vec![me, "--gen".to_owned(), "200000".to_owned()],
            Vec::new(),
        )
    };
    // Sized as `sluice record` sizes its rings on this machine.
    let online = sluice_runtime::kernel::cpus::online().map_or(1, |c| c.len());
    let mut ring = RingConfig::for_cpus(online);
    let mut load = sluice_runtime::LoadOptions::default();
    let mut globals = String::new();
    for k in &knobs {
        match k.split_once(':') {
            Some(("events", v)) => ring.wakeup = Wakeup::Events(v.parse().unwrap()),
            Some(("bytes", v)) => ring.wakeup = Wakeup::Watermark(v.parse().unwrap()),
            _ if k == "raw" => ring.output_layout = OutputLayout::Raw,
            _ if k.contains('=') => {
                let (name, value) = k.split_once('=').unwrap();
                load.globals.push((name.to_owned(), value.to_owned()));
                globals.push_str(&format!("-{name}{value}"));
            }
            _ => ring.data_pages = k.parse().unwrap(),
        }
    }
    let config = format!(
        "{}p-{}{}{globals}",
        ring.data_pages,
        match ring.wakeup {
            Wakeup::Events(e) => format!("wakeup{e}"),
            Wakeup::Watermark(b) => format!("watermark{}K", b / 1024),
            Wakeup::QuarterRing => "watermark-quarter".to_owned(),
        },
        if ring.output_layout == OutputLayout::Raw {
            "-raw"
        } else {
            ""
        }
    );

    let mut cmd = Command::new("taskset");
    cmd.arg("-c").arg(&gen_cpu).args(&gen);
    let held = HeldChild::spawn(cmd).unwrap();
    let objects = [ObjectSource {
        name: obj.clone(),
        bytes: std::fs::read(&obj).unwrap(),
    }];
    let opts = SessionOptions {
        scope: Some(Scope::Task {
            pid: held.pid(),
            on_exec: true,
        }),
        ring,
        load,
        ..SessionOptions::default()
    };
    let mut session = Session::start(&objects, &opts).unwrap();
    // A BPF ring buffer object (tests/bpf/bench_ringbuf.o): one shared buffer, its size set
    // by the object, so the perf ring knobs do not apply.
    let ringbuf = session
        .sources()
        .iter()
        .any(|s| matches!(s.kind, sluice_runtime::session::SourceKind::RingBuf { .. }));
    let config = if ringbuf {
        "ringbuf-256KiB".to_owned()
    } else {
        config
    };

    let (mut received, mut gaps, mut next_seq) = (0u64, 0u64, 0u64);
    let mut lost_records = 0u64;
    let c0 = cpu_self();
    let t0 = Instant::now();
    let mut child = held.release().unwrap();
    let mut sink = |_: &Session, e: &Event| match e {
        Event::Sample { sample, .. } => {
            // struct rec { u32 pid, cpu; u64 seq, ts, pad; } behind the RAW size word.
            if let Some(b) = sample.raw.get(8..16) {
                received += 1;
                let seq = u64::from_ne_bytes(b.try_into().unwrap());
                gaps += seq.saturating_sub(next_seq);
                next_seq = seq + 1;
            }
        }
        Event::Lost { lost, .. } => lost_records += lost,
        Event::Drained => {}
    };
    // As `sluice record` runs it: the workload's exit comes as SIGCHLD through the pipe.
    let signals =
        sluice_runtime::sys::signal::SignalPipe::install(&[libc::SIGINT, libc::SIGCHLD]).unwrap();
    let ctl = RunControl {
        child: Some(&mut child),
        signals: Some(&signals),
        ..RunControl::default()
    };
    session.run(ctl, &mut sink).unwrap();
    let wall = t0.elapsed().as_secs_f64();
    let ccpu = cpu_self() - c0;

    let stats = session.objects()[0].map("stats").unwrap();
    let s: Vec<u64> = (0..3u32)
        .map(|k| stats.get::<u32, u64>(&k).unwrap().unwrap_or(0))
        .collect();
    let lost = lost_records.max(s[2]);
    eprintln!(
        "DETAIL sluice-{config} bpf_hits={} bpf_ok={} bpf_fail={} lost_records={lost_records} \
         seq_gaps={gaps} consumer_cpu_us_per_event={:.4}",
        s[0],
        s[1],
        s[2],
        ccpu * 1e6 / received.max(1) as f64
    );
    println!(
        "RESULT sluice-runtime {config} {} {received} {lost} {ccpu:.3} {wall:.3} {:.0}",
        s[0],
        received as f64 / wall
    );
}
