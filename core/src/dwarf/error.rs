//! What can go wrong resolving a probe through DWARF: [`Error`], and the [`Available`]
//! variables an error about a variable offers instead.

use alloc::string::String;
use core::fmt;

/// What can go wrong resolving a probe through DWARF. Names the function, variable and
/// address involved.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// An error of the rest of the core: a malformed ELF file, a prologue capacity.
    Core(crate::Error),
    /// The ELF machine is not one sluice has register tables for.
    UnknownMachine(u16),
    /// The file has no `.debug_info`.
    NoDebugInfo,
    /// A compressed debug section does not inflate.
    Decompress {
        /// The section.
        section: String,
        /// What is wrong.
        what: &'static str,
    },
    /// The debug info does not parse.
    Dwarf {
        /// What was being read.
        what: &'static str,
        /// gimli's reason.
        source: gimli::Error,
    },
    /// No function of that name with code (out of line or inlined).
    FunctionNotFound(String),
    /// The probe place cannot be had for this function (a line without code, an offset
    /// into an inlined function, ...).
    NoPlace {
        /// The function.
        function: String,
        /// Why.
        what: &'static str,
    },
    /// `FUNC:LINE` names a line whose code starts at an address the line table gives to
    /// an earlier line first: a probe there is the other line's (`perf probe` refuses it
    /// the same way and names the line to use). The line named to use instead is one with
    /// an address of its own; when the owner has none either, no line is named.
    SharedLine {
        /// The function.
        function: String,
        /// The line asked for, relative to the function's declaration.
        line: u64,
        /// The address shared.
        address: u64,
        /// The function whose line owns the address: `function`, or a function inlined
        /// there whose own line it is.
        owner_function: String,
        /// The line that owns the address, relative to `owner_function`'s declaration.
        owner_line: i64,
        /// Whether `owner_function:owner_line` can be probed (it has an address of its
        /// own): the line to probe instead. Otherwise it shares its addresses too.
        probeable: bool,
    },
    /// No variable of that name is visible at that address.
    VariableNotFound {
        /// The variable.
        name: String,
        /// The probed address.
        pc: u64,
        /// The variables that are visible and fetchable there.
        available: Available,
    },
    /// The variable exists but a prologue cannot fetch it at that address.
    NotAvailable {
        /// The variable.
        name: String,
        /// The probed address.
        pc: u64,
        /// Why: `optimized out`, `no location at this address`, `split in pieces`,
        /// `only an entry value`, ...
        reason: &'static str,
        /// The variables that are visible and fetchable there.
        available: Available,
    },
    /// A member chain step does not fit the type reached.
    BadStep {
        /// The variable.
        name: String,
        /// The step (`->f_mapping`, `.pos`, `[2]`).
        step: String,
        /// Why.
        reason: &'static str,
    },
    /// The final value is not a 1-, 2-, 4- or 8-byte scalar.
    NotScalar {
        /// The argument.
        name: String,
        /// What it is.
        what: &'static str,
    },
    /// The argument is not a variable this module resolves (a register or `$` variable is
    /// the calling convention's business).
    NotAVariable(String),
    /// The location cannot be written as a tracer fetch-arg.
    Unexpressible {
        /// What.
        what: &'static str,
        /// The value involved (register number, offset).
        value: i64,
    },
    /// A bound on a walk over untrusted data was reached.
    Limit {
        /// What was walked.
        what: &'static str,
        /// The bound.
        limit: u32,
    },
}

/// Most variable names an [`Available`] list holds.
pub const MAX_AVAILABLE: usize = 16;

/// The variables an error offers instead of the one asked for: those visible and fetchable
/// at the probed address (parameters and locals of the scopes around it, innermost
/// shadowing outer, then the unit's globals), at most [`MAX_AVAILABLE`] of them.
///
/// `Display`: `available there: file, bytes, sc`, with `, …` when there were more, or
/// `no variable is available there`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Available {
    /// The names, outer scopes first, in declaration order.
    pub names: alloc::vec::Vec<String>,
    /// Whether more variables than [`MAX_AVAILABLE`] are available.
    pub more: bool,
}

impl fmt::Display for Available {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.names.is_empty() {
            return f.write_str("no variable is available there");
        }
        f.write_str("available there: ")?;
        for (i, n) in self.names.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(n)?;
        }
        if self.more {
            f.write_str(", …")?;
        }
        Ok(())
    }
}

impl From<crate::Error> for Error {
    fn from(e: crate::Error) -> Self {
        Error::Core(e)
    }
}

pub(super) fn gimli_err(what: &'static str) -> impl Fn(gimli::Error) -> Error {
    move |source| Error::Dwarf { what, source }
}

