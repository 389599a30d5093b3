//! Kernel test of lost-record accounting: with a 1-page ring and millions of events, the
//! samples and the lost records a session hands out add up to what the program emitted,
//! exactly, in every run — losses still pending in the kernel when the session ends
//! included (`PERF_FORMAT_LOST`). Oracle: the program's own counters in an array map
//! (`tests/bpf/lost_count.c`), read after the run. The workload is a 64-bit C program
//! (`tests/record/lost_count.c`) whose function carries the uprobe: the probe is this
//! test's alone.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use sluice_runtime::attach::Scope;
use sluice_runtime::ring::RingConfig;
use sluice_runtime::session::{
    Event, ObjectSource, RunControl, Session, SessionOptions, SourceKind, Stop,
};
use sluice_runtime::sys::process::HeldChild;

/// Hits per run.
const EVENTS: u64 = 2_000_000;
/// Runs: each must add up exactly.
const RUNS: usize = 1;

/// `tests/record/lost_count.c` built into a fresh folder, `None` (skip) without `cc`.
fn workload() -> Option<PathBuf> {
    let dir = std::env::temp_dir().join(format!("sluice-lost-count-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("lost_count");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/record/lost_count.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    match Command::new(&cc)
        .arg("-O2")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .output()
    {
        Ok(o) if o.status.success() => Some(bin),
        Ok(o) => panic!("{cc} failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) if !common::required() => {
            eprintln!("*** SKIPPED lost_count: no C compiler ({cc}: {e}) ***");
            None
        }
        Err(e) => panic!("no C compiler ({cc}: {e})"),
    }
}

/// What one run handed out, per kind of source, and what the program counted.
#[derive(Debug, Default)]
struct Run {
    trace_samples: u64,
    trace_lost: u64,
    output_samples: u64,
    output_lost: u64,
    /// `counts` of lost_count.c: hits, written, refused for room, refused otherwise.
    counts: [u64; 4],
    /// Lost events handed out.
    lost_events: u64,
}

fn one_run(bin: &PathBuf, pages: usize) -> Run {
    let mut cmd = Command::new(bin);
    cmd.arg(EVENTS.to_string());
    let held = HeldChild::spawn(cmd).unwrap();
    let mut opts = SessionOptions {
        scope: Some(Scope::Task {
            pid: held.pid(),
            on_exec: true,
        }),
        ring: RingConfig {
            data_pages: pages,
            ..RingConfig::default()
        },
        ..SessionOptions::default()
    };
    opts.events.insert(
        "on_hit".into(),
        format!("uprobe/{}:lost_count_target", bin.display()),
    );
    let object = ObjectSource {
        name: "lost_count.o".into(),
        bytes: common::fixture("lost_count.o"),
    };
    let mut s = Session::start(&[object], &opts).expect("session");
    let mut child = held.release().unwrap();
    let mut run = Run::default();
    let mut sink = |s: &Session, e: &Event| {
        let (source, samples, lost) = match e {
            Event::Sample { source, .. } => (*source, 1, 0),
            Event::Lost { source, lost, .. } => (*source, 0, *lost),
            Event::Drained => return,
        };
        run.lost_events += u64::from(lost > 0);
        match s.sources()[source].kind {
            SourceKind::Trace { .. } => {
                run.trace_samples += samples;
                run.trace_lost += lost;
            }
            SourceKind::Output { .. } => {
                run.output_samples += samples;
                run.output_lost += lost;
            }
            SourceKind::Hook { .. } | SourceKind::RingBuf { .. } => {
                panic!("no hook or ring buffer in this object")
            }
        }
    };
    let ctl = RunControl {
        child: Some(&mut child),
        ..RunControl::default()
    };
    let stop = s.run(ctl, &mut sink).unwrap();
    assert!(
        matches!(stop, Stop::Exited(st) if st.success()),
        "workload: {stop:?}"
    );
    let counts = s.objects()[0].map("counts").expect("counts map");
    for (key, slot) in run.counts.iter_mut().enumerate() {
        *slot = counts.get::<u32, u64>(&(key as u32)).unwrap().unwrap();
    }
    let summary = s.summary();
    assert_eq!(
        summary.lost.values().sum::<u64>(),
        run.trace_lost + run.output_lost,
        "the summary counts the lost events handed out"
    );
    let closed = s.close();
    assert!(closed.errors.is_empty(), "{:?}", closed.errors);
    assert_eq!(closed.probes_removed, 1);
    run
}

#[test]
fn samples_and_lost_add_up_to_what_the_program_emitted() {
    if !common::kernel("samples_and_lost_add_up_to_what_the_program_emitted") {
        return;
    }
    let Some(bin) = workload() else { return };
    for i in 0..RUNS {
        let r = one_run(&bin, 1);
        let [hits, written, nospc, other] = r.counts;
        eprintln!(
            "run {i}: -m 1, {hits} hits; bpf-output: {} samples + {} lost (program: {written} \
             written, {nospc} ENOSPC, {other} other); probe: {} samples + {} lost; {} LOST \
             events",
            r.output_samples, r.output_lost, r.trace_samples, r.trace_lost, r.lost_events
        );
        assert_eq!(hits, EVENTS, "every call hit the uprobe");
        assert_eq!(other, 0, "no output refused for another reason than room");
        assert_eq!(written + nospc, hits);
        // The program's outputs: what it wrote arrived, what had no room is reported lost.
        assert_eq!(r.output_samples, written, "bpf-output samples");
        assert_eq!(r.output_lost, nospc, "bpf-output lost");
        // The probe's own samples (the program returned 1 on every hit).
        assert_eq!(r.trace_samples + r.trace_lost, hits, "probe samples + lost");
        // A 1-page ring cannot hold two million records: the case is the one under test.
        assert!(r.output_lost > 0 && r.trace_lost > 0, "{r:?}");
    }
    std::fs::remove_dir_all(bin.parent().unwrap()).unwrap();
}
