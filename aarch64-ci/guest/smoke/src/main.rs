//! Guest smoke test for `aarch64-ci/guest/run.sh`: proves the guest infrastructure gives a test
//! binary what sluice's kernel tests need, by doing it. Exit 0 when every check passes, 1 otherwise.
//!
//! Checks: tracefs is mounted with `kprobe_events`; a kprobe on `vfs_read` can be created (its
//! event id appears), fires when the guest reads a file (its `enable` + `trace` show a hit), and is
//! removed again; bpffs is mounted; the kprobe PMU is registered.
//! `guest-smoke --exit N` only exits with N (checks the exit code reaches the host).
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

const TRACING: &str = "/sys/kernel/tracing";
const GROUP: &str = "sluice_smoke";

fn append(path: &str, line: &str) -> Result<(), String> {
    let mut f = OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| format!("open {path}: {e}"))?;
    f.write_all(line.as_bytes())
        .map_err(|e| format!("write {line:?} to {path}: {e}"))
}

fn read(path: &str) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("read {path}: {e}"))
}

fn check(name: &str, r: Result<String, String>, failed: &mut u32) {
    match r {
        Ok(detail) => println!("guest-smoke: ok   {name}: {detail}"),
        Err(e) => {
            println!("guest-smoke: FAIL {name}: {e}");
            *failed += 1;
        }
    }
}

fn kprobe_round_trip() -> Result<String, String> {
    let events = format!("{TRACING}/kprobe_events");
    append(&events, &format!("p:{GROUP}/vfs_read vfs_read\n"))?;
    let dir = format!("{TRACING}/events/{GROUP}/vfs_read");
    let id = read(&format!("{dir}/id"))?;
    append(&format!("{dir}/enable"), "1\n")?;
    for _ in 0..3 {
        let _ = fs::read_to_string("/proc/version");
    }
    append(&format!("{dir}/enable"), "0\n")?;
    let hits = read(&format!("{TRACING}/trace"))?
        .lines()
        .filter(|l| l.contains(": vfs_read: ("))
        .count();
    append(&events, &format!("-:{GROUP}/vfs_read\n"))?;
    let left = read(&events)?;
    if hits == 0 {
        return Err(format!("probe id {} never hit", id.trim()));
    }
    if left.contains(GROUP) {
        return Err(format!("probe not removed: {left:?}"));
    }
    Ok(format!("id {}, {hits} hits, removed", id.trim()))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let (Some("--exit"), Some(code)) = (args.get(1).map(String::as_str), args.get(2)) {
        std::process::exit(code.parse().unwrap_or(2));
    }
    let mut failed = 0;
    check(
        "kernel",
        read("/proc/version").map(|v| v.trim().to_string()),
        &mut failed,
    );
    check(
        "kprobe_events",
        if Path::new(&format!("{TRACING}/kprobe_events")).exists() {
            Ok(format!("{TRACING}/kprobe_events exists"))
        } else {
            Err(format!("{TRACING}/kprobe_events missing"))
        },
        &mut failed,
    );
    check("kprobe round trip", kprobe_round_trip(), &mut failed);
    check(
        "kprobe PMU",
        read("/sys/bus/event_source/devices/kprobe/type").map(|t| format!("type {}", t.trim())),
        &mut failed,
    );
    check(
        "bpffs",
        read("/proc/mounts").and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("bpf /sys/fs/bpf "))
                .map(str::to_string)
                .ok_or_else(|| "not mounted".to_string())
        }),
        &mut failed,
    );
    println!("guest-smoke: {} passed, {failed} failed", 5 - failed);
    std::process::exit(i32::from(failed != 0));
}
