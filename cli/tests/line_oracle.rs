//! `FUNC:LINE` placement against `perf probe` (Debian's linux-perf, the oracle): for every line
//! of every function of the C programs in `tests/dwarf/` (built with gcc and clang at `-O0`
//! and `-O2`), our sites ([`DebugInfo::lines`], one lookup per function) and
//! `perf probe -x BIN -D 'FUNC:L PARAMS'` must give the same places with the same fetch-args,
//! or both refuse the line (no code there, a line whose address belongs to another line, a
//! variable perf cannot fetch there).
//!
//! Asserted differences (each counted and printed):
//! - past the end: perf walks the line table of the whole compile unit, so a line past the
//!   end of the function lands in whatever code follows; we refuse it. perf's places must lie
//!   outside the function (its symbol's extent; for a function only inlined, the entry of
//!   another function);
//! - constants: a variable that is a constant there (`DW_OP_lit3; DW_OP_stack_value`) is an
//!   immediate for us (`factor=\3:s32`); perf refuses the whole probe ("we don't support
//!   this variable location yet");
//! - dummies: where a variable has no location at one of a line's sites, perf fills it with
//!   the dummy `\deade12d` and probes anyway; we refuse the line, naming the variable.
//!
//! The same for the lines 0..80 of three kernel functions against
//! `perf probe -k VMLINUX -D`, when the cached Debian vmlinux is there (see [`vmlinux`]); else
//! that test says it skipped. perf reads the vmlinux DWARF on every call (~0.5-1 s of CPU):
//! the 243 calls run on four threads.
//!
//! clang builds use `-gdwarf-4`: perf 6.1 crashes (SIGSEGV) reading clang 14's DWARF 5.
//! perf needs root (it reads tracefs even with `-D`).
#![cfg(target_arch = "x86_64")]
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use common::{repo, required, skip};
use sluice_core::probe::{self, Section};
use sluice_runtime::probe::debuginfo::{DebugInfo, Site};
use sluice_runtime::tracefs::{uprobe_offset, ProbeTarget};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// The C programs whose functions are compared (the PIC pair needs a library: left out).
const SOURCES: &[&str] = &[
    "vars.c", "types.c", "chain.c", "inline.c", "line.c", "lines.c",
];

/// Places and fetch-args of one line, sorted; `Err` when the line is refused.
type Answer = Result<BTreeSet<(String, Vec<String>)>, String>;

/// One function to compare: its name, the parameters fetched, whether it is out of line, and
/// the lines to ask.
struct Func {
    name: String,
    vars: Vec<String>,
    lines: Vec<u32>,
    /// Our answer per line in `lines`.
    ours: Vec<Answer>,
}

/// Function definitions in a C source: (name, parameter names), read from lines such as
/// `__attribute__((noinline)) long walk(long n, int step)` and the `DEFINE_OP(name, arg)`
/// macro of `lines.c`.
fn definitions(src: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for l in src.lines() {
        let l = l.trim_end();
        if let Some(rest) = l.strip_prefix("DEFINE_OP(") {
            let (name, arg) = rest.trim_end_matches(')').split_once(',').unwrap();
            out.push((name.trim().to_owned(), vec![arg.trim().to_owned()]));
            continue;
        }
        if l.starts_with([' ', '\t', '#', '/', '*']) || !l.ends_with(')') || l.contains(';') {
            continue;
        }
        // The parameter list is the last top-level parenthesis.
        let mut depth = 0;
        let mut open = None;
        for (i, c) in l.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        open = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(open) = open else { continue };
        let name: String = l[..open]
            .chars()
            .rev()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if name.is_empty() || name == "__attribute__" {
            continue;
        }
        let params: Vec<String> = l[open + 1..l.len() - 1]
            .split(',')
            .filter_map(|p| {
                let id: String = p
                    .trim()
                    .chars()
                    .rev()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect();
                (!id.is_empty() && id != "void").then_some(id)
            })
            .take(3)
            .collect();
        out.push((name, params));
    }
    out
}

/// Our answer for one line's sites.
fn ours(sites: &sluice_runtime::Result<Vec<Site>>) -> Answer {
    match sites {
        Ok(v) => Ok(v
            .iter()
            .map(|s| {
                let place = match &s.target {
                    ProbeTarget::Kernel { func, offset } => format!("{func}+{offset}"),
                    ProbeTarget::User { offset, .. } => format!("{offset:#x}"),
                };
                (place, s.perf_fetch_args.clone())
            })
            .collect()),
        Err(e) => Err(e.to_string()),
    }
}

