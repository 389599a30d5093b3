//! Per-CPU perf events: one event per online CPU, `PERF_EVENT_IOC_SET_BPF`, enable; and the
//! `PERF_COUNT_SW_BPF_OUTPUT` events behind `BPF_MAP_TYPE_PERF_EVENT_ARRAY`. See the
//! [module docs](super) for the `EEXIST` of the second CPU and the release order.

use std::fmt;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::io::Errno;
use sluice_core::perf::abi::{
    attr_flags, perf_type, PerfEventAttr, PERF_COUNT_SW_BPF_OUTPUT, PERF_COUNT_SW_DUMMY,
    PERF_FLAG_FD_CLOEXEC,
};
use sluice_core::perf::record::{SampleFormat, SampleType};

use crate::load::{Map, UpdateMode};
use crate::ring::{OutputLayout, RingConfig};
use crate::sys::perf_event;

/// Whose events are counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every task (`pid = -1`), one event per CPU: needs root or `perf_event_paranoid <= -1`.
    System,
    /// One process and its descendants (`pid`, `inherit`), one event per CPU.
    Task {
        /// The process.
        pid: i32,
        /// Start counting at its next `exec` (`enable_on_exec`) instead of at
        /// [`PerCpuEvents::enable`].
        on_exec: bool,
    },
    /// A process already running (`record -p`): every thread it has when the events are
    /// opened (`/proc/PID/task`), each with `inherit` so threads and children they create
    /// later are counted too. One ring per CPU: the other threads' events of that CPU write
    /// into it (`PERF_EVENT_IOC_SET_OUTPUT`).
    Process {
        /// The process (thread group id).
        pid: i32,
    },
}

impl Scope {
    /// The pid whose `target_tgid` the filters should see: `None` system-wide.
    #[must_use]
    pub fn target_pid(self) -> Option<i32> {
        match self {
            Scope::System => None,
            Scope::Task { pid, .. } | Scope::Process { pid } => Some(pid),
        }
    }
}

/// How many times the thread list of a [`Scope::Process`] is re-read while opening, to
/// catch threads created meanwhile (after that, `inherit` covers threads created by the
/// ones already followed).
pub const THREAD_LIST_PASSES: usize = 4;

