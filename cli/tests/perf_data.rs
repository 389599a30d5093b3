//! `sluice record --perf-data`: what sluice writes is read by Debian's `perf script` and
//! `perf report` without a warning, with the same samples, in the same order, with the
//! same comm, pid, tid, CPU, time and decoded fields as sluice's own text output of the
//! same run (a tracepoint, a uprobe with a fetch-arg, a bpf-output payload); `perf report
//! --sort comm,sym` resolves the uprobe's function; pipe mode works through `perf script`;
//! and a reader written here from perf.data-file-format.txt reads back every record.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use common::{repo, skip};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Sessions on one tracepoint share its program list: one recording at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

const CALLS: usize = 20;

struct Setup {
    dir: PathBuf,
    bin: PathBuf,
}

fn setup(test: &str) -> Option<Setup> {
    if !rustix::process::geteuid().is_root() {
        skip(&format!("{test}: record needs root"));
        return None;
    }
    if Command::new("perf").arg("--version").output().is_err() {
        skip(&format!("{test}: perf is not installed"));
        return None;
    }
    let dir = std::env::temp_dir().join(format!("sluice-perf-data-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("perf_data");
    let built = Command::new("cc")
        .args(["-g", "-O1", "-o"])
        .arg(&bin)
        .arg(repo().join("tests/record/perf_data.c"))
        .status();
    if !built.is_ok_and(|s| s.success()) {
        skip(&format!(
            "{test}: cc is needed to build tests/record/perf_data.c"
        ));
        return None;
    }
    Some(Setup { dir, bin })
}

fn record_args(s: &Setup, data: &str, text: &Path) -> Vec<String> {
    vec![
        "record".into(),
        "-e".into(),
        repo()
            .join("tests/record/perf_data_filter.o")
            .display()
            .to_string(),
        "--event".into(),
        format!("any_call=uprobe/{}:traced_call(v)", s.bin.display()),
        // The payload compared byte for byte with perf script's hex dump: kept raw (the
        // object's BTF would decode it as struct note).
        "--decode".into(),
        "notes=raw".into(),
        "--perf-data".into(),
        data.into(),
        "-o".into(),
        text.display().to_string(),
        "--".into(),
        s.bin.display().to_string(),
        CALLS.to_string(),
    ]
}

fn run(cmd: &mut Command) -> (i32, Vec<u8>, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One sample as printed: head and fields.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Line {
    comm: String,
    pid: u32,
    tid: u32,
    cpu: u32,
    time: String,
    event: String,
    /// Numeric fields by name (`ip` for a probe's address).
    fields: BTreeMap<String, u64>,
    /// A bpf-output payload.
    payload: Vec<u8>,
}

fn num(v: &str) -> u64 {
    let v = v.trim_end_matches(',');
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => v.parse().unwrap(),
    }
}

/// sluice's text: `COMM PID/TID [CPU] SECS.USECS: EVENT: k=v ...`.
fn sluice_lines(text: &str) -> Vec<Line> {
    text.lines()
        .map(|l| {
            let (head, rest) = l.split_once(": ").unwrap();
            let h: Vec<&str> = head.split_whitespace().collect();
            let (pid, tid) = h[1].split_once('/').unwrap();
            let (event, body) = rest
                .split_once(": ")
                .unwrap_or((rest.trim_end_matches(':'), ""));
            let mut line = Line {
                comm: h[0].into(),
                pid: pid.parse().unwrap(),
                tid: tid.parse().unwrap(),
                cpu: h[2].trim_matches(['[', ']']).parse().unwrap(),
                time: h[3].into(),
                event: event.into(),
                fields: BTreeMap::new(),
                payload: Vec::new(),
            };
            for kv in body.split_whitespace() {
                let (k, v) = kv.split_once('=').unwrap();
                match k {
                    "data" => {
                        line.payload = (0..v.len())
                            .step_by(2)
                            .map(|i| u8::from_str_radix(&v[i..i + 2], 16).unwrap())
                            .collect();
                    }
                    "map" | "size" | "str" | "__probe_ip" | "__syscall_nr" => {}
                    _ => {
                        line.fields.insert(k.into(), num(v));
                    }
                }
            }
            line
        })
        .collect()
}

/// `perf script`'s default lines: `COMM PID[/TID] [CPU] SECS.USECS: [PERIOD] EVENT: ...`
/// with a bpf-output's hex dump on the lines after it.
fn perf_lines(out: &str, tids: bool) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    for l in out.lines() {
        let t = l.trim_start();
        if t.is_empty() || t.starts_with("BPF string:") {
            continue;
        }
        if let Some(dump) = t.strip_prefix("BPF output: ").or_else(|| {
            (t.len() > 6
                && t.as_bytes()[4] == b':'
                && t[..4].bytes().all(|b| b.is_ascii_hexdigit()))
            .then_some(t)
        }) {
            let bytes = dump.split_once(": ").unwrap().1;
            let hex: Vec<&str> = bytes
                .split_whitespace()
                .take_while(|w| w.len() == 2)
                .collect();
            let last = lines.last_mut().unwrap();
            last.payload
                .extend(hex.iter().filter_map(|w| u8::from_str_radix(w, 16).ok()));
            continue;
        }
        let (head, rest) = l.split_once(": ").unwrap();
        let h: Vec<&str> = head.split_whitespace().collect();
        // `-F ...pid,tid` prints PID/TID; the default prints the TID alone.
        let (pid, tid) = match h[1].split_once('/') {
            Some((p, t)) if tids => (p.parse().unwrap(), t.parse().unwrap()),
            _ => {
                let t = h[1].parse().unwrap();
                (t, t)
            }
        };
        let rest = rest.trim_start();
        // A software event prints its period first.
        let rest = match rest.split_once(' ') {
            Some((p, r)) if p.bytes().all(|b| b.is_ascii_digit()) => r.trim_start(),
            _ => rest,
        };
        let (event, body) = rest.split_once(':').map_or((rest, ""), |(e, b)| {
            // `GROUP:EVENT: body`
            let (e2, b2) = b.split_once(':').unwrap_or((b, ""));
            (&rest[..e.len() + 1 + e2.len()], b2)
        });
        let mut line = Line {
            comm: h[0].into(),
            pid,
            tid,
            cpu: h[2].trim_matches(['[', ']']).parse().unwrap(),
            time: h[3].into(),
            event: event.into(),
            fields: BTreeMap::new(),
            payload: Vec::new(),
        };
        let body = body.trim();
        if !event.starts_with("bpf-output") {
            let mut words = body.split_whitespace().peekable();
            while let Some(w) = words.next() {
                if let Some(ip) = w.strip_prefix('(').and_then(|w| w.strip_suffix(')')) {
                    line.fields
                        .insert("ip".into(), u64::from_str_radix(ip, 16).unwrap());
                } else if let Some((k, v)) = w.split_once('=') {
                    line.fields.insert(k.into(), num(v));
                } else if let Some(k) = w.strip_suffix(':') {
                    // libtraceevent's `name: value,`
                    let v = words.next().unwrap();
                    line.fields.insert(k.into(), num(v));
                }
            }
        }
        lines.push(line);
    }
    lines
}

/// Compares perf's reading of the file with sluice's own lines of the same run.
fn same_samples(perf: &[Line], ours: &[Line]) {
    assert_eq!(perf.len(), ours.len(), "perf: {perf:#?}\nsluice: {ours:#?}");
    assert_eq!(ours.len(), 3 * CALLS, "{ours:#?}");
    for (p, o) in perf.iter().zip(ours) {
        assert_eq!(
            (&p.comm, p.pid, p.tid, p.cpu, &p.time, &p.event),
            (&o.comm, o.pid, o.tid, o.cpu, &o.time, &o.event),
            "{p:?}\n{o:?}"
        );
        assert_eq!(p.fields, o.fields, "{p:?}\n{o:?}");
        if o.event.starts_with("bpf-output") {
            assert_eq!(p.payload, o.payload, "{p:?}\n{o:?}");
            assert_eq!(&o.payload[..8], b"getpgid\0");
        }
    }
    // Every kind of event, with the values the workload passed.
    let v: Vec<u64> = ours
        .iter()
        .filter_map(|l| l.fields.get("v").copied())
        .collect();
    assert_eq!(v, (0..CALLS as u64).map(|i| i * 3).collect::<Vec<_>>());
    let pids: Vec<u64> = ours
        .iter()
        .filter(|l| l.event == "syscalls:sys_enter_getpgid")
        .map(|l| l.fields["pid"])
        .collect();
    assert_eq!(
        pids,
        (0..CALLS as u64).map(|i| 3_000_000 + i).collect::<Vec<_>>()
    );
}

fn no_warnings(what: &str, err: &str) {
    assert!(err.trim().is_empty(), "{what} printed on stderr:\n{err}");
}

fn perf(args: &[&str], file: &Path) -> (i32, String, String) {
    let (code, out, err) = run(Command::new("perf").args(args).arg("-i").arg(file));
    (code, String::from_utf8_lossy(&out).into_owned(), err)
}

#[test]
fn perf_script_and_report_read_the_file_as_sluice_printed_it() {
    let Some(s) = setup("file") else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let data = s.dir.join("perf.data");
    let text = s.dir.join("sluice.txt");
    let args = record_args(&s, &data.display().to_string(), &text);
    let (code, out, record_err) = run(Command::new(env!("CARGO_BIN_EXE_sluice")).args(&args));
    assert_eq!(code, 0, "{record_err}");
    assert!(String::from_utf8_lossy(&out).contains("calls 20"));
    let ours = sluice_lines(&std::fs::read_to_string(&text).unwrap());

    let (code, out, err) = perf(&["script"], &data);
    assert_eq!(code, 0, "{err}");
    no_warnings("perf script", &err);
    same_samples(&perf_lines(&out, false), &ours);

    // Field selections: the tracepoint and probe samples with pid/tid.
    let (code, out, err) = perf(
        &["script", "-F", "trace:comm,pid,tid,cpu,time,event,trace"],
        &data,
    );
    assert_eq!(code, 0, "{err}");
    no_warnings("perf script -F", &err);
    let trace: Vec<Line> = ours
        .iter()
        .filter(|l| !l.event.starts_with("bpf-output"))
        .cloned()
        .collect();
    // Other types keep their default fields: only the trace events are compared here.
    let got: Vec<Line> = perf_lines(&out, true)
        .into_iter()
        .filter(|l| !l.event.starts_with("bpf-output"))
        .collect();
    assert_eq!(got.len(), trace.len(), "{out}");
    for (p, o) in got.iter().zip(&trace) {
        assert_eq!(
            (p.pid, p.tid, &p.time, &p.fields),
            (o.pid, o.tid, &o.time, &o.fields)
        );
    }

    let (code, out, err) = perf(&["report", "--stdio"], &data);
    assert_eq!(code, 0, "{err}");
    no_warnings("perf report", &err);
    for event in ["syscalls:sys_enter_getpgid", "bpf-output:notes"] {
        assert!(
            out.contains(&format!("# Samples: {CALLS}  of event '{event}'")),
            "{event}:\n{out}"
        );
    }
    // The uprobe's samples resolve to the probed function of the workload.
    let (code, out, err) = perf(&["report", "--stdio", "--sort", "comm,sym"], &data);
    assert_eq!(code, 0, "{err}");
    no_warnings("perf report --sort comm,sym", &err);
    let probe = out
        .split("# Samples:")
        .find(|part| part.contains("traced_call'"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        probe.lines().any(|l| l.contains("100.00%")
            && l.contains("perf_data")
            && l.contains("[.] traced_call")),
        "{probe}"
    );

    // The reader of this test reads back every record the writer says it wrote.
    let bytes = std::fs::read(&data).unwrap();
    check_read_back(&reader::file(&bytes), &record_err, ours.len());
}

/// The writer's own counts: `perf.data F: N samples, L lost records, S side-band, Y
/// synthesized, R rounds, ...`.
fn writer_counts(err: &str) -> [usize; 5] {
    let line = err
        .lines()
        .find(|l| l.starts_with("sluice record: perf.data "))
        .unwrap_or_else(|| panic!("{err}"));
    let nums: Vec<usize> = line
        .split(", ")
        .map(|part| {
            let part = part.rsplit(": ").next().unwrap();
            part.split_whitespace().next().unwrap().parse().unwrap()
        })
        .collect();
    [nums[0], nums[1], nums[2], nums[3], nums[4]]
}

fn check_read_back(file: &reader::Parsed, record_err: &str, samples: usize) {
    let [n, lost, side, synth, rounds] = writer_counts(record_err);
    assert_eq!((file.samples, n), (samples, samples));
    assert_eq!(file.kinds.get(&2).copied().unwrap_or(0), lost);
    let side_band: usize = [1, 3, 4, 7, 10]
        .iter()
        .map(|k| file.kinds.get(k).copied().unwrap_or(0))
        .sum();
    assert_eq!(side_band, side + synth, "{:?}", file.kinds);
    assert_eq!(file.rounds, rounds);
    assert!(file.rounds >= 1);
    let names: Vec<&str> = file.attrs.iter().map(|a| a.name.as_str()).collect();
    assert!(names.contains(&"syscalls:sys_enter_getpgid"), "{names:?}");
    assert!(names.contains(&"bpf-output:notes"), "{names:?}");
    assert_eq!(names.last(), Some(&"dummy:u"));
    assert!(
        file.kinds.contains_key(&3),
        "COMM records: {:?}",
        file.kinds
    );
    assert!(
        file.kinds.contains_key(&10),
        "MMAP2 records: {:?}",
        file.kinds
    );
    for f in [1, 2, 3, 4, 5, 6, 7, 8, 11, 12] {
        assert!(
            file.features.contains(&f),
            "feature {f}: {:?}",
            file.features
        );
    }
    assert!(file.tracing_events.iter().any(|e| e == "sys_enter_getpgid"));
}

#[test]
fn pipe_mode_goes_through_perf_script() {
    let Some(s) = setup("pipe") else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let text = s.dir.join("sluice.txt");
    let args = record_args(&s, "-", &text);
    let mut sluice = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stream = sluice.stdout.take().unwrap();
    let perf = Command::new("perf")
        .args(["script", "-i", "-"])
        .stdin(stream)
        .output()
        .unwrap();
    let done = sluice.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{err}");
    // The workload's stdout went to stderr: stdout is the stream.
    assert!(err.contains("calls 20"), "{err}");
    assert!(perf.status.success());
    no_warnings("perf script -i -", &String::from_utf8_lossy(&perf.stderr));
    let ours = sluice_lines(&std::fs::read_to_string(&text).unwrap());
    same_samples(
        &perf_lines(&String::from_utf8_lossy(&perf.stdout), false),
        &ours,
    );
    // The same stream, kept, reads back record by record.
    let (code, out, err) = run(Command::new(env!("CARGO_BIN_EXE_sluice")).args(&args));
    assert_eq!(code, 0, "{err}");
    let parsed = reader::pipe(&out);
    let ours = sluice_lines(&std::fs::read_to_string(&text).unwrap());
    check_read_back(&parsed, &err, ours.len());
}

/// Symbolic links follow the rule of `-o`: one of root (or the user) is written where it
/// leads, the earlier file there kept as `.old`; one of another user is refused before
/// anything is recorded, and what it points to is left alone.
#[test]
fn foreign_symlinks_are_refused_and_an_earlier_file_is_kept_as_old() {
    let Some(s) = setup("links") else {
        return;
    };
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let text = s.dir.join("sluice.txt");
    let target = s.dir.join("elsewhere");
    std::fs::write(&target, b"keep me").unwrap();
    let link = s.dir.join("link.data");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&target, &link).unwrap();
    // The link belongs to user 65534 (nobody), as if another user had made it.
    rustix::fs::chownat(
        rustix::fs::CWD,
        &link,
        Some(rustix::fs::Uid::from_raw(65534)),
        None,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .unwrap();
    let args = record_args(&s, &link.display().to_string(), &text);
    let (code, _, err) = run(Command::new(env!("CARGO_BIN_EXE_sluice")).args(&args));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("symbolic link of user 65534"), "{err}");
    assert_eq!(std::fs::read(&target).unwrap(), b"keep me");

    // Root's own link, relative, is followed: the recording lands where it leads.
    let own = s.dir.join("own.data");
    let _ = std::fs::remove_file(&own);
    std::os::unix::fs::symlink("elsewhere", &own).unwrap();
    let args = record_args(&s, &own.display().to_string(), &text);
    let (code, _, err) = run(Command::new(env!("CARGO_BIN_EXE_sluice")).args(&args));
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::symlink_metadata(&own)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(&std::fs::read(&target).unwrap()[..8], b"PERFILE2");
    assert_eq!(
        std::fs::read(s.dir.join("elsewhere.old")).unwrap(),
        b"keep me"
    );

    let data = s.dir.join("again.data");
    let args = record_args(&s, &data.display().to_string(), &text);
    for _ in 0..2 {
        let (code, _, err) = run(Command::new(env!("CARGO_BIN_EXE_sluice")).args(&args));
        assert_eq!(code, 0, "{err}");
    }
    let old = std::fs::read(s.dir.join("again.data.old")).unwrap();
    let new = std::fs::read(&data).unwrap();
    assert_eq!(&old[..8], b"PERFILE2");
    assert_ne!(
        old, new,
        "the second recording replaced the first, kept as .old"
    );
    // No temporary file is left beside them.
    let left: Vec<_> = std::fs::read_dir(&s.dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A reader of perf.data written for this test from
/// tools/perf/Documentation/perf.data-file-format.txt and perf_event.h: it checks sizes
/// and offsets as it goes (any inconsistency panics the test).
mod reader {
    use std::collections::{BTreeMap, BTreeSet};

    #[derive(Debug, Default)]
    pub struct Attr {
        pub name: String,
        pub sample_type: u64,
        pub ids: Vec<u64>,
    }

    #[derive(Debug, Default)]
    pub struct Parsed {
        pub attrs: Vec<Attr>,
        pub samples: usize,
        pub rounds: usize,
        pub kinds: BTreeMap<u32, usize>,
        pub features: BTreeSet<u32>,
        pub tracing_events: Vec<String>,
    }

    fn u16_at(b: &[u8], at: usize) -> u16 {
        u16::from_ne_bytes(b[at..at + 2].try_into().unwrap())
    }
    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_ne_bytes(b[at..at + 4].try_into().unwrap())
    }
    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
    }

    /// `struct perf_header_string`: len, then NUL-terminated text padded to len.
    fn string(b: &[u8], at: &mut usize) -> String {
        let len = u32_at(b, *at) as usize;
        let s = &b[*at + 4..*at + 4 + len];
        *at += 4 + len;
        String::from_utf8(s[..s.iter().position(|&c| c == 0).unwrap()].to_vec()).unwrap()
    }

    /// The sample fields' size for `sample_type` (IDENTIFIER IP TID TIME ADDR ID
    /// STREAM_ID CPU PERIOD, then RAW), checked against the record's size.
    fn check_sample(rec: &[u8], attrs: &[Attr]) {
        let id = u64_at(rec, 8);
        let attr = attrs
            .iter()
            .find(|a| a.ids.contains(&id))
            .unwrap_or_else(|| panic!("sample id {id} of no attr"));
        let t = attr.sample_type;
        assert!(t & (1 << 16) != 0, "IDENTIFIER first");
        let mut at = 8;
        for bit in [16, 0, 1, 2, 3, 6, 9, 7, 8] {
            if t & (1 << bit) != 0 {
                at += 8;
            }
        }
        if t & (1 << 10) != 0 {
            let raw = u32_at(rec, at) as usize;
            at += 4 + raw;
        }
        assert_eq!(at, rec.len(), "sample of '{}' fills its record", attr.name);
    }

    fn records(b: &[u8], p: &mut Parsed) {
        let mut at = 0;
        while at < b.len() {
            let kind = u32_at(b, at);
            let size = u16_at(b, at + 6) as usize;
            assert!(
                size >= 8 && at + size <= b.len(),
                "record at {at}: size {size}"
            );
            let rec = &b[at..at + size];
            *p.kinds.entry(kind).or_default() += 1;
            match kind {
                9 => {
                    check_sample(rec, &p.attrs);
                    p.samples += 1;
                }
                68 => {
                    assert_eq!(size, 8);
                    p.rounds += 1;
                }
                // kernel and synthesized side-band: a whole number of words
                1 | 2 | 3 | 4 | 7 | 10 => assert_eq!(size % 8, 0, "kind {kind}"),
                _ => panic!("unexpected record type {kind} in the data"),
            }
            at += size;
        }
    }

    /// Reads tracing data; returns its length.
    fn tracing(t: &[u8], p: &mut Parsed) -> usize {
        assert_eq!(&t[..10], b"\x17\x08\x44tracing");
        let mut at = 10;
        let v = t[at..].iter().position(|&c| c == 0).unwrap();
        assert_eq!(&t[at..at + v], b"0.6");
        at += v + 1 + 2 + 4;
        for name in [&b"header_page\0"[..], b"header_event\0"] {
            assert_eq!(&t[at..at + name.len()], name);
            at += name.len();
            let n = u64_at(t, at) as usize;
            assert!(n > 100, "a whole header file");
            at += 8 + n;
        }
        let ftrace = u32_at(t, at);
        at += 4;
        for _ in 0..ftrace {
            at += 8 + u64_at(t, at) as usize;
        }
        let systems = u32_at(t, at);
        at += 4;
        for _ in 0..systems {
            at += t[at..].iter().position(|&c| c == 0).unwrap() + 1;
            let n = u32_at(t, at);
            at += 4;
            for _ in 0..n {
                let len = u64_at(t, at) as usize;
                let f = String::from_utf8_lossy(&t[at + 8..at + 8 + len]);
                let name = f.lines().next().unwrap().strip_prefix("name: ").unwrap();
                p.tracing_events.push(name.to_owned());
                at += 8 + len;
            }
        }
        at += 4 + u32_at(t, at) as usize; // kallsyms
        at += 4 + u32_at(t, at) as usize; // printk
        at += 8 + u64_at(t, at) as usize; // saved cmdlines
        at
    }

    fn event_desc(b: &[u8], p: &mut Parsed) {
        let nr = u32_at(b, 0) as usize;
        let attr_size = u32_at(b, 4) as usize;
        let mut at = 8;
        assert_eq!(nr, p.attrs.len());
        for i in 0..nr {
            let nr_ids = u32_at(b, at + attr_size) as usize;
            let mut s = at + attr_size + 4;
            let name = string(b, &mut s);
            let ids: Vec<u64> = (0..nr_ids).map(|k| u64_at(b, s + 8 * k)).collect();
            assert_eq!(ids, p.attrs[i].ids, "{name}");
            p.attrs[i].name = name;
            at = s + 8 * nr_ids;
        }
        assert_eq!(at, b.len());
    }

    fn feature(id: u32, body: &[u8], p: &mut Parsed) {
        p.features.insert(id);
        match id {
            1 => assert_eq!(tracing(body, p), body.len(), "tracing data read to its end"),
            12 => event_desc(body, p),
            3..=6 | 8 => {
                let mut at = 0;
                assert!(!string(body, &mut at).is_empty());
                assert_eq!(at, body.len());
            }
            _ => {}
        }
    }

    pub fn file(b: &[u8]) -> Parsed {
        assert_eq!(&b[..8], b"PERFILE2");
        assert_eq!(u64_at(b, 8), 104);
        let attr_size = u64_at(b, 16) as usize;
        let (attrs_off, attrs_len) = (u64_at(b, 24) as usize, u64_at(b, 32) as usize);
        let (data_off, data_len) = (u64_at(b, 40) as usize, u64_at(b, 48) as usize);
        let mut p = Parsed::default();
        for i in 0..attrs_len / attr_size {
            let a = &b[attrs_off + i * attr_size..attrs_off + (i + 1) * attr_size];
            let size = u32_at(a, 4) as usize;
            assert_eq!(size + 16, attr_size);
            let (ids_off, ids_len) = (u64_at(a, size) as usize, u64_at(a, size + 8) as usize);
            p.attrs.push(Attr {
                name: String::new(),
                sample_type: u64_at(a, 24),
                ids: (0..ids_len / 8)
                    .map(|k| u64_at(b, ids_off + 8 * k))
                    .collect(),
            });
        }
        records(&b[data_off..data_off + data_len], &mut p);
        let bits: Vec<u32> = (0..256)
            .filter(|&i| u64_at(b, 72 + (i / 64) * 8) & (1 << (i % 64)) != 0)
            .map(|i| i as u32)
            .collect();
        let mut end = data_off + data_len + 16 * bits.len();
        for (k, id) in bits.iter().enumerate() {
            let at = data_off + data_len + 16 * k;
            let (off, len) = (u64_at(b, at) as usize, u64_at(b, at + 8) as usize);
            assert_eq!(off, end, "features follow their table in order");
            feature(*id, &b[off..off + len], &mut p);
            end = off + len;
        }
        assert_eq!(end, b.len(), "nothing after the last feature");
        p
    }

    pub fn pipe(b: &[u8]) -> Parsed {
        assert_eq!(&b[..8], b"PERFILE2");
        assert_eq!(u64_at(b, 8), 16);
        let mut p = Parsed::default();
        let mut at = 16;
        let mut data = Vec::new();
        while at < b.len() {
            let kind = u32_at(b, at);
            let size = u16_at(b, at + 6) as usize;
            let rec = &b[at..at + size];
            match kind {
                64 => {
                    let asize = u32_at(rec, 12) as usize;
                    let ids = (8 + asize..size)
                        .step_by(8)
                        .map(|o| u64_at(rec, o))
                        .collect();
                    p.attrs.push(Attr {
                        name: String::new(),
                        sample_type: u64_at(rec, 8 + 24),
                        ids,
                    });
                }
                66 => {
                    let len = u32_at(rec, 8) as usize;
                    let t = &b[at + size..at + size + len];
                    p.features.insert(1);
                    let used = tracing(t, &mut p);
                    assert!(len - used < 8 && t[used..].iter().all(|&c| c == 0));
                    at += len;
                }
                67 => {
                    p.features.insert(2);
                }
                80 => {
                    let id = u64_at(rec, 8) as u32;
                    let body = &rec[16..];
                    if id == 12 {
                        let n = event_desc_len(body);
                        feature(id, &body[..n], &mut p);
                    } else if (3..=6).contains(&id) || id == 8 {
                        let mut s = 0;
                        string(body, &mut s);
                        p.features.insert(id);
                    } else {
                        p.features.insert(id);
                    }
                }
                _ => data.extend_from_slice(rec),
            }
            at += size;
        }
        records(&data, &mut p);
        p
    }

    fn event_desc_len(b: &[u8]) -> usize {
        let nr = u32_at(b, 0) as usize;
        let attr_size = u32_at(b, 4) as usize;
        let mut at = 8;
        for _ in 0..nr {
            let nr_ids = u32_at(b, at + attr_size) as usize;
            let mut s = at + attr_size + 4;
            string(b, &mut s);
            at = s + 8 * nr_ids;
        }
        at
    }
}
