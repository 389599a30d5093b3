//! Fuzz the record decoder on near-valid BTF: the `.BTF` of a fixture (chosen by the first
//! byte) with words of its type section overwritten as the input says, then a record.
//!
//! Input: byte 0 picks the fixture, byte 1 the number P of patches, then P × (u16 word
//! index, u32 value), little-endian, then the rest as the record. Random bytes rarely make
//! BTF that parses; patched real BTF does, so this reaches the walk's deep paths (chains of
//! typedefs and modifiers, bitfields, nested arrays, enums) that `btf_value` seldom sees.
//! Properties: as `btf_value` (no panic, no hang, every slice inside the record, at most
//! `MAX_VALUES` values); a type that walks over the first half of the record walks the
//! whole record the same (it reads nothing past its size).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_core::btf::{record_candidates, walk, Btf, RecordFit};
use sluice_core::elf::Elf;

const OBJECTS: [&[u8]; 4] = [
    include_bytes!("../../tests/bpf/btf_kinds.o"),
    include_bytes!("../../tests/bpf/ringbuf_records.o"),
    include_bytes!("../../tests/bpf/btf_core.o"),
    include_bytes!("../../tests/bpf/record_demo.o"),
];

#[path = "value_check.rs"]
mod value_check;
use value_check::Check;

fn btf_section(object: &[u8]) -> Option<Vec<u8>> {
    let elf = Elf::parse(object).ok()?;
    let (_, sh) = elf.sections().find(|(_, sh)| elf.section_name(sh) == ".BTF")?;
    Some(elf.section_data(&sh).to_vec())
}

fuzz_target!(|data: &[u8]| {
    let (Some(&pick), Some(&patches)) = (data.first(), data.get(1)) else {
        return;
    };
    let Some(mut btf_bytes) = btf_section(OBJECTS[pick as usize % OBJECTS.len()]) else {
        return;
    };
    let word = |b: &[u8], at: usize| b.get(at..at + 4).map_or(0, |w| u32::from_le_bytes(w.try_into().unwrap()) as usize);
    let types = word(&btf_bytes, 4) + word(&btf_bytes, 8);
    let words = word(&btf_bytes, 12) / 4;
    let mut rest = &data[2..];
    for _ in 0..patches.min(8) {
        let Some(p) = rest.get(..6) else {
            break;
        };
        rest = &rest[6..];
        let w = u16::from_le_bytes([p[0], p[1]]) as usize % words.max(1);
        let at = types + 4 * w;
        if let Some(slot) = btf_bytes.get_mut(at..at + 4) {
            slot.copy_from_slice(&p[2..6]);
        }
    }
    let record = rest;
    let Ok(count) = Btf::count_types(&btf_bytes) else {
        return;
    };
    let mut index = vec![0u32; count as usize];
    let Ok(btf) = Btf::parse(&btf_bytes, &mut index) else {
        return;
    };
    let mut out = [0u32; 4];
    for fit in [RecordFit::Exact, RecordFit::Padded] {
        let k = record_candidates(&btf, record.len(), fit, &mut out);
        for &id in out.iter().take(k.min(out.len())) {
            assert!(btf.ty(id).is_some());
        }
    }
    for id in 0..count.saturating_add(2).min(256) {
        let mut whole = Check { record, values: 0 };
        let whole_ok = walk(&btf, id, record, &mut whole).is_ok();
        let cut = &record[..record.len() / 2];
        let mut half = Check { record: cut, values: 0 };
        if walk(&btf, id, cut, &mut half).is_ok() {
            // A type that fits in the first half reads nothing past it: the whole record
            // walks the same.
            assert!(whole_ok && half.values == whole.values, "a longer record walks differently");
        }
    }
});
