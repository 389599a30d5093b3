//! The open phase.