/// The threads of process `pid` (`/proc/PID/task`), ascending.
///
/// # Errors
/// The error of reading the directory (`ENOENT`: no such process).
pub fn threads_of(pid: i32) -> std::io::Result<Vec<i32>> {
    let mut tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

/// How the events of one tracepoint are opened.
#[derive(Clone, Copy, Debug)]
pub struct EventOptions {
    /// Whose events.
    pub scope: Scope,
    /// Ring size and wake-up policy (the wake-up goes into the attr).
    pub ring: RingConfig,
    /// Add `PERF_SAMPLE_IP` (meaningful for kprobes and uprobes: the probed address).
    pub sample_ip: bool,
}

impl Default for EventOptions {
    fn default() -> Self {
        EventOptions {
            scope: Scope::System,
            ring: RingConfig::default(),
            sample_ip: false,
        }
    }
}

/// The sample layout of tracepoint events: IDENTIFIER, TID, TIME, CPU, PERIOD, RAW (and IP
/// if asked).
///
/// Every event of a session carries `PERF_SAMPLE_IDENTIFIER` and `sample_id_all`
/// ([`IDENTIFIED`]), as `perf record`'s do when it records several events: each record
/// then names the event that wrote it (the id of `PERF_EVENT_IOC_ID`, see
/// [`PerCpuEvents::ids`]), which is what a perf.data file needs to map records to attrs.
#[must_use]
pub fn tracepoint_sample_type(ip: bool) -> SampleType {
    let base = SampleType::IDENTIFIER
        | SampleType::TID
        | SampleType::TIME
        | SampleType::CPU
        | SampleType::PERIOD
        | SampleType::RAW;
    if ip {
        base | SampleType::IP
    } else {
        base
    }
}

/// The sample layout of `PERF_COUNT_SW_BPF_OUTPUT` events: IDENTIFIER, IP, TID, TIME, CPU,
/// RAW. IP (where in the kernel the program called `bpf_perf_event_output`) is what
/// `perf record -e bpf-output` samples too; `perf script` refuses software events without
/// it.
#[must_use]
pub fn bpf_output_sample_type() -> SampleType {
    SampleType::IDENTIFIER
        | SampleType::IP
        | SampleType::TID
        | SampleType::TIME
        | SampleType::CPU
        | SampleType::RAW
}

/// The sample layout of the side-band event of [`open_tracking`]: it never samples; its
/// records carry the sample-id trailer (`sample_id_all`) of IDENTIFIER, TID, TIME, CPU
/// (and IP, which `perf script` wants of every software event).
#[must_use]
pub fn tracking_sample_type() -> SampleType {
    SampleType::IDENTIFIER | SampleType::IP | SampleType::TID | SampleType::TIME | SampleType::CPU
}

/// The `read_format` of the events with a ring: `PERF_FORMAT_LOST` where the running kernel
/// has it (6.0), so that [`PerCpuEvents::lost_on`] can read the losses the ring has not
/// reported yet; 0 before (an unknown bit is `EINVAL` there).
#[must_use]
pub fn lost_read_format() -> u64 {
    let has = crate::kernel::version::running_kernel_version().is_some_and(|v| v >= 0x06_00_00);
    if has {
        sluice_core::perf::record::read_format::LOST
    } else {
        0
    }
}

/// The attr flags every event of a session has: `sample_id_all`, so that non-sample
/// records (LOST, and the side-band of [`open_tracking`]) end with the sample id.
pub const IDENTIFIED: u64 = attr_flags::SAMPLE_ID_ALL;

/// Errors of attaching.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// `perf_event_open(2)` refused.
    Open {
        /// What was opened (`tracepoint syscalls/sys_enter_openat`, `bpf-output for map events`).
        what: String,
        /// The CPU.
        cpu: u32,
        /// The errno.
        errno: Errno,
    },
    /// `PERF_EVENT_IOC_SET_BPF` refused with something else than the expected `EEXIST`.
    SetBpf {
        /// The program.
        program: String,
        /// The event.
        what: String,
        /// The CPU.
        cpu: u32,
        /// The errno.
        errno: Errno,
    },
    /// The process of a [`Scope::Process`] cannot be followed (gone, or no thread left).
    Process {
        /// The pid.
        pid: i32,
        /// Why.
        source: std::io::Error,
    },
    /// `PERF_EVENT_IOC_SET_OUTPUT` refused to send a thread's events into its CPU's ring.
    SetOutput {
        /// The event.
        what: String,
        /// The CPU.
        cpu: u32,
        /// The errno.
        errno: Errno,
    },
    /// `PERF_EVENT_IOC_ENABLE` refused.
    Enable {
        /// The event.
        what: String,
        /// The CPU.
        cpu: u32,
        /// The errno.
        errno: Errno,
    },
    /// `PERF_EVENT_IOC_ID` refused.
    Id {
        /// The event.
        what: String,
        /// The CPU.
        cpu: u32,
        /// The errno.
        errno: Errno,
    },
    /// The kernel refused to attach a program to a hook, raw tracepoint or PMU probe;
    /// `reason` says why in the kernel's terms.
    Refused {
        /// The program.
        program: String,
        /// What it was to attach to (`fentry/do_unlinkat`, `uprobe /bin/true:main`).
        target: String,
        /// The call refused (`BPF_LINK_CREATE`).
        call: &'static str,
        /// The errno.
        errno: Errno,
        /// Why, in the kernel's terms.
        reason: String,
    },
    /// The attach point cannot be attached on this kernel or by sluice (a
    /// `kprobe.multi/` without `CONFIG_FPROBE`, a syscall without its wrapper).
    Unsupported {
        /// The program.
        program: String,
        /// The attach point.
        target: String,
        /// Why.
        reason: String,
    },
    /// Storing an event fd in a perf event array failed.
    MapUpdate {
        /// The map.
        map: String,
        /// The CPU (the key).
        cpu: u32,
        /// The map error.
        source: Box<crate::Error>,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Open { what, cpu, errno } => {
                write!(f, "perf_event_open of {what} on CPU {cpu}: {errno}")?;
                if *errno == Errno::ACCESS || *errno == Errno::PERM {
                    write!(
                        f,
                        " (needs root, or CAP_PERFMON and kernel.perf_event_paranoid <= -1 \
                         for system-wide events)"
                    )?;
                }
                Ok(())
            }
            Error::SetBpf {
                program,
                what,
                cpu,
                errno,
            } => {
                write!(
                    f,
                    "cannot attach program '{program}' to {what} (CPU {cpu}): \
                     PERF_EVENT_IOC_SET_BPF: {errno}"
                )?;
                if *errno == Errno::INVAL {
                    write!(f, " (wrong program type for this event?)")?;
                }
                Ok(())
            }
            Error::Enable { what, cpu, errno } => {
                write!(f, "PERF_EVENT_IOC_ENABLE of {what} on CPU {cpu}: {errno}")
            }
            Error::Process { pid, source } => write!(f, "process {pid}: {source}"),
            Error::SetOutput { what, cpu, errno } => {
                write!(
                    f,
                    "PERF_EVENT_IOC_SET_OUTPUT of {what} on CPU {cpu}: {errno}"
                )
            }
            Error::Id { what, cpu, errno } => {
                write!(f, "PERF_EVENT_IOC_ID of {what} on CPU {cpu}: {errno}")
            }
            Error::Refused {
                program,
                target,
                call,
                errno,
                reason,
            } => write!(
                f,
                "cannot attach program '{program}' to {target}: {reason} ({call}: {errno})"
            ),
            Error::Unsupported {
                program,
                target,
                reason,
            } => write!(f, "cannot attach program '{program}' to {target}: {reason}"),
            Error::MapUpdate { map, cpu, source } => {
                write!(
                    f,
                    "storing the bpf-output event of CPU {cpu} in map '{map}': {source}"
                )
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Open { errno, .. }
            | Error::SetBpf { errno, .. }
            | Error::Enable { errno, .. }
            | Error::SetOutput { errno, .. }
            | Error::Id { errno, .. }
            | Error::Refused { errno, .. } => Some(errno),
            Error::Unsupported { .. } => None,
            Error::Process { source, .. } => Some(source),
            Error::MapUpdate { source, .. } => Some(source.as_ref()),
        }
    }
}

