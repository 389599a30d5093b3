//! tracefs: where dynamic probes are made and tracepoints are described.
//!
//! - [`Tracefs::find`] locates the filesystem (`/sys/kernel/tracing`, then
//!   `/sys/kernel/debug/tracing`), mounting it when it is absent and we are root.
//! - [`Tracefs::add_probe`] writes a kprobe/kretprobe/uprobe/uretprobe definition
//!   (Documentation/trace/kprobetrace.rst, uprobetracer.rst) in group [`GROUP`] under a name
//!   that carries our pid (`p_<pid>_<n>_<func>`), and returns a [`ProbeGuard`] that removes it
//!   (`-:group/event`) when dropped, on every exit path.
//! - [`Tracefs::event_id`] and [`Tracefs::event_format`] read an event's `id` (the
//!   `config` of a `PERF_TYPE_TRACEPOINT` perf event) and its `format` (where each field
//!   sits in the sample's RAW data).
//! - [`Tracefs::list_ours`] and [`Tracefs::clean_dead`] find leftovers of killed runs, for
//!   `sluice probes --clean`.
//! - [`uprobe_offset`] turns `PATH:FUNC[+OFF]` into the FILE offset that uprobe_events
//!   wants, through the target ELF's symbols and `PT_LOAD` program headers.

use std::fmt;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// The default probe group.
pub const GROUP: &str = "sluice";

/// Where tracefs is looked for, in order. The first is also where it is mounted.
pub const CANDIDATES: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Longest event name the kernel accepts (`MAX_EVENT_NAME_LEN`).
pub const MAX_EVENT_NAME_LEN: usize = 64;

/// Errors of tracefs, each naming the file concerned.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// tracefs is neither mounted nor mountable (not root, or mount failed).
    NotFound {
        /// Directories looked at.
        tried: Vec<PathBuf>,
        /// Why mounting was not possible, if it was tried.
        mount: Option<rustix::io::Errno>,
    },
    /// Reading or writing a tracefs file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// What we were doing (`"read"`, `"write -:sluice/p_1_0_f"` ...).
        op: String,
        /// Why; for probe definitions the kernel's `error_log` line is in `detail`.
        source: std::io::Error,
        /// The reason of the last tracefs `error_log` entry, when the kernel wrote one.
        detail: Option<String>,
    },
    /// The kernel lacks a tracing feature.
    Unsupported {
        /// What is missing.
        feature: &'static str,
        /// The kernel option that provides it.
        config: &'static str,
        /// The file that is absent.
        path: PathBuf,
    },
    /// A tracefs file does not have the expected syntax.
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        what: &'static str,
    },
    /// A uprobe target cannot be resolved to a file offset.
    Symbol {
        /// The target binary.
        path: PathBuf,
        /// The function.
        func: String,
        /// What is wrong.
        what: String,
    },
    /// A probe request that cannot be written (bad target syntax, characters the kernel
    /// would reject).
    Request {
        /// The text given.
        text: String,
        /// What is wrong.
        what: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotFound { tried, mount } => {
                write!(f, "tracefs not found (tried")?;
                for t in tried {
                    write!(f, " {}", t.display())?;
                }
                write!(f, ")")?;
                match mount {
                    Some(e) => write!(f, "; mounting it on {} failed: {e}", CANDIDATES[0]),
                    None => write!(
                        f,
                        "; run as root to mount it, or: mount -t tracefs nodev {}",
                        CANDIDATES[0]
                    ),
                }
            }
            Error::Io {
                path,
                op,
                source,
                detail,
            } => {
                write!(f, "{}: {op}: {source}", path.display())?;
                if let Some(d) = detail {
                    write!(f, " (kernel: {d})")?;
                }
                Ok(())
            }
            Error::Unsupported {
                feature,
                config,
                path,
            } => write!(
                f,
                "this kernel has no {feature} ({} is missing): it needs {config}=y",
                path.display()
            ),
            Error::Parse { path, line, what } => write!(f, "{}:{line}: {what}", path.display()),
            Error::Symbol { path, func, what } => {
                write!(f, "{}: cannot probe {func:?}: {what}", path.display())
            }
            Error::Request { text, what } => write!(f, "probe {text:?}: {what}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::NotFound { mount: Some(e), .. } => Some(e),
            _ => None,
        }
    }
}

