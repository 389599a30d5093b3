//! Differential digest of the open phase: every observable result of [`Object::open`],
//! [`Object::relocate`] and the BTF check, over every committed fixture and thousands of
//! deterministic corruptions of each, reduced to one 64-bit FNV-1a hash per (file, mutation)
//! and compared with the golden file `tests/bpf/open_digest.txt`. A rewrite of the open phase
//! for speed must leave every digest of it unchanged; the same golden file holds on 64- and
//! 32-bit targets.
//!
//! The golden file holds one block per input: `== PATH`, then for each kind of mutation
//! ([`KINDS`], in [`mutations`]' order) `KIND COUNT` and the digests of its mutations in
//! order, one line per run of equal digests (`HASH` or `HASH*N`): the mutations are implied
//! by their order, and a changed count says the input or the mutation scheme changed. The
//! test reads it back into one digest per (input, kind, ordinal) and names each (file,
//! mutation) that differs, with the dump of the first.
//!
//! What one dump holds (see [`dump_object`]): the open error (`Debug` and `Display`) or the
//! license, version, maps (with their definition words and kernel names), `.kconfig` externs,
//! programs with every field, their relocations, linked length and link layout, the result
//! of `relocate` (and the hash of its output) for four map-fd sets, each without prologue,
//! with a one-instruction prologue, and with it into a 40-instruction buffer; the `.BTF` as
//! [`dump_btf`] sees it (type count, parse result, `DATASEC` lookups, BTF-defined maps),
//! variable offsets and section sizes. One `ObjectStorage` serves every mutation of a file.
//!
//! Inputs: every `*.o` under `tests/bpf/` (the big-endian one included), the `object` fuzz
//! target's regression finds `tests/bpf/fuzz/object-*`, the fuzz seeds `fuzz/seeds/object/*.o`
//! (those byte-identical to an earlier input are skipped) and, through the BTF check alone,
//! the `btf` fuzz seeds `fuzz/seeds/btf/*.bin`. Mutations of each (see [`mutations`]): the
//! input itself (`orig`), 150 truncations (`cut:LEN`), every bit of the first 64 bytes (the
//! ELF header) and, in an ELF64 object of either byte order, of the section headers of the
//! section name table and of the symbol table (`hflip:OFFSET.BIT`), and 200 pseudo-random
//! single-bit flips (`flip:K@OFFSET.BIT`).
//!
//! Environment:
//! - `SLUICE_BLESS=1` rewrites the golden file from this build instead of comparing.
//! - `SLUICE_OPEN_DUMP=FILE` also writes the full text of every dump (all inputs, all
//!   mutations) to `FILE`: run it on two builds and `diff` the files to see what changed.
//! - `SLUICE_OPEN_DIGEST_EXTRA=DIR[:DIR...]` also dumps, with the same mutations, every `*.o`
//!   under those directories (the `SLUICE_REAL_OBJS` cache, the peers' objects) into the
//!   `SLUICE_OPEN_DUMP` file (required with it), as `extra/DIRNAME/PATH`; they are not
//!   compared with the golden file. Large objects take long in the debug profile: add
//!   `--release`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use sluice_core::btf::{Btf, Kind};
use sluice_core::object::{LinkedPart, ObjectStorage};
use sluice_core::{Insn, Object};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The golden file, relative to the repository's root.
const GOLDEN: &str = "tests/bpf/open_digest.txt";

/// How an input is read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Surface {
    /// An ELF object: [`Object::open`] and everything after it.
    Object,
    /// A raw `.BTF` blob: [`dump_btf`] only.
    Btf,
}

/// One input file.
struct Input {
    /// Its name in the golden file and in the dump: the path relative to the repository's
    /// root, or `extra/...` relative to a `SLUICE_OPEN_DIGEST_EXTRA` directory.
    name: String,
    bytes: Vec<u8>,
    surface: Surface,
}

