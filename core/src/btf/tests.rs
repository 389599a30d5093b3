#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use super::check::{is_long_name, DATASECS};
use super::*;

#[test]
fn essential_names() {
    let cases: &[(&str, &str)] = &[
        ("task_struct", "task_struct"),
        ("task_struct___old", "task_struct"),
        ("a___b___c", "a___b"),
        ("x____y", "x____y"),
        ("___x", "___x"),
        ("x___", "x___"),
        ("a___b", "a"),
        ("", ""),
    ];
    for &(name, want) in cases {
        assert_eq!(&name[..essential_name_len(name.as_bytes())], want, "{name}");
    }
}

#[test]
fn kinds_round_trip() {
    for k in 0..=31u8 {
        match Kind::from_u8(k) {
            Some(kind) => assert_eq!(kind as u8, k),
            None => assert!(k == 0 || k > 19),
        }
    }
    for k in 0..=13 {
        assert_eq!(CoreReloKind::from_u32(k).to_u32(), k);
    }
    assert_eq!(CoreReloKind::from_u32(99), CoreReloKind::Unknown(99));
}

#[test]
fn err_name_cuts() {
    let long = [b'x'; 100];
    let n = ErrName::new(&long);
    assert!(n.is_cut());
    assert_eq!(n.as_str().len(), NAME_IN_ERROR);
    assert_eq!(ErrName::new(b"map").as_str(), "map");
}

/// The `.BTF` sections of the fixtures and of the peers' copies in the golden folder.
fn btf_sections() -> std::vec::Vec<std::vec::Vec<u8>> {
    use std::path::PathBuf;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = std::vec::Vec::new();
    let objects = std::fs::read_dir(root.join("tests/bpf")).unwrap();
    for e in objects {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "o") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let Ok(elf) = crate::elf::Elf::parse(&bytes) else {
            continue;
        };
        let found = elf
            .sections()
            .find(|(_, sh)| elf.section_name(sh) == ".BTF")
            .map(|(_, sh)| elf.section_data(&sh).to_vec());
        out.extend(found);
    }
    let peers = std::fs::read_dir(root.join("tests/golden/btf/peers")).unwrap();
    for e in peers {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "btf") {
            out.push(std::fs::read(&path).unwrap());
        }
    }
    out
}

/// The one-pass check against the reference path (walk, then validate type by type), on
/// every fixture's and peer's `.BTF`, its truncations and byte flips: whatever the check
/// accepts, the reference accepts with the same count, index and pointer size (the check
/// may leave the rest to the reference, never accept what it refuses).
#[test]
fn one_pass_check_agrees_with_the_reference() {
    let sections = btf_sections();
    assert!(sections.len() > 10, "{}", sections.len());
    // Each also with a name made non-ASCII (`é` for two of its bytes), for the check's
    // path that looks at each name's first byte.
    let utf8 = sections.iter().filter_map(|s| {
        let h = Header::parse(s).ok()?;
        let start = (h.hdr_len + h.str_off) as usize;
        let strings = &s[start..start + h.str_len as usize];
        let at = strings.windows(2).position(|w| w[0] != 0 && w[1] != 0)?;
        let mut u = s.clone();
        u[start + at..start + at + 2].copy_from_slice("é".as_bytes());
        Some(u)
    });
    let sections: std::vec::Vec<_> = sections.iter().cloned().chain(utf8).collect();
    let (mut accepted, mut tried) = (0, 0);
    let mut seed: u64 = 7;
    for s in &sections {
        let mut variants = std::vec![s.clone()];
        let step = (s.len() / 40).max(1);
        variants.extend((0..s.len()).step_by(step).map(|cut| s[..cut].to_vec()));
        variants.extend(bit_flips(s, 60, &mut seed));
        for (k, v) in variants.iter().enumerate() {
            let Ok(header) = Header::parse(v) else {
                continue;
            };
            tried += 1;
            let mut fast = std::vec![0u32; 1 << 14];
            let mut slow = std::vec![0u32; 1 << 14];
            let checked = Btf::checked(v, &header, &mut fast);
            if k == 0 {
                assert!(checked.is_some(), "the check refuses an unmodified section");
            }
            let Some(c) = checked else {
                continue;
            };
            accepted += 1;
            let reference = Btf::parse_reference(v, header, &mut slow).unwrap_or_else(|e| {
                panic!("variant {k}: the check accepts what the reference refuses: {e:?}")
            });
            let datasecs: std::vec::Vec<u32> = reference
                .types()
                .filter(|t| t.kind() == Kind::Datasec)
                .map(|t| t.id())
                .collect();
            assert_eq!(c.count, reference.type_count(), "variant {k}");
            assert_eq!(c.ptr_size, reference.pointer_size(), "variant {k}");
            assert_eq!(
                fast[..c.count as usize],
                slow[..c.count as usize],
                "variant {k}"
            );
            match c.datasecs.known() {
                Some(ids) => assert_eq!(ids, &datasecs[..], "variant {k}"),
                None => assert!(datasecs.len() > DATASECS, "variant {k}"),
            }
        }
    }
    assert!(accepted > 100 && tried > accepted, "{accepted} of {tried}");
}

