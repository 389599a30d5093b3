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

use modern_support::{libbpf_view, oracle, our_view};

use std::path::{Path, PathBuf};

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
