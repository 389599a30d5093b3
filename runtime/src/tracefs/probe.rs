//! Dynamic probes: a kprobe/kretprobe/uprobe/uretprobe definition written to tracefs
//! (Documentation/trace/kprobetrace.rst, uprobetracer.rst) under a name that carries our pid
//! (`p_<pid>_<n>_<func>`), the [`ProbeGuard`] that removes it on every exit path, and the
//! listing and cleaning of leftovers of killed runs (`sluice probes --clean`).

use super::error::{io_err, Error};
use super::mount::Tracefs;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The default probe group.
pub const GROUP: &str = "sluice";

/// The groups `sluice probes` lists and cleans: [`GROUP`], and `perf_bpf_probe`, the
/// group of perf's BPF loader that the seeds' section names create probes in.
pub const OUR_GROUPS: [&str; 2] = [GROUP, "perf_bpf_probe"];

/// Longest event name the kernel accepts (`MAX_EVENT_NAME_LEN`).
pub const MAX_EVENT_NAME_LEN: usize = 64;

/// What a dynamic probe fires on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProbeKind {
    /// Kernel function entry (or `+OFF`).
    Kprobe,
    /// Kernel function return.
    Kretprobe,
    /// User function entry (or `+OFF`).
    Uprobe,
    /// User function return.
    Uretprobe,
}

impl ProbeKind {
    /// The control file: `kprobe_events` or `uprobe_events`.
    #[must_use]
    pub fn control_file(self) -> &'static str {
        match self {
            ProbeKind::Kprobe | ProbeKind::Kretprobe => "kprobe_events",
            ProbeKind::Uprobe | ProbeKind::Uretprobe => "uprobe_events",
        }
    }

    fn is_return(self) -> bool {
        matches!(self, ProbeKind::Kretprobe | ProbeKind::Uretprobe)
    }
}

/// Where a probe goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbeTarget {
    /// A kernel symbol and byte offset into it.
    Kernel {
        /// The function.
        func: String,
        /// Offset from its start.
        offset: u64,
    },
    /// A file and a FILE offset in it (see [`uprobe_offset`](crate::tracefs::uprobe_offset));
    /// `func` only names the event.
    User {
        /// The binary or library.
        path: PathBuf,
        /// File offset of the instruction.
        offset: u64,
        /// Function name, for the event name.
        func: String,
    },
}

impl ProbeTarget {
    fn func(&self) -> &str {
        match self {
            ProbeTarget::Kernel { func, .. } | ProbeTarget::User { func, .. } => func,
        }
    }
}

/// A probe to create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeRequest {
    /// Entry or return, kernel or user.
    pub kind: ProbeKind,
    /// Where.
    pub target: ProbeTarget,
    /// Fetch-args, space-separated, as tracefs takes them (e.g. `%di +8(%si):u32`);
    /// empty for none.
    pub args: String,
}

/// A probe we made; removed from tracefs when dropped.
///
/// Removal fails with `EBUSY` while a perf event on the probe is still open: drop (close)
/// the perf events first, then the guard.
#[derive(Debug)]
pub struct ProbeGuard {
    root: PathBuf,
    kind: ProbeKind,
    group: String,
    event: String,
    removed: bool,
}

impl ProbeGuard {
    /// The group (`sluice`).
    #[must_use]
    pub fn group(&self) -> &str {
        &self.group
    }

    /// The event name (`p_<pid>_<n>_<func>`).
    #[must_use]
    pub fn event(&self) -> &str {
        &self.event
    }

    /// What kind of probe it is.
    #[must_use]
    pub fn kind(&self) -> ProbeKind {
        self.kind
    }

    /// Removes the probe now, reporting failure (dropping also removes, but only logs).
    ///
    /// # Errors
    /// [`Error::Io`] when the kernel refuses (`EBUSY`: a perf event still uses it).
    pub fn remove(mut self) -> Result<(), Error> {
        self.removed = true;
        remove_event(&self.root, self.kind, &self.group, &self.event)
    }
}

impl Drop for ProbeGuard {
    fn drop(&mut self) {
        if !self.removed {
            if let Err(e) = remove_event(&self.root, self.kind, &self.group, &self.event) {
                log::warn!("leaving probe {}/{} behind: {e}", self.group, self.event);
            }
        }
    }
}

