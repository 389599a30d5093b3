//! `sluice inspect [--disasm] [FILE.o]`: what an object holds, without the kernel.

use crate::{demo, fail::Failure};
use sluice_core::disasm::Listing;
use sluice_core::object::map_type_name;
use sluice_core::probe::Section;
use sluice_core::{Object, ObjectStorage};
use std::fmt::Write as _;

/// Parses `inspect`'s arguments and runs it.
pub fn run(parser: &mut lexopt::Parser) -> Result<(), Failure> {
    use lexopt::prelude::*;
    let mut disasm = false;
    let mut load = false;
    let mut opts = sluice_runtime::LoadOptions::default();
    let mut file = None;
    while let Some(arg) = parser.next().map_err(crate::fail::usage)? {
        if let Long(flag) = arg {
            if super::config::is_flag(flag) {
                let flag = flag.to_owned();
                super::config::parse(&flag, parser, &mut opts)?;
                continue;
            }
        }
        match arg {
            Long("disasm") | Short('d') => disasm = true,
            Long("load") => load = true,
            // CO-RE target when /sys/kernel/btf/vmlinux is missing.
            Long("btf") => {
                opts.target_btf = Some(parser.value().map_err(crate::fail::usage)?.into())
            }
            Value(v) if file.is_none() => file = Some(std::path::PathBuf::from(v)),
            other => return Err(crate::fail::usage(other.unexpected())),
        }
    }
    match file {
        Some(path) => {
            let bytes = sluice_runtime::sys::file::read_regular(&path)
                .map_err(|e| Failure::input(format!("{}: cannot read: {e}", path.display())))?;
            inspect(
                &path.display().to_string(),
                &bytes,
                disasm,
                load.then_some(&opts),
            )
        }
        None => inspect(demo::NAME, demo::OBJECT, disasm, load.then_some(&opts)),
    }
}

/// `sluice` with no arguments: the embedded demo object.
pub fn show_default() -> Result<(), Failure> {
    inspect(demo::NAME, demo::OBJECT, true, None)
}

fn inspect(
    name: &str,
    bytes: &[u8],
    disasm: bool,
    load: Option<&sluice_runtime::LoadOptions>,
) -> Result<(), Failure> {
    let mut storage = ObjectStorage::new();
    let obj =
        Object::open(bytes, &mut storage).map_err(|e| Failure::input(format!("{name}: {e}")))?;
    check_btf(&obj).map_err(|e| Failure::input(format!("{name}: .BTF: {e}")))?;
    crate::console::out(&render(name, &obj, disasm))?;
    if let Some(opts) = load {
        crate::console::out(&load_report(name, &obj, opts)?)?;
    }
    Ok(())
}

/// Loads every map and program into the running kernel, reports what the kernel says
/// of each program, and unloads.
fn load_report(
    name: &str,
    obj: &Object<'_, '_>,
    opts: &sluice_runtime::LoadOptions,
) -> Result<String, Failure> {
    let loaded = sluice_runtime::load(obj, opts).map_err(|e| runtime_failure(name, &e))?;
    let report = loaded.report().map_err(|e| runtime_failure(name, &e))?;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "loaded: {} map(s), {} program(s), kern_version {:#x}",
        loaded.maps().len(),
        report.len(),
        loaded.kern_version()
    );
    for r in &report {
        let _ = writeln!(
            s,
            "  {} (section '{}'): id {} tag {} insns after verifier {} jited {} bytes",
            r.name,
            r.section_name,
            r.info.id,
            r.info.tag_hex(),
            r.info.xlated_insns,
            r.info.jited_len
        );
    }
    loaded.unload();
    let _ = writeln!(s, "unloaded");
    Ok(s)
}

