//! `sluice prologue [--arch ARCH] [--debuginfo FILE] [--emit OUT | --lines] 'SPEC'`: the
//! instructions sluice puts before a probe's program to fetch its arguments, printed as perf
//! printed them, with the equivalent kprobe-tracer fetch-args. Needs no kernel.
//!
//! The prologue is for the running kernel's `pt_regs` and, for a uprobe, the calling
//! convention of its binary (an i386 binary under an x86-64 kernel reads the stack through
//! the 64-bit `sp`), whatever sluice was built for; `--arch` makes it that architecture's
//! kernel and code both.
//!
//! Arguments that name variables are resolved through DWARF: a uprobe's in the binary its
//! spec names (or FILE), a kprobe's in FILE (a `vmlinux` with debug info). Each site (the
//! function, every inlined instance) gets its own prologue and fetch-args, and its
//! *resolved spec* (`spec:`): the same probe with the site's place and a fetch-arg for each
//! variable, which needs no debug info where it is recorded. `--emit OUT` writes those
//! specs, one per line, for `sluice record --event PROG=@OUT` (the program attached at
//! every one) on a machine without the debug info (an appliance whose kernel's `vmlinux`
//! stays on the build host).
//!
//! `--lines` lists every line of the function with code (`FUNC:LINE`, relative to its
//! declaration) and, per line, the fetch-args of SPEC's variables there or why they cannot
//! be fetched: where to probe to see them.

use crate::fail::Failure;
use sluice_core::arch::{Arch, Platform};
use sluice_core::disasm::Listing;
use sluice_core::probe::{self, Place, ProbeSpec, Section, Target};
use sluice_core::prologue::{self, Prologue, Value, NEEDS_DEBUG_INFO};
use sluice_core::Error;
use sluice_runtime::probe::debuginfo::{self, DebugInfo};
use sluice_runtime::tracefs::ProbeTarget;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Parses `prologue`'s arguments and runs it.
pub fn run(parser: &mut lexopt::Parser) -> Result<(), Failure> {
    use lexopt::prelude::*;
    let mut arch = None;
    let mut spec = None;
    let mut debuginfo: Option<PathBuf> = None;
    let mut emit: Option<PathBuf> = None;
    let mut lines = false;
    while let Some(arg) = parser.next().map_err(crate::fail::usage)? {
        match arg {
            Long("arch") | Short('a') => {
                let name = parser
                    .value()
                    .map_err(crate::fail::usage)?
                    .string()
                    .map_err(crate::fail::usage)?;
                arch = Some(Arch::from_name(&name).ok_or_else(|| {
                    Failure::usage_msg(format!(
                        "unknown architecture '{name}' (x86_64, i386 or aarch64)"
                    ))
                })?);
            }
            Long("debuginfo") | Short('d') => {
                debuginfo = Some(parser.value().map_err(crate::fail::usage)?.into());
            }
            Long("emit") => emit = Some(parser.value().map_err(crate::fail::usage)?.into()),
            Long("lines") => lines = true,
            Value(v) if spec.is_none() => {
                spec = Some(v.string().map_err(crate::fail::usage)?);
            }
            other => return Err(crate::fail::usage(other.unexpected())),
        }
    }
    let spec = spec.ok_or_else(|| {
        Failure::usage_msg("prologue: missing SPEC, e.g. 'kprobe/vfs_read(void *, char *buf, unsigned long count)'".into())
    })?;
    let parsed = parse(&spec)?;
    if lines {
        if emit.is_some() {
            return Err(Failure::usage_msg(
                "prologue: --lines lists lines; --emit writes the specs of one place".into(),
            ));
        }
        return crate::console::out(&render_lines(arch, &spec, &parsed, debuginfo.as_deref())?);
    }
    if debuginfo::spec_needs_debug_info(&parsed) {
        let (text, specs) = render_sites(arch, &spec, &parsed, debuginfo.as_deref())?;
        if let Some(out) = &emit {
            write_specs(out, &spec, &specs)?;
        }
        return crate::console::out(&text);
    }
    if let Some(out) = &emit {
        // Nothing to resolve: the spec is its own resolved form.
        write_specs(out, &spec, &[Ok(spec.clone())])?;
    }
    let platform = match arch {
        // `--arch` is both the kernel and the code.
        Some(a) => Platform::from(a),
        None => match sluice_runtime::probe::probe_platform(&parsed) {
            Ok(p) => p,
            Err(sluice_runtime::Error::NoArchTables) => {
                Platform::from(Arch::native().unwrap_or(Arch::X86_64))
            }
            Err(e) => return Err(Failure::input(format!("'{spec}': {e}"))),
        },
    };
    crate::console::out(&render(platform, &spec)?)
}

