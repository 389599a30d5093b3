//! The open phase's view of what `--prog` and `--set` act on, over `tests/bpf/prog_config.o`
//! (clang's output, not crafted): a `SEC("?...")` program is a program like the others, its
//! spec without the `?` and its autoload flag off; every global of `.rodata`, `.data` and
//! `.bss` is found by name with the type `--set` reads into it, and values land in the
//! variable's bytes in the object's byte order.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use sluice_core::btf::{encode_value, find_global_var, global_vars, value_kind, Btf, SetError};
use sluice_core::object::ObjectStorage;
use sluice_core::probe::Section;
use sluice_core::Object;

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/bpf")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn optional_program_keeps_its_spec_and_loses_autoload() {
    let bytes = fixture("prog_config.o");
    let mut storage = ObjectStorage::new();
    let obj = Object::open(&bytes, &mut storage).unwrap();
    let progs: Vec<_> = obj
        .programs()
        .iter()
        .map(|p| {
            (
                p.name.unwrap(),
                p.section_name,
                p.elf_section_name(),
                p.autoload(),
            )
        })
        .collect();
    let spec = "tracepoint/syscalls/sys_enter_kill";
    let optional = "?tracepoint/syscalls/sys_enter_kill";
    assert_eq!(
        progs,
        [
            ("chosen_default", spec, spec, true),
            ("chosen_optional", spec, optional, false)
        ]
    );
    for p in obj.programs() {
        assert!(
            matches!(p.section(), Section::Probe(_)),
            "{}",
            p.section_name
        );
    }
}

#[test]
fn globals_of_every_data_section_by_name_and_type() {
    let bytes = fixture("prog_config.o");
    let mut storage = ObjectStorage::new();
    let obj = Object::open(&bytes, &mut storage).unwrap();
    let raw = obj.btf_bytes().unwrap();
    let mut index = vec![0u32; Btf::count_types(raw).unwrap() as usize];
    let btf = obj.parse_btf(&mut index).unwrap().unwrap();
    let seen: Vec<String> = global_vars(&btf)
        .map(|v| {
            format!(
                "{} {} {}",
                v.section,
                v.name,
                value_kind(&btf, v.type_id).unwrap()
            )
        })
        .collect();
    let want = [
        ".rodata knob_u8 u8",
        ".rodata knob_s8 s8",
        ".rodata knob_u16 u16",
        ".rodata knob_s16 s16",
        ".rodata knob_u32 u32",
        ".rodata knob_s32 s32",
        ".rodata knob_u64 u64",
        ".rodata knob_s64 s64",
        ".rodata knob_bool bool",
        ".rodata knob_mode enum mode",
        ".rodata knob_label char[8]",
        ".data data_knob u32",
        ".bss bss_knob u64",
    ];
    let mut sorted = seen.clone();
    sorted.sort();
    let mut want_sorted: Vec<String> = want.iter().map(|s| (*s).to_owned()).collect();
    want_sorted.sort();
    assert_eq!(sorted, want_sorted);

    // clang 14 leaves the DATASEC offsets 0 (the loader's fix-up places them): each
    // variable has its ELF symbol, inside its section, which is where --set writes.
    for v in global_vars(&btf) {
        let at = obj.variable_offset(v.name).expect(v.name);
        let size = obj.section_size_by_name(v.section).unwrap();
        assert!(
            at + u64::from(btf.size_of(v.type_id).unwrap()) <= size,
            "{}",
            v.name
        );
    }
    let encode = |name: &str, text: &str| {
        let v = find_global_var(&btf, name).unwrap();
        let kind = value_kind(&btf, v.type_id).unwrap();
        let mut out = vec![0u8; btf.size_of(v.type_id).unwrap() as usize];
        encode_value(&kind, text, btf.endian(), &mut out).map(|()| out)
    };
    assert_eq!(
        encode("knob_mode", "MODE_BIG").unwrap(),
        100_000u32.to_le_bytes()
    );
    assert_eq!(encode("knob_mode", "5").unwrap(), 5u32.to_le_bytes());
    assert_eq!(
        encode("knob_mode", "MODE_NONE"),
        Err(SetError::NoEnumerator)
    );
    assert_eq!(
        encode("knob_s16", "-32768").unwrap(),
        (-32768i16).to_le_bytes()
    );
    assert!(encode("knob_s16", "32768").is_err());
    assert_eq!(encode("knob_bool", "true").unwrap(), [1]);
    assert_eq!(encode("knob_label", "1234567").unwrap(), *b"1234567\0");
    assert_eq!(
        encode("knob_label", "12345678"),
        Err(SetError::TooLong { len: 8 })
    );
    assert_eq!(encode("bss_knob", "0x10").unwrap(), 16u64.to_le_bytes());
    assert!(find_global_var(&btf, "nope").is_none());
}
