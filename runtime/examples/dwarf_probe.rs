//! Resolves `perf probe`-style specs in a binary with `sluice_core::dwarf` and prints the
//! uprobe definition lines `perf probe -n -v` would write, for the golden comparison in
//! `tests/golden/dwarf/` and the benchmark beside it.
//!
//! `cargo run --release -p sluice-runtime --example dwarf_probe -- [--exhaustive] BINARY
//! 'SPEC' ['SPEC' ...]` (a spec per argument: `FUNC[+OFF|:LINE|%return] [ARG ...]`). A
//! separate debug file is looked for through the build-id and `.gnu_debuglink` candidates.
//! The files are mapped read-only (the runtime's `Mmap`), and the pages of `.debug_info`
//! the unit index only grepped are dropped again. `--exhaustive` parses every unit instead
//! of the indexed ones (`Lookup::Exhaustive`), for comparison.

use std::process::ExitCode;

use std::path::Path;

use sluice_core::dwarf::{debug_file_candidates, DebugSections, FetchSyntax, Lookup, Resolver};
use sluice_core::elf::Elf;
use sluice_core::probe::{self, ArgBase, Section};
use sluice_runtime::sys::mmap::Mmap;

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let lookup = if args.first().is_some_and(|a| a == "--exhaustive") {
        args.remove(0);
        Lookup::Exhaustive
    } else {
        Lookup::Indexed
    };
    let Some((path, specs)) = args.split_first() else {
        eprintln!("usage: dwarf_probe [--exhaustive] BINARY SPEC...");
        return ExitCode::from(2);
    };
    let code_map = match Mmap::open(Path::new(path)) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = match Elf::parse(code_map.bytes()) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The debug file: this one if it has DWARF, else the first candidate that exists.
    let mut debug_map = None;
    if DebugSections::load(&code).is_err() {
        for cand in debug_file_candidates(&code, path) {
            if let Ok(b) = Mmap::open(Path::new(&cand)) {
                debug_map = Some(b);
                break;
            }
        }
    }
    let debug_elf = match debug_map.as_ref().map(|m| Elf::parse(m.bytes())) {
        Some(Ok(e)) => e,
        Some(Err(e)) => {
            eprintln!("debug file: {e}");
            return ExitCode::FAILURE;
        }
        None => code,
    };
    let sections = match DebugSections::load(&debug_elf) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let map = debug_map.as_ref().unwrap_or(&code_map);
    let release = |part: &[u8]| {
        map.release(part);
    };
    let resolver = match Resolver::new(&code, &sections) {
        Ok(r) => r.with_lookup(lookup).with_release(&release),
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stem = path
        .rsplit('/')
        .next()
        .unwrap_or(path)
        .replace(['.', '-'], "_");
    let mut failed = false;
    for spec in specs {
        println!("## {spec}");
        // The grammar takes at most 4 fetched args (r2..r5); resolve longer lists (the peers'
        // probe lists have 5) in chunks of 4 and join the chunks per site.
        let mut words = spec.split_whitespace();
        let place = words.next().unwrap_or("");
        let all: Vec<&str> = words.collect();
        let chunks: Vec<Vec<&str>> = if all.is_empty() {
            vec![Vec::new()]
        } else {
            all.chunks(4).map(<[&str]>::to_vec).collect()
        };
        let mut lines: Vec<String> = Vec::new();
        let mut error = None;
        for chunk in &chunks {
            let text = std::iter::once(place)
                .chain(chunk.iter().copied())
                .collect::<Vec<_>>()
                .join(" ");
            let parsed = match probe::parse(&text) {
                Ok(Section::Probe(p)) => p,
                Ok(_) => {
                    error = Some("not a probe spec".to_string());
                    break;
                }
                Err(e) => {
                    error = Some(format!("parse error: {e}"));
                    break;
                }
            };
            let sites = match resolver.resolve_spec(&parsed) {
                Ok(s) => s,
                Err(e) => {
                    error = Some(format!("error: {e}"));
                    break;
                }
            };
            if lines.is_empty() {
                let kind = if parsed.kind().is_return() { 'r' } else { 'p' };
                let func = parsed.func().unwrap_or("");
                let event = match parsed.place() {
                    _ if parsed.kind().is_return() => format!("{func}__return"),
                    probe::Place::Line(l) => format!("{func}_L{l}"),
                    _ => func.to_string(),
                };
                lines = sites
                    .iter()
                    .map(|site| {
                        format!(
                            "{kind}:probe_{stem}/{event} BINARY:{:#x}",
                            site.file_offset.unwrap_or(site.address)
                        )
                    })
                    .collect();
            }
            let exprs = parsed.args().exprs();
            for (line, site) in lines.iter_mut().zip(&sites) {
                for (arg, expr) in site.args.iter().zip(exprs.iter().filter(|a| !a.is_err())) {
                    if expr.base() == ArgBase::Retval {
                        // perf leaves the return value to the tracer's own `$retval`.
                        line.push_str(" $retval");
                        continue;
                    }
                    match arg.fetch_arg(resolver.arch(), FetchSyntax::Perf) {
                        Ok(s) => {
                            line.push(' ');
                            line.push_str(&s);
                        }
                        Err(e) => line.push_str(&format!(" #{}: {e}", arg.name)),
                    }
                }
            }
        }
        match error {
            Some(e) => {
                println!("# {e}");
                failed = true;
            }
            None => {
                for l in lines {
                    println!("{l}");
                }
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