/// Writes what the BTF check and the BTF queries say about `bytes`.
fn dump_btf(out: &mut String, bytes: &[u8]) {
    let n = Btf::count_types(bytes);
    let _ = writeln!(out, "  btf count {n:?}");
    let mut index = vec![0u32; 70000];
    match Btf::parse(bytes, &mut index) {
        Err(e) => {
            let _ = writeln!(out, "  btf err {e:?}");
        }
        Ok(b) => {
            let _ = writeln!(
                out,
                "  btf ok types {} ptr {}",
                b.type_count(),
                b.pointer_size()
            );
            for name in [".maps", ".rodata", ".data", ".bss", ".kconfig", "license"] {
                let _ = writeln!(
                    out,
                    "  find {name} {:?}",
                    b.find(name, Kind::Datasec).map(|t| t.id())
                );
            }
            if let Some(ds) = b.find(".maps", Kind::Datasec) {
                if let Ok(it) = sluice_core::btf::btf_maps(&b, ds.id()) {
                    for m in it {
                        let _ = writeln!(out, "  btfmap {m:?}");
                    }
                }
            }
        }
    }
}

/// Capacity of the large relocation output buffer.
const BIG: usize = 1 << 16;
/// Capacity of the small one (too small for most programs: a capacity error).
const SMALL: usize = 40;

/// Relocation output buffers, reused from one dump to the next: after every `relocate`
/// the part it may have written is restored to `Insn::default()`, so that each call sees a
/// buffer as new (allocating 64 Ki instructions per call would dominate the run).
struct Buffers {
    big: Vec<Insn>,
    small: Vec<Insn>,
    /// `BIG` default instructions, to restore from (a `memcpy`).
    clean: Vec<Insn>,
}

impl Buffers {
    fn new() -> Self {
        let clean = vec![Insn::default(); BIG];
        Buffers {
            big: clean.clone(),
            small: vec![Insn::default(); SMALL],
            clean,
        }
    }

    /// Fails unless the large buffer is as new: `relocate` wrote only within what
    /// [`dump_object`] restores.
    fn check_clean(&self, name: &str) {
        if let Some(i) = self.big.iter().position(|x| *x != Insn::default()) {
            panic!(
                "{name}: relocate wrote out[{i}], past the prologue plus the program's \
                 instructions or linked length"
            );
        }
    }
}

