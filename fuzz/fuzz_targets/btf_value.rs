//! Fuzz the record decoder: a hostile object's BTF and a hostile record.
//!
//! Input: a little-endian `u32` N, then N bytes of `.BTF`, then the rest as the record.
//! Properties checked: nothing panics or hangs for every type id (and a few past the end)
//! walked over the record, every prefix of it, and `record_candidates` at its length;
//! the walk visits at most `MAX_VALUES` values; every string and byte run it reports lies
//! inside the record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_core::btf::{record_candidates, walk, Btf, RecordFit};

#[path = "value_check.rs"]
mod value_check;
use value_check::Check;

fuzz_target!(|data: &[u8]| {
    let Some(n) = data.get(..4) else {
        return;
    };
    let n = u32::from_le_bytes(n.try_into().unwrap()) as usize;
    let rest = &data[4..];
    let (btf_bytes, record) = rest.split_at(n.min(rest.len()));
    let Ok(count) = Btf::count_types(btf_bytes) else {
        return;
    };
    let mut index = vec![0u32; count as usize];
    let Ok(btf) = Btf::parse(btf_bytes, &mut index) else {
        return;
    };
    let mut out = [0u32; 4];
    for fit in [RecordFit::Exact, RecordFit::Padded] {
        let k = record_candidates(&btf, record.len(), fit, &mut out);
        for &id in out.iter().take(k.min(out.len())) {
            assert!(btf.ty(id).is_some());
        }
    }
    for id in 0..count.saturating_add(3).min(512) {
        let mut c = Check { record, values: 0 };
        let _ = walk(&btf, id, record, &mut c);
        let cut = &record[..record.len() / 2];
        let mut c = Check { record: cut, values: 0 };
        let _ = walk(&btf, id, cut, &mut c);
    }
});