/// One perf event on one CPU.
#[derive(Debug)]
pub struct CpuEvent {
    /// The CPU.
    pub cpu: u32,
    /// The event.
    pub fd: OwnedFd,
}

/// The per-CPU events of one tracepoint or one perf event array. Dropping disables every
/// event, then closes them.
#[derive(Debug)]
pub struct PerCpuEvents {
    what: String,
    format: SampleFormat,
    /// The attr the events were opened with (the kernel may have written `size` back).
    attr: PerfEventAttr,
    /// One per CPU: each has a ring.
    events: Vec<CpuEvent>,
    /// Events of other threads ([`Scope::Process`]) writing into the ring of the event of
    /// their CPU; enabled, disabled and attached with the others.
    followers: Vec<CpuEvent>,
    /// With `inherit`: the event that carries the program (module docs), never enabled.
    anchor: Option<OwnedFd>,
}

impl PerCpuEvents {
    /// What the events are (for messages).
    #[must_use]
    pub fn what(&self) -> &str {
        &self.what
    }

    /// The sample layout of their rings.
    #[must_use]
    pub fn format(&self) -> SampleFormat {
        self.format
    }

    /// The attr they were opened with (what a perf.data file describes them by).
    #[must_use]
    pub fn attr(&self) -> &PerfEventAttr {
        &self.attr
    }

    /// The kernel's id of every event with a ring or following one
    /// (`PERF_EVENT_IOC_ID`): what `PERF_SAMPLE_IDENTIFIER` of their records says.
    /// Tasks created under `inherit` carry the id of the event they inherited.
    ///
    /// # Errors
    /// [`Error::Id`] for the first event that refuses.
    pub fn ids(&self) -> Result<Vec<u64>, Error> {
        self.all()
            .map(|e| {
                perf_event::id(e.fd.as_fd()).map_err(|errno| Error::Id {
                    what: self.what.clone(),
                    cpu: e.cpu,
                    errno,
                })
            })
            .collect()
    }

