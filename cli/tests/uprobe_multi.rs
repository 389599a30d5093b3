//! `sluice record` of `tests/bpf/uprobe_multi.o` as written: its sections name the binary
//! `um_target` without a path, which sluice finds in `$PATH` as libbpf does; `-p` the
//! target, `--json -o FILE`, the maps printed when the target exits. Oracle: the calls
//! `tests/uprobe_multi/um_target.c` makes of each function (at the addresses it prints).
//! The counts of every program are tested in `runtime/tests/uprobe_multi.rs`.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::fixture;

/// The `bpf_link` fds of process `pid`.
fn links_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|l| l.to_string_lossy().contains("bpf_link"))
                .count()
        })
        .unwrap_or(0)
}

/// `{"key":K,"value":V}` of the JSON map line of `name`.
fn map_entries(json: &str, name: &str) -> BTreeMap<u64, u64> {
    let tag = format!("\"map\":\"{name}\"");
    let line = json
        .lines()
        .find(|l| l.starts_with("{\"type\":\"map\"") && l.contains(&tag))
        .unwrap_or_else(|| panic!("no map {name} in:\n{json}"));
    line.split("{\"key\":")
        .skip(1)
        .map(|e| {
            let (k, rest) = e.split_once(",\"value\":").unwrap();
            let v = rest.split(|c: char| !c.is_ascii_digit()).next().unwrap();
            (k.parse().unwrap(), v.parse().unwrap())
        })
        .collect()
}

#[test]
fn record_finds_the_binary_in_path_and_counts_every_matching_function() {
    if !rustix::process::geteuid().is_root() {
        assert!(!common::required(), "not root (SLUICE_REQUIRE_KERNEL=1)");
        eprintln!("SKIPPED: not root");
        return;
    }
    let dir = std::env::temp_dir().join(format!("sluice-um-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("um_target");
    let src = common::repo().join("tests/uprobe_multi/um_target.c");
    if !common::compile(
        "cc",
        &["-O2", "-o", bin.to_str().unwrap(), src.to_str().unwrap()],
    ) {
        return;
    }
    let mut target = Command::new(&bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = target.stdin.take().unwrap();
    let mut out = BufReader::new(target.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addrs: BTreeMap<String, u64> = line
        .split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (
                k.to_owned(),
                u64::from_str_radix(v.trim_start_matches("0x"), 16).unwrap(),
            )
        })
        .collect();
    let json = dir.join("out.json");
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sluice = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["record", "--json", "-o", json.to_str().unwrap(), "-e"])
        .arg(fixture("uprobe_multi.o"))
        .args(["-p", &target.id().to_string()])
        .env("PATH", path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while links_of(sluice.id()) < 3 {
        if Instant::now() > until {
            let out = sluice.wait_with_output().unwrap();
            panic!("never attached: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    stdin.write_all(b"go\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert!(line.starts_with("done"), "{line}");
    stdin.write_all(b"end\n").unwrap();
    assert!(target.wait().unwrap().success());
    // sluice follows the target (-p) and prints its maps when it is gone.
    let done = sluice.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr).into_owned();
    assert_eq!(done.status.code(), Some(0), "{err}");
    assert!(
        err.contains("program 'on_bare' skipped: section 'uprobe.multi' is attached by hand"),
        "{err}"
    );
    let text = std::fs::read_to_string(&json).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let want: BTreeMap<u64, u64> = [
        ("um_hit_a", 3),
        ("um_hit_b", 5),
        ("um_hit_c", 7),
        ("um_hit_long", 2),
    ]
    .iter()
    .map(|(f, n)| (addrs[*f], *n))
    .collect();
    eprintln!("{text}");
    assert_eq!(map_entries(&text, "entries"), want);
    assert_eq!(map_entries(&text, "returns"), want);
    assert_eq!(
        map_entries(&text, "totals"),
        BTreeMap::from([(0, 3 + 5 + 7)])
    );
}
