//! Open + relocate + disassemble any bytes as an eBPF object: no panic, no out-of-bounds
//! read; what opens relocates into a fixed buffer (the program alone, or linked with the
//! functions it calls) and prints in the verifier's format. What relocating answers must be
//! consistent: the program alone or linked as `linked_len` says, its layout starting with
//! the program, and every relocation inside the program. The open phase's one-pass BTF check
//! and its map-definition reader must agree with `Btf::parse` and `btf_maps`: a `.BTF` open
//! accepted parses step by step to as many types, and every BTF-defined map reads the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_core::btf::{btf_maps, Btf, Kind};
use sluice_core::disasm::{validate, Listing};
use sluice_core::object::{LinkedPart, MapKind};
use sluice_core::{Insn, Object, ObjectStorage};
use std::fmt::Write;

struct Sink(usize);
impl Write for Sink {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    // Small capacities on purpose: capacity errors are part of the surface.
    let mut storage = ObjectStorage::<16, 8>::with_capacities();
    let Ok(obj) = Object::open(data, &mut storage) else {
        return;
    };
    let mut out = [Insn::default(); 512];
    let fds = [5i32; 8];
    let prologue = [Insn::new(0xbf, 6, 1, 0, 0)];
    let mut layout = [LinkedPart::default(); 64];
    for (i, p) in obj.programs().iter().enumerate() {
        let _ = p.section();
        for r in obj.relocations(i) {
            assert!((r.insn as usize) < p.insn_count());
        }
        if let Ok(n) = obj.link_layout(i, &mut layout) {
            assert_eq!(layout[0], LinkedPart { program: i, start: 0 });
            assert!(layout[..n].windows(2).all(|w| w[0].start < w[1].start));
        }
        if let Ok(n) = obj.relocate(i, &prologue, &fds, &mut out) {
            // The program alone, or linked with the functions it calls.
            assert!(n == 1 + p.insn_count() || obj.linked_len(i) == Ok(n - 1));
            let insns = &out[..n];
            let _ = validate(insns);
            let mut sink = Sink(0);
            write!(sink, "{}", Listing::new(insns)).unwrap();
        }
    }
    for m in obj.maps() {
        assert!(!m.name.is_empty());
        assert_eq!(m.words().len(), m.layout.size() / 4);
    }
    if let (Some(fast), Some(bytes)) = (obj.btf(), obj.btf_bytes()) {
        let n = Btf::count_types(bytes).expect("a .BTF open accepted counts its types");
        let mut index = vec![0u32; n as usize];
        let reference = Btf::parse(bytes, &mut index).expect("a .BTF open accepted parses");
        assert_eq!(reference.type_count(), fast.type_count());
        let btf_defined: Vec<_> = obj
            .maps()
            .iter()
            .filter(|m| m.kind == MapKind::Btf)
            .collect();
        if !btf_defined.is_empty() {
            let sec = reference
                .find(".maps", Kind::Datasec)
                .expect(".maps DATASEC");
            let defs: Vec<_> = btf_maps(&reference, sec.id())
                .expect("btf_maps")
                .collect::<Result<_, _>>()
                .expect("every BTF map definition open read reads by the reference");
            for m in btf_defined {
                // Open pairs each `.maps` symbol with the variable of its name.
                let d = defs
                    .iter()
                    .find(|d| d.name == m.name)
                    .expect("a .maps variable named as the map");
                let a = &d.attrs;
                assert_eq!(
                    (a.map_type, a.key_size, a.value_size, a.max_entries, a.map_flags),
                    (
                        m.map_type,
                        m.key_size,
                        m.value_size,
                        m.max_entries,
                        m.map_flags.unwrap_or(0)
                    ),
                    "map {}",
                    m.name
                );
                assert_eq!((a.numa_node, a.map_extra), (m.numa_node, m.map_extra));
                assert_eq!(
                    (a.pinning, a.key_type_id),
                    (m.pinning.unwrap_or(0), m.btf_key_type_id)
                );
            }
        }
    }
});