/// perf's answer for `FUNC:L vars` in `target` (`-x BIN` or `-k VMLINUX`).
fn perf(target: &[&str], func: &str, line: u32, vars: &[String]) -> Answer {
    let spec = std::iter::once(format!("{func}:{line}"))
        .chain(vars.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new("perf")
        .arg("probe")
        .args(target)
        .args(["-D", &spec])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        if out.status.code().is_none() {
            panic!(
                "perf probe {target:?} -D '{spec}' crashed: {:?}",
                out.status
            );
        }
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
    }
    Ok(text
        .lines()
        .filter(|l| l.starts_with("p:"))
        .map(|l| {
            let mut f = l.split_whitespace().skip(1);
            let place = f.next().unwrap();
            // A uprobe's place is BIN:0xOFFSET.
            let place = match place.rsplit_once(':') {
                Some((_, off)) if off.starts_with("0x") => {
                    format!("{:#x}", u64::from_str_radix(&off[2..], 16).unwrap())
                }
                _ => place.to_owned(),
            };
            (place, f.map(str::to_owned).collect())
        })
        .collect())
}

/// Runs `jobs` on a few threads (perf is a process per call).
fn parallel<T: Send, R: Send>(jobs: Vec<T>, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let n = jobs.len();
    let queue = Mutex::new(jobs.into_iter().enumerate().collect::<Vec<_>>());
    let results = Mutex::new((0..n).map(|_| None).collect::<Vec<Option<R>>>());
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| loop {
                let Some((i, job)) = queue.lock().unwrap().pop() else {
                    break;
                };
                let r = f(&job);
                results.lock().unwrap()[i] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(Option::unwrap)
        .collect()
}

fn can_run_perf() -> bool {
    if !rustix::process::geteuid().is_root() {
        skip("perf probe -D reads tracefs: needs root");
        return false;
    }
    if !Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        skip("perf (Debian linux-perf) is the oracle of line placement");
        return false;
    }
    true
}

/// The start and size of `func`'s symbol (`nm -S`), when it has one (not inlined-only).
fn symbol_extent(bin: &Path, func: &str) -> Option<(u64, u64)> {
    let out = Command::new("nm").arg("-S").arg(bin).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() == 4 && f[3] == func).then(|| {
            (
                u64::from_str_radix(f[0], 16).unwrap(),
                u64::from_str_radix(f[1], 16).unwrap(),
            )
        })
    })
}

/// The file offsets of every function symbol of `bin` (`nm`, `T`/`t`).
fn function_entries(bin: &Path) -> BTreeSet<u64> {
    let out = Command::new("nm").arg(bin).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && matches!(f[1], "T" | "t")).then(|| uprobe_offset(bin, f[2], 0).ok())?
        })
        .collect()
}

/// Builds `src` with `cc` at `-O{opt}`; `None` after saying why when the compiler is missing.
fn build(dir: &Path, src: &str, cc: &str, opt: &str) -> Option<PathBuf> {
    let bin = dir.join(format!("{}_{cc}_O{opt}", src.trim_end_matches(".c")));
    let mut c = Command::new(cc);
    c.args(["-g", &format!("-O{opt}"), "-no-pie", "-o"])
        .arg(&bin);
    if cc == "clang" {
        c.arg("-gdwarf-4");
    }
    if c.arg(repo().join("tests/dwarf").join(src))
        .status()
        .is_ok_and(|s| s.success())
    {
        Some(bin)
    } else {
        if cc == "clang" && !required() {
            eprintln!("SKIPPED: clang is not installed (CI installs it)");
        } else {
            skip(&format!("{cc} is needed to build tests/dwarf/{src}"));
        }
        None
    }
}

/// Our lines of `func` in the file `info` reads, as `spec_head(vars)` lists them.
fn our_lines(info: &DebugInfo, spec: &str) -> Option<(Vec<u32>, Vec<Answer>)> {
    let Ok(Section::Probe(p)) = probe::parse(spec) else {
        panic!("{spec}")
    };
    let lines = info.lines(&p).ok()?;
    Some((
        lines.iter().map(|(l, _)| *l).collect(),
        lines.iter().map(|(_, s)| ours(s)).collect(),
    ))
}

/// perf's answer `b` with the `:x64` ours has put on a fetch-arg where perf has no type:
/// perf takes the size from the type's `DW_AT_byte_size`, which clang leaves off pointer
/// types (`char **argv` reads as `argv=%si`); we know a pointer's size from the address size.
/// Only that difference is forgiven: everything else must match `a` exactly.
fn without_pointer_types(
    b: &BTreeSet<(String, Vec<String>)>,
    a: &BTreeSet<(String, Vec<String>)>,
) -> BTreeSet<(String, Vec<String>)> {
    b.iter()
        .map(|(place, args)| {
            let ours = a.iter().find(|(p, _)| p == place);
            let args = args
                .iter()
                .enumerate()
                .map(|(k, arg)| match ours.and_then(|(_, o)| o.get(k)) {
                    Some(o) if !arg.contains(':') && *o == format!("{arg}:x64") => o.clone(),
                    _ => arg.clone(),
                })
                .collect();
            (place.clone(), args)
        })
        .collect()
}

