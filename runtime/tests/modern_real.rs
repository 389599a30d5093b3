//! Real objects no one here wrote, as Debian ships them (libxdp, xdp-tools, the BPF
//! objects inside libbpf-tools' executables), pinned in `tests/real/objects.sha256` and
//! fetched by `tests/real/fetch.sh` into a cache outside the repository.
//!
//! `SLUICE_REAL_OBJS=DIR` (the cache) enables the test; without it, it says so loudly.
//! Every object must open or be refused with an error (never a panic); every object whose
//! programs are all kprobes, tracepoints or perf events ("tracing") must load into this
//! host's kernel whenever libbpf loads it (the oracle of `modern_support`); when libbpf
//! cannot either (CO-RE against fields this kernel dropped, ...), ours must be refused
//! too, with the verifier naming why. The counts are printed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;
mod modern_support;

use sluice_core::object::{Object, ObjectStorage};
use sluice_core::perf::abi::prog_type;
use sluice_runtime::probe::section_prog_type;
use sluice_runtime::{load, LoadOptions};
use std::path::{Path, PathBuf};

fn pinned() -> Vec<String> {
    let list = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/real/objects.sha256");
    std::fs::read_to_string(list)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split_whitespace().nth(1).unwrap().to_owned())
        .collect()
}

#[test]
fn real_objects_open_and_tracing_ones_load() {
    let Some(dir) = std::env::var_os("SLUICE_REAL_OBJS").map(PathBuf::from) else {
        eprintln!(
            "SKIPPED: SLUICE_REAL_OBJS is not set (run tests/real/fetch.sh and point it at \
             the cache it prints)"
        );
        return;
    };
    let kernel = common::kernel("real_objects_open_and_tracing_ones_load");
    let oracle = modern_support::oracle();
    let (mut opened, mut refused, mut tracing, mut loaded, mut both_refuse) = (0, 0, 0, 0, 0);
    let (mut compared_open, mut compared_load) = (0, 0);
    let names = pinned();
    for name in &names {
        let path = dir.join(name);
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut storage = Box::new(ObjectStorage::new());
        let obj = match Object::open(&bytes, &mut storage) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("{name}: refused at open: {e}");
                refused += 1;
                continue;
            }
        };
        opened += 1;
        // Where libbpf opens it too, the maps it would create equal ours (its instruction
        // counts before load are the functions alone, so programs are compared after load).
        if let Some(o) = oracle.as_deref() {
            if let Some(theirs) = modern_support::libbpf_view_if_accepted(o, &path, false) {
                let ours = modern_support::our_view(&path, false)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                let pick = |v: &[String]| -> Vec<String> {
                    v.iter()
                        .filter(|l| l.starts_with("map "))
                        .cloned()
                        .collect()
                };
                assert_eq!(
                    pick(&ours),
                    pick(&theirs),
                    "{name}: maps as libbpf opens them"
                );
                compared_open += 1;
            }
        }
        // Every program links (its length is known up front) or says why not.
        for (i, p) in obj.programs().iter().enumerate() {
            if let Err(e) = obj.linked_len(i) {
                eprintln!("{name}: {}: {e}", p.section_name);
            }
        }
        let is_tracing = obj.programs().iter().any(|p| !p.is_subprogram())
            && obj
                .programs()
                .iter()
                .filter(|p| !p.is_subprogram())
                .all(|p| {
                    matches!(
                        section_prog_type(p.section_name),
                        Some(prog_type::KPROBE | prog_type::TRACEPOINT | prog_type::PERF_EVENT)
                    )
                });
        if !is_tracing {
            continue;
        }
        tracing += 1;
        if !kernel {
            continue;
        }
        let mut opts = LoadOptions::default();
        opts.object_name = Some(name.rsplit('/').next().unwrap().to_owned());
        let libbpf = oracle
            .as_deref()
            .is_none_or(|o| modern_support::libbpf_loads(o, &path));
        match load(&obj, &opts) {
            Ok(l) => {
                assert!(libbpf, "{name}: loads with sluice but not with libbpf");
                loaded += 1;
                drop(l);
                // Both load it: programs (linked instruction counts) and maps as created
                // equal libbpf's.
                if let Some(o) = oracle.as_deref() {
                    let theirs = modern_support::libbpf_view(o, &path, true);
                    let ours = modern_support::our_view(&path, true)
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    assert_eq!(ours, theirs, "{name}: loaded view");
                    compared_load += 1;
                }
            }
            Err(e) if !libbpf => {
                both_refuse += 1;
                eprintln!("{name}: refused by this kernel, as libbpf's load is: {e}");
            }
            Err(e) => panic!("{name}: tracing object does not load: {e}\n{}", {
                e.verifier_log()
                    .map(|l| String::from_utf8_lossy(l).into_owned())
                    .unwrap_or_default()
            }),
        }
    }
    eprintln!(
        "real objects: {} pinned, {opened} opened, {refused} refused with an error, \
         {tracing} tracing, {loaded} loaded, {both_refuse} refused by this kernel as \
         libbpf's load is; maps equal libbpf's for {compared_open} opened, programs and maps \
         equal libbpf's for {compared_load} loaded",
        names.len()
    );
    assert_eq!(opened + refused, names.len());
    assert_eq!(refused, 0, "every real object opens");
}

