//! Shared by the kernel tests: gating on root and on a working `bpf()`, fixture paths.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use rustix::io::Errno;
use sluice_core::perf::abi::{map_type, MapCreateAttr};
use std::path::PathBuf;

/// Whether kernel tests must run (fail instead of skipping).
pub fn required() -> bool {
    std::env::var_os("SLUICE_REQUIRE_KERNEL").is_some_and(|v| v == "1")
}

/// `true` when the kernel tests can run here: root, and a `bpf()` that works (qemu-user
/// answers ENOSYS). Otherwise says so loudly and returns `false`, or panics under
/// `SLUICE_REQUIRE_KERNEL=1`.
pub fn kernel(test: &str) -> bool {
    let why = if !rustix::process::geteuid().is_root() {
        Some("not root".to_string())
    } else {
        let attr = MapCreateAttr {
            map_type: map_type::ARRAY,
            key_size: 4,
            value_size: 4,
            max_entries: 1,
            ..Default::default()
        };
        match sluice_runtime::sys::bpf::map_create(&attr) {
            Ok(_) => None,
            Err(e) if e == Errno::NOSYS => {
                Some(format!("bpf() is not implemented here ({e}); qemu-user?"))
            }
            Err(e) => Some(format!("bpf(BPF_MAP_CREATE) fails: {e}")),
        }
    };
    match why {
        None => true,
        Some(why) if required() => panic!("{test}: SLUICE_REQUIRE_KERNEL=1 but {why}"),
        Some(why) => {
            eprintln!("\n*** SKIPPED kernel test {test}: {why} ***\n");
            false
        }
    }
}

/// The fixture folder (`tests/bpf` at the workspace root, or `SLUICE_FIXTURES`).
pub fn fixture_dir() -> PathBuf {
    std::env::var_os("SLUICE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/bpf"))
}

/// Every `tests/bpf/*.o`, sorted.
pub fn fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixture_dir())
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "o"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Bytes of fixture `name` (e.g. `no_version.o`).
pub fn fixture(name: &str) -> Vec<u8> {
    let p = fixture_dir().join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Number of open fds of this process.
pub fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}
