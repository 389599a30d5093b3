//! Kernel tests of `uprobe.multi/PATH:PATTERN` and `uretprobe.multi/PATH:PATTERN`:
//! `tests/bpf/uprobe_multi.o` on `tests/uprobe_multi/um_target.c` (built here with `cc`),
//! whose functions are called a known number of times. Oracles: the counts each program
//! keeps per function address (`bpf_get_func_ip`, the addresses the target prints),
//! `bpftool link show` (the links the kernel lists for this process), and the kernel
//! taking the bare `SEC("uprobe.multi")` program in a `uprobe_multi` link of its own
//! (only a program loaded with `BPF_TRACE_UPROBE_MULTI` is).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

use sluice_runtime::attach::Scope;
use sluice_runtime::session::{ObjectSource, Session, SessionOptions, SourceKind};

static SERIAL: Mutex<()> = Mutex::new(());

/// The calls um_target.c makes of each function.
const CALLS: [(&str, u64); 6] = [
    ("um_hit_a", 3),
    ("um_hit_b", 5),
    ("um_hit_c", 7),
    ("um_hit_long", 2),
    ("um_miss", 11),
    ("hit_um_a", 13),
];

fn build() -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/uprobe_multi/um_target.c");
    let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join("um_target");
    match Command::new("cc")
        .arg("-O2")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .output()
    {
        Ok(o) if o.status.success() => Some(bin),
        other => {
            let what = format!("cc cannot build um_target: {other:?}");
            assert!(!common::required(), "{what} (SLUICE_REQUIRE_KERNEL=1)");
            eprintln!("\n*** SKIPPED {what} ***\n");
            None
        }
    }
}

/// A running um_target: its function addresses, its stdin and stdout.
struct Target {
    child: Child,
    stdin: ChildStdin,
    out: BufReader<ChildStdout>,
    addrs: BTreeMap<String, u64>,
}

impl Target {
    fn spawn(bin: &Path) -> Target {
        let mut child = Command::new(bin)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        let addrs = line
            .split_whitespace()
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap();
                let v = u64::from_str_radix(v.trim_start_matches("0x"), 16).unwrap();
                (k.to_owned(), v)
            })
            .collect::<BTreeMap<_, _>>();
        assert_eq!(addrs.len(), CALLS.len(), "{line}");
        Target {
            child,
            stdin,
            out,
            addrs,
        }
    }

    /// Makes the calls, waits for them to be done.
    fn run(&mut self) {
        self.stdin.write_all(b"go\n").unwrap();
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        assert!(line.starts_with("done "), "{line}");
    }

    fn finish(mut self) {
        self.stdin.write_all(b"end\n").unwrap();
        assert!(self.child.wait().unwrap().success());
    }
}

fn object() -> ObjectSource {
    ObjectSource {
        name: "uprobe_multi.o".into(),
        bytes: common::fixture("uprobe_multi.o"),
    }
}

fn options(bin: &Path) -> SessionOptions {
    let mut opts = SessionOptions::default();
    let b = bin.display();
    for (prog, spec) in [
        ("on_entry", format!("uprobe.multi/{b}:um_hit_*")),
        ("on_return", format!("uretprobe.multi/{b}:um_hit_*")),
        ("on_sleepable", format!("uprobe.multi.s/{b}:um_hit_?")),
    ] {
        opts.events.insert(prog.into(), spec);
    }
    opts
}

/// What map `name` counted for each function of `t` (0: no entry).
fn counted(s: &Session, name: &str, t: &Target) -> BTreeMap<String, u64> {
    let map = s.objects()[0].map(name).unwrap();
    t.addrs
        .iter()
        .map(|(f, a)| (f.clone(), map.get::<u64, u64>(a).unwrap().unwrap_or(0)))
        .collect()
}

fn expected(pattern_hit: &dyn Fn(&str) -> bool) -> BTreeMap<String, u64> {
    CALLS
        .iter()
        .map(|&(f, n)| (f.to_owned(), if pattern_hit(f) { n } else { 0 }))
        .collect()
}

