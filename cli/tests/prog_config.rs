//! Kernel tests of choosing and configuring an object's programs and maps from the command
//! line: `--prog` (and `SEC("?...")` programs), `--set`, `--map-size`, maps pinned by name,
//! `perf_event` sampling at `-F HZ`, and `--pmu` counters. Oracles: the workloads (a 64-bit
//! `sh` that makes a known number of `kill(2)` calls), the values the programs send back, the
//! kernel's own view of the pinned maps (`bpftool map show`), and the real libbpf-tools
//! objects (`SLUICE_REAL_OBJS`, see `tests/real/fetch.sh`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use common::{fixture, sluice};

/// The tests share tracepoints and keep every CPU busy: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn root(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    common::skip(&format!("{test}: recording needs root"));
    false
}

/// `sh -c` making `n` `kill(2)` calls (signal 0: nothing is delivered).
fn kills(n: usize) -> String {
    vec!["kill -0 $$"; n].join("; ")
}

/// One bpf-output record of `record --json`: (pid, cpu, payload).
#[derive(Debug, Clone)]
struct Output {
    pid: u32,
    cpu: u32,
    data: Vec<u8>,
}

fn number(line: &str, key: &str) -> u64 {
    let k = format!("\"{key}\":");
    let at = line
        .find(&k)
        .unwrap_or_else(|| panic!("no {key} in {line}"))
        + k.len();
    line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

fn outputs(stdout: &str, map: &str) -> Vec<Output> {
    let event = format!("\"event\":\"bpf-output:{map}\"");
    stdout
        .lines()
        .filter(|l| l.contains(&event))
        .map(|l| {
            let at = l
                .find("\"data\":\"")
                .unwrap_or_else(|| panic!("no data in {l}"))
                + 8;
            let hex = &l[at..at + l[at..].find('"').unwrap()];
            let data = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            Output {
                pid: number(l, "pid") as u32,
                cpu: number(l, "cpu") as u32,
                data,
            }
        })
        .collect()
}

/// `sluice record --json ARGS -- sh -c WORKLOAD`, expected to succeed: its outputs of map
/// `events`.
fn record(args: &[&str], workload: &str) -> Vec<Output> {
    let mut all = vec!["record", "--json", "--decode", "events=raw"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--", "sh", "-c", workload]);
    let (code, out, err) = sluice(&all);
    assert_eq!(code, 0, "sluice {all:?}: {err}");
    outputs(&out, "events")
}

fn u32_at(d: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(d[at..at + 4].try_into().unwrap())
}

fn u64_at(d: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(d[at..at + 8].try_into().unwrap())
}

/// `struct record` of prog_config.c.
#[derive(Debug, PartialEq, Eq)]
struct Knobs {
    which: u32,
    u8v: u8,
    s8v: i8,
    u16v: u16,
    s16v: i16,
    boolv: u8,
    u32v: u32,
    s32v: i32,
    mode: u32,
    datav: u32,
    u64v: u64,
    s64v: i64,
    bssv: u64,
    label: String,
}

fn knobs(d: &[u8]) -> Knobs {
    assert!(d.len() >= 64, "{d:?}");
    let label = d[56..64].split(|&b| b == 0).next().unwrap();
    Knobs {
        which: u32_at(d, 0),
        u8v: d[4],
        s8v: d[5] as i8,
        u16v: u16::from_ne_bytes([d[6], d[7]]),
        s16v: i16::from_ne_bytes([d[8], d[9]]),
        boolv: d[10],
        u32v: u32_at(d, 12),
        s32v: u32_at(d, 16) as i32,
        mode: u32_at(d, 20),
        datav: u32_at(d, 24),
        u64v: u64_at(d, 32),
        s64v: u64_at(d, 40) as i64,
        bssv: u64_at(d, 48),
        label: String::from_utf8(label.to_vec()).unwrap(),
    }
}

const SIZED: &str = "sized=16";

/// How many records each program (`which`) sent.
fn by_program(outs: &[Output]) -> BTreeMap<u32, usize> {
    let mut m = BTreeMap::new();
    for o in outs {
        *m.entry(u32_at(&o.data, 0)).or_insert(0) += 1;
    }
    m
}

#[test]
fn prog_loads_only_the_chosen_programs_and_optional_ones_only_when_chosen() {
    if !root("prog_choice") {
        return;
    }
    let _g = serial();
    const N: usize = 7;
    let obj = fixture("prog_config.o");
    let run = |extra: &[&str]| {
        let mut args = vec!["-e", obj.as_str(), "--map-size", SIZED];
        args.extend_from_slice(extra);
        by_program(&record(&args, &kills(N)))
    };
    // Without --prog: the SEC("?...") program is not loaded.
    assert_eq!(run(&[]), BTreeMap::from([(1, N)]));
    assert_eq!(
        run(&["--prog", "chosen_optional"]),
        BTreeMap::from([(2, N)])
    );
    assert_eq!(
        run(&["--prog", "chosen_default,chosen_optional"]),
        BTreeMap::from([(1, N), (2, N)])
    );
    // Repeated flags add up; a section name chooses too (here both programs have it).
    assert_eq!(
        run(&["--prog", "chosen_default", "--prog", "chosen_optional"]),
        BTreeMap::from([(1, N), (2, N)])
    );
}

#[test]
fn set_writes_globals_of_every_type_before_load() {
    if !root("set_globals") {
        return;
    }
    let _g = serial();
    let obj = fixture("prog_config.o");
    let defaults = record(&["-e", &obj, "--map-size", SIZED], &kills(1));
    assert_eq!(defaults.len(), 1, "{defaults:?}");
    assert_eq!(
        knobs(&defaults[0].data),
        Knobs {
            which: 1,
            u8v: 1,
            s8v: -1,
            u16v: 2,
            s16v: -2,
            boolv: 0,
            u32v: 3,
            s32v: -3,
            mode: 0,
            datav: 7,
            u64v: 4,
            s64v: -4,
            bssv: 0,
            label: "none".into(),
        }
    );
    let set = [
        "knob_u8=255",
        "knob_s8=-128",
        "knob_u16=0xffff",
        "knob_s16=-32768",
        "knob_u32=4294967295",
        "knob_s32=-2147483648",
        "knob_u64=0xfedcba9876543210",
        "knob_s64=-0x10",
        "knob_bool=true",
        "knob_mode=MODE_BIG",
        "knob_label=bashful",
        "data_knob=123456",
        "bss_knob=18446744073709551615",
    ];
    let mut args = vec!["-e", obj.as_str(), "--map-size", SIZED];
    for s in &set {
        args.extend_from_slice(&["--set", s]);
    }
    let got = record(&args, &kills(2));
    assert_eq!(got.len(), 2, "{got:?}");
    for o in &got {
        assert_eq!(
            knobs(&o.data),
            Knobs {
                which: 1,
                u8v: 255,
                s8v: -128,
                u16v: 0xffff,
                s16v: -32768,
                boolv: 1,
                u32v: u32::MAX,
                s32v: i32::MIN,
                mode: 100_000,
                datav: 123_456,
                u64v: 0xfedc_ba98_7654_3210,
                s64v: -16,
                bssv: u64::MAX,
                label: "bashful".into(),
            }
        );
    }
    // An enum by number in its range, a bool as 0.
    let got = record(
        &[
            "-e",
            &obj,
            "--map-size",
            SIZED,
            "--set",
            "knob_mode=5",
            "--set",
            "knob_bool=0",
        ],
        &kills(1),
    );
    assert_eq!(
        (knobs(&got[0].data).mode, knobs(&got[0].data).boolv),
        (5, 0)
    );
}

/// `sluice ARGS` must fail with exit 2 and say each of `says`.
fn refused(args: &[&str], says: &[&str]) {
    let (code, out, err) = sluice(args);
    assert_eq!(code, 2, "sluice {args:?}: {out}{err}");
    for s in says {
        assert!(err.contains(s), "sluice {args:?}: no '{s}' in: {err}");
    }
}

#[test]
fn bad_choices_and_settings_are_bad_input_naming_what_the_object_has() {
    if !root("bad_config") {
        return;
    }
    let _g = serial();
    let obj = fixture("prog_config.o");
    let rec = |extra: &[&str]| {
        let mut v = vec!["record", "-e", obj.as_str()];
        v.extend_from_slice(extra);
        v.extend_from_slice(&["--", "true"]);
        v.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let check = |extra: &[&str], says: &[&str]| {
        let args = rec(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&args, says);
    };
    check(
        &["--map-size", SIZED, "--prog", "nope"],
        &[
            "--prog nope",
            "chosen_default (tracepoint/syscalls/sys_enter_kill)",
            "chosen_optional (?tracepoint/syscalls/sys_enter_kill)",
        ],
    );
    check(
        &["--map-size", SIZED, "--set", "nope=1"],
        &[
            "--set nope",
            "knob_u8 (u8, .rodata)",
            "knob_label (char[8], .rodata)",
            "data_knob (u32, .data)",
            "bss_knob (u64, .bss)",
        ],
    );
    check(
        &["--map-size", SIZED, "--set", "knob_u8=256"],
        &[
            "knob_u8=256",
            "out of range (0..=255)",
            "knob_s8 (s8, .rodata)",
        ],
    );
    check(
        &["--map-size", SIZED, "--set", "knob_s8=-129"],
        &["out of range (-128..=127)"],
    );
    check(
        &["--map-size", SIZED, "--set", "knob_mode=MODE_NONE"],
        &["knob_mode=MODE_NONE", "no such enumerator"],
    );
    check(
        &["--map-size", SIZED, "--set", "knob_label=12345678"],
        &["longer than 7 bytes"],
    );
    check(
        &["--map-size", SIZED, "--set", "knob_bool=yes"],
        &["want true, false, 1 or 0"],
    );
    check(
        &["--map-size", SIZED, "--set", "knob_u32=twelve"],
        &["not a number"],
    );
    // The map left at 0 entries, and a size for a map the object lacks.
    check(&[], &["map 'sized'", "--map-size sized=N"]);
    check(
        &["--map-size", "nope=4"],
        &["--map-size nope", "sized (max_entries 0)", "events"],
    );
    check(&["--map-size", "sized=0"], &["--map-size"]);
    check(
        &["--map-size", SIZED, "--pmu", "events=bogus"],
        &["bogus", "cpu-clock", "task-clock"],
    );
    check(
        &["--map-size", SIZED, "--pmu", "nomap=cpu-clock"],
        &["--pmu nomap", "events"],
    );
    // inspect --load takes the same flags.
    refused(
        &["inspect", "--load", "--prog", "nope", &obj],
        &["--prog nope", "chosen_optional"],
    );
}

#[test]
fn inspect_lists_the_programs_and_what_each_attaches_to() {
    let (code, out, err) = sluice(&["inspect", &fixture("prog_config.o")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("function chosen_optional"), "{out}");
    assert!(
        out.contains(
            "not loaded unless chosen (SEC(\"?tracepoint/syscalls/sys_enter_kill\")): \
             record --prog chosen_optional"
        ),
        "{out}"
    );
    assert_eq!(
        out.matches("probe: tracepoint/syscalls/sys_enter_kill")
            .count(),
        2,
        "{out}"
    );
    let (code, out, err) = sluice(&["inspect", &fixture("sampling.o")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("sampling: cycles (cpu-clock"), "{out}");
    if !rustix::process::geteuid().is_root() {
        return common::skip("inspect --load needs root");
    }
    let _g = serial();
    let (code, out, err) = sluice(&[
        "inspect",
        "--load",
        "--map-size",
        SIZED,
        "--prog",
        "chosen_optional",
        &fixture("prog_config.o"),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("loaded: 6 map(s), 1 program(s)"), "{out}");
    assert!(out.contains("  chosen_optional (section"), "{out}");
}

/// A folder of the BPF file system of this test alone, removed on drop.
struct PinRoot(PathBuf);

impl Drop for PinRoot {
    fn drop(&mut self) {
        if let Ok(entries) = std::fs::read_dir(&self.0) {
            for e in entries.flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// How many maps named `name` the kernel has (`bpftool map show`).
fn maps_named(name: &str) -> usize {
    let out = std::process::Command::new("bpftool")
        .args(["map", "show"])
        .output()
        .expect("bpftool (CI installs it)");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .filter(|l| l.contains(&format!(" name {name} ")))
        .count()
}

#[test]
fn pinned_by_name_is_made_once_and_reused_and_a_different_map_is_refused() {
    if !root("pinning") {
        return;
    }
    let _g = serial();
    let dir = PinRoot(PathBuf::from(format!(
        "/sys/fs/bpf/sluice-test-{}",
        std::process::id()
    )));
    let pin_root = dir.0.display().to_string();
    let obj = fixture("pinned.o");
    let before = maps_named("sluice_pinned");
    let totals = |n: usize| -> Vec<u64> {
        record(&["--pin-root", &pin_root, "-e", &obj], &kills(n))
            .iter()
            .map(|o| u64_at(&o.data, 0))
            .collect()
    };
    assert_eq!(totals(3), [1, 2, 3]);
    assert!(dir.0.join("sluice_pinned").exists());
    assert_eq!(
        maps_named("sluice_pinned"),
        before + 1,
        "the pinned map stays"
    );
    // The second run counts on in the same map: it was reused, not made again.
    assert_eq!(totals(2), [4, 5]);
    assert_eq!(maps_named("sluice_pinned"), before + 1, "one pinned map");
    let out = std::process::Command::new("bpftool")
        .args(["map", "show", "pinned"])
        .arg(dir.0.join("sluice_pinned"))
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("name sluice_pinned") && shown.contains("max_entries 4"),
        "{shown}"
    );
    // A run whose map differs from the pinned one is refused, naming the difference.
    refused(
        &[
            "record",
            "--pin-root",
            &pin_root,
            "--map-size",
            "sluice_pinned=8",
            "-e",
            &obj,
            "--",
            "true",
        ],
        &["sluice_pinned", "max_entries 4", "has 8"],
    );
    assert_eq!(totals(1), [6]);
}

/// Keeps every CPU busy until dropped: an idle tickless CPU takes no cpu-clock sample.
struct Spinners {
    stop: &'static AtomicBool,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Spinners {
    fn start(n: usize) -> Self {
        let stop: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        let threads = (0..n)
            .map(|_| {
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_add(1));
                    }
                })
            })
            .collect();
        Spinners { stop, threads }
    }
}

impl Drop for Spinners {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn online_cpus() -> Vec<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let mut cpus = Vec::new();
    for part in text.trim().split(',') {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<u32>().unwrap()..=b.parse().unwrap()),
            None => cpus.push(part.parse().unwrap()),
        }
    }
    cpus
}

#[test]
fn perf_event_program_samples_every_cpu_at_the_frequency() {
    if !root("sampling") {
        return;
    }
    let _g = serial();
    let cpus = online_cpus();
    let spin = Spinners::start(cpus.len());
    let (code, out, err) = sluice(&[
        "record",
        "--json",
        "-a",
        "-F",
        "99",
        "--duration",
        "1.5",
        "-e",
        &fixture("sampling.o"),
    ]);
    drop(spin);
    assert_eq!(code, 0, "{err}");
    // The event is named as it was opened: cycles, or cpu-clock without hardware counters.
    assert!(
        err.contains(", cycles 0") || err.contains(", cpu-clock 0"),
        "{err}"
    );
    let mut per_cpu: BTreeMap<u32, usize> = BTreeMap::new();
    for o in outputs(&out, "events") {
        assert_eq!(
            u32_at(&o.data, 0),
            o.cpu,
            "the program's CPU is the record's"
        );
        *per_cpu.entry(o.cpu).or_insert(0) += 1;
    }
    for cpu in &cpus {
        let n = per_cpu.get(cpu).copied().unwrap_or(0);
        // 99 Hz for 1.5 s: about 148; a busy shared machine loses some.
        assert!(
            (30..=300).contains(&n),
            "CPU {cpu}: {n} samples at -F 99 for 1.5 s ({per_cpu:?})"
        );
    }
    eprintln!("samples per CPU at -F 99 for 1.5 s: {per_cpu:?}");
}

#[test]
fn pmu_counter_is_read_by_the_program_and_grows() {
    if !root("pmu") {
        return;
    }
    let _g = serial();
    const N: usize = 30;
    for event in ["cpu-clock", "task-clock"] {
        let pmu = format!("counters={event}");
        let got = record(
            &[
                "-e",
                &fixture("sampling.o"),
                "--prog",
                "read_counter",
                "--pmu",
                &pmu,
            ],
            &kills(N),
        );
        assert_eq!(got.len(), N, "{event}: {got:?}");
        let mut last: BTreeMap<u32, u64> = BTreeMap::new();
        for o in &got {
            let (cpu, err, counter) = (
                u32_at(&o.data, 0),
                u32_at(&o.data, 4) as i32,
                u64_at(&o.data, 8),
            );
            assert_eq!(cpu, o.cpu);
            assert_eq!(err, 0, "{event}: bpf_perf_event_read_value failed");
            assert!(counter > 0, "{event}: counter 0");
            if let Some(&before) = last.get(&cpu) {
                assert!(
                    counter >= before,
                    "{event}: CPU {cpu}: {before} then {counter}"
                );
            }
            last.insert(cpu, counter);
        }
        eprintln!("{event}: last counter per CPU {last:?}");
    }
}

/// The real libbpf-tools objects (`tests/real/fetch.sh`), or `None` after saying why.
fn real(name: &str) -> Option<String> {
    let Some(dir) = std::env::var_os("SLUICE_REAL_OBJS").map(PathBuf::from) else {
        eprintln!("SKIPPED: SLUICE_REAL_OBJS is not set (run tests/real/fetch.sh)");
        return None;
    };
    let path = dir.join("libbpf-tools").join(name);
    assert!(path.exists(), "{} missing", path.display());
    Some(path.display().to_string())
}

/// The workload's pid: the first line it prints on stdout (`echo $$`), which sluice
/// passes through (`-o FILE` keeps the records apart).
fn traced(args: &[&str], workload: &str, label: &str) -> (u32, Vec<Output>) {
    let out_file = std::env::temp_dir().join(format!(
        "sluice-prog-config-{}-{label}.json",
        std::process::id()
    ));
    let o = out_file.display().to_string();
    let mut all = vec![
        "record",
        "--json",
        "--decode",
        "events=raw",
        "-o",
        o.as_str(),
    ];
    all.extend_from_slice(args);
    let w = format!("echo $$; {workload}");
    all.extend_from_slice(&["--", "sh", "-c", &w]);
    let (code, out, err) = sluice(&all);
    assert_eq!(code, 0, "{label}: {err}");
    let pid: u32 = out.lines().next().unwrap().trim().parse().unwrap();
    let text = std::fs::read_to_string(&out_file).unwrap();
    let _ = std::fs::remove_file(&out_file);
    (pid, outputs(&text, "events"))
}

#[test]
fn real_sigsnoop_counts_each_signal_once_per_chosen_program_set() {
    let Some(obj) = real("sigsnoop.bpf.o") else {
        return;
    };
    if !root("real_sigsnoop") {
        return;
    }
    let _g = serial();
    const N: usize = 12;
    // SIGUSR1 ignored, sent N times by the shell to itself: N kill(2), N signals generated.
    // target_signal (sigsnoop -s 10) keeps other signals (the workload's SIGCHLD) out.
    let workload = format!("trap '' USR1; {}", ["kill -USR1 $$"; N].join("; "));
    let count = |extra: &[&str], label: &str| {
        let mut args = vec!["-e", obj.as_str(), "--set", "target_signal=10"];
        args.extend_from_slice(extra);
        let (pid, outs) = traced(&args, &workload, label);
        // struct event { pid, tpid, sig, ret, comm }: sent by the workload, to itself.
        let mine: Vec<_> = outs.iter().filter(|o| o.pid == pid).collect();
        for o in &mine {
            assert_eq!(
                (u32_at(&o.data, 0), u32_at(&o.data, 4), u32_at(&o.data, 8)),
                (pid, pid, 10),
                "{label}"
            );
        }
        mine.len()
    };
    // Both program sets: every signal twice (the syscall pair and signal_generate).
    assert_eq!(count(&[], "all"), 2 * N);
    assert_eq!(count(&["--prog", "sig_trace"], "generated"), N);
    assert_eq!(count(&["--prog", "kill_entry,kill_exit"], "kill"), N);
}

#[test]
fn real_opensnoop_targ_uid_keeps_only_that_users_opens() {
    let Some(obj) = real("opensnoop.bpf.o") else {
        return;
    };
    if !root("real_opensnoop") {
        return;
    }
    let _g = serial();
    // The workload drops to uid 65534 and opens a file it names; opensnoop's targ_uid
    // (`opensnoop -u`) defaults to 0.
    let workload = "exec setpriv --reuid=65534 --regid=65534 --clear-groups \
                    cat /etc/hostname /proc/self/status >/dev/null";
    let opened = |outs: &[Output], pid: u32| -> Vec<(u32, String)> {
        // struct event { u64 ts; pid; uid; ret; flags; u64 callers[2]; comm[16]; fname[] }
        outs.iter()
            .filter(|o| o.pid == pid)
            .map(|o| {
                let name = o.data[56..].split(|&b| b == 0).next().unwrap();
                (
                    u32_at(&o.data, 12),
                    String::from_utf8_lossy(name).into_owned(),
                )
            })
            .collect()
    };
    let (pid, outs) = traced(&["-e", &obj, "--set", "targ_uid=65534"], workload, "uid");
    let seen = opened(&outs, pid);
    assert!(seen.iter().all(|(uid, _)| *uid == 65534), "{seen:?}");
    for f in ["/etc/hostname", "/proc/self/status"] {
        assert_eq!(
            seen.iter().filter(|(_, n)| n == f).count(),
            1,
            "{f} in {seen:?}"
        );
    }
    // The default (0): only the opens made while still root (before setpriv drops).
    let (pid, outs) = traced(&["-e", &obj], workload, "root");
    let seen = opened(&outs, pid);
    assert!(!seen.is_empty(), "setpriv opens files as root first");
    assert!(seen.iter().all(|(uid, _)| *uid == 0), "{seen:?}");
    assert!(!seen.iter().any(|(_, n)| n == "/etc/hostname"), "{seen:?}");
}

#[test]
fn real_objects_with_max_entries_0_load_with_map_size() {
    let Some(obj) = real("cpudist.bpf.o") else {
        return;
    };
    if !root("real_map_size") {
        return;
    }
    let _g = serial();
    refused(
        &["inspect", "--load", "--prog", "sched_switch_tp", &obj],
        &["map 'start'", "--map-size start=N"],
    );
    // raw_tp: the program this branch loads (tp_btf needs its attach BTF id).
    let (code, out, err) = sluice(&[
        "inspect",
        "--load",
        "--map-size",
        "start=10240",
        "--map-size",
        "hists=10240",
        "--prog",
        "sched_switch_tp",
        &obj,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 program(s)"), "{out}");
    assert!(
        out.contains("sched_switch_tp (section 'raw_tp/sched_switch')"),
        "{out}"
    );
}

/// offcputime's `stackmap` says neither entries nor value size: the tool sizes both from its
/// flags. Given entries, sluice gives the value room for the kernel's deepest stack, and the
/// program records stacks into it (read back by bpftool while the run is on).
#[test]
fn real_stack_map_left_at_value_size_0_holds_the_kernels_deepest_stack() {
    let Some(obj) = real("offcputime.bpf.o") else {
        return;
    };
    if !root("real_stack_map") {
        return;
    }
    let _g = serial();
    let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["record", "-e", &obj, "--map-size", "stackmap=1024", "--"])
        .args([
            "sh",
            "-c",
            "for i in 1 2 3 4 5 6 7 8 9 10; do sleep 0.1; done; sleep 1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let bpftool = |args: &[&str]| {
        let out = std::process::Command::new("bpftool")
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The map of this run: the newest stack map of that name.
    let shown = bpftool(&["-j", "map", "show"]);
    let maps: Vec<&str> = shown
        .split("},{")
        .filter(|m| m.contains("\"name\":\"stackmap\""))
        .collect();
    let map = maps
        .last()
        .unwrap_or_else(|| panic!("no stackmap in {shown}"));
    let field = |name: &str| -> u64 {
        let at = map.find(&format!("\"{name}\":")).unwrap() + name.len() + 3;
        map[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let depth: u64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
        .map_or(127, |s| s.trim().parse().unwrap());
    assert_eq!(field("bytes_value"), depth * 8, "{map}");
    assert_eq!(field("max_entries"), 1024, "{map}");
    let id = field("id").to_string();
    let stacks = bpftool(&["-j", "map", "dump", "id", &id])
        .matches("\"key\"")
        .count();
    let status = run.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut run.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(stacks > 0, "no stack recorded in map {id}: {err}");
    eprintln!("stackmap {id}: value {} B, {stacks} stacks", depth * 8);
}

/// A real libbpf-tools tool (`apt-get install libbpf-tools`), running until [`Real::stop`]:
/// started, and its header line read, before the workload runs.
struct Real {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Real {
    /// `/usr/sbin/TOOL ARGS`, or `None` after saying why (CI installs the package).
    fn start(tool: &str, args: &[&str]) -> Option<Real> {
        let path = PathBuf::from("/usr/sbin").join(tool);
        if !path.exists() {
            common::skip(&format!(
                "{} missing: apt-get install libbpf-tools",
                path.display()
            ));
            return None;
        }
        // Line-buffered (its stdout is a pipe): the header shows when it is attached.
        let mut child = std::process::Command::new("stdbuf")
            .arg("-oL")
            .arg(&path)
            .args(args)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead as _;
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // The header comes once the programs are attached.
        let header = lines
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|e| panic!("{tool}: no header: {e}"));
        assert!(header.contains("PID"), "{tool}: {header}");
        Some(Real { child, lines })
    }

    /// Stops it (SIGINT, as Ctrl-C) once what it saw has been printed; its lines.
    fn stop(mut self) -> Vec<String> {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).unwrap();
        rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
        let _ = self.child.wait();
        self.lines.try_iter().collect()
    }
}

/// The real tool's lines whose column `col` (0-based, split on whitespace) is `pid`.
fn real_lines_of(lines: &[String], col: usize, pid: u32) -> Vec<String> {
    let pid = pid.to_string();
    lines
        .iter()
        .filter(|l| l.split_whitespace().nth(col) == Some(pid.as_str()))
        .cloned()
        .collect()
}

#[test]
fn side_by_side_with_the_real_sigsnoop_and_opensnoop() {
    let (Some(sig_obj), Some(open_obj)) = (real("sigsnoop.bpf.o"), real("opensnoop.bpf.o")) else {
        return;
    };
    if !root("side_by_side") {
        return;
    }
    let _g = serial();
    const N: usize = 9;
    let signals = format!("trap '' USR1; {}", ["kill -USR1 $$"; N].join("; "));
    // sigsnoop -s 10 (signal_generate) beside --prog sig_trace; sigsnoop -k -s 10 (the kill
    // syscall pair) beside --prog kill_entry,kill_exit.
    for (real_args, prog) in [
        (&["-s", "10"][..], "sig_trace"),
        (&["-k", "-s", "10"][..], "kill_entry,kill_exit"),
    ] {
        let Some(tool) = Real::start("sigsnoop", real_args) else {
            return;
        };
        let (pid, outs) = traced(
            &["-e", &sig_obj, "--prog", prog, "--set", "target_signal=10"],
            &signals,
            "side-sigsnoop",
        );
        let theirs = real_lines_of(&tool.stop(), 1, pid);
        let ours = outs.iter().filter(|o| o.pid == pid).count();
        eprintln!(
            "side by side: sigsnoop {real_args:?}: {} lines; sluice --prog {prog}: {ours} records \
             ({N} signals sent)",
            theirs.len()
        );
        assert_eq!((theirs.len(), ours), (N, N), "{theirs:?}");
    }
    // opensnoop -u 65534 beside --set targ_uid=65534.
    let Some(tool) = Real::start("opensnoop", &["-u", "65534"]) else {
        return;
    };
    let workload = "exec setpriv --reuid=65534 --regid=65534 --clear-groups \
                    cat /etc/hostname /proc/self/status >/dev/null";
    let (pid, outs) = traced(
        &["-e", &open_obj, "--set", "targ_uid=65534"],
        workload,
        "side-opensnoop",
    );
    let theirs = real_lines_of(&tool.stop(), 0, pid);
    let ours: Vec<String> = outs
        .iter()
        .filter(|o| o.pid == pid)
        .map(|o| {
            let name = o.data[56..].split(|&b| b == 0).next().unwrap();
            String::from_utf8_lossy(name).into_owned()
        })
        .collect();
    eprintln!(
        "side by side: opensnoop -u 65534: {} opens; sluice --set targ_uid=65534: {} opens",
        theirs.len(),
        ours.len()
    );
    assert!(ours.iter().any(|n| n == "/etc/hostname"), "{ours:?}");
    assert_eq!(
        theirs.len(),
        ours.len(),
        "real: {theirs:#?}\nsluice: {ours:#?}"
    );
    // The same files, in the same order (the tool prints the path last).
    let real_paths: Vec<&str> = theirs
        .iter()
        .map(|l| l.split_whitespace().last().unwrap())
        .collect();
    assert_eq!(real_paths, ours);
}
