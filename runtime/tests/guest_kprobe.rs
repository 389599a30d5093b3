//! Kprobe record tests for real guest kernels (x86_64 and arm64 Debian kernels under QEMU,
//! see `aarch64-ci/guest/`; `.ci/steps.sh guest_record` runs this binary there): the host
//! that runs the rest of the suite has no kprobes.
//!
//! With `tests/bpf/guest_kprobes.o`, every program accepting only the process whose tgid is
//! at key 0 of `target_tgid`, while a busy shell loop in another process opens and reads
//! files all the time:
//! - a kprobe filter on `do_filp_open` keeps exactly the opens of this process, made by one
//!   thread pinned to each online CPU, and each sample comes from the ring of that CPU;
//! - a kretprobe on `vfs_read` sees the known sizes of the files read, both in what the
//!   program sends with `bpf_perf_event_output` (its `$retval` comes from the generated
//!   prologue) and in the kernel's own `$retval` fetch-arg of the same event;
//! - typed entry arguments without debug info, `kprobe/vfs_read(void *, char *, unsigned
//!   long, void *)`: r3 and r4 are the buffer address and count the workload passed to
//!   `read(2)`, and r2..r5 equal what the kernel's own fetch-args (`%di %si %dx %cx` on
//!   x86_64, `%x0 %x1 %x2 %x3` on arm64) read on a separate kprobe of the same function;
//! - `sluice record` leaves no probe behind; a `SIGKILL`ed one does, which
//!   `sluice probes --clean` removes;
//! - x86_64 only: the i686 `sluice` (`SLUICE_BIN_I686`, run by the kernel's IA32
//!   emulation) prints and records kprobe prologues for this 64-bit kernel's `pt_regs` and
//!   calling convention: with `tests/bpf/dwarf_words.o` on `kprobe/vfs_read(void *, char *,
//!   unsigned long, void *)`, every hit's r2..r5 equal the kernel's `%di %si %dx %cx`
//!   fetch-args of the same event, and r3, r4 the buffer and count of each known read.
//!
//! Gating: skipped loudly when not root or without `bpf()` (fails under
//! `SLUICE_REQUIRE_KERNEL=1`), and when the kernel has no kprobe events (fails under
//! `SLUICE_REQUIRE_KPROBES=1`, which the guest step sets). The `sluice` binary comes from
//! `SLUICE_BIN`, else from next to this test binary's folder (cargo's `target/<profile>/`);
//! the i686 one only from `SLUICE_BIN_I686` (missing: a failure under
//! `SLUICE_REQUIRE_KPROBES=1`).
//!
//! x86_64 and aarch64 only: the guests' kernels (the i686 build is tested through its
//! `sluice` binary, which the x86_64 tests run).
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sluice_runtime::load::UpdateMode;
use sluice_runtime::ring::SampleEvent;
use sluice_runtime::session::{Event, ObjectSource, Session, SessionOptions, SourceKind};
use sluice_runtime::tracefs::{ProbeKind, Tracefs};

/// One session at a time: the workload's counts must not see another test's opens.
static SERIAL: Mutex<()> = Mutex::new(());

const FIXTURE: &str = "guest_kprobes.o";
/// `rejected` slots (guest_kprobes.c).
const REJ_OPEN: u32 = 0;
const REJ_READ_RET: u32 = 1;
const REJ_READ_ARGS: u32 = 2;
const REJ_READ_REGS: u32 = 3;
const TAG_READ_RET: u32 = 0x51ce_0002;
const TAG_READ_ARGS: u32 = 0x51ce_0003;
/// Files each workload thread opens and reads.
const FILES_PER_CPU: usize = 24;

/// The kernel's fetch-args for the registers of vfs_read's four arguments.
fn regs_spec() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "kprobe/vfs_read(%x0:u64, %x1:u64, %x2:u64, %x3:u64)"
    } else {
        "kprobe/vfs_read(%di:u64, %si:u64, %dx:u64, %cx:u64)"
    }
}

/// Whether a kprobe test can run here (see the module docs); `None` after a loud skip.
fn kprobes(test: &str) -> Option<Tracefs> {
    if !common::kernel(test) {
        return None;
    }
    let t = Tracefs::find().expect("tracefs");
    if t.supports(ProbeKind::Kprobe) {
        return Some(t);
    }
    let why = format!(
        "no kprobe_events in {} (CONFIG_KPROBE_EVENTS)",
        t.root().display()
    );
    assert!(
        std::env::var("SLUICE_REQUIRE_KPROBES").as_deref() != Ok("1"),
        "{test}: SLUICE_REQUIRE_KPROBES=1 but {why}"
    );
    eprintln!(
        "\n*** SKIPPED kernel test {test}: {why}; run it in a guest (aarch64-ci/guest) ***\n"
    );
    None
}

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn arch() -> &'static str {
    std::env::consts::ARCH
}

/// Lines of `kprobe_events` in group `sluice`.
fn sluice_kprobes(t: &Tracefs) -> Vec<String> {
    std::fs::read_to_string(t.root().join("kprobe_events"))
        .unwrap()
        .lines()
        .filter(|l| l.contains(":sluice/"))
        .map(str::to_owned)
        .collect()
}

/// Test files with distinct, known sizes.
struct Files {
    dir: PathBuf,
    paths: Vec<PathBuf>,
}

