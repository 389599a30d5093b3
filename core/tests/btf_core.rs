//! CO-RE resolution: the fixture `btf_core.o` (37 relocations of every kind clang 14
//! writes) against its own BTF (every value must equal what clang wrote), against the
//! host's `/sys/kernel/btf/vmlinux` (every decision must equal libbpf's, read from its
//! debug log, and field offsets must equal bpftool's), crafted relocations (TYPE_MATCHES,
//! which needs clang 15) and crafted targets (flavours, ambiguity, cycles), and patching.
#![allow(
    clippy::unwrap_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::type_complexity
)]

mod btf_common;

use btf_common::*;
use sluice_core::btf::{
    patch_insn, Btf, BtfError, BtfExt, Candidate, CandidateIndex, CoreRelo, CoreReloKind,
    CoreResolver, CoreResult, PatchOutcome, POISON_IMM,
};
use sluice_core::elf::{Elf, SHT_SYMTAB, STT_FUNC};
use sluice_core::Insn;
use std::process::Command;

const SEC: &str = "kprobe/do_nanosleep";

struct Fixture {
    bytes: Vec<u8>,
}

impl Fixture {
    fn new() -> Self {
        Fixture {
            bytes: fixture("btf_core.o"),
        }
    }
    fn btf(&self) -> Btf<'_> {
        parse(section(&self.bytes, ".BTF").unwrap())
    }
    fn relos(&self) -> Vec<CoreRelo> {
        let btf = self.btf();
        let ext = BtfExt::parse(section(&self.bytes, ".BTF.ext").unwrap(), &btf).unwrap();
        ext.core_relos().section(SEC).unwrap().records().collect()
    }
    fn insns(&self) -> Vec<Insn> {
        section(&self.bytes, SEC)
            .unwrap()
            .chunks_exact(8)
            .map(|c| Insn::from_bytes(c.try_into().unwrap(), true))
            .collect()
    }
    /// (program name, first instruction index) of every program in the section.
    fn programs(&self) -> Vec<(String, u32)> {
        let elf = Elf::parse(&self.bytes).unwrap();
        let shndx = elf
            .sections()
            .find(|(_, sh)| elf.section_name(sh) == SEC)
            .unwrap()
            .0;
        let symtab = elf
            .sections()
            .find(|(_, sh)| sh.sh_type == SHT_SYMTAB)
            .unwrap()
            .0;
        let syms = elf.symbol_table(symtab).unwrap();
        let mut v: Vec<(String, u32)> = syms
            .iter()
            .filter(|(_, s)| s.kind() == STT_FUNC && u32::from(s.shndx) == shndx)
            .map(|(_, s)| (syms.name(&s).unwrap().to_owned(), (s.value / 8) as u32))
            .collect();
        v.sort_by_key(|p| p.1);
        v
    }
}

/// Resolves `relos` through an index of every target name, and checks that the index of
/// only their root names (what the runtime builds) decides each the same.
fn resolve_all(local: &Btf<'_>, target: Btf<'_>, relos: &[CoreRelo]) -> Vec<CoreResult> {
    let resolve = |cands: &CandidateIndex<'_>| -> Vec<CoreResult> {
        let r = CoreResolver::new(local, cands);
        relos
            .iter()
            .enumerate()
            .map(|(i, relo)| r.resolve(i as u32, relo).unwrap())
            .collect()
    };
    let mut scratch = vec![Candidate::default(); CandidateIndex::required_len(&target)];
    let all = resolve(&CandidateIndex::new(target, &mut scratch).unwrap());
    let mut wanted: Vec<&[u8]> = relos
        .iter()
        .filter_map(|r| local.ty(r.type_id))
        .map(|t| t.name_bytes())
        .collect();
    CandidateIndex::wanted(&mut wanted);
    let mut few = vec![Candidate::default(); CandidateIndex::required_len_for(&target, &wanted)];
    assert!(few.len() <= scratch.len());
    let some = resolve(&CandidateIndex::for_names(target, &wanted, &mut few).unwrap());
    assert_eq!(all, some);
    if !few.is_empty() {
        // One entry short is refused, never truncated.
        let short = few.len() - 1;
        assert!(CandidateIndex::for_names(target, &wanted, &mut few[..short]).is_err());
    }
    all
}

