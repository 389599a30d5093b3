//! A uprobe's calling convention is its binary's, its `pt_regs` the running kernel's, whatever
//! sluice was built for (issue 14, item 1): typed uprobe arguments of an i386 binary
//! (`gcc -m32`) and of an x86-64 binary of `tests/record/abi_args.c`, under this x86-64
//! kernel, by the prologue the runtime plans (`Plan::new`: the kernel's architecture from
//! `kernel::arch`, the binary's ELF machine). The i686 build (CI step `i686`) and the
//! x86-64 build both run it.
//!
//! Oracles: the values the traced program passes (its table, repeated here), and the
//! kernel's own fetch-args on the same event, written by hand for each ABI (cdecl:
//! `+4($stack):s32` ...; System V: `%di:s32` ...) and recorded beside the sample.
#![cfg(any(target_arch = "x86_64", target_arch = "x86"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;
mod ring_support;

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ring_support::*;
use sluice_core::arch::Arch;
use sluice_core::insn::opcode::{ADD, DW, JNE, W};
use sluice_core::insn::reg::{R0, R1, R10, R2};
use sluice_core::perf::abi::{map_type, prog_type};
use sluice_core::perf::record::{Record, SampleFormat, SampleType};
use sluice_core::Insn;
use sluice_runtime::load::{self, LoadLog, Map, MapSpec, ProgramLoad};
use sluice_runtime::probe::debuginfo::Site;
use sluice_runtime::probe::{plans, set_specs, EventSpecs};
use sluice_runtime::ring::{PerfRing, RingConfig};
use sluice_runtime::sys::perf_event;
use sluice_runtime::tracefs::{ProbeKind, ProbeRequest, Tracefs, UprobeSpec, GROUP};

/// `rows` of abi_args.c: (a: int, b: unsigned char, c: short, d: long long).
const ROWS: [(i32, u8, i16, i64); 4] = [
    (-7, 0xff, -2, -5_000_000_000),
    (i32::MAX, 0, i16::MAX, 0x0123_4567_89ab_cdef),
    (i32::MIN, 0x80, i16::MIN, i64::MIN),
    (42, 1, 300, 7),
];

/// Each row as the prologue must pass it in r2..r5: sign- or zero-extended by its type.
fn want(row: (i32, u8, i16, i64)) -> Vec<u64> {
    vec![
        i64::from(row.0) as u64,
        u64::from(row.1),
        i64::from(row.2) as u64,
        row.3 as u64,
    ]
}

/// The typed spec the runtime plans.
const TYPES: &str = "int a, unsigned char b, short c, long long d";

/// Tests probe binaries of their own, but share the kernel's uprobe list: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Builds abi_args.c with `cc ARGS` into `dir`, or says why not.
fn build(dir: &Path, name: &str, args: &[&str]) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/record/abi_args.c");
    let bin = dir.join(name);
    let out = Command::new("cc")
        .args(args)
        .args(["-O1", "-o"])
        .arg(&bin)
        .arg(&src)
        .output();
    match out {
        Ok(o) if o.status.success() => Some(bin),
        other => {
            let why = match other {
                Ok(o) => String::from_utf8_lossy(&o.stderr).into_owned(),
                Err(e) => e.to_string(),
            };
            let what = format!(
                "cc {} cannot build {name} (gcc-multilib?): {why}",
                args.join(" ")
            );
            assert!(!common::required(), "{what} (SLUICE_REQUIRE_KERNEL=1)");
            eprintln!("\n*** SKIPPED {what} ***\n");
            None
        }
    }
}

/// The prologue the runtime plans for `uprobe/BIN:abi_target(ARGS)`: `many_args.o`'s
/// program (which takes four values) mapped to that spec, as `--event` does; and the DWARF
/// site it is for, when ARGS name variables.
fn planned_prologue(bin: &Path, args: &str) -> (Vec<Insn>, Option<Site>) {
    let bytes = common::fixture("many_args.o");
    let mut storage = sluice_core::object::ObjectStorage::new();
    let obj = sluice_core::Object::open(&bytes, &mut storage).unwrap();
    let mut opts = sluice_runtime::LoadOptions::default();
    let mut events = EventSpecs::new();
    events.insert(
        "many_args_even".to_owned(),
        format!("uprobe/{}:abi_target({args})", bin.display()),
    );
    set_specs(&obj, &events, &mut opts);
    let plans = plans(&obj, &opts).unwrap();
    let plan = plans
        .iter()
        .find(|p| p.program() == "many_args_even")
        .unwrap();
    let variant = &plan.variants()[0];
    assert!(!variant.prologue.is_empty(), "{args}: a prologue");
    (variant.prologue.clone(), variant.site.clone())
}

