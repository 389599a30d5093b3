//! The runtime's error type: what failed, with the kernel's answer and enough context to act.

use rustix::io::Errno;
use std::fmt;

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
    /// A request that does not fit the object or map (wrong key size, unknown program ...).
    Usage {
        /// What is wrong.
        what: String,
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
}

impl Error {
    /// The kernel's errno, when the error comes from a system call.
    #[must_use]
    pub fn errno(&self) -> Option<Errno> {
        match self {
            Error::Syscall { errno, .. }
            | Error::Verifier { errno, .. }
            | Error::Unsupported { errno, .. }
            | Error::Permission { errno, .. } => Some(*errno),
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
            Error::Usage { what } => f.write_str(what),
            Error::Io { path, source } => write!(f, "{path}: {source}"),
            Error::Core(e) => write!(f, "{e}"),
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
            Error::Usage { .. } => None,
        }
    }
}

impl From<sluice_core::Error> for Error {
    fn from(e: sluice_core::Error) -> Self {
        Error::Core(e)
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;

    #[test]
    fn verifier_display_keeps_bytes() {
        let e = Error::Verifier {
            program: "p".into(),
            errno: Errno::ACCESS,
            log: b"0: R2 !read_ok\xff\n".to_vec(),
        };
        assert_eq!(e.verifier_log(), Some(&b"0: R2 !read_ok\xff\n"[..]));
        assert!(e.to_string().contains("R2 !read_ok"));
    }
}
