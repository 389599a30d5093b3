//! The runtime's error type: what failed, with the kernel's answer and enough context to act.
//!
//! Each variant's `Display` is one whole message, the text of its source included (as the
//! cli prints it: once, without walking [`source()`](std::error::Error::source)); `source()`
//! gives the underlying error itself to a caller that wants it.

use rustix::io::Errno;
use std::fmt;
use std::sync::Arc;

mod config;
mod problem;

pub use config::ConfigError;

pub use problem::{ArgProblem, KconfigProblem, SpecProblem};

/// `/proc/kallsyms`, the same path as the kernel module's `KALLSYMS` (this module, data only,
/// reaches nothing else of the crate).
const KALLSYMS: &str = "/proc/kallsyms";

/// Result alias of the runtime.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Everything that can go wrong once the kernel is involved.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A system call failed for a reason with no better description.
    Syscall {
        /// The call, e.g. `bpf(BPF_MAP_CREATE)` or `perf_event_open`.
        call: &'static str,
        /// What it was acting on (map or program name), possibly empty.
        subject: String,
        /// The kernel's errno.
        errno: Errno,
    },
    /// The verifier refused a program; `log` is its whole log (bytes, not assumed UTF-8).
    Verifier {
        /// Program name (function name, or section name when unnamed).
        program: String,
        /// The kernel's errno (`EACCES` or `EINVAL` usually).
        errno: Errno,
        /// The verifier log at level 1, without the trailing NUL.
        log: Vec<u8>,
    },
    /// The running kernel lacks a feature (`ENOSYS`, or `EINVAL` for an unknown type).
    Unsupported {
        /// The feature, e.g. `bpf() system call` or `map type 27`.
        feature: String,
        /// The first kernel release that has it.
        min_kernel: &'static str,
        /// The kernel's errno.
        errno: Errno,
    },
    /// The caller lacks the privilege the call needs (`EPERM`/`EACCES`).
    Permission {
        /// The call refused.
        call: &'static str,
        /// The kernel's errno.
        errno: Errno,
        /// Capabilities missing from this thread's effective set.
        missing: Vec<&'static str>,
        /// Current `kernel.unprivileged_bpf_disabled`, if readable.
        unprivileged_bpf_disabled: Option<u32>,
    },
    /// A program index past the object's programs.
    NoProgram {
        /// The index asked for.
        index: usize,
    },
    /// A program index past the loaded programs.
    NoLoadedProgram {
        /// The index asked for.
        index: usize,
    },
    /// The target (kernel) BTF for CO-RE does not parse.
    TargetBtf {
        /// The file, when it was read from one.
        path: Option<String>,
        /// Why.
        source: sluice_core::btf::BtfError,
    },
    /// A program's attach target (`fentry/FUNC`, `tp_btf/NAME`, `lsm/HOOK`) is not in the
    /// running kernel's BTF (nor a module's).
    NoAttachTarget {
        /// The program.
        program: String,
        /// Its section (`fentry/do_unlinkat`).
        section: String,
        /// The BTF type searched (`btf_trace_sched_switch`, `bpf_lsm_file_open`).
        btf_name: String,
        /// Where it was searched (`/sys/kernel/btf/vmlinux and 12 modules`).
        searched: String,
    },
    /// The kernel refused a program at a hook it cannot attach there (`fentry/` without
    /// BPF trampolines, `lsm/` without the BPF LSM): said in the kernel's terms.
    HookRefused {
        /// The program.
        program: String,
        /// Its section (`fentry/do_unlinkat`).
        section: String,
        /// The call refused (`BPF_PROG_LOAD`).
        call: &'static str,
        /// The errno.
        errno: Errno,
        /// Why.
        reason: String,
    },
    /// The object's `.BTF` does not parse.
    ObjectBtf {
        /// Why.
        source: sluice_core::btf::BtfError,
    },
    /// A BTF DATASEC names a section the object does not have (or an empty one).
    DatasecSection {
        /// The DATASEC (section) name.
        datasec: String,
    },
    /// A variable of a BTF DATASEC has no symbol to place it.
    DatasecVariable {
        /// The DATASEC (section) name.
        datasec: String,
        /// The variable.
        variable: String,
    },
    /// The object's BTF has ENUM64 and the kernel does not know it.
    Enum64Unsupported,
    /// The kernel refused the object's BTF (`BPF_BTF_LOAD`).
    BtfRefused {
        /// The kernel's errno.
        errno: Errno,
        /// The kernel's BTF log.
        log: String,
    },
    /// A CO-RE relocation cannot be applied at all.
    CoreRelocation {
        /// The program.
        program: String,
        /// The relocation's index in the program's records.
        index: usize,
        /// Why.
        source: sluice_core::btf::BtfError,
    },
    /// A `.kconfig` extern cannot be given a value.
    Kconfig {
        /// The extern.
        name: String,
        /// Why.
        problem: KconfigProblem,
    },
    /// A key of the wrong size for a map.
    KeySize {
        /// The map.
        map: String,
        /// The map's key size.
        expected: usize,
        /// The size given.
        got: usize,
    },
    /// A value of the wrong size for a map (all CPUs' slots for a per-CPU map).
    ValueSize {
        /// The map.
        map: String,
        /// The bytes a value takes.
        expected: usize,
        /// The size given.
        got: usize,
    },
    /// A per-CPU access on a map that is not per-CPU, or with values of the wrong size.
    NotPerCpu {
        /// The map.
        map: String,
        /// Its type.
        map_type: u32,
        /// Its value size.
        value_size: u32,
        /// The size of the values asked for.
        got: usize,
    },
    /// A map-in-map whose inner map is missing or itself a map-in-map.
    InnerMap {
        /// The outer map.
        map: String,
        /// The inner map's index.
        inner: u32,
    },
    /// A line of `/proc/kallsyms` whose address is not hexadecimal.
    KallsymsAddress {
        /// The line.
        line: String,
    },
    /// `/proc/kallsyms` lists a symbol at address 0: the kernel hides its addresses.
    KallsymsHidden {
        /// The symbol.
        name: String,
        /// `kernel.kptr_restrict`, if readable.
        kptr_restrict: Option<u32>,
    },
    /// `/proc/kallsyms` does not list a symbol a prologue reads (`@SYM`) in the core kernel.
    SymbolNotListed {
        /// The symbol.
        name: String,
    },
    /// A symbol needed for the KASLR offset is missing from `vmlinux`'s symbol table.
    NoLinkSymbol {
        /// The `vmlinux`.
        vmlinux: String,
        /// The symbol.
        name: String,
    },
    /// A symbol needed for the KASLR offset is missing from `/proc/kallsyms`.
    NoRunningSymbol {
        /// The symbol.
        name: String,
    },
    /// Two symbols give different KASLR offsets: the file is not the running kernel's.
    NotRunningKernel {
        /// The `vmlinux`.
        vmlinux: String,
        /// The first symbol.
        first: String,
        /// Its offset.
        first_offset: i64,
        /// The symbol that disagrees.
        name: String,
        /// Its offset.
        offset: i64,
    },
    /// No symbols were given to compute the KASLR offset from.
    NoKaslrSymbols {
        /// The `vmlinux`.
        vmlinux: String,
    },
    /// A program's probe spec does not parse.
    BadSpec {
        /// The program.
        program: String,
        /// The spec.
        spec: String,
        /// Why.
        source: sluice_core::probe::ProbeError,
    },
    /// A program's spec has no probe site in the debug info.
    NoSite {
        /// The program.
        program: String,
        /// The spec.
        spec: String,
    },
    /// Building a program's prologue from its spec failed.
    Prologue {
        /// The program.
        program: String,
        /// The spec.
        spec: String,
        /// Why.
        source: Box<Error>,
    },
    /// sluice has no argument-passing tables for the running architecture.
    NoArchTables,
    /// A uprobe's binary is code of a machine that does not run under the running kernel
    /// (or one sluice has no tables for): its arguments have no known place.
    ForeignBinary {
        /// The binary.
        path: String,
        /// Its ELF `e_machine`.
        machine: u16,
        /// The running kernel's architecture.
        kernel: sluice_core::arch::Arch,
    },
    /// A file is no ELF file.
    NotElf {
        /// The file.
        path: String,
        /// Why.
        source: sluice_core::Error,
    },
    /// A debug file given has no usable DWARF.
    NoDebugSections {
        /// The file.
        path: String,
        /// Why.
        source: sluice_core::dwarf::Error,
    },
    /// No DWARF in a file nor in any of its debug-file candidates.
    NoDebugInfo {
        /// The probed file.
        path: String,
        /// The candidates tried.
        candidates: Vec<String>,
    },
    /// A kernel probe that needs debug info, without a `vmlinux` to find it in.
    NeedsVmlinux {
        /// The kernel function.
        func: String,
        /// Whether for a `:LINE` place (else: for arguments that name variables).
        line: bool,
    },
    /// A probe at a raw file offset, which names no function for the debug info.
    RawOffset {
        /// The file.
        path: String,
    },
    /// A tracepoint with arguments that name variables.
    TracepointVariables {
        /// Its category.
        category: String,
        /// Its name.
        name: String,
    },
    /// A probe that names no function to look up in the debug info.
    NoFunction {
        /// The probed file.
        path: String,
    },
    /// The debug info does not answer for a function (not found, variable not visible ...).
    Dwarf {
        /// The file.
        path: String,
        /// The function.
        func: String,
        /// Why.
        source: sluice_core::dwarf::Error,
    },
    /// The probed file cannot be read as a function's debug info needs (ELF, probe kind).
    DebugFile {
        /// The file.
        path: String,
        /// The function.
        func: String,
        /// Why.
        source: sluice_core::Error,
    },
    /// One site of a function cannot be probed as the spec asks.
    Site {
        /// The probed file.
        path: String,
        /// The function.
        func: String,
        /// The site's link-time address.
        address: u64,
        /// Why.
        problem: SiteProblem,
    },
    /// A site has fewer fetch-args than its spec has arguments.
    FewerFetchArgs {
        /// The spec.
        spec: String,
        /// The site's address.
        address: u64,
    },
    /// A resolved spec has no spelling the spec grammar reads.
    Unspellable {
        /// The spec.
        spec: String,
        /// The site's address.
        address: u64,
        /// The text it reads as.
        text: String,
        /// Why the grammar refuses it; `None`: it parses as no probe spec.
        source: Option<sluice_core::probe::ProbeError>,
    },
    /// Reading a file the runtime needs failed.
    Io {
        /// The path.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The core refused something (object open or relocation).
    Core(sluice_core::Error),
    /// A program choice, variable, map size or pin that does not fit the object.
    Config(ConfigError),
}