/// Stores r2..r5 at value[0..4] of array entry 0, then returns 1 (as prologue_uprobe.rs).
fn body(map_fd: i32) -> Vec<Insn> {
    let mut v = Vec::new();
    for j in 0..4u8 {
        v.push(Insn::stx_mem(DW, R10, R2 + j, -8 * (i16::from(j) + 1)));
    }
    v.push(Insn::st_mem(W, R10, -40, 0));
    v.extend(Insn::ld_map_fd(R1, map_fd));
    v.push(Insn::mov64_reg(R2, R10));
    v.push(Insn::alu64_imm(ADD, R2, -40));
    v.push(Insn::call(1)); // bpf_map_lookup_elem
    v.push(Insn::jmp_imm(JNE, R0, 0, 2));
    v.push(Insn::mov64_imm(R0, 0));
    v.push(Insn::exit());
    for j in 0..4i16 {
        v.push(Insn::ldx_mem(DW, R1, R10, -8 * (j + 1)));
        v.push(Insn::stx_mem(DW, R0, R1, 8 * j));
    }
    v.push(Insn::mov64_imm(R0, 1)); // non-zero: the kernel records the sample too
    v.push(Insn::exit());
    v
}

/// Runs every row through `bin` under a uprobe on `abi_target` carrying `fetch_args`
/// (`NAME=FETCHARG`, signed or not; without them, the DWARF site's) and the prologue planned
/// for `args` + body; per row: what the program got in r2..r5, and what the kernel's
/// fetch-args recorded.
fn run(bin: &Path, args: &str, fetch_args: Option<&[(&str, bool)]>) -> Vec<(Vec<u64>, Vec<u64>)> {
    let (prologue, site) = planned_prologue(bin, args);
    let site_args: Vec<(&str, bool)> = site
        .iter()
        .flat_map(|s| s.fetch_args.iter())
        .map(|a| (a.as_str(), a.contains(":s")))
        .collect();
    let fetch_args = fetch_args.unwrap_or(&site_args);
    eprintln!(
        "{}: planned prologue\n{}",
        bin.display(),
        (&sluice_core::disasm::Listing::new(&prologue))
            .into_iter()
            .map(|l| format!("  {l}\n"))
            .collect::<String>()
    );
    let t = Tracefs::find().expect("tracefs");
    let target = match &site {
        Some(s) => s.target.clone(),
        None => UprobeSpec::parse(&format!("{}:abi_target", bin.display()))
            .unwrap()
            .resolve()
            .unwrap(),
    };
    eprintln!(
        "{}: probe at {target:?}, fetch-args {fetch_args:?}",
        bin.display()
    );
    let args: Vec<&str> = fetch_args.iter().map(|(a, _)| *a).collect();
    let guard = t
        .add_probe(&ProbeRequest {
            kind: ProbeKind::Uprobe,
            target,
            args: args.join(" "),
        })
        .unwrap_or_else(|e| panic!("the kernel refused fetch-args {args:?}: {e}"));
    let id = t.event_id(GROUP, guard.event()).unwrap();
    let format = t.event_format(GROUP, guard.event()).unwrap();
    let fields: Vec<_> = fetch_args
        .iter()
        .map(|(a, signed)| {
            let name = a.split_once('=').unwrap().0;
            (format.field(name).unwrap().clone(), *signed)
        })
        .collect();

    let map = Map::create(
        &MapSpec {
            name: "abi_vals".into(),
            map_type: map_type::ARRAY,
            key_size: 4,
            value_size: 32,
            max_entries: 1,
            map_flags: 0,
        },
        None,
    )
    .unwrap();
    let mut insns = prologue;
    insns.extend(body(std::os::fd::AsRawFd::as_raw_fd(&map.as_fd())));
    let (prog, _) = load::program(
        &ProgramLoad {
            name: "uprobe_abi",
            prog_type: prog_type::KPROBE,
            insns: &insns,
            license: "GPL",
            kern_version: 0,
            btf: None,
            attach: Default::default(),
        },
        &LoadLog::Always {
            level: 1,
            size: 1 << 16,
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));

    let mut child = Command::new(bin)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let st = SampleType::TID | SampleType::RAW;
    let cfg = RingConfig {
        data_pages: 8,
        ..RingConfig::default()
    };
    let fd = perf_event_open(&tracepoint_attr(id, st.0, &cfg), child.id() as i32, -1).unwrap();
    let mut ring = PerfRing::map(&fd, cfg.data_pages, SampleFormat::new(st), None).unwrap();
    perf_event::set_bpf(fd.as_fd(), prog.as_fd()).expect("PERF_EVENT_IOC_SET_BPF");
    enable(&fd);
    let (mut stdin, mut stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let mut seen = Vec::new();
    for k in 0..ROWS.len() {
        map.update_bytes(
            &0u32.to_ne_bytes(),
            &[0xee; 32],
            sluice_runtime::UpdateMode::Any,
        )
        .unwrap();
        stdin.write_all(&[k as u8]).unwrap();
        let mut done = [0u8];
        stdout.read_exact(&mut done).unwrap(); // the call, and so the probe, has run
        let v = map.get_bytes(&0u32.to_ne_bytes()).unwrap().unwrap();
        seen.push(
            (0..4)
                .map(|j| u64::from_ne_bytes(v[8 * j..8 * j + 8].try_into().unwrap()))
                .collect::<Vec<u64>>(),
        );
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    disable(&fd);
    let mut kernel = Vec::new();
    ring.drain(|r| {
        if let Record::Sample(s) = r {
            let raw = s.raw.unwrap();
            kernel.push(
                fields
                    .iter()
                    .map(|(f, signed)| {
                        if *signed {
                            f.read_i64(raw).unwrap() as u64
                        } else {
                            f.read_u64(raw).unwrap()
                        }
                    })
                    .collect::<Vec<u64>>(),
            );
        }
    })
    .unwrap();
    drop(ring);
    drop(fd);
    drop(guard);
    assert_eq!(kernel.len(), ROWS.len(), "one sample per call");
    seen.into_iter().zip(kernel).collect()
}

/// Builds abi_args with `flags`, runs it with the prologue of `args` under `fetch_args`
/// (else the DWARF site's), checks every row.
fn check(test: &str, name: &str, flags: &[&str], args: &str, fetch_args: Option<&[(&str, bool)]>) {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !common::kernel(test) {
        return;
    }
    if sluice_runtime::kernel::arch::running_kernel_arch() != Some(Arch::X86_64) {
        eprintln!("\n*** SKIPPED {test}: the kernel is not x86_64 ***\n");
        return;
    }
    let dir = std::env::temp_dir().join(format!("sluice-uprobe-abi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let Some(bin) = build(&dir, name, flags) else {
        return;
    };
    let results = run(&bin, args, fetch_args);
    for (k, (seen, kernel)) in results.iter().enumerate() {
        let want = want(ROWS[k]);
        eprintln!(
            "{name} row {k}: r2..r5 {:x?}, kernel {:x?} ({})",
            seen,
            kernel,
            fetch_args.map_or_else(
                || "the DWARF site's".to_owned(),
                |f| f.iter().map(|(a, _)| *a).collect::<Vec<_>>().join(" ")
            )
        );
        assert_eq!(seen, &want, "{name} row {k}: the prologue's r2..r5");
        assert_eq!(kernel, &want, "{name} row {k}: the kernel's fetch-args");
    }
    let _ = std::fs::remove_file(&bin);
}

#[test]
fn an_i386_binary_takes_its_arguments_from_the_user_stack_through_the_64_bit_sp() {
    check(
        "an_i386_binary_takes_its_arguments_from_the_user_stack_through_the_64_bit_sp",
        "abi_args_m32",
        &["-m32"],
        TYPES,
        Some(&[
            ("a=+4($stack):s32", true),
            ("b=+8($stack):u8", false),
            ("c=+12($stack):s16", true),
            ("d=+16($stack):s64", true),
        ]),
    );
}

#[test]
fn an_x86_64_binary_takes_its_arguments_from_the_registers() {
    check(
        "an_x86_64_binary_takes_its_arguments_from_the_registers",
        "abi_args_64",
        &["-m64"],
        TYPES,
        Some(&[
            ("a=%di:s32", true),
            ("b=%si:u8", false),
            ("c=%dx:s16", true),
            ("d=%cx:s64", true),
        ]),
    );
}

/// The same through DWARF (`-g`): an i386 binary's variables at its frame's CFA, read
/// through the x86-64 `sp` slot; the kernel's fetch-args are the site's.
#[test]
fn an_i386_binary_s_dwarf_variables_under_an_x86_64_kernel() {
    check(
        "an_i386_binary_s_dwarf_variables_under_an_x86_64_kernel",
        "abi_args_m32_g",
        &["-m32", "-g"],
        "a, b, c, d",
        None,
    );
}