fn parse(spec: &str) -> Result<ProbeSpec<'_>, Failure> {
    match probe::parse(spec).map_err(|e| Failure::input(format!("'{spec}': {e}")))? {
        Section::Probe(p) => Ok(p),
        Section::Title(_) => Err(Failure::input(format!(
            "'{spec}': not a probe spec (kprobe/FUNC(...), uprobe/PATH:FUNC(...), or perf's FUNC[+OFF] ARG ...)"
        ))),
    }
}

/// Writes the resolved specs, one per line; fails if any site has none.
fn write_specs(out: &Path, spec: &str, specs: &[Result<String, String>]) -> Result<(), Failure> {
    let mut text = String::new();
    for (n, s) in specs.iter().enumerate() {
        match s {
            Ok(s) => {
                text.push_str(s);
                text.push('\n');
            }
            Err(e) => {
                return Err(Failure::input(format!(
                    "'{spec}': site {}: no resolved spec: {e}",
                    n + 1
                )))
            }
        }
    }
    std::fs::write(out, text)
        .map_err(|e| Failure::input(format!("{}: cannot write: {e}", out.display())))
}

/// The file with the code (and perhaps the DWARF) of `parsed`, and a separate debug file.
fn code_and_debug<'d>(
    spec: &str,
    parsed: &ProbeSpec<'_>,
    debug: Option<&'d Path>,
) -> Result<(PathBuf, Option<&'d Path>), Failure> {
    // The code: a uprobe's binary (FILE when the binary is not on this machine), else FILE.
    let code = match (parsed.target(), debug) {
        (Target::User { path, .. }, Some(d)) if !Path::new(path).exists() => d.to_path_buf(),
        (Target::User { path, .. }, _) => PathBuf::from(path),
        (_, Some(d)) => d.to_path_buf(),
        (_, None) if matches!(parsed.place(), Place::Line(_)) => {
            return Err(Failure::input(format!(
                "'{spec}': a :LINE place is found in the line table: give a vmlinux (or \
                 module) with DWARF (--debuginfo FILE)"
            )));
        }
        (_, None) => {
            let first = parsed
                .args()
                .exprs()
                .iter()
                .position(debuginfo::needs_debug_info)
                .unwrap_or(0);
            let arg = parsed
                .args()
                .exprs()
                .get(first)
                .map(ToString::to_string)
                .unwrap_or_default();
            return Err(Failure::input(format!(
                "'{spec}': argument {} '{arg}' needs debug info: give a vmlinux (or module) \
                 with DWARF (--debuginfo FILE)",
                first + 1
            )));
        }
    };
    let separate = debug.filter(|d| *d != code.as_path());
    Ok((code, separate))
}

/// `--arch A` must be the file's architecture (`got`, read from the mapped file).
fn check_arch(
    arch: Option<Arch>,
    spec: &str,
    code: &Path,
    got: Option<Arch>,
) -> Result<(), Failure> {
    if let Some(want) = arch {
        if got.is_some_and(|g| g != want) {
            return Err(Failure::input(format!(
                "'{spec}': --arch {want}, but {} is {}",
                code.display(),
                got.map_or_else(String::new, |g| g.to_string())
            )));
        }
    }
    Ok(())
}

