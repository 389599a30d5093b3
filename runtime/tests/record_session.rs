//! Kernel tests of record sessions: programs attached to tracepoints and uprobes filter
//! events, and what reaches the rings is exactly what the filters accept. Oracles: the
//! workloads themselves (they make a known number of calls, of which a known number must
//! pass), the kernel's own uprobe fetch-args for argument values, and `/proc` and tracefs
//! for what is left after a session.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeMap;
use std::sync::Mutex;

use sluice_core::perf::record::SampleFields;
use sluice_runtime::attach::Scope;
use sluice_runtime::load::UpdateMode;
use sluice_runtime::ring::OutputLayout;
use sluice_runtime::session::{Event, ObjectSource, Session, SessionOptions, SourceKind};
use sluice_runtime::tracefs::Tracefs;

/// Sessions attach to shared tracepoints and the fd checks count the whole process: one
/// test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn object(name: &str) -> ObjectSource {
    ObjectSource {
        name: name.into(),
        bytes: common::fixture(name),
    }
}

fn gettid() -> u32 {
    rustix::thread::gettid().as_raw_nonzero().get() as u32
}

fn nr_getppid() -> i64 {
    i64::from(linux_raw_sys::general::__NR_getppid)
}

fn getppid_calls(n: usize) {
    for _ in 0..n {
        std::hint::black_box(rustix::process::getppid());
    }
}

fn getpid_calls(n: usize) {
    for _ in 0..n {
        std::hint::black_box(rustix::process::getpid());
    }
}

/// `struct config` of record_filter.c.
fn filter_config(tid: u32, nr: i64, min_arg: u64) -> [u8; 24] {
    let arch: u32 = if cfg!(target_arch = "aarch64") { 2 } else { 1 };
    let mut v = [0u8; 24];
    v[0..4].copy_from_slice(&tid.to_ne_bytes());
    v[4..8].copy_from_slice(&arch.to_ne_bytes());
    v[8..16].copy_from_slice(&nr.to_ne_bytes());
    v[16..24].copy_from_slice(&min_arg.to_ne_bytes());
    v
}

fn set_config(s: &Session, value: &[u8]) {
    let map = s.objects()[0].map("config").expect("config map");
    map.update_bytes(&0u32.to_ne_bytes(), value, UpdateMode::Any)
        .unwrap();
}

/// Drains what the session has after disabling it: (samples by source name, lost).
fn collect(
    s: &mut Session,
) -> (
    BTreeMap<String, Vec<sluice_runtime::ring::SampleEvent>>,
    u64,
) {
    s.disable();
    let mut by: BTreeMap<String, Vec<_>> = BTreeMap::new();
    let mut lost = 0;
    s.drain(&mut |s, e| match e {
        Event::Sample { source, sample } => by
            .entry(s.sources()[*source].name.clone())
            .or_default()
            .push(sample.to_owned()),
        Event::Lost { lost: l, .. } => lost += l,
        Event::Drained => {}
    });
    (by, lost)
}

fn our_leftovers() -> Vec<String> {
    let me = std::process::id();
    Tracefs::find()
        .unwrap()
        .list_ours()
        .unwrap()
        .into_iter()
        .filter(|p| p.pid == Some(me))
        .map(|p| p.definition)
        .collect()
}

#[test]
fn tracepoint_filter_passes_exactly_the_accepted_events() {
    if !common::kernel("tracepoint_filter_passes_exactly_the_accepted_events") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const N: usize = 2_000;
    const M: usize = 3_000;
    let mut s =
        Session::start(&[object("record_filter.o")], &SessionOptions::default()).expect("session");
    assert_eq!(
        s.skipped().len(),
        1,
        "uprobe_arg has no probe without a mapping"
    );
    let tid = gettid();
    set_config(&s, &filter_config(tid, nr_getppid(), 0));
    // Accepted: N getppid of this thread. Rejected: M getpid of this thread, and N
    // getppid of another thread; plus every syscall of every other task.
    getppid_calls(N);
    getpid_calls(M);
    std::thread::spawn(|| getppid_calls(N)).join().unwrap();
    let (by, lost) = collect(&mut s);
    let samples = by
        .get("raw_syscalls:sys_enter")
        .cloned()
        .unwrap_or_default();
    let SourceKind::Trace { format, .. } = &s.sources()[0].kind else {
        panic!("{:?}", s.sources())
    };
    let id = format.field("id").unwrap();
    eprintln!(
        "raw_syscalls:sys_enter filter: {} samples of {} accepted, {} + {} rejected, lost {lost}",
        samples.len(),
        N,
        M,
        N
    );
    assert_eq!(lost, 0);
    assert_eq!(samples.len(), N);
    for smp in &samples {
        assert_eq!(smp.fields.tid, Some(tid));
        assert_eq!(smp.fields.period, Some(1));
        assert_eq!(id.read_i64(&smp.raw), Some(nr_getppid()), "RAW id field");
    }
    drop(s);
    assert!(our_leftovers().is_empty());
}

