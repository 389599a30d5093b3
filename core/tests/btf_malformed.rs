//! Malformed `.BTF`: every truncation of every fixture's and peer's section, bad kinds,
//! out-of-range ids, bad strings, bad headers, reference cycles, ENUM64 (which clang 14
//! cannot write) in both byte orders — errors, never panics or hangs.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::type_complexity
)]

mod btf_common;

use btf_common::*;
use sluice_core::btf::{Btf, BtfError, Kind, MAX_RESOLVE_DEPTH};

fn parse_err(bytes: &[u8]) -> BtfError {
    let mut index = vec![0u32; 64];
    Btf::parse(bytes, &mut index).unwrap_err()
}

#[test]
fn every_truncation_is_an_error() {
    let mut sections: Vec<Vec<u8>> = fixtures()
        .iter()
        .filter_map(|p| {
            let b = std::fs::read(p).unwrap();
            section(&b, ".BTF").map(<[u8]>::to_vec)
        })
        .collect();
    sections.extend(
        peers()
            .iter()
            .filter_map(|n| peer(n, "btf"))
            .filter(|b| b.len() < 8000),
    );
    for s in &sections {
        let n = Btf::count_types(s).unwrap() as usize;
        let mut index = vec![0u32; n];
        for cut in 0..s.len() {
            assert!(Btf::parse(&s[..cut], &mut index).is_err(), "cut at {cut}");
        }
    }
}

#[test]
fn headers() {
    let good = {
        let mut b = Builder::new();
        b.int("int", 4, true);
        b.bytes()
    };
    let mut index = [0u32; 4];
    assert!(Btf::parse(&good, &mut index).is_ok());
    let with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut v = good.clone();
        f(&mut v);
        parse_err(&v)
    };
    assert!(matches!(with(&|v| v[0] = 0), BtfError::BadHeader { .. }));
    assert!(matches!(
        with(&|v| v[2] = 2),
        BtfError::BadHeader {
            what: "version is not 1",
            ..
        }
    ));
    assert!(matches!(with(&|v| v[4] = 8), BtfError::BadHeader { .. }));
    assert!(matches!(with(&|v| v[4] = 200), BtfError::Truncated { .. }));
    assert!(matches!(
        with(&|v| v[12] = 200),
        BtfError::Truncated {
            what: "type section",
            ..
        }
    ));
    assert!(matches!(with(&|v| v[8] = 2), BtfError::BadHeader { .. })); // misaligned
    assert!(matches!(with(&|v| v[16] = 4), BtfError::BadHeader { .. })); // overlap
    assert!(matches!(
        with(&|v| *v.last_mut().unwrap() = b'x'),
        BtfError::BadHeader { .. }
    ));
    let mut index = [0u32; 0];
    assert!(matches!(
        Btf::parse(&good, &mut index),
        Err(BtfError::Capacity { limit: 0, .. })
    ));
}

