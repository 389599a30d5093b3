//! The loader's debug-info path without a kernel: `tests/dwarf/vars.c` compiled at test time
//! (`gcc -g -O0`), programs of `tests/bpf/dwarf_chain.o` given specs on it through
//! [`LoadOptions::specs`]. Several sites (an inlined function) give one variant (prologue
//! and site) each in the program's [`Plan`]; kernel probes without
//! [`LoadOptions::debuginfo`] and unknown variables are refused with the file, function,
//! variable and address named.
#![cfg(target_arch = "x86_64")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::path::{Path, PathBuf};
use std::process::Command;

use sluice_core::object::Program;
use sluice_core::object::{Object, ObjectStorage};
use sluice_core::prologue::PROBE_READ_KERNEL;
use sluice_core::Insn;
use sluice_runtime::probe::debuginfo::Site;
use sluice_runtime::probe::debuginfo::{resolved_spec, DebugInfo};
use sluice_runtime::probe::{program_spec, Plan};
use sluice_runtime::tracefs::ProbeTarget;
use sluice_runtime::LoadOptions;

/// The DWARF sites program `i`'s plan loads a copy of it for, one per variant.
fn plan_sites(p: &Program<'_>, i: usize, opts: &LoadOptions) -> sluice_runtime::Result<Vec<Site>> {
    Plan::new(p, i, opts).map(|plan| {
        plan.variants()
            .iter()
            .filter_map(|v| v.site.clone())
            .collect()
    })
}

