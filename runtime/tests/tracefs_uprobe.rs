//! Kernel tests of tracefs probes: a uprobe on a function of this very test binary, with a
//! fetch-arg reading the first argument register. Oracles: the values this test passes
//! (the kernel must fetch exactly them), `/proc/self/maps` (where the kernel mapped the
//! function: an independent route to its file offset), and `uprobe_events` itself (the
//! probe is listed while the guard lives and gone after).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod ring_support;

use std::path::{Path, PathBuf};

use ring_support::*;
use sluice_core::perf::record::{Record, SampleFormat, SampleType};
use sluice_runtime::ring::{PerfRing, RingConfig};
use sluice_runtime::tracefs::{
    self, ProbeKind, ProbeRequest, ProbeTarget, Tracefs, UprobeSpec, GROUP,
};

/// The probed function: not inlined, exported unmangled so it is in `.symtab`.
#[no_mangle]
#[inline(never)]
pub extern "C" fn sluice_test_uprobe_target(x: u64) -> u64 {
    std::hint::black_box(x).rotate_left(7) ^ 0x5a
}

/// The register holding the first integer argument at function entry.
#[cfg(target_arch = "x86_64")]
const ARG0: &str = "%di";
#[cfg(target_arch = "aarch64")]
const ARG0: &str = "%x0";
#[cfg(target_arch = "x86")]
const ARG0: &str = "+4($stack):u64";

fn exe() -> PathBuf {
    std::env::current_exe().unwrap().canonicalize().unwrap()
}

/// The file offset of `addr` according to the kernel's own mappings of `path`.
fn file_offset_from_maps(path: &Path, addr: u64) -> u64 {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    for line in maps.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 6 || Path::new(f[5]) != path {
            continue;
        }
        let (lo, hi) = f[0].split_once('-').unwrap();
        let (lo, hi) = (
            u64::from_str_radix(lo, 16).unwrap(),
            u64::from_str_radix(hi, 16).unwrap(),
        );
        if (lo..hi).contains(&addr) {
            return addr - lo + u64::from_str_radix(f[2], 16).unwrap();
        }
    }
    panic!("{addr:#x} not mapped from {}", path.display());
}

/// A function of a shared library, found through `.dynsym` only (a distribution's libc has
/// no `.symtab`): its offset is where the kernel mapped it. No kernel feature needed; skipped
/// when no `libc.so` is mapped (a static build).
#[test]
fn shared_library_offset_matches_the_kernel_mapping() {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let Some(libc_path) = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/libc.so"))
        .map(PathBuf::from)
    else {
        eprintln!("SKIP shared_library_offset_matches_the_kernel_mapping: no libc.so mapped");
        return;
    };
    #[allow(unsafe_code)]
    // SAFETY: dlsym(3) with RTLD_DEFAULT and a NUL-terminated name only reads.
    let addr = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"getpid".as_ptr()) } as usize as u64;
    assert_ne!(addr, 0, "dlsym(getpid)");
    let offset = tracefs::uprobe_offset(&libc_path, "getpid", 0).unwrap();
    assert_eq!(
        offset,
        file_offset_from_maps(&libc_path, addr),
        "{}",
        libc_path.display()
    );
}

fn listed(t: &Tracefs, event: &str) -> bool {
    std::fs::read_to_string(t.root().join("uprobe_events"))
        .unwrap()
        .contains(event)
}

