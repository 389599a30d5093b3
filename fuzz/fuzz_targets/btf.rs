//! Fuzz the BTF reader: `.BTF` and `.BTF.ext` come from untrusted objects.
//!
//! Input: a little-endian `u32` N, then N bytes of `.BTF`, then the rest as `.BTF.ext`
//! (inputs shorter than 4 bytes are all `.BTF`). Properties checked:
//! - nothing panics: parse, every accessor of every type, `resolve`/`size_of` of every id,
//!   BTF-defined maps of every DATASEC, every `.BTF.ext` record, CO-RE resolution of every
//!   relocation against the same BTF as target, and patching instructions;
//! - `count_types` agrees with `parse`; `resolve` returns a type that is no modifier.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_core::btf::{
    btf_maps, patch_insn, Btf, BtfExt, Candidate, CandidateIndex, CoreResolver, Kind,
};
use sluice_core::Insn;

fuzz_target!(|data: &[u8]| {
    let (btf_bytes, ext_bytes) = match data.get(..4) {
        Some(n) => {
            let n = u32::from_le_bytes(n.try_into().unwrap()) as usize;
            let rest = &data[4..];
            rest.split_at(n.min(rest.len()))
        }
        None => (data, &[][..]),
    };
    let Ok(n) = Btf::count_types(btf_bytes) else {
        let mut index = vec![0u32; 16];
        let _ = Btf::parse(btf_bytes, &mut index);
        return;
    };
    let mut index = vec![0u32; n as usize];
    let Ok(btf) = Btf::parse(btf_bytes, &mut index) else {
        return;
    };
    assert_eq!(btf.type_count(), n);
    for t in btf.types() {
        let _ = (
            t.name(),
            t.size(),
            t.ref_type(),
            t.int(),
            t.array(),
            t.linkage(),
        );
        let _ = (t.decl_tag_component(), t.kind_flag(), t.enum_is_signed());
        t.members().for_each(drop);
        t.enum_values().for_each(drop);
        t.params().for_each(drop);
        t.datasec_vars().for_each(drop);
        if let Ok(r) = btf.resolve(t.id()) {
            if let Some(rt) = btf.ty(r) {
                assert!(!rt.kind().is_mod_or_typedef());
            }
        }
        let _ = btf.size_of(t.id());
        if t.kind() == Kind::Datasec {
            for m in btf_maps(&btf, t.id()).unwrap() {
                let _ = m.map(|m| m.inner);
            }
        }
    }
    let Ok(ext) = BtfExt::parse(ext_bytes, &btf) else {
        return;
    };
    ext.func_info().for_each(|s| s.records().for_each(drop));
    ext.line_info().for_each(|s| s.records().for_each(drop));
    let mut scratch = vec![Candidate::default(); CandidateIndex::required_len(&btf)];
    let Ok(cands) = CandidateIndex::new(btf, &mut scratch) else {
        return;
    };
    let resolver = CoreResolver::new(&btf, &cands);
    let mut insns = [Insn::default(); 16];
    for (i, b) in data.iter().take(16).enumerate() {
        insns[i].set_code(*b);
    }
    for sec in ext.core_relos() {
        for (i, relo) in sec.records().enumerate() {
            if let Ok(res) = resolver.resolve(i as u32, &relo) {
                let at = res.insn as usize % insns.len();
                let _ = patch_insn(&mut insns, at, &res);
            }
        }
    }
});
