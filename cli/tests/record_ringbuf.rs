//! `sluice record` reading a BPF ring buffer and decoding its records by the object's
//! BTF: `tests/bpf/ringbuf_records.o` writes a `struct event` (and every eighth hit a
//! 3000-byte `struct big`) for each `getppid` of the workload, discarding every fourth
//! event. Oracle: the workload makes a known number of calls, and each record's fields are
//! what the program computes from its hit number (see the fixture's `fill()`).
//! `--raw-output`'s bpf-output samples carry no producer either: they print the same way.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use common::{fixture, sluice};

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn kernel(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    assert!(
        !common::required(),
        "{test}: needs root (SLUICE_REQUIRE_KERNEL=1)"
    );
    eprintln!("\n*** SKIPPED kernel test {test}: not root ***\n");
    false
}

/// 24 getppid calls in a 64-bit process (syscalls:sys_enter_getppid sees no compat call).
const WORKLOAD: [&str; 3] = [
    "/usr/bin/python3",
    "-c",
    "import os\nfor _ in range(24): os.getppid()",
];
const CALLS: u64 = 24;

fn expected_seqs() -> Vec<u64> {
    (0..CALLS).filter(|s| s % 4 != 3).collect()
}

#[test]
fn record_decodes_struct_event_by_btf() {
    if !kernel("record_decodes_struct_event_by_btf") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let obj = fixture("ringbuf_records.o");
    let mut args = vec!["record", "-e", obj.as_str(), "--"];
    args.extend(WORKLOAD);
    let (code, out, err) = sluice(&args);
    assert_eq!(code, 0, "{err}");
    let events: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("ringbuf:events: magic="))
        .collect();
    let seqs: Vec<u64> = events
        .iter()
        .map(|l| {
            let seq = l.split(" seq=").nth(1).unwrap();
            seq.split(' ').next().unwrap().parse().unwrap()
        })
        .collect();
    // Python's own start-up may call getppid too: at least the workload's calls, numbered
    // on from the first.
    let first = seqs.first().copied().unwrap_or(0);
    assert!(
        seqs.len() >= expected_seqs().len(),
        "{} events: {out}\n{err}",
        seqs.len()
    );
    let want: Vec<u64> = (first..).filter(|s| s % 4 != 3).take(seqs.len()).collect();
    assert_eq!(seqs, want, "{out}");
    for (l, seq) in events.iter().zip(&seqs) {
        let kind = if seq & 1 == 1 {
            "KIND_BIG"
        } else if seq % 3 == 0 {
            "KIND_NEG"
        } else {
            "KIND_SMALL"
        };
        let neg = -(*seq as i64);
        let want = format!(
            " seq={seq} delta={neg} kind={kind} odd={} comm=\"python3\" in={{a={seq} b={neg}}} \
             w={{u={} s={}}} vals=[{seq},{},{}]",
            seq & 1 == 1,
            (7 * neg) as u32,
            7 * neg,
            2 * seq,
            3 * seq
        );
        if l.contains("comm=\"python3\"") {
            assert!(l.ends_with(&want), "{l}\nwant ...{want}");
        }
        assert!(
            l.starts_with("ringbuf:events: magic=1371602926 tid="),
            "{l}"
        );
    }
    let bigs = out
        .lines()
        .filter(|l| l.starts_with("ringbuf:events: seq="))
        .count();
    assert_eq!(bigs, seqs.iter().filter(|s| *s % 8 == 5).count(), "{out}");
    let summary = err
        .lines()
        .find(|l| l.starts_with("sluice record:"))
        .expect(&err);
    assert!(
        summary.contains(&format!("ringbuf:events {}", seqs.len() + bigs)),
        "{summary}"
    );
    assert!(
        summary.contains("ring-buffer records carry no pid/cpu/time"),
        "{summary}"
    );
    // Every fourth hit was discarded: events and discarded ones together are the hits.
    let discarded: u64 = summary
        .split("; ")
        .find_map(|p| p.strip_suffix(" discarded by their programs"))
        .and_then(|p| p.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{summary}"));
    let hits = first..first + seqs.len() as u64 + discarded;
    assert_eq!(
        hits.clone().filter(|s| s % 4 == 3).count() as u64,
        discarded
    );
    assert!(hits.end - first >= CALLS, "{summary}");
    // Nothing guessed from a payload's bytes.
    assert!(!out.contains("str="), "{out}");
}

