//! Kernel tests of the load phase: what the kernel observably did with our maps and programs.
//! They need root and a real `bpf()`; see `common::kernel`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use rustix::io::Errno;
use sluice_core::object::{Object, ObjectStorage};
use sluice_core::perf::abi::{map_type, prog_type};
use sluice_core::Insn;
use sluice_runtime::load::{LoadLog, ProgramLoad};
use sluice_runtime::{load, Error, LoadOptions, Map, MapSpec, UpdateMode};
use std::os::fd::AsFd;

const MOV64_IMM: u8 = 0xb7;
const ADD64_REG: u8 = 0x0f;
const EXIT: u8 = 0x95;

fn mov_imm(dst: u8, imm: i32) -> Insn {
    Insn::new(MOV64_IMM, dst, 0, 0, imm)
}
fn exit() -> Insn {
    Insn::new(EXIT, 0, 0, 0, 0)
}

/// `r2 = 0; r3 = 0; r4 = 0; r5 = 0`: what a program reading arguments needs before the
/// real prologue generator exists (r1 = ctx is untouched).
fn zeroing_prologue() -> Vec<Insn> {
    (2..=5).map(|r| mov_imm(r, 0)).collect()
}

/// Options that give every program whose section declares arguments a zeroing prologue.
fn options_for(obj: &Object<'_, '_>) -> LoadOptions {
    let mut o = LoadOptions::default();
    o.prologues = obj
        .programs()
        .iter()
        .map(|p| {
            if p.section_name.contains(['(', ' ']) {
                zeroing_prologue()
            } else {
                Vec::new()
            }
        })
        .collect();
    // Every program, SEC("?...") ones too; a size for the maps the loader is to size; pins
    // (pinned.o) in a folder of this test run, not in /sys/fs/bpf.
    o.programs = Some(
        obj.programs()
            .iter()
            .filter(|p| !p.is_subprogram())
            .filter_map(|p| p.name.map(str::to_owned))
            .collect(),
    );
    for m in obj.maps() {
        if m.max_entries == 0 && m.map_type != sluice_core::perf::abi::map_type::PERF_EVENT_ARRAY {
            o.map_sizes.insert(m.name.to_owned(), 16);
        }
    }
    o.pin_root = Some(pin_root());
    o
}

/// Where the fixtures' pinned maps go (removed by [`Pins`]).
fn pin_root() -> std::path::PathBuf {
    std::path::PathBuf::from(format!(
        "/sys/fs/bpf/sluice-kernel-test-{}",
        std::process::id()
    ))
}

/// Removes the folder of [`pin_root`] and its pins when dropped.
struct Pins;

impl Drop for Pins {
    fn drop(&mut self) {
        if let Ok(entries) = std::fs::read_dir(pin_root()) {
            for e in entries.flatten() {
                let _ = std::fs::remove_file(e.path());
            }
        }
        let _ = std::fs::remove_dir(pin_root());
    }
}

#[test]
fn uninitialised_register_is_refused_with_a_log_naming_the_insn() {
    if !common::kernel("uninitialised_register_is_refused_with_a_log_naming_the_insn") {
        return;
    }
    // 0: r0 = 0; 1: r1 = 1; 2: r0 += r2 (r2 never written); 3: exit
    let insns = [
        mov_imm(0, 0),
        mov_imm(1, 1),
        Insn::new(ADD64_REG, 0, 2, 0, 0),
        exit(),
    ];
    let req = ProgramLoad {
        name: "uninit_r2",
        prog_type: prog_type::KPROBE,
        insns: &insns,
        license: "GPL",
        kern_version: 0,
        btf: None,
        attach: Default::default(),
    };
    let err = load::program(
        &req,
        &LoadLog::OnFailure {
            level: 1,
            size: 4096,
        },
    )
    .unwrap_err();
    let Error::Verifier {
        program,
        errno,
        log,
    } = &err
    else {
        panic!("not a verifier error: {err}")
    };
    assert_eq!(program, "uninit_r2");
    assert_eq!(*errno, Errno::ACCESS);
    let text = String::from_utf8_lossy(log);
    assert!(
        text.contains("2: (0f) r0 += r2\nR2 !read_ok"),
        "log:\n{text}"
    );
    assert!(err.to_string().contains("R2 !read_ok"));
}

