//! `sluice prologue [--arch ARCH] 'SPEC'`: the instructions sluice puts before a probe's
//! program to fetch its arguments, printed as perf printed them, with the equivalent
//! kprobe-tracer fetch-args. Needs no kernel.

use crate::fail::Failure;
use sluice_core::arch::Arch;
use sluice_core::probe::{self, Section};
use sluice_core::prologue::{self, Prologue, Value, NEEDS_DEBUG_INFO};
use sluice_core::Error;
use std::fmt::Write as _;

/// Parses `prologue`'s arguments and runs it.
pub fn run(parser: &mut lexopt::Parser) -> Result<(), Failure> {
    use lexopt::prelude::*;
    let mut arch = None;
    let mut spec = None;
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
            Value(v) if spec.is_none() => {
                spec = Some(v.string().map_err(crate::fail::usage)?);
            }
            other => return Err(crate::fail::usage(other.unexpected())),
        }
    }
    let spec = spec.ok_or_else(|| {
        Failure::usage_msg("prologue: missing SPEC, e.g. 'kprobe/vfs_read(void *, char *buf, unsigned long count)'".into())
    })?;
    let arch = arch.or(Arch::native()).unwrap_or(Arch::X86_64);
    print!("{}", render(arch, &spec)?);
    Ok(())
}

/// The text `sluice prologue` prints for `spec` on `arch`.
fn render(arch: Arch, spec: &str) -> Result<String, Failure> {
    let parsed = probe::parse(spec).map_err(|e| Failure::input(format!("'{spec}': {e}")))?;
    let probe = match parsed {
        Section::Probe(p) => p,
        Section::Title(_) => {
            return Err(Failure::input(format!(
                "'{spec}': not a probe spec (kprobe/FUNC(...), uprobe/PATH:FUNC(...), or perf's FUNC[+OFF] ARG ...)"
            )))
        }
    };
    let locs =
        prologue::from_typed_args(arch, probe.kind(), probe.args()).map_err(|e| match e {
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
        Prologue::generate(&locs).map_err(|e| Failure::input(format!("'{spec}': {e}")))?;
    let mut out = code.to_string();
    let _ = writeln!(out, "fetch-args ({arch}, {spec}):");
    let mut fetched = 0usize;
    for (j, v) in locs.values().iter().enumerate() {
        let reg = j + 2;
        match v {
            Value::Fetch(loc) => {
                fetched += 1;
                let _ = writeln!(out, "  r{reg}: {}", loc.fetch_arg(fetched));
            }
            Value::Err => {
                let _ = writeln!(
                    out,
                    "  r{reg}: $err (0, or the 1-based index of the argument whose read failed)"
                );
            }
        }
    }
    Ok(out)
}
