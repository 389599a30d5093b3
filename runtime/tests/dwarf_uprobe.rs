//! End to end on the running kernel, with debug info: `tests/dwarf/chain.c` (the second
//! seed's `generic_perform_write(file, bytes, offset)`) is compiled at test time with
//! `gcc -g -O0` and `-O2`; the object `tests/bpf/dwarf_chain.o` is loaded by
//! [`sluice_runtime::load`] with each program's real spec given at run time
//! ([`LoadOptions::specs`]): `file->f_mapping->a_ops, bytes, offset, $err` at the function,
//! and `chunk`, a local of a lexical block, at the line where it is passed on.
//!
//! Oracles: the values the probed program was given and printed (the BPF programs must
//! receive exactly those in r2..r5), and the kernel's own uprobe fetch-args, created on the
//! same address with the fetch-arg strings sluice derived from the same DWARF (they must
//! fetch the same values). A call whose `file->f_mapping` is unmapped must give the program
//! zeros and `$err` = 1.
#![cfg(target_arch = "x86_64")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod ring_support;

use std::io::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ring_support::*;
use sluice_core::dwarf::{DebugSections, Resolver};
use sluice_core::elf::Elf;
use sluice_core::object::{Object, ObjectStorage};
use sluice_core::perf::record::{Record, SampleFormat, SampleType};
use sluice_core::probe::{self, Section};
use sluice_runtime::probe::debuginfo::Site;
use sluice_runtime::probe::Plan;
use sluice_runtime::ring::{PerfRing, RingConfig};
use sluice_runtime::sys::perf_event;
use sluice_runtime::tracefs::{
    uprobe_offset, Field, ProbeGuard, ProbeKind, ProbeRequest, ProbeTarget, Tracefs, GROUP,
};
use sluice_runtime::{load, LoadOptions, LoadedObject};