/// The probed function: a real call with its argument in the first argument register.
#[no_mangle]
#[inline(never)]
pub extern "C" fn sluice_record_uprobe_target(v: u64) -> u64 {
    std::hint::black_box(v).wrapping_mul(3)
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn uprobe_filter_reads_the_argument_and_raw_matches_fetch_args() {
    if !common::kernel("uprobe_filter_reads_the_argument_and_raw_matches_fetch_args") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const CALLS: u64 = 500;
    const MIN: u64 = 377;
    let exe = std::env::current_exe().unwrap();
    let reg = if cfg!(target_arch = "x86_64") {
        "%di"
    } else {
        "%x0"
    };
    let mut opts = SessionOptions::default();
    opts.events.insert(
        "arg_at_least".into(),
        format!(
            "uprobe/{}:sluice_record_uprobe_target({reg}:u64)",
            exe.display()
        ),
    );
    // This thread only: the uprobe fires in no other task.
    let tid = gettid();
    opts.scope = Some(Scope::Task {
        pid: tid as i32,
        on_exec: false,
    });
    let mut s = Session::start(&[object("record_filter.o")], &opts).expect("session");
    assert!(s.skipped().is_empty());
    assert_eq!(s.probe_names().len(), 1);
    set_config(&s, &filter_config(0, -1, MIN));
    let f: extern "C" fn(u64) -> u64 = std::hint::black_box(sluice_record_uprobe_target);
    for i in 0..CALLS {
        std::hint::black_box(f(i));
    }
    let (by, lost) = collect(&mut s);
    let (name, samples) = by
        .iter()
        .find(|(k, _)| k.starts_with("sluice:p_"))
        .expect("uprobe samples");
    let src = s.sources().iter().find(|x| &x.name == name).unwrap();
    let SourceKind::Trace { format, .. } = &src.kind else {
        panic!()
    };
    let arg = format.field("arg1").expect("fetch-arg arg1 in the format");
    let values: Vec<u64> = samples
        .iter()
        .map(|x| arg.read_u64(&x.raw).unwrap())
        .collect();
    eprintln!(
        "uprobe {name}: {} calls, {} accepted (arg >= {MIN}), lost {lost}",
        CALLS,
        samples.len()
    );
    assert_eq!(lost, 0);
    assert_eq!(values, (MIN..CALLS).collect::<Vec<_>>());
    assert!(samples
        .iter()
        .all(|x| x.fields.tid == Some(tid) && x.fields.ip.is_some()));
    drop(s);
    assert!(our_leftovers().is_empty(), "{:?}", our_leftovers());
}

#[test]
fn perf_event_array_outputs_arrive_with_their_payloads() {
    if !common::kernel("perf_event_array_outputs_arrive_with_their_payloads") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for layout in [OutputLayout::Full, OutputLayout::Raw] {
        outputs_arrive_with_their_payloads(layout);
    }
}

/// `OutputLayout::Raw`: the same payloads, and no field at all (nothing made up).
fn outputs_arrive_with_their_payloads(layout: OutputLayout) {
    const N: usize = 1_000;
    let mut opts = SessionOptions::default();
    opts.ring.output_layout = layout;
    let mut s = Session::start(&[object("record_output.o")], &opts).expect("session");
    // Before the filter is armed: this getppid must not count.
    let ppid = rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get() as i64);
    let tid = gettid();
    let mut cfg = [0u8; 16];
    cfg[0..4].copy_from_slice(&tid.to_ne_bytes());
    cfg[8..16].copy_from_slice(&nr_getppid().to_ne_bytes());
    set_config(&s, &cfg);
    getppid_calls(N);
    let (by, lost) = collect(&mut s);
    let outs = by.get("bpf-output:out").cloned().unwrap_or_default();
    eprintln!(
        "bpf_perf_event_output ({layout:?}): {} records for {N} getppid, {} trace samples, \
         lost {lost}",
        outs.len(),
        by.get("raw_syscalls:sys_exit").map_or(0, Vec::len)
    );
    assert_eq!(lost, 0);
    assert!(
        !by.contains_key("raw_syscalls:sys_exit"),
        "the program returns 0"
    );
    assert_eq!(outs.len(), N);
    let mut seqs = Vec::new();
    for o in &outs {
        // The kernel pads RAW to keep the record 8-byte aligned: at least our 32 bytes.
        assert!(o.raw.len() >= 32, "{}", o.raw.len());
        let u32_at = |i: usize| u32::from_ne_bytes(o.raw[i..i + 4].try_into().unwrap());
        let i64_at = |i: usize| i64::from_ne_bytes(o.raw[i..i + 8].try_into().unwrap());
        assert_eq!(u32_at(0), 0x51c0_ffee);
        assert_eq!(u32_at(4), tid);
        assert_eq!(i64_at(8), nr_getppid());
        assert_eq!(i64_at(16), ppid, "the syscall's return value");
        match layout {
            OutputLayout::Full => assert_eq!(o.fields.tid, Some(tid)),
            // The header's misc bits only.
            _ => assert_eq!(
                o.fields,
                SampleFields {
                    misc: o.fields.misc,
                    ..SampleFields::default()
                }
            ),
        }
        seqs.push(i64_at(24));
    }
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=N as i64).collect::<Vec<_>>());
}

