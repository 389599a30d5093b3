//! BTF-defined maps (`.maps`): every attribute of our `btf_maps.c` fixture, the maps of
//! `modern.c` and of the peers' objects, and malformed definitions naming map and field.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::type_complexity
)]

mod btf_common;

use btf_common::*;
use sluice_core::btf::{btf_maps, Btf, BtfError, BtfMapDef, Kind};

fn maps_of(btf: &Btf<'_>) -> Vec<BtfMapDef<'static>> {
    let sec = btf.find(".maps", Kind::Datasec).unwrap();
    // Leak-free: the test's BTF lives in leaked memory; names are copied out.
    btf_maps(btf, sec.id())
        .unwrap()
        .map(|m| {
            let m = m.unwrap();
            BtfMapDef {
                name: Box::leak(m.name.to_owned().into_boxed_str()),
                ..m
            }
        })
        .collect()
}

fn by_name<'a>(maps: &'a [BtfMapDef<'static>], name: &str) -> &'a BtfMapDef<'static> {
    maps.iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no map {name}"))
}

#[test]
fn every_attribute_of_the_fixture() {
    let obj = fixture("btf_maps.o");
    let btf = parse(section(&obj, ".BTF").unwrap());
    let maps = maps_of(&btf);
    // In the DATASEC's order, which is clang's (initialised variables first).
    let names: Vec<&str> = maps.iter().map(|m| m.name).collect();
    assert_eq!(
        names,
        [
            "inner_one",
            "outer_array",
            "flows",
            "sized",
            "pinned",
            "outer_hash",
            "jumps",
            "ring",
            "scratch"
        ]
    );
    // (name, type, key, value, max_entries, flags, numa, pinning)
    let want: &[(&str, u32, u32, u32, u32, u32, u32, u32)] = &[
        ("flows", 1, 16, 16, 4096, 1, 0, 0), // struct flow: 13 bytes + padding
        ("sized", 9, 8, 16, 128, 4, 1, 0),
        ("pinned", 2, 4, 8, 1, 0, 0, 1),
        ("inner_one", 2, 4, 4, 16, 0, 0, 0),
        ("outer_array", 12, 4, 4, 8, 0, 0, 0),
        ("outer_hash", 13, 8, 4, 32, 0, 0, 0),
        ("jumps", 3, 4, 4, 4, 0, 0, 0),
        ("ring", 27, 0, 0, 256 * 1024, 0, 0, 0),
        ("scratch", 6, 4, 24, 3, 0, 0, 0),
    ];
    for &(name, ty, k, v, max, flags, numa, pin) in want {
        let m = by_name(&maps, name);
        assert_eq!(
            (
                m.attrs.map_type,
                m.attrs.key_size,
                m.attrs.value_size,
                m.attrs.max_entries,
                m.attrs.map_flags,
                m.attrs.numa_node,
                m.attrs.pinning
            ),
            (ty, k, v, max, flags, numa, pin),
            "{name}"
        );
    }
    // Key and value types are kept.
    let flows = by_name(&maps, "flows");
    assert_eq!(btf.ty(flows.attrs.key_type_id).unwrap().name(), "flow");
    assert_eq!(btf.ty(flows.attrs.value_type_id).unwrap().name(), "stats_t");
    assert_eq!(by_name(&maps, "sized").attrs.key_type_id, 0);
    // Map-in-map: the inner definition, through `values`' pointee.
    let outer = by_name(&maps, "outer_array");
    let inner = outer.inner.unwrap();
    assert_eq!(btf.ty(inner.def_type_id).unwrap().name(), "inner_array");
    assert_eq!(
        (
            inner.attrs.map_type,
            inner.attrs.key_size,
            inner.attrs.value_size,
            inner.attrs.max_entries
        ),
        (2, 4, 4, 16)
    );
    let hash = by_name(&maps, "outer_hash").inner.unwrap();
    assert_eq!(
        (
            hash.attrs.map_type,
            hash.attrs.key_size,
            hash.attrs.value_size,
            hash.attrs.max_entries
        ),
        (1, 4, 16, 64)
    );
    assert_eq!(btf.ty(hash.attrs.value_type_id).unwrap().name(), "stats");
    // Prog array: FUNC_PROTO values, no inner map.
    let jumps = by_name(&maps, "jumps");
    assert!(jumps.inner.is_none());
    assert_eq!(
        btf.ty(jumps.prog_proto_id.unwrap()).unwrap().kind(),
        Kind::FuncProto
    );
    assert!(maps
        .iter()
        .filter(|m| m.name != "outer_array" && m.name != "outer_hash")
        .all(|m| m.inner.is_none()));
}

#[test]
fn modern_fixture_maps() {
    let obj = fixture("modern.o");
    let btf = parse(section(&obj, ".BTF").unwrap());
    let maps = maps_of(&btf);
    let c = by_name(&maps, "counts");
    assert_eq!(
        (
            c.attrs.map_type,
            c.attrs.key_size,
            c.attrs.value_size,
            c.attrs.max_entries
        ),
        (1, 4, 8, 1024)
    );
    let e = by_name(&maps, "events");
    assert_eq!(
        (
            e.attrs.map_type,
            e.attrs.key_size,
            e.attrs.value_size,
            e.attrs.max_entries
        ),
        (4, 4, 4, 0)
    );
}

#[test]
fn peers_maps_decode() {
    let mut total = 0;
    for name in peers() {
        let bytes = peer(&name, "btf").unwrap();
        let btf = parse(&bytes);
        let Some(sec) = btf.find(".maps", Kind::Datasec) else {
            continue;
        };
        for m in btf_maps(&btf, sec.id()).unwrap() {
            let m = m.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                m.attrs.map_type != 0 && (m.attrs.max_entries != 0 || m.attrs.map_type == 4),
                "{name}: {m:?}"
            );
            total += 1;
        }
    }
    assert!(total >= 10, "{total} maps in the peers");
}

