//! Kernel tests of `usdt/PATH:PROVIDER:NAME`: `tests/bpf/usdt.o`, built against libbpf's
//! own `usdt.bpf.h` (`BPF_USDT`), attached to `tests/usdt/usdt_demo.c` (sys/sdt.h probes:
//! four arguments of different sizes and signs at two sites, and a semaphore-guarded
//! probe), built here with `cc` at `-O2` (register operands) and `-O0` (memory operands).
//! Oracles: the values the program passed (it is deterministic), its own view of the
//! semaphore (set only while attached), and `readelf -n` for the notes.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use sluice_runtime::attach::{usdt_sites, Scope};
use sluice_runtime::load::UpdateMode;
use sluice_runtime::session::{ObjectSource, Session, SessionOptions, SourceKind};

static SERIAL: Mutex<()> = Mutex::new(());

const ITERATIONS: i64 = 10;

fn build(opt: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/usdt");
    let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("usdt_demo{opt}"));
    let out = Command::new("cc")
        .arg(opt)
        .arg("-o")
        .arg(&bin)
        .arg(dir.join("usdt_demo.c"))
        .arg(dir.join("usdt_args.c"))
        .output();
    match out {
        Ok(o) if o.status.success() => Some(bin),
        other => {
            let why = match other {
                Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                Err(e) => e.to_string(),
            };
            let what = format!("cc cannot build usdt_demo (systemtap-sdt-dev?): {why}");
            assert!(!common::required(), "{what} (SLUICE_REQUIRE_KERNEL=1)");
            eprintln!("\n*** SKIPPED {what} ***\n");
            None
        }
    }
}

/// `readelf -n`'s stapsdt notes: (provider, name, location, semaphore, arguments).
fn readelf_notes(bin: &Path) -> Vec<(String, String, u64, u64, String)> {
    let out = Command::new("readelf").arg("-n").arg(bin).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut notes = Vec::new();
    let mut cur: Option<(String, String, u64, u64)> = None;
    let hex = |s: &str| {
        u64::from_str_radix(s.trim().trim_end_matches(',').trim_start_matches("0x"), 16).unwrap()
    };
    let mut provider = String::new();
    let mut name = String::new();
    for line in text.lines().map(str::trim) {
        if let Some(p) = line.strip_prefix("Provider: ") {
            provider = p.to_owned();
        } else if let Some(n) = line.strip_prefix("Name: ") {
            name = n.to_owned();
        } else if let Some(l) = line.strip_prefix("Location: ") {
            let parts: Vec<&str> = l.split_whitespace().collect();
            // Location: 0x.., Base: 0x.., Semaphore: 0x..
            cur = Some((provider.clone(), name.clone(), hex(parts[0]), hex(parts[4])));
        } else if let Some(a) = line.strip_prefix("Arguments:") {
            let (p, n, l, s) = cur.take().unwrap();
            notes.push((p, n, l, s, a.trim().to_owned()));
        }
    }
    notes
}

#[test]
fn notes_match_readelf() {
    // Under the lock: the other test writes the same binary.
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(bin) = build("-O2") else { return };
    let notes = readelf_notes(&bin);
    assert_eq!(notes.len(), 3, "{notes:?}");
    for probe in ["args", "guarded"] {
        let want: Vec<_> = notes.iter().filter(|n| n.1 == probe).collect();
        let got = usdt_sites(&bin, "sluice", probe).unwrap();
        assert_eq!(got.len(), want.len(), "{probe}");
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(
                (g.address, g.semaphore, g.args.as_str()),
                (w.2, w.3, w.4.as_str())
            );
            assert_eq!(g.semaphore_offset.is_some(), w.3 != 0);
        }
    }
    assert_eq!(usdt_sites(&bin, "sluice", "args").unwrap().len(), 2);
    let e = usdt_sites(&bin, "sluice", "nope").unwrap_err().to_string();
    assert!(
        e.contains("sluice:nope") && e.contains("no such probe"),
        "{e}"
    );
    let e = usdt_sites(Path::new("/bin/true"), "sluice", "args")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/bin/true") && e.contains(".note.stapsdt"),
        "{e}"
    );
}

fn recorded(s: &Session, slot: u32) -> [i64; 6] {
    let b = s.objects()[0]
        .map("recs")
        .unwrap()
        .get_bytes(&slot.to_ne_bytes())
        .unwrap()
        .unwrap();
    std::array::from_fn(|i| i64::from_ne_bytes(b[i * 8..i * 8 + 8].try_into().unwrap()))
}

fn count(s: &Session, slot: u32) -> u64 {
    s.objects()[0]
        .map("counts")
        .unwrap()
        .get::<u32, u64>(&slot)
        .unwrap()
        .unwrap_or(0)
}