/// Compares one function's lines 0..=`last`: returns the differences (empty: agreed), how
/// many lines were compared, and the asserted differences met.
fn compare(
    label: &str,
    f: &Func,
    last: u32,
    perf_answers: &[Answer],
    outside: &dyn Fn(&str) -> Option<bool>,
) -> (Vec<String>, usize, Known) {
    let mut diffs = Vec::new();
    let mut past_end = 0;
    let mut known = Known::default();
    for line in 0..=last {
        let perf = &perf_answers[line as usize];
        let ours = f
            .lines
            .iter()
            .position(|&l| l == line)
            .map(|i| f.ours[i].clone())
            .unwrap_or_else(|| Err("no code for that line".into()));
        let vars = f.vars.join(" ");
        match (&ours, perf) {
            (Ok(a), Ok(b)) if a == b => {}
            (Ok(a), Ok(b)) if *a == without_pointer_types(b, a) => {}
            (Err(_), Err(_)) => {}
            (Ok(a), Err(e))
                if e.contains("don't support this variable location")
                    && a.iter()
                        .any(|(_, args)| args.iter().any(|x| x.contains("=\\"))) =>
            {
                known.constants += 1;
            }
            (Err(e), Ok(b))
                if e.contains("cannot be fetched")
                    && b.iter()
                        .any(|(_, args)| args.iter().any(|x| x.contains("=\\deade12d"))) =>
            {
                known.dummies += 1;
            }
            (Err(e), Ok(places)) if e.contains("no code for that line") => {
                // No code of the function: perf's places must be outside it.
                let all_outside = places.iter().all(|(p, _)| outside(p).unwrap_or(false));
                if all_outside {
                    past_end += 1;
                } else {
                    diffs.push(format!(
                        "{label} {}:{line} {vars}: past the end, perf inside: {places:?}",
                        f.name
                    ));
                }
            }
            _ => diffs.push(format!(
                "{label} {}:{line} {vars}:\n  ours {ours:?}\n  perf {perf:?}",
                f.name
            )),
        }
    }
    known.past_end = past_end;
    (diffs, (last + 1) as usize, known)
}

/// Counts of the asserted differences (see the module docs).
#[derive(Default, Debug)]
struct Known {
    past_end: usize,
    constants: usize,
    dummies: usize,
}

impl std::ops::AddAssign for Known {
    fn add_assign(&mut self, o: Known) {
        self.past_end += o.past_end;
        self.constants += o.constants;
        self.dummies += o.dummies;
    }
}

