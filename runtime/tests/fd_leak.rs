//! No fd leaks: its own test binary (own process), so no other test opens fds meanwhile.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use sluice_core::object::{Object, ObjectStorage};
use sluice_runtime::{load, LoadOptions};

#[test]
fn thousand_load_unload_cycles_leave_the_fd_table_as_it_was() {
    if !common::kernel("thousand_load_unload_cycles_leave_the_fd_table_as_it_was") {
        return;
    }
    // 4 maps (hash, array, per-CPU array, perf event array) and 3 programs per cycle.
    let bytes = common::fixture("legacy_maps.o");
    let mut storage = ObjectStorage::new();
    let obj = Object::open(&bytes, &mut storage).unwrap();
    let opts = LoadOptions::default();
    // Warm up once: lazily opened files (sysfs CPU list) are read before counting.
    load(&obj, &opts).unwrap().unload();
    let before = common::fd_count();
    let mut ids = Vec::new();
    for i in 0..1000 {
        let l = load(&obj, &opts).unwrap_or_else(|e| panic!("cycle {i}: {e}"));
        assert_eq!(
            common::fd_count(),
            before + 7 + usize::from(l.btf_fd().is_some()),
            "cycle {i}: 4 map + 3 program fds (+ the object's BTF) while loaded"
        );
        if i % 250 == 0 {
            ids.push(l.report().unwrap()[0].info.id);
        }
        l.unload();
    }
    assert_eq!(common::fd_count(), before);
    // Each cycle made new kernel programs.
    assert!(ids.windows(2).all(|w| w[1] > w[0]), "{ids:?}");

    // Failing loads close what they created too (bad_verifier.o: one map, then a refusal).
    let bad = common::fixture("bad_verifier.o");
    let mut storage = ObjectStorage::new();
    let bad = Object::open(&bad, &mut storage).unwrap();
    for _ in 0..100 {
        assert!(load(&bad, &opts).is_err());
    }
    assert_eq!(common::fd_count(), before);
}