impl Error {
    /// [`Error::NotAvailable`] for variable `name` at `pc`, before the variables available
    /// there are listed.
    pub(super) fn not_available(name: &str, pc: u64, reason: &'static str) -> Error {
        Error::NotAvailable {
            name: String::from(name),
            pc,
            reason,
            available: Available::default(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Core(e) => write!(f, "{e}"),
            Error::UnknownMachine(m) => write!(f, "no register table for ELF machine {m}"),
            Error::NoDebugInfo => f.write_str("no .debug_info in the file"),
            Error::Decompress { section, what } => write!(f, "{section}: {what}"),
            Error::Dwarf { what, source } => write!(f, "reading {what}: {source}"),
            Error::FunctionNotFound(func) => write!(f, "function '{func}' not found in debug info"),
            Error::NoPlace { function, what } => write!(f, "{function}: {what}"),
            Error::SharedLine {
                function,
                line,
                address,
                owner_function,
                owner_line,
                probeable,
            } => {
                write!(f, "{function}:{line} shares its address ")?;
                if owner_function == function {
                    write!(f, "with line {owner_line}")?;
                } else {
                    write!(f, "with {owner_function}:{owner_line} (inlined there)")?;
                }
                if *probeable {
                    write!(f, ": probe {owner_function}:{owner_line} instead")
                } else {
                    write!(
                        f,
                        ", which has no address of its own either: no FUNC:LINE probes {address:#x}"
                    )
                }
            }
            Error::VariableNotFound {
                name,
                pc,
                available,
            } => {
                write!(
                    f,
                    "variable '{name}' is not visible at {pc:#x}; {available}"
                )
            }
            Error::NotAvailable {
                name,
                pc,
                reason,
                available,
            } => {
                write!(
                    f,
                    "variable '{name}' at {pc:#x} cannot be fetched: {reason}; {available}"
                )
            }
            Error::BadStep { name, step, reason } => write!(f, "{name}: '{step}': {reason}"),
            Error::NotScalar { name, what } => {
                write!(f, "{name}: {what}, not a 1/2/4/8-byte scalar")
            }
            Error::NotAVariable(arg) => write!(f, "'{arg}' is not a variable"),
            Error::Unexpressible { what, value } => {
                write!(f, "no fetch-arg for a {what} ({value})")
            }
            Error::Limit { what, limit } => write!(f, "more than {limit} {what}"),
        }
    }
}

impl core::error::Error for Error {}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use alloc::string::ToString;
    use alloc::vec::Vec;

    fn avail(names: &[&str], more: bool) -> Available {
        Available {
            names: names.iter().map(|n| String::from(*n)).collect(),
            more,
        }
    }

    #[test]
    fn errors_list_what_is_available() {
        let sixteen: Vec<String> = (0..MAX_AVAILABLE).map(|i| alloc::format!("v{i}")).collect();
        let cases = [
            (
                Error::VariableNotFound {
                    name: "zz".into(),
                    pc: 0x1140,
                    available: avail(&["a", "b"], false),
                },
                "variable 'zz' is not visible at 0x1140; available there: a, b",
            ),
            (
                Error::NotAvailable {
                    name: "r".into(),
                    pc: 0x1140,
                    reason: "no location at this address",
                    available: avail(&["a", "b", "counter"], false),
                },
                "variable 'r' at 0x1140 cannot be fetched: no location at this address; \
                 available there: a, b, counter",
            ),
            (
                Error::NotAvailable {
                    name: "x".into(),
                    pc: 0x10,
                    reason: "optimized out",
                    available: Available::default(),
                },
                "variable 'x' at 0x10 cannot be fetched: optimized out; \
                 no variable is available there",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
        let full = Available {
            names: sixteen,
            more: true,
        };
        let text = full.to_string();
        assert!(text.starts_with("available there: v0, v1, "), "{text}");
        assert!(text.ends_with("v15, …"), "{text}");
    }

    #[test]
    fn a_shared_line_names_a_line_to_probe_only_when_it_has_its_own_address() {
        let shared = |owner: &str, probeable| {
            Error::SharedLine {
                function: "mix".into(),
                line: 4,
                address: 0x117a,
                owner_function: owner.into(),
                owner_line: 2,
                probeable,
            }
            .to_string()
        };
        assert_eq!(
            shared("mix", true),
            "mix:4 shares its address with line 2: probe mix:2 instead"
        );
        assert_eq!(
            shared("twist", true),
            "mix:4 shares its address with twist:2 (inlined there): probe twist:2 instead"
        );
        let none = shared("mix", false);
        assert!(!none.contains("probe mix:2"), "{none}");
        assert_eq!(
            none,
            "mix:4 shares its address with line 2, which has no address of its own either: \
             no FUNC:LINE probes 0x117a"
        );
    }
}
