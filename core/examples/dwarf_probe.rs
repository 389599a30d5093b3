//! Resolves `perf probe`-style specs in a binary and prints the uprobe definition lines
//! `perf probe -n -v` would write, for the golden comparison in `tests/golden/dwarf/`.
//!
//! `cargo run --example dwarf_probe --features dwarf -- BINARY 'SPEC' ['SPEC' ...]`
//! (a spec per argument: `FUNC[+OFF|:LINE|%return] [ARG ...]`). A separate debug file is
//! looked for through the build-id and `.gnu_debuglink` candidates.

use std::process::ExitCode;

use sluice_core::dwarf::{debug_file_candidates, DebugSections, FetchSyntax, Resolver};
use sluice_core::elf::Elf;
use sluice_core::probe::{self, Section};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((path, specs)) = args.split_first() else {
        eprintln!("usage: dwarf_probe BINARY SPEC...");
        return ExitCode::from(2);
    };
    let code_bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = match Elf::parse(&code_bytes) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The debug file: this one if it has DWARF, else the first candidate that exists.
    let mut debug_bytes = None;
    if DebugSections::load(&code).is_err() {
        for cand in debug_file_candidates(&code, path) {
            if let Ok(b) = std::fs::read(&cand) {
                debug_bytes = Some(b);
                break;
            }
        }
    }
    let debug_elf = match debug_bytes.as_deref().map(Elf::parse) {
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
    let resolver = match Resolver::new(&code, &sections) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let stem = path.rsplit('/').next().unwrap_or(path).replace(['.', '-'], "_");
    let mut failed = false;
    for spec in specs {
        println!("## {spec}");
        let parsed = match probe::parse(spec) {
            Ok(Section::Probe(p)) => p,
            Ok(_) => {
                println!("# not a probe spec");
                failed = true;
                continue;
            }
            Err(e) => {
                println!("# parse error: {e}");
                failed = true;
                continue;
            }
        };
        match resolver.resolve_spec(&parsed) {
            Ok(sites) => {
                let kind = if parsed.kind().is_return() { 'r' } else { 'p' };
                let func = parsed.func().unwrap_or("");
                let event = if parsed.kind().is_return() {
                    format!("{func}__return")
                } else {
                    func.to_string()
                };
                for site in sites {
                    let mut line = format!(
                        "{kind}:probe_{stem}/{event} BINARY:{:#x}",
                        site.file_offset.unwrap_or(site.address)
                    );
                    for arg in &site.args {
                        match arg.fetch_arg(resolver.arch(), FetchSyntax::Perf) {
                            Ok(s) => {
                                line.push(' ');
                                line.push_str(&s);
                            }
                            Err(e) => {
                                line.push_str(&format!(" #{}: {e}", arg.name));
                            }
                        }
                    }
                    println!("{line}");
                }
            }
            Err(e) => {
                println!("# error: {e}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
