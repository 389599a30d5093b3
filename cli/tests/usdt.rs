//! `sluice record` of a `usdt/` program whose probe is not there: bad input (exit 2),
//! said with the binary, the probe and why. The attach itself is tested in
//! `runtime/tests/usdt.rs`.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{fixture, sluice};

#[test]
fn a_missing_probe_or_binary_without_notes_is_bad_input() {
    if !rustix::process::geteuid().is_root() {
        assert!(!common::required(), "not root (SLUICE_REQUIRE_KERNEL=1)");
        eprintln!("SKIPPED: not root");
        return;
    }
    let obj = fixture("usdt.o");
    let (code, _, err) = sluice(&[
        "record",
        "-e",
        &obj,
        "--event",
        "on_args=usdt//bin/true:sluice:args",
        "--",
        "true",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("usdt probe sluice:args of /bin/true: no .note.stapsdt section"),
        "{err}"
    );
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let bin = dir.join("usdt_demo_cli");
    let src = common::repo().join("tests/usdt");
    if !common::compile(
        "cc",
        &[
            "-O2",
            "-o",
            bin.to_str().unwrap(),
            src.join("usdt_demo.c").to_str().unwrap(),
            src.join("usdt_args.c").to_str().unwrap(),
        ],
    ) {
        return;
    }
    let spec = format!("on_args=usdt/{}:sluice:nope", bin.display());
    let (code, _, err) = sluice(&["record", "-e", &obj, "--event", &spec, "--", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "usdt probe sluice:nope of {}: the binary has no such probe",
            bin.display()
        )),
        "{err}"
    );
}
