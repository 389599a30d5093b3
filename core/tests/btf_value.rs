//! The record decoder (`sluice_core::btf::walk`) against `bpftool btf dump` (raw format,
//! the committed goldens of `tests/golden/btf`, which `btf_bpftool.rs` checks against the
//! live bpftool): for every named struct and union of every fixture and peer, a record of
//! its size filled with a byte pattern is walked, and the members visited must be
//! bpftool's, in its order, each integer, bool and bitfield equal to the bits bpftool's
//! `bits_offset`/`bitfield_size`/`size`/`encoding` say the pattern holds there. Then
//! `struct event` of `ringbuf_records.o` with known values, and hostile BTF and records.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::type_complexity
)]

mod btf_common;

use std::collections::HashMap;

use btf_common::*;
use sluice_core::btf::{record_candidates, walk, Btf, Int, RecordFit, ValueError, Visitor};

/// What a walk reported: `(depth, name, value)`, value as text.
#[derive(Default)]
struct Flat {
    depth: u32,
    out: Vec<(u32, String, String)>,
}

impl Flat {
    fn push(&mut self, name: &str, v: String) {
        self.out.push((self.depth, name.to_owned(), v));
    }
}

fn int_text(v: Int) -> String {
    match v {
        Int::Signed(i) => i.to_string(),
        Int::Unsigned(u) => u.to_string(),
    }
}

impl Visitor for Flat {
    fn int(&mut self, name: &str, value: Int, _bits: u8) {
        self.push(name, int_text(value));
    }
    fn bool(&mut self, name: &str, value: bool) {
        self.push(name, value.to_string());
    }
    fn enumerator(&mut self, name: &str, enumerator: Option<&str>, value: Int) {
        self.push(
            name,
            enumerator.map_or_else(|| int_text(value), str::to_owned),
        );
    }
    fn string(&mut self, name: &str, text: &[u8]) {
        self.push(name, format!("{:?}", String::from_utf8_lossy(text)));
    }
    fn pointer(&mut self, name: &str, value: u64) {
        self.push(name, format!("{value:#x}"));
    }
    fn bytes(&mut self, name: &str, bytes: &[u8]) {
        self.push(name, format!("bytes{}", bytes.len()));
    }
    fn begin_struct(&mut self, name: &str, union: bool) {
        self.push(name, if union { "union{" } else { "struct{" }.into());
        self.depth += 1;
    }
    fn end_struct(&mut self) {
        self.depth -= 1;
    }
    fn begin_array(&mut self, name: &str, len: u32) {
        self.push(name, format!("[{len}"));
        self.depth += 1;
    }
    fn end_array(&mut self) {
        self.depth -= 1;
    }
}

/// bpftool's view of one type: kind, name, the `key=value` words, the member lines.
struct GType {
    kind: String,
    name: String,
    attrs: HashMap<String, String>,
    members: Vec<(String, u32, u32, u32)>, // name, type_id, bits_offset, bitfield_size
}

fn golden_types(text: &str) -> HashMap<u32, GType> {
    let mut types = HashMap::new();
    let mut cur: Option<u32> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix('[') {
            let (id, rest) = rest.split_once("] ").unwrap();
            let id: u32 = id.parse().unwrap();
            let (kind, rest) = rest.split_once(' ').unwrap();
            let rest = rest.strip_prefix('\'').unwrap();
            let (name, rest) = rest.split_once('\'').unwrap();
            let attrs = rest
                .split([' ', ','])
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            types.insert(
                id,
                GType {
                    kind: kind.to_owned(),
                    name: name.to_owned(),
                    attrs,
                    members: vec![],
                },
            );
            cur = Some(id);
        } else if let (Some(id), Some(m)) = (cur, line.strip_prefix("\t'")) {
            let t = types.get_mut(&id).unwrap();
            if !matches!(t.kind.as_str(), "STRUCT" | "UNION") {
                continue;
            }
            let (name, rest) = m.split_once('\'').unwrap();
            let get = |k: &str| {
                rest.split(' ')
                    .find_map(|w| w.strip_prefix(k))
                    .map_or(0, |v| v.parse().unwrap())
            };
            t.members.push((
                name.to_owned(),
                get("type_id="),
                get("bits_offset="),
                get("bitfield_size="),
            ));
        }
    }
    types
}