#[test]
fn uprobe_fetches_the_argument_and_is_removed_by_its_guard() {
    if !kernel_or_skip("uprobe_fetches_the_argument_and_is_removed_by_its_guard") {
        return;
    }
    let t = Tracefs::find().expect("tracefs");
    let exe = exe();
    let spec = UprobeSpec::parse(&format!("{}:sluice_test_uprobe_target", exe.display())).unwrap();
    let target = spec.resolve().unwrap();
    let ProbeTarget::User { offset, .. } = &target else {
        panic!()
    };
    let addr = sluice_test_uprobe_target as *const () as usize as u64;
    assert_eq!(
        *offset,
        file_offset_from_maps(&exe, addr),
        "symbol+section offset = kernel mapping"
    );

    let guard = t
        .add_probe(&ProbeRequest {
            kind: ProbeKind::Uprobe,
            target,
            args: ARG0.into(),
        })
        .expect("create uprobe");
    assert_eq!(guard.group(), GROUP);
    let event = guard.event().to_owned();
    assert!(
        event.starts_with(&format!("p_{}_", std::process::id())),
        "{event}"
    );
    assert!(listed(&t, &event));
    let ours = t.list_ours().unwrap();
    assert!(ours
        .iter()
        .any(|p| p.event == event && p.pid == Some(std::process::id())));

    let id = t.event_id(GROUP, &event).unwrap();
    let format = t.event_format(GROUP, &event).unwrap();
    let arg = format.field("arg1").expect("arg1 field").clone();
    let ip = format
        .field("__probe_ip")
        .expect("__probe_ip field")
        .clone();

    const K: u64 = 1_000;
    let st = SampleType::TID | SampleType::RAW;
    let cfg = RingConfig {
        data_pages: 16,
        ..RingConfig::default()
    };
    let fd = perf_event_open(&tracepoint_attr(id, st.0, &cfg), gettid(), -1).unwrap();
    let mut ring = PerfRing::map(&fd, cfg.data_pages, SampleFormat::new(st), None).unwrap();
    enable(&fd);
    let values: Vec<u64> = (0..K)
        .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xabc)
        .collect();
    for v in &values {
        std::hint::black_box(sluice_test_uprobe_target(*v));
    }
    disable(&fd);
    let mut fetched = Vec::new();
    let mut ips = std::collections::HashSet::new();
    ring.drain(|r| {
        if let Record::Sample(s) = r {
            let raw = s.raw.unwrap();
            fetched.push(arg.read_u64(raw).unwrap());
            ips.insert(ip.read_u64(raw).unwrap());
        }
    })
    .unwrap();
    eprintln!(
        "uprobe {event}: {} samples, arg1 is {} bytes, probe ip {ips:x?}",
        fetched.len(),
        arg.size
    );
    assert_eq!(ring.stats().lost, 0);
    assert_eq!(
        fetched, values,
        "the kernel fetched exactly the arguments passed, in order"
    );
    assert_eq!(ips.len(), 1);
    assert!(ips.contains(&addr), "__probe_ip is the function's address");

    // The perf event must be closed before the probe can go (EBUSY otherwise).
    drop(ring);
    drop(fd);
    drop(guard);
    assert!(!listed(&t, &event), "guard removed the probe");
}

#[test]
fn uretprobe_and_clean_unused() {
    if !kernel_or_skip("uretprobe_and_clean_unused") {
        return;
    }
    let t = Tracefs::find().expect("tracefs");
    let exe = exe();
    let offset = tracefs::uprobe_offset(&exe, "sluice_test_uprobe_target", 0).unwrap();
    // A uretprobe of ours with an open perf event: the kernel refuses to remove it, so
    // clean must leave it.
    let live = t
        .add_probe(&ProbeRequest {
            kind: ProbeKind::Uretprobe,
            target: ProbeTarget::User {
                path: exe.clone(),
                offset,
                func: "target".into(),
            },
            args: String::new(),
        })
        .unwrap();
    assert!(live.event().starts_with("r_"));
    let id = t.event_id(GROUP, live.event()).unwrap();
    let cfg = RingConfig::default();
    let fd = perf_event_open(&tracepoint_attr(id, SampleType::TID.0, &cfg), gettid(), -1).unwrap();
    // Leftovers of runs that died, whatever their names say: a dead pid, a pid that is
    // alive here (this very process: in another PID namespace it is someone else), a
    // name made in another namespace, and one in perf's group.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = child.id();
    child.wait().unwrap();
    let me = std::process::id();
    let leftovers = [
        (GROUP, format!("p_{dead_pid}_0_leftover")),
        (GROUP, format!("p_{me}_999999_leftover")),
        (
            GROUP,
            tracefs::event_name_in(ProbeKind::Uprobe, 1, Some(4026532999), 0, "ns"),
        ),
        ("perf_bpf_probe", format!("p_{dead_pid}_1_leftover")),
    ];
    for (group, event) in &leftovers {
        let line = format!("p:{group}/{event} {}:{offset:#x}\n", exe.display());
        std::fs::OpenOptions::new()
            .append(true)
            .open(t.root().join("uprobe_events"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()))
            .unwrap();
        assert!(
            t.list_ours().unwrap().iter().any(|p| &p.event == event),
            "{event}"
        );
    }
    assert_eq!(
        tracefs::pid_of_event(&leftovers[2].1),
        None,
        "namespaced name"
    );

    let removed = t.clean_unused().unwrap();
    let names: Vec<&str> = removed.iter().map(|p| p.event.as_str()).collect();
    eprintln!("clean_unused removed {names:?}");
    for (_, event) in &leftovers {
        assert!(
            names.contains(&event.as_str()),
            "{event} not removed: {names:?}"
        );
        assert!(!listed(&t, event));
    }
    assert!(!names.contains(&live.event()));
    assert!(listed(&t, live.event()));
    drop(fd);
    let event = live.event().to_owned();
    live.remove().unwrap();
    assert!(!listed(&t, &event));
}