    /// The events that own a ring, by CPU.
    #[must_use]
    pub fn events(&self) -> &[CpuEvent] {
        &self.events
    }

    /// The events of further threads, each writing into the ring of the [`events`] entry
    /// of its CPU (empty unless [`Scope::Process`] found several threads).
    ///
    /// [`events`]: PerCpuEvents::events
    #[must_use]
    pub fn followers(&self) -> &[CpuEvent] {
        &self.followers
    }

    /// Sends each follower's records into the ring of the event of its CPU
    /// (`PERF_EVENT_IOC_SET_OUTPUT`). Call it once those rings are mapped: the kernel
    /// refuses (`EINVAL`) to redirect into an event without a ring.
    ///
    /// # Errors
    /// [`Error::SetOutput`] for the first refusal.
    pub fn redirect_followers(&self) -> Result<(), Error> {
        for f in &self.followers {
            let Some(leader) = self.events.iter().find(|l| l.cpu == f.cpu) else {
                continue;
            };
            perf_event::set_output(f.fd.as_fd(), leader.fd.as_fd()).map_err(|errno| {
                Error::SetOutput {
                    what: self.what.clone(),
                    cpu: f.cpu,
                    errno,
                }
            })?;
        }
        Ok(())
    }

    /// How many records the kernel dropped in the ring of CPU `cpu` since the events were
    /// opened, reported or not: the `PERF_FORMAT_LOST` count of every event writing into
    /// that ring (its owner and its followers; inherited events count into the event they
    /// inherited from). `None` when the events were opened without `PERF_FORMAT_LOST` (a
    /// kernel before 6.0) or a read fails (logged).
    #[must_use]
    pub fn lost_on(&self, cpu: u32) -> Option<u64> {
        if self.attr.read_format & sluice_core::perf::record::read_format::LOST == 0 {
            return None;
        }
        let mut total = 0u64;
        for e in self.all().filter(|e| e.cpu == cpu) {
            match perf_event::read_lost(e.fd.as_fd()) {
                Ok(n) => total = total.saturating_add(n),
                Err(errno) => {
                    log::warn!(
                        "reading the lost count of {} on CPU {cpu}: {errno}",
                        self.what
                    );
                    return None;
                }
            }
        }
        Some(total)
    }

    fn all(&self) -> impl Iterator<Item = &CpuEvent> {
        self.events.iter().chain(&self.followers)
    }

    /// Starts every event.
    ///
    /// # Errors
    /// [`Error::Enable`] for the first that refuses.
    pub fn enable(&self) -> Result<(), Error> {
        for e in self.all() {
            perf_event::enable(e.fd.as_fd()).map_err(|errno| Error::Enable {
                what: self.what.clone(),
                cpu: e.cpu,
                errno,
            })?;
        }
        Ok(())
    }

    /// Stops every event (errors are logged: the fd is closed next anyway).
    pub fn disable(&self) {
        for e in self.all() {
            if let Err(errno) = perf_event::disable(e.fd.as_fd()) {
                log::warn!(
                    "PERF_EVENT_IOC_DISABLE of {} on CPU {}: {errno}",
                    self.what,
                    e.cpu
                );
            }
        }
    }

