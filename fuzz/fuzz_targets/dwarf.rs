//! Fuzz DWARF resolution: debug info comes from untrusted binaries (`--debuginfo FILE`, the
//! probed executable itself).
//!
//! The input is an ELF file with DWARF (seeds: `tests/dwarf/*.c` built with gcc -g at -O0
//! and -O2). It goes through `Elf::parse`, `DebugSections::load` and `Resolver::new`, then
//! `resolve_spec` of fixed specs naming functions, variables, member chains, lines, `+0` and
//! `%return` of the seeds, and of one more spec taken from the input's tail: the text after
//! the last newline in the last 128 bytes (appending it leaves the ELF parseable). Every
//! resolved argument is spelled (`fetch_arg`, all three syntaxes) and turned into prologue
//! input (`to_arg_loc`); the arguments of a site that all convert are generated as a prologue,
//! which must validate. Properties: no panic, bounded time (run with `-timeout=10`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_core::dwarf::{DebugSections, FetchSyntax, Lookup, PrologueSkip, Resolver};
use sluice_core::elf::Elf;
use sluice_core::probe::{self, Section};
use sluice_core::prologue::{self, ArgLocs, Memory};
use sluice_core::Insn;

/// Specs of the seeds (tests/golden/dwarf/vars_specs.txt and chain.c), one per kind of place
/// and argument.
const SPECS: &[&str] = &[
    "process file bytes sc us",
    "process offset file->f_mapping->a_ops->flags file->small.s file->slots[2] file->name[1]",
    "process+0 file bytes",
    "process:8 slot i offset",
    "twice a b r",
    "scale x factor scaled",
    "sum_bytes buf[0] total",
    "sum_bytes%return $retval",
    "main counter byte_global global_map.tag neg_short",
    "main argc argv[0]:string",
    "generic_perform_write file->f_mapping->a_ops bytes offset chunk",
    "generic_perform_write:5 chunk written",
    "generic_perform_write%return $retval",
    "nosuchfunc x",
];

fn tail_spec(data: &[u8]) -> Option<&str> {
    let tail = &data[data.len().saturating_sub(128)..];
    let nl = tail.iter().rposition(|&b| b == b'\n')?;
    let text = core::str::from_utf8(&tail[nl + 1..]).ok()?;
    (!text.is_empty()).then_some(text)
}

fn run(resolver: &Resolver<'_>, spec: &str) {
    let Ok(Section::Probe(p)) = probe::parse(spec) else {
        return;
    };
    let sites = match resolver.resolve_spec(&p) {
        Ok(s) => s,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let arch = resolver.arch();
    let memory = Memory::User;
    for site in &sites {
        let _ = resolver.file_offset(site.address);
        let _ = resolver.load_bias(site.address);
        let mut locs = ArgLocs::new(arch, memory);
        let mut all = true;
        for arg in &site.args {
            for syntax in [
                FetchSyntax::Perf,
                FetchSyntax::Kprobe,
                FetchSyntax::KprobeAnchored { anchor: 0x1000 },
                FetchSyntax::Uprobe { load_bias: 0x1000 },
            ] {
                let _ = arg.fetch_arg(arch, syntax).map_err(|e| e.to_string());
            }
            let _ = arg.location.reads();
            match arg.location.to_arg_loc(arch, &arg.name) {
                Ok(l) => {
                    let _ = l.fetch_arg(0).to_string();
                    all &= locs.push(l).is_ok();
                }
                Err(e) => {
                    let _ = e.to_string();
                    all = false;
                }
            }
        }
        if all {
            let mut buf = [Insn::default(); prologue::MAX_INSNS];
            let n = prologue::write(&locs, &mut buf).expect("MAX_INSNS always suffices");
            sluice_core::disasm::validate(&buf[..n]).expect("a generated prologue validates");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(elf) = Elf::parse(data) else {
        return;
    };
    let Ok(sections) = DebugSections::load(&elf) else {
        return;
    };
    let Ok(resolver) = Resolver::new(&elf, &sections) else {
        return;
    };
    let _ = resolver.unit_count().map_err(|e| e.to_string());
    for spec in SPECS {
        run(&resolver, spec);
    }
    if let Some(spec) = tail_spec(data) {
        run(&resolver, spec);
        // The walk over every unit too: the index must not be the only path fuzzed.
        if let Ok(entry) = Resolver::new(&elf, &sections) {
            let entry = entry
                .with_prologue_skip(PrologueSkip::Never)
                .with_lookup(Lookup::Exhaustive);
            run(&entry, spec);
        }
    }
});