/// Removes a probe event. The kernel refuses with EBUSY while a perf event on it is still
/// being released (the last close of a perf fd or ring mapping in another thread, or one
/// finishing its teardown), so EBUSY is retried for up to about two seconds before it is
/// reported.
fn remove_event(root: &Path, kind: ProbeKind, group: &str, event: &str) -> Result<(), Error> {
    let line = format!("-:{group}/{event}");
    let mut delay = std::time::Duration::from_millis(1);
    let mut waited = std::time::Duration::ZERO;
    loop {
        match write_command(root, kind.control_file(), &line) {
            Err(Error::Io { source, .. })
                if source.raw_os_error() == Some(libc::EBUSY)
                    && waited < std::time::Duration::from_secs(2) =>
            {
                std::thread::sleep(delay);
                waited += delay;
                delay = (delay * 2).min(std::time::Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

/// Appends one command line to a probe control file, in a single `write(2)` as the kernel
/// parses one command per write.
pub(super) fn write_command(root: &Path, file: &str, line: &str) -> Result<(), Error> {
    let path = root.join(file);
    let result = OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
    result.map_err(|source| {
        // Since 5.4 the kernel explains refused probe definitions in error_log; its last
        // entry is ours only if it quotes this command (an old entry, or another tool's,
        // would explain something else).
        let detail = std::fs::read_to_string(root.join("error_log"))
            .ok()
            .and_then(|log| error_reason_for(&log, line));
        Error::Io {
            path,
            op: format!("write {line:?}"),
            source,
            detail,
        }
    })
}

/// The reason of the last tracefs `error_log` entry, whose entries read
/// `[time] trace_uprobe: error: REASON` then `  Command: COMMAND` and a caret line, when
/// that entry's command is `command`.
fn error_reason_for(log: &str, command: &str) -> Option<String> {
    let lines: Vec<&str> = log.lines().collect();
    let at = lines.iter().rposition(|l| l.contains("error: "))?;
    let (_, reason) = lines.get(at)?.split_once("error: ")?;
    let quoted = lines
        .get(at + 1)?
        .trim_start()
        .strip_prefix("Command:")?
        .trim();
    (quoted == command.trim()).then(|| reason.trim().to_owned())
}

/// A probe of group `sluice` found in a control file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedProbe {
    /// Kind, from the control file and the `p:`/`r:` prefix.
    pub kind: ProbeKind,
    /// Group.
    pub group: String,
    /// Event name.
    pub event: String,
    /// The pid of the sluice process that made it, when the name carries one.
    pub pid: Option<u32>,
    /// The whole definition line as the kernel prints it.
    pub definition: String,
}

/// Counter making event names unique within this process.
static NEXT_PROBE: AtomicU32 = AtomicU32::new(0);

impl Tracefs {
    fn control(&self, kind: ProbeKind) -> Result<PathBuf, Error> {
        let path = self.root().join(kind.control_file());
        if path.exists() {
            return Ok(path);
        }
        Err(match kind {
            ProbeKind::Kprobe | ProbeKind::Kretprobe => Error::Unsupported {
                feature: "kprobe events",
                config: "CONFIG_KPROBE_EVENTS",
                path,
            },
            ProbeKind::Uprobe | ProbeKind::Uretprobe => Error::Unsupported {
                feature: "uprobe events",
                config: "CONFIG_UPROBE_EVENTS",
                path,
            },
        })
    }

    /// Whether the kernel offers probes of `kind` (its control file exists).
    #[must_use]
    pub fn supports(&self, kind: ProbeKind) -> bool {
        self.control(kind).is_ok()
    }

    /// Creates a probe in group [`GROUP`] and returns the guard that removes it.
    ///
    /// # Errors
    /// [`Error::Unsupported`] naming `CONFIG_KPROBE_EVENTS`/`CONFIG_UPROBE_EVENTS` when the
    /// control file is missing; [`Error::Request`] for a path or argument with a character
    /// tracefs cannot take; [`Error::Io`] (with the kernel's `error_log` line) when the
    /// kernel refuses the definition.
    pub fn add_probe(&self, req: &ProbeRequest) -> Result<ProbeGuard, Error> {
        self.add_probe_in(GROUP, req)
    }

    /// As [`Tracefs::add_probe`] in another group (e.g. `perf_bpf_probe`).
    ///
    /// # Errors
    /// As [`Tracefs::add_probe`].
    pub fn add_probe_in(&self, group: &str, req: &ProbeRequest) -> Result<ProbeGuard, Error> {
        self.control(req.kind)?;
        if !is_ident(group) {
            return Err(Error::Request {
                text: group.into(),
                what: "group is not an identifier",
            });
        }
        if req.args.contains(['\n', '\0']) {
            return Err(Error::Request {
                text: req.args.clone(),
                what: "argument with a newline",
            });
        }
        let n = NEXT_PROBE.fetch_add(1, Ordering::Relaxed);
        let event = event_name_in(
            req.kind,
            std::process::id(),
            pid_namespace(),
            n,
            req.target.func(),
        );
        let location = match &req.target {
            ProbeTarget::Kernel { func, offset } => {
                if !func
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
                {
                    return Err(Error::Request {
                        text: func.clone(),
                        what: "not a kernel symbol",
                    });
                }
                if *offset == 0 {
                    func.clone()
                } else {
                    format!("{func}+{offset}")
                }
            }
            ProbeTarget::User { path, offset, .. } => {
                let p = path
                    .to_str()
                    .filter(|p| !p.contains([' ', '\t', '\n', '\0']));
                let Some(p) = p else {
                    return Err(Error::Request {
                        text: path.display().to_string(),
                        what: "uprobe path with whitespace or non-UTF-8 bytes",
                    });
                };
                format!("{p}:{offset:#x}")
            }
        };
        let prefix = if req.kind.is_return() { 'r' } else { 'p' };
        let mut line = format!("{prefix}:{group}/{event} {location}");
        if !req.args.trim().is_empty() {
            line.push(' ');
            line.push_str(req.args.trim());
        }
        write_command(self.root(), req.kind.control_file(), &line)?;
        Ok(ProbeGuard {
            root: self.root().to_path_buf(),
            kind: req.kind,
            group: group.to_owned(),
            event,
            removed: false,
        })
    }

    /// Probes of `group` currently defined, from `kprobe_events` and `uprobe_events` (a
    /// missing control file contributes nothing).
    ///
    /// # Errors
    /// [`Error::Io`] when a control file exists but cannot be read.
    pub fn list(&self, group: &str) -> Result<Vec<ListedProbe>, Error> {
        let mut out = Vec::new();
        for (file, entry, ret) in [
            ("kprobe_events", ProbeKind::Kprobe, ProbeKind::Kretprobe),
            ("uprobe_events", ProbeKind::Uprobe, ProbeKind::Uretprobe),
        ] {
            let path = self.root().join(file);
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_err(&path, "read")(e)),
            };
            for line in text.lines() {
                if let Some(p) = parse_listed(line, entry, ret).filter(|p| p.group == group) {
                    out.push(p);
                }
            }
        }
        Ok(out)
    }

    /// Probes of sluice's groups ([`OUR_GROUPS`]).
    ///
    /// # Errors
    /// As [`Tracefs::list`].
    pub fn list_ours(&self) -> Result<Vec<ListedProbe>, Error> {
        let mut all = Vec::new();
        for group in OUR_GROUPS {
            all.extend(self.list(group)?);
        }
        Ok(all)
    }

    /// Removes the probes of `group` that no perf event uses: what a killed run left
    /// behind. The kernel is the judge, not the pid in a name (a pid means nothing across
    /// PID namespaces, and may have been reused): a probe with an open perf event cannot
    /// be removed (`EBUSY`), so one attempt each removes exactly the unused ones. A probe
    /// that another run has just created and not yet opened (the few instructions between
    /// its `write` and its `perf_event_open`) counts as unused. Returns the probes removed.
    ///
    /// # Errors
    /// [`Error::Io`] when listing fails or the kernel refuses a removal for another
    /// reason than `EBUSY`; probes removed before the failure stay removed.
    pub fn clean_unused_in(&self, group: &str) -> Result<Vec<ListedProbe>, Error> {
        let mut removed = Vec::new();
        for p in self.list(group)? {
            let line = format!("-:{}/{}", p.group, p.event);
            match write_command(self.root(), p.kind.control_file(), &line) {
                Ok(()) => removed.push(p),
                Err(Error::Io { source, .. }) if source.raw_os_error() == Some(libc::EBUSY) => {}
                // Gone meanwhile (its run ended and removed it).
                Err(Error::Io { source, .. }) if source.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(removed)
    }

    /// [`Tracefs::clean_unused_in`] for each of [`OUR_GROUPS`].
    ///
    /// # Errors
    /// As [`Tracefs::clean_unused_in`].
    pub fn clean_unused(&self) -> Result<Vec<ListedProbe>, Error> {
        // No run is between creating a probe and opening its events meanwhile.
        let _alone = SetupLock::take(LockKind::Exclusive);
        let mut removed = Vec::new();
        for group in OUR_GROUPS {
            removed.extend(self.clean_unused_in(group)?);
        }
        Ok(removed)
    }
}

/// How a run and `sluice probes --clean` keep out of each other's way: a run holds the
/// lock shared while it creates probes and opens their perf events (a probe is unused for
/// the moment between the two), `--clean` holds it exclusively while it removes what is
/// unused. `flock(2)` locks go with their process, so a killed run holds nothing.
#[derive(Debug)]
pub struct SetupLock {
    _file: Option<std::fs::File>,
}

/// Whether a [`SetupLock`] is shared (runs setting up) or exclusive (`--clean`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// Many runs at once.
    Shared,
    /// Alone.
    Exclusive,
}

impl SetupLock {
    /// Takes the lock (waiting for it), on `/run/lock/sluice-probes.lock` (else in `/tmp`).
    /// Where neither can be opened (a read-only system), nothing is locked and the race the
    /// lock closes stays open: a best effort, never a failure of the run.
    #[must_use]
    pub fn take(kind: LockKind) -> SetupLock {
        use std::os::unix::fs::OpenOptionsExt as _;
        let dir = ["/run/lock", "/tmp"]
            .into_iter()
            .find(|d| Path::new(d).is_dir());
        let file = dir.and_then(|d| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o644)
                .custom_flags(libc::O_NOFOLLOW)
                .open(Path::new(d).join("sluice-probes.lock"))
                .ok()
        });
        let op = match kind {
            LockKind::Shared => rustix::fs::FlockOperation::LockShared,
            LockKind::Exclusive => rustix::fs::FlockOperation::LockExclusive,
        };
        let file = file.filter(|f| loop {
            match rustix::fs::flock(f, op) {
                Err(rustix::io::Errno::INTR) => {}
                r => break r.is_ok(),
            }
        });
        SetupLock { _file: file }
    }
}

/// `p_<pid>_<n>_<func>` (or `r_`), the function part reduced to `[A-Za-z0-9_]` and the
/// whole cut to [`MAX_EVENT_NAME_LEN`]: the name of a probe made in the initial PID
/// namespace ([`event_name_in`] with `None`).
#[must_use]
pub fn event_name(kind: ProbeKind, pid: u32, n: u32, func: &str) -> String {
    event_name_in(kind, pid, None, n, func)
}

/// The initial PID namespace's inode number (`PROC_PID_INIT_INO`).
const INIT_PID_NAMESPACE: u64 = 0xEFFF_FFFC;

/// The inode of this process's PID namespace when it is not the initial one: pids repeat
/// across namespaces (every container's first process is 1), the namespace's inode does
/// not while it lives. `None` in the initial namespace or when `/proc` cannot say.
#[must_use]
pub fn pid_namespace() -> Option<u64> {
    use std::os::unix::fs::MetadataExt as _;
    let ino = std::fs::metadata("/proc/self/ns/pid").ok()?.ino();
    (ino != INIT_PID_NAMESPACE).then_some(ino)
}

/// A probe's event name: [`event_name`]'s in the initial PID namespace, and
/// `p_<pid>_<n>_ns<inode>_<func>` in another, so that two runs with the same pid in two
/// namespaces never share a name (tracefs would append the second definition to the
/// first event, or refuse it).
#[must_use]
pub fn event_name_in(
    kind: ProbeKind,
    pid: u32,
    namespace: Option<u64>,
    n: u32,
    func: &str,
) -> String {
    let prefix = if kind.is_return() { 'r' } else { 'p' };
    let mut name = match namespace {
        None => format!("{prefix}_{pid}_{n}_"),
        Some(ns) => format!("{prefix}_{pid}_{n}_ns{ns}_"),
    };
    let room = MAX_EVENT_NAME_LEN.saturating_sub(name.len());
    name.extend(
        func.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(room),
    );
    name
}

/// The pid in an event name made by [`event_name`] in the initial PID namespace; `None`
/// for another name, and for one made in another namespace (its pid is not one this
/// namespace can look up).
#[must_use]
pub fn pid_of_event(event: &str) -> Option<u32> {
    let rest = event
        .strip_prefix("p_")
        .or_else(|| event.strip_prefix("r_"))?;
    let (pid, rest) = rest.split_once('_')?;
    let (n, rest) = rest.split_once('_')?;
    if pid.is_empty() || n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let namespaced = rest.strip_prefix("ns").and_then(|r| r.split_once('_'));
    if namespaced.is_some_and(|(ino, _)| !ino.is_empty() && ino.bytes().all(|b| b.is_ascii_digit()))
    {
        return None;
    }
    pid.parse().ok()
}

fn parse_listed(line: &str, entry: ProbeKind, ret: ProbeKind) -> Option<ListedProbe> {
    // "p:group/event location args..." (kernels print "p:" / "r:" / "r16:" ...)
    let (head, _) = line.split_once(' ').unwrap_or((line, ""));
    let (kind, name) = head.split_once(':')?;
    let (group, event) = name.split_once('/')?;
    let kind = match kind.as_bytes().first()? {
        b'p' => entry,
        b'r' => ret,
        _ => return None,
    };
    Some(ListedProbe {
        kind,
        group: group.to_owned(),
        event: event.to_owned(),
        pid: pid_of_event(event),
        definition: line.to_owned(),
    })
}

fn is_ident(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
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
    fn names_and_listing() {
        assert_eq!(event_name(ProbeKind::Uprobe, 42, 3, "main"), "p_42_3_main");
        assert_eq!(
            event_name(ProbeKind::Kretprobe, 1, 0, "a.b::c"),
            "r_1_0_a_b__c"
        );
        let long = event_name(ProbeKind::Uprobe, 4_000_000, 9, &"x".repeat(200));
        assert_eq!(long.len(), MAX_EVENT_NAME_LEN);
        assert_eq!(pid_of_event("p_42_3_main"), Some(42));
        assert_eq!(pid_of_event("r_7_0_f_o_o"), Some(7));
        assert_eq!(pid_of_event("p_x_3_main"), None);
        assert_eq!(pid_of_event("main"), None);
        let l = parse_listed(
            "r:sluice/r_9_1_f /bin/true:0x0000000000001139",
            ProbeKind::Uprobe,
            ProbeKind::Uretprobe,
        )
        .unwrap();
        assert_eq!(
            (l.kind, l.group.as_str(), l.event.as_str(), l.pid),
            (ProbeKind::Uretprobe, "sluice", "r_9_1_f", Some(9))
        );
        assert!(parse_listed("garbage", ProbeKind::Kprobe, ProbeKind::Kretprobe).is_none());
    }

    #[test]
    fn error_log_reason() {
        let log = "[  12.5] trace_uprobe: error: Parse error\n  Command: p:x/y /bin/true:0x10 %zz\n   ^\n\
                   [  13.0] trace_uprobe: error: Invalid register name\n  Command: p:x/y %q\n   ^\n";
        assert_eq!(
            error_reason_for(log, "p:x/y %q").as_deref(),
            Some("Invalid register name")
        );
        // The last entry explains another command (an old one, another tool's): not ours.
        assert_eq!(error_reason_for(log, "p:x/y /bin/true:0x10 %zz"), None);
        assert_eq!(error_reason_for(log, "p:sluice/p_1_0_f /bin/x:0x1"), None);
        assert_eq!(error_reason_for("", "p:x/y %q"), None);
    }
}
