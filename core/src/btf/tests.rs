#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

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
        for _ in 0..60 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut v = s.clone();
            let at = (seed >> 33) as usize % v.len();
            v[at] ^= 1 << ((seed >> 20) % 8);
            variants.push(v);
        }
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
