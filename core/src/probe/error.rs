//! What goes wrong reading a section name: [`ProbeError`], with its column.

use core::fmt;

/// A section name that does not parse, with the column where it stops making sense.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ProbeError {
    /// 0-based byte column in the spec.
    pub column: u32,
    /// What was expected or found.
    pub what: &'static str,
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "probe spec, column {}: {}", self.column + 1, self.what)
    }
}

impl core::error::Error for ProbeError {}