/// A `.maps` DATASEC holding one map VAR `m` of a struct with the given members.
fn one_map(members: &[(&str, u32)], extra: impl FnOnce(&mut Builder)) -> Vec<u8> {
    let mut b = Builder::new();
    b.int("int", 4, true); // 1
    b.array(1, 1, 7); // 2: int[7]
    b.ptr(2); // 3: __uint(x, 7)
    b.ptr(1); // 4: __type(x, int)
    b.array(1, 1, 2); // 5: int[2]
    b.ptr(5); // 6: __uint(x, 2)
    b.ptr(0); // 7: void *
    extra(&mut b); // 8..
    let n = b.types.len();
    let _ = n;
    let ms: Vec<(&str, u32, u32, u32)> = members
        .iter()
        .enumerate()
        .map(|(i, &(m, t))| (m, t, i as u32 * 64, 0))
        .collect();
    let def_id = count(&b) + 1;
    b.composite(false, "", members.len() as u32 * 8, &ms);
    let var = b.name("m");
    b.words(&[var, info(14, 0, false), def_id, 1]);
    let sec = b.name(".maps");
    b.words(&[
        sec,
        info(15, 1, false),
        0,
        def_id + 1,
        0,
        members.len() as u32 * 8,
    ]);
    b.bytes()
}

fn count(b: &Builder) -> u32 {
    Btf::count_types(&b.bytes()).unwrap()
}

fn map_err(bytes: &[u8]) -> BtfError {
    let btf = parse(bytes);
    let sec = btf.find(".maps", Kind::Datasec).unwrap();
    let mut it = btf_maps(&btf, sec.id()).unwrap();
    it.next().unwrap().unwrap_err()
}

fn map_ok(bytes: &[u8]) -> sluice_core::btf::MapAttrs {
    let btf = parse(bytes);
    let sec = btf.find(".maps", Kind::Datasec).unwrap();
    let m = btf_maps(&btf, sec.id()).unwrap().next().unwrap().unwrap();
    m.attrs
}

#[test]
fn crafted_definitions() {
    let ok = map_ok(&one_map(
        &[
            ("type", 3),
            ("key", 4),
            ("value_size", 6),
            ("max_entries", 3),
        ],
        |_| {},
    ));
    assert_eq!(
        (
            ok.map_type,
            ok.key_size,
            ok.value_size,
            ok.max_entries,
            ok.key_type_id
        ),
        (7, 4, 2, 7, 1)
    );

    // (members, field named in the error, message)
    let cases: &[(&[(&str, u32)], &str, &str)] = &[
        (&[("type", 3), ("bogus", 3)], "bogus", "unknown field"),
        (&[("type", 1)], "type", "expected a PTR (__uint)"),
        (
            &[("type", 4)],
            "type",
            "expected a PTR to an ARRAY (__uint)",
        ),
        (
            &[("type", 3), ("key", 3), ("key_size", 6)],
            "key_size",
            "conflicting key size",
        ),
        (
            &[("type", 3), ("key", 7)],
            "key",
            "cannot determine the size of the pointee",
        ),
        (&[("type", 3), ("key", 1)], "key", "expected a PTR (__type)"),
        (
            &[("type", 3), ("pinning", 3)],
            "pinning",
            "pinning is neither 0 (none) nor 1 (by name)",
        ),
        (
            &[("type", 3), ("values", 2)],
            "values",
            "only map-in-map and prog-array maps have 'values'",
        ),
        (&[("max_entries", 3)], "type", "map type is not specified"),
    ];
    for &(members, field, what) in cases {
        let e = map_err(&one_map(members, |_| {}));
        match e {
            BtfError::Map {
                map,
                field: f,
                what: w,
            } => {
                assert_eq!(map.as_str(), "m");
                assert_eq!((f.as_str(), w), (field, what), "{members:?}");
                assert!(e.to_string().contains("map 'm'"), "{e}");
            }
            e => panic!("{members:?}: {e:?}"),
        }
    }
}

#[test]
fn map_extra_as_enum() {
    // `__ulong(map_extra, N)` is an anonymous ENUM64 with one enumerator.
    let bytes = one_map(&[("type", 3), ("map_extra", 8)], |b| {
        b.enum64("", false, &[("v", 0x1_0000_0002)]);
    });
    assert_eq!(map_ok(&bytes).map_extra, 0x1_0000_0002);
}

#[test]
fn not_a_datasec() {
    let obj = fixture("btf_maps.o");
    let btf = parse(section(&obj, ".BTF").unwrap());
    assert!(matches!(
        btf_maps(&btf, 1),
        Err(BtfError::NoType { id: 1, .. })
    ));
    assert!(matches!(
        btf_maps(&btf, 1_000_000),
        Err(BtfError::NoType { .. })
    ));
}