/// The immediate or offset an instruction holds, as a relocation value.
fn insn_value(insns: &[Insn], at: usize) -> u64 {
    let i = insns[at];
    match i.code() & 7 {
        0 => u64::from(i.imm() as u32) | (u64::from(insns[at + 1].imm() as u32) << 32),
        1..=3 => i.off() as i64 as u64,
        _ => i.imm() as i64 as u64,
    }
}

#[test]
fn local_values_are_what_clang_wrote() {
    // Against a target without any of the types: every local value is still computed, and
    // must be what clang put in the instruction (when libbpf would validate it).
    let f = Fixture::new();
    let btf = f.btf();
    let relos = f.relos();
    let mut t = Builder::new();
    t.int("int", 4, true);
    let target = t.bytes();
    let results = resolve_all(&btf, parse(&target), &relos);
    let insns = f.insns();
    let mut validated = 0;
    for (relo, res) in relos.iter().zip(&results) {
        let access = btf.string(relo.access_str_off).unwrap();
        if res.validate {
            assert_eq!(
                res.orig_val,
                insn_value(&insns, res.insn as usize),
                "{:?} {access}",
                relo.kind
            );
            validated += 1;
        }
        // Nothing found: field values poisoned, existence/type kinds 0.
        match relo.kind {
            CoreReloKind::FieldExists
            | CoreReloKind::TypeExists
            | CoreReloKind::TypeSize
            | CoreReloKind::EnumvalExists
            | CoreReloKind::TypeIdTarget => {
                assert_eq!((res.new_val, res.poison), (0, None), "{access}")
            }
            CoreReloKind::TypeIdLocal => assert_eq!(res.new_val, u64::from(relo.type_id)),
            _ => assert!(res.poison.is_some(), "{:?} {access}", relo.kind),
        }
    }
    assert!(validated >= 25, "{validated}"); // bitfield values are not validated, as in libbpf
                                             // Every kind clang 14 can write is there.
    for k in 0..=11 {
        assert!(
            relos.iter().any(|r| r.kind.to_u32() == k),
            "kind {k} missing"
        );
    }
}

#[test]
fn own_btf_as_target_is_ambiguous_because_of_flavours() {
    // `task_struct` and `task_struct___old` are both candidates for `task_struct`, with
    // `pid` at different offsets: libbpf refuses such a relocation, and so do we.
    let f = Fixture::new();
    let btf = f.btf();
    let relos = f.relos();
    let mut scratch = vec![Candidate::default(); CandidateIndex::required_len(&btf)];
    let cands = CandidateIndex::new(btf, &mut scratch).unwrap();
    let e = CoreResolver::new(&btf, &cands)
        .resolve(0, &relos[0])
        .unwrap_err();
    assert!(e.to_string().contains("ambiguity"), "{e}");
    // A relocation without a flavoured sibling resolves to itself.
    let file = relos
        .iter()
        .position(|r| btf.ty(r.type_id).unwrap().name() == "file")
        .unwrap();
    let r = CoreResolver::new(&btf, &cands)
        .resolve(file as u32, &relos[file])
        .unwrap();
    assert_eq!(r.orig_val, r.new_val);
}

/// libbpf's decisions, from its debug log: (program, relo #, outcome).
fn libbpf_log(obj: &str) -> Option<String> {
    let dir = std::env::temp_dir().join(format!("sluice-btf-core-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let tool = dir.join("core_libbpf");
    let src = golden_dir().join("core_libbpf.c");
    let cc = Command::new("cc")
        .arg("-o")
        .arg(&tool)
        .arg(&src)
        .arg("-lbpf")
        .status()
        .ok()?;
    if !cc.success() {
        return None;
    }
    let out = Command::new(&tool).arg(obj).output().ok()?;
    let _ = std::fs::remove_dir_all(&dir);
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).unwrap())
}

/// Our outcome in libbpf's words: "patched insn #N (ALU/ALU64) imm X -> Y" etc.
fn in_libbpf_words(out: &PatchOutcome, prog_insn: u32) -> String {
    match out {
        PatchOutcome::Imm { from, to } => {
            format!(
                "patched insn #{prog_insn} (ALU/ALU64) imm {} -> {}",
                *from as u32, *to as u32
            )
        }
        PatchOutcome::Imm64 { from, to } => {
            format!("patched insn #{prog_insn} (LDIMM64) imm64 {from} -> {to}")
        }
        PatchOutcome::Off { from, to, .. } => {
            format!(
                "patched insn #{prog_insn} (LDX/ST/STX) off {} -> {}",
                *from as u16, *to as u16
            )
        }
        PatchOutcome::Poisoned { .. } => format!("substituting insn #{prog_insn} w/ invalid insn"),
    }
}