/// Follows typedefs and modifiers in the golden.
fn resolve(types: &HashMap<u32, GType>, mut id: u32) -> Option<&GType> {
    for _ in 0..32 {
        let t = types.get(&id)?;
        match t.kind.as_str() {
            "TYPEDEF" | "CONST" | "VOLATILE" | "RESTRICT" | "TYPE_TAG" => {
                id = t.attrs["type_id"].parse().unwrap();
            }
            _ => return Some(t),
        }
    }
    None
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + 3) as u8).collect()
}

/// The `bits` bits at bit `off` of `data`, little-endian.
fn bits_at(data: &[u8], off: u32, bits: u32) -> u128 {
    let mut v = 0u128;
    for i in 0..bits {
        let b = off + i;
        let bit = (data[(b / 8) as usize] >> (b % 8)) & 1;
        v |= u128::from(bit) << i;
    }
    v
}

/// Walks every named struct/union of one BTF and checks it against bpftool's lines.
/// Returns (types, members checked by value).
fn check_btf(what: &str, btf: &Btf<'_>, golden: &str) -> (usize, usize) {
    let types = golden_types(golden);
    let (mut n, mut valued) = (0, 0);
    for (&id, t) in &types {
        if !matches!(t.kind.as_str(), "STRUCT" | "UNION") || t.name == "(anon)" {
            continue;
        }
        let size: usize = t.attrs["size"].parse().unwrap();
        let data = pattern(size);
        let mut f = Flat::default();
        walk(btf, id, &data, &mut f).unwrap_or_else(|e| panic!("{what} [{id}] {}: {e}", t.name));
        let top: Vec<&(u32, String, String)> = f.out.iter().filter(|e| e.0 == 1).collect();
        let names: Vec<&str> = top.iter().map(|e| e.1.as_str()).collect();
        let want: Vec<&str> = t.members.iter().map(|m| m.0.as_str()).collect();
        let want: Vec<&str> = want
            .iter()
            .map(|m| if *m == "(anon)" { "" } else { m })
            .collect();
        assert_eq!(names, want, "{what} [{id}] {}: members", t.name);
        for (m, got) in t.members.iter().zip(&top) {
            let Some(mt) = resolve(&types, m.1) else {
                continue;
            };
            let expect = match mt.kind.as_str() {
                "INT" => {
                    let isize: u32 = mt.attrs["size"].parse().unwrap();
                    let nbits: u32 = mt.attrs["nr_bits"].parse().unwrap();
                    let bits = if m.3 != 0 { m.3 } else { nbits.min(isize * 8) };
                    if bits > 64 {
                        continue;
                    }
                    let raw = bits_at(&data, m.2, bits);
                    match mt.attrs["encoding"].as_str() {
                        "BOOL" => (raw != 0).to_string(),
                        "SIGNED" if bits == 8 && mt.name.contains("char") => continue,
                        "SIGNED" => {
                            let sh = 128 - bits;
                            (((raw << sh) as i128) >> sh).to_string()
                        }
                        _ => raw.to_string(),
                    }
                }
                "STRUCT" => "struct{".into(),
                "UNION" => "union{".into(),
                "PTR" => format!("{:#x}", bits_at(&data, m.2, 64)),
                _ => continue,
            };
            assert_eq!(got.2, expect, "{what} [{id}] {}.{}", t.name, m.0);
            valued += 1;
        }
        // Every shorter record: an error or fewer values, never a panic, never a read past.
        for len in 0..size.min(64) {
            let _ = walk(btf, id, &data[..len], &mut Flat::default());
        }
        n += 1;
    }
    (n, valued)
}

