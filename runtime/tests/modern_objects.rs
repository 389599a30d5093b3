//! Objects as compilers write them today, loaded into this host's kernel and compared
//! with libbpf's view of the same object: programs (name, section, instruction count once
//! the called functions are appended), maps (kernel name, type, sizes, entries, flags).
//!
//! The oracle, `modern_libbpf_view.c`, is built at test time with `cc ... -lbpf`.
//! Objects: the fixtures with BTF, and the peers' benchmark objects from
//! `SLUICE_PEER_OBJS=DIR` (`maps.bpf.o`, `globals.bpf.o`, `large.bpf.o`; never committed:
//! without the variable the test says so loudly and checks the fixtures only).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;
mod modern_support;

use modern_support::{libbpf_view, oracle};

use sluice_core::object::{Object, ObjectStorage};
use sluice_runtime::{load, Error, LoadOptions};
use std::path::{Path, PathBuf};

/// Our view, in the oracle's format: opened (instruction counts linked) and, with `load`,
/// loaded (maps as created).
fn our_view(path: &Path, load_it: bool) -> Result<Vec<String>, Error> {
    let bytes = std::fs::read(path).unwrap();
    let mut storage = Box::new(ObjectStorage::new());
    let obj = Object::open(&bytes, &mut storage)?;
    let file = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut lines = Vec::new();
    for (i, p) in obj.programs().iter().enumerate() {
        if !p.is_subprogram() {
            lines.push(format!(
                "prog {} {} {}",
                p.name.unwrap_or(""),
                p.section_name,
                obj.linked_len(i)?
            ));
        }
    }
    if load_it {
        let mut opts = LoadOptions::default();
        opts.object_name = Some(file);
        let loaded = load(&obj, &opts)?;
        assert_eq!(
            loaded.btf_fd().is_some(),
            obj.btf_bytes().is_some(),
            "{}: the kernel took the object's BTF",
            path.display()
        );
        for (p, lp) in obj
            .programs()
            .iter()
            .filter(|p| !p.is_subprogram())
            .zip(loaded.programs())
        {
            assert_eq!(
                lp.insns().len(),
                obj.linked_len(lp.index())?,
                "{}",
                p.section_name
            );
        }
        for (m, def) in loaded.maps().iter().zip(obj.maps()) {
            lines.push(format!(
                "map {} {} {} {} {} {} {}",
                m.name(),
                m.map_type(),
                m.key_size(),
                m.value_size(),
                m.max_entries(),
                def.map_flags.unwrap_or(0),
                def.numa_node
            ));
        }
    } else {
        for m in obj.maps() {
            let n = m.kernel_name(&file);
            let end = n.iter().position(|&b| b == 0).unwrap_or(n.len());
            lines.push(format!(
                "map {} {} {} {} {} {} {}",
                String::from_utf8_lossy(&n[..end]),
                m.map_type,
                m.key_size,
                m.value_size,
                m.max_entries,
                m.map_flags.unwrap_or(0),
                m.numa_node
            ));
        }
    }
    Ok(lines)
}

fn objects() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = ["modern.o", "btf_core.o", "btf_kinds.o", "modern_kconfig.o"]
        .iter()
        .map(|n| common::fixture_dir().join(n))
        .collect();
    match std::env::var_os("SLUICE_PEER_OBJS") {
        Some(dir) => {
            for n in ["maps.bpf.o", "globals.bpf.o", "large.bpf.o"] {
                let p = Path::new(&dir).join(n);
                assert!(p.exists(), "SLUICE_PEER_OBJS: {} missing", p.display());
                v.push(p);
            }
        }
        None => eprintln!(
            "NOTE: SLUICE_PEER_OBJS is not set: the peers' maps/globals/large objects are \
             not compared (set it to their objs/ folder)"
        ),
    }
    v
}

#[test]
fn opened_like_libbpf() {
    let Some(oracle) = oracle() else { return };
    for path in objects()
        .iter()
        .chain([&common::fixture_dir().join("btf_maps.o")])
    {
        let ours = our_view(path, false).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let theirs: Vec<String> = libbpf_view(&oracle, path, false)
            .into_iter()
            // libbpf's counts before load are the functions alone: compare maps only.
            .filter(|l| l.starts_with("map "))
            .collect();
        let ours_maps: Vec<&String> = ours.iter().filter(|l| l.starts_with("map ")).collect();
        let theirs: Vec<&String> = theirs.iter().collect();
        assert_eq!(ours_maps, theirs, "{}", path.display());
    }
}

#[test]
fn loaded_like_libbpf() {
    if !common::kernel("loaded_like_libbpf") {
        return;
    }
    let Some(oracle) = oracle() else { return };
    for path in objects() {
        let ours = our_view(&path, true).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let theirs = libbpf_view(&oracle, &path, true);
        assert_eq!(ours, theirs, "{}", path.display());
        eprintln!("{}: {} lines equal libbpf's", path.display(), ours.len());
    }
}