    /// The event without `inherit` that carries the program, when the events inherit
    /// (module docs); `None` for system-wide events.
    #[must_use]
    pub fn anchor(&self) -> Option<BorrowedFd<'_>> {
        self.anchor.as_ref().map(AsFd::as_fd)
    }

    /// Attaches `prog` to the tracepoint: through the [`anchor`] alone when there is one
    /// (the inherited events must not carry it: module docs), else to every event, where
    /// `EEXIST` from the second event on is the program already being on the tracepoint's
    /// list.
    ///
    /// # Errors
    /// [`Error::SetBpf`] for any other refusal, or `EEXIST` on the first event.
    ///
    /// [`anchor`]: PerCpuEvents::anchor
    pub fn set_bpf(&self, program: &str, prog: BorrowedFd<'_>) -> Result<(), Error> {
        if let Some(anchor) = &self.anchor {
            return perf_event::set_bpf(anchor.as_fd(), prog).map_err(|errno| Error::SetBpf {
                program: program.to_owned(),
                what: format!("{} (the event without inherit)", self.what),
                cpu: u32::MAX,
                errno,
            });
        }
        for (i, e) in self.all().enumerate() {
            match perf_event::set_bpf(e.fd.as_fd(), prog) {
                Ok(()) => log::debug!(
                    "SET_BPF {program} (fd {}) on {} CPU {}",
                    prog.as_raw_fd(),
                    self.what,
                    e.cpu
                ),
                Err(Errno::EXIST) if i > 0 => {}
                Err(errno) => {
                    return Err(Error::SetBpf {
                        program: program.to_owned(),
                        what: self.what.clone(),
                        cpu: e.cpu,
                        errno,
                    })
                }
            }
        }
        Ok(())
    }

    /// Takes the events out (the caller then owns the order of disabling and closing).
    #[must_use]
    pub fn into_events(mut self) -> Vec<CpuEvent> {
        let mut all = std::mem::take(&mut self.events);
        all.append(&mut self.followers);
        all
    }
}

impl Drop for PerCpuEvents {
    fn drop(&mut self) {
        self.disable();
    }
}

pub(super) fn open_all(
    what: &str,
    attr: &PerfEventAttr,
    pid: i32,
    cpus: &[u32],
    format: SampleFormat,
) -> Result<PerCpuEvents, Error> {
    let mut out = PerCpuEvents {
        what: what.to_owned(),
        format,
        attr: *attr,
        events: Vec::with_capacity(cpus.len()),
        followers: Vec::new(),
        anchor: None,
    };
    for &cpu in cpus {
        let mut a = *attr;
        let cpu_arg = i32::try_from(cpu).unwrap_or(i32::MAX);
        let fd = perf_event::perf_event_open(&mut a, pid, cpu_arg, None, PERF_FLAG_FD_CLOEXEC)
            .map_err(|errno| Error::Open {
                what: what.to_owned(),
                cpu,
                errno,
            })?;
        out.events.push(CpuEvent { cpu, fd });
    }
    Ok(out)
}

/// Opens tracepoint `id` (`events/GROUP/NAME/id`) on every CPU of `cpus`, disabled, one
/// sample per hit. `what` names it in messages (`GROUP:NAME`).
///
/// # Errors
/// [`Error::Open`] for the first CPU that refuses (the events opened before are closed).
pub fn open_tracepoint(
    what: &str,
    id: u64,
    cpus: &[u32],
    opts: &EventOptions,
) -> Result<PerCpuEvents, Error> {
    let sample_type = tracepoint_sample_type(opts.sample_ip);
    let mut attr = PerfEventAttr::new(perf_type::TRACEPOINT, id);
    attr.sample_period = 1;
    attr.sample_type = sample_type.0;
    attr.flags = attr_flags::DISABLED | IDENTIFIED;
    attr.read_format = lost_read_format();
    if let Scope::Task { on_exec, .. } = opts.scope {
        attr.flags |= attr_flags::INHERIT;
        if on_exec {
            attr.flags |= attr_flags::ENABLE_ON_EXEC;
        }
    }
    opts.ring.apply(&mut attr);
    let format = SampleFormat::new(sample_type);
    let (mut events, task) = match opts.scope {
        Scope::System => return open_all(what, &attr, -1, cpus, format),
        Scope::Task { pid, .. } => (open_all(what, &attr, pid, cpus, format)?, pid),
        Scope::Process { pid } => {
            attr.flags |= attr_flags::INHERIT;
            open_process(what, &attr, pid, cpus, format)?
        }
    };
    // The program's carrier (module docs): the same tracepoint and task, every CPU, no
    // inherit, no enable_on_exec, disabled for good, no ring.
    let mut anchor = attr;
    anchor.flags = attr_flags::DISABLED;
    anchor.wakeup_events = 0;
    let fd = perf_event::perf_event_open(&mut anchor, task, -1, None, PERF_FLAG_FD_CLOEXEC)
        .map_err(|errno| Error::Open {
            what: format!("{what} (the event without inherit)"),
            cpu: u32::MAX,
            errno,
        })?;
    events.anchor = Some(fd);
    Ok(events)
}