#[test]
fn every_fixture_and_peer_struct_walks_as_bpftool_lays_it_out() {
    let (mut types, mut valued) = (0, 0);
    for path in fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let Some(sec) = section(&bytes, ".BTF") else {
            continue;
        };
        let golden = std::fs::read_to_string(golden_dir().join(format!("{name}.txt"))).unwrap();
        let (n, v) = check_btf(&name, &parse(sec), &golden);
        types += n;
        valued += v;
    }
    for name in peers() {
        let bytes = peer(&name, "btf").unwrap();
        let golden =
            std::fs::read_to_string(golden_dir().join(format!("peers/{name}.txt"))).unwrap();
        let (n, v) = check_btf(&name, &parse(&bytes), &golden);
        types += n;
        valued += v;
    }
    eprintln!("{types} structs/unions walked, {valued} members checked by value");
    assert!(
        types >= 40 && valued >= 150,
        "{types} types, {valued} values"
    );
}

#[test]
fn every_vmlinux_struct_walks_as_bpftool_lays_it_out() {
    let Some(bytes) = vmlinux() else {
        return skip(
            "every_vmlinux_struct_walks_as_bpftool_lays_it_out",
            "no vmlinux BTF",
        );
    };
    let Some(live) = bpftool_dump("/sys/kernel/btf/vmlinux") else {
        return skip(
            "every_vmlinux_struct_walks_as_bpftool_lays_it_out",
            "no bpftool",
        );
    };
    let (n, v) = check_btf("vmlinux", &parse(bytes), &live);
    eprintln!("vmlinux: {n} structs/unions walked, {v} members checked by value");
    assert!(n > 5_000 && v > 20_000, "{n} {v}");
}

fn event_btf() -> (Vec<u8>, u32) {
    let o = fixture("ringbuf_records.o");
    let sec = section(&o, ".BTF").unwrap().to_vec();
    let btf = parse(Box::leak(sec.clone().into_boxed_slice()));
    let id = btf
        .types()
        .find(|t| t.name() == "event")
        .map(|t| t.id())
        .unwrap();
    (sec, id)
}

/// A `struct event` of ringbuf_records.c for hit `seq`, as its `fill()` writes it.
pub fn event_record(seq: u64) -> Vec<u8> {
    let mut r = vec![0u8; 64];
    r[0..4].copy_from_slice(&0x51c0_ffeeu32.to_le_bytes());
    r[4..8].copy_from_slice(&77u32.to_le_bytes());
    r[8..16].copy_from_slice(&seq.to_le_bytes());
    r[16..20].copy_from_slice(&(-(seq as i32)).to_le_bytes());
    let kind: u32 = if seq & 1 == 1 {
        2
    } else if seq % 3 == 0 {
        u32::MAX
    } else {
        1
    };
    r[20..24].copy_from_slice(&kind.to_le_bytes());
    r[24] = (seq & 1) as u8;
    r[25..29].copy_from_slice(b"cat\0");
    r[42..44].copy_from_slice(&((seq & 0xffff) as u16).to_le_bytes());
    r[44..46].copy_from_slice(&(-((seq & 0x7fff) as i16)).to_le_bytes());
    r[48..52].copy_from_slice(&(-((seq * 7) as i32)).to_le_bytes());
    for i in 0..3 {
        r[52 + 4 * i..56 + 4 * i].copy_from_slice(&((seq * (i as u64 + 1)) as u32).to_le_bytes());
    }
    r
}

#[test]
fn struct_event_decodes_every_kind_of_field() {
    let (sec, id) = event_btf();
    let btf = parse(&sec);
    let mut f = Flat::default();
    walk(&btf, id, &event_record(6), &mut f).unwrap();
    let got: Vec<String> = f
        .out
        .iter()
        .map(|(d, n, v)| format!("{d}:{n}={v}"))
        .collect();
    assert_eq!(
        got,
        [
            "0:=struct{",
            "1:magic=1371602926",
            "1:tid=77",
            "1:seq=6",
            "1:delta=-6",
            "1:kind=KIND_NEG",
            "1:odd=false",
            "1:comm=\"cat\"",
            "1:in=struct{",
            "2:a=6",
            "2:b=-6",
            "1:w=union{",
            "2:u=4294967254",
            "2:s=-42",
            "1:vals=[3",
            "2:=6",
            "2:=12",
            "2:=18",
        ]
    );
    // One byte short: the last field does not fit; nothing past the record is read.
    let r = event_record(6);
    let err = walk(&btf, id, &r[..63], &mut Flat::default()).unwrap_err();
    assert!(
        matches!(err, ValueError::Truncated { offset: 52, .. }),
        "{err:?}"
    );
}