/// Writes every observable result of opening `bytes` and of what an opened object answers.
/// `storage` is reused from one dump to the next, as a loader may reuse it.
fn dump_object<'a>(
    out: &mut String,
    bytes: &'a [u8],
    storage: &mut ObjectStorage<'a>,
    bufs: &mut Buffers,
) {
    let o = match Object::open(bytes, storage) {
        Err(e) => {
            let _ = writeln!(out, "open err {e:?} / {e}");
            return;
        }
        Ok(o) => o,
    };
    let _ = writeln!(
        out,
        "license {:?} version {:?} btf {:?}",
        o.license(),
        o.version(),
        o.btf().map(|b| b.type_count())
    );
    for m in o.maps() {
        let _ = writeln!(
            out,
            " map {m:?} words {:?} kname {:?}",
            m.words(),
            m.kernel_name("obj.bpf.o")
        );
    }
    let mut ext = [None; 300];
    let _ = writeln!(
        out,
        " kconfig {:?}",
        o.kconfig_externs(&mut ext).map(|n| ext[..n].to_vec())
    );
    for (i, p) in o.programs().iter().enumerate() {
        let _ = writeln!(
            out,
            " prog {i} {:?} {:?} sec {} off {} insns {} relocs {} maps {} sub {} codeoff {}",
            p.section_name,
            p.name,
            p.section_index,
            p.offset,
            p.insn_count(),
            p.reloc_count(),
            p.map_reloc_count(),
            p.is_subprogram(),
            (p.code().as_ptr() as usize).wrapping_sub(bytes.as_ptr() as usize)
        );
        for r in o.relocations(i) {
            let _ = writeln!(out, "  rel {r:?}");
        }
        let linked = o.linked_len(i);
        let _ = writeln!(out, "  linked_len {linked:?}");
        let mut parts = [LinkedPart::default(); 300];
        let _ = writeln!(
            out,
            "  layout {:?}",
            o.link_layout(i, &mut parts).map(|n| parts[..n].to_vec())
        );
        let pro = [Insn::new(0xbf, 6, 1, 0, 0)];
        let fdsets: [&[i32]; 4] = [&[], &[7], &[7, 8, 9, 10, 11, 12, 13, 14], &[3; 128]];
        for fds in fdsets {
            for (prologue, cap) in [(&[][..], BIG), (&pro[..], BIG), (&pro[..], SMALL)] {
                let buf = if cap == BIG {
                    &mut bufs.big
                } else {
                    &mut bufs.small
                };
                let r = o.relocate(i, prologue, fds, buf);
                let _ = write!(
                    out,
                    "  reloc fds{} pro{} cap{} {:?}",
                    fds.len(),
                    prologue.len(),
                    cap,
                    r
                );
                if let Ok(n) = r {
                    let mut h = Fnv::new();
                    for x in &buf[..n] {
                        h.write(&x.to_bytes(true));
                    }
                    let _ = write!(out, " h{:x}", h.0);
                }
                let _ = writeln!(out);
                // What relocate may write: the prologue and the program, or all it links.
                let body = p.insn_count().max(*linked.as_ref().unwrap_or(&0));
                let written = (prologue.len() + body).max(*r.as_ref().unwrap_or(&0));
                let w = written.min(cap);
                buf[..w].copy_from_slice(&bufs.clean[..w]);
            }
        }
    }
    if let Some(b) = o.btf_bytes() {
        dump_btf(out, b);
    }
    for v in ["counter", "hits", "cfg_tag", "x"] {
        let _ = writeln!(out, " var {v} {:?}", o.variable_offset(v));
    }
    for s in [".rodata", ".data", ".bss", ".maps"] {
        let _ = writeln!(out, " secsize {s} {:?}", o.section_size_by_name(s));
    }
}

/// Dumps one input (original or mutated) as its surface reads it.
fn dump<'a>(
    out: &mut String,
    surface: Surface,
    bytes: &'a [u8],
    storage: &mut ObjectStorage<'a>,
    bufs: &mut Buffers,
) {
    match surface {
        Surface::Object => dump_object(out, bytes, storage, bufs),
        Surface::Btf => dump_btf(out, bytes),
    }
}

/// 64-bit FNV-1a.
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h = Fnv::new();
    h.write(bytes);
    h.0
}

/// The kinds of mutation, in the order [`mutations`] makes them. The golden file holds, for
/// each input, the count of each kind and their digests in order, not the mutations' keys.
const KINDS: [&str; 4] = ["orig", "cut", "hflip", "flip"];

/// One mutation of an input: its kind (one of [`KINDS`]), its key in reports (`KIND:WHERE`),
/// its heading in the dump, and the bytes (a prefix of the input, or a copy with one bit
/// flipped).
struct Mutation<'a> {
    kind: &'static str,
    key: String,
    heading: String,
    bytes: std::borrow::Cow<'a, [u8]>,
}