#[test]
fn out_of_bounds_stack_read_is_refused() {
    if !common::kernel("out_of_bounds_stack_read_is_refused") {
        return;
    }
    // 0: r0 = *(u64 *)(r10 +8): above the frame.
    let insns = [Insn::new(0x79, 0, 10, 8, 0), exit()];
    let req = ProgramLoad {
        name: "oob_stack",
        prog_type: prog_type::KPROBE,
        insns: &insns,
        license: "GPL",
        kern_version: 0,
        btf: None,
        attach: Default::default(),
    };
    let err = load::program(
        &req,
        &LoadLog::OnFailure {
            level: 1,
            size: 4096,
        },
    )
    .unwrap_err();
    let text = String::from_utf8_lossy(err.verifier_log().expect("a log"));
    assert!(
        text.contains("0: (79) r0 = *(u64 *)(r10 +8)"),
        "log:\n{text}"
    );
    assert!(
        text.contains("invalid read from stack R10 off=8 size=8"),
        "log:\n{text}"
    );
}

#[test]
fn log_buffer_grows_to_what_the_kernel_needed() {
    if !common::kernel("log_buffer_grows_to_what_the_kernel_needed") {
        return;
    }
    // 200 moves: the level-2 log (one line per instruction, plus states) is far over 256 bytes.
    let mut insns: Vec<Insn> = (0..200).map(|i| mov_imm(0, i)).collect();
    insns.push(exit());
    let req = ProgramLoad {
        name: "long",
        prog_type: prog_type::KPROBE,
        insns: &insns,
        license: "GPL",
        kern_version: 0,
        btf: None,
        attach: Default::default(),
    };
    let (fd, log) = load::program(
        &req,
        &LoadLog::Always {
            level: 2,
            size: 256,
        },
    )
    .unwrap();
    let text = String::from_utf8_lossy(&log);
    assert!(log.len() > 4096, "log of {} bytes", log.len());
    assert!(text.contains("199: (b7) r0 = 199"), "log:\n{text}");
    assert!(text.contains("processed 201 insns"), "log:\n{text}");
    assert!(load::prog_info(fd.as_fd()).unwrap().id > 0);
}

/// Fixtures using what `Object::relocate` does not link yet (global data, bpf-to-bpf calls).
/// Fixtures this kernel refuses as it refuses libbpf's load of them: `btf_maps.o` asks
/// for NUMA node 1 (map `sized`), which a single-node host does not have.
fn kernel_refuses(name: &str, e: &Error) -> bool {
    let numa = name == "btf_maps.o"
        && !std::path::Path::new("/sys/devices/system/node/node1").exists()
        && matches!(e, Error::Syscall { call: "bpf(BPF_MAP_CREATE)", subject, .. } if subject == "sized");
    // fentry where the kernel makes no BPF trampoline (this host: EPERM even to root).
    // guest_attach.o also has kprobes and an arm64 knob: the guests load and attach it.
    let trampoline = (name == "attach_refused.o" || name == "guest_attach.o")
        && matches!(e, Error::HookRefused { .. });
    numa || trampoline
}