/// Runs in two PID namespaces have the same pids; their probes must not share a name.
#[test]
fn names_differ_across_pid_namespaces() {
    let a = tracefs::event_name_in(ProbeKind::Uprobe, 1, Some(4026532001), 0, "main");
    let b = tracefs::event_name_in(ProbeKind::Uprobe, 1, Some(4026532002), 0, "main");
    assert_ne!(a, b);
    assert_eq!(
        tracefs::event_name(ProbeKind::Uprobe, 1, 0, "main"),
        "p_1_0_main"
    );
    assert_eq!(tracefs::pid_of_event("p_1_0_main"), Some(1));
    assert_eq!(tracefs::pid_of_event(&a), None);
    // This process, in the initial namespace, names its probes as before.
    assert_eq!(tracefs::pid_namespace(), None);
}

#[test]
fn kprobes_need_kprobe_events() {
    if !kernel_or_skip("kprobes_need_kprobe_events") {
        return;
    }
    let t = Tracefs::find().expect("tracefs");
    let req = ProbeRequest {
        kind: ProbeKind::Kretprobe,
        target: ProbeTarget::Kernel {
            func: "vfs_read".into(),
            offset: 0,
        },
        args: String::new(),
    };
    if !t.supports(ProbeKind::Kprobe) {
        // This host's kernel: no CONFIG_KPROBE_EVENTS. The error must say so.
        let e = t.add_probe(&req).unwrap_err();
        let msg = e.to_string();
        eprintln!("kprobe: {msg}");
        assert!(msg.contains("CONFIG_KPROBE_EVENTS"), "{msg}");
        assert!(matches!(e, tracefs::Error::Unsupported { .. }));
        return;
    }
    let guard = t.add_probe(&req).unwrap();
    let event = guard.event().to_owned();
    let kp = std::fs::read_to_string(t.root().join("kprobe_events")).unwrap();
    assert!(kp.contains(&event), "{kp}");
    assert!(t.event_id(GROUP, &event).unwrap() > 0);
    drop(guard);
    let kp = std::fs::read_to_string(t.root().join("kprobe_events")).unwrap();
    assert!(!kp.contains(&event));
}

#[test]
fn refused_definition_carries_the_kernel_reason() {
    if !kernel_or_skip("refused_definition_carries_the_kernel_reason") {
        return;
    }
    let t = Tracefs::find().expect("tracefs");
    let exe = exe();
    let offset = tracefs::uprobe_offset(&exe, "sluice_test_uprobe_target", 0).unwrap();
    let e = t
        .add_probe(&ProbeRequest {
            kind: ProbeKind::Uprobe,
            target: ProbeTarget::User {
                path: exe,
                offset,
                func: "bad".into(),
            },
            args: "%nosuchreg".into(),
        })
        .unwrap_err();
    let msg = e.to_string();
    eprintln!("refused: {msg}");
    assert!(
        msg.contains("uprobe_events") && msg.contains("%nosuchreg"),
        "{msg}"
    );
    if let tracefs::Error::Io { detail, .. } = &e {
        // Kernels since 5.4 explain the refusal in error_log ("Invalid register name" on
        // 6.x); older ones leave it empty.
        assert!(
            detail
                .as_deref()
                .is_none_or(|d| d.contains("register") || d.contains("argument")),
            "{detail:?}"
        );
    } else {
        panic!("{e:?}");
    }
}