/// The deterministic mutations of `bytes`, the input itself first.
fn mutations(bytes: &[u8]) -> Vec<Mutation<'_>> {
    use std::borrow::Cow;
    let mut v = vec![Mutation {
        kind: "orig",
        key: "orig".into(),
        heading: String::new(),
        bytes: Cow::Borrowed(bytes),
    }];
    // 150 truncations, evenly spaced.
    let step = (bytes.len() / 150).max(1);
    for cut in (0..bytes.len()).step_by(step) {
        v.push(Mutation {
            kind: "cut",
            key: format!("cut:{cut}"),
            heading: format!("-- cut {cut}\n"),
            bytes: Cow::Borrowed(&bytes[..cut]),
        });
    }
    // Every bit of the ELF header, the section name table's section header and the symbol
    // table's section header.
    for at in header_spots(bytes) {
        for bit in 0..8 {
            let mut m = bytes.to_vec();
            m[at] ^= 1 << bit;
            v.push(Mutation {
                kind: "hflip",
                key: format!("hflip:{at}.{bit}"),
                heading: format!("-- hflip {at} {bit}\n"),
                bytes: Cow::Owned(m),
            });
        }
    }
    // 200 pseudo-random single-bit flips (a 64-bit LCG).
    let mut seed: u64 = 12345;
    if !bytes.is_empty() {
        for k in 0..200 {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let at = (seed >> 33) as usize % bytes.len();
            let bit = (seed >> 20) % 8;
            let mut m = bytes.to_vec();
            m[at] ^= 1 << bit;
            v.push(Mutation {
                kind: "flip",
                key: format!("flip:{k}@{at}.{bit}"),
                heading: format!("-- flip {k} at {at}\n"),
                bytes: Cow::Owned(m),
            });
        }
    }
    v
}

/// The offsets whose every bit is flipped: the first 64 bytes (the ELF64 header), and for an
/// ELF64 object (either byte order) the section headers of the section name table and of
/// every `SHT_SYMTAB` section.
fn header_spots(bytes: &[u8]) -> Vec<usize> {
    let mut spots: Vec<usize> = (0..64.min(bytes.len())).collect();
    if bytes.len() < 64 || bytes[..4] != *b"\x7fELF" || bytes[4] != 2 {
        return spots;
    }
    let le = match bytes[5] {
        1 => true,
        2 => false,
        _ => return spots,
    };
    let word = |at: usize, n: usize| -> u64 {
        let b = &bytes[at..at + n];
        let mut x = 0u64;
        for i in 0..n {
            let byte = if le { b[n - 1 - i] } else { b[i] };
            x = (x << 8) | u64::from(byte);
        }
        x
    };
    let shoff = word(40, 8) as usize;
    let shnum = word(60, 2) as usize;
    let shstrndx = word(62, 2) as usize;
    let header = |i: usize| shoff.checked_add(i.checked_mul(64)?);
    if let Some(at) = header(shstrndx) {
        spots.extend((at..at.saturating_add(64)).filter(|&i| i < bytes.len()));
    }
    for at in (0..shnum).filter_map(header) {
        let whole = at.checked_add(64).is_some_and(|end| end <= bytes.len());
        if whole && word(at + 4, 4) == 2 {
            spots.extend(at..at + 64);
        }
    }
    spots
}

/// Every file under `dir` (recursively), sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn has_ext(p: &Path, ext: &str) -> bool {
    p.extension().is_some_and(|x| x == ext)
}

