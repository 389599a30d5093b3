//! [`LinkError`]: why a link could not be made, shared by [`super::link`] and
//! [`super::usdt`] (which the link's attach calls for a `usdt/` plan).

use std::fmt;

use crate::error::SpecProblem;
use crate::tracefs;

/// Why a link could not be made.
#[derive(Debug)]
#[non_exhaustive]
pub enum LinkError {
    /// The plan cannot be attached (an opaque title, a spec that does not parse, a spec
    /// that needs a DWARF site the program was loaded without); says why.
    Spec(SpecProblem),
    /// tracefs refused: probe creation, the event's id or format, a uprobe's symbol.
    Tracefs(tracefs::Error),
    /// Opening, attaching or enabling the perf events failed.
    Events(super::Error),
}

impl fmt::Display for LinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinkError::Spec(what) => write!(f, "{what}"),
            LinkError::Tracefs(e) => write!(f, "{e}"),
            LinkError::Events(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for LinkError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LinkError::Spec(e) => Some(e),
            LinkError::Tracefs(e) => Some(e),
            LinkError::Events(e) => Some(e),
        }
    }
}
