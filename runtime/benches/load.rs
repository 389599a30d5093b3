//! Open + load + close of the peers' `small` and `maps` objects, to compare with libbpf's
//! `bpf_object__open_mem` + `bpf_object__load` + `bpf_object__close` on the same files.
//!
//! The objects are not part of this repository: point `SLUICE_PEER_OBJS` at the folder
//! holding `small.bpf.o` and `maps.bpf.o`. Needs root (it loads into the kernel); without
//! either, each bench says so and measures nothing.
#![allow(missing_docs)]

use sluice_core::object::{Object, ObjectStorage};
use sluice_runtime::{load, LoadOptions};
use std::path::PathBuf;

fn main() {
    divan::main();
}

fn peer(name: &str) -> Option<Vec<u8>> {
    let dir = std::env::var_os("SLUICE_PEER_OBJS").map(PathBuf::from)?;
    if !rustix::process::geteuid().is_root() {
        eprintln!("load bench: not root, nothing measured");
        return None;
    }
    match std::fs::read(dir.join(name)) {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!("load bench: {name}: {e}");
            None
        }
    }
}

fn open_load_close(bencher: divan::Bencher<'_, '_>, name: &str) {
    let Some(bytes) = peer(name) else {
        eprintln!("load bench: set SLUICE_PEER_OBJS to the peers' objs folder (and run as root)");
        return;
    };
    let opts = LoadOptions::default();
    // Fail loudly once, outside the timing, if this object does not load.
    let mut first_storage = ObjectStorage::new();
    let first: sluice_runtime::Result<_> = Object::open(&bytes, &mut first_storage)
        .map_err(sluice_runtime::Error::from)
        .and_then(|o: Object<'_, '_>| load(&o, &opts));
    match first {
        Ok(l) => l.unload(),
        Err(e) => {
            eprintln!("load bench: {name}: {e}");
            return;
        }
    }
    bencher.bench_local(|| {
        let mut storage = ObjectStorage::new();
        let obj = match Object::open(divan::black_box(&bytes), &mut storage) {
            Ok(o) => o,
            Err(_) => return,
        };
        if let Ok(l) = load(&obj, &opts) {
            l.unload();
        }
    });
}

#[divan::bench(sample_count = 200)]
fn small(bencher: divan::Bencher<'_, '_>) {
    open_load_close(bencher, "small.bpf.o");
}

#[divan::bench(sample_count = 200)]
fn maps(bencher: divan::Bencher<'_, '_>) {
    open_load_close(bencher, "maps.bpf.o");
}