fn file_name(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// The committed inputs, in golden-file order.
fn fixtures() -> Vec<Input> {
    let repo = common::repo();
    let mut picked: Vec<(PathBuf, Surface)> = vec![];
    for p in walk(&repo.join("tests/bpf")) {
        let in_fuzz = p.parent().is_some_and(|d| d.ends_with("tests/bpf/fuzz"));
        if has_ext(&p, "o") || (in_fuzz && file_name(&p).starts_with("object-")) {
            picked.push((p, Surface::Object));
        } else if in_fuzz && file_name(&p).starts_with("btf-") {
            picked.push((p, Surface::Btf));
        }
    }
    for p in walk(&repo.join("fuzz/seeds/object")) {
        if has_ext(&p, "o") {
            picked.push((p, Surface::Object));
        }
    }
    for p in walk(&repo.join("fuzz/seeds/btf")) {
        if has_ext(&p, "bin") {
            picked.push((p, Surface::Btf));
        }
    }
    let mut seen = HashSet::new();
    let mut inputs = vec![];
    for (p, surface) in picked {
        let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        if !seen.insert((surface == Surface::Object, bytes.clone())) {
            continue; // a seed copied from a fixture
        }
        let rel = p.strip_prefix(&repo).unwrap();
        let name = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        inputs.push(Input {
            name,
            bytes,
            surface,
        });
    }
    assert!(
        inputs
            .iter()
            .any(|i| i.name.starts_with("tests/bpf/big_endian/"))
            && inputs.iter().any(|i| i.name.starts_with("tests/bpf/fuzz/"))
            && inputs
                .iter()
                .filter(|i| i.surface == Surface::Object)
                .count()
                > 20,
        "fixtures missing under {}",
        repo.display()
    );
    inputs
}

/// The `*.o` under each `SLUICE_OPEN_DIGEST_EXTRA` directory.
fn extras() -> Vec<Input> {
    let Some(dirs) = std::env::var_os("SLUICE_OPEN_DIGEST_EXTRA") else {
        return vec![];
    };
    let mut inputs = vec![];
    for dir in std::env::split_paths(&dirs) {
        assert!(
            dir.is_dir(),
            "SLUICE_OPEN_DIGEST_EXTRA: {} is not a directory",
            dir.display()
        );
        for p in walk(&dir).into_iter().filter(|p| has_ext(p, "o")) {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let rel = p.strip_prefix(&dir).unwrap().to_string_lossy();
            inputs.push(Input {
                name: format!("extra/{}/{rel}", file_name(&dir)),
                bytes,
                surface: Surface::Object,
            });
        }
    }
    inputs
}

/// One (input, mutation) result.
struct Entry {
    /// The mutation's key (`KIND:WHERE`), to name it in reports.
    key: String,
    /// The mutation's kind, one of [`KINDS`].
    kind: &'static str,
    /// Its index among the input's mutations of that kind: with the kind, what the golden
    /// file identifies it by.
    ordinal: usize,
    /// The FNV-1a hash of its dump.
    hash: u64,
}

/// Dumps every mutation of `input`: one entry each, and the text appended to `text` when
/// given (an `== NAME` line, then each mutation's heading and dump).
fn run(input: &Input, bufs: &mut Buffers, mut text: Option<&mut String>) -> Vec<Entry> {
    let mutations = mutations(&input.bytes);
    let mut storage = Box::new(ObjectStorage::new());
    let mut entries = Vec::with_capacity(mutations.len());
    if let Some(t) = text.as_deref_mut() {
        let _ = writeln!(t, "== {}", input.name);
    }
    let mut out = String::new();
    let mut made = [0usize; KINDS.len()];
    for m in &mutations {
        out.clear();
        dump(&mut out, input.surface, &m.bytes, &mut storage, bufs);
        let kind = KINDS.iter().position(|&k| k == m.kind).unwrap();
        entries.push(Entry {
            key: m.key.clone(),
            kind: m.kind,
            ordinal: made[kind],
            hash: fnv1a(out.as_bytes()),
        });
        made[kind] += 1;
        if let Some(t) = text.as_deref_mut() {
            t.push_str(&m.heading);
            t.push_str(&out);
        }
    }
    bufs.check_clean(&input.name);
    entries
}

/// The dump of the `index`th mutation of `input`, to show what changed.
fn dump_of(input: &Input, index: usize) -> String {
    let mutations = mutations(&input.bytes);
    let m = &mutations[index];
    let mut out = String::new();
    let mut storage = Box::new(ObjectStorage::new());
    dump(
        &mut out,
        input.surface,
        &m.bytes,
        &mut storage,
        &mut Buffers::new(),
    );
    out
}

/// Runs every input on a few threads, in order of index: returns each input's entries and
/// writes the dump text, in input order, to `dump` when given.
fn run_all(inputs: &[Input], dump: Option<&Path>) -> Vec<Vec<Entry>> {
    struct Sink {
        file: Option<std::io::BufWriter<std::fs::File>>,
        /// Texts of finished inputs waiting for the ones before them.
        pending: BTreeMap<usize, String>,
        next: usize,
    }
    let file = dump.map(|p| {
        let f = std::fs::File::create(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        std::io::BufWriter::new(f)
    });
    let want_text = file.is_some();
    let sink = Mutex::new(Sink {
        file,
        pending: BTreeMap::new(),
        next: 0,
    });
    let results: Vec<Mutex<Vec<Entry>>> = inputs.iter().map(|_| Mutex::new(vec![])).collect();
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut bufs = Buffers::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(input) = inputs.get(i) else { break };
                    let mut text = want_text.then(String::new);
                    *results[i].lock().unwrap() = run(input, &mut bufs, text.as_mut());
                    let Some(text) = text else { continue };
                    let mut sink = sink.lock().unwrap();
                    sink.pending.insert(i, text);
                    loop {
                        let n = sink.next;
                        let Some(t) = sink.pending.remove(&n) else {
                            break;
                        };
                        if let Some(f) = sink.file.as_mut() {
                            f.write_all(t.as_bytes()).unwrap();
                        }
                        sink.next += 1;
                    }
                }
            });
        }
    });
    if let Some(mut f) = sink.into_inner().unwrap().file {
        f.flush().unwrap();
    }
    results
        .into_iter()
        .map(|r| r.into_inner().unwrap())
        .collect()
}