/// `--lines`: per line of the function with code, the sites and fetch-args of the spec's
/// arguments there, or why they cannot be fetched.
fn render_lines(
    arch: Option<Arch>,
    spec: &str,
    parsed: &ProbeSpec<'_>,
    debug: Option<&Path>,
) -> Result<String, Failure> {
    let func = parsed.func().ok_or_else(|| {
        Failure::input(format!(
            "'{spec}': --lines needs a function (kprobe/FUNC, uprobe/PATH:FUNC or FUNC)"
        ))
    })?;
    if !matches!(parsed.place(), Place::Entry) {
        return Err(Failure::input(format!(
            "'{spec}': --lines scans the whole function: give it without +OFF, :LINE or %return"
        )));
    }
    let (code, separate) = code_and_debug(spec, parsed, debug)?;
    let info =
        DebugInfo::open(&code, separate).map_err(|e| Failure::input(format!("'{spec}': {e}")))?;
    check_arch(arch, spec, &code, info.arch())?;
    let info = match arch {
        Some(a) => info.for_kernel(a),
        None => info,
    };
    let scan = info
        .lines(parsed)
        .map_err(|e| Failure::input(format!("'{spec}': {e}")))?;
    let mut out = String::new();
    for (line, found) in scan {
        match found {
            Ok(sites) => {
                for site in sites {
                    let _ = writeln!(
                        out,
                        "{func}:{line}\t{}\t{}",
                        place_of(&site.target),
                        site.perf_fetch_args.join(" ")
                    );
                }
            }
            Err(e) => {
                // The error names the file and function again: keep what follows them.
                let text = e.to_string();
                let why = text
                    .split_once(&format!("{func}: "))
                    .map_or(text.as_str(), |(_, w)| w);
                let _ = writeln!(out, "{func}:{line}\t-\t{why}");
            }
        }
    }
    Ok(out)
}

fn place_of(target: &ProbeTarget) -> String {
    match target {
        ProbeTarget::User { path, offset, .. } => format!("{}:{offset:#x}", path.display()),
        ProbeTarget::Kernel { func, offset } => format!("{func}+{offset}"),
    }
}

/// The text for a spec whose arguments name variables: per site its place, prologue and
/// fetch-args (as `perf probe -n -v` spells them, then as sluice writes them to tracefs),
/// and its resolved spec; and the resolved specs (or why a site has none).
fn render_sites(
    arch: Option<Arch>,
    spec: &str,
    parsed: &ProbeSpec<'_>,
    debug: Option<&Path>,
) -> Result<(String, Vec<Result<String, String>>), Failure> {
    let (code, separate) = code_and_debug(spec, parsed, debug)?;
    let info =
        DebugInfo::open(&code, separate).map_err(|e| Failure::input(format!("'{spec}': {e}")))?;
    check_arch(arch, spec, &code, info.arch())?;
    let info = match arch {
        Some(a) => info.for_kernel(a),
        None => info,
    };
    let sites = info
        .sites(parsed)
        .map_err(|e| Failure::input(format!("'{spec}': {e}")))?;
    let mut out = String::new();
    let mut specs = Vec::new();
    let kind = if parsed.kind().is_return() { 'r' } else { 'p' };
    for (n, site) in sites.iter().enumerate() {
        let _ = write!(
            out,
            "site {}: {} at {:#x}",
            n + 1,
            site.function,
            site.address
        );
        if let Some(off) = site.file_offset {
            let _ = write!(out, " (file offset {off:#x})");
        }
        if site.inlined {
            out.push_str(" [inlined]");
        }
        out.push('\n');
        let _ = writeln!(out, "bpf_prologue: insn num={}", site.prologue.len());
        for line in &Listing::new(&site.prologue) {
            let _ = writeln!(out, "{line}");
        }
        let _ = writeln!(out, "fetch-args: {}", site.perf_fetch_args.join(" "));
        if let Some(line) = passed_and_recorded(parsed, &site.perf_fetch_args) {
            let _ = writeln!(out, "{line}");
        }
        let place = place_of(&site.target);
        let _ = writeln!(out, "tracefs: {kind} {place} {}", site.fetch_args.join(" "));
        let resolved = debuginfo::resolved_spec(parsed, site).map_err(|e| e.to_string());
        match &resolved {
            Ok(r) => {
                let _ = writeln!(out, "spec: {r}");
            }
            Err(e) => {
                let _ = writeln!(out, "spec: none ({e})");
            }
        }
        specs.push(resolved);
    }
    Ok((out, specs))
}

