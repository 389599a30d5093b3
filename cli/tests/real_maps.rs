//! Maps side by side with the real tools: Debian's libbpf-tools `syscount`, `runqlat` and
//! `cpudist` (`/usr/sbin`, package pinned in `tests/real/objects.sha256`) and
//! `sluice record -e TOOL.bpf.o` (the same package's objects, fetched by
//! `tests/real/fetch.sh`), at the same time, on one workload that makes known work
//! (`tests/record/maps_workload.c`): it waits until both are attached, then runs.
//!
//! - syscount: the counts per syscall of the workload (`-p PID` for the real tool,
//!   `--set filter_pid=PID` for its object under sluice: a tracepoint's programs run for
//!   every task, the object filters) are exact (getppid 1000, getuid 700, getgid 300) and
//!   equal to the real tool's for every syscall.
//! - runqlat, cpudist (`--set targ_tgid=PID`): the same events counted (totals within 1%),
//!   the histograms of the same shape (each one's cumulative share at a bucket at most one
//!   bucket behind the other's: the two programs run one after the other on each event,
//!   so the one that runs first at the wakeup and last at the switch sees a little more).
//!
//! Gated on root and `SLUICE_REAL_OBJS` like the other real-object tests; says so loudly
//! when skipped. The tables are printed (`--nocapture`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The tools attach the same tracepoints: one test at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn gate(test: &str, tool: &str) -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("SLUICE_REAL_OBJS").map(PathBuf::from) else {
        eprintln!("\n*** SKIPPED {test}: SLUICE_REAL_OBJS is not set (tests/real/fetch.sh) ***\n");
        return None;
    };
    let real = format!("/usr/sbin/{tool}");
    let why = if !rustix::process::geteuid().is_root() {
        Some("not root".to_owned())
    } else if !Path::new(&real).exists() {
        Some(format!("no {real} (apt-get install libbpf-tools)"))
    } else {
        None
    };
    match why {
        None => Some(dir.join(format!("libbpf-tools/{tool}.bpf.o"))),
        Some(why) => {
            assert!(
                !common::required(),
                "{test}: SLUICE_REQUIRE_KERNEL=1 but {why}"
            );
            eprintln!("\n*** SKIPPED kernel test {test}: {why} ***\n");
            None
        }
    }
}

/// The workload, built once per test into a temporary folder.
fn workload(tag: &str) -> PathBuf {
    let bin =
        std::env::temp_dir().join(format!("sluice-maps-workload-{}-{tag}", std::process::id()));
    let src = common::repo().join("tests/record/maps_workload.c");
    let (b, s) = (bin.display().to_string(), src.display().to_string());
    assert!(common::compile("cc", &["-O2", "-pthread", "-o", &b, &s]));
    bin
}

/// BPF-link and perf-event fds of `pid`: its attachments.
fn attach_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|l| {
                    let l = l.to_string_lossy();
                    l.contains("perf_event") || l.contains("bpf_link")
                })
                .count()
        })
        .unwrap_or(0)
}

fn interrupt(pid: u32) {
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::INT,
    )
    .unwrap();
}

/// What one side-by-side run printed: the real tool's stdout, sluice's JSON lines.
struct Run {
    real: String,
    ours: String,
}