/// The golden file's first lines: what it holds and how to read it.
const GOLDEN_HEADER: &str = "\
# Golden digests of core/tests/open_digest.rs (SLUICE_BLESS=1 rewrites this file).
# Per input: `== PATH`, then per kind of mutation, in the test's order, `KIND COUNT` and the
# digests of that kind's COUNT mutations in order, one line per run of equal digests:
# `HASH` or `HASH*N` (N equal ones), HASH the 64-bit FNV-1a of the dump in 16 hex digits.
";

/// The golden file's text for `inputs` and their entries: one block per input, the
/// mutations implied by their order within their kind.
fn encode(inputs: &[Input], results: &[Vec<Entry>]) -> String {
    let mut s = String::from(GOLDEN_HEADER);
    for (input, entries) in inputs.iter().zip(results) {
        let _ = writeln!(s, "== {}", input.name);
        let mut written = 0;
        for kind in KINDS {
            let hashes: Vec<u64> = entries
                .iter()
                .filter(|e| e.kind == kind)
                .map(|e| e.hash)
                .collect();
            let _ = writeln!(s, "{kind} {}", hashes.len());
            for run in hashes.chunk_by(|a, b| a == b) {
                match run.len() {
                    1 => writeln!(s, "{:016x}", run[0]),
                    n => writeln!(s, "{:016x}*{n}", run[0]),
                }
                .unwrap();
            }
            written += hashes.len();
        }
        assert_eq!(
            written,
            entries.len(),
            "{}: a kind not in KINDS",
            input.name
        );
    }
    s
}

/// One digest of the golden file, and what it belongs to.
struct Digest<'g> {
    /// The input's name (`== PATH`).
    file: &'g str,
    /// The mutation's kind.
    kind: &'g str,
    /// Its index among the input's mutations of that kind.
    ordinal: usize,
    hash: u64,
}

/// The golden file's digests in its order, and the count of each (input, kind).
type Decoded<'g> = (Vec<Digest<'g>>, HashMap<(&'g str, &'g str), usize>);

