//! Map reading through the binary, as users run it: `sluice record` printing a
//! 10,000-entry hash map at exit (beside the same run with the map empty: the difference
//! is the dump), and a `--metrics` scrape of that map (10,000 keys, two members each:
//! 20,000 samples, labels from the key's BTF).
//!
//! The map is `tests/bpf/maps_bench.o`'s `sluice_bench_flows`, pinned by name under a
//! pin root of this benchmark's and filled here (keys `{pid, comm}`, values
//! `{packets, bytes}`); `--pin-root` makes sluice reuse it. Needs root and a bpffs at
//! `/sys/fs/bpf`; without them each bench says so and measures nothing.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use std::ffi::CString;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const ENTRIES: u32 = 10_000;
const MAP: &str = "sluice_bench_flows";

fn main() {
    divan::main();
    for root in [root(true), root(false)] {
        let _ = std::fs::remove_file(root.join(MAP));
        let _ = std::fs::remove_dir(&root);
    }
}

fn object() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/bpf/maps_bench.o")
        .display()
        .to_string()
}

fn root(full: bool) -> PathBuf {
    PathBuf::from(format!(
        "/sys/fs/bpf/sluice-bench-maps-{}-{}",
        std::process::id(),
        if full { "full" } else { "empty" }
    ))
}

fn record(root: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.args(["record", "-e", &object(), "--pin-root"])
        .arg(root)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// The pinned map under `root`, made by a first run, filled with [`ENTRIES`] keys when
/// `full`; `None` (said once) without root or a bpffs.
fn pinned(full: bool) -> Option<PathBuf> {
    if !rustix::process::geteuid().is_root() || !Path::new("/sys/fs/bpf").is_dir() {
        eprintln!("maps bench: needs root and a bpffs at /sys/fs/bpf; nothing measured");
        return None;
    }
    let root = root(full);
    if root.join(MAP).exists() {
        return Some(root);
    }
    let st = record(&root, &["--", "true"]).status().ok()?;
    assert!(st.success(), "maps bench: sluice record failed");
    if full {
        let path = CString::new(root.join(MAP).display().to_string()).ok()?;
        let (map, _) = sluice_runtime::sys::bpf::obj_get_map(&path).expect("pinned map");
        for i in 0..ENTRIES {
            let mut key = [0u8; 20];
            key[..4].copy_from_slice(&i.to_ne_bytes());
            let comm = format!("task-{}", i % 97);
            key[4..4 + comm.len()].copy_from_slice(comm.as_bytes());
            let mut value = [0u8; 16];
            value[..8].copy_from_slice(&u64::from(i * 3).to_ne_bytes());
            value[8..].copy_from_slice(&u64::from(i * 1500).to_ne_bytes());
            map.update(&key, &value, 0).expect("update");
        }
    }
    Some(root)
}

/// `sluice record -- true` with the 10,000-entry map: loaded, run, the map printed at exit.
#[divan::bench(sample_count = 20)]
fn record_and_dump_10k_entries(bencher: divan::Bencher<'_, '_>) {
    let Some(root) = pinned(true) else { return };
    bencher.bench_local(|| {
        let st = record(&root, &["--", "true"]).status().unwrap();
        assert!(st.success());
    });
}

/// The same run with the map empty: what the dump adds is the difference.
#[divan::bench(sample_count = 20)]
fn record_empty_map(bencher: divan::Bencher<'_, '_>) {
    let Some(root) = pinned(false) else { return };
    bencher.bench_local(|| {
        let st = record(&root, &["--", "true"]).status().unwrap();
        assert!(st.success());
    });
}

/// One exporter serving the 10,000-key map, for the scrapes.
struct Exporter {
    child: Child,
    port: u16,
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn exporter() -> Option<&'static std::sync::Mutex<Exporter>> {
    static ONE: OnceLock<Option<std::sync::Mutex<Exporter>>> = OnceLock::new();
    ONE.get_or_init(|| {
        let root = pinned(true)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let child = record(&root, &["--metrics", &port.to_string(), "-a"])
            .spawn()
            .ok()?;
        let until = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(std::sync::Mutex::new(Exporter { child, port }))
    })
    .as_ref()
}

fn scrape(port: u16) -> usize {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text\r\n\r\n")
        .unwrap();
    let mut body = Vec::with_capacity(2 << 20);
    s.read_to_end(&mut body).unwrap();
    body.len()
}

/// `GET /metrics` of the 10,000-key map (read through its fd at scrape time).
#[divan::bench(sample_count = 20)]
fn scrape_10k_keys(bencher: divan::Bencher<'_, '_>) {
    let Some(e) = exporter() else { return };
    let port = e.lock().unwrap().port;
    let bytes = scrape(port);
    assert!(bytes > 100_000, "a scrape of {bytes} bytes");
    bencher.bench_local(|| scrape(port));
    // The exporter's own CPU per scrape (user + system, from its /proc stat), over 20.
    let pid = e.lock().unwrap().child.id();
    let cpu = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let after = stat.rsplit(')').next().unwrap_or_default();
        let f: Vec<u64> = after
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        // utime and stime, fields 14 and 15 of proc_pid_stat(5): the numbers after the
        // comm without the state letter, from ppid (field 4) on, hold them at 10 and 11.
        f.get(10).zip(f.get(11)).map_or(0, |(u, s)| u + s)
    };
    let before = cpu();
    for _ in 0..20 {
        scrape(port);
    }
    let ticks = rustix::param::clock_ticks_per_second();
    eprintln!(
        "scrape_10k_keys: exporter CPU {:.1} ms per scrape (20 scrapes)",
        (cpu() - before) as f64 * 1000.0 / ticks as f64 / 20.0
    );
    // The exporter ends with the process (its Drop does not run for a static): stop it.
    let mut e = e.lock().unwrap();
    if let Some(pid) = rustix::process::Pid::from_raw(e.child.id() as i32) {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
    let _ = e.child.wait();
}