#[test]
fn against_vmlinux_equals_libbpf_and_bpftool() {
    let test = "against_vmlinux_equals_libbpf_and_bpftool";
    let Some(vm) = vmlinux() else {
        return skip(test, "no /sys/kernel/btf/vmlinux");
    };
    let target = parse(vm);
    let f = Fixture::new();
    let btf = f.btf();
    let relos = f.relos();
    let results = resolve_all(&btf, target, &relos);
    let mut insns = f.insns();
    let progs = f.programs();
    let mut ours = vec![];
    for res in &results {
        let out = patch_insn(&mut insns, res.insn as usize, res).unwrap();
        let (prog, start) = progs.iter().rev().find(|p| p.1 <= res.insn).unwrap();
        ours.push(format!(
            "prog '{prog}': relo #{}: {}",
            res.index,
            in_libbpf_words(&out, res.insn - start)
        ));
    }

    // bpftool: offsets of the fields the fixture reads.
    let raw = bpftool_dump("/sys/kernel/btf/vmlinux");
    if let Some(raw) = &raw {
        let member_off = |sname: &str, m: &str| -> u64 {
            let head = format!(" STRUCT '{sname}' ");
            let start = raw.find(&head).unwrap();
            let body = &raw[start..];
            let end = body[1..].find("\n[").unwrap();
            let line = body[..end]
                .lines()
                .find(|l| l.starts_with(&format!("\t'{m}' ")))
                .unwrap();
            let bits: u64 = line
                .split("bits_offset=")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            bits / 8
        };
        assert_eq!(results[0].new_val, member_off("task_struct", "pid"));
        assert_eq!(results[1].new_val, member_off("task_struct", "real_parent"));
        assert_eq!(results[2].new_val, member_off("task_struct", "tgid"));
        assert_eq!(results[3].new_val, member_off("task_struct", "comm") + 3);
        assert_eq!(
            results[4].new_val,
            member_off("task_struct", "pid")
                + target
                    .size_of(
                        target
                            .find("task_struct", sluice_core::btf::Kind::Struct)
                            .unwrap()
                            .id()
                    )
                    .unwrap() as u64
        );
        assert_eq!(results[5].new_val, member_off("file", "f_mapping"));
        assert_eq!(results[6].new_val, member_off("file", "f_mapping"));
    } else {
        skip(test, "bpftool not installed: offsets not compared");
    }
    // The guarded read of a field the kernel does not have is poisoned, naming it.
    let poisoned: Vec<_> = results.iter().filter(|r| r.poison.is_some()).collect();
    assert_eq!(poisoned.len(), 1);
    let e = poisoned[0].poison.unwrap();
    assert!(
        e.to_string().contains("task_struct___old access 0:0"),
        "{e}"
    );
    let at = poisoned[0].insn as usize;
    assert_eq!((insns[at].code(), insns[at].imm()), (0x85, POISON_IMM));

    // libbpf: needs root (it probes the kernel before relocating), cc and libbpf-dev.
    if !nix_root() {
        return skip(test, "not root: libbpf's decisions not compared");
    }
    let Some(log) = libbpf_log(repo().join("tests/bpf/btf_core.o").to_str().unwrap()) else {
        return skip(
            test,
            "cannot build or run tests/golden/btf/core_libbpf.c (cc, libbpf-dev)",
        );
    };
    let theirs: Vec<String> = log
        .lines()
        .filter(|l| l.contains("patched insn") || l.contains("substituting insn"))
        .map(|l| l.trim_start_matches("libbpf: ").to_owned())
        .collect();
    assert_eq!(ours, theirs);
}

fn nix_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The offset of `s` in the string section of `btf_bytes`.
fn string_off(btf_bytes: &[u8], s: &str) -> u32 {
    let h = sluice_core::btf::Header::parse(btf_bytes).unwrap();
    let strings = h.strings(btf_bytes);
    let needle: Vec<u8> = [&[0u8][..], s.as_bytes(), &[0]].concat();
    strings
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap() as u32
        + 1
}