/// Reads the golden file back into one digest per (input, mutation); fails on any line
/// that does not fit the format, naming it.
fn decode(text: &str) -> Decoded<'_> {
    let mut digests = vec![];
    let mut counts = HashMap::new();
    let mut files = HashSet::new();
    let mut file: Option<&str> = None;
    // The current kind, its declared count, the digests read so far and where it began.
    let mut kind: Option<(&str, usize, usize, usize)> = None;
    let close = |kind: Option<(&str, usize, usize, usize)>, file: Option<&str>| {
        if let Some((k, want, got, line)) = kind {
            assert!(
                got == want,
                "{GOLDEN}:{line}: `{k} {want}` of {} is followed by {got} digests",
                file.unwrap_or("?")
            );
        }
    };
    for (n, line) in text.lines().enumerate() {
        let n = n + 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix("== ") {
            close(kind.take(), file);
            assert!(files.insert(name), "{GOLDEN}:{n}: {name} listed twice");
            file = Some(name);
        } else if let Some((k, count)) = line.split_once(' ') {
            close(kind.take(), file);
            let f = file.unwrap_or_else(|| panic!("{GOLDEN}:{n}: `{line}` before any `== PATH`"));
            let count: usize = count
                .parse()
                .unwrap_or_else(|_| panic!("{GOLDEN}:{n}: not `KIND COUNT`: `{line}`"));
            assert!(
                counts.insert((f, k), count).is_none(),
                "{GOLDEN}:{n}: kind {k} listed twice for {f}"
            );
            kind = Some((k, count, 0, n));
        } else {
            let (hash, times) = line.split_once('*').unwrap_or((line, "1"));
            let bad = || -> ! { panic!("{GOLDEN}:{n}: not `HASH` or `HASH*N`: `{line}`") };
            if hash.len() != 16 {
                bad();
            }
            let hash = u64::from_str_radix(hash, 16).unwrap_or_else(|_| bad());
            let times: usize = times.parse().unwrap_or_else(|_| bad());
            let Some((k, want, got, _)) = kind.as_mut() else {
                panic!("{GOLDEN}:{n}: a digest before any `KIND COUNT`");
            };
            assert!(
                times > 0 && *got + times <= *want,
                "{GOLDEN}:{n}: `{line}` goes past the count {want} of kind {k}"
            );
            for ordinal in *got..*got + times {
                digests.push(Digest {
                    file: file.unwrap(),
                    kind: k,
                    ordinal,
                    hash,
                });
            }
            *got += times;
        }
    }
    close(kind, file);
    (digests, counts)
}

/// One difference between this run and the golden file.
struct Diff<'a> {
    /// The input's name.
    file: &'a str,
    /// The mutation: its key when this run made it, else `KIND#ORDINAL`.
    mutation: String,
    what: String,
    /// The input and the mutation's index among its mutations, when this run made it.
    made: Option<(&'a Input, usize)>,
}