/// The prologue of program `i`'s plan's first variant (the only one without sites).
fn plan_prologue(
    p: &Program<'_>,
    i: usize,
    opts: &LoadOptions,
) -> sluice_runtime::Result<Vec<Insn>> {
    Plan::new(p, i, opts).map(|plan| {
        plan.variants()
            .first()
            .map(|v| v.prologue.clone())
            .unwrap_or_default()
    })
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// vars.c built with `-O{opt}` into a folder of its own (`test` names it: tests run in
/// parallel).
fn build_vars(test: &str, opt: &str) -> Option<PathBuf> {
    let dir =
        std::env::temp_dir().join(format!("sluice-dwarf-sites-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("vars_O{opt}"));
    let ok = Command::new("gcc")
        .args(["-g", &format!("-O{opt}"), "-o"])
        .arg(&out)
        .arg(repo().join("tests/dwarf/vars.c"))
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(out);
    }
    assert!(
        std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
        "gcc is needed (SLUICE_REQUIRE_KERNEL=1)"
    );
    eprintln!("SKIPPED: gcc unavailable (install gcc)");
    None
}

fn with_object(f: impl FnOnce(&Object<'_, '_>, usize)) {
    let bytes = std::fs::read(repo().join("tests/bpf/dwarf_chain.o")).unwrap();
    let mut storage = ObjectStorage::new();
    let obj = Object::open(&bytes, &mut storage).unwrap();
    let chain = obj
        .programs()
        .iter()
        .position(|p| p.name == Some("chain"))
        .unwrap();
    f(&obj, chain);
}

fn opts_with(obj: &Object<'_, '_>, index: usize, spec: String) -> LoadOptions {
    let mut o = LoadOptions::default();
    o.specs = vec![Vec::new(); obj.programs().len()];
    o.specs[index] = vec![spec];
    o
}

#[test]
fn inlined_function_gives_one_prologue_per_site() {
    let Some(bin) = build_vars("inlined_func", "0") else {
        return;
    };
    with_object(|obj, i| {
        let spec = format!("uprobe/{}:scale(x, factor, $err)", bin.display());
        let opts = opts_with(obj, i, spec.clone());
        let p = &obj.programs()[i];
        assert_eq!(program_spec(p, i, &opts), spec);
        let sites = plan_sites(p, i, &opts).unwrap();
        assert_eq!(sites.len(), 2, "{sites:#?}");
        assert!(sites.iter().all(|s| s.inlined && s.function == "scale"));
        assert_ne!(sites[0].address, sites[1].address);
        // Each site has its own locations (the inlined copies' own frame slots).
        assert_ne!(sites[0].fetch_args, sites[1].fetch_args);
        assert_ne!(sites[0].prologue, sites[1].prologue);
        for s in &sites {
            let ProbeTarget::User { path, offset, .. } = &s.target else {
                panic!("{:?}", s.target)
            };
            assert_eq!(path, &bin);
            assert_eq!(Some(*offset), s.file_offset);
            assert!(!s.prologue.is_empty());
        }
        // The first variant is the first site's (load() loads one program per site).
        assert_eq!(plan_prologue(p, i, &opts).unwrap(), sites[0].prologue);
    });
}

#[test]
fn typed_and_register_args_mix_with_variables() {
    let Some(bin) = build_vars("typed_and_re", "2") else {
        return;
    };
    with_object(|obj, i| {
        let spec = format!(
            "uprobe/{}:process+0($err, %si, file->pos, $arg4)",
            bin.display()
        );
        let sites = plan_sites(&obj.programs()[i], i, &opts_with(obj, i, spec)).unwrap();
        assert_eq!(sites.len(), 1);
        let s = &sites[0];
        assert_eq!(s.fetch_args[0], "arg1=%si:u64");
        assert!(s.fetch_args[1].starts_with("pos=+"), "{:?}", s.fetch_args);
        assert!(s.fetch_args[1].ends_with("(%di):s64"), "{:?}", s.fetch_args);
        assert_eq!(s.fetch_args[2], "arg3=%cx:u64");
        assert_eq!(s.fetch_args.len(), 3, "$err fetches nothing");
    });
}

#[test]
fn kernel_probes_read_kernel_memory_from_the_given_file() {
    let Some(bin) = build_vars("kernel_probe", "0") else {
        return;
    };
    with_object(|obj, i| {
        let spec = "kprobe/process+0(file->f_mapping->refs)".to_string();
        let mut opts = opts_with(obj, i, spec);
        let p = &obj.programs()[i];
        let e = plan_sites(p, i, &opts).unwrap_err().to_string();
        assert!(e.contains("debuginfo") && e.contains("chain"), "{e}");
        opts.debuginfo = Some(bin.clone());
        let sites = plan_sites(p, i, &opts).unwrap();
        let s = &sites[0];
        assert_eq!(
            s.target,
            ProbeTarget::Kernel {
                func: "process".into(),
                offset: 0
            }
        );
        assert!(s
            .prologue
            .iter()
            .any(|insn| insn.code() == 0x85 && insn.imm() == PROBE_READ_KERNEL));
        assert_eq!(plan_prologue(p, i, &opts).unwrap(), s.prologue);
    });
}

/// A spec resolved on one machine (`sluice prologue --emit`) is a spec without variables:
/// loaded with no debug info at all, it gets the prologue and the kernel fetch-args the
/// debug info gave for its site, at the same place.
#[test]
fn resolved_specs_load_the_same_prologue_without_debug_info() {
    let Some(bin) = build_vars("resolved_spec", "2") else {
        return;
    };
    let b = bin.display().to_string();
    with_object(|obj, i| {
        let p = &obj.programs()[i];
        let cases = [
            (format!("uprobe/{b}:scale(x, factor, $err)"), false),
            (
                format!("uprobe/{b}:process+0($err, %si, file->pos, $arg4)"),
                false,
            ),
            (
                format!("uprobe/{b}:process(a_ops=file->f_mapping->a_ops, bytes, bytes)"),
                false,
            ),
            (
                "kprobe/process+0(file->f_mapping->refs, sc)".to_string(),
                true,
            ),
            (
                "w=process+0 file->f_mapping->a_ops->flags us".to_string(),
                true,
            ),
        ];
        let mut checked = 0;
        for (spec, kernel) in cases {
            let mut opts = opts_with(obj, i, spec.clone());
            if kernel {
                opts.debuginfo = Some(bin.clone());
            }
            let sites = plan_sites(p, i, &opts).unwrap();
            let parsed = match sluice_core::probe::parse(&spec).unwrap() {
                sluice_core::probe::Section::Probe(s) => s,
                sluice_core::probe::Section::Title(t) => panic!("{t}"),
            };
            for site in &sites {
                let resolved = resolved_spec(&parsed, site).unwrap();
                assert!(!resolved.contains("->"), "{resolved}");
                let plain = opts_with(obj, i, resolved.clone());
                assert_eq!(plain.debuginfo, None);
                assert_eq!(
                    plan_prologue(p, i, &plain).unwrap(),
                    site.prologue,
                    "{spec} -> {resolved}"
                );
                // The kernel's fetch-args: the site's, names made distinct.
                let again = match sluice_core::probe::parse(&resolved).unwrap() {
                    sluice_core::probe::Section::Probe(s) => s,
                    sluice_core::probe::Section::Title(t) => panic!("{t}"),
                };
                assert_eq!(
                    sluice_runtime::probe::fetch_args(&again),
                    sluice_runtime::probe::unique_arg_names(&site.fetch_args).join(" "),
                    "{resolved}"
                );
                assert_eq!(again.event(), parsed.event());
                match &site.target {
                    ProbeTarget::Kernel { func, offset } => {
                        assert_eq!(again.func(), Some(func.as_str()));
                        assert_eq!(again.place(), sluice_core::probe::Place::Offset(*offset));
                    }
                    ProbeTarget::User { offset, .. } => assert_eq!(
                        again.target(),
                        sluice_core::probe::Target::UserOffset {
                            path: &b,
                            offset: *offset
                        }
                    ),
                }
                checked += 1;
            }
        }
        assert!(checked >= 6, "{checked}");
        // A uprobe's global is an offset in the file, the uprobe tracer's `@+0x...`: the
        // resolved spec spells it so, and its fetch-args are the site's.
        let spec = format!("uprobe/{b}:process+0(counter)");
        let sites = plan_sites(p, i, &opts_with(obj, i, spec.clone())).unwrap();
        let parsed = match sluice_core::probe::parse(&spec).unwrap() {
            sluice_core::probe::Section::Probe(s) => s,
            sluice_core::probe::Section::Title(t) => panic!("{t}"),
        };
        let resolved = resolved_spec(&parsed, &sites[0]).unwrap();
        assert!(resolved.contains("counter=@+0x"), "{resolved}");
        // gcc builds a PIE: both prologues read the global at the program counter plus the
        // same distance (DWARF: link-time addresses; resolved: file offsets).
        assert_eq!(
            plan_prologue(p, i, &opts_with(obj, i, resolved.clone())).unwrap(),
            sites[0].prologue,
            "{spec} -> {resolved}"
        );
        let again = match sluice_core::probe::parse(&resolved).unwrap() {
            sluice_core::probe::Section::Probe(s) => s,
            sluice_core::probe::Section::Title(t) => panic!("{t}"),
        };
        assert_eq!(
            sluice_runtime::probe::fetch_args(&again),
            sluice_runtime::probe::unique_arg_names(&sites[0].fetch_args).join(" "),
            "{resolved}"
        );
    });
}

#[test]
fn unknown_variable_names_file_function_variable_and_address() {
    let Some(bin) = build_vars("unknown_vari", "0") else {
        return;
    };
    with_object(|obj, i| {
        let spec = format!("uprobe/{}:process(nosuch)", bin.display());
        let e = plan_prologue(&obj.programs()[i], i, &opts_with(obj, i, spec))
            .unwrap_err()
            .to_string();
        for w in [
            "program 'chain'",
            &bin.display().to_string(),
            "process",
            "'nosuch'",
            " at 0x",
        ] {
            assert!(e.contains(w), "'{w}' missing from: {e}");
        }
    });
}

#[test]
fn separate_debug_file_is_found_by_debuglink() {
    let Some(bin) = build_vars("separate_deb", "0") else {
        return;
    };
    let dir = bin.parent().unwrap();
    let debug = dir.join("vars.debug");
    let stripped = dir.join("vars.stripped");
    let run = |args: &[&std::ffi::OsStr]| {
        Command::new("objcopy")
            .args(args)
            .status()
            .is_ok_and(|s| s.success())
    };
    let ok = run(&[
        "--only-keep-debug".as_ref(),
        bin.as_os_str(),
        debug.as_os_str(),
    ]) && run(&[
        "--strip-debug".as_ref(),
        format!("--add-gnu-debuglink={}", debug.display()).as_ref(),
        bin.as_os_str(),
        stripped.as_os_str(),
    ]);
    if !ok {
        eprintln!("SKIPPED: objcopy unavailable (binutils)");
        return;
    }
    let info = DebugInfo::open(&stripped, None).unwrap();
    assert_eq!(info.path(), stripped);
    assert_eq!(info.debug_path().file_name(), debug.file_name());
    let text = format!("uprobe/{}:twice(a, b)", stripped.display());
    let Ok(sluice_core::probe::Section::Probe(p)) = sluice_core::probe::parse(&text) else {
        panic!()
    };
    let from_stripped = info.sites(&p).unwrap();
    let from_full = DebugInfo::open(&bin, None).unwrap().sites(&p).unwrap();
    assert_eq!(from_stripped[0].fetch_args, from_full[0].fetch_args);
    assert_eq!(from_stripped[0].address, from_full[0].address);
}
