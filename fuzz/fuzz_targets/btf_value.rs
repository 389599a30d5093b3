//! Fuzz the record decoder: a hostile object's BTF and a hostile record.
//!
//! Input: a little-endian `u32` N, then N bytes of `.BTF`, then the rest as the record.
//! Properties checked: nothing panics or hangs for every type id (and a few past the end)
//! walked over the record, every prefix of it, and `record_candidates` at its length;
//! the walk visits at most `MAX_VALUES` values; every string and byte run it reports lies
//! inside the record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_core::btf::{record_candidates, walk, Btf, Int, RecordFit, Visitor, MAX_VALUES};

struct Check<'r> {
    record: &'r [u8],
    values: u32,
}

impl Check<'_> {
    fn inside(&self, b: &[u8]) {
        let (start, end) = (self.record.as_ptr() as usize, self.record.as_ptr() as usize + self.record.len());
        let p = b.as_ptr() as usize;
        assert!(b.is_empty() || (p >= start && p + b.len() <= end), "a slice outside the record");
    }
    fn one(&mut self) {
        self.values += 1;
        assert!(self.values <= MAX_VALUES + 1);
    }
}

impl Visitor for Check<'_> {
    fn int(&mut self, _: &str, _: Int, _: u8) {
        self.one();
    }
    fn bool(&mut self, _: &str, _: bool) {
        self.one();
    }
    fn enumerator(&mut self, _: &str, _: Option<&str>, _: Int) {
        self.one();
    }
    fn string(&mut self, _: &str, text: &[u8]) {
        self.inside(text);
        self.one();
    }
    fn pointer(&mut self, _: &str, _: u64) {
        self.one();
    }
    fn bytes(&mut self, _: &str, bytes: &[u8]) {
        self.inside(bytes);
        self.one();
    }
    fn begin_struct(&mut self, _: &str, _: bool) {
        self.one();
    }
    fn end_struct(&mut self) {}
    fn begin_array(&mut self, _: &str, _: u32) {
        self.one();
    }
    fn end_array(&mut self) {}
}

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