/// The object's `.BTF` parsed whole when opening did not need it: BTF that the load would
/// refuse is bad input here already.
fn check_btf(obj: &Object<'_, '_>) -> Result<(), String> {
    let Some(bytes) = obj.btf_bytes().filter(|_| obj.btf().is_none()) else {
        return Ok(());
    };
    let count = sluice_core::btf::Btf::count_types(bytes).map_err(|e| e.to_string())?;
    let mut index = vec![0u32; count as usize];
    obj.parse_btf(&mut index)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn runtime_failure(name: &str, e: &sluice_runtime::Error) -> Failure {
    if e.is_bad_input() {
        return Failure::input(format!("{name}: {e}"));
    }
    let text = e.to_string();
    let mut lines = text.splitn(2, '\n');
    let first = lines.next().unwrap_or_default();
    Failure::runtime(format!("{name}: {first}"), lines.next().map(str::to_string))
}

/// The text `inspect` prints.
pub fn render(name: &str, obj: &Object<'_, '_>, disasm: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "object: {name}");
    let _ = writeln!(s, "license: {}", obj.license().unwrap_or("(none)"));
    match obj.version() {
        Some(v) => {
            let _ = writeln!(
                s,
                "version: {v:#x} ({}.{}.{})",
                v >> 16,
                (v >> 8) & 0xff,
                v & 0xff
            );
        }
        None => {
            let _ = writeln!(s, "version: (none)");
        }
    }
    let _ = writeln!(s, "maps: {}", obj.maps().len());
    for (i, m) in obj.maps().iter().enumerate() {
        let ty = map_type_name(m.map_type).unwrap_or("unknown");
        let _ = write!(
            s,
            "  [{i}] {} type={ty}({}) key={} value={} max_entries={}",
            m.name, m.map_type, m.key_size, m.value_size, m.max_entries
        );
        if let Some(f) = m.map_flags {
            let _ = write!(s, " flags={f:#x}");
        }
        for (label, v) in [
            ("inner_map_idx", m.inner_map_idx),
            ("id", m.id),
            ("pinning", m.pinning),
            ("inner_id", m.inner_id),
            ("inner_idx", m.inner_idx),
        ] {
            if let Some(v) = v {
                let _ = write!(s, " {label}={v}");
            }
        }
        let _ = writeln!(s, " ({}-byte def)", m.layout.size());
    }
    let _ = writeln!(s, "programs: {}", obj.programs().len());
    for (i, p) in obj.programs().iter().enumerate() {
        let _ = writeln!(
            s,
            "  [{i}] section '{}' function {} insns={} relocs={} (maps {})",
            p.section_name,
            p.name.unwrap_or("(none)"),
            p.insn_count(),
            p.reloc_count(),
            p.map_reloc_count()
        );
        if !p.autoload() {
            let _ = writeln!(
                s,
                "      not loaded unless chosen (SEC(\"?{}\")): record --prog {}",
                p.section_name,
                p.name.unwrap_or(p.section_name)
            );
        }
        match p.section() {
            Section::Probe(spec) => {
                let _ = writeln!(s, "      probe: {spec}");
            }
            Section::Title(t)
                if sluice_core::probe::program_type(t)
                    == Some(sluice_core::perf::abi::prog_type::PERF_EVENT) =>
            {
                let _ = writeln!(
                    s,
                    "      sampling: cycles (cpu-clock without hardware counters) on every \
                     CPU at -F HZ"
                );
            }
            Section::Title(t) => match sluice_core::probe::attach_point(t) {
                Some(Ok(point)) if point.kind == sluice_core::probe::AttachKind::Usdt => {
                    usdt_target(&mut s, &point);
                }
                _ => {
                    let _ = writeln!(s, "      title: {t} (no probe spec)");
                }
            },
        }
        if disasm {
            let insns: Vec<_> = p.insns().collect();
            for line in Listing::new(&insns).to_string().lines() {
                let _ = writeln!(s, "      {line}");
            }
        }
    }
    s
}

/// A `usdt/` program's target: its probe, binary and each site read from the binary's
/// notes (or why they cannot be read).
fn usdt_target(s: &mut String, point: &sluice_core::probe::AttachPoint<'_>) {
    let path = std::path::Path::new(point.path.unwrap_or(""));
    let (provider, name) = point.usdt().unwrap_or((point.target, ""));
    let _ = writeln!(s, "      usdt: {provider}:{name} in {}", path.display());
    match sluice_runtime::attach::usdt_sites(path, provider, name) {
        Ok(sites) => {
            for site in sites {
                let semaphore = site.semaphore_offset.map_or(String::new(), |o| {
                    format!(" semaphore={:#x} (offset {o:#x})", site.semaphore)
                });
                let _ = writeln!(
                    s,
                    "        site {:#x} (offset {:#x}){semaphore} args '{}'",
                    site.address, site.file_offset, site.args
                );
            }
        }
        Err(e) => {
            let _ = writeln!(s, "        {e}");
        }
    }
}
