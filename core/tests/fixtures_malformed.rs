//! Every truncation of every fixture is a clear error; flipped bytes never panic.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;
use sluice_core::object::ObjectStorage;
use sluice_core::{Error, Insn, Object};

/// One storage reused by every open of a test (each object is dropped before the next
/// open): leaking one per open grew past the machine's memory once storages held a BTF
/// type index.
type Storage<'a> = Box<ObjectStorage<'a>>;

fn open<'a, 's>(b: &'a [u8], storage: &'s mut Storage<'a>) -> Result<Object<'a, 's>, Error> {
    Object::open(b, storage)
}

#[test]
fn every_truncation_of_every_fixture_is_an_error() {
    let mut cuts = 0;
    for path in common::fixtures() {
        let bytes = std::fs::read(&path).unwrap();
        let mut storage: Storage<'_> = Box::new(ObjectStorage::new());
        assert!(
            open(&bytes, &mut storage).is_ok(),
            "{} must open",
            path.display()
        );
        for len in 0..bytes.len() {
            let r = open(&bytes[..len], &mut storage);
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
            let mut storage: Storage<'_> = Box::new(ObjectStorage::new());
            let r = open(&b, &mut storage);
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

/// Inputs the `object` fuzz target found (`tests/bpf/fuzz/object-*.bin`): each opens to a
/// clear error or to an object whose maps all have names, and relocates without a panic.
#[test]
fn fuzz_regressions() {
    let dir = common::repo().join("tests/bpf/fuzz");
    let mut seen = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("object-") {
            continue;
        }
        seen += 1;
        let bytes = std::fs::read(&path).unwrap();
        let mut storage: Storage<'_> = Box::new(ObjectStorage::new());
        let mut out = vec![Insn::default(); 4096];
        match open(&bytes, &mut storage) {
            Ok(o) => {
                assert!(o.maps().iter().all(|m| !m.name.is_empty()), "{name}");
                for p in 0..o.programs().len() {
                    let _ = o.relocate(p, &[], &[3; 128], &mut out);
                }
            }
            Err(e) => assert!(!e.to_string().is_empty(), "{name}"),
        }
    }
    assert!(seen > 0);
}
