//! `sluice prologue` with debug info: uprobe specs whose arguments name C variables of
//! `tests/dwarf/chain.c` and `tests/dwarf/vars.c`, compiled at test time with `gcc -g -O0`
//! and `-O2`. The output per site (place, the `bpf_prologue: insn num=N` listing, the
//! fetch-args) is checked for shape and, for the seed's probe, instruction by instruction; the
//! fetch-arg strings and addresses are checked against `perf probe -x BIN -D` (perf's own
//! DWARF resolution) when perf is installed (Debian: `linux-perf`).
//!
//! Without gcc or perf the tests say so and pass, unless `SLUICE_REQUIRE_KERNEL=1` (CI,
//! which installs both) makes that a failure.
#![cfg(target_arch = "x86_64")]
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{repo, skip, sluice};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `tests/dwarf/NAME.c` built with `-O{opt}`, or `None` after saying why. Each call builds
/// its own file: tests run in parallel threads, and one must never read a binary another
/// is still writing.
fn build(name: &str, opt: &str) -> Option<PathBuf> {
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("sluice-cli-dwarf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join(format!("{name}_O{opt}_{n}"));
    let ok = Command::new("gcc")
        .args(["-g", &format!("-O{opt}"), "-o"])
        .arg(&out)
        .arg(repo().join(format!("tests/dwarf/{name}.c")))
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some(out)
    } else {
        skip(&format!("gcc -O{opt} {name}.c unavailable (install gcc)"));
        None
    }
}

/// perf's `FUNC[+OFF] ARG ...` as a sluice uprobe spec on `bin`.
fn uprobe_spec(bin: &Path, perf_spec: &str) -> String {
    let mut words = perf_spec.split_whitespace();
    let place = words.next().unwrap();
    let args: Vec<&str> = words.collect();
    format!("uprobe/{}:{place}({})", bin.display(), args.join(", "))
}