/// Runs `tool REAL_ARGS` and `sluice record -e OBJ OUR_ARGS -p PID --json -o FILE` on the
/// workload `args` (held until both have `links` attachments), to the workload's end.
fn side_by_side(
    tool: &str,
    obj: &Path,
    work: &[&str],
    real_args: &dyn Fn(u32) -> Vec<String>,
    our_args: &dyn Fn(u32) -> Vec<String>,
    links: usize,
) -> Run {
    let bin = workload(tool);
    let mut w: Child = Command::new(&bin)
        .args(work)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = w.id();
    let out = std::env::temp_dir().join(format!(
        "sluice-real-maps-{}-{tool}.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&out);
    let real = Command::new("stdbuf")
        .arg("-oL")
        .arg(format!("/usr/sbin/{tool}"))
        .args(real_args(pid))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ours = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["record", "--json", "-o", out.to_str().unwrap(), "-e"])
        .arg(obj)
        .args(our_args(pid))
        .args(["-p", &pid.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    while !(out.exists() && attach_fds(real.id()) >= links) {
        assert!(Instant::now() < until, "{tool}: the tools never attached");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    w.stdin.take().unwrap().write_all(b"x").unwrap();
    assert!(w.wait().unwrap().success());
    // sluice follows the workload (-p) and prints its maps when it is gone.
    let ours = ours.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&ours.stderr).into_owned();
    assert_eq!(ours.status.code(), Some(0), "{err}");
    interrupt(real.id());
    let real = real.wait_with_output().unwrap();
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&bin);
    Run {
        real: String::from_utf8_lossy(&real.stdout).into_owned(),
        ours: text,
    }
}

/// The JSON line of map `name`.
fn map_line<'a>(json: &'a str, name: &str) -> &'a str {
    let tag = format!("\"map\":\"{name}\"");
    json.lines()
        .find(|l| l.starts_with("{\"type\":\"map\"") && l.contains(&tag))
        .unwrap_or_else(|| panic!("no map {name} in:\n{json}"))
}

/// Each `{"key":K,"value":{"count":N` of a JSON map line.
fn syscount_ours(line: &str) -> BTreeMap<u32, u64> {
    line.split("{\"key\":")
        .skip(1)
        .map(|e| {
            let key = e.split(',').next().unwrap().parse().unwrap();
            let count = e
                .split("\"count\":")
                .nth(1)
                .and_then(|c| c.split(',').next())
                .unwrap()
                .parse()
                .unwrap();
            (key, count)
        })
        .collect()
}

#[test]
fn syscount_counts_are_exact_and_the_real_tools() {
    let Some(obj) = gate("syscount_counts_are_exact_and_the_real_tools", "syscount") else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // The real tool's names for this machine's numbers.
    let list = Command::new("/usr/sbin/syscount")
        .arg("-l")
        .output()
        .unwrap();
    let numbers: BTreeMap<String, u32> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| {
            let (n, name) = l.split_once(':')?;
            Some((name.trim().to_owned(), n.trim().parse().ok()?))
        })
        .collect();
    let run = side_by_side(
        "syscount",
        &obj,
        &["syscalls", "1000", "700", "300"],
        &|pid| vec!["-p".into(), pid.to_string(), "-T".into(), "1000".into()],
        &|pid| vec!["--set".into(), format!("filter_pid={pid}")],
        2,
    );
    let real: BTreeMap<u32, u64> = run
        .real
        .lines()
        .skip_while(|l| !l.starts_with("SYSCALL"))
        .skip(1)
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (name, count) = (w.next()?, w.next()?.parse().ok()?);
            Some((*numbers.get(name)?, count))
        })
        .collect();
    let ours = syscount_ours(map_line(&run.ours, "data"));
    let name = |n: u32| {
        numbers
            .iter()
            .find(|(_, &v)| v == n)
            .map_or_else(|| n.to_string(), |(k, _)| k.clone())
    };
    let mut table = String::from("syscall          nr   sluice     real\n");
    for nr in real
        .keys()
        .chain(ours.keys())
        .collect::<std::collections::BTreeSet<_>>()
    {
        table.push_str(&format!(
            "{:<15} {nr:>3} {:>8} {:>8}\n",
            name(*nr),
            ours.get(nr).map_or("-".into(), u64::to_string),
            real.get(nr).map_or("-".into(), u64::to_string)
        ));
    }
    eprintln!("syscount side by side:\n{table}");
    for (call, want) in [("getppid", 1000), ("getuid", 700), ("getgid", 300)] {
        let nr = numbers[call];
        assert_eq!(ours.get(&nr), Some(&want), "{call}\n{table}");
        assert_eq!(real.get(&nr), Some(&want), "{call}\n{table}");
    }
    assert_eq!(ours, real, "\n{table}{}", run.real);
}

/// The slots (by index) of the real tool's `lo -> hi : count |...|` lines.
fn real_hist(text: &str) -> Vec<u64> {
    text.lines()
        .filter(|l| l.contains("->") && l.contains('|'))
        .filter_map(|l| l.split(':').nth(1)?.split_whitespace().next()?.parse().ok())
        .collect()
}