#[test]
fn bad_types() {
    let mut index = vec![0u32; 16];
    // (builder, expected error)
    let cases: Vec<(Builder, fn(&BtfError) -> bool)> = vec![
        (
            {
                let mut b = Builder::new();
                b.words(&[0, info(20, 0, false), 0]);
                b
            },
            |e| matches!(e, BtfError::BadKind { id: 1, kind: 20 }),
        ),
        (
            {
                let mut b = Builder::new();
                b.words(&[0, info(0, 0, false), 0]);
                b
            },
            |e| matches!(e, BtfError::BadKind { id: 1, kind: 0 }),
        ),
        (
            {
                let mut b = Builder::new();
                b.ptr(2);
                b
            },
            |e| {
                matches!(
                    e,
                    BtfError::BadTypeRef {
                        id: 1,
                        target: 2,
                        ..
                    }
                )
            },
        ),
        (
            {
                let mut b = Builder::new();
                b.int("int", 4, true);
                b.array(1, 7, 2);
                b
            },
            |e| {
                matches!(
                    e,
                    BtfError::BadTypeRef {
                        id: 2,
                        target: 7,
                        ..
                    }
                )
            },
        ),
        (
            {
                let mut b = Builder::new();
                b.composite(false, "s", 4, &[("a", 9, 0, 0)]);
                b
            },
            |e| {
                matches!(
                    e,
                    BtfError::BadTypeRef {
                        id: 1,
                        target: 9,
                        ..
                    }
                )
            },
        ),
        (
            {
                let mut b = Builder::new();
                b.words(&[1000, info(1, 0, false), 4, 32]);
                b
            },
            |e| {
                matches!(
                    e,
                    BtfError::BadString {
                        id: 1,
                        offset: 1000,
                        ..
                    }
                )
            },
        ),
        (
            {
                let mut b = Builder::new();
                b.words(&[0, info(1, 0, false), 3, 24]);
                b
            },
            |e| matches!(e, BtfError::BadType { id: 1, .. }),
        ),
        (
            {
                let mut b = Builder::new();
                b.words(&[0, info(1, 0, false), 4, 40]);
                b
            },
            |e| matches!(e, BtfError::BadType { id: 1, .. }),
        ),
        (
            {
                let mut b = Builder::new();
                b.int("int", 4, true);
                b.words(&[0, info(12, 0, false), 1]);
                b
            },
            |e| {
                matches!(
                    e,
                    BtfError::BadTypeRef {
                        id: 2,
                        target: 1,
                        ..
                    }
                )
            },
        ),
        (
            {
                let mut b = Builder::new();
                b.words(&[0, info(4, 3, false), 8, 0, 0]);
                b
            },
            |e| matches!(e, BtfError::Truncated { .. }),
        ),
        (
            {
                let mut b = Builder::new();
                let n = b.name("\u{e9}");
                b.strings[n as usize + 1] = 0xff;
                b.words(&[n, info(1, 0, false), 4, 32]);
                b
            },
            |e| matches!(e, BtfError::BadString { .. }),
        ),
        (
            {
                let mut b = Builder::new();
                b.words(&[0, info(1, 0, false) | 0x0010_0000, 4, 32]);
                b
            },
            |e| matches!(e, BtfError::BadType { .. }),
        ),
    ];
    for (i, (b, ok)) in cases.iter().enumerate() {
        let e = Btf::parse(Box::leak(b.bytes().into_boxed_slice()), &mut index).unwrap_err();
        assert!(ok(&e), "case {i}: {e:?}");
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn cycles_and_deep_chains_are_errors() {
    let mut b = Builder::new();
    b.typedef("a", 2); // 1 → 2
    b.modifier(10, 1); // 2: const → 1
    b.array(3, 3, 2); // 3: array of itself
    let bytes = b.bytes();
    let btf = parse(&bytes);
    assert!(matches!(
        btf.resolve(1),
        Err(BtfError::TooDeep {
            id: 1,
            limit: MAX_RESOLVE_DEPTH
        })
    ));
    assert!(matches!(btf.size_of(2), Err(BtfError::TooDeep { .. })));
    assert!(matches!(
        btf.size_of(3),
        Err(BtfError::TooDeep { .. }) | Err(BtfError::NoSize { .. })
    ));
    // A long but acyclic chain: 40 typedefs.
    let mut b = Builder::new();
    b.int("int", 4, true);
    for i in 1..=40 {
        b.typedef("t", i);
    }
    let bytes = b.bytes();
    let btf = parse(&bytes);
    assert_eq!(btf.resolve(20).unwrap(), 1);
    assert!(matches!(btf.resolve(41), Err(BtfError::TooDeep { .. })));
    // Array sizes that overflow 32 bits.
    let mut b = Builder::new();
    b.int("int", 4, true);
    b.array(1, 1, 0x4000_0000);
    b.array(2, 1, 16);
    let bytes = b.bytes();
    let btf = parse(&bytes);
    assert!(matches!(btf.size_of(3), Err(BtfError::NoSize { id: 3 })));
    assert!(matches!(btf.size_of(0), Err(BtfError::NoSize { id: 0 })));
    assert!(btf.ty(0).is_none() && btf.ty(4).is_none());
}

#[test]
fn enum64_and_both_byte_orders() {
    for big in [false, true] {
        let mut b = Builder::new();
        b.big = big;
        b.enum64("e64", false, &[("BIG", 0xdead_beef_0000_0001), ("ONE", 1)]);
        b.enum64("s64", true, &[("NEG", -2i64 as u64)]);
        b.enum32("e", true, &[("M", -1)]);
        b.composite(false, "bits", 8, &[("x", 3, 5, 3), ("y", 3, 40, 20)]);
        let bytes = b.bytes();
        let btf = parse(&bytes);
        assert_eq!(btf.header().little_endian, !big);
        let e = btf.find("e64", Kind::Enum64).unwrap();
        let v: Vec<_> = e.enum_values().map(|v| (v.name, v.raw)).collect();
        assert_eq!(v, [("BIG", 0xdead_beef_0000_0001), ("ONE", 1)]);
        assert_eq!(btf.size_of(e.id()).unwrap(), 8);
        assert!(btf.find("s64", Kind::Enum64).unwrap().enum_is_signed());
        assert_eq!(btf.ty(3).unwrap().enum_value(0).unwrap().raw, 0xffff_ffff);
        let m: Vec<_> = btf
            .ty(4)
            .unwrap()
            .members()
            .map(|m| (m.bit_offset, m.bitfield_size))
            .collect();
        assert_eq!(m, [(5, 3), (40, 20)]);
        let mut s = String::new();
        dump_type(&btf, &e, &mut s);
        assert_eq!(s, "[1] ENUM64 'e64' encoding=UNSIGNED size=8 vlen=2\n\t'BIG' val=16045690981097406465ULL\n\t'ONE' val=1ULL\n");
    }
}
