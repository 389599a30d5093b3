//! `sluice inspect` as a user runs it: the embedded demo, real fixtures, bad input.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{fixture, sluice};

#[test]
fn no_arguments_shows_the_embedded_demo_with_its_listing() {
    let (code, out, err) = sluice(&[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("license: GPL"), "{out}");
    assert!(
        out.contains("write_events type=perf_event_array(4) key=4 value=4 max_entries=64"),
        "{out}"
    );
    assert!(out.contains("section 'generic_perform_write=generic_perform_write+122 file->f_mapping->a_ops bytes offset' function f insns=52 relocs=1 (maps 1)"), "{out}");
    assert!(out.contains("0: (bf) r7 = r4"), "{out}");
    assert!(out.contains("call bpf_perf_event_output#25"), "{out}");
}

#[test]
fn inspect_reports_maps_layouts_and_programs() {
    let (code, out, _) = sluice(&["inspect", &fixture("maps_iproute2.o")]);
    assert_eq!(code, 0);
    assert!(
        out.contains("id=") && out.contains("pinning=") && out.contains("(28-byte def)"),
        "{out}"
    );
    let (code, out, _) = sluice(&["inspect", "--disasm", &fixture("insns.o")]);
    assert_eq!(code, 0);
    assert!(out.contains("lock *(u64 *)"), "{out}");
}

#[test]
fn bad_input_is_one_line_and_exit_code_2() {
    let dir = std::env::temp_dir().join(format!("sluice-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = std::fs::read(fixture("seed_write.o")).unwrap();
    let cut = dir.join("cut.o");
    std::fs::write(&cut, &good[..good.len() / 2]).unwrap();
    let cut_s = cut.display().to_string();
    let (code, out, err) = sluice(&["inspect", &cut_s]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with(&format!("sluice: {cut_s}: ")), "{err}");
    let (code, _, err) = sluice(&["inspect", &fixture("big_endian/no_version_be.o")]);
    assert_eq!(code, 2);
    assert!(err.contains("big-endian"), "{err}");
    let (code, _, err) = sluice(&["inspect", "/nonexistent/x.o"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/x.o: cannot read"), "{err}");
    let (code, _, _) = sluice(&["frobnicate"]);
    assert_eq!(code, 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn inspect_load_reports_kernel_ids_and_tags() {
    if !rustix::process::geteuid().is_root() {
        assert!(
            std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
            "SLUICE_REQUIRE_KERNEL=1 but not root"
        );
        eprintln!("!!! SKIPPED inspect --load: not root");
        return;
    }
    let (code, out, err) = sluice(&["inspect", "--load", &fixture("uprobes.o")]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().filter(|l| l.contains(": id ")).collect();
    assert_eq!(lines.len(), 4, "{out}");
    for l in lines {
        let tag = l.split(" tag ").nth(1).unwrap().split(' ').next().unwrap();
        assert_eq!(tag.len(), 16, "{l}");
        assert!(tag.chars().all(|c| c.is_ascii_hexdigit()), "{l}");
    }
    assert!(out.ends_with("unloaded\n"));
    // A program the verifier refuses: runtime failure, exit 1, the log follows the line.
    let (code, _, err) = sluice(&["inspect", "--load", &fixture("bad_verifier.o")]);
    assert_eq!(code, 1);
    assert!(
        err.lines()
            .next()
            .unwrap()
            .contains("the verifier refused program"),
        "{err}"
    );
    assert!(
        err.contains("R0 invalid mem access 'map_value_or_null'"),
        "{err}"
    );
}

#[test]
fn inspect_load_takes_the_co_re_target_from_btf_file() {
    if !rustix::process::geteuid().is_root() {
        assert!(
            std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
            "SLUICE_REQUIRE_KERNEL=1 but not root"
        );
        eprintln!("!!! SKIPPED inspect --load --btf: not root");
        return;
    }
    // An appliance without /sys/kernel/btf/vmlinux gives the kernel's BTF as a file: a copy
    // elsewhere stands in for it here.
    let copy = std::env::temp_dir().join(format!("sluice-vmlinux-btf-{}", std::process::id()));
    std::fs::copy("/sys/kernel/btf/vmlinux", &copy).unwrap();
    let btf = copy.display().to_string();
    let (code, out, err) = sluice(&["inspect", "--load", "--btf", &btf, &fixture("btf_core.o")]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines().filter(|l| l.contains(": id ")).count() >= 3,
        "{out}"
    );
    let (code, _, err) = sluice(&[
        "inspect",
        "--load",
        "--btf",
        "/nonexistent/vmlinux",
        &fixture("btf_core.o"),
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("/nonexistent/vmlinux"), "{err}");
    std::fs::remove_file(&copy).unwrap();
}