/// `PATH:0xOFF ARG...` lines, unsigned spelled `u` (perf writes `x` when the kernel's
/// tracefs README says it can, `u` otherwise), sorted.
fn normalize<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut v: Vec<String> = lines
        .map(|l| {
            l.split_whitespace()
                .map(|w| match w.rsplit_once(":x") {
                    Some((a, bits)) if bits.parse::<u8>().is_ok() => format!("{a}:u{bits}"),
                    _ => w.to_owned(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    v.sort();
    v
}

/// What perf makes of `spec` in `bin` (`perf probe -x BIN -D SPEC`), normalized; `None` if
/// perf is not installed.
fn perf_definitions(bin: &Path, spec: &str) -> Option<Vec<String>> {
    let out = Command::new("perf")
        .args(["probe", "-x"])
        .arg(bin)
        .args(["-D", spec])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    // `p:GROUP/EVENT PATH:0xOFF ARGS` -> `PATH:0xOFF ARGS`
    Some(normalize(
        text.lines()
            .filter(|l| l.starts_with("p:"))
            .map(|l| l.split_once(' ').map_or("", |(_, rest)| rest)),
    ))
}

/// Our `tracefs:` lines for the same spec, normalized the same way.
fn ours(bin: &Path, spec: &str) -> Vec<String> {
    let uspec = uprobe_spec(bin, spec);
    let (code, out, err) = sluice(&["prologue", &uspec]);
    assert_eq!(code, 0, "{uspec}: {err}");
    check_listing(&out);
    normalize(out.lines().filter_map(|l| l.strip_prefix("tracefs: p ")))
}

/// Every site: `site N: ...`, `bpf_prologue: insn num=N` and exactly N instructions in the
/// verifier's format, `fetch-args:`, `tracefs:`, `spec:`.
fn check_listing(out: &str) {
    let lines: Vec<&str> = out.lines().collect();
    let mut i = 0;
    let mut site = 0;
    while i < lines.len() {
        site += 1;
        assert!(
            lines[i].starts_with(&format!("site {site}: ")),
            "line {i}: {out}"
        );
        let n: usize = lines[i + 1]
            .strip_prefix("bpf_prologue: insn num=")
            .unwrap_or_else(|| panic!("{out}"))
            .parse()
            .unwrap();
        for l in &lines[i + 2..i + 2 + n] {
            assert!(
                l.len() > 5 && l.starts_with('(') && l.as_bytes()[3] == b')',
                "{l}"
            );
        }
        assert!(lines[i + 2 + n].starts_with("fetch-args: "), "{out}");
        assert!(lines[i + 3 + n].starts_with("tracefs: p "), "{out}");
        assert!(lines[i + 4 + n].starts_with("spec: "), "{out}");
        i += n + 5;
    }
    assert!(site > 0, "{out}");
}

#[test]
fn seed_probe_at_o2_prints_sites_listing_and_fetch_args() {
    let Some(bin) = build("chain", "2") else {
        return;
    };
    let spec = format!(
        "uprobe/{}:generic_perform_write(file->f_mapping->a_ops, bytes, offset, $err)",
        bin.display()
    );
    let (code, out, err) = sluice(&["prologue", &spec]);
    assert_eq!(code, 0, "{err}");
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with("site 1: generic_perform_write at 0x")
            && first.contains(" (file offset 0x")
            && !first.contains("[inlined]"),
        "{first}"
    );
    let body: Vec<&str> = out.lines().skip(1).collect();
    let want = "\
bpf_prologue: insn num=25
(bf) r6 = r1
(79) r3 = *(u64 *)(r6 +112)
(07) r3 += 24
(bf) r1 = r10
(07) r1 += -8
(b7) r2 = 8
(85) call bpf_probe_read_user#112
(55) if r0 != 0x0 goto pc+12
(79) r3 = *(u64 *)(r10 -8)
(07) r3 += 16
(bf) r1 = r10
(07) r1 += -8
(b7) r2 = 8
(85) call bpf_probe_read_user#112
(55) if r0 != 0x0 goto pc+5
(79) r2 = *(u64 *)(r10 -8)
(79) r3 = *(u64 *)(r6 +104)
(79) r4 = *(u64 *)(r6 +96)
(b7) r5 = 0
(05) goto pc+4
(b7) r2 = 0
(b7) r3 = 0
(b7) r4 = 0
(b7) r5 = 1
(bf) r1 = r6
fetch-args: a_ops=+16(+24(%di)):x64 bytes=%si:x64 offset=%dx:s64";
    assert_eq!(body[..27].join("\n"), want, "{out}");
    assert!(
        body[27].starts_with(&format!("tracefs: p {}:0x", bin.display()))
            && body[27].ends_with(" a_ops=+16(+24(%di)):u64 bytes=%si:u64 offset=%dx:s64"),
        "{}",
        body[27]
    );
    check_listing(&out);
}

#[test]
fn inlined_instances_are_one_site_each() {
    let Some(bin) = build("vars", "0") else {
        return;
    };
    let spec = uprobe_spec(&bin, "scale x factor");
    let (code, out, err) = sluice(&["prologue", &spec]);
    assert_eq!(code, 0, "{err}");
    check_listing(&out);
    let sites: Vec<&str> = out.lines().filter(|l| l.starts_with("site ")).collect();
    assert_eq!(sites.len(), 2, "scale is inlined twice into twice(): {out}");
    assert!(sites.iter().all(|s| s.ends_with(" [inlined]")), "{out}");
}

#[test]
fn fetch_args_match_perf_probe() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "chain",
            "0",
            &["generic_perform_write file->f_mapping->a_ops bytes offset"],
        ),
        (
            "chain",
            "2",
            &["generic_perform_write file->f_mapping->a_ops bytes offset"],
        ),
        (
            "vars",
            "0",
            &[
                "process file bytes sc us",
                "process file->f_mapping->a_ops->prio file->pos file->inline_map.tag file->f_mapping->refs",
                "process+4 file bytes",
                "twice a b",
                "scale x factor",
                "sum_bytes buf len total",
                "sum_bytes buf[0] buf[1]",
                "main argc argv",
            ],
        ),
        (
            "vars",
            "2",
            &[
                "process file bytes sc us",
                "process file->f_mapping->a_ops->prio file->pos file->inline_map.tag file->f_mapping->refs",
                "process+0 file bytes sc us",
                "twice a b",
                "sum_bytes buf len",
                "sum_bytes buf[0] buf[1]",
                "main argc argv",
            ],
        ),
    ];
    let mut compared = 0;
    for (name, opt, specs) in cases {
        let Some(bin) = build(name, opt) else {
            return;
        };
        for spec in *specs {
            let Some(perf) = perf_definitions(&bin, spec) else {
                skip("perf is not installed (Debian: linux-perf)");
                return;
            };
            assert!(
                !perf.is_empty(),
                "perf resolved nothing for {name} -O{opt} '{spec}'"
            );
            assert_eq!(ours(&bin, spec), perf, "{name} -O{opt} '{spec}'");
            compared += 1;
        }
    }
    eprintln!("{compared} specs: sluice's uprobe definitions = perf probe -D's");
}