impl Error {
    /// The kernel's errno, when the error comes from a system call.
    #[must_use]
    pub fn errno(&self) -> Option<Errno> {
        match self {
            Error::Syscall { errno, .. }
            | Error::Verifier { errno, .. }
            | Error::Unsupported { errno, .. }
            | Error::Permission { errno, .. }
            | Error::HookRefused { errno, .. } => Some(*errno),
            _ => None,
        }
    }

    /// The verifier log, when a program was refused.
    #[must_use]
    pub fn verifier_log(&self) -> Option<&[u8]> {
        match self {
            Error::Verifier { log, .. } => Some(log),
            _ => None,
        }
    }

    /// Whether the input is at fault, whatever the kernel: a probe spec that does not parse
    /// (a section name or `--event`), BTF that does not parse, a DATASEC naming what the
    /// object lacks, a relocation the core refuses. Such input is bad (exit 2), found at
    /// load only because open did not need to read that part.
    #[must_use]
    pub fn is_bad_input(&self) -> bool {
        match self {
            Error::BadSpec { .. }
            | Error::ObjectBtf { .. }
            | Error::DatasecSection { .. }
            | Error::DatasecVariable { .. } => true,
            Error::Core(e) => !matches!(e, sluice_core::Error::Capacity { .. }),
            // A program given fewer arguments than it reads: the spec is what is wrong.
            Error::Verifier { log, .. } => unpassed_argument(log).is_some(),
            Error::Config(e) => e.is_bad_input(),
            _ => false,
        }
    }
}