#[test]
fn record_json_and_decode_choices() {
    if !kernel("record_json_and_decode_choices") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let obj = fixture("ringbuf_records.o");
    // JSON: the same names, as an object.
    let mut args = vec!["record", "--json", "-e", obj.as_str(), "--"];
    args.extend(WORKLOAD);
    let (code, out, err) = sluice(&args);
    assert_eq!(code, 0, "{err}");
    let recs: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"record\",\"event\":\"ringbuf:events\""))
        .collect();
    assert!(recs.len() >= expected_seqs().len(), "{out}");
    let l = recs
        .iter()
        .find(|l| l.contains("\"seq\":6,"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        l.contains("\"size\":64,\"fields\":{\"magic\":1371602926,\"tid\":"),
        "{l}"
    );
    assert!(
        l.ends_with(
            "\"seq\":6,\"delta\":-6,\"kind\":\"KIND_NEG\",\"odd\":false,\"comm\":\"python3\",\
             \"in\":{\"a\":6,\"b\":-6},\"w\":{\"u\":4294967254,\"s\":-42},\"vals\":[6,12,18]}}"
        ),
        "{l}"
    );
    assert!(l.contains("\"map\":\"events\""), "{l}");

    // --decode events=raw: hex, every record.
    let mut args = vec!["record", "--decode", "events=raw", "-e", obj.as_str(), "--"];
    args.extend(WORKLOAD);
    let (code, out, err) = sluice(&args);
    assert_eq!(code, 0, "{err}");
    // The records, then the object's maps as they are at exit: ringbuf_records.o declares
    // two arrays of its own (`config`, `stats`) beside the ring buffer and `target_tgid`,
    // which are internal and not printed. `stats` counts what the programs submitted: the
    // records printed are those.
    let (records, maps) = out
        .split_once(" ringbuf_records.o ")
        .map(|(r, _)| (r.rsplit_once('\n').map_or("", |(r, _)| r), &out[r.len()..]))
        .unwrap_or_else(|| panic!("no map printed at exit:\n{out}"));
    assert!(
        records
            .lines()
            .all(|l| l.starts_with("ringbuf:events: map=events size=")),
        "{out}"
    );
    assert!(out.contains("size=64 data=eeffc051"), "{out}");
    assert!(out.contains("size=3000 data="), "{out}");
    let stats = maps
        .split_once(" ringbuf_records.o stats: ")
        .unwrap_or_else(|| panic!("{maps}"))
        .1;
    let stat = |k: u32| -> usize {
        stats
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .find_map(|l| l.trim().strip_prefix(&format!("{k}: ")))
            .map_or(0, |v| v.parse().unwrap())
    };
    let count = |size: &str| records.lines().filter(|l| l.contains(size)).count();
    assert!(stat(1) > 0, "{out}");
    assert_eq!(stat(1), count(" size=64 "), "{out}");
    assert_eq!(stat(3), count(" size=3000 "), "{out}");
    assert!(
        !maps.contains("target_tgid") && !maps.contains(" events:"),
        "{maps}"
    );

    // --decode events='struct big': the 64-byte events are shorter: raw and counted.
    let mut args = vec![
        "record",
        "--decode",
        "events=struct big",
        "-e",
        obj.as_str(),
        "--",
    ];
    args.extend(WORKLOAD);
    let (code, out, err) = sluice(&args);
    assert_eq!(code, 0, "{err}");
    let short = out.lines().filter(|l| l.contains(" size=64 data=")).count();
    assert!(short >= expected_seqs().len(), "{out}");
    assert!(out.contains("ringbuf:events: seq=5 body=0xab"), "{out}");
    assert!(
        err.contains(&format!(
            "{short} records shorter than their type (shown raw)"
        )),
        "{err}"
    );

    // A type or map that is not there: bad input, exit 2, before anything runs.
    let (code, _, err) = sluice(&[
        "record",
        "--decode",
        "events=struct nope",
        "-e",
        obj.as_str(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("has no type 'struct nope'"), "{err}");
    let (code, _, err) = sluice(&["record", "--decode", "nomap=raw", "-e", obj.as_str()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no ring buffer or perf event array named 'nomap'"),
        "{err}"
    );
}

/// `tests/bpf/bench_drain.o`'s record, from a line's `data=HEX`: (pid, cpu, seq), as the
/// program wrote them.
fn drain_rec(line: &str) -> (u32, u32, u64) {
    let hex = line
        .split(" data=")
        .nth(1)
        .unwrap_or_else(|| panic!("{line}"));
    let b: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
    let seq = u64::from_ne_bytes(b[8..16].try_into().unwrap());
    (u32_at(0), u32_at(4), seq)
}

#[test]
fn raw_output_prints_what_the_samples_carry() {
    if !kernel("raw_output_prints_what_the_samples_carry") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let obj = fixture("bench_drain.o");
    let run = |extra: &[&str]| {
        let mut args = vec!["record"];
        args.extend(extra);
        args.extend(["-e", obj.as_str(), "--decode", "pb=raw", "--"]);
        args.extend(WORKLOAD);
        let (code, out, err) = sluice(&args);
        assert_eq!(code, 0, "{err}");
        let summary = err
            .lines()
            .find(|l| l.starts_with("sluice record:"))
            .unwrap_or_else(|| panic!("{err}"))
            .to_owned();
        (out, summary)
    };
    // The default layout: each line's head has the pid the kernel sampled, the program's
    // own record the same.
    let (out, summary) = run(&[]);
    let full: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("bpf-output:pb:"))
        .collect();
    assert!(full.len() as u64 >= CALLS, "{out}");
    for l in &full {
        let head_pid: u32 = l
            .split_whitespace()
            .nth(1)
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(l.trim_start().starts_with("python3 "), "{l}");
        assert_eq!(drain_rec(l).0, head_pid, "{l}");
    }
    assert!(!summary.contains("--raw-output"), "{summary}");

    // --raw-output: the program's bytes and nothing made up: no comm, pid, CPU or time.
    let (out, summary) = run(&["--raw-output"]);
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("bpf-output:pb:"))
        .collect();
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("bpf-output:pb: map=pb size=36 data=")),
        "{out}"
    );
    let recs: Vec<(u32, u32, u64)> = lines.iter().map(|l| drain_rec(l)).collect();
    let n = recs.len() as u64;
    assert!(n >= CALLS, "{out}");
    assert!(
        summary.contains(&format!("bpf-output:pb {n},")),
        "{summary}"
    );
    assert!(
        summary.contains("--raw-output: bpf-output samples carry no pid/cpu/time"),
        "{summary}"
    );
    // Every hit once (the object numbers them from 0), one process; ring by ring, so in
    // order within each CPU's ring.
    let mut seqs: Vec<u64> = recs.iter().map(|r| r.2).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..n).collect::<Vec<_>>(), "{out}");
    assert!(recs.iter().all(|r| r.0 == recs[0].0), "{out}");
    for cpu in 0..64 {
        let on: Vec<u64> = recs.iter().filter(|r| r.1 == cpu).map(|r| r.2).collect();
        assert!(on.windows(2).all(|w| w[0] < w[1]), "CPU {cpu}: {on:?}");
    }

    // JSON: records with no process, CPU or time members.
    let (out, _) = run(&["--raw-output", "--json"]);
    let recs: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("\"event\":\"bpf-output:pb\""))
        .collect();
    assert_eq!(recs.len() as u64, n.max(recs.len() as u64), "{out}");
    assert!(recs.len() as u64 >= CALLS, "{out}");
    for l in &recs {
        assert!(l.starts_with("{\"type\":\"record\",\"event\":\"bpf-output:pb\",\"map\":\"pb\",\"size\":36,\"data\":\""), "{l}");
        for key in ["\"pid\"", "\"time\"", "\"cpu\"", "\"comm\""] {
            assert!(!l.contains(key), "{l}");
        }
    }

    // perf.data needs what the raw layout leaves out: refused before anything is loaded.
    let (code, _, err) = sluice(&[
        "record",
        "--raw-output",
        "--perf-data",
        "/nonexistent/x",
        "-e",
        obj.as_str(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not with --perf-data"), "{err}");
}