/// The check's quick test for libbpf's names of `long` agrees with `is_long_name`.
#[test]
fn long_names() {
    let names: &[&[u8]] = &[
        b"long",
        b"long int",
        b"int long",
        b"unsigned long",
        b"long unsigned",
        b"unsigned long int",
        b"unsigned int long",
        b"long unsigned int",
        b"long int unsigned",
        b"int unsigned long",
        b"int long unsigned",
        b"long long",
        b"unsigned long long",
        b"unsigned int",
        b"int",
        b"lon",
        b"longx",
        b"int ",
        b"unsi",
        b"",
        b"unsigned long int x",
    ];
    for &name in names {
        for strings in [
            [b"\0", name, b"\0"].concat(),
            [b"\0", name].concat(),
            [b"\0", name, b"\0x\0"].concat(),
        ] {
            assert_eq!(
                check::long_name(&strings, 1),
                is_long_name(name),
                "{:?}",
                core::str::from_utf8(&strings)
            );
        }
    }
}

/// The one-walk reader of map definitions against the reference reader, on every VAR of
/// every fixture's and peer's `.BTF` and of its byte flips: whatever it reads, the
/// reference reads the same (it may leave a definition to the reference, never read one
/// the reference refuses or reads otherwise).
#[test]
fn fast_map_definitions_agree_with_the_reference() {
    let (mut read, mut vars) = (0, 0);
    let mut seed: u64 = 11;
    for s in btf_sections() {
        let mut variants = std::vec![s.clone()];
        variants.extend(map_field_variants(&s));
        variants.extend(bit_flips(&s, 40, &mut seed));
        for (k, v) in variants.iter().enumerate() {
            let mut index = std::vec![0u32; 1 << 14];
            let Ok(btf) = Btf::parse(v, &mut index) else {
                continue;
            };
            let mut memo = maps::fast::Memo::default();
            for id in 0..=btf.type_count() + 1 {
                let (size, resolved) = maps::fast::size_and_resolve(&btf, id);
                if let Some(size) = size {
                    assert_eq!(btf.size_of(id), Ok(size), "variant {k}, type {id}");
                }
                if let Some(resolved) = resolved {
                    assert_eq!(btf.resolve(id), Ok(resolved), "variant {k}, type {id}");
                }
                if btf.ty(id).map(|t| t.kind()) != Some(Kind::Var) {
                    continue;
                }
                vars += 1;
                // Also through a memo shared by the variant's VARs, as the open phase reads.
                let shared = maps::fast::parse_var_memo(&btf, id, &mut memo);
                let Some(fast) = maps::fast::parse_var(&btf, id) else {
                    assert!(shared.is_none(), "variant {k}, VAR {id}");
                    continue;
                };
                let shared = shared.unwrap();
                assert_eq!(fast.attrs, shared.attrs, "variant {k}, VAR {id}");
                assert_eq!(
                    fast.def_type_id, shared.def_type_id,
                    "variant {k}, VAR {id}"
                );
                read += 1;
                let reference = maps::parse_var_reference(&btf, id).unwrap_or_else(|e| {
                    panic!("variant {k}, VAR {id}: read, but the reference refuses: {e:?}")
                });
                assert_eq!(fast.name_off, reference.name_off, "variant {k}, VAR {id}");
                assert_eq!(
                    fast.def_type_id, reference.def_type_id,
                    "variant {k}, VAR {id}"
                );
                assert_eq!(fast.attrs, reference.attrs, "variant {k}, VAR {id}");
                assert_eq!(fast.inner, reference.inner, "variant {k}, VAR {id}");
                assert_eq!(
                    fast.prog_proto_id, reference.prog_proto_id,
                    "variant {k}, VAR {id}"
                );
            }
        }
    }
    assert!(read > 50 && vars > read, "{read} of {vars}");
}