/// [`Scope::Process`]: the first thread's events own the rings, the others' follow (see
/// [`PerCpuEvents::redirect_followers`]). Returns the events and that first thread.
fn open_process(
    what: &str,
    attr: &PerfEventAttr,
    pid: i32,
    cpus: &[u32],
    format: SampleFormat,
) -> Result<(PerCpuEvents, i32), Error> {
    let gone = |source| Error::Process { pid, source };
    let mut out: Option<(PerCpuEvents, i32)> = None;
    let mut done: Vec<i32> = Vec::new();
    for _ in 0..THREAD_LIST_PASSES {
        let tids = threads_of(pid).map_err(gone)?;
        let new: Vec<i32> = tids.into_iter().filter(|t| !done.contains(t)).collect();
        if new.is_empty() {
            break;
        }
        for tid in new {
            done.push(tid);
            let opened = match open_all(what, attr, tid, cpus, format) {
                Ok(o) => o,
                // The thread exited between the listing and the open.
                Err(Error::Open {
                    errno: Errno::SRCH, ..
                }) => continue,
                Err(e) => return Err(e),
            };
            match &mut out {
                None => out = Some((opened, tid)),
                Some((leaders, _)) => leaders.followers.extend(opened.into_events()),
            }
        }
    }
    out.ok_or_else(|| gone(std::io::Error::from_raw_os_error(libc::ESRCH)))
}

/// For a `BPF_MAP_TYPE_PERF_EVENT_ARRAY` map: opens one `PERF_COUNT_SW_BPF_OUTPUT` event per
/// CPU of `cpus` (system-wide: `bpf_perf_event_output` with `BPF_F_CURRENT_CPU` writes to
/// the event of the CPU the program runs on, and refuses one bound to another) and stores
/// its fd in the map at key = the CPU number. CPUs at or past the map's `max_entries` are
/// skipped with a warning (their outputs fail in the program with `E2BIG`). The events
/// start disabled. Their samples are laid out as `ring.output_layout` says.
///
/// # Errors
/// [`Error::Open`], [`Error::MapUpdate`].
pub fn open_bpf_output(map: &Map, cpus: &[u32], ring: &RingConfig) -> Result<PerCpuEvents, Error> {
    let sample_type = match ring.output_layout {
        OutputLayout::Full => bpf_output_sample_type(),
        OutputLayout::Raw => SampleType::RAW,
    };
    let mut attr = PerfEventAttr::new(perf_type::SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT);
    attr.sample_period = 1;
    attr.sample_type = sample_type.0;
    attr.flags = attr_flags::DISABLED | IDENTIFIED;
    attr.read_format = lost_read_format();
    ring.apply(&mut attr);
    let usable = cpus_in_array(map, cpus, "output event");
    let what = format!("bpf-output of map '{}'", map.name());
    let events = open_all(&what, &attr, -1, &usable, SampleFormat::new(sample_type))?;
    for e in events.events() {
        let fd = u32::try_from(e.fd.as_raw_fd()).unwrap_or(u32::MAX);
        map.update(&e.cpu, &fd, UpdateMode::Any)
            .map_err(|source| Error::MapUpdate {
                map: map.name().to_owned(),
                cpu: e.cpu,
                source: Box::new(source),
            })?;
    }
    Ok(events)
}

