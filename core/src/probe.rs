//! The section-name grammar: which probe a program wants and which arguments it fetches.

use core::fmt;

/// A parsed section name. (Placeholder until the grammar lands.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeSpec<'a> {
    /// The section name.
    pub raw: &'a str,
}

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

/// A section name: a probe spec, or a title that is none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Section<'a> {
    /// A probe spec.
    Probe(ProbeSpec<'a>),
    /// Not a probe spec.
    Title(&'a str),
}

/// Parses a section name. (Placeholder until the grammar lands.)
///
/// # Errors
/// Never, for now.
pub fn parse(section: &str) -> Result<Section<'_>, ProbeError> {
    Ok(Section::Title(section))
}