#[test]
fn debug_info_errors_name_file_function_variable_and_pc() {
    let Some(bin) = build("chain", "2") else {
        return;
    };
    let path = bin.display().to_string();
    let rows: &[(&str, &[&str])] = &[
        (
            "generic_perform_write(nosuch)",
            &[&path, "generic_perform_write", "'nosuch'", " at 0x"],
        ),
        ("no_such_function(x)", &[&path, "no_such_function"]),
        (
            "generic_perform_write(file->f_nomember)",
            &[&path, "generic_perform_write", "f_nomember"],
        ),
    ];
    for (tail, want) in rows {
        let spec = format!("uprobe/{path}:{tail}");
        let (code, out, err) = sluice(&["prologue", &spec]);
        assert_eq!(code, 2, "{spec}: {out}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        for w in *want {
            assert!(err.contains(w), "{spec}: '{w}' missing from {err}");
        }
    }
    // A uprobe's binary that does not exist: named.
    let (code, _, err) = sluice(&["prologue", "uprobe//nonexistent/sluice-bin:f(a)"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/sluice-bin"), "{err}");
    // --debuginfo for a kernel probe: the file's DWARF is used (here a user binary stands in
    // for a vmlinux: resolution does not care), the target is symbol+offset.
    let (code, out, err) = sluice(&[
        "prologue",
        "--debuginfo",
        &path,
        "kprobe/generic_perform_write(bytes, offset)",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("tracefs: p generic_perform_write+0 bytes=%si:u64 offset=%dx:s64"),
        "{out}"
    );
    assert!(!out.contains("call"), "registers only: no read: {out}");
    let (code, out, err) = sluice(&[
        "prologue",
        "--debuginfo",
        &path,
        "kprobe/generic_perform_write(file->f_mapping->a_ops)",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("call bpf_probe_read_kernel#113") && !out.contains("read_user"),
        "a kprobe reads kernel memory: {out}"
    );
}

/// `--emit FILE`: the resolved spec of each site, a spec without variables whose own
/// prologue (printed with no debug info at all) is the site's, instruction for instruction;
/// `--lines`: per line with code, what `FUNC:LINE` gives, or why not.
#[test]
fn emitted_specs_need_no_debug_info_and_lines_list_where_variables_live() {
    let Some(bin) = build("chain", "2") else {
        return;
    };
    let b = bin.display().to_string();
    let spec =
        format!("uprobe/{b}:generic_perform_write(file->f_mapping->a_ops, bytes, offset, $err)");
    let file = bin.with_extension("spec");
    let f = file.display().to_string();
    let (code, out, err) = sluice(&["prologue", "--emit", &f, &spec]);
    assert_eq!(code, 0, "{err}");
    check_listing(&out);
    let emitted = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = emitted.lines().collect();
    assert_eq!(lines.len(), 1, "{emitted}");
    let resolved = lines[0];
    assert_eq!(
        out.lines().find_map(|l| l.strip_prefix("spec: ")),
        Some(resolved)
    );
    assert!(
        resolved.starts_with(&format!("uprobe/{b}:0x"))
            && resolved.ends_with("(a_ops=+16(+24(%di)):u64, bytes=%si:u64, offset=%dx:s64, $err)"),
        "{resolved}"
    );
    // The resolved spec through the path without debug info: the same instructions.
    let (code, plain, err) = sluice(&["prologue", resolved]);
    assert_eq!(code, 0, "{err}");
    let listing = |text: &str| -> Vec<String> {
        text.lines()
            .skip_while(|l| !l.starts_with("bpf_prologue:"))
            .take_while(|l| l.starts_with('(') || l.starts_with("bpf_prologue:"))
            .map(str::to_owned)
            .collect()
    };
    assert!(listing(&plain).len() > 20, "{plain}");
    assert_eq!(listing(&plain), listing(&out));
    // And the same place: the site's file offset.
    let offset = out
        .lines()
        .find_map(|l| {
            l.split_once("(file offset ")
                .map(|(_, o)| o.trim_end_matches(')'))
        })
        .unwrap();
    assert!(
        resolved.contains(&format!(":{offset}(")),
        "{offset} {resolved}"
    );

    let (code, out, err) = sluice(&[
        "prologue",
        "--lines",
        &format!("uprobe/{b}:generic_perform_write(chunk, bytes)"),
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split('\t').collect()).collect();
    assert!(rows.len() >= 3, "{out}");
    assert!(
        rows.iter()
            .all(|r| r.len() == 3 && r[0].starts_with("generic_perform_write:")),
        "{out}"
    );
    let good: Vec<&Vec<&str>> = rows.iter().filter(|r| r[1] != "-").collect();
    assert!(
        !good.is_empty() && good.len() < rows.len(),
        "some lines see chunk, some not: {out}"
    );
    // Each listed line resolves the same way on its own (the perf form, whose `:LINE` is a
    // kernel probe's: the binary stands in for a vmlinux through --debuginfo).
    for row in &rows {
        let (code, one, err) = sluice(&[
            "prologue",
            "--debuginfo",
            &b,
            &format!("{} chunk bytes", row[0]),
        ]);
        if row[1] == "-" {
            assert_eq!(code, 2, "{row:?}: {one}");
            assert!(err.contains(row[2]), "{row:?}: {err}");
        } else {
            assert_eq!(code, 0, "{row:?}: {err}");
            let fetch = one.lines().find_map(|l| l.strip_prefix("fetch-args: "));
            assert_eq!(fetch, Some(row[2]), "{one}");
        }
    }
    let (code, _, err) = sluice(&[
        "prologue",
        "--lines",
        &format!("uprobe/{b}:generic_perform_write+4(chunk)"),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--lines scans the whole function"), "{err}");
}

/// A function's public alias (an ELF symbol at the same address, like libc's `fwrite` for
/// `_IO_fwrite`) resolves to the definition's DWARF, at the same place as the definition's
/// own name (issue 14, item 5).
#[test]
fn a_public_alias_resolves_to_its_definition() {
    let Some(bin) = build("alias", "0") else {
        return;
    };
    let path = bin.display().to_string();
    let by_alias = sluice(&["prologue", &format!("uprobe/{path}:public_write(count)")]);
    assert_eq!(by_alias.0, 0, "{}", by_alias.2);
    let by_name = sluice(&["prologue", &format!("uprobe/{path}:impl_write(count)")]);
    assert_eq!(by_name.0, 0, "{}", by_name.2);
    // The same fetch-args at the same file offset, whichever name was typed.
    let fetch = |out: &str| {
        out.lines()
            .filter(|l| l.contains("tracefs:"))
            .map(|l| l.replace("public_write", "F").replace("impl_write", "F"))
            .collect::<Vec<_>>()
    };
    assert!(!fetch(&by_alias.1).is_empty(), "{}", by_alias.1);
    assert_eq!(fetch(&by_alias.1), fetch(&by_name.1));
}

/// `--lines` never points a line to one that cannot be probed: every "probe F:L instead" of
/// a line sharing its address names a line that `--lines` of F lists with an address of its
/// own (at `-O0`, `lines.c`'s `mix:4` shares the entry of its inlined `twist` with `twist`'s
/// own line, which perf names `mix:-5`: no line of `mix`). Over every function of `lines.c`
/// and `line.c`, gcc and clang at `-O0`, `-O2` and `-Os`.
#[test]
fn lines_point_only_to_lines_with_an_address_of_their_own() {
    let dir = std::env::temp_dir().join(format!("sluice-lines-pointers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sources: [(&str, &[&str]); 2] = [
        ("lines", &["mix", "pair", "twice", "twist", "main"]),
        ("line", &["walk", "report", "main"]),
    ];
    let mut pointers = 0;
    let mut inlined = 0;
    for cc in ["gcc", "clang"] {
        for opt in ["-O0", "-O2", "-Os"] {
            for (name, funcs) in sources {
                let bin = dir.join(format!("{name}_{cc}{opt}"));
                let src = repo().join(format!("tests/dwarf/{name}.c"));
                if !common::compile(
                    cc,
                    &[
                        "-g",
                        opt,
                        "-o",
                        bin.to_str().unwrap(),
                        src.to_str().unwrap(),
                    ],
                ) {
                    continue;
                }
                let listing = |func: &str| -> String {
                    let spec = format!("uprobe/{}:{func}", bin.display());
                    let (code, out, err) = sluice(&["prologue", "--lines", &spec]);
                    assert_eq!(code, 0, "{spec}: {err}");
                    out
                };
                // Per function: the lines listed with an address of their own.
                let mut own: std::collections::BTreeMap<String, Vec<String>> =
                    std::collections::BTreeMap::new();
                let mut own_of = |func: &str| -> Vec<String> {
                    own.entry(func.to_owned())
                        .or_insert_with(|| {
                            listing(func)
                                .lines()
                                .filter(|l| l.split('\t').nth(1).is_some_and(|p| p != "-"))
                                .map(|l| l.split('\t').next().unwrap().to_owned())
                                .collect()
                        })
                        .clone()
                };
                for func in funcs {
                    for l in listing(func).lines() {
                        let Some(why) = l.split('\t').nth(2) else {
                            continue;
                        };
                        let Some(rest) = why.split_once("probe ") else {
                            continue;
                        };
                        let Some(target) = rest.1.strip_suffix(" instead") else {
                            continue;
                        };
                        let (tf, _) = target.split_once(':').unwrap();
                        assert!(
                            own_of(tf).iter().any(|t| t == target),
                            "{cc} {opt} {name}: '{l}' points to {target}, which has no \
                             address of its own:\n{}",
                            listing(tf)
                        );
                        pointers += 1;
                        inlined += usize::from(tf != *func);
                    }
                }
            }
        }
    }
    if pointers == 0 {
        return skip("no compiler built the programs");
    }
    assert!(
        inlined > 0,
        "the -O0 mix:4 case points into its inlined twist"
    );
    eprintln!("{pointers} pointers ({inlined} into an inlined function), each to a probeable line");
    std::fs::remove_dir_all(&dir).unwrap();
}