/// Variants of a little-endian `.BTF` section `s` that change what map definitions read:
/// each ARRAY's length, each PTR's, TYPEDEF's and INT's third word, each STRUCT member's
/// name (the next member's) and type (one more).
fn map_field_variants(s: &[u8]) -> std::vec::Vec<std::vec::Vec<u8>> {
    let mut out = std::vec::Vec::new();
    let Ok(h) = Header::parse(s) else {
        return out;
    };
    if !h.little_endian {
        return out;
    }
    let mut index = std::vec![0u32; 1 << 14];
    let Ok(btf) = Btf::parse(s, &mut index) else {
        return out;
    };
    let base = (h.hdr_len + h.type_off) as usize;
    let set = |at: usize, value: u32| {
        let mut v = s.to_vec();
        v[at..at + 4].copy_from_slice(&value.to_le_bytes());
        v
    };
    let word = |at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap());
    for t in btf.types() {
        let off = base + btf.index[t.id() as usize - 1] as usize;
        match t.kind() {
            Kind::Array => {
                for n in [0, 1, 2, 3, u32::MAX] {
                    out.push(set(off + 20, n));
                }
            }
            Kind::Ptr | Kind::Typedef | Kind::Int => {
                let third = word(off + 8);
                for n in [third.wrapping_add(1), third.wrapping_sub(1), 0, 4, 8] {
                    out.push(set(off + 8, n));
                }
                if t.kind() == Kind::Int {
                    // 32 bits in 4 bytes (a 32-bit `long`: pointers of 4 bytes).
                    let mut v = set(off + 8, 4);
                    let bits = (word(off + 12) & !0xff) | 32;
                    v[off + 12..off + 16].copy_from_slice(&bits.to_le_bytes());
                    out.push(v);
                }
            }
            Kind::Struct => {
                for m in 0..t.vlen() as usize {
                    let at = off + 12 + 12 * m;
                    out.push(set(at + 4, word(at + 4).wrapping_add(1)));
                    if m + 1 < t.vlen() as usize {
                        out.push(set(at, word(at + 12)));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// `n` copies of `s`, each with one bit flipped at a place drawn from `seed` (advanced).
fn bit_flips(s: &[u8], n: usize, seed: &mut u64) -> std::vec::Vec<std::vec::Vec<u8>> {
    (0..n)
        .map(|_| {
            *seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut v = s.to_vec();
            let at = (*seed >> 33) as usize % v.len();
            v[at] ^= 1 << ((*seed >> 20) % 8);
            v
        })
        .collect()
}

/// A BTF blob: header, the given type records, the given strings.
fn blob(types: &[u8], strings: &[u8]) -> std::vec::Vec<u8> {
    let mut v = std::vec::Vec::new();
    v.extend_from_slice(&[0x9f, 0xeb, 1, 0]);
    v.extend_from_slice(&24u32.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&(types.len() as u32).to_le_bytes());
    v.extend_from_slice(&(types.len() as u32).to_le_bytes());
    v.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    v.extend_from_slice(types);
    v.extend_from_slice(strings);
    v
}

/// A type record header: name offset, info (kind << 24 | vlen), size or type.
fn record(name_off: u32, kind: u32, vlen: u32, third: u32) -> [u8; 12] {
    let mut r = [0u8; 12];
    r[..4].copy_from_slice(&name_off.to_le_bytes());
    r[4..8].copy_from_slice(&((kind << 24) | vlen).to_le_bytes());
    r[8..].copy_from_slice(&third.to_le_bytes());
    r
}

#[test]
fn split_btf_names_and_ids_follow_the_base() {
    // Base: [1] INT "int" (size 4, its 4-byte encoding), [2] FUNC_PROTO, [3] FUNC "base_f".
    let mut types = std::vec::Vec::new();
    types.extend_from_slice(&record(1, 1, 0, 4));
    types.extend_from_slice(&(32u32).to_le_bytes());
    types.extend_from_slice(&record(0, 13, 0, 1));
    types.extend_from_slice(&record(5, 12, 0, 2));
    let base_strings = b"\0int\0base_f\0";
    let base = blob(&types, base_strings);
    let mut index = [0u32; 8];
    let base = Btf::parse(&base, &mut index).unwrap();
    assert_eq!(base.type_count(), 3);
    // Split: [4] FUNC "mod_f" (its own string, offset past the base's 12 bytes), [5]
    // TYPEDEF "int" (a base string, as pahole dedups them), [6] FUNC "base_f" (base string).
    let mut split = std::vec::Vec::new();
    split.extend_from_slice(&record(12 + 1, 12, 0, 2));
    split.extend_from_slice(&record(1, 8, 0, 1));
    split.extend_from_slice(&record(5, 12, 0, 2));
    let split = blob(&split, b"\0mod_f\0");
    assert_eq!(base.find_in_split(&split, "mod_f", Kind::Func), Ok(Some(4)));
    assert_eq!(
        base.find_in_split(&split, "int", Kind::Typedef),
        Ok(Some(5))
    );
    assert_eq!(
        base.find_in_split(&split, "base_f", Kind::Func),
        Ok(Some(6))
    );
    assert_eq!(base.find_in_split(&split, "int", Kind::Func), Ok(None));
    assert_eq!(base.find_in_split(&split, "mod", Kind::Func), Ok(None));
    assert_eq!(base.find_in_split(&split, "", Kind::Func), Ok(None));
    // A truncated record is an error, not a wrong id.
    let mut cut = split.clone();
    cut.truncate(24 + 30);
    assert!(base.find_in_split(&cut, "zzz", Kind::Func).is_err());
}
