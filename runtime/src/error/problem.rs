//! What is wrong inside one variant of the runtime's or the session's error: the reasons a
//! `.kconfig` extern, an argument or a probe spec cannot be honoured.

use std::fmt;

/// Why a `.kconfig` extern cannot be given a value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum KconfigProblem {
    /// The name is neither `CONFIG_*` nor one libbpf provides.
    Unknown,
    /// A non-weak extern absent from the kernel configuration.
    NotSet,
    /// The extern lies outside the `.kconfig` map.
    OutsideMap,
    /// The value does not fit the extern's type.
    BadValue {
        /// The configured value.
        value: String,
        /// Why it does not fit.
        why: &'static str,
    },
}

impl fmt::Display for KconfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KconfigProblem::Unknown => f.write_str("not a CONFIG_ name nor one libbpf provides"),
            KconfigProblem::NotSet => f.write_str(
                "not set in the kernel configuration (declare it __weak to default to 0)",
            ),
            KconfigProblem::OutsideMap => f.write_str("outside the .kconfig map"),
            KconfigProblem::BadValue { value, why } => write!(f, "value '{value}': {why}"),
        }
    }
}

impl std::error::Error for KconfigProblem {}

/// Why one argument of a spec cannot be fetched at a site.
#[derive(Debug)]
#[non_exhaustive]
pub enum ArgProblem {
    /// A `:string` argument where a value must be passed in a register (strings are
    /// recorded by the kernel's fetch-args instead; kept for callers that match on it).
    String,
    /// A global of a position-independent file at a return probe.
    PicGlobalAtReturn,
    /// A global of a kernel module.
    ModuleGlobal,
    /// The variable's DWARF location has no prologue form.
    Location(sluice_core::dwarf::Error),
    /// The calling convention does not place it (or the prologue does not take it).
    Prologue(sluice_core::Error),
    /// The calling convention gives no location for the argument at this 1-based position.
    NoConvention {
        /// 1-based position.
        position: usize,
    },
}

impl fmt::Display for ArgProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgProblem::String => f.write_str(
                "a string cannot be passed in a register (drop :string to get the pointer)",
            ),
            ArgProblem::PicGlobalAtReturn => f.write_str(
                "a global of a position-independent file (PIE or shared library) at a return \
                 probe: the program finds where the file is loaded from the probed address, \
                 which a return probe's registers no longer hold (they hold the return \
                 address); fetch it at the function's entry or a line of it, or link the \
                 program -no-pie",
            ),
            ArgProblem::ModuleGlobal => f.write_str(
                "a global of a kernel module: its address is known only once the module is \
                 loaded (not supported; fetch it through a pointer argument, or probe vmlinux \
                 code)",
            ),
            ArgProblem::Location(e) => write!(f, "{e}"),
            ArgProblem::Prologue(e) => write!(f, "{e}"),
            ArgProblem::NoConvention { position } => {
                write!(f, "no location by the calling convention ({position})")
            }
        }
    }
}

impl std::error::Error for ArgProblem {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ArgProblem::Location(e) => Some(e),
            ArgProblem::Prologue(e) => Some(e),
            ArgProblem::String
            | ArgProblem::PicGlobalAtReturn
            | ArgProblem::ModuleGlobal
            | ArgProblem::NoConvention { .. } => None,
        }
    }
}

/// Why a record session cannot honour a program's probe spec.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpecProblem {
    /// The spec does not parse.
    Parse(sluice_core::probe::ProbeError),
    /// A tracepoint spec without a target.
    TracepointWithoutTarget,
    /// Arguments or a `:LINE` place that need debug info, and the program was loaded
    /// without its DWARF site.
    NoSite,
    /// The section is an opaque title that names no probe (map it with `--event`).
    Title,
    /// An attach point (`fentry/`, `tp_btf/`, ...) without a usable target.
    AttachPoint(sluice_core::probe::AttachError),
    /// A `usdt/` probe that cannot be attached as written: its binary, probe and why.
    Usdt {
        /// The binary.
        binary: String,
        /// `PROVIDER:NAME`.
        probe: String,
        /// Why (no such probe, no notes, an argument spec that cannot be fetched ...).
        why: String,
    },
    /// A `uprobe.multi/PATH:PATTERN` that names no function: its binary, pattern and why
    /// (not found, no ELF file, no function matches).
    UprobeMulti {
        /// The binary, as written.
        binary: String,
        /// The glob.
        pattern: String,
        /// Why.
        why: String,
    },
}

impl fmt::Display for SpecProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecProblem::Parse(e) => write!(f, "{e}"),
            SpecProblem::TracepointWithoutTarget => f.write_str("tracepoint without a target"),
            SpecProblem::NoSite => f.write_str("the program was loaded without its DWARF site"),
            SpecProblem::Title => f.write_str("the section names no probe; map it with --event"),
            SpecProblem::AttachPoint(e) => write!(f, "{e}"),
            SpecProblem::Usdt { binary, probe, why } => {
                write!(f, "usdt probe {probe} of {binary}: {why}")
            }
            SpecProblem::UprobeMulti {
                binary,
                pattern,
                why,
            } => write!(f, "uprobe.multi pattern '{pattern}' of {binary}: {why}"),
        }
    }
}

impl std::error::Error for SpecProblem {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SpecProblem::Parse(e) => Some(e),
            _ => None,
        }
    }
}
