//! Errors of a session, each naming the object and program concerned.

use std::fmt;

use crate::attach::{self, LinkError};
use crate::tracefs;

/// Errors of a session, each naming the object and program concerned.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The object does not open.
    Open {
        /// Object.
        object: String,
        /// Why.
        source: sluice_core::Error,
    },
    /// Loading failed (the verifier log is in the source).
    Load {
        /// Object.
        object: String,
        /// Why.
        source: crate::Error,
    },
    /// A section name or mapping is not a probe spec we can honour.
    Spec {
        /// Object.
        object: String,
        /// Program.
        program: String,
        /// The spec.
        spec: String,
        /// What is wrong.
        problem: crate::error::SpecProblem,
    },
    /// tracefs refused (probe creation, event id or format).
    Tracefs {
        /// Program concerned, if any.
        program: Option<String>,
        /// Why.
        source: tracefs::Error,
    },
    /// Opening, attaching or enabling perf events failed.
    Attach {
        /// Object.
        object: String,
        /// Why.
        source: attach::Error,
    },
    /// Mapping a ring failed.
    Ring(crate::ring::Error),
    /// Mapping a BPF ring buffer failed.
    RingBuf {
        /// The object.
        object: String,
        /// Why.
        source: crate::ring::RingBufError,
    },
    /// A CPU asked for is not online.
    Cpu {
        /// The CPU.
        cpu: u32,
        /// The online CPUs.
        online: Vec<u32>,
    },
    /// Reading the online CPUs failed.
    Cpus {
        /// Why.
        source: crate::kernel::cpus::Error,
    },
    /// Polling or waiting for the workload failed.
    Io {
        /// What we were doing.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Open { object, source } => write!(f, "{object}: {source}"),
            Error::Load { object, source } => write!(f, "{object}: {source}"),
            Error::Spec {
                object,
                program,
                spec,
                problem,
            } => write!(
                f,
                "{object}: program '{program}', probe '{spec}': {problem}"
            ),
            Error::Tracefs {
                program: Some(p),
                source,
            } => write!(f, "program '{p}': {source}"),
            Error::Tracefs {
                program: None,
                source,
            } => write!(f, "{source}"),
            Error::Attach { object, source } => write!(f, "{object}: {source}"),
            Error::Ring(e) => write!(f, "{e}"),
            Error::RingBuf { object, source } => write!(f, "{object}: {source}"),
            Error::Cpu { cpu, online } => {
                let list: Vec<String> = online.iter().map(u32::to_string).collect();
                write!(f, "CPU {cpu} is not online (online: {})", list.join(","))
            }
            Error::Cpus { source } => write!(f, "reading the online CPUs: {source}"),
            Error::Io { what, source } => write!(f, "{what}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Open { source, .. } => Some(source),
            Error::Load { source, .. } => Some(source),
            Error::Tracefs { source, .. } => Some(source),
            Error::Attach { source, .. } => Some(source),
            Error::Ring(e) => Some(e),
            Error::RingBuf { source, .. } => Some(source),
            Error::Io { source, .. } => Some(source),
            Error::Cpus { source } => Some(source),
            Error::Spec { problem, .. } => Some(problem),
            Error::Cpu { .. } => None,
        }
    }
}

impl Error {
    /// The error of making the link of `program` (spec `spec`) of `object`: the same
    /// variants as before links existed, so messages name what they always named.
    pub(super) fn link(e: LinkError, object: &str, program: &str, spec: &str) -> Error {
        match e {
            LinkError::Spec(problem) => Error::Spec {
                object: object.to_owned(),
                program: program.to_owned(),
                spec: spec.to_owned(),
                problem,
            },
            LinkError::Tracefs(source) => Error::Tracefs {
                program: Some(program.to_owned()),
                source,
            },
            LinkError::Events(source) => Error::Attach {
                object: object.to_owned(),
                source,
            },
        }
    }
}