/// The argument register (2..=5) a refused program read before anything wrote it, as the
/// log's last `R<n> !read_ok` says: a program compiled to take a probe's arguments (as the
/// prologue passes them) loaded without them. Compiled code never reads r2..r5 otherwise
/// (after a call they are scratch, and the compiler writes them before use).
fn unpassed_argument(log: &[u8]) -> Option<u8> {
    let text = String::from_utf8_lossy(log);
    let line = text.lines().rev().find(|l| l.contains("!read_ok"))?;
    let before = line.trim().strip_suffix(" !read_ok")?;
    match before.rsplit(' ').next()?.as_bytes() {
        [b'R', n @ b'2'..=b'5'] => Some(n - b'0'),
        _ => None,
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Syscall {
                call,
                subject,
                errno,
            } if subject.is_empty() => write!(f, "{call}: {errno}"),
            Error::Syscall {
                call,
                subject,
                errno,
            } => write!(f, "{call} for '{subject}': {errno}"),
            Error::Verifier {
                program,
                errno,
                log,
            } => {
                write!(f, "the verifier refused program '{program}' ({errno})")?;
                if let Some(reg) = unpassed_argument(log) {
                    write!(
                        f,
                        ": it reads r{reg}, its argument {} (a probe's arguments come in \
                         r2..r5), which its spec does not pass; name the arguments in its \
                         section or give it one with --event {program}=SPEC",
                        reg - 1
                    )?;
                }
                if !log.is_empty() {
                    write!(f, ":\n{}", String::from_utf8_lossy(log).trim_end())?;
                }
                Ok(())
            }
            Error::Unsupported {
                feature,
                min_kernel,
                errno,
            } => {
                write!(f, "this kernel does not support {feature} ({errno}); it needs Linux {min_kernel} or later")
            }
            Error::Permission {
                call,
                errno,
                missing,
                unprivileged_bpf_disabled,
            } => {
                write!(
                    f,
                    "{call}: {errno}: needs CAP_BPF + CAP_PERFMON (Linux 5.8+) or CAP_SYS_ADMIN"
                )?;
                if !missing.is_empty() {
                    write!(f, "; missing here: {}", missing.join(", "))?;
                }
                match unprivileged_bpf_disabled {
                    Some(v) => write!(
                        f,
                        "; kernel.unprivileged_bpf_disabled = {v}{}",
                        match v {
                            0 => " (unprivileged bpf() allowed, but not for this program or map type)",
                            1 => " (unprivileged bpf() disabled until reboot)",
                            _ => " (unprivileged bpf() disabled; an admin may set it to 0)",
                        }
                    ),
                    None => write!(f, "; kernel.unprivileged_bpf_disabled unreadable"),
                }
            }
            Error::NoProgram { index } => write!(f, "no program #{index}"),
            Error::NoLoadedProgram { index } => write!(f, "no loaded program #{index}"),
            Error::TargetBtf {
                path: Some(path),
                source,
            } => write!(f, "target BTF {path}: {source}"),
            Error::TargetBtf { path: None, source } => write!(f, "target BTF: {source}"),
            Error::NoAttachTarget {
                program,
                section,
                btf_name,
                searched,
            } => {
                let what = match section.split(['/', '.']).next().unwrap_or_default() {
                    "tp_btf" => "tracepoint: this kernel has no such tracepoint",
                    "lsm" => "LSM hook: this kernel has no such hook (or no CONFIG_BPF_LSM)",
                    _ => {
                        "function: not a function of this kernel, or not traceable \
                         (inlined, or left out of BTF)"
                    }
                };
                write!(
                    f,
                    "cannot attach program '{program}' ({section}): no '{btf_name}' in the \
                     kernel's BTF ({searched}); {what}"
                )
            }
            Error::HookRefused {
                program,
                section,
                call,
                errno,
                reason,
            } => write!(
                f,
                "cannot attach program '{program}' to {section}: {reason} ({call}: {errno})"
            ),
            Error::ObjectBtf { source } => write!(f, "object BTF: {source}"),
            Error::DatasecSection { datasec } => write!(
                f,
                "BTF DATASEC '{datasec}': no ELF section of that name to size it"
            ),
            Error::DatasecVariable { datasec, variable } => write!(
                f,
                "BTF DATASEC '{datasec}': variable '{variable}' has no symbol to place it"
            ),
            Error::Enum64Unsupported => {
                f.write_str("object BTF has ENUM64, which this kernel does not know (Linux 6.0)")
            }
            Error::BtfRefused { errno, log } => {
                write!(f, "the kernel refused the object's BTF ({errno}):\n{log}")
            }
            Error::CoreRelocation {
                program,
                index,
                source,
            } => write!(
                f,
                "program '{program}': CO-RE relocation #{index}: {source}"
            ),
            Error::Kconfig { name, problem } => write!(f, "extern '{name}' (.kconfig): {problem}"),
            Error::KeySize { map, expected, got } => write!(
                f,
                "map '{map}': key of {got} bytes, the map's keys have {expected}"
            ),
            Error::ValueSize { map, expected, got } => write!(
                f,
                "map '{map}': value of {got} bytes, the map's values take {expected}"
            ),
            Error::NotPerCpu {
                map,
                map_type,
                value_size,
                got,
            } => write!(
                f,
                "map '{map}' (type {map_type}, value size {value_size}) is no per-CPU map of \
                 {got}-byte values"
            ),
            Error::InnerMap { map, inner } => write!(
                f,
                "map '{map}': inner map #{inner} is missing or itself a map-in-map"
            ),
            Error::KallsymsAddress { line } => {
                write!(f, "{KALLSYMS}: '{line}': the address is not hexadecimal")
            }
            Error::KallsymsHidden {
                name,
                kptr_restrict,
            } => {
                write!(
                    f,
                    "{KALLSYMS} lists {name} at address 0: the kernel hides its symbol \
                     addresses (kernel.kptr_restrict = "
                )?;
                match kptr_restrict {
                    Some(v) => write!(f, "{v}")?,
                    None => f.write_str("?")?,
                }
                f.write_str(
                    "; root with CAP_SYSLOG sees them when it is 0 or 1), so a kernel \
                     global's address in the running kernel is unknown",
                )
            }
            Error::SymbolNotListed { name } => write!(
                f,
                "@{name}: {KALLSYMS} does not list it in the core kernel (a module's symbol, or \
                 a data symbol of a kernel without CONFIG_KALLSYMS_ALL: sluice prologue --emit \
                 spells globals from _stext, which every kernel lists)"
            ),
            Error::NoLinkSymbol { vmlinux, name } => write!(
                f,
                "{vmlinux}: no symbol {name} in its symbol table: cannot place the kernel's globals"
            ),
            Error::NoRunningSymbol { name } => write!(
                f,
                "{KALLSYMS} lists no {name}: cannot tell the running kernel's KASLR offset"
            ),
            Error::NotRunningKernel {
                vmlinux,
                first,
                first_offset,
                name,
                offset,
            } => write!(
                f,
                "{vmlinux} is not the running kernel: {first} is {first_offset:#x} away from its \
                 link-time address in {KALLSYMS}, {name} {offset:#x} (give the vmlinux of this \
                 build, see uname -v)"
            ),
            Error::NoKaslrSymbols { vmlinux } => {
                write!(f, "{vmlinux}: no symbols to compute the KASLR offset from")
            }
            Error::BadSpec {
                program,
                spec,
                source,
            } => write!(f, "program '{program}': spec '{spec}': {source}"),
            Error::NoSite { program, spec } => write!(
                f,
                "program '{program}' (spec '{spec}'): no probe site in the debug info"
            ),
            Error::Prologue {
                program,
                spec,
                source,
            } => write!(f, "program '{program}' (spec '{spec}'): {source}"),
            Error::NoArchTables => f.write_str("no argument-passing tables for this architecture"),
            Error::ForeignBinary {
                path,
                machine,
                kernel,
            } => match sluice_core::arch::Arch::from_machine(*machine) {
                Some(code) => write!(f, "{path}: {code} code does not run under this {kernel} kernel"),
                None => write!(
                    f,
                    "{path}: no argument-passing tables for its ELF machine {machine} (this kernel is {kernel})"
                ),
            },
            Error::NotElf { path, source } => write!(f, "{path}: not an ELF file: {source}"),
            Error::NoDebugSections { path, source } => {
                write!(f, "{path}: no usable debug info: {source}")
            }
            Error::NoDebugInfo { path, candidates } => write!(
                f,
                "{path}: no debug info in the file nor in any of {} candidate(s){}{}",
                candidates.len(),
                if candidates.is_empty() { "" } else { ": " },
                candidates.join(", ")
            ),
            Error::NeedsVmlinux { func, line } => write!(
                f,
                "{func}: {}: a kernel probe needs a vmlinux with debug info \
                 (LoadOptions::debuginfo, --debuginfo FILE)",
                if *line {
                    "a :LINE place is found in the line table"
                } else {
                    "the arguments name variables"
                }
            ),
            Error::RawOffset { path } => write!(
                f,
                "{path}: a probe at a raw file offset has no function to look up in the debug info"
            ),
            Error::TracepointVariables { category, name } => write!(
                f,
                "tracepoint {category}/{name}: its arguments are record fields, not variables"
            ),
            Error::NoFunction { path } => write!(
                f,
                "{path}: the probe names no function to look up in the debug info"
            ),
            Error::Dwarf { path, func, source } => {
                write!(f, "{path}: {func}: {source}")?;
                if matches!(source, sluice_core::dwarf::Error::NotAvailable { .. }) {
                    f.write_str(" (optimized code: try another place, e.g. FUNC+0 or a line)")?;
                }
                Ok(())
            }
            Error::DebugFile { path, func, source } => write!(f, "{path}: {func}: {source}"),
            Error::Site {
                path,
                func,
                address,
                problem,
            } => write!(f, "{path}: {func} at {address:#x}: {problem}"),
            Error::FewerFetchArgs { spec, address } => write!(
                f,
                "'{spec}': site {address:#x} has fewer fetch-args than the spec"
            ),
            Error::Unspellable {
                spec,
                address,
                text,
                source,
            } => {
                write!(f, "'{spec}': at {address:#x} it reads as '{text}': ")?;
                match source {
                    Some(e) => write!(f, "the spec grammar cannot take it: {e}"),
                    None => f.write_str("no probe spec"),
                }
            }
            Error::Io { path, source } => write!(f, "{path}: {source}"),
            Error::Core(e) => write!(f, "{e}"),
            Error::Config(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Syscall { errno, .. }
            | Error::Verifier { errno, .. }
            | Error::Unsupported { errno, .. }
            | Error::Permission { errno, .. } => Some(errno),
            Error::Io { source, .. } => Some(source),
            Error::Core(e) => Some(e),
            Error::Config(e) => Some(e),
            Error::TargetBtf { source, .. }
            | Error::ObjectBtf { source }
            | Error::CoreRelocation { source, .. } => Some(source),
            Error::BtfRefused { errno, .. } | Error::HookRefused { errno, .. } => Some(errno),
            Error::Kconfig { problem, .. } => Some(problem),
            Error::BadSpec { source, .. } => Some(source),
            Error::Unspellable { source, .. } => source.as_ref().map(|e| e as _),
            Error::Prologue { source, .. } => Some(&**source),
            Error::NotElf { source, .. } | Error::DebugFile { source, .. } => Some(source),
            Error::NoDebugSections { source, .. } | Error::Dwarf { source, .. } => Some(source),
            Error::Site { problem, .. } => Some(problem),
            Error::NoProgram { .. }
            | Error::NoAttachTarget { .. }
            | Error::NoLoadedProgram { .. }
            | Error::DatasecSection { .. }
            | Error::DatasecVariable { .. }
            | Error::Enum64Unsupported
            | Error::KeySize { .. }
            | Error::ValueSize { .. }
            | Error::NotPerCpu { .. }
            | Error::InnerMap { .. }
            | Error::KallsymsAddress { .. }
            | Error::KallsymsHidden { .. }
            | Error::SymbolNotListed { .. }
            | Error::NoLinkSymbol { .. }
            | Error::NoRunningSymbol { .. }
            | Error::NotRunningKernel { .. }
            | Error::NoKaslrSymbols { .. }
            | Error::NoSite { .. }
            | Error::NoArchTables
            | Error::ForeignBinary { .. }
            | Error::NoDebugInfo { .. }
            | Error::NoFunction { .. }
            | Error::NeedsVmlinux { .. }
            | Error::RawOffset { .. }
            | Error::TracepointVariables { .. }
            | Error::FewerFetchArgs { .. } => None,
        }
    }
}

