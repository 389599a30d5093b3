//! Loading modern objects: `.kconfig` externs filled from the running kernel's
//! configuration, a verifier refusal inside a called subprogram that names its source line
//! (line_info of the appended function), the object's BTF sanitised as for an old kernel.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use sluice_core::object::{MapKind, Object, ObjectStorage, MAX_EXTERNS};
use sluice_runtime::kernel::config::read_kernel_config;
use sluice_runtime::kernel::features::Features;
use sluice_runtime::kernel::version::running_kernel_version;
use sluice_runtime::load::btf::{fixup, load as btf_load, sanitize};
use sluice_runtime::{load, Error, LoadOptions};

fn config_value(config: &str, name: &str) -> Option<String> {
    config
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('=').map(str::to_owned))
}

#[test]
fn kconfig_externs_hold_the_kernel_configuration() {
    if !common::kernel("kconfig_externs_hold_the_kernel_configuration") {
        return;
    }
    let bytes = common::fixture("modern_kconfig.o");
    let mut storage = Box::new(ObjectStorage::new());
    let obj = Object::open(&bytes, &mut storage).unwrap();
    let mut slots = vec![None; MAX_EXTERNS];
    let n = obj.kconfig_externs(&mut slots).unwrap();
    let externs: Vec<_> = slots.into_iter().take(n).flatten().collect();
    assert_eq!(n, 7);
    let mut opts = LoadOptions::default();
    opts.object_name = Some("modern_kconfig.o".into());
    let loaded = load(&obj, &opts).unwrap();
    let (i, _) = obj
        .maps()
        .iter()
        .enumerate()
        .find(|(_, m)| m.kind == MapKind::Kconfig)
        .unwrap();
    let map = &loaded.maps()[i];
    assert_eq!(map.name(), "modern_.kconfig");
    let value = map.get_bytes(&0u32.to_ne_bytes()).unwrap().unwrap();
    let config = read_kernel_config(None).unwrap();
    let at = |name: &str| {
        let e = externs.iter().find(|e| e.name == name).unwrap();
        &value[e.offset as usize..(e.offset + e.size) as usize]
    };
    let hz: i32 = config_value(&config, "CONFIG_HZ").unwrap().parse().unwrap();
    assert_eq!(at("CONFIG_HZ"), hz.to_ne_bytes());
    assert_eq!(
        at("LINUX_KERNEL_VERSION"),
        running_kernel_version().unwrap().to_ne_bytes()
    );
    assert_eq!(at("CONFIG_BPF_SYSCALL"), [1]);
    assert_eq!(at("CONFIG_SLUICE_NO_SUCH_OPTION"), [0; 4]);
    let tri = match config_value(&config, "CONFIG_EXT4_FS").as_deref() {
        Some("y") => 1u32,
        Some("m") => 2,
        _ => 0,
    };
    assert_eq!(at("CONFIG_EXT4_FS"), tri.to_ne_bytes());
    let jit = config_value(&config, "CONFIG_BPF_JIT").map_or(0, |v| v.as_bytes()[0]);
    assert_eq!(at("CONFIG_BPF_JIT"), [jit]);
    // Frozen: user space can no longer write it.
    assert!(map
        .update_bytes(&0u32.to_ne_bytes(), &value, sluice_runtime::UpdateMode::Any)
        .is_err());
    eprintln!(
        "{} Kconfig externs checked against the kernel configuration",
        n
    );
}

#[test]
fn missing_kconfig_is_a_clear_error() {
    if !common::kernel("missing_kconfig_is_a_clear_error") {
        return;
    }
    let bytes = common::fixture("modern_kconfig.o");
    let mut storage = Box::new(ObjectStorage::new());
    let obj = Object::open(&bytes, &mut storage).unwrap();
    let mut opts = LoadOptions::default();
    opts.kconfig = Some("/nonexistent/config".into());
    let e = load(&obj, &opts).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::Io { .. }), "{text}");
    assert!(text.contains("/nonexistent/config"), "{text}");
}

#[test]
fn verifier_log_names_the_source_line_of_a_called_function() {
    if !common::kernel("verifier_log_names_the_source_line_of_a_called_function") {
        return;
    }
    let bytes = common::fixture("modern_badline.o");
    let mut storage = Box::new(ObjectStorage::new());
    let obj = Object::open(&bytes, &mut storage).unwrap();
    let e = load(&obj, &LoadOptions::default()).unwrap_err();
    let log = String::from_utf8_lossy(e.verifier_log().expect("a verifier error")).into_owned();
    assert!(
        log.contains("return (int)*v; /* sluice: no NULL check here */ @ modern_badline.c:"),
        "{log}"
    );
    assert!(
        log.contains("invalid mem access 'map_value_or_null'"),
        "{log}"
    );
}

#[test]
fn sanitised_btf_loads() {
    if !common::kernel("sanitised_btf_loads") {
        return;
    }
    for name in [
        "modern.o",
        "btf_kinds.o",
        "btf_core.o",
        "btf_maps.o",
        "modern_kconfig.o",
    ] {
        let bytes = common::fixture(name);
        let mut storage = Box::new(ObjectStorage::new());
        let obj = Object::open(&bytes, &mut storage).unwrap();
        let mut slots = vec![None; MAX_EXTERNS];
        let n = obj.kconfig_externs(&mut slots).unwrap();
        let externs: Vec<_> = slots.into_iter().take(n).flatten().collect();
        let fixed = fixup(&obj, &externs).unwrap().unwrap();
        btf_load(&fixed).unwrap_or_else(|e| panic!("{name} as is: {e}"));
        let mut old = fixed.clone();
        // Every replacement this kernel can check: FUNC_PROTO as ENUM (for kernels before
        // 5.0) keeps unnamed parameters as unnamed enumerators, which those kernels took
        // and today's refuse; ENUM64 is not replaced.
        let old_kernel = Features {
            func: true,
            enum64: true,
            ..Features::NONE
        };
        let changed = sanitize(&mut old, &old_kernel).unwrap();
        assert!(changed > 0, "{name}");
        btf_load(&old).unwrap_or_else(|e| panic!("{name} sanitised: {e}"));
        let mut same = fixed.clone();
        assert_eq!(sanitize(&mut same, &Features::ALL).unwrap(), 0);
        assert_eq!(same, fixed);
    }
    assert_eq!(
        Features::probe(),
        Features::ALL,
        "a 6.x kernel knows every kind"
    );
}
