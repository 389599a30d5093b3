//! Files named by the user (objects, uprobe targets, BTF, debug info): opened without
//! blocking and taken only when regular. A FIFO would block `open(2)` or `read(2)` forever
//! (and a blocked `open` ignores the `SIGINT` handler's flag), a character device such as
//! `/dev/zero` reads without end until memory runs out; neither is an ELF file.

use std::fs::{File, OpenOptions};
use std::io::{Error, ErrorKind, Read as _};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

/// Opens `path` for reading with `O_NONBLOCK` (so opening a FIFO returns at once) and
/// returns it only if it is a regular file (symlinks followed, as a user naming a library
/// by its link expects).
///
/// # Errors
/// The `open(2)`/`fstat(2)` error, or [`ErrorKind::InvalidInput`] "not a regular file (a
/// FIFO)" naming what it is.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    let what = if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_dir() {
        "a directory"
    } else {
        "not a file"
    };
    Err(Error::new(
        ErrorKind::InvalidInput,
        format!("not a regular file ({what})"),
    ))
}

/// The whole of the regular file at `path` ([`open_regular`]).
///
/// # Errors
/// As [`open_regular`], and the `read(2)` error.
pub fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = open_regular(path)?;
    let size = file.metadata()?.len();
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Whether a symbolic link may be followed for writing: it belongs to this user or to root
/// (`/dev/stdout`), the rule `fs.protected_symlinks` applies in sticky directories, so a
/// link another user planted in `/tmp` cannot make a root run overwrite what it points to.
///
/// # Errors
/// [`ErrorKind::InvalidInput`] naming the link's owner when it may not be followed.
pub fn trusted_link(link: &std::fs::Metadata) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    let me = rustix::process::geteuid().as_raw();
    if link.uid() == 0 || link.uid() == me {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::InvalidInput,
        format!(
            "is a symbolic link of user {} (neither yours nor root's): not followed",
            link.uid()
        ),
    ))
}

/// Creates (or truncates) `path` for writing with `O_NOFOLLOW`; a symbolic link is then
/// followed only when [`trusted_link`] allows it.
///
/// # Errors
/// [`trusted_link`]'s; the `open(2)` error.
pub fn create_output(path: &Path) -> std::io::Result<File> {
    let open = |follow: bool| {
        let mut o = OpenOptions::new();
        o.write(true).create(true).truncate(true);
        if !follow {
            o.custom_flags(libc::O_NOFOLLOW);
        }
        o.open(path)
    };
    match open(false) {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            trusted_link(&std::fs::symlink_metadata(path)?)?;
            open(true)
        }
        other => other,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_taken() {
        let dir = std::env::temp_dir().join(format!("sluice-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let regular = dir.join("regular");
        std::fs::write(&regular, b"\x7fELF").unwrap();
        assert_eq!(read_regular(&regular).unwrap(), b"\x7fELF");
        let fifo = dir.join("fifo");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        for (path, says) in [
            (fifo.as_path(), "a FIFO"),
            (Path::new("/dev/zero"), "a character device"),
            (dir.as_path(), "a directory"),
        ] {
            let e = read_regular(path).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{path:?}");
            assert!(e.to_string().contains(says), "{path:?}: {e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