#[test]
fn open_digest_matches_golden() {
    let fixtures = fixtures();
    let extra = extras();
    let dump_path = std::env::var_os("SLUICE_OPEN_DUMP").map(PathBuf::from);
    assert!(
        extra.is_empty() || dump_path.is_some(),
        "SLUICE_OPEN_DIGEST_EXTRA needs SLUICE_OPEN_DUMP=FILE: the extra objects are only dumped"
    );
    let n = fixtures.len();
    let mut inputs = fixtures;
    inputs.extend(extra);
    let mut results = run_all(&inputs, dump_path.as_deref());
    if let Some(p) = &dump_path {
        eprintln!(
            "wrote the dump of {} inputs to {}",
            inputs.len(),
            p.display()
        );
    }
    results.truncate(n);
    inputs.truncate(n);
    let total: usize = results.iter().map(Vec::len).sum();

    let golden_path = common::repo().join(GOLDEN);
    if std::env::var_os("SLUICE_BLESS").is_some_and(|v| v == "1") {
        let fresh = encode(&inputs, &results);
        // What is written reads back as this run.
        let (back, _) = decode(&fresh);
        let made = inputs
            .iter()
            .zip(&results)
            .flat_map(|(i, es)| es.iter().map(move |e| (i.name.as_str(), e)));
        assert!(
            back.len() == total
                && back.iter().zip(made).all(|(d, (f, e))| {
                    (d.file, d.kind, d.ordinal, d.hash) == (f, e.kind, e.ordinal, e.hash)
                }),
            "the encoded golden file does not read back as this run"
        );
        std::fs::write(&golden_path, &fresh)
            .unwrap_or_else(|e| panic!("{}: {e}", golden_path.display()));
        eprintln!(
            "blessed {GOLDEN}: {total} entries of {} inputs, {} bytes",
            inputs.len(),
            fresh.len()
        );
        return;
    }

    let golden = std::fs::read_to_string(&golden_path)
        .unwrap_or_else(|e| panic!("{GOLDEN}: {e} (SLUICE_BLESS=1 writes it)"));
    let (want, want_counts) = decode(&golden);
    let want_hash: HashMap<(&str, &str, usize), u64> = want
        .iter()
        .map(|d| ((d.file, d.kind, d.ordinal), d.hash))
        .collect();
    // In run order; then what the golden file has and this run not, in its order.
    let mut diffs: Vec<Diff> = vec![];
    let mut have = HashSet::new();
    // Inputs in both whose count of mutations of some kind changed.
    let mut recounted = vec![];
    for (input, entries) in inputs.iter().zip(&results) {
        let file = input.name.as_str();
        for (index, e) in entries.iter().enumerate() {
            have.insert((file, e.kind, e.ordinal));
            let what = match want_hash.get(&(file, e.kind, e.ordinal)) {
                Some(&w) if w == e.hash => continue,
                Some(&w) => format!("{w:016x} -> {:016x}", e.hash),
                None => format!("new (not in the golden file) {:016x}", e.hash),
            };
            diffs.push(Diff {
                file,
                mutation: e.key.clone(),
                what,
                made: Some((input, index)),
            });
        }
        for kind in KINDS {
            let now = entries.iter().filter(|e| e.kind == kind).count();
            match want_counts.get(&(file, kind)) {
                Some(&was) if was != now => {
                    recounted.push(format!(
                        "  {file}: {kind} {was} in the golden file, {now} now"
                    ));
                }
                _ => {}
            }
        }
    }
    for d in want
        .iter()
        .filter(|d| !have.contains(&(d.file, d.kind, d.ordinal)))
    {
        diffs.push(Diff {
            file: d.file,
            mutation: format!("{}#{}", d.kind, d.ordinal),
            what: "gone (in the golden file, not produced)".into(),
            made: None,
        });
    }
    if diffs.is_empty() {
        eprintln!("{total} entries match {GOLDEN}");
        return;
    }
    let mut msg = format!(
        "{} of {total} (file, mutation) digests differ from {GOLDEN}; the first {}:\n",
        diffs.len(),
        diffs.len().min(10)
    );
    for d in diffs.iter().take(10) {
        let _ = writeln!(msg, "  {} {}: {}", d.file, d.mutation, d.what);
    }
    if !recounted.is_empty() {
        let _ = writeln!(
            msg,
            "mutation counts changed (the input or the mutation scheme changed):"
        );
        for line in &recounted {
            let _ = writeln!(msg, "{line}");
        }
    }
    // How many per file, in the order met.
    let mut per_file: Vec<(&str, usize)> = vec![];
    for d in &diffs {
        match per_file.last_mut() {
            Some((f, n)) if *f == d.file => *n += 1,
            _ => per_file.push((d.file, 1)),
        }
    }
    let _ = writeln!(msg, "per file:");
    for (file, n) in &per_file {
        let _ = writeln!(msg, "  {file}: {n}");
    }
    let first = &diffs[0];
    match first.made {
        Some((input, index)) => {
            let text = dump_of(input, index);
            let _ = write!(
                msg,
                "dump of `{} {}` now:\n{text}",
                first.file, first.mutation
            );
        }
        None => {
            let _ = writeln!(
                msg,
                "(`{} {}` is not made by this run: nothing to dump)",
                first.file, first.mutation
            );
        }
    }
    msg.push_str(
        "To see what changed, run this test with SLUICE_OPEN_DUMP=FILE on the old and the new \
         build and diff the two files; if the change is intended, SLUICE_BLESS=1 rewrites the \
         golden file.\n",
    );
    panic!("{msg}");
}