/// The slots of sluice's JSON `"hist":[{"lo":..,"hi":..,"count":..}]` (log2: lo 0 is slot
/// 0, lo 2^i slot i).
fn our_hist(line: &str) -> Vec<u64> {
    let mut slots = vec![0u64; 64];
    for b in line.split("{\"lo\":").skip(1) {
        let lo: u64 = b.split(',').next().unwrap().parse().unwrap();
        let count: u64 = b
            .split("\"count\":")
            .nth(1)
            .and_then(|c| c.split('}').next())
            .unwrap()
            .parse()
            .unwrap();
        let slot = if lo == 0 {
            0
        } else {
            lo.trailing_zeros() as usize
        };
        slots[slot] += count;
    }
    while slots.last() == Some(&0) {
        slots.pop();
    }
    slots
}

/// The histograms side by side, then: totals within 1%, shapes within one bucket.
fn same_histograms(tool: &str, real: &[u64], ours: &[u64]) {
    let (rt, ot) = (real.iter().sum::<u64>(), ours.iter().sum::<u64>());
    let n = real.len().max(ours.len());
    let at = |h: &[u64], i: usize| h.get(i).copied().unwrap_or(0);
    let mut table = String::from("bucket (usecs)          sluice     real\n");
    for i in 0..n {
        let lo = if i == 0 { 0 } else { 1u64 << i };
        table.push_str(&format!(
            "[{lo}, {})\t{:>14} {:>8}\n",
            1u64 << (i + 1),
            at(ours, i),
            at(real, i)
        ));
    }
    table.push_str(&format!("total\t\t{ot:>14} {rt:>8}\n"));
    eprintln!("{tool} side by side:\n{table}");
    assert!(rt > 0 && ot > 0, "{table}");
    assert!(
        rt.abs_diff(ot) * 100 <= rt.max(ot),
        "totals differ by more than 1%\n{table}"
    );
    let cdf = |h: &[u64], t: u64, i: usize| h.iter().take(i + 1).sum::<u64>() as f64 / t as f64;
    for i in 0..n {
        assert!(
            cdf(ours, ot, i + 1) + 0.05 >= cdf(real, rt, i)
                && cdf(real, rt, i + 1) + 0.05 >= cdf(ours, ot, i),
            "shapes differ by more than a bucket at {i}\n{table}"
        );
    }
}

#[test]
fn runqlat_histogram_beside_the_real_tools() {
    let Some(obj) = gate("runqlat_histogram_beside_the_real_tools", "runqlat") else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let run = side_by_side(
        "runqlat",
        &obj,
        &["pingpong", "3000"],
        &|pid| vec!["-p".into(), pid.to_string()],
        &|pid| {
            ["sched_wakeup", "sched_wakeup_new", "sched_switch"]
                .iter()
                .flat_map(|p| ["--prog".to_owned(), (*p).to_owned()])
                .chain(["--set".into(), format!("targ_tgid={pid}")])
                .collect()
        },
        3,
    );
    let ours = our_hist(map_line(&run.ours, "hists"));
    same_histograms("runqlat", &real_hist(&run.real), &ours);
    // Every handover is a wakeup and a switch: 2 per round at least.
    assert!(ours.iter().sum::<u64>() >= 6000, "{ours:?}");
}

#[test]
fn cpudist_histogram_beside_the_real_tools() {
    let Some(obj) = gate("cpudist_histogram_beside_the_real_tools", "cpudist") else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let run = side_by_side(
        "cpudist",
        &obj,
        &["pingpong", "3000"],
        &|pid| vec!["-p".into(), pid.to_string()],
        &|pid| {
            [
                "--prog",
                "sched_switch_btf",
                "--map-size",
                "start=32768",
                "--map-size",
                "hists=32768",
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .chain(["--set".into(), format!("targ_tgid={pid}")])
            .collect()
        },
        1,
    );
    same_histograms(
        "cpudist",
        &real_hist(&run.real),
        &our_hist(map_line(&run.ours, "hists")),
    );
}