impl From<sluice_core::Error> for Error {
    fn from(e: sluice_core::Error) -> Self {
        Error::Core(e)
    }
}

/// Why one site of a function cannot be probed as the spec asks.
#[derive(Debug)]
#[non_exhaustive]
pub enum SiteProblem {
    /// A uprobe site whose address lies in no section with file contents.
    NoFileOffset,
    /// A kprobe site that no function symbol holds.
    NoSymbol,
    /// The spec is neither a kprobe nor a uprobe.
    NotProbe,
    /// The prologue does not take the arguments (capacity, `$err`).
    Prologue(sluice_core::Error),
    /// A variable's location has no fetch-arg spelling.
    FetchArg(sluice_core::dwarf::Error),
    /// The debug info did not resolve an argument.
    NotResolved {
        /// 1-based position.
        position: usize,
        /// The argument as written.
        arg: String,
    },
    /// An argument that is a kernel global, where the running kernel's offset is unknown.
    KernelGlobal {
        /// 1-based position.
        position: usize,
        /// The argument as written.
        arg: String,
        /// Why the offset is unknown.
        source: Arc<Error>,
    },
    /// An argument that cannot be fetched there.
    Arg {
        /// 1-based position.
        position: usize,
        /// The argument as written.
        arg: String,
        /// Why.
        problem: ArgProblem,
    },
}

