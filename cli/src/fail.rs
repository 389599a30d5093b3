//! One clear line, then the detail; and the exit code.
//!
//! The line is the error's `Display`, which already holds the text of its sources
//! (`program 'p' (spec 's'): FILE: FUNC: why`): the commands print it once and never append
//! the `source()` chain, which would say the same thing twice. Exit codes go by variant
//! (`record`: `Open`, `Spec`, `Cpu` are bad input, 2; the rest 1).

/// A failure of a command: the line to print, optional detail, exit code.
#[derive(Debug)]
pub struct Failure {
    /// One line: what failed, on which file, where.
    pub message: String,
    /// More (e.g. the verifier log, verbatim).
    pub detail: Option<String>,
    /// Process exit code.
    pub code: u8,
}

impl Failure {
    /// Bad input (object, spec): exit code 2.
    pub fn input(message: String) -> Self {
        Failure {
            message,
            detail: None,
            code: 2,
        }
    }

    /// Bad usage: exit code 2.
    pub fn usage_msg(message: String) -> Self {
        Failure {
            message,
            detail: None,
            code: 2,
        }
    }

    /// A runtime failure (kernel, I/O): exit code 1.
    pub fn runtime(message: String, detail: Option<String>) -> Self {
        Failure {
            message,
            detail,
            code: 1,
        }
    }
}

/// An argument-parsing error.
pub fn usage(e: lexopt::Error) -> Failure {
    Failure::usage_msg(format!("{e} (see sluice --help)"))
}
