//! The decoder's checking visitor, shared by the btf_value and btf_value_patch targets:
//! every slice it is handed lies inside the record, and a walk yields at most MAX_VALUES.

use sluice_core::btf::{Int, Visitor, MAX_VALUES};

pub struct Check<'r> {
    pub record: &'r [u8],
    pub values: u32,
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