#[test]
fn type_matches_crafted_against_vmlinux() {
    let Some(vm) = vmlinux() else {
        return skip(
            "type_matches_crafted_against_vmlinux",
            "no /sys/kernel/btf/vmlinux",
        );
    };
    let target = parse(vm);
    let f = Fixture::new();
    let bytes = section(&f.bytes, ".BTF").unwrap();
    let btf = f.btf();
    let zero = string_off(bytes, "0");
    let id = |n: &str| btf.find(n, sluice_core::btf::Kind::Struct).unwrap().id();
    let relos: Vec<CoreRelo> = [
        "task_struct",
        "file___v2",
        "task_struct___old",
        "sluice_not_in_any_kernel",
    ]
    .iter()
    .map(|n| CoreRelo {
        insn_off: 0,
        type_id: id(n),
        access_str_off: zero,
        kind: CoreReloKind::TypeMatches,
    })
    .collect();
    let got: Vec<u64> = resolve_all(&btf, target, &relos)
        .iter()
        .map(|r| r.new_val)
        .collect();
    // TYPE_MATCHES is strict: clang's `char` is SIGNED, pahole's is not (`comm`), and
    // `long f_pos` does not match `loff_t` = `long long` (names compared after typedefs);
    // `state` is gone; the last type does not exist.
    assert_eq!(got, [0, 0, 0, 0]);
}

/// A local and a target BTF built by hand: `struct s { int a; int b:3; }` locally, and
/// target variants.
fn local_btf() -> Vec<u8> {
    let mut b = Builder::new();
    b.int("int", 4, true); // 1
    b.composite(false, "s", 8, &[("a", 1, 0, 0), ("b", 1, 32, 3)]); // 2
    b.name("0:0");
    b.name("0:1");
    b.name("0");
    b.name("0:5");
    b.name("x:1");
    b.bytes()
}

fn relo(btf: &[u8], access: &str, kind: u32) -> CoreRelo {
    CoreRelo {
        insn_off: 0,
        type_id: 2,
        access_str_off: string_off(btf, access),
        kind: CoreReloKind::from_u32(kind),
    }
}

fn resolve_one(local: &[u8], target: &[u8], r: CoreRelo) -> Result<CoreResult, BtfError> {
    let (l, t) = (parse(local), parse(target));
    let mut scratch = vec![Candidate::default(); CandidateIndex::required_len(&t)];
    let cands = CandidateIndex::new(t, &mut scratch).unwrap();
    CoreResolver::new(&l, &cands).resolve(0, &r)
}

#[test]
fn crafted_targets() {
    let local = local_btf();
    // Target: a flavoured `s___v2` with `a` moved to 8 and `b` to bit 67, unsigned.
    let mut t = Builder::new();
    t.int("unsigned int", 4, false); // 1
    t.int("long", 8, true); // 2
    t.composite(
        false,
        "s___v2",
        16,
        &[("pad", 2, 0, 0), ("a", 1, 64, 0), ("b", 1, 99, 3)],
    ); // 3
    let target = t.bytes();
    let r = |a, k| resolve_one(&local, &target, relo(&local, a, k)).unwrap();
    assert_eq!((r("0:0", 0).orig_val, r("0:0", 0).new_val), (0, 8));
    assert_eq!(r("0:0", 0).target_type_id, 3);
    assert_eq!(r("0:0", 3).new_val, 0, "signed → unsigned");
    assert_eq!(r("0:1", 0).new_val, 12, "bitfield byte offset, 4-byte load");
    assert_eq!(r("0:1", 4).new_val, 64 - (99 + 3 - 96), "lshift");
    assert_eq!(r("0:1", 5).new_val, 61, "rshift");
    assert_eq!(r("0", 9).new_val, 16, "type size");
    assert_eq!(
        r("0", 12).new_val,
        0,
        "type matches: b is unsigned in the target"
    );
    let mut t = Builder::new();
    t.int("int", 4, true); // 1
    t.int("long", 8, true); // 2
    t.composite(
        false,
        "s___v3",
        16,
        &[("pad", 2, 0, 0), ("b", 1, 64, 3), ("a", 1, 96, 0)],
    ); // 3
    let matching = t.bytes();
    assert_eq!(
        resolve_one(&local, &matching, relo(&local, "0", 12))
            .unwrap()
            .new_val,
        1,
        "type matches"
    );
    // A missing field: poison (byte offset) or 0 (exists).
    let mut t = Builder::new();
    t.int("int", 4, true);
    t.composite(false, "s", 4, &[("a", 1, 0, 0)]);
    let target = t.bytes();
    let res = resolve_one(&local, &target, relo(&local, "0:1", 0)).unwrap();
    assert!(matches!(res.poison, Some(BtfError::CoreRelo { .. })));
    assert!(res.poison.unwrap().to_string().contains("access 0:1"));
    assert_eq!(
        resolve_one(&local, &target, relo(&local, "0:1", 2))
            .unwrap()
            .new_val,
        0
    );
    // Two candidates disagreeing: an error naming the access string.
    let mut t = Builder::new();
    t.int("int", 4, true);
    t.composite(false, "s___a", 4, &[("a", 1, 0, 0)]);
    t.composite(false, "s___b", 8, &[("x", 1, 0, 0), ("a", 1, 32, 0)]);
    let e = resolve_one(&local, &t.bytes(), relo(&local, "0:0", 0)).unwrap_err();
    assert!(
        e.to_string().contains("ambiguity") && e.to_string().contains("0:0"),
        "{e}"
    );
    // Bad access strings are errors, not panics.
    for a in ["0:5", "x:1"] {
        let e = resolve_one(&local, &local, relo(&local, a, 0)).unwrap_err();
        assert!(matches!(e, BtfError::CoreRelo { .. }), "{a}: {e}");
    }
    // A typedef cycle in the target is an error, never a hang.
    let mut t = Builder::new();
    t.int("int", 4, true); // 1
    t.composite(false, "s", 8, &[("a", 3, 0, 0)]); // 2: a is typedef 3
    t.typedef("loop1", 4); // 3
    t.typedef("loop2", 3); // 4
    let e = resolve_one(&local, &t.bytes(), relo(&local, "0:0", 0)).unwrap_err();
    assert!(matches!(e, BtfError::CoreRelo { .. }), "{e}");
}

