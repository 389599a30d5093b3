//! open + relocate of every program, on the fixtures (divan). The side-by-side figures
//! against libbpf and aya-obj come from `benches/vs_peers.sh` (callgrind instructions).
#![allow(missing_docs, clippy::unwrap_used, clippy::indexing_slicing)]

use sluice_core::object::ObjectStorage;
use sluice_core::{Insn, Object};
use std::path::PathBuf;

fn main() {
    divan::main();
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/bpf")
            .join(name),
    )
    .unwrap()
}

/// Opens `bytes` and relocates every program that links without call/data relocations.
fn open_relocate(bytes: &[u8], out: &mut [Insn]) -> usize {
    let mut storage = ObjectStorage::new();
    let obj = Object::open(bytes, &mut storage).unwrap();
    let mut n = 0;
    for p in 0..obj.programs().len() {
        n += obj.relocate(p, &[], &[3; 128], out).unwrap_or(0);
    }
    n
}

#[divan::bench(args = ["seed_write.o", "legacy_maps.o", "maps_36.o", "kprobes.o", "insns.o", "modern.o"])]
fn open_and_relocate(bencher: divan::Bencher, name: &str) {
    let bytes = fixture(name);
    let mut out = vec![Insn::default(); 1 << 14];
    bencher.bench_local(|| open_relocate(divan::black_box(&bytes), &mut out));
}

#[divan::bench(args = ["seed_write.o", "legacy_maps.o", "insns.o", "modern.o"])]
fn open_only(bencher: divan::Bencher, name: &str) {
    let bytes = fixture(name);
    bencher.bench_local(|| {
        let mut storage = ObjectStorage::new();
        let obj = Object::open(divan::black_box(&bytes), &mut storage).unwrap();
        obj.programs().len()
    });
}