fn io_err(path: &Path, op: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error + '_ {
    let op = op.into();
    move |source| Error::Io {
        path: path.to_path_buf(),
        op,
        source,
        detail: None,
    }
}

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
    /// A file and a FILE offset in it (see [`uprobe_offset`]); `func` only names the event.
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
fn write_command(root: &Path, file: &str, line: &str) -> Result<(), Error> {
    let path = root.join(file);
    let result = OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
    result.map_err(|source| {
        // Since 5.4 the kernel explains refused probe definitions in error_log.
        let detail = std::fs::read_to_string(root.join("error_log"))
            .ok()
            .and_then(|log| last_error_reason(&log));
        Error::Io {
            path,
            op: format!("write {line:?}"),
            source,
            detail,
        }
    })
}

/// The reason of the last entry of tracefs `error_log`, whose entries read
/// `[time] trace_uprobe: error: REASON` then `  Command: ...` and a caret line.
fn last_error_reason(log: &str) -> Option<String> {
    let line = log.lines().rev().find(|l| l.contains("error: "))?;
    let (_, reason) = line.split_once("error: ")?;
    Some(reason.trim().to_owned())
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

/// A mounted tracefs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracefs {
    root: PathBuf,
}

/// Counter making event names unique within this process.
static NEXT_PROBE: AtomicU32 = AtomicU32::new(0);

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

    fn control(&self, kind: ProbeKind) -> Result<PathBuf, Error> {
        let path = self.root.join(kind.control_file());
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
        let event = event_name(req.kind, std::process::id(), n, req.target.func());
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
        write_command(&self.root, req.kind.control_file(), &line)?;
        Ok(ProbeGuard {
            root: self.root.clone(),
            kind: req.kind,
            group: group.to_owned(),
            event,
            removed: false,
        })
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
            let path = self.root.join(file);
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

    /// Probes of group [`GROUP`].
    ///
    /// # Errors
    /// As [`Tracefs::list`].
    pub fn list_ours(&self) -> Result<Vec<ListedProbe>, Error> {
        self.list(GROUP)
    }

    /// Removes probes of `group` whose name carries the pid of a process that no longer
    /// exists (a sluice run that was killed). Probes of live processes, and names without a
    /// pid, are left alone. Returns the probes removed.
    ///
    /// # Errors
    /// [`Error::Io`] when listing fails or the kernel refuses a removal (`EBUSY`: a perf
    /// event still uses it); probes removed before the failure stay removed.
    pub fn clean_dead_in(&self, group: &str) -> Result<Vec<ListedProbe>, Error> {
        let mut removed = Vec::new();
        for p in self.list(group)? {
            let Some(pid) = p.pid else { continue };
            if Path::new("/proc").join(pid.to_string()).exists() {
                continue;
            }
            remove_event(&self.root, p.kind, &p.group, &p.event)?;
            removed.push(p);
        }
        Ok(removed)
    }

    /// [`Tracefs::clean_dead_in`] for [`GROUP`].
    ///
    /// # Errors
    /// As [`Tracefs::clean_dead_in`].
    pub fn clean_dead(&self) -> Result<Vec<ListedProbe>, Error> {
        self.clean_dead_in(GROUP)
    }
}

/// `p_<pid>_<n>_<func>` (or `r_`), the function part reduced to `[A-Za-z0-9_]` and the
/// whole cut to [`MAX_EVENT_NAME_LEN`].
#[must_use]
pub fn event_name(kind: ProbeKind, pid: u32, n: u32, func: &str) -> String {
    let prefix = if kind.is_return() { 'r' } else { 'p' };
    let mut name = format!("{prefix}_{pid}_{n}_");
    let room = MAX_EVENT_NAME_LEN.saturating_sub(name.len());
    name.extend(
        func.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(room),
    );
    name
}