impl Files {
    fn new(tag: &str, n: usize) -> Files {
        let dir = std::env::temp_dir().join(format!("sluice-guest-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let paths = (0..n)
            .map(|i| {
                let p = dir.join(format!("f{i:03}"));
                std::fs::write(&p, vec![b'a' + (i % 26) as u8; Files::size(i)]).unwrap();
                p
            })
            .collect();
        Files { dir, paths }
    }

    /// Size of file `i`.
    fn size(i: usize) -> usize {
        100 + 37 * i
    }

    /// The count file `i` is read with: more than its size, and unique.
    fn count(i: usize) -> usize {
        Files::size(i) + 1000 + i
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Another process that opens and reads a file in a loop, without forking (shell builtins),
/// for the filters to turn away.
struct Noise(Child);

impl Noise {
    fn start() -> Noise {
        Noise(
            Command::new("sh")
                .args(["-c", "while :; do read -r l < /proc/version; done"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .expect("sh"),
        )
    }
}

impl Drop for Noise {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What one workload thread did.
#[derive(Debug)]
struct Done {
    tid: u32,
    /// The CPU it was pinned to (and ran on: checked).
    cpu: u32,
    /// Address of the buffer passed to read(2).
    buf: u64,
    /// (file index, bytes read).
    reads: Vec<(usize, usize)>,
}

/// One thread pinned to each CPU of `cpus` opens, reads (once, with [`Files::count`]) and
/// closes its share of `files`, with raw syscalls: one `openat` and one `read` per file.
fn workload(files: &Files, cpus: &[u32]) -> Vec<Done> {
    std::thread::scope(|sc| {
        let handles: Vec<_> = cpus
            .iter()
            .enumerate()
            .map(|(k, &cpu)| {
                let mine: Vec<(usize, &PathBuf)> = files
                    .paths
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % cpus.len() == k)
                    .collect();
                sc.spawn(move || {
                    let mut set = rustix::thread::CpuSet::new();
                    set.set(cpu as usize);
                    rustix::thread::sched_setaffinity(None, &set).unwrap();
                    assert_eq!(rustix::thread::sched_getcpu(), cpu as usize);
                    let mut buf = vec![0u8; 8192];
                    let mut reads = Vec::new();
                    for (i, p) in mine {
                        let fd = rustix::fs::open(
                            p.as_path(),
                            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
                            rustix::fs::Mode::empty(),
                        )
                        .unwrap();
                        let n = rustix::io::read(&fd, &mut buf[..Files::count(i)]).unwrap();
                        reads.push((i, n));
                    }
                    Done {
                        tid: rustix::thread::gettid().as_raw_nonzero().get() as u32,
                        cpu,
                        buf: buf.as_ptr() as u64,
                        reads,
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn session(mapped_regs: bool) -> Session {
    let mut opts = SessionOptions::default();
    if mapped_regs {
        opts.events.insert("read_regs".into(), regs_spec().into());
    }
    let obj = ObjectSource {
        name: FIXTURE.into(),
        bytes: common::fixture(FIXTURE),
    };
    Session::start(&[obj], &opts).expect("session")
}

fn arm(s: &Session, tgid: u32) {
    let map = s.objects()[0].map("target_tgid").expect("target_tgid map");
    map.update(&0u32, &tgid, UpdateMode::Any).unwrap();
}

fn rejected(s: &Session, slot: u32) -> u64 {
    let map = s.objects()[0].map("rejected").expect("rejected map");
    map.get::<u32, u64>(&slot).unwrap().unwrap_or(0)
}

/// Keeps the filters armed until each of `slots` has turned the noise away at least once
/// (a slow guest may not have scheduled it during the workload); meanwhile this process
/// only makes `bpf()` and `nanosleep()` calls, which none of the probes sees.
fn wait_for_rejections(s: &Session, slots: &[u32]) {
    let until = Instant::now() + Duration::from_secs(20);
    while slots.iter().any(|&k| rejected(s, k) == 0) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Samples after disabling, keyed by program name (trace events) or `out` (the perf event
/// array), and the lost count.
fn collect(s: &mut Session) -> (BTreeMap<String, Vec<SampleEvent>>, u64) {
    s.disable();
    let mut by: BTreeMap<String, Vec<SampleEvent>> = BTreeMap::new();
    let mut lost = 0;
    s.drain(&mut |s, e| match e {
        Event::Sample { source, sample } => {
            let key = match &s.sources()[*source].kind {
                SourceKind::Trace { program, .. } | SourceKind::Hook { program } => program.clone(),
                SourceKind::Output { .. } | SourceKind::RingBuf { .. } => "out".into(),
            };
            by.entry(key).or_default().push(sample.to_owned());
        }
        Event::Lost { lost: l, .. } => lost += l,
        Event::Drained => {}
    });
    (by, lost)
}

fn format_of<'a>(s: &'a Session, program: &str) -> &'a sluice_runtime::tracefs::EventFormat {
    s.sources()
        .iter()
        .find_map(|x| match &x.kind {
            SourceKind::Trace { format, program: p } if p == program => Some(format),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no source for {program}: {:?}", s.sources()))
}

fn u32_at(raw: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(raw[at..at + 4].try_into().unwrap())
}

fn u64_at(raw: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(raw[at..at + 8].try_into().unwrap())
}

#[test]
fn open_filter_keeps_exactly_the_target_opens_on_every_cpu() {
    let _g = serial();
    let Some(t) = kprobes("open_filter_keeps_exactly_the_target_opens_on_every_cpu") else {
        return;
    };
    let cpus = sluice_runtime::kernel::cpus::online().unwrap();
    let files = Files::new("open", FILES_PER_CPU * cpus.len());
    let noise = Noise::start();
    let mut s = session(false);
    assert_eq!(s.probe_names().len(), 3, "{:?}", s.probe_names());
    assert_eq!(sluice_kprobes(&t).len(), 3, "{:?}", sluice_kprobes(&t));
    let me = std::process::id();
    let t0 = Instant::now();
    arm(&s, me);
    let done = workload(&files, &cpus);
    let window = t0.elapsed();
    wait_for_rejections(&s, &[REJ_OPEN]);
    arm(&s, 0);
    drop(noise);
    let rej = rejected(&s, REJ_OPEN);
    let (by, lost) = collect(&mut s);
    let opens = by.get("open_filter").cloned().unwrap_or_default();
    let mut per_cpu: BTreeMap<u32, usize> = BTreeMap::new();
    for smp in &opens {
        *per_cpu.entry(smp.fields.cpu.unwrap()).or_default() += 1;
    }
    eprintln!(
        "guest-figures {}: kprobe do_filp_open: {} opens on cpus {cpus:?} -> {} samples \
         (per cpu {per_cpu:?}), {rej} opens of other processes rejected, lost {lost}, \
         window {window:?}",
        arch(),
        files.paths.len(),
        opens.len()
    );
    assert_eq!(lost, 0);
    assert_eq!(opens.len(), files.paths.len());
    assert!(rej > 0, "the noise process's opens must reach the filter");
    for d in &done {
        let mine: Vec<_> = opens
            .iter()
            .filter(|x| x.fields.tid == Some(d.tid))
            .collect();
        assert_eq!(mine.len(), d.reads.len(), "samples of thread {}", d.tid);
        for smp in mine {
            assert_eq!(smp.fields.pid, Some(me));
            assert_eq!(
                smp.fields.cpu,
                Some(d.cpu),
                "sample from the ring of the thread's CPU"
            );
            assert_eq!(smp.fields.period, Some(1));
            assert!(smp.fields.ip.is_some_and(|ip| ip != 0));
        }
    }
    assert_eq!(per_cpu.len(), cpus.len(), "every CPU's ring delivered");
    drop(s);
    assert!(sluice_kprobes(&t).is_empty(), "{:?}", sluice_kprobes(&t));
}

#[test]
fn vfs_read_return_values_and_typed_args_match_the_workload_and_the_kernel() {
    let _g = serial();
    let Some(t) =
        kprobes("vfs_read_return_values_and_typed_args_match_the_workload_and_the_kernel")
    else {
        return;
    };
    let cpus = sluice_runtime::kernel::cpus::online().unwrap();
    let files = Files::new("read", FILES_PER_CPU * cpus.len());
    let noise = Noise::start();
    let mut s = session(true);
    assert!(s.skipped().is_empty(), "{:?}", s.skipped());
    assert_eq!(s.probe_names().len(), 4, "{:?}", s.probe_names());
    let me = std::process::id();
    arm(&s, me);
    let done = workload(&files, &cpus);
    wait_for_rejections(&s, &[REJ_READ_RET, REJ_READ_ARGS, REJ_READ_REGS]);
    arm(&s, 0);
    drop(noise);
    let rej = [REJ_READ_RET, REJ_READ_ARGS, REJ_READ_REGS].map(|k| rejected(&s, k));
    let (by, lost) = collect(&mut s);
    assert_eq!(lost, 0);
    let n = files.paths.len();
    let tids: Vec<u32> = done.iter().map(|d| d.tid).collect();
    let buf_of = |tid: u32| done.iter().find(|d| d.tid == tid).unwrap().buf;
    for d in &done {
        for &(i, got) in &d.reads {
            assert_eq!(got, Files::size(i), "read(2) of file {i}");
        }
    }

    // (b) kretprobe: the program's $retval (prologue) and the kernel's, per read.
    let rets: Vec<(u32, i64)> = by["out"]
        .iter()
        .filter(|o| u32_at(&o.raw, 0) == TAG_READ_RET)
        .map(|o| (u32_at(&o.raw, 4), u64_at(&o.raw, 8) as i64))
        .collect();
    let fmt = format_of(&s, "read_ret");
    let ret_field = fmt.field("arg1").expect("$retval fetch-arg in the format");
    let kernel_rets: Vec<i64> = by["read_ret"]
        .iter()
        .map(|x| ret_field.read_i64(&x.raw).unwrap())
        .collect();
    let mut want: Vec<i64> = (0..n).map(|i| Files::size(i) as i64).collect();
    want.sort_unstable();
    let mut got: Vec<i64> = rets.iter().map(|r| r.1).collect();
    got.sort_unstable();
    let mut kgot = kernel_rets.clone();
    kgot.sort_unstable();
    eprintln!(
        "guest-figures {}: kretprobe vfs_read: {n} reads -> {} outputs, {} RAW samples, \
         sizes {}..={} equal: {}, {} reads of other processes rejected",
        arch(),
        rets.len(),
        kernel_rets.len(),
        want[0],
        want[n - 1],
        got == want && kgot == want,
        rej[0]
    );
    assert_eq!(got, want, "program's $retval = file sizes");
    assert_eq!(kgot, want, "kernel's $retval = file sizes");
    assert!(rets.iter().all(|r| tids.contains(&r.0)));
    assert!(rej[0] > 0);

    // (c) typed entry arguments: r2..r5 from the prologue, against the workload and the
    // kernel's own fetch-args on a second kprobe of vfs_read.
    let args: Vec<[u64; 5]> = by["out"]
        .iter()
        .filter(|o| u32_at(&o.raw, 0) == TAG_READ_ARGS)
        .map(|o| {
            [
                u64::from(u32_at(&o.raw, 4)),
                u64_at(&o.raw, 8),
                u64_at(&o.raw, 16),
                u64_at(&o.raw, 24),
                u64_at(&o.raw, 32),
            ]
        })
        .collect();
    assert_eq!(args.len(), n, "one output per read(2)");
    let mut seen_counts = Vec::new();
    for a in &args {
        let [tid, file, buf, count, pos] = *a;
        assert!(tids.contains(&(tid as u32)));
        let i = (0..n)
            .find(|&i| Files::count(i) as u64 == count)
            .unwrap_or_else(|| {
                panic!("r4 = {count:#x} is no count the workload passed (tid {tid})")
            });
        seen_counts.push(i);
        assert_eq!(
            buf,
            buf_of(tid as u32),
            "r3 = the buffer of read(2), file {i}"
        );
        assert_ne!(file, 0, "r2 = struct file *");
        assert_ne!(pos, 0, "r5 = loff_t * (a regular file has a position)");
    }
    seen_counts.sort_unstable();
    assert_eq!(seen_counts, (0..n).collect::<Vec<_>>());
    let fmt = format_of(&s, "read_regs");
    let fields: Vec<_> = (1..=4)
        .map(|k| fmt.field(&format!("arg{k}")).expect("fetch-arg field"))
        .collect();
    let mut kernel: Vec<[u64; 5]> = by["read_regs"]
        .iter()
        .map(|x| {
            let v: Vec<u64> = fields.iter().map(|f| f.read_u64(&x.raw).unwrap()).collect();
            [u64::from(x.fields.tid.unwrap()), v[0], v[1], v[2], v[3]]
        })
        .collect();
    let mut ours = args.clone();
    ours.sort_unstable();
    kernel.sort_unstable();
    let (s_buf, s_count) = if cfg!(target_arch = "aarch64") {
        ("%x1", "%x2")
    } else {
        ("%si", "%dx")
    };
    eprintln!(
        "guest-figures {}: kprobe vfs_read(void *, char *, unsigned long, void *): {n} reads \
         -> {} outputs, r3 = buf and r4 = count for all; kernel fetch-args ({}) {} samples, \
         r2..r5 = kernel's {s_buf}/{s_count}... for {} of {}; {} / {} other reads rejected",
        arch(),
        args.len(),
        regs_spec(),
        kernel.len(),
        ours.iter().zip(&kernel).filter(|(a, b)| a == b).count(),
        n,
        rej[1],
        rej[2]
    );
    assert_eq!(kernel.len(), n);
    assert_eq!(ours, kernel, "prologue's r2..r5 = the kernel's fetch-args");
    assert!(rej[1] > 0 && rej[2] > 0);
    drop(s);
    assert!(sluice_kprobes(&t).is_empty(), "{:?}", sluice_kprobes(&t));
}

/// The `sluice` binary (module docs), if there is one.
fn sluice_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SLUICE_BIN") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.parent()?.join("sluice");
    p.is_file().then_some(p)
}

/// Children of `pid` (from /proc).
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|c| {
            std::fs::read_to_string(format!("/proc/{c}/stat")).is_ok_and(|st| {
                // "pid (comm) state ppid ...": comm may hold spaces, the last ')' ends it.
                st.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

fn run_sluice(bin: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn sluice_record_leaves_nothing_and_probes_clean_removes_a_killed_run() {
    let _g = serial();
    let test = "sluice_record_leaves_nothing_and_probes_clean_removes_a_killed_run";
    let Some(t) = kprobes(test) else {
        return;
    };
    let Some(bin) = sluice_bin() else {
        assert!(
            std::env::var("SLUICE_REQUIRE_KPROBES").as_deref() != Ok("1"),
            "{test}: no sluice binary (set SLUICE_BIN)"
        );
        eprintln!("\n*** SKIPPED {test}: no sluice binary (set SLUICE_BIN) ***\n");
        return;
    };
    let fixture = common::fixture_dir().join(FIXTURE);
    let fixture = fixture.to_str().unwrap();
    let files = Files::new("cli", 3);
    let redirs: Vec<String> = files
        .paths
        .iter()
        .enumerate()
        .map(|(k, p)| format!("{}<{}", k + 3, p.display()))
        .collect();
    let script = format!("exec {}", redirs.join(" "));

    // A normal run: the shell's opens, nothing left after it.
    let t0 = Instant::now();
    let (code, out, err) = run_sluice(
        &bin,
        &["record", "-e", fixture, "--json", "--", "sh", "-c", &script],
    );
    let took = t0.elapsed();
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("program 'read_regs' skipped"), "{err}");
    let summary = err
        .lines()
        .find(|l| l.starts_with("sluice record:"))
        .unwrap_or_else(|| panic!("{err}"));
    let opens: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("_do_filp_open\""))
        .collect();
    let pids: std::collections::BTreeSet<&str> = opens
        .iter()
        .filter_map(|l| l.split("\"pid\":").nth(1)?.split(',').next())
        .collect();
    eprintln!(
        "guest-figures {}: sluice record -- sh -c '{script}': {} do_filp_open samples from \
         pids {pids:?} in {took:?}; {summary}",
        arch(),
        opens.len()
    );
    assert!(summary.contains("lost 0"), "{summary}");
    assert!(summary.contains("stopped: workload exited"), "{summary}");
    // Events start at the workload's exec (after the exec's own open): the shell's three
    // redirections are all the opens there are.
    assert_eq!(opens.len(), files.paths.len(), "{out}");
    assert_eq!(pids.len(), 1, "the workload's only: {pids:?}");
    assert!(sluice_kprobes(&t).is_empty(), "{:?}", sluice_kprobes(&t));

    // A killed run leaves its probes: `sluice probes` shows them dead, --clean removes them.
    let mut child = Command::new(&bin)
        .args(["record", "-e", fixture, "--", "sleep", "30"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let tag = format!(":sluice/p_{pid}_");
    let until = Instant::now() + Duration::from_secs(60);
    while sluice_kprobes(&t)
        .iter()
        .filter(|l| l.contains(&tag))
        .count()
        < 2
    {
        assert!(Instant::now() < until, "sluice never made its probes");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The probes exist before the workload is released: wait for it to run `sleep`.
    while children(pid).is_empty() {
        assert!(Instant::now() < until, "no workload");
        std::thread::sleep(Duration::from_millis(20));
    }
    let workload = children(pid);
    child.kill().unwrap();
    child.wait().unwrap();
    for w in workload {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(w as i32).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
    let left = sluice_kprobes(&t);
    assert_eq!(
        left.len(),
        3,
        "a SIGKILLed run leaves its 3 kprobes: {left:?}"
    );
    let (code, listed, err) = run_sluice(&bin, &["probes"]);
    assert_eq!(code, 0, "{err}");
    let dead = listed
        .lines()
        .filter(|l| l.starts_with(&format!("{pid} ")) && l.contains(" dead "))
        .count();
    assert_eq!(dead, 3, "{listed}");
    let (code, removed, err) = run_sluice(&bin, &["probes", "--clean"]);
    assert_eq!(code, 0, "{err}");
    eprintln!(
        "guest-figures {}: SIGKILLed sluice record left {} kprobes; sluice probes --clean: \
         {} removed; kprobe_events now has {} sluice lines",
        arch(),
        left.len(),
        removed
            .lines()
            .filter(|l| l.starts_with("removed "))
            .count(),
        sluice_kprobes(&t).len()
    );
    assert_eq!(
        removed
            .lines()
            .filter(|l| l.starts_with("removed "))
            .count(),
        3,
        "{removed}{err}"
    );
    assert!(sluice_kprobes(&t).is_empty(), "{:?}", sluice_kprobes(&t));
}

/// The standard base64 alphabet, with `=` padding (what `base64 -d` reads).
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for k in 0..4 {
            if k <= c.len() {
                out.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `sluice record --perf-data` in the guest: the file and sluice's own text lines of the
/// same run go to the console (`guest-perf-data` base64 lines, `guest-perf-text` lines)
/// for `aarch64-ci/guest/record.sh` to read the file with the host's `perf script` (the
/// x86_64 perf reading what the aarch64 build wrote, on the arm64 guest) and compare.
#[test]
fn sluice_record_perf_data_goes_to_the_host() {
    let _g = serial();
    let test = "sluice_record_perf_data_goes_to_the_host";
    if kprobes(test).is_none() {
        return;
    }
    let Some(bin) = sluice_bin() else {
        assert!(
            std::env::var("SLUICE_REQUIRE_KPROBES").as_deref() != Ok("1"),
            "{test}: no sluice binary (set SLUICE_BIN)"
        );
        eprintln!("\n*** SKIPPED {test}: no sluice binary (set SLUICE_BIN) ***\n");
        return;
    };
    let fixture = common::fixture_dir().join(FIXTURE);
    let files = Files::new("perf-data", 3);
    let redirs: Vec<String> = files
        .paths
        .iter()
        .enumerate()
        .map(|(k, p)| format!("{}<{}", k + 3, p.display()))
        .collect();
    let script = format!("exec {}", redirs.join(" "));
    let dir = std::env::temp_dir();
    let data = dir.join(format!("sluice-guest-{}.data", std::process::id()));
    let text = dir.join(format!("sluice-guest-{}.txt", std::process::id()));
    let (code, _, err) = run_sluice(
        &bin,
        &[
            "record",
            "-e",
            fixture.to_str().unwrap(),
            "--perf-data",
            data.to_str().unwrap(),
            "-o",
            text.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            &script,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let bytes = std::fs::read(&data).unwrap();
    let lines = std::fs::read_to_string(&text).unwrap();
    let _ = std::fs::remove_file(&data);
    let _ = std::fs::remove_file(&text);
    assert_eq!(&bytes[..8], b"PERFILE2");
    let opens = lines
        .lines()
        .filter(|l| l.contains("_do_filp_open:"))
        .count();
    assert_eq!(opens, files.paths.len(), "{lines}");
    let summary = err
        .lines()
        .find(|l| l.starts_with("sluice record: perf.data"))
        .unwrap_or_else(|| panic!("{err}"));
    println!("guest-perf-data-begin {} {} bytes", arch(), bytes.len());
    for chunk in base64(&bytes).as_bytes().chunks(76) {
        println!("guest-perf-data {}", std::str::from_utf8(chunk).unwrap());
    }
    println!("guest-perf-data-end");
    for l in lines.lines() {
        println!("guest-perf-text {l}");
    }
    eprintln!(
        "guest-figures {}: sluice record --perf-data -- sh -c '{script}': {opens} do_filp_open \
         samples, {} bytes; {summary}",
        arch(),
        bytes.len()
    );
}

#[test]
fn base64_is_the_standard_alphabet() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(&[0xff, 0xfe, 0x00, 0x01]), "//4AAQ==");
}

// ---- Attach types without tracefs (issue 18): tests/bpf/guest_attach.o ----

const ATTACH_FIXTURE: &str = "guest_attach.o";
/// `hits` slots (guest_attach.c).
const KPROBE_N: u32 = 0;
const KPROBE_SUM: u32 = 1;
const KRETPROBE_N: u32 = 2;
const KRETPROBE_SUM: u32 = 3;
const KSYSCALL_N: u32 = 4;
const KRETSYSCALL_N: u32 = 5;
const KRETSYSCALL_SUM: u32 = 6;
const FENTRY_N: u32 = 7;
const FENTRY_SUM: u32 = 8;
const FEXIT_N: u32 = 9;
const FEXIT_SUM: u32 = 10;
const FMODRET_N: u32 = 11;
/// `pread(2)` calls of the attach workload (counts 100..100+READS, each below the file's
/// size, so each returns its count) and `getpid(2)` calls.
const READS: u64 = 50;
const GETPIDS: u64 = 40;
/// What fmod_ret makes `security_task_getpgid` return: `-EACCES`, so getpgid(2) fails so.
const MODRET: i64 = -13;

fn attach_session(programs: &[&str]) -> Result<Session, sluice_runtime::session::Error> {
    let mut opts = SessionOptions::default();
    opts.load.programs = Some(programs.iter().map(|p| (*p).to_owned()).collect());
    opts.load.globals = vec![(
        "arm64".into(),
        if cfg!(target_arch = "aarch64") {
            "true"
        } else {
            "false"
        }
        .into(),
    )];
    let obj = ObjectSource {
        name: ATTACH_FIXTURE.into(),
        bytes: common::fixture(ATTACH_FIXTURE),
    };
    Session::start(&[obj], &opts)
}

fn hit(s: &Session, slot: u32) -> u64 {
    let map = s.objects()[0].map("hits").expect("hits map");
    map.get::<u32, u64>(&slot).unwrap().unwrap_or(0)
}

fn target_tid(s: &Session, tid: u32) {
    let map = s.objects()[0].map("target_tid").expect("target_tid map");
    map.update(&0u32, &tid, UpdateMode::Any).unwrap();
}

/// Every line of `kprobe_events`, whoever made it.
fn all_kprobes(t: &Tracefs) -> Vec<String> {
    std::fs::read_to_string(t.root().join("kprobe_events"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The attach workload, on this thread only (the programs count its tid): [`READS`]
/// `pread(2)`s of a 4 KiB file with counts 100, 101, ... and [`GETPIDS`] `getpid(2)`s
/// (musl's `getpid` is the syscall, uncached). Returns (sum of the counts = of the bytes
/// read, this process's pid).
fn attach_workload(s: &Session, file: &std::fs::File) -> (u64, u32) {
    use std::os::unix::fs::FileExt;
    let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
    let pid = std::process::id();
    let mut buf = [0u8; 4096];
    target_tid(s, tid);
    let mut sum = 0;
    for i in 0..READS {
        let count = 100 + i as usize;
        assert_eq!(file.read_at(&mut buf[..count], 0).unwrap(), count);
        sum += count as u64;
    }
    for _ in 0..GETPIDS {
        assert_eq!(std::process::id(), pid);
    }
    target_tid(s, 0);
    (sum, pid)
}

fn attach_file(tag: &str) -> (PathBuf, std::fs::File) {
    let p = std::env::temp_dir().join(format!("sluice-attach-{tag}-{}", std::process::id()));
    std::fs::write(&p, vec![b'x'; 4096]).unwrap();
    let f = std::fs::File::open(&p).unwrap();
    (p, f)
}

#[test]
fn kprobe_pmu_and_ksyscall_count_a_known_workload_without_tracefs_entries() {
    let Some(t) = kprobes("kprobe_pmu_and_ksyscall_count_a_known_workload_without_tracefs_entries")
    else {
        return;
    };
    let _g = serial();
    assert!(
        sluice_runtime::kernel::hooks::probe_pmu("kprobe").is_some(),
        "the guest kernels have the kprobe PMU"
    );
    let before = all_kprobes(&t);
    let (path, file) = attach_file("kprobe");
    let s = attach_session(&[
        "kprobe_read",
        "kretprobe_read",
        "ksyscall_getpid",
        "kretsyscall_getpid",
    ])
    .expect("session");
    let wrapper = if cfg!(target_arch = "aarch64") {
        "__arm64_sys_getpid"
    } else {
        "__x64_sys_getpid"
    };
    let names: Vec<&str> = s.sources().iter().map(|x| x.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "kprobe vfs_read+0".to_owned(),
            "kretprobe vfs_read+0".to_owned(),
            format!("kprobe {wrapper}+0"),
            format!("kretprobe {wrapper}+0"),
        ],
        "{:?}",
        s.sources()
    );
    assert!(s
        .sources()
        .iter()
        .all(|x| matches!(x.kind, SourceKind::Hook { .. })));
    assert!(s.probe_names().is_empty(), "{:?}", s.probe_names());
    let (sum, pid) = attach_workload(&s, &file);
    // While attached: nothing in tracefs (PMU probes).
    let during = all_kprobes(&t);
    let got = [
        KPROBE_N,
        KPROBE_SUM,
        KRETPROBE_N,
        KRETPROBE_SUM,
        KSYSCALL_N,
        KRETSYSCALL_N,
        KRETSYSCALL_SUM,
    ]
    .map(|k| hit(&s, k));
    eprintln!(
        "guest-figures attach_kprobe_pmu: {} ({wrapper}): {READS} preads (counts sum {sum}) -> \
         kprobe {} (arg sum {}), kretprobe {} (ret sum {}); {GETPIDS} getpid (pid {pid}) -> \
         ksyscall {}, kretsyscall {} (ret sum {}); kprobe_events while attached: {} lines \
         (before {})",
        arch(),
        got[0],
        got[1],
        got[2],
        got[3],
        got[4],
        got[5],
        got[6],
        during.len(),
        before.len()
    );
    assert_eq!(during, before, "a PMU probe makes no tracefs entry");
    assert_eq!(got[0], READS);
    assert_eq!(got[1], sum, "vfs_read's count argument");
    assert_eq!(got[2], READS);
    assert_eq!(got[3], sum, "vfs_read's return values");
    assert_eq!(got[4], GETPIDS);
    assert_eq!(got[5], GETPIDS);
    assert_eq!(got[6], GETPIDS * u64::from(pid), "getpid's return values");
    drop(s);
    assert_eq!(all_kprobes(&t), before);
    let _ = std::fs::remove_file(path);
}

// Named to run last (libtest runs them in name order with --test-threads=1). The amd64
// guest's 6.1.0-57 kernel oopses now and then (1 boot in 11 of this binary, 2 vCPUs), not
// after this test but in the kretprobe one before it: two tasks returning from read(2), on
// both CPUs, jump to 0x0 out of arch_rethook_trampoline (the x86 kretprobe return
// trampoline, printed as `trace_clock_x86_tsc+0x20/0x20`) while kretprobes on vfs_read come
// and go under a busy reader. A kernel bug (no order of tracefs/perf calls may make the
// kernel return to 0x0); none in 7 boots of the backports 6.12.
#[test]
fn with_trampolines_fentry_fexit_fmod_ret_count_and_modify_else_the_refusal_names_why() {
    let Some(_t) = kprobes(
        "with_trampolines_fentry_fexit_fmod_ret_count_and_modify_else_the_refusal_names_why",
    ) else {
        return;
    };
    let _g = serial();
    if cfg!(target_arch = "aarch64") {
        // Debian's arm64 6.1: BPF trampolines exist (6.0), but attaching one to a kernel
        // function needs ftrace direct calls, which arm64 gained in 6.4.
        let e = attach_session(&["fentry_read"]).expect_err("arm64 6.1 has no fentry");
        let m = e.to_string();
        eprintln!("guest-figures attach_fentry: aarch64: refused: {m}");
        assert!(
            m.contains("cannot attach program 'fentry_read' to fentry/vfs_read: "),
            "{m}"
        );
        let reason = m.split("fentry/vfs_read: ").nth(1).unwrap();
        assert!(!reason.starts_with('('), "not only an errno: {m}");
        assert!(!m.contains("needs CAP_"), "{m}");
        assert!(m.contains("trampoline"), "{m}");
        return;
    }
    let (path, file) = attach_file("fentry");
    let s = attach_session(&["fentry_read", "fexit_read", "fmodret_getpgid"]).expect("session");
    let names: Vec<&str> = s.sources().iter().map(|x| x.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "fentry/vfs_read",
            "fexit/vfs_read",
            "fmod_ret/security_task_getpgid"
        ]
    );
    let (sum, _) = attach_workload(&s, &file);
    // A process group of our own: the guest's init leaves its children in group 0, which
    // getpgid cannot tell from a failure (rustix asserts pgid > 0).
    let _ = rustix::process::setpgid(None, None);
    // getpgid(2) of a pid, not of 0: only then does the kernel ask the LSM hook.
    let me = rustix::process::getpid();
    let pgid = rustix::process::getpgid(Some(me))
        .unwrap()
        .as_raw_nonzero()
        .get();
    let (en, esum, xn, xsum) = (
        hit(&s, FENTRY_N),
        hit(&s, FENTRY_SUM),
        hit(&s, FEXIT_N),
        hit(&s, FEXIT_SUM),
    );
    assert_eq!(hit(&s, FMODRET_N), 0, "unarmed: getpgid left alone");
    // Armed: the LSM hook's body is skipped and returns MODRET, which getpgid returns.
    let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
    let modret = s.objects()[0].map("modret").expect("modret map");
    modret.update(&0u32, &MODRET, UpdateMode::Any).unwrap();
    target_tid(&s, tid);
    let modified: Vec<i32> = (0..GETPIDS)
        .map(|_| match rustix::process::getpgid(Some(me)) {
            Ok(p) => p.as_raw_nonzero().get(),
            Err(e) => -e.raw_os_error(),
        })
        .collect();
    target_tid(&s, 0);
    let after = rustix::process::getpgid(Some(me))
        .unwrap()
        .as_raw_nonzero()
        .get();
    let mn = hit(&s, FMODRET_N);
    eprintln!(
        "guest-figures attach_fentry: x86_64: {READS} preads (counts sum {sum}) -> fentry {en} \
         (arg sum {esum}), fexit {xn} (ret sum {xsum}); fmod_ret armed: {GETPIDS} getpgid \
         returned {:?}.. ({mn} modified), then {after} (pgid {pgid})",
        modified.first()
    );
    assert_eq!((en, esum), (READS, sum));
    assert_eq!((xn, xsum), (READS, sum));
    assert!(
        modified.iter().all(|&p| i64::from(p) == MODRET),
        "{modified:?}"
    );
    assert_eq!(mn, GETPIDS);
    assert_eq!(
        after, pgid,
        "disarmed (and for every other thread): the real pgid"
    );
    drop(s);
    let _ = std::fs::remove_file(path);
}

/// The `*getpgid` calls of this thread while `f` runs, per function, as the kernel's
/// function tracer counts them (`set_ftrace_filter` = the glob, `set_ftrace_pid` = this
/// thread), and the functions the tracer's own glob matched.
fn ftrace_counts(
    t: &Tracefs,
    glob: &str,
    f: impl FnOnce(),
) -> (Vec<String>, BTreeMap<String, u64>) {
    let root = t.root();
    let w = |file: &str, v: &str| {
        std::fs::write(root.join(file), v).unwrap_or_else(|e| panic!("{file} <- {v:?}: {e}"))
    };
    let tid = rustix::thread::gettid().as_raw_nonzero().get();
    w("set_ftrace_filter", glob);
    let mut matched: Vec<String> = std::fs::read_to_string(root.join("set_ftrace_filter"))
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    matched.sort_unstable();
    matched.dedup();
    w("set_ftrace_pid", &tid.to_string());
    w("trace", "");
    w("current_tracer", "function");
    f();
    // Stopped, read, then back to nop (changing the tracer empties the buffer).
    w("tracing_on", "0");
    let trace = std::fs::read_to_string(root.join("trace")).unwrap();
    w("current_tracer", "nop");
    w("tracing_on", "1");
    w("set_ftrace_pid", "");
    w("set_ftrace_filter", "");
    w("trace", "");
    let mut counts = BTreeMap::new();
    // `  comm-TID  [CPU] flags  TIME: FUNC <-CALLER`
    for l in trace.lines().filter(|l| !l.starts_with('#')) {
        let Some((head, _)) = l.rsplit_once(" <-") else {
            continue;
        };
        let func = head.rsplit(' ').next().unwrap();
        *counts.entry(func.to_owned()).or_insert(0) += 1;
    }
    (matched, counts)
}

/// Every text symbol of `/proc/kallsyms` by address.
fn kallsyms_text() -> BTreeMap<u64, Vec<String>> {
    let mut m: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for l in std::fs::read_to_string("/proc/kallsyms").unwrap().lines() {
        let mut w = l.split_whitespace();
        let (Some(a), Some(k), Some(n)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        if k.eq_ignore_ascii_case("t") {
            m.entry(u64::from_str_radix(a, 16).unwrap())
                .or_default()
                .push(n.to_owned());
        }
    }
    m
}

/// `struct hit` of attach_multi.c by function address: calls, cookie, cookie changed,
/// sum of return values.
fn multi_hits(s: &Session, map: &str) -> BTreeMap<u64, [u64; 4]> {
    let m = s.objects()[0].map(map).expect(map);
    m.keys::<u64>()
        .map(|k| {
            let k = k.unwrap();
            let v = m.get_bytes(&k.to_ne_bytes()).unwrap().unwrap();
            let w: Vec<u64> = v
                .chunks_exact(8)
                .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
                .collect();
            (k, [w[0], w[1], w[2], w[3]])
        })
        .collect()
}

/// `getpgid(2)` calls of the kprobe.multi workload.
const MULTI_CALLS: u64 = 30;

// On a kernel with CONFIG_FPROBE (Debian's 6.12 from backports, `GUEST_KERNEL=backports`),
// kprobe.multi/*getpgid and kretprobe.multi/*getpgid count MULTI_CALLS getpgid(2) per
// function exactly as the kernel's function tracer does, on the functions the tracer's own
// glob matches, each with its cookie; without it (Debian's 6.1), the refusal names it.
#[test]
fn kprobe_multi_counts_each_function_of_its_glob_else_the_refusal_names_config_fprobe() {
    let Some(t) = kprobes(
        "kprobe_multi_counts_each_function_of_its_glob_else_the_refusal_names_config_fprobe",
    ) else {
        return;
    };
    let _g = serial();
    let fprobe = sluice_runtime::kernel::hooks::config_set("CONFIG_FPROBE");
    let obj = ObjectSource {
        name: "attach_multi.o".into(),
        bytes: common::fixture("attach_multi.o"),
    };
    let mut opts = SessionOptions::default();
    opts.load.globals = vec![(
        "arm64".into(),
        if cfg!(target_arch = "aarch64") {
            "true"
        } else {
            "false"
        }
        .into(),
    )];
    let s = match Session::start(&[obj], &opts) {
        Ok(s) => s,
        Err(e) => {
            let m = e.to_string();
            eprintln!(
                "guest-figures attach_multi: {}: CONFIG_FPROBE {fprobe:?}: refused: {m}",
                arch()
            );
            assert!(
                m.contains("cannot attach program 'on_entry' to kprobe.multi/*getpgid: "),
                "{m}"
            );
            assert!(m.contains("CONFIG_FPROBE"), "{m}");
            // Debian's 6.1 kernels are built without it (the guest has their config at
            // /boot/config-KVER): any other refusal is a failure.
            assert_eq!(fprobe, Some(false), "{m}");
            assert!(m.contains("which this one is not"), "{m}");
            return;
        }
    };
    assert_ne!(fprobe, Some(false), "attached without CONFIG_FPROBE");
    let names: Vec<&str> = s.sources().iter().map(|x| x.name.as_str()).collect();
    assert_eq!(
        names,
        ["kprobe.multi/*getpgid", "kretprobe.multi/*getpgid"],
        "{:?}",
        s.sources()
    );
    let funcs = sluice_runtime::attach::kprobe_multi_functions(t.root(), "*getpgid").unwrap();
    let wrapper = sluice_runtime::kernel::hooks::syscall_function("getpgid").unwrap();
    assert!(funcs.contains(&wrapper), "{wrapper} in {funcs:?}");
    // A process group of our own (see the fentry test), made before the tracer counts.
    let _ = rustix::process::setpgid(None, None);
    let me = rustix::process::getpid();
    let tid = rustix::thread::gettid().as_raw_nonzero().get() as u32;
    let mut pgids = Vec::new();
    let (matched, traced) = ftrace_counts(&t, "*getpgid", || {
        target_tid(&s, tid);
        for _ in 0..MULTI_CALLS {
            pgids.push(u64::from(
                rustix::process::getpgid(Some(me))
                    .unwrap()
                    .as_raw_nonzero()
                    .get()
                    .unsigned_abs(),
            ));
        }
        target_tid(&s, 0);
    });
    let (entries, returns) = (multi_hits(&s, "entries"), multi_hits(&s, "returns"));
    drop(s);
    let syms = kallsyms_text();
    // func_ip -> its name (the one of sluice's list at that address), checked against the
    // cookie sluice gave that function.
    let per_func = |hits: &BTreeMap<u64, [u64; 4]>| -> BTreeMap<String, [u64; 4]> {
        hits.iter()
            .map(|(ip, h)| {
                let at = syms
                    .get(ip)
                    .unwrap_or_else(|| panic!("{ip:#x} not a symbol"));
                let name = at
                    .iter()
                    .find(|n| funcs.contains(n))
                    .unwrap_or_else(|| panic!("{ip:#x} = {at:?}, none of {funcs:?}"));
                let i = funcs.iter().position(|f| f == name).unwrap();
                assert_eq!(
                    h[1],
                    i as u64 + 1,
                    "{name}'s cookie: its place in {funcs:?}"
                );
                assert_eq!(h[2], 0, "{name}: the cookie changed between calls");
                (name.clone(), *h)
            })
            .collect()
    };
    let (on_entry, on_return) = (per_func(&entries), per_func(&returns));
    let calls = |m: &BTreeMap<String, [u64; 4]>| -> BTreeMap<String, u64> {
        m.iter().map(|(n, h)| (n.clone(), h[0])).collect()
    };
    let pgid_sum: u64 = pgids.iter().sum();
    eprintln!(
        "guest-figures attach_multi: {}: CONFIG_FPROBE {fprobe:?}: *getpgid = {} functions \
         (the function tracer's glob: {}); {MULTI_CALLS} getpgid (pgid {}) -> kprobe.multi \
         {:?}, kretprobe.multi {:?} ({wrapper} ret sum {} = {pgid_sum}); function tracer {:?}; \
         cookies {:?}",
        arch(),
        funcs.len(),
        matched.len(),
        pgids.first().copied().unwrap_or(0),
        calls(&on_entry),
        calls(&on_return),
        on_return.get(&wrapper).map_or(0, |h| h[3]),
        traced,
        on_entry
            .iter()
            .map(|(n, h)| (n.as_str(), h[1]))
            .collect::<Vec<_>>()
    );
    assert_eq!(funcs, matched, "sluice's functions are the tracer's");
    assert!(funcs.len() >= 3, "several functions: {funcs:?}");
    assert_eq!(
        calls(&on_entry),
        traced,
        "per function, as the function tracer counts"
    );
    assert_eq!(calls(&on_return), traced, "a return for every entry");
    assert_eq!(traced.get(&wrapper), Some(&MULTI_CALLS), "{traced:?}");
    assert!(traced.len() >= 2, "more than the wrapper: {traced:?}");
    assert_eq!(
        on_return[&wrapper][3], pgid_sum,
        "{wrapper}'s return values"
    );
}

// ---- The i686 build on the x86_64 kernel (issue 14, item 1): tests/bpf/dwarf_words.o ----

/// The i686 `sluice`'s workload ([`i686_sluice_kprobe_args_are_the_x86_64_kernel_s`]
/// re-runs this test binary as it): `DIR:N`, the files to read.
#[cfg(target_arch = "x86_64")]
const I686_READS: &str = "SLUICE_I686_READS";

/// The typed spec the i686 `sluice` records, without debug info.
#[cfg(target_arch = "x86_64")]
const I686_SPEC: &str = "kprobe/vfs_read(void *, char *, unsigned long, void *)";

/// The kernel's own fetch-args of the registers of vfs_read's four arguments, named.
#[cfg(target_arch = "x86_64")]
const FETCH_ARGS: [(&str, &str); 4] = [
    ("di", "%di:u64"),
    ("si", "%si:u64"),
    ("dx", "%dx:u64"),
    ("cx", "%cx:u64"),
];

/// A second kprobe on vfs_read, with [`FETCH_ARGS`].
#[cfg(target_arch = "x86_64")]
const I686_REGS: &str = "kprobe/vfs_read(di=%di:u64, si=%si:u64, dx=%dx:u64, cx=%cx:u64)";

/// Four values of a hit: r2..r5 as a program got them, or the kernel's fetch-args.
#[cfg(target_arch = "x86_64")]
type Words = Vec<u64>;

/// The number after `"name":` in a JSON line, from `from` on: decimal, or a `"0x..."`
/// string.
#[cfg(target_arch = "x86_64")]
fn num_after(line: &str, from: usize, name: &str) -> Option<u64> {
    let key = format!("\"{name}\":");
    let at = line[from..].find(&key)? + from + key.len();
    let rest = &line[at..];
    if let Some(hex) = rest.strip_prefix("\"0x") {
        return u64::from_str_radix(&hex[..hex.find('"')?], 16).ok();
    }
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The `"words":[...]` of a pair line, numbers as [`num_after`] reads them.
#[cfg(target_arch = "x86_64")]
fn pair_words(line: &str) -> Vec<u64> {
    let at = line.find("\"words\":[").unwrap() + "\"words\":[".len();
    let end = at + line[at..].find(']').unwrap();
    line[at..end]
        .split(',')
        .map(|w| {
            let w = w.trim().trim_matches('"');
            match w.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).unwrap(),
                None => w.parse().unwrap(),
            }
        })
        .collect()
}

/// The payload of a bpf-output line (`"data":"HEX"`) as little-endian 64-bit words (perf's
/// 4 padding bytes dropped).
#[cfg(target_arch = "x86_64")]
fn output_words(line: &str) -> Vec<u64> {
    let at = line.find("\"data\":\"").unwrap() + "\"data\":\"".len();
    let hex = &line[at..at + line[at..].find('"').unwrap()];
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The workload half of [`i686_sluice_kprobe_args_are_the_x86_64_kernel_s`], in the
/// process the i686 `sluice record` starts: prints its pid and tid, the `sluice` lines of
/// `kprobe_events` (the fetch-args the kernel was given), then reads file `i` of `DIR` once
/// with [`Files::count`] into one buffer and prints each read.
#[cfg(target_arch = "x86_64")]
fn i686_workload(spec: &str) {
    let (dir, n) = spec.rsplit_once(':').unwrap();
    let n: usize = n.parse().unwrap();
    let tid = rustix::thread::gettid().as_raw_nonzero().get();
    println!("i686-workload pid {} tid {tid}", std::process::id());
    let events = std::fs::read_to_string("/sys/kernel/tracing/kprobe_events").unwrap();
    for l in events.lines().filter(|l| l.contains(":sluice/")) {
        println!("i686-kprobe-event {l}");
    }
    let mut buf = vec![0u8; 8192];
    for i in 0..n {
        let p = Path::new(dir).join(format!("f{i:03}"));
        let fd = rustix::fs::open(
            &p,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        let got = rustix::io::read(&fd, &mut buf[..Files::count(i)]).unwrap();
        assert_eq!(got, Files::size(i), "{}", p.display());
        println!(
            "i686-read {i} {:#x} {} {got}",
            buf.as_ptr() as u64,
            Files::count(i)
        );
    }
}

/// Issue 14, item 1, the kprobe case: the i686 `sluice` (a static i386 binary, run by the
/// x86_64 kernel's IA32 emulation, `SLUICE_BIN_I686`) builds kprobe prologues for the
/// running kernel's `pt_regs` and calling convention, not for an i386 kernel's:
/// - `sluice prologue SPEC` without `--arch` prints the x86_64 prologue (`r2 = *(u64 *)(r6
///   +112)` for `%di` ...), the same text as the x86_64 build's `--arch x86_64`;
/// - `sluice record -e dwarf_words.o --event p_words=SPEC` on a workload of known
///   `read(2)`s: the kernel was given the fetch-args `%di %si %dx %cx` (its
///   `kprobe_events`, as the workload reads it), and in every hit the four words the
///   program got in r2..r5 from the prologue equal the kernel's fetch-args of the same
///   event, printed beside them; r3 and r4 are each read's buffer and count.
#[cfg(target_arch = "x86_64")]
#[test]
fn i686_sluice_kprobe_args_are_the_x86_64_kernel_s() {
    if let Ok(spec) = std::env::var(I686_READS) {
        return i686_workload(&spec);
    }
    let _g = serial();
    let test = "i686_sluice_kprobe_args_are_the_x86_64_kernel_s";
    let Some(t) = kprobes(test) else {
        return;
    };
    let Some(bin) = std::env::var_os("SLUICE_BIN_I686").map(PathBuf::from) else {
        assert!(
            std::env::var("SLUICE_REQUIRE_KPROBES").as_deref() != Ok("1"),
            "{test}: no i686 sluice binary (set SLUICE_BIN_I686)"
        );
        eprintln!("\n*** SKIPPED {test}: no i686 sluice binary (set SLUICE_BIN_I686) ***\n");
        return;
    };
    // A 32-bit x86 executable: ELFCLASS32, EM_386.
    let head = std::fs::read(&bin).unwrap();
    assert_eq!(
        (
            &head[..4],
            head[4],
            u16::from_le_bytes([head[18], head[19]])
        ),
        (&b"\x7fELF"[..], 1, 3),
        "{} is no i386 ELF",
        bin.display()
    );

    // The prologues: x86_64's pt_regs, and the x86_64 build's text.
    let loads = [
        "(79) r2 = *(u64 *)(r6 +112)",
        "(79) r3 = *(u64 *)(r6 +104)",
        "(79) r4 = *(u64 *)(r6 +96)",
        "(79) r5 = *(u64 *)(r6 +88)",
    ];
    let typed_fetch = [
        "arg1=%di:u64",
        "arg2=%si:u64",
        "arg3=%dx:u64",
        "arg4=%cx:u64",
    ];
    let named_fetch = FETCH_ARGS.map(|(name, arg)| format!("{name}={arg}"));
    for (spec, fetch) in [
        (I686_SPEC, typed_fetch.map(str::to_owned)),
        (I686_REGS, named_fetch.clone()),
    ] {
        let (code, prologue, err) = run_sluice(&bin, &["prologue", spec]);
        assert_eq!(code, 0, "{err}");
        let fetch = fetch
            .iter()
            .enumerate()
            .map(|(k, f)| format!("  r{}: {f}", k + 2));
        for want in loads.iter().map(|l| (*l).to_owned()).chain(fetch) {
            assert!(
                prologue.lines().any(|l| l == want),
                "no '{want}' in:\n{prologue}"
            );
        }
        if let Some(bin64) = sluice_bin() {
            let (code, forced, err) = run_sluice(&bin64, &["prologue", "--arch", "x86_64", spec]);
            assert_eq!(code, 0, "{err}");
            assert_eq!(
                prologue, forced,
                "the i686 build = the x86_64 build's --arch x86_64"
            );
        }
        for l in prologue.lines() {
            eprintln!("i686-prologue {l}");
        }
    }

    // The record: known reads by the test binary itself, run again as the workload, with
    // the program at two kprobes on vfs_read: the typed spec (its prologue from the calling
    // convention; the kernel records no fetch-args for it) and one with the kernel's own
    // fetch-args of the four argument registers (its prologue from the same names).
    let n = 8;
    let files = Files::new("i686", n);
    let fixture = common::fixture_dir().join("dwarf_words.o");
    let out = std::env::temp_dir().join(format!("sluice-i686-{}.json", std::process::id()));
    let me = std::env::current_exe().unwrap();
    let typed = format!("p_words={I686_SPEC}");
    let regs = format!("p_words={I686_REGS}");
    let run = Command::new(&bin)
        .args(["record", "--json", "-e"])
        .arg(&fixture)
        .args(["--event", &typed, "--event", &regs, "-o"])
        .arg(&out)
        .arg("--")
        .arg(&me)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(I686_READS, format!("{}:{n}", files.dir.display()))
        .output()
        .unwrap();
    // The workload's own output is on the stdout or stderr of sluice.
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(run.status.code(), Some(0), "{said}");
    let lines = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let summary = said
        .lines()
        .find(|l| l.starts_with("sluice record:"))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(summary.contains("lost 0"), "{summary}");
    assert!(summary.contains("probes removed 2"), "{summary}");
    assert!(sluice_kprobes(&t).is_empty(), "{:?}", sluice_kprobes(&t));

    // What the workload saw: its ids, the kernel's probe definitions, its reads.
    let workload = said
        .lines()
        .find_map(|l| l.split_once("i686-workload pid ").map(|x| x.1))
        .unwrap_or_else(|| panic!("no workload line: {said}"));
    let (pid, tid) = workload.split_once(" tid ").unwrap();
    let (pid, tid): (u64, u64) = (pid.parse().unwrap(), tid.trim().parse().unwrap());
    let mut defs: Vec<Vec<&str>> = said
        .lines()
        .filter_map(|l| l.split_once("i686-kprobe-event ").map(|x| x.1))
        .map(|l| l.split_whitespace().skip(1).collect())
        .collect();
    defs.sort();
    let regs_def: Vec<&str> = std::iter::once("vfs_read")
        .chain(named_fetch.iter().map(String::as_str))
        .collect();
    assert_eq!(
        defs,
        [vec!["vfs_read"], regs_def.clone()],
        "the kernel's probes: {said}"
    );
    let reads: Vec<(u64, u64)> = said
        .lines()
        .filter_map(|l| l.split_once("i686-read ").map(|x| x.1))
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let buf = u64::from_str_radix(f[1].trim_start_matches("0x"), 16).unwrap();
            (buf, f[2].parse().unwrap())
        })
        .collect();
    assert_eq!(reads.len(), n, "{said}");

    // Each event's hit: the program's output (r2..r5), then the event's sample. sluice
    // pairs them when they are at most 1 ms apart; else they come as two lines, paired
    // here by thread and order. Outputs of other processes (the program runs at every
    // vfs_read; the events' samples are the workload's) have no sample; sluice leaves
    // them out unless `--all`.
    let mut pending: Vec<(u64, Vec<u64>)> = Vec::new();
    let (mut by_cli, mut others) = (0, 0);
    // Per thread of the workload, in order: r2..r5 of each typed hit; (r2..r5, the
    // kernel's %di %si %dx %cx) of each hit of the other.
    let mut typed_hits: BTreeMap<u64, Vec<Words>> = BTreeMap::new();
    let mut reg_hits: BTreeMap<u64, Vec<(Words, Words)>> = BTreeMap::new();
    for l in lines.lines() {
        assert!(!l.starts_with("{\"type\":\"lost\""), "{l}");
        let l_pid = num_after(l, 0, "pid").unwrap_or_else(|| panic!("no pid: {l}"));
        let l_tid = num_after(l, 0, "tid").unwrap();
        let words = if l.starts_with("{\"type\":\"pair\"") {
            by_cli += 1;
            pair_words(l)
        } else if l.contains("\"event\":\"bpf-output:out\"") {
            if l_pid == pid {
                pending.push((l_tid, output_words(l)));
            } else {
                others += 1;
            }
            continue;
        } else {
            assert!(l.contains("_vfs_read\""), "unexpected line: {l}");
            // The latest output of the thread: an earlier one may be from before the exec.
            let at = pending
                .iter()
                .rposition(|(t, _)| *t == l_tid)
                .unwrap_or_else(|| panic!("a sample without its output: {l}\n{lines}"));
            pending.remove(at).1
        };
        assert_eq!(l_pid, pid, "the workload's samples only: {l}");
        assert_eq!(words.len(), 4, "{l}");
        let fields = l.find("\"fields\":").unwrap();
        let kernel: Vec<Option<u64>> = FETCH_ARGS
            .iter()
            .map(|(name, _)| num_after(l, fields, name))
            .collect();
        if kernel.iter().all(Option::is_none) {
            typed_hits.entry(l_tid).or_default().push(words);
        } else {
            let kernel = kernel.into_iter().map(|v| v.unwrap()).collect();
            reg_hits.entry(l_tid).or_default().push((words, kernel));
        }
    }
    // Before its exec the workload is sluice's child, waiting for the go (its read of
    // the go pipe may start after the probes are in): outputs, but no events yet.
    let early = pending.len();
    assert!(early <= 2, "outputs without a sample: {pending:?}\n{lines}");
    let (mut compared, mut equal) = (0, 0);
    assert_eq!(
        typed_hits.keys().collect::<Vec<_>>(),
        reg_hits.keys().collect::<Vec<_>>()
    );
    for (t, typed) in &typed_hits {
        let regs = &reg_hits[t];
        assert_eq!(typed.len(), regs.len(), "hits of thread {t} at each probe");
        for (k, (words, (reg_words, kernel))) in typed.iter().zip(regs).enumerate() {
            compared += 1;
            equal += usize::from(words == kernel && reg_words == kernel);
            assert_eq!(
                reg_words, kernel,
                "thread {t} hit {k}: %di.. through the prologue"
            );
            assert_eq!(
                words, kernel,
                "thread {t} hit {k}: the typed prologue's r2..r5"
            );
        }
    }
    let workload_hits = &typed_hits.get(&tid).cloned().unwrap_or_default();
    for &(buf, count) in &reads {
        let found = workload_hits
            .iter()
            .filter(|w| w[1] == buf && w[2] == count)
            .count();
        assert_eq!(found, 1, "read of {count} bytes at {buf:#x}: {lines}");
    }
    assert!(
        typed_hits.values().flatten().all(|w| w[0] != 0),
        "r2 = struct file *"
    );
    eprintln!(
        "guest-figures i686_sluice: {}: prologue {}; kernel probes 'vfs_read' and '{}'; \
         {n} reads found (r3 = buf, r4 = count); {compared} hits compared: r2..r5 of the \
         typed spec and of the %di spec = the kernel's %di %si %dx %cx of the same call in \
         {equal} ({by_cli} records paired by sluice within 1 ms); {others} outputs of other \
         processes printed, {early} before the exec; {summary}",
        bin.display(),
        loads.join(", "),
        regs_def.join(" "),
    );
}
