//! End to end on the running kernel: a uprobe on a function of this test binary, a
//! `BPF_PROG_TYPE_KPROBE` program made of sluice's prologue and a body that stores r2..r5
//! into an array map, attached with `PERF_EVENT_IOC_SET_BPF`. Oracles: the values this test
//! passes to the function (the prologue must deliver exactly them, through a two-level
//! dereference chain too), and the kernel's own fetch-args on the same event, defined from
//! the prologue's [`FetchArg`](sluice_core::prologue::FetchArg) spelling (the kernel must
//! accept that spelling and fetch the same values).
//!
//! 64-bit hosts only: a 32-bit test binary runs under IA32 emulation, where the context is
//! the 64-bit kernel's `pt_regs`, not the i386 one.
#![cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod ring_support;

use std::os::fd::AsFd;

use ring_support::*;
use sluice_core::arch::Arch;
use sluice_core::insn::opcode::{DW, JNE, W};
use sluice_core::insn::reg::{R0, R1, R10, R2};
use sluice_core::perf::abi::{map_type, prog_type};
use sluice_core::perf::record::{Record, SampleFormat, SampleType};
use sluice_core::probe::{parse, ProbeKind as SpecKind, Section};
use sluice_core::prologue::{from_typed_args, ArgLoc, ArgLocs, Base, Prologue, Value};
use sluice_core::Insn;
use sluice_runtime::load::{self, LoadLog, ProgramLoad};
use sluice_runtime::load::{Map, MapSpec};
use sluice_runtime::ring::{PerfRing, RingConfig};
use sluice_runtime::sys::perf_event;
use sluice_runtime::tracefs::{ProbeKind, ProbeRequest, Tracefs, UprobeSpec, GROUP};

/// What the chain ends in.
#[repr(C)]
pub struct Inner {
    pad: [u64; 3],
    val: i16,
}

/// What the first argument points to.
#[repr(C)]
pub struct Outer {
    pad: [u8; 8],
    inner: *const Inner,
}

/// The probed function.
#[no_mangle]
#[inline(never)]
pub extern "C" fn sluice_prologue_target(a: *const Outer, b: i32, c: u8, d: i64) -> i64 {
    std::hint::black_box((a as usize as i64) ^ i64::from(b) ^ i64::from(c) ^ d)
}

/// Stores r2..r5 at value[0..4] of array entry 0, then returns 1.
fn body(map_fd: i32) -> Vec<Insn> {
    let mut v = Vec::new();
    for j in 0..4u8 {
        v.push(Insn::stx_mem(DW, R10, R2 + j, -8 * (i16::from(j) + 1)));
    }
    v.push(Insn::st_mem(W, R10, -40, 0));
    v.extend(Insn::ld_map_fd(R1, map_fd));
    v.push(Insn::mov64_reg(R2, R10));
    v.push(Insn::alu64_imm(sluice_core::insn::opcode::ADD, R2, -40));
    v.push(Insn::call(1)); // bpf_map_lookup_elem
    v.push(Insn::jmp_imm(JNE, R0, 0, 2));
    v.push(Insn::mov64_imm(R0, 0));
    v.push(Insn::exit());
    for j in 0..4i16 {
        v.push(Insn::ldx_mem(DW, R1, R10, -8 * (j + 1)));
        v.push(Insn::stx_mem(DW, R0, R1, 8 * j));
    }
    v.push(Insn::mov64_imm(R0, 1)); // non-zero: let perf record the sample too
    v.push(Insn::exit());
    v
}