/// Every program of every libbpf-tools object, loaded and attached on its own (its plan
/// alone through `load_planned`, then a `Linker`), as the kernel takes it: the counts by
/// section kind are printed. Every `tp_btf/` and `raw_tp/` program whose tracepoint this
/// kernel's BTF has must load and attach (they need neither kprobes nor trampolines); any
/// other failure must name the program.
#[test]
fn real_programs_load_and_attach_one_by_one() {
    use sluice_runtime::attach::{Linker, Scope};
    use sluice_runtime::load::load_planned;
    use sluice_runtime::probe::{plans, Attach};
    use sluice_runtime::tracefs::Tracefs;
    use std::collections::BTreeMap;
    let Some(dir) = std::env::var_os("SLUICE_REAL_OBJS").map(PathBuf::from) else {
        eprintln!("SKIPPED: SLUICE_REAL_OBJS is not set (run tests/real/fetch.sh)");
        return;
    };
    if !common::kernel("real_programs_load_and_attach_one_by_one") {
        return;
    }
    // The tracepoints of this kernel's BTF (`btf_trace_NAME` typedefs), read once.
    let vmlinux = std::fs::read("/sys/kernel/btf/vmlinux").unwrap_or_default();
    let mut index = vec![0u32; sluice_core::btf::Btf::count_types(&vmlinux).unwrap() as usize];
    let btf = sluice_core::btf::Btf::parse(&vmlinux, &mut index).unwrap();
    let tracepoints: std::collections::BTreeSet<String> = btf
        .types()
        .filter(|t| t.kind() == sluice_core::btf::Kind::Typedef)
        .filter_map(|t| t.name().strip_prefix("btf_trace_").map(str::to_owned))
        .collect();
    let has_tracepoint = |name: &str| tracepoints.contains(name);
    let tracefs = Tracefs::find().unwrap();
    let cpus = sluice_runtime::kernel::cpus::online().unwrap();
    let linker = Linker {
        tracefs: &tracefs,
        cpus: &cpus,
        scope: Scope::System,
        ring: Default::default(),
        pmu: true,
    };
    // kind -> (programs, attached)
    let mut by_kind: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    let (mut total, mut attached) = (0, 0);
    for name in pinned().iter().filter(|n| n.starts_with("libbpf-tools/")) {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let mut storage = Box::new(ObjectStorage::new());
        let obj = Object::open(&bytes, &mut storage).unwrap();
        let mut opts = LoadOptions::default();
        opts.object_name = Some(name.rsplit('/').next().unwrap().to_owned());
        for plan in plans(&obj, &opts).unwrap() {
            let kind = plan
                .spec()
                .split(['/', ' '])
                .next()
                .unwrap_or_default()
                .to_owned();
            let entry = by_kind.entry(kind.clone()).or_default();
            entry.0 += 1;
            total += 1;
            let must = matches!(kind.as_str(), "tp_btf" | "raw_tp" | "raw_tracepoint")
                && has_tracepoint(plan.spec().split('/').nth(1).unwrap_or_default());
            if let Attach::Skip(why) = plan.attach() {
                assert!(!must, "{name}: {}: {why}", plan.program());
                failures.push(format!("{name}: {} skipped: {why}", plan.program()));
                continue;
            }
            let outcome = load_planned(&obj, std::slice::from_ref(&plan), &opts)
                .map_err(|e| e.to_string())
                .and_then(|l| {
                    let prog = l.programs().first().unwrap();
                    linker
                        .attach(&plan, prog)
                        .map(drop)
                        .map_err(|e| e.to_string())
                });
            match outcome {
                Ok(()) => {
                    entry.1 += 1;
                    attached += 1;
                }
                Err(e) => {
                    // Maps user space sizes (max_entries 0) are --map-size's business.
                    let sized = e.contains("max_entries") || e.contains("Invalid argument");
                    assert!(!must || sized, "{name}: {}: {e}", plan.program());
                    assert!(!e.is_empty());
                    failures.push(format!("{name}: {}: {e}", plan.program()));
                }
            }
        }
    }
    for f in &failures {
        eprintln!("not attached: {f}");
    }
    for (kind, (n, ok)) in &by_kind {
        eprintln!("real programs {kind}: {ok} of {n} load and attach");
    }
    eprintln!("real programs: {attached} of {total} load and attach on this host");
    assert!(attached > 0);
}
