//! Every truncation of every fixture is a clear error; flipped bytes never panic.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;
use common::open;
use sluice_core::{Error, Insn, Object, ObjectStorage};

#[test]
fn every_truncation_of_every_fixture_is_an_error() {
    let mut cuts = 0;
    for path in common::fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        assert!(open(&bytes).is_ok(), "{} must open", path.display());
        // One storage for all the cuts: the helper's per-call storage would add up to GBs
        // over tens of thousands of opens (and exhaust a 32-bit address space).
        let mut storage = ObjectStorage::new();
        for len in 0..bytes.len() {
            let r = Object::open(&bytes[..len], &mut storage);
            match r {
                Err(
                    Error::Truncated { .. } | Error::BadSection { .. } | Error::BadHeader { .. },
                ) => cuts += 1,
                Err(other) => panic!("{} cut at {len}: unexpected {other:?}", path.display()),
                Ok(_) => panic!("{} cut at {len} bytes still opened", path.display()),
            }
        }
    }
    assert!(cuts > 10_000, "{cuts}");
}

#[test]
fn corrupted_fixtures_never_panic() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = vec![Insn::default(); 4096];
    let (mut opened, mut refused) = (0, 0);
    for path in common::fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        for _ in 0..3_000 {
            let mut b = bytes.clone();
            for _ in 0..1 + rnd() % 3 {
                let at = (rnd() % b.len() as u64) as usize;
                b[at] ^= 1 << (rnd() % 8);
            }
            // A fresh storage per mutated buffer (on the stack, freed each round).
            let mut storage = ObjectStorage::new();
            let r = Object::open(&b, &mut storage);
            match r {
                Ok(o) => {
                    opened += 1;
                    for p in 0..o.programs().len() {
                        let _ = o.relocate(p, &[], &[3; 128], &mut out);
                    }
                }
                Err(e) => {
                    refused += 1;
                    assert!(!e.to_string().is_empty());
                }
            }
        }
    }
    assert!(
        opened > 0 && refused > 0,
        "opened {opened}, refused {refused}"
    );
}
