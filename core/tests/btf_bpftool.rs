//! Our `.BTF` reader against `bpftool btf dump` (raw format): every type of every fixture
//! and every peer object equals the committed golden, the golden equals what bpftool
//! prints today (when installed), and the kernel's own `/sys/kernel/btf/vmlinux` (about
//! 150 000 types) reads and prints exactly as bpftool prints it.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::type_complexity
)]

mod btf_common;

use btf_common::*;
use sluice_core::btf::{Btf, BtfError, Kind};

fn check(name: &str, btf_bytes: &[u8], golden: &str) {
    let btf = parse(btf_bytes);
    let ours = dump(&btf);
    let want = std::fs::read_to_string(golden_dir().join(golden))
        .unwrap_or_else(|e| panic!("{golden}: {e} (run tests/golden/btf/extract.sh --update)"));
    assert_eq!(
        ours, want,
        "{name}: our dump differs from the golden {golden}"
    );
    let last = want.lines().filter(|l| l.starts_with('[')).count() as u32;
    assert_eq!(btf.type_count(), last, "{name}: type count");
}

#[test]
fn every_fixture_btf_equals_bpftool() {
    let mut n = 0;
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let Some(sec) = section(&bytes, ".BTF") else {
            continue;
        };
        check(&name, sec, &format!("{name}.txt"));
        if let Some(live) = bpftool_dump(path.to_str().unwrap()) {
            let golden = std::fs::read_to_string(golden_dir().join(format!("{name}.txt"))).unwrap();
            assert_eq!(
                live, golden,
                "{name}: golden is stale: run tests/golden/btf/extract.sh --update"
            );
        } else {
            skip(
                "every_fixture_btf_equals_bpftool",
                "bpftool not installed: goldens not re-checked",
            );
        }
        n += 1;
    }
    assert!(n >= 14, "only {n} fixtures with .BTF");
}

#[test]
fn every_peer_btf_equals_bpftool() {
    let peers = peers();
    assert!(peers.len() >= 3, "peers: {peers:?}");
    for name in peers {
        let bytes = peer(&name, "btf").unwrap();
        check(&name, &bytes, &format!("peers/{name}.txt"));
    }
}

#[test]
fn big_endian_object_reads_like_little_endian() {
    let le = fixture("no_version.o");
    let be = fixture("big_endian/no_version_be.o");
    let (le, be) = (section(&le, ".BTF").unwrap(), section(&be, ".BTF").unwrap());
    let (l, b) = (parse(le), parse(be));
    assert!(l.header().little_endian);
    assert!(!b.header().little_endian);
    assert_eq!(dump(&l), dump(&b));
}

#[test]
fn vmlinux_reads_like_bpftool() {
    let Some(bytes) = vmlinux() else {
        return skip("vmlinux_reads_like_bpftool", "no /sys/kernel/btf/vmlinux");
    };
    let n = Btf::count_types(bytes).unwrap();
    assert!(n > 50_000, "{n} types");
    // One short: a Capacity error, never a truncation.
    let mut small = vec![0u32; n as usize - 1];
    assert!(matches!(
        Btf::parse(bytes, &mut small),
        Err(BtfError::Capacity { limit, .. }) if limit == n - 1
    ));
    let mut index = vec![0u32; n as usize];
    let btf = Btf::parse(bytes, &mut index).unwrap();
    assert_eq!(btf.type_count(), n);
    assert_eq!(btf.pointer_size(), 8);

    let task = btf.find("task_struct", Kind::Struct).unwrap();
    let file = btf.find("file", Kind::Struct).unwrap();
    let f_mapping = file.members().find(|m| m.name == "f_mapping").unwrap();
    let pid = task.members().find(|m| m.name == "pid").unwrap();
    // `struct file *` resolves through pointers and typedefs to a size of 8.
    assert_eq!(btf.size_of(f_mapping.type_id).unwrap(), 8);
    assert_eq!(btf.size_of(task.id()).unwrap(), task.size().unwrap());
    let pid_t = btf.resolve_type(pid.type_id).unwrap().unwrap();
    assert_eq!(pid_t.kind(), Kind::Int);

    let Some(live) = bpftool_dump("/sys/kernel/btf/vmlinux") else {
        return skip("vmlinux_reads_like_bpftool", "bpftool not installed");
    };
    // The exact lines bpftool prints for the two types and the two members.
    let mut ours = String::new();
    dump_type(&btf, &task, &mut ours);
    let head = format!(
        "[{}] STRUCT 'task_struct' size={} vlen={}",
        task.id(),
        task.size().unwrap(),
        task.vlen()
    );
    assert!(live.contains(&head), "{head}");
    assert!(live.contains(&format!(
        "\t'f_mapping' type_id={} bits_offset={}\n",
        f_mapping.type_id, f_mapping.bit_offset
    )));
    // And the whole dump, all ~150 000 types, byte for byte.
    let all = dump(&btf);
    if all != live {
        let (a, b): (Vec<_>, Vec<_>) = (all.lines().collect(), live.lines().collect());
        let i = a
            .iter()
            .zip(&b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
        panic!(
            "first difference at line {i}: ours {:?} bpftool {:?}",
            a.get(i),
            b.get(i)
        );
    }
}