#[test]
fn everything_is_released_after_success_and_after_an_error_mid_way() {
    if !common::kernel("everything_is_released_after_success_and_after_an_error_mid_way") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Called once so that the linker keeps it where the uprobe test is compiled out.
    std::hint::black_box(sluice_record_uprobe_target(std::hint::black_box(1)));
    let exe = std::env::current_exe().unwrap();
    let mut opts = SessionOptions::default();
    opts.events.insert(
        "arg_at_least".into(),
        format!("uprobe/{}:sluice_record_uprobe_target", exe.display()),
    );
    // Warm up lazily created process-wide fds (tracefs lookups, logging).
    drop(Session::start(&[object("record_filter.o")], &opts).expect("session"));
    let before = common::fd_count();

    // Success.
    let s = Session::start(
        &[object("record_output.o"), object("record_filter.o")],
        &opts,
    )
    .expect("session");
    assert_eq!(s.probe_names().len(), 1);
    let during = common::fd_count();
    drop(s);
    assert_eq!(
        common::fd_count(),
        before,
        "fds after a session ({during} during it)"
    );
    assert!(our_leftovers().is_empty(), "{:?}", our_leftovers());

    // Error after a probe, events and rings exist: the second object fails to load.
    let e = Session::start(
        &[object("record_filter.o"), object("bad_verifier.o")],
        &opts,
    )
    .expect_err("bad_verifier.o must fail");
    eprintln!("mid-way error: {e}");
    assert_eq!(common::fd_count(), before, "fds after an error mid-way");
    assert!(our_leftovers().is_empty(), "{:?}", our_leftovers());

    // Error at the second probe: an unknown function in the mapping of the second object.
    let mut bad = opts.clone();
    bad.events.insert(
        "arg_at_least".into(),
        format!("uprobe/{}:sluice_no_such_function", exe.display()),
    );
    let e = Session::start(
        &[object("record_filter.o"), object("record_filter.o")],
        &bad,
    )
    .expect_err("unknown symbol");
    eprintln!("probe error: {e}");
    assert_eq!(common::fd_count(), before);
    assert!(our_leftovers().is_empty(), "{:?}", our_leftovers());
}

