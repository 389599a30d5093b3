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

/// What open can know is bad input at open: BTF that does not parse, a relocation type
/// code never holds, a 32-bit ELF file (issue 14, item 13) — not an object that `inspect`
/// shows and the load then refuses with exit 1.
#[test]
fn malformed_parts_are_bad_input_at_open() {
    let dir = std::env::temp_dir().join(format!("sluice-cli-open-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = std::fs::read(fixture("record_filter.o")).unwrap();
    let section = |name: &str| {
        let shoff = u64::from_le_bytes(good[0x28..0x30].try_into().unwrap()) as usize;
        let shnum = u16::from_le_bytes(good[0x3c..0x3e].try_into().unwrap()) as usize;
        let shstr = u16::from_le_bytes(good[0x3e..0x40].try_into().unwrap()) as usize;
        let hdr = |i: usize| &good[shoff + i * 64..shoff + i * 64 + 64];
        let word = |h: &[u8], at: usize| u64::from_le_bytes(h[at..at + 8].try_into().unwrap());
        let names = word(hdr(shstr), 24) as usize;
        (0..shnum)
            .map(hdr)
            .find(|h| {
                let at = names + u32::from_le_bytes(h[..4].try_into().unwrap()) as usize;
                good[at..].starts_with(name.as_bytes()) && good[at + name.len()] == 0
            })
            .map(|h| word(h, 24) as usize)
            .unwrap()
    };
    let write = |file: &str, bytes: &[u8]| {
        let p = dir.join(file);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    };
    // .BTF whose type section runs past the section.
    let mut bad_btf = good.clone();
    let btf = section(".BTF");
    bad_btf[btf + 12..btf + 16].copy_from_slice(&0x00ff_fff0u32.to_le_bytes());
    // The first relocation of the tracepoint program given type 99.
    let mut bad_rel = good.clone();
    let rel = section(".reltracepoint/raw_syscalls/sys_enter");
    bad_rel[rel + 8..rel + 12].copy_from_slice(&99u32.to_le_bytes());
    let mut elf32 = good.clone();
    elf32[4] = 1;
    for (file, bytes, says) in [
        ("btf.o", bad_btf, ".BTF: BTF truncated"),
        ("rel.o", bad_rel, "relocation type is neither R_BPF_64_64"),
        ("elf32.o", elf32, "ELFCLASS32"),
    ] {
        let path = write(file, &bytes);
        let (code, out, err) = sluice(&["inspect", &path]);
        assert_eq!(code, 2, "{file}: {err}");
        assert!(out.is_empty(), "{file}: {out}");
        assert!(err.contains(says), "{file}: {err}");
        assert_eq!(err.lines().count(), 1, "{file}: {err}");
    }
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
