//! Errors of tracefs, each naming the file concerned.

use super::places::CANDIDATES;
use std::fmt;
use std::path::{Path, PathBuf};

/// Errors of tracefs, each naming the file concerned.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// tracefs is neither mounted nor mountable (not root, or mount failed).
    NotFound {
        /// Directories looked at.
        tried: Vec<PathBuf>,
        /// Why mounting was not possible, if it was tried.
        mount: Option<rustix::io::Errno>,
    },
    /// tracefs is mounted but this user may not read it (it is root's, mode 0700).
    NotReadable {
        /// Where it is mounted.
        path: PathBuf,
        /// What reading it said.
        source: std::io::Error,
    },
    /// Reading or writing a tracefs file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What we were doing (`"read"`, `"write -:sluice/p_1_0_f"` ...).
        op: String,
        /// Why; for probe definitions the kernel's `error_log` line is in `detail`.
        source: std::io::Error,
        /// The reason of the last tracefs `error_log` entry, when the kernel wrote one.
        detail: Option<String>,
    },
    /// The kernel lacks a tracing feature.
    Unsupported {
        /// What is missing.
        feature: &'static str,
        /// The kernel option that provides it.
        config: &'static str,
        /// The file that is absent.
        path: PathBuf,
    },
    /// A tracefs file does not have the expected syntax.
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        what: &'static str,
    },
    /// A uprobe target cannot be resolved to a file offset.
    Symbol {
        /// The target binary.
        path: PathBuf,
        /// The function.
        func: String,
        /// What is wrong.
        problem: SymbolProblem,
    },
    /// A probe request that cannot be written (bad target syntax, characters the kernel
    /// would reject).
    Request {
        /// The text given.
        text: String,
        /// What is wrong.
        what: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotReadable { path, source } => write!(
                f,
                "tracefs at {} is not readable by this user ({source}): run as root",
                path.display()
            ),
            Error::NotFound { tried, mount } => {
                write!(f, "tracefs not found (tried")?;
                for t in tried {
                    write!(f, " {}", t.display())?;
                }
                write!(f, ")")?;
                match mount {
                    Some(e) => write!(f, "; mounting it on {} failed: {e}", CANDIDATES[0]),
                    None => write!(
                        f,
                        "; run as root to mount it, or: mount -t tracefs nodev {}",
                        CANDIDATES[0]
                    ),
                }
            }
            Error::Io {
                path,
                op,
                source,
                detail,
            } => {
                write!(f, "{}: {op}: {source}", path.display())?;
                if let Some(d) = detail {
                    write!(f, " (kernel: {d})")?;
                }
                Ok(())
            }
            Error::Unsupported {
                feature,
                config,
                path,
            } => write!(
                f,
                "this kernel has no {feature} ({} is missing): it needs {config}=y",
                path.display()
            ),
            Error::Parse { path, line, what } => write!(f, "{}:{line}: {what}", path.display()),
            Error::Symbol {
                path,
                func,
                problem,
            } => {
                write!(f, "{}: cannot probe {func:?}: {problem}", path.display())
            }
            Error::Request { text, what } => write!(f, "probe {text:?}: {what}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::NotFound { mount: Some(e), .. } => Some(e),
            Error::NotReadable { source, .. } => Some(source),
            Error::Symbol { problem, .. } => Some(problem),
            _ => None,
        }
    }
}

/// Why a uprobe target cannot be resolved to a file offset.
#[derive(Debug)]
#[non_exhaustive]
pub enum SymbolProblem {
    /// The file cannot be read.
    Read(std::io::Error),
    /// The file is no ELF file.
    NotElf(sluice_core::Error),
    /// No defined symbol of that name in `.symtab` or `.dynsym`.
    NoSuchSymbol,
    /// The offset is beyond the function's size.
    BeyondSize {
        /// The offset asked for.
        offset: u64,
        /// The function's size.
        size: u64,
    },
    /// The symbol's address plus the offset overflows.
    Overflow,
    /// The address is in no loaded section with file bytes.
    NoSection {
        /// The address.
        vaddr: u64,
    },
}

impl fmt::Display for SymbolProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SymbolProblem::Read(e) => write!(f, "cannot read it: {e}"),
            SymbolProblem::NotElf(e) => write!(f, "not an ELF file: {e}"),
            SymbolProblem::NoSuchSymbol => {
                f.write_str("no such defined symbol in .symtab or .dynsym")
            }
            SymbolProblem::BeyondSize { offset, size } => {
                write!(f, "offset {offset} is beyond the function's {size} bytes")
            }
            SymbolProblem::Overflow => f.write_str("address overflows"),
            SymbolProblem::NoSection { vaddr } => {
                write!(
                    f,
                    "address {vaddr:#x} is in no loaded section with file bytes"
                )
            }
        }
    }
}

impl std::error::Error for SymbolProblem {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SymbolProblem::Read(e) => Some(e),
            SymbolProblem::NotElf(e) => Some(e),
            _ => None,
        }
    }
}

pub(crate) fn io_err(
    path: &Path,
    op: impl Into<String>,
) -> impl FnOnce(std::io::Error) -> Error + '_ {
    let op = op.into();
    move |source| Error::Io {
        path: path.to_path_buf(),
        op,
        source,
        detail: None,
    }
}
