//! DWARF resolution in the guest kernels' `-dbg` vmlinux images, when they are cached
//! (`${SLUICE_CACHE:-$HOME/.cache/sluice}/guest/{amd64,arm64}/current/vmlinux`, or
//! `SLUICE_VMLINUX` / `SLUICE_VMLINUX_ARM64`); each test says SKIPPED without its file, or
//! fails with `SLUICE_REQUIRE_VMLINUX=1` (CI fetches the images before the tests).
//!
//! - The unit index finds what the walk over every unit finds (`Lookup::Indexed` against
//!   `Lookup::Exhaustive`): out-of-line functions, a function inlined into hundreds of units
//!   with a global defined in yet another unit, an error listing the variables available.
//! - The arm64 image read on any host gives aarch64 registers and `pt_regs` offsets, as
//!   `perf probe -k VMLINUX -D 'vfs_read file count pos'` prints them
//!   (`file=%x0:x64 count=%x2:x64 pos=%x3:x64` at `vfs_read+8`).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};

use sluice_core::arch::Arch;
use sluice_core::disasm::Listing;
use sluice_core::dwarf::{DebugSections, FetchSyntax, Lookup, Resolver};
use sluice_core::elf::Elf;
use sluice_core::probe::{self, Section};
use sluice_runtime::probe::debuginfo::DebugInfo;
use sluice_runtime::sys::mmap::Mmap;
use sluice_runtime::tracefs::ProbeTarget;

fn vmlinux(env: &str, arch: &str) -> Option<PathBuf> {
    let path = std::env::var_os(env).map(PathBuf::from).unwrap_or_else(|| {
        let cache = std::env::var_os("SLUICE_CACHE").map_or_else(
            || Path::new(&std::env::var_os("HOME").unwrap_or_default()).join(".cache/sluice"),
            PathBuf::from,
        );
        cache.join("guest").join(arch).join("current/vmlinux")
    });
    if path.is_file() {
        return Some(path);
    }
    // CI fetches the images first (`fetch-kernels.sh --dbg`) and sets this: there a missing
    // image is a failure, not a skip.
    assert!(
        std::env::var_os("SLUICE_REQUIRE_VMLINUX").is_none_or(|v| v != "1"),
        "no {arch} vmlinux at {} (set {env}) and SLUICE_REQUIRE_VMLINUX=1",
        path.display()
    );
    eprintln!(
        "SKIPPED: no {arch} vmlinux at {} (set {env})",
        path.display()
    );
    None
}