#[test]
fn every_fixture_loads() {
    if !common::kernel("every_fixture_loads") {
        return;
    }
    let _pins = Pins;
    let fixtures = common::fixtures();
    assert!(
        !fixtures.is_empty(),
        "no fixture under {}",
        common::fixture_dir().display()
    );
    let mut loaded = 0;
    for path in fixtures {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "bad_verifier.o" || name == "modern_badline.o" || name == "attach_nofunc.o" {
            // Refused on purpose: see bad_verifier_fixture_is_refused, modern_load.rs,
            // attach_types.rs.
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let mut storage = ObjectStorage::new();
        let obj =
            Object::open(&bytes, &mut storage).unwrap_or_else(|e| panic!("{name}: open: {e}"));
        let l = match load(&obj, &options_for(&obj)) {
            Ok(l) => l,
            Err(e) if kernel_refuses(&name, &e) => {
                eprintln!("{name}: refused by this kernel, as libbpf's load is: {e}");
                continue;
            }
            Err(e) => panic!("{name}: load: {e}"),
        };
        let expected = obj.programs().iter().filter(|p| !p.is_subprogram()).count();
        assert_eq!(l.programs().len(), expected, "{name}");
        assert_eq!(l.maps().len(), obj.maps().len(), "{name}");
        for (p, r) in l.programs().iter().zip(l.report().unwrap()) {
            // The kernel has it: an id, a type, and a post-verifier length.
            assert!(r.info.id > 0, "{name}/{}", p.name());
            assert_eq!(r.info.prog_type, p.prog_type());
            assert!(r.info.xlated_insns > 0, "{name}/{}", p.name());
            let section = p.section_name();
            let want = if section.starts_with("tracepoint/") {
                prog_type::TRACEPOINT
            } else if section.starts_with("tp_btf/") || section.starts_with("fentry/") {
                sluice_core::probe::prog_types::TRACING
            } else if section.starts_with("raw_tp/") || section.starts_with("raw_tracepoint/") {
                prog_type::RAW_TRACEPOINT
            } else if section == "socket" {
                prog_type::SOCKET_FILTER
            } else if p.section_name() == "perf_event" {
                prog_type::PERF_EVENT
            } else {
                prog_type::KPROBE
            };
            assert_eq!(p.prog_type(), want, "{name}/{}", p.section_name());
        }
        loaded += 1;
    }
    assert!(loaded > 0);
}

#[test]
fn bad_verifier_fixture_is_refused() {
    if !common::kernel("bad_verifier_fixture_is_refused") {
        return;
    }
    let bytes = common::fixture("bad_verifier.o");
    let mut storage = ObjectStorage::new();
    let obj = Object::open(&bytes, &mut storage).unwrap();
    let expect = [
        ("null_deref", "R0 invalid mem access 'map_value_or_null'"),
        ("uninit_reg", "R3 !read_ok"),
        (
            "oob_value",
            "invalid access to map value, value_size=8 off=8 size=8",
        ),
    ];
    for (name, needle) in expect {
        let mut o = LoadOptions::default();
        // Load only up to `name`: force the earlier ones out by loading each program alone.
        let idx = obj
            .programs()
            .iter()
            .position(|p| p.name == Some(name))
            .unwrap();
        let p = obj.programs()[idx];
        let maps: Vec<Map> = obj
            .maps()
            .iter()
            .map(|d| {
                Map::create(
                    &MapSpec {
                        name: d.name.into(),
                        map_type: d.map_type,
                        key_size: d.key_size,
                        value_size: d.value_size,
                        max_entries: d.max_entries,
                        map_flags: 0,
                    },
                    None,
                )
                .unwrap()
            })
            .collect();
        let fds: Vec<i32> = maps
            .iter()
            .map(|m| std::os::fd::AsRawFd::as_raw_fd(&m.as_fd()))
            .collect();
        let mut insns = vec![Insn::default(); p.insn_count()];
        obj.relocate(idx, &[], &fds, &mut insns).unwrap();
        o.log_level = 1;
        let ty =
            sluice_runtime::probe::section_prog_type(p.section_name).unwrap_or(prog_type::KPROBE);
        let req = ProgramLoad {
            name,
            prog_type: ty,
            insns: &insns,
            license: "GPL",
            kern_version: 0,
            btf: None,
            attach: Default::default(),
        };
        let err = load::program(
            &req,
            &LoadLog::OnFailure {
                level: o.log_level,
                size: o.log_size,
            },
        )
        .unwrap_err();
        let log = String::from_utf8_lossy(
            err.verifier_log()
                .unwrap_or_else(|| panic!("{name}: {err}")),
        )
        .into_owned();
        assert!(log.contains(needle), "{name}: log:\n{log}");
    }
    // And the whole object: the first program's refusal, by name.
    let err = load(&obj, &LoadOptions::default()).unwrap_err();
    assert!(
        matches!(&err, Error::Verifier { program, .. } if program == "null_deref"),
        "{err}"
    );
}

#[test]
fn unload_and_load_again_from_the_same_object() {
    if !common::kernel("unload_and_load_again_from_the_same_object") {
        return;
    }
    let bytes = common::fixture("legacy_maps.o");
    let mut storage = ObjectStorage::new();
    let obj = Object::open(&bytes, &mut storage).unwrap();
    let first = load(&obj, &LoadOptions::default()).unwrap();
    let ids: Vec<u32> = first.report().unwrap().iter().map(|r| r.info.id).collect();
    assert_eq!(ids.len(), 3);
    first.unload();
    let second = load(&obj, &LoadOptions::default()).unwrap();
    let again: Vec<u32> = second.report().unwrap().iter().map(|r| r.info.id).collect();
    assert_eq!(again.len(), 3);
    // New kernel objects: ids only grow.
    assert!(
        again.iter().zip(&ids).all(|(b, a)| b > a),
        "{ids:?} then {again:?}"
    );
    // Tags depend only on the instructions (map fds zeroed): identical across loads.
    let t1: Vec<_> = second
        .report()
        .unwrap()
        .iter()
        .map(|r| r.info.tag)
        .collect();
    drop(second);
    let third = load(&obj, &LoadOptions::default()).unwrap();
    let t2: Vec<_> = third.report().unwrap().iter().map(|r| r.info.tag).collect();
    assert_eq!(t1, t2);
}

#[test]
fn prog_info_agrees_with_bpftool() {
    if !common::kernel("prog_info_agrees_with_bpftool") {
        return;
    }
    let Ok(out) = std::process::Command::new("bpftool")
        .arg("version")
        .output()
    else {
        assert!(!common::required(), "bpftool missing");
        eprintln!("*** SKIPPED prog_info_agrees_with_bpftool: no bpftool ***");
        return;
    };
    assert!(out.status.success());
    let bytes = common::fixture("legacy_maps.o");
    let mut storage = ObjectStorage::new();
    let obj = Object::open(&bytes, &mut storage).unwrap();
    let l = load(&obj, &LoadOptions::default()).unwrap();
    for r in l.report().unwrap() {
        let out = std::process::Command::new("bpftool")
            .args(["prog", "show", "id", &r.info.id.to_string()])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!("tag {}", r.info.tag_hex())),
            "{text}"
        );
        assert!(
            text.contains(&format!("xlated {}B", r.info.xlated_insns * 8)),
            "{text}"
        );
        assert!(text.contains(&format!("name {}", r.info.name)), "{text}");
        assert!(
            r.name.starts_with(&r.info.name),
            "{} vs {}",
            r.name,
            r.info.name
        );
    }
}