/// The pid in an event name made by [`event_name`].
#[must_use]
pub fn pid_of_event(event: &str) -> Option<u32> {
    let rest = event
        .strip_prefix("p_")
        .or_else(|| event.strip_prefix("r_"))?;
    let (pid, rest) = rest.split_once('_')?;
    let (n, _) = rest.split_once('_')?;
    if pid.is_empty() || n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !pid.bytes().all(|b| b.is_ascii_digit()) {
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

/// One field of an event's `format`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Name (`__syscall_nr`, `arg1`, `comm`).
    pub name: String,
    /// C type, without the name and array suffix (`int`, `unsigned long`, `char`).
    pub c_type: String,
    /// Offset in the RAW data.
    pub offset: usize,
    /// Size in the RAW data (the whole array for arrays; 4 for `__data_loc`).
    pub size: usize,
    /// Whether the kernel marks it signed.
    pub signed: bool,
    /// Element count of a fixed array (`char comm[16]`).
    pub array_len: Option<usize>,
    /// A `__data_loc` (or `__rel_loc`) field: a u32 `len << 16 | offset` locating
    /// variable-length data.
    pub data_loc: Option<DataLoc>,
}

/// How a dynamic field's u32 locates its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataLoc {
    /// `__data_loc`: the offset is from the start of the RAW data.
    Absolute,
    /// `__rel_loc`: the offset is from the end of this field.
    Relative,
}

impl Field {
    /// The bytes of the field in `raw`, `None` when out of bounds.
    #[must_use]
    pub fn bytes<'a>(&self, raw: &'a [u8]) -> Option<&'a [u8]> {
        raw.get(self.offset..self.offset.checked_add(self.size)?)
    }

    /// The field as an integer (sign-extended when signed), for sizes 1, 2, 4 and 8;
    /// `None` when out of bounds or of another size.
    #[must_use]
    pub fn read_i64(&self, raw: &[u8]) -> Option<i64> {
        let b = self.bytes(raw)?;
        Some(match (b.len(), self.signed) {
            (1, true) => i64::from(i8::from_ne_bytes(b.try_into().ok()?)),
            (1, false) => i64::from(u8::from_ne_bytes(b.try_into().ok()?)),
            (2, true) => i64::from(i16::from_ne_bytes(b.try_into().ok()?)),
            (2, false) => i64::from(u16::from_ne_bytes(b.try_into().ok()?)),
            (4, true) => i64::from(i32::from_ne_bytes(b.try_into().ok()?)),
            (4, false) => i64::from(u32::from_ne_bytes(b.try_into().ok()?)),
            (8, _) => i64::from_ne_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }

    /// The field as an unsigned integer (its bits, zero-extended), sizes 1, 2, 4, 8.
    #[must_use]
    pub fn read_u64(&self, raw: &[u8]) -> Option<u64> {
        let b = self.bytes(raw)?;
        let mut buf = [0u8; 8];
        match b.len() {
            1 | 2 | 4 | 8 if cfg!(target_endian = "little") => {
                buf.get_mut(..b.len())?.copy_from_slice(b)
            }
            1 | 2 | 4 | 8 => buf.get_mut(8 - b.len()..)?.copy_from_slice(b),
            _ => return None,
        }
        Some(u64::from_ne_bytes(buf))
    }

    /// The variable-length data of a `__data_loc`/`__rel_loc` field; `None` when the field
    /// is not one or its location is out of bounds.
    #[must_use]
    pub fn dynamic<'a>(&self, raw: &'a [u8]) -> Option<&'a [u8]> {
        let loc = self.data_loc?;
        let word = u32::from_ne_bytes(self.bytes(raw)?.try_into().ok()?);
        let (off, len) = ((word & 0xffff) as usize, (word >> 16) as usize);
        let start = match loc {
            DataLoc::Absolute => off,
            DataLoc::Relative => self.offset.checked_add(self.size)?.checked_add(off)?,
        };
        raw.get(start..start.checked_add(len)?)
    }
}

/// An event's `format` file: its name, id and fields (common ones included).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventFormat {
    /// `name:`.
    pub name: String,
    /// `ID:`.
    pub id: u64,
    /// Every `field:` line, in order.
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// The field called `name`.
    #[must_use]
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Parses the text of a `format` file.
    ///
    /// # Errors
    /// `(line, what)`: the 1-based line of a malformed `field:` entry.
    pub fn parse(text: &str) -> Result<Self, (usize, &'static str)> {
        let mut fmt = EventFormat::default();
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let t = line.trim();
            if let Some(v) = t.strip_prefix("name:") {
                fmt.name = v.trim().to_owned();
            } else if let Some(v) = t.strip_prefix("ID:") {
                fmt.id = v
                    .trim()
                    .parse()
                    .map_err(|_| (line_no, "ID is not a number"))?;
            } else if t.starts_with("field:") {
                fmt.fields
                    .push(parse_field(t).ok_or((line_no, "malformed field line"))?);
            }
        }
        Ok(fmt)
    }
}