/// `passed in r2..r5: a b c d; recorded only: s e`: which of a site's fetch-args (one per
/// argument but `$err`, in order) the program gets, and which the kernel only records;
/// `None` when every one is passed (the listing then reads as before).
fn passed_and_recorded(parsed: &ProbeSpec<'_>, fetch_args: &[String]) -> Option<String> {
    let mut names = fetch_args
        .iter()
        .map(|a| a.split_once('=').map_or(a.as_str(), |(n, _)| n));
    let (mut passed, mut recorded) = (Vec::new(), Vec::new());
    for (i, a) in parsed.args().exprs().iter().enumerate() {
        if a.is_err() {
            passed.push("$err");
            continue;
        }
        let name = names.next().unwrap_or("?");
        if parsed.args().is_passed(i) {
            passed.push(name);
        } else {
            recorded.push(name);
        }
    }
    if recorded.is_empty() {
        return None;
    }
    let passed = if passed.is_empty() {
        "none".to_owned()
    } else {
        passed.join(" ")
    };
    Some(format!(
        "passed in r2..r5: {passed}; recorded only: {}",
        recorded.join(" ")
    ))
}

/// The text `sluice prologue` prints for `spec` on `arch` (the kernel's `pt_regs`, the
/// probed code's ABI).
fn render(arch: Platform, spec: &str) -> Result<String, Failure> {
    let parsed = probe::parse(spec).map_err(|e| Failure::input(format!("'{spec}': {e}")))?;
    let probe = match parsed {
        Section::Probe(p) => p,
        Section::Title(_) => {
            return Err(Failure::input(format!(
                "'{spec}': not a probe spec (kprobe/FUNC(...), uprobe/PATH:FUNC(...), or perf's FUNC[+OFF] ARG ...)"
            )))
        }
    };
    // The fetch-args as written (`@+FILEOFFSET` kept, as the tracer takes it), and the
    // locations the prologue reads (those at their distance from the probe's file offset).
    let locs = prologue::from_typed_args(arch, probe.kind(), probe.args()).and_then(|l| {
        let mut placed = l.clone();
        sluice_runtime::probe::place_file_offsets(&probe, &mut placed).map(|()| (l, placed))
    });
    let (locs, placed) = locs.map_err(|e| match e {
        Error::Usage { what, value } if what == NEEDS_DEBUG_INFO => {
            let arg = usize::try_from(value)
                .ok()
                .and_then(|v| v.checked_sub(1))
                .and_then(|i| probe.args().exprs().get(i));
            match arg {
                Some(arg) => Failure::input(format!(
                    "'{spec}': argument {value} '{arg}' {NEEDS_DEBUG_INFO}"
                )),
                None => Failure::input(format!("'{spec}': {NEEDS_DEBUG_INFO}")),
            }
        }
        Error::Usage { what, value } => {
            Failure::input(format!("'{spec}': argument {value}: {what} ({arch})"))
        }
        e => Failure::input(format!("'{spec}': {e}")),
    })?;
    let code: Prologue =
        Prologue::generate(&placed).map_err(|e| Failure::input(format!("'{spec}': {e}")))?;
    let mut out = if locs.values().is_empty() {
        "bpf_prologue: none (no value passed in r2..r5)\n".to_owned()
    } else {
        code.to_string()
    };
    let _ = writeln!(out, "fetch-args ({arch}, {spec}):");
    // Each passed value is named by its place in the list, as the probe's fetch-args are.
    let passed = (0..probe.args().len()).filter(|&i| probe.args().is_passed(i));
    for ((j, v), i) in locs.values().iter().enumerate().zip(passed) {
        let reg = j + 2;
        match v {
            Value::Fetch(loc) => {
                let _ = writeln!(out, "  r{reg}: {}", loc.fetch_arg(i + 1));
            }
            Value::Err => {
                let _ = writeln!(
                    out,
                    "  r{reg}: $err (0, or the 1-based index of the argument whose read failed)"
                );
            }
        }
    }
    // Strings and the values past r5: the kernel records them beside the sample.
    for (i, arg) in probe.args().exprs().iter().enumerate() {
        if probe.args().is_passed(i) {
            continue;
        }
        let text = sluice_runtime::probe::fetch_arg(i, arg)
            .map_err(|why| Failure::input(format!("'{spec}': argument {} '{arg}' {why}", i + 1)))?;
        if let Some(text) = text {
            let _ = writeln!(out, "  recorded only: {text}");
        }
    }
    Ok(out)
}
