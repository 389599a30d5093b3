//! The second seed's scenario in real guest kernels (x86_64 and arm64 Debian kernels under
//! QEMU; `aarch64-ci/guest/seed.sh`, CI step `guest_seed`, runs this binary there): the
//! seed's own object, `tests/bpf/seed_write.o`, whose program takes
//! `file->f_mapping->a_ops`, `bytes` and `offset` of `generic_perform_write()` as
//! parameters from a prologue, sends them with `bpf_perf_event_output` and returns 1.
//!
//! The guest has no debug info: the host resolved the probe in the kernel's `-dbg` vmlinux
//! (`sluice prologue --debuginfo VMLINUX --arch A --emit FILE`, at a line it found with
//! `--lines` where the three variables live) and passes the resolved spec, a probe at
//! `generic_perform_write+OFF` whose arguments are kprobe fetch-args, in the file named by
//! `SLUICE_SEED_SPEC`; `SLUICE_SEED_A_OPS` is the address of `shmem_aops` in that
//! vmlinux and `SLUICE_SEED_STEXT` that of `_stext`, so the address in the running kernel is
//! `SLUICE_SEED_A_OPS` plus the KASLR offset `_stext` (from `/proc/kallsyms`) minus
//! `SLUICE_SEED_STEXT` (the arm64 guest boots with KASLR, `SLUICE_SEED_KASLR=1`: the offset
//! must not be 0 there). `sluice record --event f=SPEC` runs a
//! workload that writes known byte counts to files on tmpfs, and every hit must show:
//!
//! - the program's three words (from the prologue) equal to the kernel's own fetch-args
//!   of the same sample (the kprobe made with the same fetch-args);
//! - `bytes` and `offset` equal to what the loop of `generic_perform_write` does with the
//!   writes (one hit per page-sized piece, in order), `a_ops` equal to `shmem_aops`;
//! - the sample's probe address equal to `generic_perform_write` + the spec's offset (from
//!   the guest's `/proc/kallsyms`); no probe left behind.
//!
//! Kernel globals under KASLR (`SLUICE_SEED_GLOBAL_SPEC`: `kernel_clone max_threads
//! nr_threads $err` resolved on the host, the globals spelled `@_stext+OFF`): with
//! `kernel.threads-max` set to a value of the test's, every fork's hit must show the
//! program's `max_threads` word = the kernel's fetch-arg = that value, `nr_threads` word =
//! fetch-arg > 0, and `$err` = 0 — the prologue read both globals where the running kernel
//! has them.
//!
//! Gating as `guest_kprobe.rs`: skipped loudly when not root, without `bpf()`, without
//! kprobe events, the spec or the `sluice` binary; each of those fails under
//! `SLUICE_REQUIRE_KPROBES=1` (which the guest step sets).
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::path::PathBuf;
use std::process::Command;

use sluice_runtime::tracefs::{ProbeKind, Tracefs};

const FIXTURE: &str = "seed_write.o";
const FUNC: &str = "generic_perform_write";

fn required() -> bool {
    std::env::var("SLUICE_REQUIRE_KPROBES").as_deref() == Ok("1")
}

/// Skips loudly, or fails under `SLUICE_REQUIRE_KPROBES=1`.
fn skip(test: &str, why: &str) {
    assert!(!required(), "{test}: SLUICE_REQUIRE_KPROBES=1 but {why}");
    eprintln!("\n*** SKIPPED {test}: {why} ***\n");
}

fn arch() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "arm64"
    } else {
        "x86_64"
    }
}

