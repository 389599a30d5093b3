//! Objects as clang and libbpf write them today, opened and linked without a kernel:
//! BTF-defined maps, global data maps, bpf-to-bpf calls. Expected figures are libbpf
//! 1.1's (`runtime/tests/modern_libbpf_view.c` prints them; `runtime/tests/modern_objects.rs`
//! compares against it live).
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use sluice_core::object::{
    LinkedPart, MapKind, Object, ObjectStorage, BPF_F_MMAPABLE, BPF_F_RDONLY_PROG, PSEUDO_CALL,
    PSEUDO_MAP_FD, PSEUDO_MAP_VALUE,
};
use sluice_core::Insn;

fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/bpf")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `(name, type, key, value, max_entries, flags)` of every map, in libbpf's order, with
/// the kernel name of global data maps for an object called `obj`.
fn maps(o: &Object<'_, '_>, obj: &str) -> Vec<(String, u32, u32, u32, u32, u32)> {
    o.maps()
        .iter()
        .map(|m| {
            let n = m.kernel_name(obj);
            let end = n.iter().position(|&b| b == 0).unwrap_or(n.len());
            (
                String::from_utf8_lossy(&n[..end]).into_owned(),
                m.map_type,
                m.key_size,
                m.value_size,
                m.max_entries,
                m.map_flags.unwrap_or(0),
            )
        })
        .collect()
}

/// `(name, section, linked instruction count)` of every program that is not a `.text`
/// subprogram.
fn programs(o: &Object<'_, '_>) -> Vec<(String, String, usize)> {
    o.programs()
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.is_subprogram())
        .map(|(i, p)| {
            (
                p.name.unwrap_or("").to_owned(),
                p.section_name.to_owned(),
                o.linked_len(i).unwrap(),
            )
        })
        .collect()
}

const DATA: u32 = BPF_F_MMAPABLE;
const RODATA: u32 = BPF_F_MMAPABLE | BPF_F_RDONLY_PROG;

#[test]
fn modern_maps_programs_and_links_as_libbpf() {
    let bytes = fixture("modern.o");
    let mut storage = Box::new(ObjectStorage::new());
    let o = Object::open(&bytes, &mut storage).unwrap();
    let s = |x: &str| x.to_owned();
    assert_eq!(
        maps(&o, "modern.o"),
        [
            (s("counts"), 1, 4, 8, 1024, 0),
            (s("events"), 4, 4, 4, 0, 0),
            (s("modern.rodata"), 2, 4, 16, 1, RODATA),
            (s("modern.data"), 2, 4, 16, 1, DATA),
            (s("modern.bss"), 2, 4, 12, 1, DATA),
        ]
    );
    let kinds: Vec<MapKind> = o.maps().iter().map(|m| m.kind).collect();
    assert_eq!(
        kinds,
        [
            MapKind::Btf,
            MapKind::Btf,
            MapKind::Rodata,
            MapKind::Data,
            MapKind::Bss
        ]
    );
    assert_ne!(o.maps()[0].btf_key_type_id, 0);
    assert_eq!(o.maps()[3].initial.len(), 16);
    assert!(o.maps()[4].initial.is_empty());
    assert_eq!(
        programs(&o),
        [
            (
                s("getppid_enter"),
                s("tracepoint/syscalls/sys_enter_getppid"),
                81
            ),
            (
                s("process_exit"),
                s("tracepoint/sched/sched_process_exit"),
                10
            ),
        ]
    );
}

/// Every linked program: calls land on the first instruction of a placed function, map
/// loads carry fds, global data loads `BPF_PSEUDO_MAP_VALUE` with an offset inside the
/// value.
#[test]
fn linked_programs_are_consistent() {
    for name in ["modern.o", "btf_kinds.o", "btf_core.o", "btf_maps.o"] {
        let bytes = fixture(name);
        let mut storage = Box::new(ObjectStorage::new());
        let o = Object::open(&bytes, &mut storage).unwrap();
        let fds: Vec<i32> = (0..o.maps().len() as i32).map(|i| 100 + i).collect();
        for (i, p) in o.programs().iter().enumerate() {
            if p.is_subprogram() {
                continue;
            }
            let len = o.linked_len(i).unwrap();
            let mut parts = [LinkedPart::default(); 16];
            let n = o.link_layout(i, &mut parts).unwrap();
            let starts: Vec<usize> = parts[..n].iter().map(|x| x.start).collect();
            let mut out = vec![Insn::default(); len + 3];
            let prologue = [Insn::default(); 3];
            let got = match o.relocate(i, &prologue, &fds, &mut out) {
                Ok(n) => n,
                Err(e) => panic!("{name} {}: {e}", p.section_name),
            };
            assert_eq!(got, len + 3);
            let body = &out[3..got];
            let mut j = 0;
            while j < body.len() {
                let insn = body[j];
                if insn.code() == 0x85 && insn.src() == PSEUDO_CALL {
                    let t = (j as i64 + 1 + i64::from(insn.imm())) as usize;
                    assert!(starts.contains(&t), "{name}: call at {j} lands at {t}");
                }
                if insn.code() == 0x18 {
                    if insn.src() == PSEUDO_MAP_FD {
                        assert!(insn.imm() >= 100, "{name}: {j}");
                    }
                    if insn.src() == PSEUDO_MAP_VALUE {
                        let m = &o.maps()[(insn.imm() - 100) as usize];
                        assert!(m.kind.is_internal());
                        assert!((body[j + 1].imm() as u32) < m.value_size, "{name}: {j}");
                    }
                    j += 1;
                }
                j += 1;
            }
        }
    }
}