fn spec(name: &str, map_type: u32, key_size: u32, value_size: u32, max_entries: u32) -> MapSpec {
    MapSpec {
        name: name.into(),
        map_type,
        key_size,
        value_size,
        max_entries,
        map_flags: 0,
    }
}

#[test]
fn hash_map_round_trip() {
    if !common::kernel("hash_map_round_trip") {
        return;
    }
    let m = Map::create(&spec("rt_hash", map_type::HASH, 4, 8, 16), None).unwrap();
    assert_eq!(m.get::<u32, u64>(&7).unwrap(), None);
    for k in 0u32..10 {
        m.update(&k, &(u64::from(k) * 1000), UpdateMode::Any)
            .unwrap();
    }
    assert_eq!(m.get::<u32, u64>(&7).unwrap(), Some(7000));
    // NOEXIST on an existing key: the kernel says EEXIST.
    let e = m.update(&7u32, &1u64, UpdateMode::NoExist).unwrap_err();
    assert_eq!(e.errno(), Some(Errno::EXIST));
    m.update(&7u32, &1u64, UpdateMode::Exist).unwrap();
    assert_eq!(m.get::<u32, u64>(&7).unwrap(), Some(1));
    assert!(m.delete(&7u32).unwrap());
    assert!(!m.delete(&7u32).unwrap());
    let mut keys: Vec<u32> = m.keys::<u32>().collect::<Result<_, _>>().unwrap();
    keys.sort_unstable();
    assert_eq!(keys, [0, 1, 2, 3, 4, 5, 6, 8, 9]);
    // Wrong sizes never reach the kernel.
    assert!(matches!(
        m.get::<u64, u64>(&1),
        Err(Error::KeySize {
            expected: 4,
            got: 8,
            ..
        })
    ));
    assert!(matches!(
        m.get::<u32, u32>(&1),
        Err(Error::ValueSize {
            expected: 8,
            got: 4,
            ..
        })
    ));
    // Full: E2BIG.
    for k in 100u32..107 {
        m.update(&k, &0u64, UpdateMode::Any).unwrap();
    }
    assert_eq!(
        m.update(&200u32, &0u64, UpdateMode::Any)
            .unwrap_err()
            .errno(),
        Some(Errno::TOOBIG)
    );
}