/// Runs `calls` through a uprobe carrying `locs`' fetch-args and the prologue + body, and
/// returns per call: what the program saw in r2..r(1+n), and what the kernel's fetch-args
/// fetched (one u64 per fetched argument).
fn run(locs: &ArgLocs<'_>, calls: &[(*const Outer, i32, u8, i64)]) -> Vec<(Vec<u64>, Vec<u64>)> {
    let t = Tracefs::find().expect("tracefs");
    let exe = std::env::current_exe().unwrap().canonicalize().unwrap();
    let target = UprobeSpec::parse(&format!("{}:sluice_prologue_target", exe.display()))
        .unwrap()
        .resolve()
        .unwrap();
    let fetch_args: Vec<String> = locs
        .fetched()
        .enumerate()
        .map(|(i, l)| l.fetch_arg(i + 1).to_string())
        .collect();
    let guard = t
        .add_probe(&ProbeRequest {
            kind: ProbeKind::Uprobe,
            target,
            args: fetch_args.join(" "),
        })
        .unwrap_or_else(|e| panic!("the kernel refused fetch-args {fetch_args:?}: {e}"));
    let id = t.event_id(GROUP, guard.event()).unwrap();
    let format = t.event_format(GROUP, guard.event()).unwrap();
    let fields: Vec<_> = locs
        .fetched()
        .enumerate()
        .map(|(i, l)| {
            let name = l.name().map_or(format!("arg{}", i + 1), str::to_owned);
            (
                format
                    .field(&name)
                    .unwrap_or_else(|| panic!("field {name}"))
                    .clone(),
                l.signed(),
            )
        })
        .collect();

    let map = Map::create(
        &MapSpec {
            name: "prologue_vals".into(),
            map_type: map_type::ARRAY,
            key_size: 4,
            value_size: 32,
            max_entries: 1,
            map_flags: 0,
        },
        None,
    )
    .unwrap();
    let p: Prologue = Prologue::generate(locs).unwrap();
    let mut insns = p.insns().to_vec();
    insns.extend(body(std::os::fd::AsRawFd::as_raw_fd(&map.as_fd())));
    let (prog, _) = load::program(
        &ProgramLoad {
            name: "prologue_e2e",
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

    let st = SampleType::TID | SampleType::RAW;
    let cfg = RingConfig {
        data_pages: 8,
        ..RingConfig::default()
    };
    let fd = perf_event_open(&tracepoint_attr(id, st.0, &cfg), gettid(), -1).unwrap();
    let mut ring = PerfRing::map(&fd, cfg.data_pages, SampleFormat::new(st), None).unwrap();
    perf_event::set_bpf(fd.as_fd(), prog.as_fd()).expect("PERF_EVENT_IOC_SET_BPF");
    enable(&fd);
    let mut seen = Vec::new();
    for &(a, b, c, d) in calls {
        map.update_bytes(
            &0u32.to_ne_bytes(),
            &[0xee; 32],
            sluice_runtime::UpdateMode::Any,
        )
        .unwrap();
        std::hint::black_box(sluice_prologue_target(a, b, c, d));
        let v = map.get_bytes(&0u32.to_ne_bytes()).unwrap().unwrap();
        seen.push(
            (0..locs.len())
                .map(|j| u64::from_ne_bytes(v[8 * j..8 * j + 8].try_into().unwrap()))
                .collect::<Vec<u64>>(),
        );
    }
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
    assert_eq!(kernel.len(), calls.len(), "one sample per call");
    seen.into_iter().zip(kernel).collect()
}

/// Both tests probe `sluice_prologue_target` in this one process: every uprobe program on
/// it runs on every call, so the tests would write each other's maps if they overlapped.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn native() -> Arch {
    Arch::native().unwrap()
}

#[test]
fn prologue_fetches_a_dereference_chain_and_reports_a_failed_read() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !kernel_or_skip("prologue_fetches_a_dereference_chain_and_reports_a_failed_read") {
        return;
    }
    let arch = native();
    // Where the convention puts a, b, c: take them from the typed spec.
    let Section::Probe(spec) = parse("uprobe/x:f(void *a, int b, unsigned char c)").unwrap() else {
        panic!()
    };
    let typed = from_typed_args(arch, SpecKind::Uprobe, spec.args()).unwrap();
    let base = |i: usize| typed.fetched().nth(i).unwrap().base();
    let Base::Reg(_) = base(0) else {
        panic!("64-bit conventions pass a in a register")
    };
    // val = a->inner->val
    let chain = ArgLoc::new(base(0), 2, true)
        .unwrap()
        .named("val")
        .deref(std::mem::offset_of!(Outer, inner) as i32)
        .unwrap()
        .deref(std::mem::offset_of!(Inner, val) as i32)
        .unwrap();
    let mut locs = ArgLocs::new(arch, sluice_core::prologue::Memory::User);
    locs.push(chain).unwrap();
    locs.push(ArgLoc::new(base(1), 4, true).unwrap().named("b"))
        .unwrap();
    locs.push(ArgLoc::new(base(2), 1, false).unwrap().named("c"))
        .unwrap();
    locs.insert_err(1).unwrap();
    assert!(matches!(locs.values()[1], Value::Err));

    let inners: Vec<Inner> = [-2i16, 0x1234, i16::MIN]
        .iter()
        .map(|&val| Inner { pad: [7; 3], val })
        .collect();
    let outers: Vec<Outer> = inners
        .iter()
        .map(|i| Outer {
            pad: [1; 8],
            inner: i,
        })
        .chain(std::iter::once(Outer {
            pad: [1; 8],
            inner: 16 as *const Inner, // unmapped: the second read fails
        }))
        .collect();
    let calls: Vec<(*const Outer, i32, u8, i64)> = outers
        .iter()
        .enumerate()
        .map(|(k, o)| (o as *const Outer, -7 * (k as i32 + 1), 0xf0 + k as u8, 9))
        .collect();
    let results = run(&locs, &calls);
    for (k, (seen, kernel)) in results.iter().enumerate() {
        let (_, b, c, _) = calls[k];
        let b = i64::from(b) as u64;
        let c = u64::from(c);
        if k < inners.len() {
            let val = i64::from(inners[k].val) as u64;
            assert_eq!(
                seen,
                &vec![val, 0, b, c],
                "call {k}: r2=val r3=$err r4=b r5=c"
            );
            assert_eq!(
                kernel,
                &vec![val, b, c],
                "call {k}: the kernel's fetch-args agree"
            );
        } else {
            assert_eq!(seen, &vec![0, 1, 0, 0], "failed read: all zero, $err = 1");
            assert_eq!(&kernel[1..], &[b, c], "the kernel still fetched b and c");
        }
    }
    eprintln!(
        "prologue uprobe: {} calls checked against passed values and fetch-args",
        results.len()
    );
}

#[test]
fn typed_spec_without_debug_info_fetches_the_arguments() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !kernel_or_skip("typed_spec_without_debug_info_fetches_the_arguments") {
        return;
    }
    let Section::Probe(spec) =
        parse("uprobe/x:f(void *a, int b, unsigned char c, long d)").unwrap()
    else {
        panic!()
    };
    let locs = from_typed_args(native(), SpecKind::Uprobe, spec.args()).unwrap();
    let o = Outer {
        pad: [0; 8],
        inner: std::ptr::null(),
    };
    let calls = [
        (&o as *const Outer, -1, 255, i64::MIN),
        (std::ptr::null(), i32::MAX, 0, -5),
        (0x18 as *const Outer, i32::MIN, 0x80, 0x7fff_ffff_ffff),
    ];
    for (k, (seen, kernel)) in run(&locs, &calls).into_iter().enumerate() {
        let (a, b, c, d) = calls[k];
        let want = vec![
            a as usize as u64,
            i64::from(b) as u64,
            u64::from(c),
            d as u64,
        ];
        assert_eq!(seen, want, "call {k}: the prologue's r2..r5");
        assert_eq!(kernel, want, "call {k}: the kernel's fetch-args");
    }
}