#[test]
fn candidates_by_size_leave_out_contexts_and_map_definitions() {
    let (sec, id) = event_btf();
    let btf = parse(&sec);
    let mut out = [0u32; 8];
    // raw_sys_enter_args is 64 bytes too, but it is the program's context.
    assert_eq!(record_candidates(&btf, 64, RecordFit::Exact, &mut out), 1);
    assert_eq!(out[0], id);
    // Perf pads raw samples: 64..=71 bytes match, 72 does not; exact fit takes 64 only.
    for len in 64..72 {
        assert_eq!(
            record_candidates(&btf, len, RecordFit::Padded, &mut out),
            1,
            "{len}"
        );
    }
    assert_eq!(record_candidates(&btf, 72, RecordFit::Padded, &mut out), 0);
    assert_eq!(record_candidates(&btf, 65, RecordFit::Exact, &mut out), 0);
    assert_eq!(record_candidates(&btf, 3000, RecordFit::Exact, &mut out), 1);
    // `config` (16 bytes) is a map value but a struct like any other: a candidate.
    assert_eq!(record_candidates(&btf, 16, RecordFit::Exact, &mut out), 1);
    // The .maps definitions are anonymous (32 bytes): never candidates.
    assert_eq!(record_candidates(&btf, 32, RecordFit::Exact, &mut out), 0);
}

#[test]
fn hostile_btf_and_records_end_in_errors() {
    // [1] int, [2] struct s { int a; struct s2 b; }, [3] typedef t -> [4] const -> [3] (cycle),
    // [5] array of [6] empty struct x 2^32-1, [7] struct with member of [3].
    let mut b = Builder::new();
    b.int("int", 4, true);
    b.composite(false, "s", 8, &[("a", 1, 0, 0), ("b", 7, 32, 0)]);
    b.typedef("t", 4);
    b.modifier(10, 3);
    b.array(6, 1, u32::MAX);
    b.composite(false, "empty", 0, &[]);
    b.composite(false, "loop", 4, &[("x", 3, 0, 0), ("self", 2, 0, 0)]);
    b.composite(false, "many", 0, &[("e", 5, 0, 0)]);
    b.composite(false, "bits", 4, &[("lo", 1, 0, 3), ("hi", 1, 3, 29)]);
    let bytes = b.bytes();
    let btf = parse(&bytes);
    let data = [0xffu8; 64];
    let e = walk(&btf, 2, &data, &mut Flat::default()).unwrap_err();
    assert!(
        matches!(e, ValueError::TooDeep { .. } | ValueError::Btf(_)),
        "{e:?}"
    );
    let e = walk(&btf, 8, &data, &mut Flat::default()).unwrap_err();
    assert!(matches!(e, ValueError::TooMany { .. }), "{e:?}");
    for id in 0..12 {
        for len in 0..16 {
            let _ = walk(&btf, id, &data[..len], &mut Flat::default());
        }
    }
    // Signed bitfields sign-extend: 3 bits of 1s = -1, 29 bits of 1s = -1.
    let mut f = Flat::default();
    walk(&btf, 9, &data, &mut f).unwrap();
    assert_eq!(f.out[1].2, "-1");
    assert_eq!(f.out[2].2, "-1");
    let mut d = [0u8; 4];
    d.copy_from_slice(&(5u32 | (100 << 3)).to_le_bytes());
    let mut f = Flat::default();
    walk(&btf, 9, &d, &mut f).unwrap();
    assert_eq!((f.out[1].2.as_str(), f.out[2].2.as_str()), ("-3", "100"));
}