/// Opens the side-band event of a recording (perf's `dummy:u` tracking event): a
/// `PERF_COUNT_SW_DUMMY` per CPU of `cpus` that never samples but writes, for the tasks
/// of `scope`, `PERF_RECORD_COMM` (with the `exec` flag), `PERF_RECORD_MMAP2` of
/// executable mappings, `PERF_RECORD_FORK` and `PERF_RECORD_EXIT`, each with the sample
/// id of [`tracking_sample_type`]: what a perf.data reader needs to name tasks and
/// resolve their addresses to symbols. Disabled; [`Scope::Task`] with `on_exec` starts at
/// the workload's `exec` by itself. Its rings are the caller's to map (and, for
/// [`Scope::Process`], [`PerCpuEvents::redirect_followers`]).
///
/// # Errors
/// [`Error::Open`], [`Error::Process`].
pub fn open_tracking(scope: Scope, cpus: &[u32], ring: &RingConfig) -> Result<PerCpuEvents, Error> {
    let sample_type = tracking_sample_type();
    let mut attr = PerfEventAttr::new(perf_type::SOFTWARE, PERF_COUNT_SW_DUMMY);
    attr.sample_period = 1;
    attr.sample_type = sample_type.0;
    attr.flags = attr_flags::DISABLED
        | IDENTIFIED
        | attr_flags::COMM
        | attr_flags::COMM_EXEC
        | attr_flags::MMAP
        | attr_flags::MMAP2
        | attr_flags::TASK
        | attr_flags::EXCLUDE_KERNEL
        | attr_flags::EXCLUDE_HV;
    ring.apply(&mut attr);
    let format = SampleFormat::new(sample_type);
    open_scoped("dummy:u", &attr, scope, cpus, format)
}

/// Opens the task event of a recording's names and process tree: like [`open_tracking`]
/// (a `PERF_COUNT_SW_DUMMY` per CPU for the tasks of `scope`) but writing only
/// `PERF_RECORD_COMM`, `FORK` and `EXIT`, each with a TID and TIME sample id (its last
/// 8 bytes the time). Disabled, as [`open_tracking`]'s.
///
/// # Errors
/// [`Error::Open`], [`Error::Process`].
pub fn open_tasks(scope: Scope, cpus: &[u32], ring: &RingConfig) -> Result<PerCpuEvents, Error> {
    let sample_type = SampleType::TID | SampleType::TIME;
    let mut attr = PerfEventAttr::new(perf_type::SOFTWARE, PERF_COUNT_SW_DUMMY);
    attr.sample_period = 1;
    attr.sample_type = sample_type.0;
    attr.flags = attr_flags::DISABLED
        | IDENTIFIED
        | attr_flags::COMM
        | attr_flags::COMM_EXEC
        | attr_flags::TASK
        | attr_flags::EXCLUDE_KERNEL
        | attr_flags::EXCLUDE_HV;
    ring.apply(&mut attr);
    open_scoped("tasks", &attr, scope, cpus, SampleFormat::new(sample_type))
}

/// Opens `attr` (named `what`) on `cpus` for `scope`: system-wide, a task and its children
/// (inherit, enabled at its exec when asked), or every thread of a running process.
///
/// # Errors
/// As [`open_all`] and [`open_process`].
pub(super) fn open_scoped(
    what: &str,
    attr: &PerfEventAttr,
    scope: Scope,
    cpus: &[u32],
    format: SampleFormat,
) -> Result<PerCpuEvents, Error> {
    let mut attr = *attr;
    match scope {
        Scope::System => open_all(what, &attr, -1, cpus, format),
        Scope::Task { pid, on_exec } => {
            attr.flags |= attr_flags::INHERIT;
            if on_exec {
                attr.flags |= attr_flags::ENABLE_ON_EXEC;
            }
            open_all(what, &attr, pid, cpus, format)
        }
        Scope::Process { pid } => {
            attr.flags |= attr_flags::INHERIT;
            Ok(open_process(what, &attr, pid, cpus, format)?.0)
        }
    }
}

/// The CPUs of `cpus` that perf event array `map` has a slot for; each left out is warned
/// about (it gets no `what`).
pub(super) fn cpus_in_array(map: &Map, cpus: &[u32], what: &str) -> Vec<u32> {
    cpus.iter()
        .copied()
        .filter(|&c| {
            let ok = c < map.max_entries();
            if !ok {
                log::warn!(
                    "perf event array '{}' has {} entries: CPU {c} gets no {what}",
                    map.name(),
                    map.max_entries()
                );
            }
            ok
        })
        .collect()
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
#[path = "events_fake_tests.rs"]
mod tests_fake;