impl fmt::Display for SiteProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SiteProblem::NoFileOffset => {
                f.write_str("the address lies in no section with file contents")
            }
            SiteProblem::NoSymbol => f.write_str("no function symbol holds the address"),
            SiteProblem::NotProbe => f.write_str("not a kprobe or uprobe"),
            SiteProblem::Prologue(e) => write!(f, "{e}"),
            SiteProblem::FetchArg(e) => write!(f, "{e}"),
            SiteProblem::NotResolved { position, arg } => {
                write!(f, "argument {position} '{arg}' was not resolved")
            }
            SiteProblem::KernelGlobal {
                position,
                arg,
                source,
            } => write!(
                f,
                "argument {position} '{arg}' is a kernel global: {source}"
            ),
            SiteProblem::Arg {
                position,
                arg,
                problem,
            } => write!(f, "argument {position} '{arg}': {problem}"),
        }
    }
}

impl std::error::Error for SiteProblem {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SiteProblem::Prologue(e) => Some(e),
            SiteProblem::FetchArg(e) => Some(e),
            SiteProblem::KernelGlobal { source, .. } => Some(&**source),
            SiteProblem::Arg { problem, .. } => Some(problem),
            SiteProblem::NoFileOffset
            | SiteProblem::NoSymbol
            | SiteProblem::NotProbe
            | SiteProblem::NotResolved { .. } => None,
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests;