/// `uprobes.o` with `true_main` mapped to a uprobe on this test's
/// `sluice_record_uprobe_target`, and `true_main_ret` mapped to `second` when given.
fn uprobe_options(second: Option<&str>) -> SessionOptions {
    // Called once so that the linker keeps it where the uprobe test is compiled out.
    std::hint::black_box(sluice_record_uprobe_target(std::hint::black_box(1)));
    let exe = std::env::current_exe().unwrap();
    let mut opts = SessionOptions::default();
    opts.events.insert(
        "true_main".into(),
        format!("uprobe/{}:sluice_record_uprobe_target", exe.display()),
    );
    let ret = second.map_or_else(
        || format!("uretprobe/{}:sluice_record_uprobe_target", exe.display()),
        |func| format!("uretprobe/{}:{func}", exe.display()),
    );
    opts.events.insert("true_main_ret".into(), ret);
    // The probes themselves are what these tests release: in tracefs, though the programs
    // always return 0 (attach_types.rs covers the PMU).
    opts.tracefs_probes = true;
    opts
}

#[test]
fn dropping_a_link_closes_its_events_then_removes_its_probe() {
    use sluice_runtime::attach::{Linker, Scope};
    use sluice_runtime::load::load_planned;
    use sluice_runtime::probe::{plans, set_specs};
    if !common::kernel("dropping_a_link_closes_its_events_then_removes_its_probe") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = common::fixture("uprobes.o");
    let mut storage = sluice_core::object::ObjectStorage::new();
    let obj = sluice_core::Object::open(&bytes, &mut storage).unwrap();
    let mut load_opts = sluice_runtime::LoadOptions::default();
    set_specs(&obj, &uprobe_options(None).events, &mut load_opts);
    let plans = plans(&obj, &load_opts).unwrap();
    let loaded = load_planned(&obj, &plans, &load_opts).unwrap();
    let tracefs = Tracefs::find().unwrap();
    let cpus = sluice_runtime::kernel::cpus::online().unwrap();
    let linker = Linker {
        tracefs: &tracefs,
        cpus: &cpus,
        scope: Scope::System,
        ring: Default::default(),
        pmu: false,
    };
    let prog = loaded.program("true_main").unwrap();
    let plan = plans.iter().find(|p| p.index() == prog.index()).unwrap();
    let before = common::fd_count();
    let (link, format) = linker.attach(plan, prog).unwrap();
    let probe = link.probe_name().expect("a uprobe link has a probe");
    assert_eq!(link.name(), probe.replace('/', ":"));
    assert!(format.unwrap().id > 0);
    assert_eq!(link.events().unwrap().events().len(), cpus.len());
    assert_eq!(common::fd_count(), before + cpus.len(), "one event per CPU");
    let (group, event) = probe.split_once('/').unwrap();
    let listed = |p: &sluice_runtime::tracefs::ListedProbe| p.group == group && p.event == event;
    assert!(tracefs.list_ours().unwrap().iter().any(listed), "{probe}");
    drop(link);
    assert_eq!(common::fd_count(), before, "the events are closed");
    assert!(!tracefs.list_ours().unwrap().iter().any(listed), "{probe}");
    assert!(our_leftovers().is_empty(), "{:?}", our_leftovers());
}

#[test]
fn a_failure_at_the_second_link_releases_the_first() {
    if !common::kernel("a_failure_at_the_second_link_releases_the_first") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Warm up lazily created process-wide fds (tracefs lookups, logging).
    let s = Session::start(&[object("uprobes.o")], &uprobe_options(None)).expect("session");
    assert_eq!(s.probe_names().len(), 2, "{:?}", s.probe_names());
    drop(s);
    assert!(our_leftovers().is_empty(), "{:?}", our_leftovers());
    let before = common::fd_count();
    // true_main gets its probe and events, then true_main_ret's symbol is not found.
    let e = Session::start(
        &[object("uprobes.o")],
        &uprobe_options(Some("sluice_no_such_function")),
    )
    .expect_err("no such function");
    eprintln!("second link: {e}");
    assert!(e.to_string().contains("true_main_ret"), "{e}");
    assert_eq!(
        common::fd_count(),
        before,
        "fds after the failed second link"
    );
    assert!(our_leftovers().is_empty(), "{:?}", our_leftovers());
}
