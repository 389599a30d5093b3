//! Where a perf.data stream goes: a file written atomically, or stdout in pipe mode.
//!
//! A file is written under a temporary name in its own directory (created with
//! `O_CREAT | O_EXCL`, which never follows a symbolic link), and renamed over `FILE` only
//! once complete; an earlier `FILE` is kept as `FILE.old`, as `perf record` keeps it.
//! Symbolic links follow the rule of `-o` ([`file::trusted_link`]): `FILE` being a link of
//! the user or root is written where it leads (the temporary file beside the link's end,
//! renamed over it), a link of anyone else is refused before anything is recorded, and a
//! link made meanwhile is replaced by `rename(2)`, never written through. A recording that
//! fails or is dropped removes its temporary file.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::AsFd as _;
use std::path::{Path, PathBuf};

use sluice_runtime::sys::file;
use sluice_runtime::sys::out::{StopWriter, Stops};

/// Why a target cannot be used.
#[derive(Debug)]
pub enum TargetError {
    /// `FILE` is a symbolic link that may not be followed (of another user, or a loop).
    Symlink {
        /// The link.
        path: PathBuf,
        /// Why it is not followed.
        why: std::io::Error,
    },
    /// Creating, writing or renaming failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
}

impl std::fmt::Display for TargetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetError::Symlink { path, why } => write!(f, "{}: {why}", path.display()),
            TargetError::Io { path, what, source } => {
                write!(f, "{}: {what}: {source}", path.display())
            }
        }
    }
}

/// The output of a perf.data recording.
#[derive(Debug)]
pub enum Target {
    /// A seekable file, renamed into place by [`Target::commit`].
    File {
        /// The name asked for.
        path: PathBuf,
        /// The temporary name written.
        temp: PathBuf,
        /// The open temporary file (`None` once committed).
        file: Option<File>,
    },
    /// Pipe mode on stdout.
    Pipe(std::io::Stdout),
}

fn io<'p>(path: &'p Path, what: &'static str) -> impl FnOnce(std::io::Error) -> TargetError + 'p {
    move |source| TargetError::Io {
        path: path.to_path_buf(),
        what,
        source,
    }
}

impl Target {
    /// `-` is stdout (pipe mode); anything else a file, where its trusted links lead
    /// ([`resolve`]), created under a temporary name beside it.
    ///
    /// # Errors
    /// [`TargetError::Symlink`]; [`TargetError::Io`] when the temporary file cannot be made.
    pub fn open(path: &Path) -> Result<Target, TargetError> {
        if path == Path::new("-") {
            return Ok(Target::Pipe(std::io::stdout()));
        }
        let path = &resolve(path)?;
        let name = path
            .file_name()
            .map_or_else(|| "perf.data".into(), |n| n.to_string_lossy().into_owned());
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        for n in 0..100u32 {
            let temp_name = format!(".{name}.sluice-{}-{n}.tmp", std::process::id());
            let temp = dir.map_or_else(|| PathBuf::from(&temp_name), |d| d.join(&temp_name));
            match std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&temp)
            {
                Ok(file) => {
                    return Ok(Target::File {
                        path: path.to_path_buf(),
                        temp,
                        file: Some(file),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(io(&temp, "cannot create")(e)),
            }
        }
        Err(TargetError::Io {
            path: path.to_path_buf(),
            what: "no free temporary name beside it",
            source: std::io::ErrorKind::AlreadyExists.into(),
        })
    }

    /// Whether this is pipe mode.
    pub fn is_pipe(&self) -> bool {
        matches!(self, Target::Pipe(_))
    }

    /// Appends `bytes`; to a pipe, through a [`StopWriter`] when `stops` are given.
    ///
    /// # Errors
    /// The write's ([`ErrorKind::WouldBlock`](std::io::ErrorKind::WouldBlock) when a stop
    /// came while the pipe stayed full).
    pub fn write_all(&mut self, bytes: &[u8], stops: Option<Stops<'_>>) -> std::io::Result<()> {
        match self {
            Target::File { file: Some(f), .. } => f.write_all(bytes),
            Target::File { file: None, .. } => Err(std::io::ErrorKind::NotConnected.into()),
            Target::Pipe(out) => {
                let mut lock = out.lock();
                // What std buffered, then the bytes straight to the fd.
                lock.flush()?;
                match stops {
                    Some(stops) => StopWriter::new(lock.as_fd(), stops).write_all(bytes),
                    None => {
                        lock.write_all(bytes)?;
                        lock.flush()
                    }
                }
            }
        }
    }

    /// Writes `bytes` at `offset` of a file (the final header), keeping the position.
    ///
    /// # Errors
    /// The seek's or write's; pipe mode cannot seek.
    pub fn write_at(&mut self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Target::File { file: Some(f), .. } => {
                let end = f.stream_position()?;
                f.seek(SeekFrom::Start(offset))?;
                f.write_all(bytes)?;
                f.seek(SeekFrom::Start(end))?;
                Ok(())
            }
            _ => Err(std::io::ErrorKind::Unsupported.into()),
        }
    }

    /// Ends the output: a file is synced, an earlier `FILE` becomes `FILE.old`, and the
    /// temporary file takes its name; stdout is flushed.
    ///
    /// # Errors
    /// [`TargetError`] of the step that failed (the temporary file is then removed).
    pub fn commit(&mut self) -> Result<(), TargetError> {
        let Target::File { path, temp, file } = self else {
            return Ok(());
        };
        if let Some(f) = file.take() {
            f.sync_all().map_err(io(temp, "cannot sync"))?;
        }
        refuse_symlink(path)?;
        if std::fs::symlink_metadata(&*path).is_ok() {
            let mut old = path.clone().into_os_string();
            old.push(".old");
            let old = PathBuf::from(old);
            match std::fs::remove_file(&old) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(&old, "cannot remove")(e)),
            }
            std::fs::hard_link(&*path, &old)
                .or_else(|_| std::fs::rename(&*path, &old))
                .map_err(io(&old, "cannot keep the earlier file as"))?;
        }
        std::fs::rename(&*temp, &*path).map_err(io(path, "cannot rename the recording to"))?;
        *temp = PathBuf::new();
        Ok(())
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Target::File { temp, .. } = self {
            if !temp.as_os_str().is_empty() {
                let _ = std::fs::remove_file(&*temp);
            }
        }
    }
}

/// Where `path` leads: each symbolic link on the way followed when it is the user's or
/// root's ([`file::trusted_link`], the rule of `-o`), at most 40 of them (the kernel's
/// `ELOOP` limit); a name that is no link (or does not exist yet) is the end.
///
/// # Errors
/// [`TargetError::Symlink`] for a link that may not be followed or too many of them.
pub fn resolve(path: &Path) -> Result<PathBuf, TargetError> {
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        let link = match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => m,
            _ => return Ok(at),
        };
        let refuse = |why| TargetError::Symlink {
            path: at.clone(),
            why,
        };
        file::trusted_link(&link).map_err(refuse)?;
        let to = std::fs::read_link(&at).map_err(refuse)?;
        at = match at.parent() {
            Some(dir) if to.is_relative() => dir.join(to),
            _ => to,
        };
    }
    Err(TargetError::Symlink {
        path: path.to_path_buf(),
        why: std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "too many levels of symbolic links",
        ),
    })
}

fn refuse_symlink(path: &Path) -> Result<(), TargetError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(TargetError::Symlink {
            path: path.to_path_buf(),
            why: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "became a symbolic link while recording: not written through",
            ),
        }),
        _ => Ok(()),
    }
}