const FUNC: &str = "generic_perform_write";
/// `MAX_CALLS` of the fixture: where the local program's slots start in `seen`.
const MAX_CALLS: u32 = 16;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Compiles chain.c with `-O{opt}`; `None` after saying why when gcc is missing (a failure
/// under `SLUICE_REQUIRE_KERNEL=1`).
fn build(opt: &str) -> Option<PathBuf> {
    let dir = std::env::temp_dir().join(format!("sluice-dwarf-uprobe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("chain_O{opt}"));
    let status = Command::new("gcc")
        .args(["-g", &format!("-O{opt}"), "-o"])
        .arg(&out)
        .arg(repo().join("tests/dwarf/chain.c"))
        .status();
    match status {
        Ok(s) if s.success() => Some(out),
        _ => {
            assert!(
                std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
                "gcc is needed to build tests/dwarf/chain.c (SLUICE_REQUIRE_KERNEL=1)"
            );
            eprintln!("SKIPPED: gcc -O{opt} unavailable (install gcc)");
            None
        }
    }
}

/// The line of `sink(chunk);` relative to the function's first line, as `FUNC:LINE` counts.
fn local_line() -> u32 {
    let src = std::fs::read_to_string(repo().join("tests/dwarf/chain.c")).unwrap();
    let line_of = |needle: &str| src.lines().position(|l| l.contains(needle)).unwrap();
    (line_of("sink(chunk);") - line_of(&format!("long {FUNC}("))) as u32
}

/// The byte offset into FUNC of the first address of `sink(chunk);`, found through the same
/// DWARF (perf's `FUNC:LINE`); the uprobe grammar takes `FUNC+OFF`.
fn local_offset(bin: &Path) -> u64 {
    let bytes = std::fs::read(bin).unwrap();
    let elf = Elf::parse(&bytes).unwrap();
    let sections = DebugSections::load(&elf).unwrap();
    let r = Resolver::new(&elf, &sections).unwrap();
    let spec = format!("{FUNC}:{} chunk", local_line());
    let Ok(Section::Probe(p)) = probe::parse(&spec) else {
        panic!("{spec}")
    };
    let sites = r.resolve_spec(&p).unwrap_or_else(|e| panic!("{spec}: {e}"));
    let at = sites.first().unwrap().file_offset.unwrap();
    at - uprobe_offset(bin, FUNC, 0).unwrap()
}

/// A kernel probe on a site with its fetch-args, a perf event on it for the task `pid`
/// with the program attached, and the ring of that event.
struct Probe {
    fields: Vec<(Field, bool)>,
    ring: PerfRing,
    fd: OwnedFd,
    _guard: ProbeGuard,
}

fn probe_site(t: &Tracefs, site: &Site, prog: &impl AsFd, pid: i32) -> Probe {
    let guard = t
        .add_probe(&ProbeRequest {
            kind: ProbeKind::Uprobe,
            target: site.target.clone(),
            args: site.fetch_args.join(" "),
        })
        .unwrap_or_else(|e| panic!("the kernel refused {:?}: {e}", site.fetch_args));
    let id = t.event_id(GROUP, guard.event()).unwrap();
    let format = t.event_format(GROUP, guard.event()).unwrap();
    let fields = site
        .fetch_args
        .iter()
        .map(|a| {
            let (name, fetch) = a.split_once('=').unwrap();
            let f = format.field(name).unwrap_or_else(|| panic!("field {name}"));
            (f.clone(), fetch.contains(":s"))
        })
        .collect();
    let st = SampleType::TID | SampleType::RAW;
    let cfg = RingConfig {
        data_pages: 8,
        ..RingConfig::default()
    };
    let fd = perf_event_open(&tracepoint_attr(id, st.0, &cfg), pid, -1).unwrap();
    let ring = PerfRing::map(&fd, cfg.data_pages, SampleFormat::new(st), None).unwrap();
    perf_event::set_bpf(fd.as_fd(), prog.as_fd()).expect("PERF_EVENT_IOC_SET_BPF");
    enable(&fd);
    Probe {
        fields,
        ring,
        fd,
        _guard: guard,
    }
}

impl Probe {
    /// Per sample, the kernel's fetched values; closes the event and removes the probe.
    fn finish(mut self) -> Vec<Vec<u64>> {
        disable(&self.fd);
        let mut out = Vec::new();
        let fields = &self.fields;
        self.ring
            .drain(|r| {
                if let Record::Sample(s) = r {
                    let raw = s.raw.unwrap();
                    out.push(
                        fields
                            .iter()
                            .map(|(f, signed)| {
                                if *signed {
                                    f.read_i64(raw).unwrap() as u64
                                } else {
                                    f.read_u64(raw).unwrap()
                                }
                            })
                            .collect(),
                    );
                }
            })
            .unwrap();
        let Probe {
            ring, fd, _guard, ..
        } = self;
        drop(ring);
        drop(fd);
        drop(_guard);
        out
    }
}

/// What `seen[slot]` holds: the four values a program stored.
fn seen(obj: &LoadedObject, slot: u32) -> [u64; 4] {
    let v = obj
        .map("seen")
        .unwrap()
        .get_bytes(&slot.to_ne_bytes())
        .unwrap()
        .unwrap();
    std::array::from_fn(|j| u64::from_ne_bytes(v[8 * j..8 * j + 8].try_into().unwrap()))
}

/// (a_ops, bytes, offset) per call; a_ops 0 makes `file->f_mapping` unmapped.
const CALLS: [(u64, u64, i64); 4] = [
    (0x5555_1234_5678_9abc, 5, -7),
    (0xffff_8000_0000_0042, 1 << 40, -(1 << 41)),
    (0, 2, 3),
    (0x10, 4096, 123_456_789),
];

fn run(opt: &str) {
    let Some(bin) = build(opt) else { return };
    let bytes = std::fs::read(repo().join("tests/bpf/dwarf_chain.o")).unwrap();
    let mut storage = ObjectStorage::new();
    let obj = Object::open(&bytes, &mut storage).unwrap();
    let index = |name: &str| {
        obj.programs()
            .iter()
            .position(|p| p.name == Some(name))
            .unwrap()
    };
    let (chain, local) = (index("chain"), index("local"));
    let path = bin.display();
    let mut opts = LoadOptions::default();
    opts.specs = vec![Vec::new(); obj.programs().len()];
    opts.specs[chain] = vec![format!(
        "uprobe/{path}:{FUNC}(file->f_mapping->a_ops, bytes, offset, $err)"
    )];
    opts.specs[local] = vec![format!(
        "uprobe/{path}:{FUNC}+{}(chunk, bytes, $err)",
        local_offset(&bin)
    )];
    let sites: Vec<Site> = [chain, local]
        .iter()
        .map(|&i| {
            let mut s: Vec<Site> = Plan::new(&obj.programs()[i], i, &opts)
                .unwrap_or_else(|e| panic!("-O{opt}: {e}"))
                .variants()
                .iter()
                .filter_map(|v| v.site.clone())
                .collect();
            assert_eq!(s.len(), 1, "-O{opt}: one site: {s:?}");
            s.remove(0)
        })
        .collect();
    eprintln!(
        "-O{opt}: chain at {:#x}: {:?}; local at {:#x}: {:?}",
        sites[0].address, sites[0].fetch_args, sites[1].address, sites[1].fetch_args
    );
    let loaded = load(&obj, &opts).unwrap_or_else(|e| panic!("-O{opt}: load: {e}"));
    let progs: Vec<_> = ["chain", "local"]
        .iter()
        .map(|n| loaded.program(n).unwrap())
        .collect();
    for (p, s) in progs.iter().zip(&sites) {
        assert!(
            p.insns().starts_with(&s.prologue),
            "{}: the loaded program starts with the site's prologue",
            p.name()
        );
        assert_eq!(p.spec(), opts.specs[p.index()][0]);
        assert!(matches!(&s.target, ProbeTarget::User { path, .. } if *path == bin));
    }

    let t = Tracefs::find().expect("tracefs");
    let mut child = Command::new(&bin)
        .args(
            CALLS
                .iter()
                .flat_map(|(a, b, c)| [format!("{a:#x}"), b.to_string(), c.to_string()]),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let probes: Vec<Probe> = sites
        .iter()
        .zip(&progs)
        .map(|(s, p)| probe_site(&t, s, *p, pid))
        .collect();
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "-O{opt}: {out:?}");
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(printed.lines().count(), CALLS.len(), "{printed}");
    let kernel: Vec<Vec<Vec<u64>>> = probes.into_iter().map(Probe::finish).collect();

    assert_eq!(
        kernel[0].len(),
        CALLS.len(),
        "-O{opt}: chain: one sample per call"
    );
    assert_eq!(
        kernel[1].len(),
        CALLS.len(),
        "-O{opt}: local: one sample per call"
    );
    for (k, &(a_ops, bytes, offset)) in CALLS.iter().enumerate() {
        let chunk = bytes.wrapping_mul(3).wrapping_add(offset as u64);
        let line = printed.lines().nth(k).unwrap();
        assert_eq!(
            line.rsplit(' ').next().unwrap().parse::<i64>().unwrap() as u64,
            chunk,
            "the program's own printout: {line}"
        );
        let got = seen(&loaded, k as u32);
        let kern = &kernel[0][k];
        if a_ops == 0 {
            assert_eq!(
                got,
                [0, 0, 0, 1],
                "-O{opt} call {k}: a failed read: zeros, $err = 1"
            );
            assert_eq!(
                &kern[1..],
                &[bytes, offset as u64],
                "-O{opt} call {k}: the kernel still fetched bytes and offset"
            );
        } else {
            assert_eq!(
                got,
                [a_ops, bytes, offset as u64, 0],
                "-O{opt} call {k}: r2..r5 = a_ops, bytes, offset, $err"
            );
            assert_eq!(
                kern,
                &vec![a_ops, bytes, offset as u64],
                "-O{opt} call {k}: the kernel's fetch-args agree"
            );
        }
        let got = seen(&loaded, MAX_CALLS + k as u32);
        assert_eq!(
            got,
            [chunk, bytes, 0, 0],
            "-O{opt} call {k}: the local: r2..r4 = chunk, bytes, $err"
        );
        assert_eq!(
            &kernel[1][k],
            &vec![chunk, bytes],
            "-O{opt} call {k}: the kernel's fetch-args of the local agree"
        );
    }
    eprintln!(
        "dwarf uprobe -O{opt}: {} calls x 2 programs checked against passed values and the \
         kernel's fetch-args",
        CALLS.len()
    );
}

#[test]
fn variables_at_o0_reach_the_program_and_match_the_kernel() {
    if kernel_or_skip("variables_at_o0_reach_the_program_and_match_the_kernel") {
        run("0");
    }
}

#[test]
fn variables_at_o2_reach_the_program_and_match_the_kernel() {
    if kernel_or_skip("variables_at_o2_reach_the_program_and_match_the_kernel") {
        run("2");
    }
}
