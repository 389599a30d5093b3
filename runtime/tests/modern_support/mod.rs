//! The libbpf oracle of the modern_* tests: `modern_libbpf_view.c`, built at test time.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the libbpf oracle into the target directory; `None` (with a loud message)
/// without a C compiler or libbpf, a failure under `SLUICE_REQUIRE_KERNEL=1`.
pub fn oracle() -> Option<PathBuf> {
    // Built once per process: the tests run in parallel threads.
    static ORACLE: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    ORACLE.get_or_init(build_oracle).clone()
}

fn build_oracle() -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/modern_libbpf_view.c");
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("modern_libbpf_view");
    let st = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&out)
        .arg(&src)
        .arg("-lbpf")
        .status();
    if st.is_ok_and(|s| s.success()) {
        return Some(out);
    }
    assert!(
        !super::common::required(),
        "cannot build the libbpf oracle (cc, libbpf-dev)"
    );
    eprintln!("SKIPPED: cannot build the libbpf oracle (need cc and libbpf-dev)");
    None
}

pub fn libbpf_view(oracle: &Path, obj: &Path, load: bool) -> Vec<String> {
    let mut c = Command::new(oracle);
    if load {
        c.arg("-l");
    }
    let out = c.arg(obj).output().unwrap();
    assert!(
        out.status.success(),
        "libbpf could not {} {}: {}",
        if load { "load" } else { "open" },
        obj.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Whether libbpf loads `obj` into this kernel (every program, as it does by default).
pub fn libbpf_loads(oracle: &Path, obj: &Path) -> bool {
    Command::new(oracle)
        .arg("-l")
        .arg(obj)
        .output()
        .is_ok_and(|o| o.status.success())
}