#[test]
fn array_map_round_trip() {
    if !common::kernel("array_map_round_trip") {
        return;
    }
    let m = Map::create(&spec("rt_array", map_type::ARRAY, 4, 16, 4), None).unwrap();
    // Arrays are preallocated and zeroed.
    assert_eq!(m.get::<u32, [u32; 4]>(&3).unwrap(), Some([0; 4]));
    m.update(&2u32, &[1u32, 2, 3, 4], UpdateMode::Any).unwrap();
    assert_eq!(m.get::<u32, [u32; 4]>(&2).unwrap(), Some([1, 2, 3, 4]));
    assert_eq!(m.get::<u32, [u32; 4]>(&4).unwrap(), None);
    // Array elements cannot be deleted: EINVAL.
    assert_eq!(m.delete(&2u32).unwrap_err().errno(), Some(Errno::INVAL));
    let keys: Vec<u32> = m.keys::<u32>().collect::<Result<_, _>>().unwrap();
    assert_eq!(keys, [0, 1, 2, 3]);
}

#[test]
fn per_cpu_array_round_trip() {
    if !common::kernel("per_cpu_array_round_trip") {
        return;
    }
    let cpus = sluice_runtime::sys::bpf::possible_cpus().unwrap();
    // 4-byte values: each CPU's slot is rounded up to 8 bytes.
    let m = Map::create(&spec("rt_pcpu", map_type::PERCPU_ARRAY, 4, 4, 2), None).unwrap();
    assert_eq!(m.value_bytes(), 8 * cpus);
    let values: Vec<u32> = (0..cpus as u32).map(|c| 10 + c).collect();
    m.update_per_cpu(&1u32, &values, UpdateMode::Any).unwrap();
    assert_eq!(m.get_per_cpu::<u32, u32>(&1).unwrap(), Some(values));
    assert_eq!(m.get_per_cpu::<u32, u32>(&0).unwrap(), Some(vec![0; cpus]));
    assert!(matches!(
        m.get::<u32, u32>(&1),
        Err(Error::ValueSize { got: 4, .. })
    ));
    let keys: Vec<u32> = m.keys::<u32>().collect::<Result<_, _>>().unwrap();
    assert_eq!(keys, [0, 1]);
}

#[test]
fn fixture_maps_are_usable() {
    if !common::kernel("fixture_maps_are_usable") {
        return;
    }
    let bytes = common::fixture("legacy_maps.o");
    let mut storage = ObjectStorage::new();
    let obj = Object::open(&bytes, &mut storage).unwrap();
    let l = load(&obj, &LoadOptions::default()).unwrap();
    let names: Vec<&str> = l.maps().iter().map(Map::name).collect();
    assert_eq!(names, ["counts", "totals", "percpu_hits", "events"]);
    let counts = l.map("counts").unwrap();
    let k = vec![0u8; counts.key_size() as usize];
    let v = vec![0xabu8; counts.value_size() as usize];
    counts.update_bytes(&k, &v, UpdateMode::Any).unwrap();
    assert_eq!(counts.get_bytes(&k).unwrap(), Some(v));
    assert_eq!(
        l.map("events").unwrap().map_type(),
        map_type::PERF_EVENT_ARRAY
    );
}

