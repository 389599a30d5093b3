//! Side by side with a real tool: Debian's libbpf-tools `mountsnoop` (`/usr/sbin`, package
//! pinned in `tests/real/objects.sha256`) and `sluice record -e mountsnoop.bpf.o` (the same
//! package's object, fetched by `tests/real/fetch.sh`) run at the same time on a workload
//! of tmpfs mounts and umounts. The ring buffer `events` must give sluice the same events,
//! with the same fields, as the real tool's lines.
//!
//! The object's BTF does not describe its `struct event` (the tool's `heap` map is declared
//! by `key_size`/`value_size`), so sluice prints the records raw; the layout below is
//! libbpf-tools' `mountsnoop.h` (0.26), and the record's size must be that struct's.
//!
//! Gated on root and `SLUICE_REAL_OBJS` (the fetch cache) like the other real-object
//! tests; says so loudly when skipped.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `struct event` of mountsnoop.h: offsets of its members.
const COMM: usize = 32;
const FS: usize = 48;
const SRC: usize = 56;
const DEST: usize = SRC + 4096;
const DATA: usize = DEST + 4096;
const OP: usize = DATA + 512;
/// sizeof(struct event): 8764 rounded up to its 8-byte alignment.
const EVENT_SIZE: usize = 8768;

fn gate(test: &str) -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("SLUICE_REAL_OBJS").map(PathBuf::from) else {
        eprintln!("\n*** SKIPPED {test}: SLUICE_REAL_OBJS is not set (tests/real/fetch.sh) ***\n");
        return None;
    };
    let why = if !rustix::process::geteuid().is_root() {
        Some("not root")
    } else if !Path::new("/usr/sbin/mountsnoop").exists() {
        Some("no /usr/sbin/mountsnoop (apt-get install libbpf-tools)")
    } else {
        None
    };
    match why {
        None => Some(dir.join("libbpf-tools/mountsnoop.bpf.o")),
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

fn hex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap())
}

/// One sluice record as mountsnoop prints it (`mountsnoop.c`, `print_event`):
/// `COMM PID TID MNT_NS CALL`.
fn as_mountsnoop_line(d: &[u8]) -> String {
    let flags = u64::from_ne_bytes(d[8..16].try_into().unwrap());
    let (pid, tid, mnt_ns) = (u32_at(d, 16), u32_at(d, 20), u32_at(d, 24));
    let ret = u32_at(d, 28) as i32;
    let call = match u32_at(d, OP) {
        0 => format!(
            "mount(\"{}\", \"{}\", \"{}\", {flags:#x}, \"{}\") = {ret}",
            cstr(&d[SRC..DEST]),
            cstr(&d[DEST..DATA]),
            cstr(&d[FS..SRC]),
            cstr(&d[DATA..OP])
        ),
        1 => format!("umount(\"{}\", {flags:#x}) = {ret}", cstr(&d[DEST..DATA])),
        op => format!("op {op}"),
    };
    format!("{} {pid} {tid} {mnt_ns} {call}", cstr(&d[COMM..FS]))
}

/// fds of `pid` that are perf events or BPF links (what attaching makes).
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

#[test]
fn mountsnoop_and_sluice_see_the_same_mounts() {
    let Some(obj) = gate("mountsnoop_and_sluice_see_the_same_mounts") else {
        return;
    };
    const ROUNDS: usize = 5;
    let me = std::process::id();
    let dir = std::env::temp_dir().join(format!("sluice-mountsnoop-{me}"));
    std::fs::create_dir_all(&dir).unwrap();
    let out = std::env::temp_dir().join(format!("sluice-mountsnoop-{me}.json"));
    let _ = std::fs::remove_file(&out);

    let real = Command::new("/usr/sbin/mountsnoop")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ours = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["record", "--json", "-a", "-o", out.to_str().unwrap(), "-e"])
        .arg(&obj)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Both attached: sluice creates `-o FILE` once its events are enabled; mountsnoop has
    // its four tracepoint links.
    let until = Instant::now() + Duration::from_secs(60);
    while !(out.exists() && attach_fds(real.id()) >= 4) {
        assert!(Instant::now() < until, "the tools never attached");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(200));
    for i in 0..ROUNDS {
        let src = format!("sluice-ms-{me}-{i}");
        let st = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={}k", 64 * (i + 1)),
                &src,
            ])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(st.success());
        let st = Command::new("umount").arg(&dir).status().unwrap();
        assert!(st.success());
    }
    std::thread::sleep(Duration::from_millis(300));
    interrupt(ours.id());
    interrupt(real.id());
    let ours = ours.wait_with_output().unwrap();
    let real = real.wait_with_output().unwrap();
    let ours_err = String::from_utf8_lossy(&ours.stderr).into_owned();
    assert_eq!(ours.status.code(), Some(0), "{ours_err}");
    let _ = std::fs::remove_dir(&dir);

    let dir_s = dir.display().to_string();
    let src_mark = format!("\"sluice-ms-{me}-");
    let umount_mark = format!("umount(\"{dir_s}\"");
    let mine = |l: &&str| (l.contains(&dir_s) && l.contains(&src_mark)) || l.contains(&umount_mark);
    let real_text = String::from_utf8_lossy(&real.stdout).into_owned();
    let real_lines: Vec<String> = real_text
        .lines()
        .filter(mine)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    let json = std::fs::read_to_string(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    let mut sizes = Vec::new();
    let our_lines: Vec<String> = json
        .lines()
        .filter(|l| l.starts_with("{\"type\":\"record\",\"event\":\"ringbuf:events\""))
        .map(|l| {
            let data = l
                .split("\"data\":\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            let d = hex(data);
            sizes.push(d.len());
            as_mountsnoop_line(&d)
        })
        .collect();
    let our_lines: Vec<String> = our_lines
        .iter()
        .map(String::as_str)
        .filter(mine)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    eprintln!(
        "mountsnoop side by side: real tool {} lines, sluice {} records ({} of ours), \
         {} equal\n--- real\n{}\n--- sluice\n{}",
        real_lines.len(),
        sizes.len(),
        our_lines.len(),
        real_lines
            .iter()
            .zip(&our_lines)
            .filter(|(a, b)| a == b)
            .count(),
        real_lines.join("\n"),
        our_lines.join("\n")
    );
    assert!(
        sizes.iter().all(|&s| s == EVENT_SIZE),
        "record sizes {sizes:?}"
    );
    assert_eq!(real_lines.len(), 2 * ROUNDS, "{real_text}");
    assert_eq!(our_lines, real_lines, "{ours_err}");
    let summary = ours_err
        .lines()
        .find(|l| l.starts_with("sluice record:"))
        .unwrap();
    assert!(
        summary.contains("ring-buffer records carry no pid/cpu/time"),
        "{summary}"
    );
}
