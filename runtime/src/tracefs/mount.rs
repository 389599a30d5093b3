//! Finding (and when root, mounting) tracefs, and reading an event's `id` and `format`.

use super::error::{io_err, Error};
use super::format::EventFormat;
use super::places::CANDIDATES;
use std::path::{Path, PathBuf};

/// A mounted tracefs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracefs {
    root: PathBuf,
}

impl Tracefs {
    /// tracefs at `root`, without checking it.
    #[must_use]
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Tracefs { root: root.into() }
    }

    /// Finds tracefs: a mounted one among [`CANDIDATES`] (or any tracefs mount listed in
    /// `/proc/self/mounts`); when there is none and we are root, mounts tracefs on the
    /// first candidate.
    ///
    /// # Errors
    /// [`Error::NotFound`] when none is mounted and mounting is impossible or fails.
    pub fn find() -> Result<Self, Error> {
        let looks_mounted =
            |p: &Path| p.join("events").is_dir() || p.join("uprobe_events").exists();
        for c in CANDIDATES {
            if looks_mounted(Path::new(c)) {
                return Ok(Tracefs::at(c));
            }
        }
        if let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") {
            for line in mounts.lines() {
                let mut f = line.split_whitespace();
                if let (Some(_), Some(dir), Some("tracefs")) = (f.next(), f.next(), f.next()) {
                    if looks_mounted(Path::new(dir)) {
                        return Ok(Tracefs::at(dir));
                    }
                }
            }
        }
        let tried = CANDIDATES.iter().map(PathBuf::from).collect();
        if !rustix::process::geteuid().is_root() {
            // Mounted, but root's alone (mode 0700): say that, not "not found".
            for c in CANDIDATES {
                if let Err(source) = std::fs::read_dir(c) {
                    if source.kind() == std::io::ErrorKind::PermissionDenied {
                        return Err(Error::NotReadable {
                            path: PathBuf::from(c),
                            source,
                        });
                    }
                }
            }
            return Err(Error::NotFound { tried, mount: None });
        }
        let target = CANDIDATES[0];
        match rustix::mount::mount(
            "nodev",
            target,
            "tracefs",
            rustix::mount::MountFlags::empty(),
            None,
        ) {
            Ok(()) if looks_mounted(Path::new(target)) => {
                log::info!("mounted tracefs on {target}");
                Ok(Tracefs::at(target))
            }
            Ok(()) => Err(Error::NotFound { tried, mount: None }),
            Err(e) => Err(Error::NotFound {
                tried,
                mount: Some(e),
            }),
        }
    }

    /// The directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `id` of event `group/event` (`events/GROUP/EVENT/id`): the `config` of a
    /// `PERF_TYPE_TRACEPOINT` perf event.
    ///
    /// # Errors
    /// [`Error::Io`] when the event does not exist; [`Error::Parse`] when `id` is not a number.
    pub fn event_id(&self, group: &str, event: &str) -> Result<u64, Error> {
        let path = self.root.join("events").join(group).join(event).join("id");
        let text = std::fs::read_to_string(&path).map_err(io_err(&path, "read"))?;
        text.trim().parse().map_err(|_| Error::Parse {
            path,
            line: 1,
            what: "id is not a number",
        })
    }

    /// The parsed `format` of event `group/event`.
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be read; [`Error::Parse`] on a malformed field line.
    pub fn event_format(&self, group: &str, event: &str) -> Result<EventFormat, Error> {
        let path = self
            .root
            .join("events")
            .join(group)
            .join(event)
            .join("format");
        let text = std::fs::read_to_string(&path).map_err(io_err(&path, "read"))?;
        EventFormat::parse(&text).map_err(|(line, what)| Error::Parse { path, line, what })
    }
}