fn result(kind: u32, orig: u64, new: u64) -> CoreResult {
    let local = local_btf();
    let mut r = resolve_one(&local, &local, relo(&local, "0:0", 0)).unwrap();
    r.kind = CoreReloKind::from_u32(kind);
    r.orig_val = orig;
    r.new_val = new;
    r
}

#[test]
fn patching() {
    let ldx_w = Insn::new(0x61, 1, 2, 4, 0);
    // Offset and access size change (4 → 8 bytes, unsigned): ldxw becomes ldxdw.
    let mut r = result(0, 4, 24);
    r.orig_size = 4;
    r.new_size = 8;
    let mut insns = [ldx_w];
    let out = patch_insn(&mut insns, 0, &r).unwrap();
    assert_eq!(
        out,
        PatchOutcome::Off {
            from: 4,
            to: 24,
            size: Some((4, 8))
        }
    );
    assert_eq!((insns[0].code(), insns[0].off()), (0x79, 24));
    // A size change that a load cannot follow: poisoned.
    r.fail_memsz_adjust = true;
    let mut insns = [ldx_w];
    assert!(matches!(
        patch_insn(&mut insns, 0, &r).unwrap(),
        PatchOutcome::Poisoned { .. }
    ));
    assert_eq!(insns[0].imm(), POISON_IMM);
    // The instruction does not hold what the compiler computed: error.
    let mut insns = [ldx_w];
    assert!(patch_insn(&mut insns, 0, &result(0, 8, 24)).is_err());
    // Too far for 16 bits.
    assert!(patch_insn(&mut insns, 0, &result(0, 4, 40_000)).is_err());
    // ld_imm64: both halves; poison covers both slots.
    let lo = Insn::new(0x18, 1, 0, 0, 5);
    let hi = Insn::default();
    let mut insns = [lo, hi];
    assert_eq!(
        patch_insn(&mut insns, 0, &result(11, 5, 0x1_0000_0002)).unwrap(),
        PatchOutcome::Imm64 {
            from: 5,
            to: 0x1_0000_0002
        }
    );
    assert_eq!((insns[0].imm(), insns[1].imm()), (2, 1));
    let mut p = result(11, 5, 0);
    p.poison = Some(BtfError::NoSize { id: 1 });
    let mut insns = [lo, hi];
    patch_insn(&mut insns, 0, &p).unwrap();
    assert!(insns
        .iter()
        .all(|i| i.code() == 0x85 && i.imm() == POISON_IMM));
    // An ALU with a register source, a jump, an index past the end: errors.
    for bad in [
        Insn::new(0x0f, lo.dst(), lo.src(), lo.off(), lo.imm()),
        Insn::new(0x05, lo.dst(), lo.src(), lo.off(), lo.imm()),
    ] {
        assert!(patch_insn(&mut [bad], 0, &result(0, 5, 6)).is_err());
    }
    assert!(patch_insn(&mut [lo], 3, &result(0, 5, 6)).is_err());
}