/// Re-executed as a child with its capabilities dropped; prints the error it gets.
#[test]
fn capability_loss_child() {
    if std::env::var_os("SLUICE_CAPLOSS_CHILD").is_none() {
        return; // only meaningful in the child spawned by capability_loss_names_the_capability
    }
    use rustix::thread::{capabilities, set_capabilities, CapabilitySet};
    let mut caps = capabilities(None).unwrap();
    let drop = CapabilitySet::SYS_ADMIN | CapabilitySet::BPF | CapabilitySet::PERFMON;
    caps.effective.remove(drop);
    caps.permitted.remove(drop);
    set_capabilities(None, caps).unwrap();
    // This thread now lacks them (capabilities are per thread, as is bpf()'s check).
    let insns = [mov_imm(0, 0), exit()];
    let req = ProgramLoad {
        name: "capless",
        prog_type: prog_type::KPROBE,
        insns: &insns,
        license: "GPL",
        kern_version: 0,
        btf: None,
        attach: Default::default(),
    };
    let err = load::program(
        &req,
        &LoadLog::OnFailure {
            level: 1,
            size: 4096,
        },
    )
    .unwrap_err();
    println!("PROG_LOAD_ERROR: {err}");
    let err = Map::create(&spec("capless", map_type::HASH, 4, 4, 1), None).unwrap_err();
    println!("MAP_CREATE_ERROR: {err}");
    println!("VARIANT: {}", matches!(err, Error::Permission { .. }));
}

#[test]
fn capability_loss_names_the_capability() {
    if !common::kernel("capability_loss_names_the_capability") {
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "capability_loss_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("SLUICE_CAPLOSS_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sysctl = std::fs::read_to_string("/proc/sys/kernel/unprivileged_bpf_disabled").unwrap();
    let prog = text
        .lines()
        .find_map(|l| l.split_once("PROG_LOAD_ERROR: ").map(|x| x.1))
        .expect(&text);
    assert!(prog.contains("bpf(BPF_PROG_LOAD)"), "{prog}");
    assert!(prog.contains("CAP_BPF + CAP_PERFMON"), "{prog}");
    assert!(
        prog.contains("missing here: CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN"),
        "{prog}"
    );
    assert!(
        prog.contains(&format!(
            "kernel.unprivileged_bpf_disabled = {}",
            sysctl.trim()
        )),
        "{prog}"
    );
    if sysctl.trim() != "0" {
        // Unprivileged bpf() is off: even a plain hash map is refused, by name of capability.
        let map = text
            .lines()
            .find_map(|l| l.split_once("MAP_CREATE_ERROR: ").map(|x| x.1))
            .expect(&text);
        assert!(map.contains("CAP_BPF"), "{map}");
        assert!(text.contains("VARIANT: true"), "{text}");
    }
}

/// A minimal raw BTF blob: one `int` (4 bytes, 32 bits), strings `"\0int\0"`.
fn tiny_btf(magic: u16) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&magic.to_ne_bytes());
    b.extend_from_slice(&[1, 0]); // version 1, flags 0
    for v in [24u32, 0, 16, 16, 5] {
        b.extend_from_slice(&v.to_ne_bytes()); // hdr_len, type_off, type_len, str_off, str_len
    }
    for v in [1u32, 1 << 24, 4, 32] {
        b.extend_from_slice(&v.to_ne_bytes()); // name_off, info (KIND_INT), size, int bits
    }
    b.extend_from_slice(b"\0int\0");
    b
}

#[test]
fn btf_load_accepts_valid_and_logs_invalid() {
    if !common::kernel("btf_load_accepts_valid_and_logs_invalid") {
        return;
    }
    use sluice_runtime::sys::bpf::{btf_load, LogRequest};
    let (fd, _) = btf_load(&tiny_btf(0xeb9f), None);
    fd.unwrap();
    let mut log = vec![0u8; 4096];
    let (r, _) = btf_load(
        &tiny_btf(0x1234),
        Some(LogRequest {
            buf: &mut log,
            level: 1,
        }),
    );
    assert_eq!(r.unwrap_err(), Errno::INVAL);
    let text = String::from_utf8_lossy(&log);
    assert!(text.contains("Invalid magic"), "{text}");
}

/// `BPF_OBJ_GET_INFO_BY_FD` answers per object type; given a map fd, the kernel writes a
/// `bpf_map_info` (whose first fields are type and id) into our zeroed buffer and nothing
/// beyond `info_len`: the wrapper stays sound for any fd.
#[test]
fn object_info_of_a_map_fd_is_the_maps() {
    if !common::kernel("object_info_of_a_map_fd_is_the_maps") {
        return;
    }
    let m = Map::create(&spec("not_a_prog", map_type::ARRAY, 4, 4, 1), None).unwrap();
    let info = load::prog_info(m.as_fd()).unwrap();
    assert_eq!(info.prog_type, map_type::ARRAY);
    assert!(info.id > 0);
}
