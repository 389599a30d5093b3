//! Open + relocate + disassemble any bytes as an eBPF object: no panic, no out-of-bounds
//! read; what opens relocates into a fixed buffer (the program alone, or linked with the
//! functions it calls) and prints in the verifier's format.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_core::disasm::{validate, Listing};
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
    let Ok(obj) = Object::open(data, &mut storage) else { return };
    let mut out = [Insn::default(); 512];
    let fds = [5i32; 8];
    let prologue = [Insn::new(0xbf, 6, 1, 0, 0)];
    for (i, p) in obj.programs().iter().enumerate() {
        let _ = p.section();
        let _ = obj.relocations(i).count();
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
});