/// Each spec's result as text: per site the address, inlined or not, and the fetch-args;
/// or the error.
fn results(r: &Resolver<'_>, specs: &[&str]) -> Vec<String> {
    specs
        .iter()
        .map(|spec| {
            let Ok(Section::Probe(p)) = probe::parse(spec) else {
                panic!("bad spec {spec}");
            };
            match r.resolve_spec(&p) {
                Ok(sites) => sites
                    .iter()
                    .map(|s| {
                        let args: Vec<String> = s
                            .args
                            .iter()
                            .map(|a| a.fetch_arg(r.arch(), FetchSyntax::Perf).unwrap())
                            .collect();
                        format!("{:#x} {} {}", s.address, s.inlined, args.join(" "))
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
                Err(e) => format!("error: {e}"),
            }
        })
        .collect()
}

#[test]
fn indexed_lookup_equals_exhaustive_in_vmlinux() {
    let Some(path) = vmlinux("SLUICE_VMLINUX", "amd64") else {
        return;
    };
    let map = Mmap::open(&path).unwrap();
    let elf = Elf::parse(map.bytes()).unwrap();
    let sections = DebugSections::load(&elf).unwrap();
    let specs = [
        "vfs_read file count pos",
        "generic_perform_write iocb i",
        "file_inode nr_threads",
        "i_size_read inode",
    ];
    let indexed = Resolver::new(&elf, &sections).unwrap();
    let fast = results(&indexed, &specs);
    let units = indexed.unit_count().unwrap();
    assert!(
        indexed.parsed_unit_count() * 2 < units,
        "the index parsed {} of {units} units",
        indexed.parsed_unit_count()
    );
    let all = Resolver::new(&elf, &sections)
        .unwrap()
        .with_lookup(Lookup::Exhaustive);
    let slow = results(&all, &specs);
    for ((spec, f), s) in specs.iter().zip(&fast).zip(&slow) {
        assert_eq!(f, s, "{spec}");
    }
    assert_eq!(fast[0].lines().count(), 1, "{}", fast[0]);
    assert!(
        fast[0].ends_with("file=%di:x64 count=%dx:x64 pos=%cx:x64"),
        "{}",
        fast[0]
    );
    // file_inode is inlined all over the kernel; nr_threads lives in kernel/fork.c.
    let inlined = fast[2].lines().filter(|l| l.contains(" true ")).count();
    assert!(inlined > 100, "{inlined} inlined sites");
    assert!(fast[2].contains("@nr_threads+0:s32"), "{}", &fast[2][..200]);
    assert!(
        fast[3].starts_with("error: variable 'inode'"),
        "{}",
        fast[3]
    );
}

#[test]
fn arm64_vmlinux_gives_aarch64_locations() {
    let Some(path) = vmlinux("SLUICE_VMLINUX_ARM64", "arm64") else {
        return;
    };
    let info = DebugInfo::open(&path, None).unwrap();
    assert_eq!(info.arch(), Some(Arch::Aarch64));
    let Ok(Section::Probe(p)) = probe::parse("vfs_read file count pos") else {
        panic!()
    };
    let sites = info.sites(&p).unwrap();
    assert_eq!(sites.len(), 1);
    let site = &sites[0];
    assert_eq!(
        site.perf_fetch_args,
        ["file=%x0:x64", "count=%x2:x64", "pos=%x3:x64"]
    );
    assert_eq!(
        site.target,
        ProbeTarget::Kernel {
            func: "vfs_read".into(),
            offset: 8
        }
    );
    // The prologue loads x0, x2, x3 from the aarch64 pt_regs (regs[0], regs[2], regs[3]).
    let loads: Vec<String> = Listing::new(&site.prologue)
        .iter()
        .map(|l| l.to_string())
        .collect();
    assert_eq!(
        loads,
        [
            "(bf) r6 = r1",
            "(79) r2 = *(u64 *)(r6 +0)",
            "(79) r3 = *(u64 *)(r6 +16)",
            "(79) r4 = *(u64 *)(r6 +24)",
            "(bf) r1 = r6",
        ]
    );
}

/// The value of `name` in the vmlinux's symbol table (`readelf -s`).
fn nm(path: &Path, name: &str) -> u64 {
    let out = std::process::Command::new("readelf")
        .args(["-sW", path.to_str().unwrap()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 8 && f[7] == name).then(|| u64::from_str_radix(f[1], 16).unwrap())
        })
        .unwrap_or_else(|| panic!("no {name} in {}", path.display()))
}

#[test]
fn kernel_globals_are_spelled_from_stext_and_relocated_by_the_running_kernel() {
    for (env, arch) in [
        ("SLUICE_VMLINUX", "amd64"),
        ("SLUICE_VMLINUX_ARM64", "arm64"),
    ] {
        let Some(path) = vmlinux(env, arch) else {
            continue;
        };
        let info = DebugInfo::open(&path, None).unwrap();
        let Ok(Section::Probe(p)) = probe::parse("kprobe/kernel_clone(max_threads, nr_threads)")
        else {
            panic!()
        };
        let sites = info.sites(&p).unwrap();
        assert_eq!(sites.len(), 1, "{arch}");
        let site = &sites[0];
        // perf's spelling (what `perf probe -k VMLINUX -D 'kernel_clone max_threads nr_threads'`
        // prints), and the kernel's: the distance from _stext, which every kallsyms lists.
        assert_eq!(
            site.perf_fetch_args,
            [
                "max_threads=@max_threads+0:s32",
                "nr_threads=@nr_threads+0:s32"
            ],
            "{arch}"
        );
        let stext = nm(&path, "_stext");
        let (max_threads, nr_threads) = (nm(&path, "max_threads"), nm(&path, "nr_threads"));
        assert_eq!(
            site.fetch_args,
            [
                format!("max_threads=@_stext+{:#x}:s32", max_threads - stext),
                format!("nr_threads=@_stext+{:#x}:s32", nr_threads - stext)
            ],
            "{arch}"
        );
        // The link-time prologue loads the vmlinux addresses.
        let text = Listing::new(&site.prologue).to_string();
        for a in [max_threads, nr_threads] {
            let imm = a as i64;
            let as32 = i32::try_from(imm).map(|v| v.to_string());
            assert!(
                text.contains(&format!("{a:#x}")) || as32.is_ok_and(|v| text.contains(&v)),
                "{arch}: {a:#x} in\n{text}"
            );
        }
        // The resolved spec carries @_stext+OFF; a device relocates it with its own
        // kallsyms: here a kernel moved by K.
        let spec = sluice_runtime::probe::debuginfo::resolved_spec(&p, site).unwrap();
        let Ok(Section::Probe(rp)) = probe::parse(&spec) else {
            panic!("{spec}")
        };
        let k: u64 = 0x4bb4_0de0_0000;
        let a = info.arch().unwrap();
        let locs = sluice_core::prologue::from_typed_args_with(a, rp.kind(), rp.args(), &mut |n| {
            (n == "_stext").then_some(stext.wrapping_add(k))
        })
        .unwrap();
        let bases: Vec<_> = locs.fetched().map(|l| l.base()).collect();
        assert_eq!(
            bases,
            [
                sluice_core::prologue::Base::Addr(max_threads.wrapping_add(k)),
                sluice_core::prologue::Base::Addr(nr_threads.wrapping_add(k))
            ],
            "{arch}: {spec}"
        );
        // This host does not run that kernel: the running-kernel prologue is refused, the
        // two symbols' offsets disagreeing (or kallsyms hiding addresses). Once: a
        // resolution in a debug build takes seconds.
        if arch != "arm64" {
            continue;
        }
        let e = info.running_sites(&p).unwrap_err().to_string();
        assert!(
            e.contains("is not the running kernel") || e.contains("kptr_restrict"),
            "{arch}: {e}"
        );
    }
}