/// Runs the usdt_demo built with `opt` under both programs: spec ids from the BPF cookie,
/// or (`cookies` false) from `__bpf_usdt_ip_to_spec_id` by the probe's address in the
/// process (`-p`: the demo is a PIE), as on a kernel without cookies.
fn run(opt: &str, cookies: bool) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(bin) = build(opt) else { return };
    let mut child = Command::new(&bin)
        .arg(ITERATIONS.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready semaphore=0");

    let mut opts = SessionOptions::default();
    for (prog, probe) in [("on_args", "args"), ("on_guarded", "guarded")] {
        opts.events.insert(
            prog.into(),
            format!("usdt/{}:sluice:{probe}", bin.display()),
        );
    }
    if !cookies {
        opts.load.without_bpf_cookie = true;
        opts.scope = Some(Scope::Process {
            pid: child.id() as i32,
        });
    }
    let object = ObjectSource {
        name: "usdt.o".into(),
        bytes: common::fixture("usdt.o"),
    };
    let s = Session::start(&[object], &opts).expect("session");
    if !cookies {
        // One address per site (two of `args`, one of `guarded`), each the site's file
        // offset where the demo's text is mapped.
        let ips = s.objects()[0].map("__bpf_usdt_ip_to_spec_id").unwrap();
        let mut keys: Vec<i64> = ips.keys::<i64>().map(Result::unwrap).collect();
        keys.sort_unstable();
        let maps = std::fs::read_to_string(format!("/proc/{}/maps", child.id())).unwrap();
        let text = maps
            .lines()
            .find(|l| l.contains(" r-xp ") && l.ends_with(bin.to_str().unwrap()))
            .unwrap();
        let start = u64::from_str_radix(text.split('-').next().unwrap(), 16).unwrap();
        let offset = u64::from_str_radix(text.split_whitespace().nth(2).unwrap(), 16).unwrap();
        let mut want: Vec<i64> = ["args", "guarded"]
            .iter()
            .flat_map(|p| usdt_sites(&bin, "sluice", p).unwrap())
            .map(|site| (start - offset + site.file_offset) as i64)
            .collect();
        want.sort_unstable();
        eprintln!("usdt {opt} without cookies: ip -> spec id keys {keys:x?}");
        assert_eq!(keys, want);
    }
    let hooks: Vec<_> = s
        .sources()
        .iter()
        .filter(|x| matches!(x.kind, SourceKind::Hook { .. }))
        .map(|x| x.name.clone())
        .collect();
    assert_eq!(hooks.len(), 2, "{hooks:?}");
    s.objects()[0]
        .map("target_tgid")
        .unwrap()
        .update(&0u32, &child.id(), UpdateMode::Any)
        .unwrap();
    stdin.write_all(b"go\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(
        line.trim(),
        format!("enabled={ITERATIONS}"),
        "semaphore while attached"
    );

    let (args_hits, guarded_hits) = (count(&s, 0), count(&s, 1));
    eprintln!("usdt {opt}: args {args_hits} hits, guarded {guarded_hits} hits");
    assert_eq!(args_hits, ITERATIONS as u64 + 1);
    assert_eq!(guarded_hits, ITERATIONS as u64);
    assert_eq!(count(&s, 2), 2 * ITERATIONS as u64 + 1);
    let mut slot = 0u32;
    for i in 0..ITERATIONS {
        let a = -1000 - i;
        let b = (0x1_0000_0000u64 * i as u64 + 7) as i64;
        let c = i - 5;
        let d = (250 + i) & 0xff;
        assert_eq!(recorded(&s, slot), [1, 4, a, b, c, d], "args #{i}");
        assert_eq!(recorded(&s, slot + 1)[..4], [2, 2, i, -i], "guarded #{i}");
        slot += 2;
    }
    assert_eq!(
        recorded(&s, slot),
        [1, 4, -7, 42, -1, 255],
        "the constant site"
    );
    drop(s);
    stdin.write_all(b"go\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(
        line.trim(),
        "after=0",
        "semaphore released with the session"
    );
    assert!(child.wait().unwrap().success());
}

#[test]
fn usdt_arguments_semaphore_and_counts_are_exact() {
    if !common::kernel("usdt_arguments_semaphore_and_counts_are_exact") {
        return;
    }
    if cfg!(not(target_arch = "x86_64")) {
        eprintln!("SKIPPED: usdt.o is built for x86 pt_regs");
        return;
    }
    run("-O2", true);
    run("-O0", true);
}

#[test]
fn without_bpf_cookies_spec_ids_come_by_address_and_values_are_exact() {
    if !common::kernel("without_bpf_cookies_spec_ids_come_by_address_and_values_are_exact") {
        return;
    }
    if cfg!(not(target_arch = "x86_64")) {
        eprintln!("SKIPPED: usdt.o is built for x86 pt_regs");
        return;
    }
    run("-O2", false);
    run("-O0", false);
}
