//! CPU lists of sysfs: `/sys/devices/system/cpu/online` and `possible`.
//!
//! The format (Documentation/admin-guide/cputopology.rst) is a comma-separated list of
//! decimal CPU numbers and inclusive ranges, e.g. `0-3,5,7-8`, ending in a newline. One perf
//! event (and ring) is opened per *online* CPU; per-CPU maps are sized by *possible* CPUs.

use std::fmt;
use std::path::{Path, PathBuf};

/// The sysfs file of online CPUs.
pub const ONLINE: &str = "/sys/devices/system/cpu/online";
/// The sysfs file of possible CPUs.
pub const POSSIBLE: &str = "/sys/devices/system/cpu/possible";

/// Largest CPU number accepted (the kernel's `NR_CPUS` maximum is 8192).
pub const MAX_CPU: u32 = 1 << 16;

/// A CPU list that could not be read or parsed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file's contents are not a CPU list.
    Parse {
        /// The file (empty when parsing a string).
        path: PathBuf,
        /// The offending text.
        text: String,
        /// What is wrong.
        what: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Read { path, source } => write!(f, "{}: {source}", path.display()),
            // A list from the command line has no file to name.
            Error::Parse { path, text, what } if path.as_os_str().is_empty() => {
                write!(f, "{what} in CPU list {text:?}")
            }
            Error::Parse { path, text, what } => {
                write!(f, "{}: {what} in CPU list {text:?}", path.display())
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Read { source, .. } => Some(source),
            Error::Parse { .. } => None,
        }
    }
}

/// Parses a CPU list such as `0-3,5,7-8` into CPU numbers, ascending and without
/// duplicates. Surrounding whitespace (the trailing newline) is ignored; an empty list is
/// valid and empty.
///
/// # Errors
/// [`Error::Parse`] (with an empty path) on a non-number, a reversed range, or a CPU number
/// above [`MAX_CPU`].
pub fn parse(text: &str) -> Result<Vec<u32>, Error> {
    parse_in(text, Path::new(""))
}

fn parse_in(text: &str, path: &Path) -> Result<Vec<u32>, Error> {
    let err = |what| Error::Parse {
        path: path.to_path_buf(),
        text: text.to_owned(),
        what,
    };
    let num = |s: &str| -> Result<u32, Error> {
        let s = s.trim();
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err("not a CPU number"));
        }
        let n: u32 = s.parse().map_err(|_| err("CPU number too large"))?;
        if n > MAX_CPU {
            return Err(err("CPU number too large"));
        }
        Ok(n)
    };
    let mut cpus = Vec::new();
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(cpus);
    }
    for part in trimmed.split(',') {
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (num(lo)?, num(hi)?);
                if lo > hi {
                    return Err(err("reversed range"));
                }
                cpus.extend(lo..=hi);
            }
            None => cpus.push(num(part)?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Reads and parses the CPU list in `path`.
///
/// # Errors
/// [`Error::Read`] or [`Error::Parse`], naming `path`.
pub fn read(path: impl AsRef<Path>) -> Result<Vec<u32>, Error> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_in(&text, path)
}

/// The online CPUs.
///
/// # Errors
/// As [`read`] on [`ONLINE`].
pub fn online() -> Result<Vec<u32>, Error> {
    read(ONLINE)
}

/// The possible CPUs.
///
/// # Errors
/// As [`read`] on [`POSSIBLE`].
pub fn possible() -> Result<Vec<u32>, Error> {
    read(POSSIBLE)
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
    fn lists() {
        let cases: &[(&str, &[u32])] = &[
            ("0\n", &[0]),
            ("0-3,5,7-8\n", &[0, 1, 2, 3, 5, 7, 8]),
            ("", &[]),
            ("\n", &[]),
            ("3,1-2,2", &[1, 2, 3]),
            ("0-0", &[0]),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text).unwrap(), *want, "{text:?}");
        }
    }

    #[test]
    fn bad_lists_name_the_file() {
        for text in [
            "a",
            "1-",
            "-1",
            "3-1",
            "1,,2",
            "99999999999",
            "70000",
            "1 2",
            "+1",
        ] {
            assert!(parse(text).is_err(), "{text:?}");
        }
        let dir = std::env::temp_dir().join(format!("sluice-cpus-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("online");
        std::fs::write(&file, "0-x\n").unwrap();
        let e = read(&file).unwrap_err().to_string();
        assert!(e.contains("online") && e.contains("0-x"), "{e}");
        let e = read(dir.join("missing")).unwrap_err().to_string();
        assert!(e.contains("missing"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn this_machine() {
        let online = online().unwrap();
        let possible = possible().unwrap();
        assert!(!online.is_empty());
        assert!(online.iter().all(|c| possible.contains(c)));
        let n = std::thread::available_parallelism().map_or(1, usize::from);
        assert!(online.len() >= n.min(online.len()));
    }
}