/// The integer after `"name":` in a JSON line, from `from` on.
fn int_after(line: &str, from: usize, name: &str) -> Option<u64> {
    let key = format!("\"{name}\":");
    let at = line[from..].find(&key)? + from + key.len();
    let digits: String = line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The numbers of the `"words":[...]` array of a pair line.
fn words(line: &str) -> Vec<u64> {
    let at = line.find("\"words\":[").unwrap() + "\"words\":[".len();
    let end = at + line[at..].find(']').unwrap();
    line[at..end]
        .split(',')
        .map(|w| w.trim().parse().unwrap())
        .collect()
}

/// The payload of a bpf-output line (`"data":"HEX"`) as little-endian 64-bit words.
fn data_words(line: &str) -> Vec<u64> {
    let at = line.find("\"data\":\"").unwrap() + "\"data\":\"".len();
    let hex = &line[at..at + line[at..].find('"').unwrap()];
    let bytes: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// (bytes, offset) per iteration of `generic_perform_write`'s loop for `write(2)`s of
/// `sizes` at the start of a new file: each piece ends at a page boundary.
fn pieces(sizes: &[u64], page: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut pos = 0u64;
    for &n in sizes {
        let mut left = n;
        while left > 0 {
            let offset = pos % page;
            let bytes = (page - offset).min(left);
            out.push((bytes, offset));
            pos += bytes;
            left -= bytes;
        }
    }
    out
}

/// A hexadecimal address from the environment (`0x` optional).
fn hex_env(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
}

/// The running kernel's KASLR offset: `_stext` in `/proc/kallsyms` minus `SLUICE_SEED_STEXT`
/// (its vmlinux address); 0 without the latter.
fn kaslr_offset() -> i64 {
    let Some(link) = hex_env("SLUICE_SEED_STEXT") else {
        return 0;
    };
    let running = kallsyms_addr("_stext").expect("_stext in /proc/kallsyms");
    running.wrapping_sub(link) as i64
}

/// A symbol's address in the running kernel.
fn kallsyms_addr(name: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    text.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let addr = f.next()?;
        let _kind = f.next()?;
        (f.next()? == name)
            .then(|| u64::from_str_radix(addr, 16).ok())
            .flatten()
    })
}

/// What both tests need: a kernel with kprobe events, the resolved spec file named by
/// `spec_env` (aarch64-ci/guest/seed.sh resolves it on the host) and the `sluice` binary;
/// `None` after saying which is missing.
fn setup(test: &str, spec_env: &str) -> Option<(Tracefs, PathBuf, PathBuf)> {
    if !common::kernel(test) {
        return None;
    }
    let t = Tracefs::find().expect("tracefs");
    if !t.supports(ProbeKind::Kprobe) {
        skip(
            test,
            "the kernel has no kprobe events (the host's; run in a guest)",
        );
        return None;
    }
    let Some(spec_file) = std::env::var_os(spec_env).map(PathBuf::from) else {
        skip(
            test,
            &format!("no {spec_env} (aarch64-ci/guest/seed.sh resolves it on the host)"),
        );
        return None;
    };
    let Some(bin) = std::env::var_os("SLUICE_BIN").map(PathBuf::from) else {
        skip(test, "no sluice binary (set SLUICE_BIN)");
        return None;
    };
    Some((t, spec_file, bin))
}