#[test]
fn user_lines_agree_with_perf_probe() {
    if !can_run_perf() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("sluice-line-oracle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut diffs = Vec::new();
    let (mut compared, mut known, mut funcs) = (0, Known::default(), 0);
    for cc in ["gcc", "clang"] {
        for opt in ["0", "2"] {
            for src in SOURCES {
                let Some(bin) = build(&dir, src, cc, opt) else {
                    continue;
                };
                let b = bin.display().to_string();
                let label = format!("{cc} -O{opt} {src}");
                let text = std::fs::read_to_string(repo().join("tests/dwarf").join(src)).unwrap();
                let info = DebugInfo::open(&bin, None).unwrap();
                let entries = function_entries(&bin);
                let mut list = Vec::new();
                for (name, vars) in definitions(&text) {
                    let spec = if vars.is_empty() {
                        format!("uprobe/{b}:{name}")
                    } else {
                        format!("uprobe/{b}:{name}({})", vars.join(", "))
                    };
                    // Not in the DWARF (an inline function never emitted): nothing to place.
                    let Some((lines, ours)) = our_lines(&info, &spec) else {
                        continue;
                    };
                    list.push(Func {
                        name,
                        vars,
                        lines,
                        ours,
                    });
                }
                // Every line the function has, and three past its last.
                let jobs: Vec<(usize, u32)> = list
                    .iter()
                    .enumerate()
                    .flat_map(|(i, f)| {
                        (0..=f.lines.iter().max().unwrap_or(&0) + 3).map(move |l| (i, l))
                    })
                    .collect();
                let answers = parallel(jobs.clone(), |&(i, l)| {
                    perf(&["-x", &b], &list[i].name, l, &list[i].vars)
                });
                for (i, f) in list.iter().enumerate() {
                    let mine: Vec<Answer> = jobs
                        .iter()
                        .zip(&answers)
                        .filter(|((j, _), _)| *j == i)
                        .map(|(_, a)| a.clone())
                        .collect();
                    let extent = symbol_extent(&bin, &f.name)
                        .map(|(_, size)| (uprobe_offset(&bin, &f.name, 0).unwrap(), size));
                    let outside = |p: &str| -> Option<bool> {
                        let off = u64::from_str_radix(p.trim_start_matches("0x"), 16).ok()?;
                        Some(match extent {
                            Some((at, size)) => off < at || off >= at + size,
                            None => entries.contains(&off),
                        })
                    };
                    let last = mine.len() as u32 - 1;
                    let (d, n, k) = compare(&label, f, last, &mine, &outside);
                    diffs.extend(d);
                    compared += n;
                    known += k;
                    funcs += 1;
                }
            }
        }
    }
    eprintln!(
        "{funcs} functions, {compared} lines compared with perf probe -D; asserted differences: \
         {known:?}; {} other differences",
        diffs.len()
    );
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The cached Debian amd64 vmlinux with DWARF: `SLUICE_VMLINUX`, else
/// `${SLUICE_CACHE:-$HOME/.cache/sluice}/guest/amd64/current/vmlinux`. Missing: SKIPPED, or a
/// failure with `SLUICE_REQUIRE_VMLINUX=1` (CI fetches the images first).
fn vmlinux() -> Option<PathBuf> {
    let path = std::env::var_os("SLUICE_VMLINUX")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let cache = std::env::var_os("SLUICE_CACHE").map_or_else(
                || Path::new(&std::env::var_os("HOME").unwrap_or_default()).join(".cache/sluice"),
                PathBuf::from,
            );
            cache.join("guest/amd64/current/vmlinux")
        });
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("SLUICE_REQUIRE_VMLINUX").is_none_or(|v| v != "1"),
        "no amd64 vmlinux at {} (set SLUICE_VMLINUX) and SLUICE_REQUIRE_VMLINUX=1",
        path.display()
    );
    eprintln!(
        "SKIPPED: no amd64 vmlinux at {} (set SLUICE_VMLINUX)",
        path.display()
    );
    None
}

#[test]
fn kernel_lines_agree_with_perf_probe() {
    let Some(vmlinux) = vmlinux() else {
        return;
    };
    if !can_run_perf() {
        return;
    }
    let v = vmlinux.display().to_string();
    let info = DebugInfo::open(&vmlinux, None).unwrap();
    const LAST: u32 = 80;
    let funcs: Vec<Func> = [
        ("generic_perform_write", &["iocb", "i"][..]),
        ("vfs_read", &["file", "count"][..]),
        ("filemap_read", &["iocb", "iter"][..]),
    ]
    .iter()
    .map(|(name, vars)| {
        let spec = format!("kprobe/{name}({})", vars.join(", "));
        let (lines, ours) = our_lines(&info, &spec).unwrap_or_else(|| panic!("{spec}"));
        Func {
            name: (*name).to_owned(),
            vars: vars.iter().map(|s| (*s).to_owned()).collect(),
            lines,
            ours,
        }
    })
    .collect();
    // perf takes ~0.5-1 s of CPU per call here (it reads the vmlinux DWARF, again for each
    // event of a call, so batching lines saves nothing): 243 calls on a few threads.
    let jobs: Vec<(usize, u32)> = (0..funcs.len())
        .flat_map(|i| (0..=LAST).map(move |l| (i, l)))
        .collect();
    let answers = parallel(jobs.clone(), |&(i, l)| {
        perf(&["-k", &v], &funcs[i].name, l, &funcs[i].vars)
    });
    let mut diffs = Vec::new();
    let (mut compared, mut known) = (0, Known::default());
    for (i, f) in funcs.iter().enumerate() {
        let mine: Vec<Answer> = jobs
            .iter()
            .zip(&answers)
            .filter(|((j, _), _)| *j == i)
            .map(|(_, a)| a.clone())
            .collect();
        // A kernel place is SYMBOL+OFF: outside the function when another symbol holds it.
        let outside = |p: &str| Some(!p.starts_with(&format!("{}+", f.name)));
        let (d, n, k) = compare("vmlinux", f, LAST, &mine, &outside);
        diffs.extend(d);
        compared += n;
        known += k;
    }
    eprintln!(
        "vmlinux: {compared} lines compared with perf probe -k -D; asserted differences: \
         {known:?}; {} other differences",
        diffs.len()
    );
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}