/// The programs of `bpftool link show -j`'s links of type uprobe_multi (or its number,
/// 12, for a bpftool that predates the name) that are among `progs`: `None` without
/// bpftool.
fn bpftool_uprobe_multi_links(progs: &[u32]) -> Option<Vec<u32>> {
    let out = Command::new("bpftool")
        .args(["link", "show", "-j"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut found: Vec<u32> = text
        .split("},{")
        .filter(|l| l.contains("\"type\":\"uprobe_multi\"") || l.contains("\"type\":12,"))
        .filter_map(|l| {
            let id = l.split("\"prog_id\":").nth(1)?;
            id.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
        })
        .filter(|id| progs.contains(id))
        .collect();
    found.sort_unstable();
    Some(found)
}

#[test]
fn uprobe_multi_and_uretprobe_multi_count_every_matching_function_exactly() {
    if !common::kernel("uprobe_multi_and_uretprobe_multi_count_every_matching_function_exactly") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(bin) = build() else { return };
    let mut t = Target::spawn(&bin);
    let s = Session::start(&[object()], &options(&bin)).expect("session");
    let mut progs: Vec<u32> = ["on_entry", "on_return", "on_sleepable"]
        .iter()
        .map(|p| s.objects()[0].program(p).unwrap().info().unwrap().id)
        .collect();
    progs.sort_unstable();
    let hooks: Vec<&str> = s
        .sources()
        .iter()
        .filter(|x| matches!(x.kind, SourceKind::Hook { .. }))
        .map(|x| x.name.as_str())
        .collect();
    let b = bin.display();
    assert_eq!(
        hooks,
        [
            format!("uprobe.multi/{b}:um_hit_*"),
            format!("uretprobe.multi/{b}:um_hit_*"),
            format!("uprobe.multi.s/{b}:um_hit_?"),
        ]
    );
    // The bare title is loaded, not attached, and said why.
    let skipped: Vec<_> = s.skipped().iter().map(|x| (&x.program, &x.why)).collect();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].0, "on_bare");
    assert!(
        skipped[0]
            .1
            .contains("--event on_bare=uprobe.multi/PATH:PATTERN"),
        "{skipped:?}"
    );
    // bpftool (7.1 here) lists the kernel's uprobe_multi links; newer ones also say
    // their path and count, which this one does not.
    match bpftool_uprobe_multi_links(&progs) {
        Some(links) => {
            eprintln!("bpftool: uprobe_multi links of programs {links:?}");
            assert_eq!(links, progs);
        }
        None => eprintln!("no bpftool: links not checked"),
    }
    t.run();
    let hit = |f: &str| f.starts_with("um_hit_");
    let (entries, returns) = (counted(&s, "entries", &t), counted(&s, "returns", &t));
    let total = s.objects()[0]
        .map("totals")
        .unwrap()
        .get::<u32, u64>(&0)
        .unwrap()
        .unwrap_or(0);
    eprintln!("uprobe.multi entries {entries:?}\nreturns {returns:?}\nsleepable total {total}");
    assert_eq!(entries, expected(&hit));
    assert_eq!(returns, expected(&hit));
    assert_eq!(total, 3 + 5 + 7, "um_hit_? is a, b and c");

    // The bare program was loaded for uprobe_multi links: the kernel takes it in one.
    let bare = s.objects()[0].program("on_bare").expect("on_bare loaded");
    let path = std::ffi::CString::new(bin.as_os_str().as_encoded_bytes()).unwrap();
    let (_, offsets) =
        sluice_runtime::attach::uprobe_multi_offsets(&sluice_runtime::probe::HookPlan::new(
            &sluice_core::probe::attach_point(&format!("uprobe.multi/{b}:um_miss"))
                .unwrap()
                .unwrap(),
        ))
        .unwrap();
    assert_eq!(offsets.len(), 1);
    let link = sluice_runtime::sys::bpf::link_create_uprobe_multi(
        bare.as_fd(),
        &path,
        &offsets,
        false,
        None,
    );
    assert!(
        link.is_ok(),
        "the bare program in a uprobe_multi link: {link:?}"
    );
    drop(link);
    drop(s);
    if let Some(links) = bpftool_uprobe_multi_links(&progs) {
        assert!(
            links.is_empty(),
            "links released with the session: {links:?}"
        );
    }
    t.finish();
}

#[test]
fn with_a_pid_only_that_process_is_counted() {
    if !common::kernel("with_a_pid_only_that_process_is_counted") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(bin) = build() else { return };
    let mut ours = Target::spawn(&bin);
    let mut other = Target::spawn(&bin);
    let mut opts = options(&bin);
    opts.scope = Some(Scope::Process {
        pid: ours.child.id() as i32,
    });
    let s = Session::start(&[object()], &opts).expect("session");
    // The other process first: nothing of its calls may be counted.
    other.run();
    ours.run();
    let hit = |f: &str| f.starts_with("um_hit_");
    let entries = counted(&s, "entries", &ours);
    let of_other = counted(&s, "entries", &other);
    eprintln!(
        "-p {}: {entries:?}; other process: {of_other:?}",
        ours.child.id()
    );
    assert_eq!(entries, expected(&hit));
    // Both are the same PIE binary: its functions are at other addresses in the other
    // process only when ASLR placed it elsewhere, so compare the total too.
    let map = s.objects()[0].map("entries").unwrap();
    let sum: u64 = map
        .keys::<u64>()
        .map(|k| map.get::<u64, u64>(&k.unwrap()).unwrap().unwrap_or(0))
        .sum();
    assert_eq!(
        sum,
        3 + 5 + 7 + 2,
        "only the calls of process {}",
        ours.child.id()
    );
    drop(s);
    ours.finish();
    other.finish();
}

#[test]
fn a_pattern_matching_nothing_is_bad_input_naming_it() {
    if !common::kernel("a_pattern_matching_nothing_is_bad_input_naming_it") {
        return;
    }
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(bin) = build() else { return };
    let mut opts = options(&bin);
    opts.events.insert(
        "on_entry".into(),
        format!("uprobe.multi/{}:no_such_fn_*", bin.display()),
    );
    let e = Session::start(&[object()], &opts).expect_err("no function matches");
    let m = e.to_string();
    assert!(
        m.contains(&format!(
            "uprobe.multi pattern 'no_such_fn_*' of {}: no function of",
            bin.display()
        )),
        "{m}"
    );
}
