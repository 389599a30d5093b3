//! `sluice prologue` as a user runs it: typed specs without debug info, each architecture,
//! and kernel specs that need debug info but were given none (a clear error, exit code 2).
//! Specs resolved through DWARF are in `prologue_dwarf.rs`.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::sluice;

#[test]
fn typed_spec_prints_the_listing_and_fetch_args() {
    let (code, out, err) = sluice(&[
        "prologue",
        "--arch",
        "x86_64",
        "kprobe/vfs_read(void *, char *buf, unsigned long count)",
    ]);
    assert_eq!(code, 0, "{err}");
    let want = "\
bpf_prologue: insn num=5
(bf) r6 = r1
(79) r2 = *(u64 *)(r6 +112)
(79) r3 = *(u64 *)(r6 +104)
(79) r4 = *(u64 *)(r6 +96)
(bf) r1 = r6
fetch-args (x86_64, kprobe/vfs_read(void *, char *buf, unsigned long count)):
  r2: arg1=%di:u64
  r3: buf=%si:u64
  r4: count=%dx:u64
";
    assert_eq!(out, want);
}

#[test]
fn each_architecture_uses_its_convention() {
    let spec = "uprobe/bin:f(int a, short b, $err)";
    let (code, _, err) = sluice(&["prologue", "--arch", "aarch64", spec]);
    assert_eq!(code, 2, "typed and expressions do not mix: {err}");
    let spec = "uprobe/bin:f(int a, short b)";
    let (code, out, err) = sluice(&["prologue", "--arch", "aarch64", spec]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(79) r2 = *(u64 *)(r6 +0)"), "{out}");
    assert!(out.contains("(79) r3 = *(u64 *)(r6 +8)"), "{out}");
    assert!(out.contains("r2: a=%x0:s32"), "{out}");
    assert!(out.contains("r3: b=%x1:s16"), "{out}");
    let (code, out, err) = sluice(&["prologue", "--arch", "i386", spec]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("(61) r3 = *(u32 *)(r6 +60)"),
        "i386 user args on the stack: {out}"
    );
    assert!(out.contains("call bpf_probe_read_user#112"), "{out}");
    assert!(out.contains("r2: a=+4(%sp):s32"), "{out}");
    assert!(out.contains("r3: b=+8(%sp):s16"), "{out}");
    let (code, out, _) = sluice(&["prologue", "--arch", "i386", "kprobe/f(void *p, int i)"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("r2: p=%ax:u32") && out.contains("r3: i=%dx:s32"),
        "{out}"
    );
}

#[test]
fn registers_and_err_without_debug_info() {
    let (code, out, err) = sluice(&[
        "prologue",
        "--arch",
        "x86_64",
        "kretprobe/vfs_read(ret=$retval:s64, $err)",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(
            "bpf_prologue: insn num=4\n(bf) r6 = r1\n(79) r2 = *(u64 *)(r6 +80)\n(b7) r3 = 0\n"
        ),
        "{out}"
    );
    assert!(out.contains("r2: ret=%ax:s64"), "{out}");
    assert!(out.contains("r3: $err"), "{out}");
}

#[test]
fn kernel_dwarf_specs_without_debuginfo_say_what_to_give() {
    for spec in [
        "generic_perform_write=generic_perform_write+122 file->f_mapping->a_ops bytes offset",
        "kprobe/vfs_read(file->f_pos)",
    ] {
        let (code, out, err) = sluice(&["prologue", spec]);
        assert_eq!(code, 2, "{spec}: {out}");
        assert!(out.is_empty(), "{out}");
        assert!(
            err.contains("argument 1 'file->f") && err.contains("(--debuginfo FILE)"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "one clear line: {err}");
    }
    let (_, _, err) = sluice(&["prologue", "f+1 a b"]);
    assert!(err.contains("argument 1 'a'"), "{err}");
}

#[test]
fn bad_input_is_exit_code_2() {
    for args in [
        &["prologue"][..],
        &["prologue", "--arch", "riscv64", "kprobe/f(int)"],
        &["prologue", "kprobe/f(int"],
        &["prologue", "license"],
        &["prologue", "tracepoint/sched/sched_switch"],
        &[
            "prologue",
            "--arch",
            "x86_64",
            "kprobe/f(%di, %si, %dx, %cx, $err)",
        ],
        &["prologue", "--arch", "x86_64", "kprobe/f(%x0)"],
    ] {
        let (code, out, err) = sluice(args);
        assert_eq!(code, 2, "{args:?}: {out} {err}");
        assert!(err.starts_with("sluice: "), "{err}");
    }
    let (_, _, err) = sluice(&[
        "prologue",
        "--arch",
        "x86_64",
        "kprobe/f(%di, %si, %dx, %cx, $err)",
    ]);
    assert!(
        err.contains("kprobe/f(%di, %si, %dx, %cx, $err)") && err.contains("r2..r5"),
        "names the spec: {err}"
    );
}

/// The running kernel's machine (`uname -m`), not the build's: the i686 build on an x86-64
/// kernel prints x86-64 kprobe prologues (issue 14, item 1).
fn kernel_machine() -> String {
    let out = std::process::Command::new("uname")
        .arg("-m")
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn without_arch_the_running_kernel_s_pt_regs() {
    let machine = kernel_machine();
    let arch = match machine.as_str() {
        "x86_64" => "x86_64",
        "aarch64" => "aarch64",
        m if m.starts_with('i') && m.ends_with("86") => "i386",
        other => {
            eprintln!("SKIPPED: no tables for kernel machine {other}");
            return;
        }
    };
    let spec = "kprobe/vfs_read(void *, char *, unsigned long)";
    let (code, out, err) = sluice(&["prologue", spec]);
    assert_eq!(code, 0, "{err}");
    let (code, forced, err) = sluice(&["prologue", "--arch", arch, spec]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, forced, "{machine}");
    if arch == "x86_64" {
        assert!(out.contains("(79) r2 = *(u64 *)(r6 +112)"), "{out}");
    }
}

/// A uprobe's convention is its binary's: an i386 binary under an x86-64 kernel reads cdecl
/// stack slots through the 64-bit `sp` (`+152`); `--arch i386` still gives i386's own.
#[test]
fn an_i386_binary_under_an_x86_64_kernel() {
    if kernel_machine() != "x86_64" {
        eprintln!("SKIPPED: the kernel is not x86_64");
        return;
    }
    let dir = std::env::temp_dir().join(format!("sluice-prologue-m32-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("abi_args_m32");
    let src = common::repo().join("tests/record/abi_args.c");
    let built = std::process::Command::new("cc")
        .args(["-m32", "-O1", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        common::skip("cc -m32 cannot link (gcc-multilib)");
        return;
    }
    let spec = format!(
        "uprobe/{}:abi_target(int a, unsigned char b)",
        bin.display()
    );
    let (code, out, err) = sluice(&["prologue", &spec]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(79) r3 = *(u64 *)(r6 +152)"), "{out}");
    assert!(out.contains("call bpf_probe_read_user#112"), "{out}");
    assert!(
        out.contains(&format!("fetch-args (i386 code on x86_64, {spec}):")),
        "{out}"
    );
    assert!(
        out.contains("  r2: a=+4(%sp):s32\n  r3: b=+8(%sp):u8\n"),
        "{out}"
    );
    let (code, forced, err) = sluice(&["prologue", "--arch", "i386", &spec]);
    assert_eq!(code, 0, "{err}");
    assert!(forced.contains("(61) r3 = *(u32 *)(r6 +60)"), "{forced}");
    assert!(
        forced.contains(&format!("fetch-args (i386, {spec}):")),
        "{forced}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