#[test]
fn seed_probe_values_from_the_prologue_equal_the_kernels_and_the_writes() {
    let test = "seed_probe_values_from_the_prologue_equal_the_kernels_and_the_writes";
    let Some((t, spec_file, bin)) = setup(test, "SLUICE_SEED_SPEC") else {
        return;
    };
    let want_a_ops = hex_env("SLUICE_SEED_A_OPS").map(|a| a.wrapping_add_signed(kaslr_offset()));
    let spec_text = std::fs::read_to_string(&spec_file)
        .unwrap_or_else(|e| panic!("{}: {e}", spec_file.display()));
    let spec = spec_text.lines().next().unwrap().trim().to_owned();
    assert!(
        !spec.contains("->") && spec.contains(&format!("{FUNC}+")),
        "a resolved spec: {spec}"
    );
    let offset: u64 = spec
        .split(&format!("{FUNC}+"))
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no offset in {spec}"));
    let probe_at = kallsyms_addr(FUNC).map(|a| a + offset);

    // Files on tmpfs (the guest's /tmp): shmem's a_ops, and page-sized pieces.
    let dir = std::env::temp_dir().join(format!("sluice-seed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.display();
    let script = format!(
        "dd if=/dev/zero of={d}/a bs=1000 count=5 2>/dev/null && \
         dd if=/dev/zero of={d}/b bs=5000 count=2 2>/dev/null && \
         printf hello > {d}/c"
    );
    let page = rustix::param::page_size() as u64;
    let mut want = pieces(&[1000; 5], page);
    want.extend(pieces(&[5000; 2], page));
    want.extend(pieces(&[5], page));
    let fixture = common::fixture_dir().join(FIXTURE);
    let fixture = fixture.to_str().unwrap();
    let event = format!("f={spec}");
    let run = |json: bool| {
        let mut args = vec!["record", "-e", fixture, "--event", &event];
        if json {
            args.push("--json");
        }
        args.extend(["--", "sh", "-c", &script]);
        let out = Command::new(&bin).args(&args).output().unwrap();
        let (code, stdout, stderr) = (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert_eq!(code, 0, "sluice {args:?}: {stderr}");
        (stdout, stderr)
    };

    let (out, err) = run(true);
    let summary = err
        .lines()
        .find(|l| l.starts_with("sluice record:"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(summary.contains("lost 0"), "{summary}");
    assert!(summary.contains("probes removed 1"), "{summary}");
    // Each hit is the program's output, then the probe's sample, on the same thread. The
    // CLI prints the two as one `pair` line when they are at most 1 ms apart; under TCG
    // the first hit of a boot (bpf_trace_printk's first use) can take longer, and then they
    // come as two lines: pair them here by order.
    let mut pending: Vec<(u64, Vec<u64>)> = Vec::new();
    let mut got = Vec::new();
    let mut paired_by_cli = 0;
    let mut printk = 0;
    for l in out.lines() {
        let tid = int_after(l, 0, "tid").unwrap_or_else(|| panic!("no tid: {l}"));
        let (sample, w) = if l.starts_with("{\"type\":\"pair\"") {
            paired_by_cli += 1;
            (l, words(l))
        } else if l.contains("\"event\":\"bpf-output:write_events\"") {
            pending.push((tid, data_words(l)));
            continue;
        } else if l.contains("\"event\":\"bpf_trace:bpf_trace_printk\"") {
            // The seed's own bpf_trace_printk, shown in line with the samples.
            assert!(l.contains("generic_perform_write a_ops="), "{l}");
            printk += 1;
            continue;
        } else {
            assert!(l.contains(&format!("_{FUNC}\"")), "unexpected line: {l}");
            let at = pending
                .iter()
                .position(|(t, _)| *t == tid)
                .unwrap_or_else(|| panic!("a sample without its output: {l}\n{out}"));
            (l, pending.remove(at).1)
        };
        let fields = sample.find("\"fields\":").unwrap();
        let (a_ops, bytes, off) = (
            int_after(sample, fields, "a_ops").unwrap(),
            int_after(sample, fields, "bytes").unwrap(),
            int_after(sample, fields, "offset").unwrap(),
        );
        // The prologue's r2..r4, as the program sent them, are the kernel's fetch-args.
        assert_eq!(w[..3], [a_ops, bytes, off], "{l}");
        // The program's tgid word is the sample's pid.
        assert_eq!(Some(w[3] & 0xffff_ffff), int_after(sample, 0, "pid"), "{l}");
        if let Some(a) = want_a_ops {
            assert_eq!(a_ops, a, "a_ops is shmem_aops: {l}");
        }
        if let Some(at) = probe_at {
            assert_eq!(int_after(sample, fields, "__probe_ip"), Some(at), "{l}");
        }
        got.push((bytes, off));
    }
    assert!(
        pending.is_empty(),
        "outputs without a sample: {pending:?}\n{out}"
    );
    assert_eq!(got, want, "(bytes, offset) per piece of the writes\n{out}");
    // What the program printed at each hit, in line with the samples, none left behind.
    assert_eq!(
        printk,
        got.len(),
        "one bpf_trace_printk line per hit\n{out}"
    );

    // The same run as text, like `perf script`: the lines the note shows.
    let (text, err) = run(false);
    let samples = text
        .lines()
        .filter(|l| l.contains(&format!("_{FUNC}: ")))
        .count();
    assert_eq!(samples, want.len(), "{text}{err}");
    for l in text.lines() {
        eprintln!("seed-sample {}: {l}", arch());
    }
    eprintln!(
        "guest-figures {}: spec '{spec}': 8 writes -> {} pieces -> {} hits ({paired_by_cli} \
         paired by sluice within 1 ms); prologue words = kernel fetch-args in every hit; \
         (bytes, offset) = the writes' pieces; a_ops = {}; __probe_ip = {}; {summary}",
        arch(),
        want.len(),
        got.len(),
        want_a_ops.map_or_else(|| "not checked".into(), |a| format!("shmem_aops {a:#x}")),
        probe_at.map_or_else(
            || "not checked".into(),
            |a| format!("{FUNC}+{offset} = {a:#x}")
        ),
    );
    let left: Vec<String> = std::fs::read_to_string(t.root().join("kprobe_events"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(":sluice/"))
        .map(str::to_owned)
        .collect();
    assert!(left.is_empty(), "{left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn kernel_globals_are_read_where_the_running_kernel_has_them() {
    let test = "kernel_globals_are_read_where_the_running_kernel_has_them";
    let Some((_, spec_file, bin)) = setup(test, "SLUICE_SEED_GLOBAL_SPEC") else {
        return;
    };
    let spec = std::fs::read_to_string(&spec_file)
        .unwrap_or_else(|e| panic!("{}: {e}", spec_file.display()))
        .lines()
        .next()
        .unwrap()
        .trim()
        .to_owned();
    assert!(
        spec.contains("max_threads=@_stext+") && spec.contains("nr_threads=@_stext+"),
        "globals from _stext: {spec}"
    );
    let offset = kaslr_offset();
    if std::env::var("SLUICE_SEED_KASLR").as_deref() == Ok("1") {
        assert_ne!(offset, 0, "this guest should run with KASLR");
    }

    // A value of ours in max_threads, restored afterwards.
    let knob = "/proc/sys/kernel/threads-max";
    let old = std::fs::read_to_string(knob).unwrap();
    let want: u64 = if old.trim() == "4321" { 4322 } else { 4321 };
    std::fs::write(knob, want.to_string()).unwrap();
    struct Restore<'a>(&'a str, String);
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            let _ = std::fs::write(self.0, self.1.trim());
        }
    }
    let _restore = Restore(knob, old);

    let fixture = common::fixture_dir().join(FIXTURE);
    let fixture = fixture.to_str().unwrap();
    let event = format!("f={spec}");
    // Three subshells (the last command is a builtin, so no exec takes the shell
    // over): three forks, each a kernel_clone.
    let run = |json: bool| {
        let mut args = vec!["record", "-e", fixture, "--event", &event];
        if json {
            args.push("--json");
        }
        args.extend(["--", "sh", "-c", "(:); (:); (:); :"]);
        let out = Command::new(&bin).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "sluice {args:?}: {stderr}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
    };
    let (out, err) = run(true);
    let summary = err
        .lines()
        .find(|l| l.starts_with("sluice record:"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(summary.contains("lost 0"), "{summary}");
    assert!(summary.contains("probes removed 1"), "{summary}");
    let mut pending: Vec<(u64, Vec<u64>)> = Vec::new();
    let mut hits = 0;
    let mut nr = Vec::new();
    let mut printk = 0;
    for l in out.lines() {
        let tid = int_after(l, 0, "tid").unwrap_or_else(|| panic!("no tid: {l}"));
        let (sample, w) = if l.starts_with("{\"type\":\"pair\"") {
            (l, words(l))
        } else if l.contains("\"event\":\"bpf-output:write_events\"") {
            pending.push((tid, data_words(l)));
            continue;
        } else if l.contains("\"event\":\"bpf_trace:bpf_trace_printk\"") {
            // The seed's own bpf_trace_printk, shown in line with the samples.
            assert!(l.contains("generic_perform_write a_ops="), "{l}");
            printk += 1;
            continue;
        } else {
            let at = pending
                .iter()
                .position(|(t, _)| *t == tid)
                .unwrap_or_else(|| panic!("a sample without its output: {l}\n{out}"));
            (l, pending.remove(at).1)
        };
        let fields = sample.find("\"fields\":").unwrap();
        let (max_threads, nr_threads) = (
            int_after(sample, fields, "max_threads").unwrap(),
            int_after(sample, fields, "nr_threads").unwrap(),
        );
        // r2 = max_threads, r3 = nr_threads, r4 = $err; the kernel's own fetch-args agree.
        assert_eq!(w[..3], [max_threads, nr_threads, 0], "{l}");
        assert_eq!(max_threads, want, "max_threads is threads-max: {l}");
        assert!(nr_threads > 0, "{l}");
        nr.push(nr_threads);
        hits += 1;
    }
    // The object's write program prints too when the shell writes: shown, not counted.
    eprintln!("bpf_trace_printk lines: {printk}");
    assert!(
        pending.is_empty(),
        "outputs without a sample: {pending:?}\n{out}"
    );
    assert!(hits >= 3, "three forks, {hits} hits\n{out}");

    let (text, _) = run(false);
    for l in text.lines() {
        eprintln!("global-sample {}: {l}", arch());
    }
    eprintln!(
        "guest-figures {}: spec '{spec}': KASLR offset {offset:#x} (_stext {:#x}); {hits} \
         kernel_clone hits; max_threads word = fetch-arg = threads-max {want} in every hit; \
         nr_threads word = fetch-arg in every hit ({nr:?}); $err 0; {summary}",
        arch(),
        kallsyms_addr("_stext").unwrap_or(0),
    );
}