/// `field:TYPE NAME[N];\toffset:O;\tsize:S;\tsigned:B;`
fn parse_field(line: &str) -> Option<Field> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once(':')?;
        match key.trim() {
            "field" => decl = Some(value.trim()),
            "offset" => offset = value.trim().parse().ok(),
            "size" => size = value.trim().parse().ok(),
            "signed" => signed = value.trim() == "1",
            _ => {}
        }
    }
    let decl = decl?;
    let (ty, name) = decl.rsplit_once(' ')?;
    let (name, array_len) = match name.split_once('[') {
        Some((n, rest)) => (n, Some(rest.strip_suffix(']')?.parse().ok()?)),
        None => (name, None),
    };
    let (data_loc, ty) = if let Some(t) = ty.strip_prefix("__data_loc ") {
        (Some(DataLoc::Absolute), t)
    } else if let Some(t) = ty.strip_prefix("__rel_loc ") {
        (Some(DataLoc::Relative), t)
    } else {
        (None, ty)
    };
    if name.is_empty() {
        return None;
    }
    Some(Field {
        name: name.to_owned(),
        c_type: ty.trim().trim_end_matches("[]").trim().to_owned(),
        offset: offset?,
        size: size?,
        signed,
        array_len: if data_loc.is_some() { None } else { array_len },
        data_loc,
    })
}

/// A `PATH:FUNC[+OFF]` uprobe target as written in a section name or on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UprobeSpec {
    /// The binary or library.
    pub path: PathBuf,
    /// The function symbol.
    pub func: String,
    /// Byte offset from the function's start.
    pub offset: u64,
}

impl UprobeSpec {
    /// Parses `PATH:FUNC[+OFF]` (OFF decimal or `0x` hex). The path is everything before
    /// the last `:`.
    ///
    /// # Errors
    /// [`Error::Request`] when a part is missing or OFF is not a number.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let bad = |what| Error::Request {
            text: text.to_owned(),
            what,
        };
        let (path, rest) = text
            .rsplit_once(':')
            .ok_or(bad("expected PATH:FUNC[+OFF]"))?;
        let (func, offset) = match rest.split_once('+') {
            Some((f, o)) => (f, parse_num(o).ok_or(bad("offset is not a number"))?),
            None => (rest, 0),
        };
        if path.is_empty() || func.is_empty() {
            return Err(bad("expected PATH:FUNC[+OFF]"));
        }
        Ok(UprobeSpec {
            path: path.into(),
            func: func.to_owned(),
            offset,
        })
    }

    /// Resolves to a uprobe [`ProbeTarget`] via [`uprobe_offset`].
    ///
    /// # Errors
    /// As [`uprobe_offset`].
    pub fn resolve(&self) -> Result<ProbeTarget, Error> {
        Ok(ProbeTarget::User {
            path: self.path.clone(),
            offset: uprobe_offset(&self.path, &self.func, self.offset)?,
            func: self.func.clone(),
        })
    }
}

