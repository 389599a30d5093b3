//! The libbpf oracle of the modern_* tests: `modern_libbpf_view.c`, built at test time.
#![allow(dead_code)]

use sluice_core::object::{Object, ObjectStorage};
use sluice_runtime::{load, Error, LoadOptions};
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

/// libbpf's view of `obj`, or `None` when libbpf refuses it (`load`: refuses to load it).
pub fn libbpf_view_if_accepted(oracle: &Path, obj: &Path, load: bool) -> Option<Vec<String>> {
    let mut c = Command::new(oracle);
    if load {
        c.arg("-l");
    }
    let out = c.arg(obj).output().ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    })
}

/// Whether libbpf loads `obj` into this kernel (every program, as it does by default).
pub fn libbpf_loads(oracle: &Path, obj: &Path) -> bool {
    Command::new(oracle)
        .arg("-l")
        .arg(obj)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Our view, in the oracle's format: opened (instruction counts linked) and, with `load`,
/// loaded (maps as created).
pub fn our_view(path: &Path, load_it: bool) -> Result<Vec<String>, Error> {
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
            // As libbpf names them (see the open view below): the kernel holds 15 bytes.
            let name = if def.kind.is_internal() {
                m.name().to_owned()
            } else {
                def.name.to_owned()
            };
            lines.push(format!(
                "map {} {} {} {} {} {} {}",
                name,
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
            // libbpf's `bpf_map__name`: the symbol's whole name for the object's own maps,
            // the built name (`obj.rodata`, cut to the kernel's 15 bytes) for internal ones.
            let n = m.kernel_name(&file);
            let end = n.iter().position(|&b| b == 0).unwrap_or(n.len());
            let name = if m.kind.is_internal() {
                String::from_utf8_lossy(&n[..end]).into_owned()
            } else {
                m.name.to_owned()
            };
            lines.push(format!(
                "map {} {} {} {} {} {} {}",
                name,
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
