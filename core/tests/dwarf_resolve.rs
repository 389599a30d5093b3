//! `core::dwarf` against real compiler output: `tests/dwarf/vars.c` is compiled at test time
//! with the host's gcc (-O0/-O2, x86_64 and `-m32` when a 32-bit libc is installed), and the
//! expected fetch-args are the ones `perf probe -n -v` (Debian linux-perf 6.1) printed for the
//! same builds (`tests/golden/dwarf/compare.sh` re-checks them against perf itself).
//! Without gcc the tests say so and pass (like the kernel tests without root).
#![cfg(feature = "dwarf")]
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use sluice_core::dwarf::{
    debug_file_candidates, debuglink, debuglink_crc, DebugSections, Error, FetchSyntax, LocBase,
    Lookup, ProbeSite, PrologueSkip, Resolver,
};
use sluice_core::elf::Elf;
use sluice_core::probe::{self, Section};

fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/dwarf/vars.c")
}

fn out_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-dwarf-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles vars.c with `flags`; `None` (after saying why) when the compiler cannot.
fn build(name: &str, flags: &[&str]) -> Option<PathBuf> {
    let out = out_dir().join(name);
    let status = Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(source())
        .status();
    match status {
        Ok(s) if s.success() => Some(out),
        _ => {
            eprintln!("SKIPPED: gcc {flags:?} unavailable (install gcc / gcc-multilib)");
            None
        }
    }
}

/// Resolves `spec` in the binary; per site `OFFSET args...` as perf prints them.
fn resolve(bytes: &[u8], spec: &str) -> Result<Vec<String>, Error> {
    resolve_with(bytes, bytes, spec, PrologueSkip::Auto)
}

fn resolve_with(
    code: &[u8],
    debug: &[u8],
    spec: &str,
    skip: PrologueSkip,
) -> Result<Vec<String>, Error> {
    let code = Elf::parse(code).unwrap();
    let debug = Elf::parse(debug).unwrap();
    let sections = DebugSections::load(&debug)?;
    let r = Resolver::new(&code, &sections)?.with_prologue_skip(skip);
    let Ok(Section::Probe(p)) = probe::parse(spec) else {
        panic!("bad spec {spec}");
    };
    let sites = r.resolve_spec(&p)?;
    Ok(sites.iter().map(|s| line(&r, s)).collect())
}

fn line(r: &Resolver<'_>, s: &ProbeSite) -> String {
    let mut l = format!("{:#x}", s.file_offset.unwrap());
    for a in &s.args {
        l.push(' ');
        l.push_str(&a.fetch_arg(r.arch(), FetchSyntax::Perf).unwrap());
    }
    l
}

