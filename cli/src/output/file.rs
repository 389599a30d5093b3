//! `-o FILE`: where the samples go, opened as late and as safely as possible. The file is
//! created (and an earlier one truncated) only once the recording has started, so a run
//! that fails to load keeps what was there; a symbolic link is followed only when it
//! belongs to the user or to root ([`sluice_runtime::sys::file::trusted_link`]).

use crate::fail::Failure;
use sluice_runtime::sys::file;
use std::fs::File;
use std::path::Path;

/// Before anything is loaded: the path's directory exists, it is no directory itself, and
/// a link there may be followed. Nothing is created.
///
/// # Errors
/// Bad input naming the path.
pub fn check(path: &Path) -> Result<(), Failure> {
    let bad = |what: String| Failure::input(format!("{}: {what}", path.display()));
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(bad(format!(
            "cannot create: no directory {}",
            dir.display()
        )));
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            file::trusted_link(&m).map_err(|e| bad(e.to_string()))
        }
        Ok(m) if m.is_dir() => Err(bad("cannot create: is a directory".into())),
        _ => Ok(()),
    }
}

/// Creates or truncates the output ([`file::create_output`]).
///
/// # Errors
/// Bad input for a link that may not be followed; a runtime failure for the `open(2)`
/// error.
pub fn create(path: &Path) -> Result<File, Failure> {
    file::create_output(path).map_err(|e| {
        let text = format!("{}: cannot create: {e}", path.display());
        match e.kind() {
            std::io::ErrorKind::InvalidInput => Failure::input(text),
            _ => Failure::runtime(text, None),
        }
    })
}
