//! `sluice record --metrics`: scraped by a real Prometheus server (Debian's `prometheus`),
//! the values read back through its HTTP query API; `promtool check metrics` on what a
//! plain client gets; hostile clients (a thousand that never send, a 1 MiB header line,
//! one that never reads) cost the recording nothing and grow nothing without bound.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{fixture, probes_of, skip};
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The probed function (the uprobe is on this test binary).
#[no_mangle]
#[inline(never)]
pub extern "C" fn sluice_metrics_target(a: u64, b: u64, c: u64, d: u64) -> u64 {
    std::hint::black_box(a ^ b ^ c ^ d)
}

/// The two tests probe the same function of this process: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn ready() -> bool {
    if !rustix::process::geteuid().is_root() {
        skip("metrics: not root");
        return false;
    }
    for tool in ["prometheus", "promtool", "curl"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            skip(&format!("metrics: no {tool} (Debian's prometheus, curl)"));
            return false;
        }
    }
    true
}

/// A free loopback port (bound then released: good enough for one test at a time).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `sluice record --metrics PORT -p THIS` with the uprobe on [`sluice_metrics_target`],
/// once its probe exists.
fn start_sluice(port: u16) -> Child {
    let exe = std::env::current_exe().unwrap();
    let spec = format!(
        "p_words=uprobe/{}:sluice_metrics_target(u64, u64, u64, u64)",
        exe.display()
    );
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "record",
            "-e",
            &fixture("dwarf_words.o"),
            "--event",
            &spec,
            "--metrics",
            &port.to_string(),
            "-p",
            &std::process::id().to_string(),
            "--duration",
            "120",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while probes_of(child.id()).is_empty() || TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < until,
            "sluice never made its probe and server"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Stops sluice (SIGTERM) and returns its stdout and stderr.
fn stop(child: Child) -> (String, String) {
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn curl(url: &str, accept: Option<&str>) -> String {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--max-time", "10", url]);
    if let Some(a) = accept {
        cmd.args(["-H", &format!("Accept: {a}")]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "curl {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The value of the one series an instant query returns (`None`: no series yet).
fn query(prom: u16, q: &str) -> Option<f64> {
    let url = format!(
        "http://127.0.0.1:{prom}/api/v1/query?query={}",
        q.bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    );
    let body = curl(&url, None);
    assert!(body.contains("\"status\":\"success\""), "{body}");
    // "value":[1733100000.123,"42"]
    let at = body.find("\"value\":[")?;
    let rest = &body[at..];
    let v = rest.split('"').nth(3)?;
    v.parse().ok()
}

struct Prometheus {
    child: Child,
    dir: std::path::PathBuf,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_prometheus(target: u16) -> (Prometheus, u16) {
    let dir = std::env::temp_dir().join(format!("sluice-prom-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: sluice\n    \
             static_configs:\n      - targets: ['127.0.0.1:{target}']\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("log")).unwrap())
        .spawn()
        .unwrap();
    let prom = Prometheus { child, dir };
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let up = Command::new("curl")
            .args([
                "-sf",
                "--max-time",
                "2",
                &format!("http://127.0.0.1:{port}/-/ready"),
            ])
            .output()
            .is_ok_and(|o| o.status.success());
        if up {
            break;
        }
        assert!(
            Instant::now() < until,
            "prometheus never became ready: {}",
            std::fs::read_to_string(prom.dir.join("log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    (prom, port)
}

/// Waits until `q` has value `want` in Prometheus (or fails after 30 s with the last value).
fn wait_for(prom: u16, q: &str, want: f64) {
    let until = Instant::now() + Duration::from_secs(30);
    let mut last = None;
    while Instant::now() < until {
        last = query(prom, q);
        if last == Some(want) {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("{q}: want {want}, Prometheus has {last:?}");
}

#[test]
fn prometheus_scrapes_what_sluice_counted() {
    if !ready() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const CALLS: u64 = 37;
    std::hint::black_box(sluice_metrics_target(1, 2, 3, 4));
    let port = free_port();
    let sluice = start_sluice(port);
    for i in 0..CALLS {
        std::hint::black_box(sluice_metrics_target(i, 2, 3, 4));
    }
    let (prom, prom_port) = start_prometheus(port);
    wait_for(prom_port, "up{job=\"sluice\"}", 1.0);
    // The probe's samples and the program's outputs: one each per call, as counters.
    let samples = "sum(sluice_samples_total{event=~\"sluice:.*\"})";
    wait_for(prom_port, samples, CALLS as f64);
    wait_for(
        prom_port,
        "sluice_samples_total{event=\"bpf-output:out\"}",
        CALLS as f64,
    );
    wait_for(prom_port, "sluice_programs_attached", 1.0);
    // Counters stay counters: more calls, higher values, never reset by scrapes.
    for i in 0..CALLS {
        std::hint::black_box(sluice_metrics_target(i, 2, 3, 4));
    }
    wait_for(prom_port, samples, 2.0 * CALLS as f64);
    // The plain format for clients that do not ask for OpenMetrics, as promtool lints it.
    let plain = curl(&format!("http://127.0.0.1:{port}/metrics"), None);
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lint.stdin
        .take()
        .unwrap()
        .write_all(plain.as_bytes())
        .unwrap();
    let lint = lint.wait_with_output().unwrap();
    assert!(
        lint.status.success(),
        "promtool: {}{}\n{plain}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
    let om = curl(
        &format!("http://127.0.0.1:{port}/metrics"),
        Some("application/openmetrics-text;version=1.0.0"),
    );
    assert!(om.ends_with("# EOF\n"), "{om}");
    drop(prom);
    let (_, err) = stop(sluice);
    let summary = err
        .lines()
        .find(|l| l.starts_with("sluice record:"))
        .expect(&err);
    // What Prometheus saw is what sluice counted: a probe sample and an output per call.
    assert!(
        summary.contains(&format!(": {} samples", 4 * CALLS)),
        "{summary}"
    );
    eprintln!("metrics: {summary}");
}

/// The kB of resident memory of `pid`.
fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn hostile_clients_cost_the_recording_nothing() {
    if !ready() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const CALLS: u64 = 20_000;
    std::hint::black_box(sluice_metrics_target(1, 2, 3, 4));
    let port = free_port();
    let sluice = start_sluice(port);
    let pid = sluice.id();
    let rss0 = rss_kb(pid);
    // A thousand connections that never send a request.
    let idle: Vec<TcpStream> = (0..1000)
        .filter_map(|_| TcpStream::connect(("127.0.0.1", port)).ok())
        .collect();
    // A 1 MiB header line, sent by a thread (the server stops reading it early).
    let flood = std::thread::spawn(move || {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut line = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
        line.resize(1 << 20, b'a');
        let _ = s.write_all(&line);
        let mut answer = String::new();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.read_to_string(&mut answer);
        answer
    });
    // Clients that ask and never read their answer.
    let deaf: Vec<TcpStream> = (0..50)
        .filter_map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
            s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").ok()?;
            Some(s)
        })
        .collect();
    // Meanwhile the workload runs, and a real scraper is still answered.
    for i in 0..CALLS {
        std::hint::black_box(sluice_metrics_target(i, 2, 3, 4));
    }
    let answer = flood.join().unwrap();
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{answer}"
    );
    let t0 = Instant::now();
    let body = curl(&format!("http://127.0.0.1:{port}/metrics"), None);
    let scrape = t0.elapsed();
    assert!(body.contains("sluice_samples_total"), "{body}");
    let rss1 = rss_kb(pid);
    drop(idle);
    drop(deaf);
    let (_, err) = stop(sluice);
    let summary = err
        .lines()
        .find(|l| l.starts_with("sluice record:"))
        .expect(&err);
    eprintln!(
        "hostile: scrape answered in {scrape:?} beside 1000 idle, 50 deaf and a 1 MiB header; \
         RSS {rss0} -> {rss1} kB; {summary}"
    );
    // Nothing lost, every call recorded (probe sample + output per call).
    assert!(
        summary.contains(&format!("{} samples", 2 * CALLS)),
        "{summary}"
    );
    assert!(summary.contains("; lost 0 "), "{summary}");
    // Memory bounded: 64 clients of 8 KiB and an answer each, not 1,000 or 1 MiB.
    assert!(rss1 < rss0 + 8 * 1024, "RSS {rss0} -> {rss1} kB");
}

/// `getppid(2)` `n` times (the maps fixture counts each of this process's).
fn getppids(n: u64) {
    for _ in 0..n {
        std::hint::black_box(rustix::process::getppid());
    }
}

/// `promtool check metrics` on `text`.
fn promtool_check(text: &str) {
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lint.stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let lint = lint.wait_with_output().unwrap();
    assert!(
        lint.status.success(),
        "promtool: {}{}\n{text}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
}

/// The maps of `tests/bpf/maps_read.o` as families: a counter map incremented a known
/// number of times equals that number in Prometheus, labels from the key's BTF (`pid`,
/// `comm`; an enum key by enumerator name), a struct value one family per member, the
/// log2 histogram's `_count` the events — and all of them stay counters across
/// `--interval 0.2 --clear`, which empties the maps five times a second.
#[test]
fn prometheus_scrapes_the_maps() {
    if !ready() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const CALLS: u64 = 250;
    let port = free_port();
    let dumps = std::env::temp_dir().join(format!("sluice-maps-{}.txt", std::process::id()));
    let sluice = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "record",
            "-e",
            &fixture("maps_read.o"),
            "--metrics",
            &port.to_string(),
            "-p",
            &std::process::id().to_string(),
            "--duration",
            "120",
            "--interval",
            "0.2",
            "--clear",
            "-o",
            &dumps.display().to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "sluice never served");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Attached before the server starts: every call from here on is counted.
    getppids(CALLS);
    let (prom, prom_port) = start_prometheus(port);
    wait_for(prom_port, "up{job=\"sluice\"}", 1.0);
    let pid = std::process::id();
    wait_for(
        prom_port,
        &format!("sum(maps_read_calls_total{{pid=\"{pid}\"}})"),
        CALLS as f64,
    );
    wait_for(prom_port, "maps_read_totals_hits_total", CALLS as f64);
    wait_for(
        prom_port,
        "sum(maps_read_ops_total{key=~\"OP_ODD|OP_EVEN\"})",
        CALLS as f64,
    );
    wait_for(prom_port, "maps_read_lat_count", CALLS as f64);
    wait_for(prom_port, "maps_read_lat_bucket{le=\"+Inf\"}", CALLS as f64);
    // More calls after clears: the counters went on, none went back.
    getppids(CALLS);
    wait_for(
        prom_port,
        &format!("sum(maps_read_calls_total{{pid=\"{pid}\"}})"),
        2.0 * CALLS as f64,
    );
    wait_for(prom_port, "maps_read_lat_count", 2.0 * CALLS as f64);
    wait_for(
        prom_port,
        "sum(resets(maps_read_calls_total[5m])) + sum(resets(maps_read_lat_count[5m]))",
        0.0,
    );
    let plain = curl(&format!("http://127.0.0.1:{port}/metrics"), None);
    promtool_check(&plain);
    // The histogram has buckets and a count, never a made-up sum.
    assert!(
        plain.contains("maps_read_lat_bucket{key=\"0\",le=\"1\"}"),
        "{plain}"
    );
    assert!(!plain.contains("maps_read_lat_sum"), "{plain}");
    let om = curl(
        &format!("http://127.0.0.1:{port}/metrics"),
        Some("application/openmetrics-text;version=1.0.0"),
    );
    assert!(om.contains("# TYPE maps_read_lat histogram\n"), "{om}");
    assert!(om.ends_with("# EOF\n"), "{om}");
    drop(prom);
    let (_, err) = stop(sluice);
    let text = std::fs::read_to_string(&dumps).unwrap();
    let _ = std::fs::remove_file(&dumps);
    // The interval dumps went to -o, each with its time, and were emptied in between:
    // what they show of `calls` adds up to every call.
    let shown: u64 = text
        .lines()
        .filter(|l| l.contains(&format!("pid={pid} ")))
        .filter_map(|l| l.rsplit(": ").next()?.trim().parse::<u64>().ok())
        .sum();
    assert_eq!(shown, 2 * CALLS, "{text}\n{err}");
    eprintln!("maps metrics: {CALLS} x 2 calls seen by Prometheus as counters across clears");
}