fn check(bytes: &[u8], cases: &[(&str, &[&str])]) {
    for (spec, want) in cases {
        let got = resolve(bytes, spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        // Addresses depend on the compiler version; the fetch-args are what perf checked.
        let args: Vec<String> = got
            .iter()
            .map(|l| l.split_once(' ').map_or("", |(_, a)| a).to_string())
            .collect();
        assert_eq!(args, *want, "{spec}");
    }
}

#[test]
fn x86_64_o0_frame_slots_chains_globals() {
    let Some(bin) = build("vars_O0", &["-g", "-O0"]) else {
        return;
    };
    let bytes = std::fs::read(bin).unwrap();
    check(
        &bytes,
        &[
            ("process file bytes sc us", &["file=-40(%bp):x64 bytes=-48(%bp):s64 sc=-52(%bp):s8 us=-56(%bp):x16"]),
            (
                "process file->f_mapping->a_ops->flags file->small.s file->slots[2] file->name[1]",
                &["flags=+8(+8(+16(-40(%bp)))):x16 s=+24(-40(%bp)):s16 slots=+48(-40(%bp)):s32 name=+1(-40(%bp)):s8"],
            ),
            (
                "process file->f_mapping->a_ops->prio file->pos file->inline_map.tag file->f_mapping->refs",
                &["prio=+10(+8(+16(-40(%bp)))):s8 pos=+32(-40(%bp)):s64 tag=+72(-40(%bp)):x8 refs=+0(+16(-40(%bp))):s32"],
            ),
            ("process:8 slot i offset", &["slot=-28(%bp):s32 i=-12(%bp):s32 offset=-8(%bp):s64"; 2]),
            // Two inlined instances, each with its own frame slots.
            ("scale x factor scaled", &["x=-20(%bp):s32 factor=-24(%bp):s32 scaled=-28(%bp):s32", "x=-8(%bp):s32 factor=-12(%bp):s32 scaled=-16(%bp):s32"]),
            ("sum_bytes buf[0] buf[1]", &["buf=+0(-24(%bp)):x8 buf=+1(-24(%bp)):x8"]),
            ("main counter byte_global global_map.tag neg_short", &["counter=@counter+0:s32 byte_global=@byte_global+0:x8 tag=@global_map+16:x8 neg_short=@neg_short+0:s16"]),
            ("main argc argv[0]:string", &["argc=-132(%bp):s32 argv=+0(+0(-144(%bp))):string"]),
        ],
    );
    // `FUNC+0` is the exact entry (perf reads `+0` as no offset and skips the prologue): the
    // CFA is %sp+8 there.
    let entry = resolve(&bytes, "process+0 file").unwrap();
    assert_eq!(entry.len(), 1);
    assert!(entry[0].ends_with(" file=-48(%sp):x64"), "{entry:?}");
    // FUNC alone is after the prologue: a later address than the entry.
    let after = resolve(&bytes, "process file").unwrap();
    assert!(after[0] > entry[0]);
    let never = resolve_with(&bytes, &bytes, "process file", PrologueSkip::Never).unwrap();
    assert_eq!(never[0].split(' ').next(), entry[0].split(' ').next());
}

#[test]
fn x86_64_o2_registers_location_lists_inlines() {
    let Some(bin) = build("vars_O2", &["-g", "-O2"]) else {
        return;
    };
    let bytes = std::fs::read(bin).unwrap();
    check(
        &bytes,
        &[
            ("process file bytes sc us", &["file=%di:x64 bytes=%si:s64 sc=%dx:s8 us=%cx:x16"]),
            (
                "process file->f_mapping->a_ops->prio file->pos file->inline_map.tag file->f_mapping->refs",
                &["prio=+10(+8(+16(%di))):s8 pos=+32(%di):s64 tag=+72(%di):x8 refs=+0(+16(%di)):s32"],
            ),
            ("twice a b", &["a=%di:s32 b=%si:s32"]),
            // perf stops at the constant (DW_OP 32 not supported); the value is known.
            ("scale x factor", &["x=%di:s32 factor=\\2:s32", "x=%si:s32 factor=\\3:s32"]),
            ("sum_bytes buf len", &["buf=%di:x64 len=%si:x32"]),
        ],
    );
    // Location lists with no entry at the pc, and a dropped static: errors naming the
    // variable and the address.
    match resolve(&bytes, "twice a b r") {
        Err(Error::NotAvailable { name, reason, .. }) => {
            assert_eq!(name, "r");
            assert_eq!(reason, "no location at this address");
        }
        other => panic!("{other:?}"),
    }
    match resolve(&bytes, "main neg_short") {
        Err(Error::NotAvailable { name, reason, .. }) => {
            assert_eq!((name.as_str(), reason), ("neg_short", "optimized out"));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(resolve(&bytes, "nope x"), Err(Error::FunctionNotFound(f)) if f == "nope"));
    // Both errors list what can be fetched there instead (bounded, innermost first wins).
    match resolve(&bytes, "twice zz") {
        Err(e @ Error::VariableNotFound { .. }) => {
            let Error::VariableNotFound { available, .. } = &e else {
                unreachable!()
            };
            assert!(!available.more);
            assert!(available.names.len() <= sluice_core::dwarf::MAX_AVAILABLE);
            for n in ["a", "b", "counter"] {
                assert!(available.names.iter().any(|x| x == n), "{e}");
            }
            assert!(!available.names.iter().any(|x| x == "r"), "{e}");
            assert!(e.to_string().contains("; available there: a, b"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    match resolve(&bytes, "twice a b r") {
        Err(e @ Error::NotAvailable { .. }) => {
            assert!(e.to_string().contains("; available there: a, b"), "{e}");
            assert!(!e.to_string().contains(" r,"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    match resolve(&bytes, "main neg_short") {
        Err(e @ Error::NotAvailable { .. }) => {
            let text = e.to_string();
            assert!(text.contains("available there: argc, argv"), "{text}");
            assert!(!text.contains("neg_short,"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        resolve(&bytes, "twice a->x"),
        Err(Error::BadStep { .. })
    ));
    assert!(matches!(
        resolve(&bytes, "process file->nope"),
        Err(Error::BadStep { .. })
    ));
    assert!(matches!(
        resolve(&bytes, "process file->small"),
        Err(Error::NotScalar { .. })
    ));
    // Return probes sit at the entry of the out-of-line function.
    let ret = resolve(&bytes, "sum_bytes%return").unwrap();
    let entry = resolve(&bytes, "sum_bytes+0").unwrap();
    assert_eq!(ret, entry);
}

#[test]
fn i386_stack_arguments() {
    let Some(o2) = build("vars32_O2", &["-m32", "-g", "-O2"]) else {
        return;
    };
    let bytes = std::fs::read(o2).unwrap();
    check(
        &bytes,
        &[
            (
                "process file bytes sc us",
                &["file=+4($stack):x32 bytes=+8($stack):s32 sc=+12($stack):s8 us=+16($stack):x16"],
            ),
            (
                "process file->pos file->f_mapping->a_ops->flags",
                &["pos=+20(+4($stack)):s64 flags=+4(+4(+12(+4($stack)))):x16"],
            ),
        ],
    );
    let Some(o0) = build("vars32_O0", &["-m32", "-g", "-O0"]) else {
        return;
    };
    let bytes = std::fs::read(o0).unwrap();
    check(
        &bytes,
        &[
            (
                "twice a b r",
                &["a=+8(%bp):s32 b=+12(%bp):s32 r=-4(%bp):s32"],
            ),
            (
                "main counter global_map.tag",
                &["counter=@counter+0:s32 tag=@global_map+8:x8"],
            ),
            // `main` realigns its stack: the CFA is `*(%ebp - 16)` (a CFA expression), and
            // argc sits at the CFA. perf drops the read (`-16(%bp)`, the saved pointer).
            (
                "main argc argv",
                &["argc=+0(-16(%bp)):s32 argv=+4(-16(%bp)):x32"],
            ),
        ],
    );
}

#[test]
fn compressed_sections_resolve_the_same() {
    let (Some(plain), Some(packed)) = (
        build("vars_plain", &["-g", "-O2"]),
        build("vars_gz", &["-g", "-O2", "-gz=zlib"]),
    ) else {
        return;
    };
    let plain = std::fs::read(plain).unwrap();
    let packed = std::fs::read(packed).unwrap();
    let elf = Elf::parse(&packed).unwrap();
    let compressed = elf.sections().any(|(_, sh)| {
        elf.section_name(&sh) == ".debug_info" && sh.flags & sluice_core::elf::SHF_COMPRESSED != 0
    });
    assert!(compressed, "gcc -gz=zlib did not compress .debug_info");
    for spec in [
        "process file->f_mapping->a_ops->flags sc",
        "scale x factor",
        "main counter",
    ] {
        assert_eq!(
            resolve(&plain, spec).unwrap(),
            resolve(&packed, spec).unwrap(),
            "{spec}"
        );
    }
}

#[test]
fn separate_debug_file_by_debuglink() {
    let Some(bin) = build("vars_split", &["-g", "-O2", "-Wl,--build-id"]) else {
        return;
    };
    let dir = bin.parent().unwrap().to_path_buf();
    let dbg = dir.join("vars_split.debug");
    let run = |args: &[&std::ffi::OsStr]| {
        Command::new("objcopy")
            .args(args)
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    let ok = run(&[
        "--only-keep-debug".as_ref(),
        bin.as_os_str(),
        dbg.as_os_str(),
    ]) && run(&["--strip-debug".as_ref(), bin.as_os_str()])
        && Command::new("objcopy")
            .current_dir(&dir)
            .args(["--add-gnu-debuglink=vars_split.debug", "vars_split"])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
    if !ok {
        eprintln!("SKIPPED: objcopy unavailable");
        return;
    }
    let code = std::fs::read(&bin).unwrap();
    let elf = Elf::parse(&code).unwrap();
    assert!(matches!(DebugSections::load(&elf), Err(Error::NoDebugInfo)));
    let (name, crc) = debuglink(&elf).unwrap();
    assert_eq!(name, "vars_split.debug");
    let debug = std::fs::read(&dbg).unwrap();
    assert_eq!(debuglink_crc(&debug), crc);
    let path = bin.to_str().unwrap();
    let cands = debug_file_candidates(&elf, path);
    assert!(
        cands[0].starts_with("/usr/lib/debug/.build-id/"),
        "{cands:?}"
    );
    assert!(cands[0].ends_with(".debug"));
    assert!(
        cands.contains(&dbg.to_str().unwrap().to_string()),
        "{cands:?}"
    );
    let full =
        std::fs::read(build("vars_full", &["-g", "-O2", "-Wl,--build-id"]).unwrap()).unwrap();
    for spec in ["process file->pos us", "scale x"] {
        let split = resolve_with(&code, &debug, spec, PrologueSkip::Auto).unwrap();
        assert_eq!(split, resolve(&full, spec).unwrap(), "{spec}");
    }
}

#[test]
fn locations_are_prologue_input() {
    let Some(bin) = build("vars_loc", &["-g", "-O0"]) else {
        return;
    };
    let bytes = std::fs::read(bin).unwrap();
    let elf = Elf::parse(&bytes).unwrap();
    let s = DebugSections::load(&elf).unwrap();
    let r = Resolver::new(&elf, &s).unwrap();
    let Ok(Section::Probe(p)) = probe::parse("process file->f_mapping->a_ops->flags") else {
        panic!()
    };
    let sites = r.resolve_spec(&p).unwrap();
    let loc = &sites[0].args[0].location;
    assert_eq!(
        loc.base,
        LocBase::FrameSlot {
            cfa_reg: 6,
            cfa_offset: 16,
            offset: -56
        }
    );
    assert_eq!(loc.derefs, vec![16, 8, 8]);
    assert_eq!((loc.size, loc.signed), (2, false));
    let regs = loc.with_register_base();
    assert_eq!(
        regs.base,
        LocBase::Register {
            dwarf_reg: 6,
            offset: 0
        }
    );
    assert_eq!(regs.derefs, vec![-40, 16, 8, 8]);
    assert_eq!(
        sites[0].args[0]
            .fetch_arg(r.arch(), FetchSyntax::Kprobe)
            .unwrap(),
        "flags=+8(+8(+16(-40(%bp)))):u16"
    );
    // A global for a uprobe: `@+` the file offset relative to the probed mapping.
    let Ok(Section::Probe(p)) = probe::parse("main counter") else {
        panic!()
    };
    let site = &r.resolve_spec(&p).unwrap()[0];
    let LocBase::Address(addr) = site.args[0].location.base else {
        panic!()
    };
    let bias = r.load_bias(site.address).unwrap();
    assert_eq!(
        site.args[0]
            .fetch_arg(r.arch(), FetchSyntax::Uprobe { load_bias: bias })
            .unwrap(),
        format!("counter=@+{:#x}:s32", addr - bias)
    );
}

/// Corrupted debug info: every error is a value, never a panic.
#[test]
fn corrupted_debug_info_never_panics() {
    let Some(bin) = build("vars_fuzz", &["-g", "-O2"]) else {
        return;
    };
    let bytes = std::fs::read(bin).unwrap();
    let elf = Elf::parse(&bytes).unwrap();
    let (info_off, info_len) = elf
        .sections()
        .find(|(_, sh)| elf.section_name(sh) == ".debug_info")
        .map(|(_, sh)| (sh.offset as usize, sh.size as usize))
        .unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..300 {
        let mut m = bytes.clone();
        for _ in 0..1 + round % 8 {
            let at = info_off + (next() as usize) % info_len;
            m[at] = next() as u8;
        }
        for spec in [
            "process file->f_mapping->a_ops->flags sc",
            "scale x factor",
            "main counter",
            "process:8 slot",
        ] {
            let Ok(code) = Elf::parse(&m) else { continue };
            let Ok(sections) = DebugSections::load(&code) else {
                continue;
            };
            let Ok(r) = Resolver::new(&code, &sections) else {
                continue;
            };
            let Ok(Section::Probe(p)) = probe::parse(spec) else {
                panic!()
            };
            if let Ok(sites) = r.resolve_spec(&p) {
                for site in sites {
                    for a in site.args {
                        let _ = a.fetch_arg(r.arch(), FetchSyntax::Perf);
                    }
                }
            }
        }
    }
}

/// One site per inlined instance, with no cap (perf stops at 128).
#[test]
fn two_hundred_inlined_sites() {
    let dir = out_dir();
    let src = dir.join("many.c");
    let mut c = String::from(
        "volatile int sink;\nstatic inline __attribute__((always_inline)) void hit(int v) { sink = v * 3; }\nint main(void) {\n",
    );
    for i in 0..200 {
        c.push_str(&format!("    hit(sink); /* {i} */\n"));
    }
    c.push_str("    return 0;\n}\n");
    std::fs::write(&src, c).unwrap();
    let bin = dir.join("many");
    let ok = Command::new("gcc")
        .args(["-g", "-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("SKIPPED: gcc unavailable");
        return;
    }
    let bytes = std::fs::read(&bin).unwrap();
    let sites = resolve(&bytes, "hit v").unwrap();
    assert_eq!(sites.len(), 200);
    let mut addrs: Vec<&str> = sites.iter().map(|l| l.split(' ').next().unwrap()).collect();
    addrs.dedup();
    assert_eq!(addrs.len(), 200, "distinct addresses");
}

/// Every result (sites, fetch-args, or the error's text) of `specs` in `bin`, looked up
/// through the unit index and through the walk over every unit.
fn both_lookups(bin: &[u8], specs: &[&str]) -> (Vec<String>, Vec<String>, usize, usize) {
    let elf = Elf::parse(bin).unwrap();
    let sections = DebugSections::load(&elf).unwrap();
    let mut out = [Vec::new(), Vec::new()];
    let mut parsed = 0;
    let mut units = 0;
    for (i, lookup) in [Lookup::Indexed, Lookup::Exhaustive]
        .into_iter()
        .enumerate()
    {
        let r = Resolver::new(&elf, &sections).unwrap().with_lookup(lookup);
        for spec in specs {
            // The grammar takes up to 4 fetched arguments: the first 4 of longer lists.
            let spec = &spec.split(' ').take(5).collect::<Vec<_>>().join(" ");
            let Ok(Section::Probe(p)) = probe::parse(spec) else {
                panic!("bad spec {spec}");
            };
            let text = match r.resolve_spec(&p) {
                Ok(sites) => sites
                    .iter()
                    .map(|s| format!("{} {}", line(&r, s), s.inlined))
                    .collect::<Vec<_>>()
                    .join("; "),
                Err(e) => format!("error: {e}"),
            };
            out[i].push(format!("{spec} => {text}"));
        }
        if lookup == Lookup::Indexed {
            parsed = r.parsed_unit_count();
            units = r.unit_count().unwrap();
        }
    }
    let [indexed, exhaustive] = out;
    (indexed, exhaustive, parsed, units)
}

/// The unit index finds what the walk over every unit finds, on the fixtures (every spec of
/// `tests/golden/dwarf/vars_specs.txt`, gcc and clang, -O0 and -O2, DWARF 4 and 5) and on
/// a program of three units sharing a header's inline function, same-named static
/// functions, and a global defined in another unit than the one probed.
#[test]
fn indexed_lookup_equals_exhaustive() {
    let specs_file = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden/dwarf/vars_specs.txt"),
    )
    .unwrap();
    let mut specs: Vec<&str> = specs_file
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    specs.extend(["nosuchfunc x", "process nosuchvar", "main counter zz"]);
    let mut builds = 0;
    for (cc, flags) in [
        ("gcc", &["-g", "-O0"][..]),
        ("gcc", &["-g", "-O2"]),
        ("gcc", &["-gdwarf-4", "-O2"]),
        ("clang", &["-g", "-O0"]),
        ("clang", &["-g", "-O2"]),
    ] {
        let out = out_dir().join(format!("vars_{cc}{}", flags.join("")));
        let ok = Command::new(cc)
            .args(flags)
            .arg("-o")
            .arg(&out)
            .arg(source())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("SKIPPED: {cc} {flags:?} unavailable");
            continue;
        }
        builds += 1;
        let (indexed, exhaustive, _, _) = both_lookups(&std::fs::read(&out).unwrap(), &specs);
        assert_eq!(indexed, exhaustive, "{cc} {flags:?}");
    }
    if builds == 0 {
        return;
    }
    let dir = out_dir().join("multi");
    std::fs::create_dir_all(&dir).unwrap();
    let files = [
        (
            "multi.h",
            "static inline __attribute__((always_inline)) int hinline(int v) { return v * 7 + 1; }\n\
             extern int shared_counter;\nint a_entry(int n);\nint b_entry(int n);\n",
        ),
        (
            "a.c",
            "#include \"multi.h\"\nint shared_counter = 3;\n\
             static __attribute__((noinline)) int helper(int x) { return x + shared_counter; }\n\
             int a_entry(int n) { return hinline(n) + helper(n); }\n",
        ),
        (
            "b.c",
            "#include \"multi.h\"\n\
             static __attribute__((noinline)) int helper(int y) { return y - shared_counter; }\n\
             int b_entry(int n) { return hinline(n + 1) + helper(n); }\n",
        ),
        (
            "c.c",
            "#include \"multi.h\"\nint main(int argc, char **argv) {\n\
             (void)argv; return a_entry(argc) + b_entry(argc);\n}\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let bin = dir.join("multi");
    let ok = Command::new("gcc")
        .args(["-g", "-O2", "-o"])
        .arg(&bin)
        .args(["a.c", "b.c", "c.c"].map(|f| dir.join(f)))
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED: gcc unavailable");
        return;
    }
    let bytes = std::fs::read(&bin).unwrap();
    let specs = [
        "hinline shared_counter",
        "helper x",
        "helper y",
        "a_entry n shared_counter",
        "b_entry n shared_counter",
        "main argc",
        "nosuchfunc x",
    ];
    let (indexed, exhaustive, parsed, units) = both_lookups(&bytes, &specs);
    assert_eq!(indexed, exhaustive);
    // Two inlined instances of hinline (a.c and b.c), one helper per unit.
    assert_eq!(indexed[0].matches("true").count(), 2, "{}", indexed[0]);
    assert!(indexed[1].contains("error: variable 'x'"), "{}", indexed[1]);
    assert!(indexed[3].contains("shared_counter=@"), "{}", indexed[3]);
    assert!(indexed[4].contains("shared_counter=@"), "{}", indexed[4]);
    assert_eq!(units, 3);
    // `main argc` alone needs c.c; the other specs a.c and b.c: each unit parsed is one the
    // specs name, and a lookup of one name parses only its units.
    assert!(parsed <= units, "{parsed} of {units}");
    let elf = Elf::parse(&bytes).unwrap();
    let sections = DebugSections::load(&elf).unwrap();
    let r = Resolver::new(&elf, &sections).unwrap();
    let Ok(Section::Probe(p)) = probe::parse("main argc") else {
        panic!()
    };
    r.resolve_spec(&p).unwrap();
    assert_eq!(r.parsed_unit_count(), 1, "main lives in c.c alone");
}

/// Compressed sections are inflated when first read, not when found: `Resolver::new`
/// inflates the ones every lookup reads, the location lists wait for a location list.
#[test]
fn compressed_sections_inflate_when_read() {
    let Some(packed) = build("vars_gz_lazy", &["-g", "-O2", "-gz=zlib"]) else {
        return;
    };
    let packed = std::fs::read(packed).unwrap();
    let elf = Elf::parse(&packed).unwrap();
    let sections = DebugSections::load(&elf).unwrap();
    assert!(sections.is_compressed(".debug_info"));
    assert!(
        !sections.is_inflated(".debug_info"),
        "load inflates nothing"
    );
    let r = Resolver::new(&elf, &sections).unwrap();
    assert!(sections.is_inflated(".debug_info"));
    assert!(sections.is_compressed(".debug_loclists"));
    assert!(!sections.is_inflated(".debug_loclists"));
    // `scaled` is only in a location list (with no entry at the probed address).
    let Ok(Section::Probe(p)) = probe::parse("scale x factor scaled") else {
        panic!()
    };
    let e = r.resolve_spec(&p).unwrap_err();
    assert!(e.to_string().contains("no location at this address"), "{e}");
    assert!(sections.is_inflated(".debug_loclists"));
}

/// `resolve_lines` (one lookup of the function, every line with code) answers for each line
/// exactly what `resolve` answers for `FUNC:LINE`, and the lines it leaves out have no code.
#[test]
fn line_scan_agrees_with_single_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/dwarf/chain.c");
    for opt in ["-O0", "-O2"] {
        let bin = out_dir().join(format!("chain{opt}"));
        let ok = Command::new("gcc")
            .args(["-g", opt, "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("SKIPPED: gcc {opt} unavailable");
            return;
        }
        let bytes = std::fs::read(&bin).unwrap();
        let elf = Elf::parse(&bytes).unwrap();
        let sections = DebugSections::load(&elf).unwrap();
        let r = Resolver::new(&elf, &sections).unwrap();
        let Ok(Section::Probe(p)) = probe::parse("generic_perform_write chunk bytes") else {
            panic!()
        };
        let args = p.args().exprs();
        let scan = r.resolve_lines("generic_perform_write", args).unwrap();
        let listed: Vec<u32> = scan.iter().map(|(l, _)| *l).collect();
        assert!(scan.iter().any(|(_, s)| s.is_ok()), "{opt}: {scan:?}");
        assert!(scan.iter().any(|(_, s)| s.is_err()), "{opt}: {scan:?}");
        for line in 0..20u32 {
            let one = r.resolve("generic_perform_write", probe::Place::Line(line), args);
            match scan.iter().find(|(l, _)| *l == line) {
                Some((_, got)) => assert_eq!(got, &one, "{opt} line {line}"),
                None => assert!(
                    matches!(one, Err(Error::NoPlace { .. })),
                    "{opt} line {line} not listed ({listed:?}) but {one:?}"
                ),
            }
        }
        assert!(matches!(
            r.resolve_lines("no_such_function", args),
            Err(Error::FunctionNotFound(_))
        ));
    }
}

/// `FUNC:0` is `FUNC`, as `perf probe` reads it (line 0 is no line there): the entry (after
/// the prologue where `FUNC` skips it), not every row and inlined call of the declaration's
/// line. `tests/dwarf/lines.c`'s `twice` is made by a macro, like the kernel's
/// `SYSCALL_DEFINE`: it inlines `__do_twice` on that same line, whose entry is no probe of
/// line 0 (perf gives one place there, `twice` at its entry).
#[test]
fn line_zero_is_the_function_place() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/dwarf/lines.c");
    for opt in ["-O0", "-O2"] {
        let bin = out_dir().join(format!("lines{opt}"));
        let ok = Command::new("gcc")
            .args(["-g", opt, "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("SKIPPED: gcc {opt} unavailable");
            return;
        }
        let bytes = std::fs::read(&bin).unwrap();
        for (zero, plain) in [
            ("twice:0 v", "twice v"),
            ("mix:0 a k", "mix a k"),
            ("pair:0 a b", "pair a b"),
        ] {
            let z = resolve(&bytes, zero).unwrap_or_else(|e| panic!("{opt} {zero}: {e}"));
            let p = resolve(&bytes, plain).unwrap_or_else(|e| panic!("{opt} {plain}: {e}"));
            assert_eq!(z, p, "{opt} {zero} vs {plain}");
        }
        let zero = resolve(&bytes, "twice:0 v").unwrap();
        assert_eq!(zero.len(), 1, "{opt}: {zero:?}");
        // The inlined body's entry is a place of no line of `twice` but its own.
        let elf = Elf::parse(&bytes).unwrap();
        let sections = DebugSections::load(&elf).unwrap();
        let r = Resolver::new(&elf, &sections).unwrap();
        let lines = r.resolve_lines("twice", &[]).unwrap();
        let at_zero: Vec<_> = lines.iter().filter(|(l, _)| *l == 0).collect();
        assert_eq!(at_zero.len(), 1, "{opt}: {lines:?}");
        assert_eq!(at_zero[0].1.as_ref().unwrap().len(), 1, "{opt}: {lines:?}");
    }
}