fn parse_num(s: &str) -> Option<u64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The FILE offset of `func + offset` in the ELF file at `path`, as `uprobe_events` wants.
///
/// The symbol is looked up in `.symtab`, then `.dynsym` (stripped binaries, shared
/// libraries). Its value is a virtual address; the `PT_LOAD` segment containing it maps
/// it back to the file: `value - p_vaddr + p_offset`. This holds for PIE and non-PIE
/// executables and for shared libraries alike.
///
/// # Errors
/// [`Error::Symbol`] when the file cannot be read or parsed, the symbol is missing or
/// undefined, `offset` is beyond the symbol's size, or no loaded segment holds it.
pub fn uprobe_offset(path: &Path, func: &str, offset: u64) -> Result<u64, Error> {
    use object::{Object as _, ObjectSegment as _, ObjectSymbol as _};
    let err = |what: String| Error::Symbol {
        path: path.to_path_buf(),
        func: func.to_owned(),
        what,
    };
    let data = std::fs::read(path).map_err(|e| err(format!("cannot read it: {e}")))?;
    let file = object::File::parse(&*data).map_err(|e| err(format!("not an ELF file: {e}")))?;
    let found = |syms: object::SymbolIterator<'_, '_, &[u8]>| {
        let mut best = None;
        for s in syms {
            if s.name() == Ok(func) && s.is_definition() {
                best = Some((s.address(), s.size()));
                if s.kind() == object::SymbolKind::Text {
                    break;
                }
            }
        }
        best
    };
    let (addr, size) = found(file.symbols())
        .or_else(|| found(file.dynamic_symbols()))
        .ok_or_else(|| err("no such defined symbol in .symtab or .dynsym".into()))?;
    if size != 0 && offset >= size {
        return Err(err(format!(
            "offset {offset} is beyond the function's {size} bytes"
        )));
    }
    let vaddr = addr
        .checked_add(offset)
        .ok_or_else(|| err("address overflows".into()))?;
    for seg in file.segments() {
        let (file_off, file_size) = seg.file_range();
        let start = seg.address();
        if vaddr >= start && vaddr - start < file_size {
            return Ok(vaddr - start + file_off);
        }
    }
    Err(err(format!(
        "address {vaddr:#x} is in no PT_LOAD segment with file bytes"
    )))
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

    const GETPPID: &str = "name: sys_enter_getppid
ID: 123
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;
\tfield:char comm[16];\toffset:12;\tsize:16;\tsigned:0;
\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;
\tfield:__rel_loc char[] rel;\toffset:32;\tsize:4;\tsigned:0;

print fmt: \"\", REC->__syscall_nr
";

    #[test]
    fn format_fields() {
        let f = EventFormat::parse(GETPPID).unwrap();
        assert_eq!(
            (f.name.as_str(), f.id, f.fields.len()),
            ("sys_enter_getppid", 123, 8)
        );
        let nr = f.field("__syscall_nr").unwrap();
        assert_eq!(
            (nr.c_type.as_str(), nr.offset, nr.size, nr.signed),
            ("int", 8, 4, true)
        );
        let comm = f.field("comm").unwrap();
        assert_eq!(
            (comm.array_len, comm.size, comm.c_type.as_str()),
            (Some(16), 16, "char")
        );
        let name = f.field("name").unwrap();
        assert_eq!(
            (name.data_loc, name.array_len),
            (Some(DataLoc::Absolute), None)
        );
        assert_eq!(f.field("rel").unwrap().data_loc, Some(DataLoc::Relative));
        assert_eq!(f.field("common_type").unwrap().c_type, "unsigned short");

        let mut raw = vec![0u8; 48];
        raw[8..12].copy_from_slice(&(-5i32).to_ne_bytes());
        raw[28..32].copy_from_slice(&((3u32 << 16) | 40).to_ne_bytes());
        raw[40..43].copy_from_slice(b"abc");
        raw[32..36].copy_from_slice(&((2u32 << 16) | 4).to_ne_bytes()); // 36 + 4 = 40
        assert_eq!(nr.read_i64(&raw), Some(-5));
        assert_eq!(nr.read_u64(&raw), Some(u64::from((-5i32) as u32)));
        assert_eq!(name.dynamic(&raw), Some(&b"abc"[..]));
        assert_eq!(f.field("rel").unwrap().dynamic(&raw), Some(&b"ab"[..]));
        // Out of bounds reads are None, never a panic.
        assert_eq!(nr.read_i64(&raw[..10]), None);
        raw[28..32].copy_from_slice(&((300u32 << 16) | 40).to_ne_bytes());
        assert_eq!(name.dynamic(&raw), None);
        assert_eq!(comm.read_i64(&raw), None);
    }

    #[test]
    fn malformed_format_lines() {
        for bad in [
            "\tfield:int x;\toffset:zz;\tsize:4;\tsigned:1;",
            "\tfield:int;\toffset:0;\tsize:4;",
            "\tfield:int x[;\toffset:0;\tsize:4;",
            "ID: nope",
        ] {
            assert!(EventFormat::parse(bad).is_err(), "{bad}");
        }
    }

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
            last_error_reason(log).as_deref(),
            Some("Invalid register name")
        );
        assert_eq!(last_error_reason(""), None);
    }

    #[test]
    fn uprobe_specs() {
        let s = UprobeSpec::parse("/usr/lib/libc.so.6:malloc+0x10").unwrap();
        assert_eq!(
            (s.path.to_str().unwrap(), s.func.as_str(), s.offset),
            ("/usr/lib/libc.so.6", "malloc", 16)
        );
        assert_eq!(UprobeSpec::parse("/bin/x:main").unwrap().offset, 0);
        for bad in ["main", ":main", "/bin/x:", "/bin/x:main+zz"] {
            assert!(UprobeSpec::parse(bad).is_err(), "{bad}");
        }
    }
}
