//! A private ftrace instance that receives `bpf_trace_printk` lines: `instances/sluice-PID/`
//! with only `events/bpf_trace/bpf_trace_printk` enabled, its clock perf's (`trace_clock`
//! `perf`: `local_clock()`, the clock of perf samples without `use_clockid`), its events
//! limited to the recorded tasks and their children (`set_event_pid`, `options/event-fork`),
//! read page by page from each CPU's `trace_pipe_raw` ([`sluice_core::perf::ftrace_page`]).
//!
//! A program on a perf tracepoint runs inside perf's handler: the kernel drops the perf
//! sample of the printk tracepoint it fires (perf's recursion guard), but ftrace's own ring
//! buffer still gets the line. Dropping the instance disables the event, closes the files
//! and removes the folder; [`Tracefs::clean_instances`] removes what a killed run left.

use std::fs::File;
use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::PathBuf;

use sluice_core::perf::ftrace_page::page_events;

use super::{Error, Tracefs};

/// Name prefix of the instances sluice makes (`sluice-PID`).
pub const INSTANCE_PREFIX: &str = "sluice-";

/// The printk event's folder in an instance.
const EVENT: &str = "events/bpf_trace/bpf_trace_printk";

/// Bytes read at once from a `trace_pipe_raw`: one page (a read hands out at most one).
const PAGE: usize = 64 * 1024;

/// A private ftrace instance with the printk event enabled (see the module docs).
#[derive(Debug)]
pub struct PrintkInstance {
    dir: PathBuf,
    /// Each CPU's `trace_pipe_raw`, non-blocking.
    cpus: Vec<(u32, File)>,
    /// Where a page's events start (`events/header_page`'s `data`).
    data_offset: usize,
    page: Vec<u8>,
    /// Lines the kernel dropped (its buffer was full), per CPU, not yet taken.
    missed: Vec<(u32, u64)>,
    /// Whether a loss was said (once a run).
    warned: bool,
}

impl PrintkInstance {
    /// Makes `instances/sluice-PID` in `tracefs` for the tasks `pids` and their children
    /// (empty: every task), reading the CPUs `cpus`.
    ///
    /// # Errors
    /// [`Error::Io`] naming the file that could not be made, written or opened; what was
    /// made is removed.
    pub fn create(tracefs: &Tracefs, pids: &[u32], cpus: &[u32]) -> Result<Self, Error> {
        let dir = tracefs
            .root()
            .join("instances")
            .join(format!("{INSTANCE_PREFIX}{}", std::process::id()));
        let io = |path: PathBuf, op: &str| {
            let op = op.to_owned();
            move |source| Error::Io {
                path,
                op,
                source,
                detail: None,
            }
        };
        rustix::fs::mkdir(&dir, rustix::fs::Mode::from_raw_mode(0o755))
            .map_err(|e| io(dir.clone(), "mkdir")(e.into()))?;
        let mut me = PrintkInstance {
            dir,
            cpus: Vec::new(),
            data_offset: 16,
            page: vec![0; PAGE],
            missed: Vec::new(),
            warned: false,
        };
        let write = |me: &PrintkInstance, file: &str, value: &str| {
            super::probe::write_command(&me.dir, file, value)
        };
        write(&me, "trace_clock", "perf")?;
        if !pids.is_empty() {
            write(&me, "options/event-fork", "1")?;
            let list: Vec<String> = pids.iter().map(u32::to_string).collect();
            write(&me, "set_event_pid", &list.join(" "))?;
        }
        let header = me.dir.join("events/header_page");
        if let Ok(text) = std::fs::read_to_string(&header) {
            // `field: char data;\toffset:16;\tsize:4080;\tsigned:0;`
            me.data_offset = text
                .lines()
                .find(|l| l.contains(" data;"))
                .and_then(|l| l.split("offset:").nth(1)?.split(';').next()?.parse().ok())
                .unwrap_or(16);
        }
        for &cpu in cpus {
            let path = me.dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw"));
            let f = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .map_err(io(path, "open"))?;
            me.cpus.push((cpu, f));
        }
        write(&me, &format!("{EVENT}/enable"), "1")?;
        Ok(me)
    }

    /// Hands `each(cpu, time, record)` every line written since the last read, CPU by CPU,
    /// each CPU's in time order. A page that does not parse is logged and skipped.
    pub fn read(&mut self, each: &mut dyn FnMut(u32, u64, &[u8])) {
        let PrintkInstance {
            cpus,
            data_offset,
            page,
            missed,
            warned,
            ..
        } = self;
        for (cpu, f) in cpus.iter_mut() {
            // Bounded: at most a ring's worth of pages per read.
            for _ in 0..4096 {
                let n = match f.read(page) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let got = page.get(..n).unwrap_or_default();
                match page_events(got, *data_offset, &mut |t, r| each(*cpu, t, r)) {
                    Ok(0) => {}
                    Ok(n) => {
                        if !std::mem::replace(warned, true) {
                            log::warn!("printk: the kernel dropped {n} lines of CPU {cpu} (its ftrace buffer was full); the summary counts them as lost");
                        }
                        missed.push((*cpu, n));
                    }
                    Err(e) => log::warn!("printk instance, CPU {cpu}: {e}"),
                }
            }
        }
    }

    /// The lines the kernel dropped since the last call, as (CPU, count): its buffer of
    /// `buffer_size_kb` per CPU was full.
    pub fn take_missed(&mut self) -> Vec<(u32, u64)> {
        std::mem::take(&mut self.missed)
    }

    /// Stops the event (what is in the buffers stays readable).
    pub fn disable(&self) {
        let _ = super::probe::write_command(&self.dir, &format!("{EVENT}/enable"), "0");
    }
}

impl Drop for PrintkInstance {
    fn drop(&mut self) {
        self.disable();
        // The instance is busy while a file of it is open.
        self.cpus.clear();
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            log::warn!("leaving ftrace instance {} behind: {e}", self.dir.display());
        }
    }
}

impl Tracefs {
    /// Removes the `instances/sluice-*` a killed run left: the kernel refuses (`EBUSY`) to
    /// remove one whose files a running run has open. Returns the names removed.
    ///
    /// # Errors
    /// [`Error::Io`] when listing fails or a removal fails for another reason.
    pub fn clean_instances(&self) -> Result<Vec<String>, Error> {
        // No run is between making its instance and opening its files meanwhile.
        let _alone = super::SetupLock::take(super::LockKind::Exclusive);
        let dir = self.root().join("instances");
        let Ok(list) = std::fs::read_dir(&dir) else {
            return Ok(Vec::new());
        };
        let mut removed = Vec::new();
        for e in list.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.starts_with(INSTANCE_PREFIX) {
                continue;
            }
            match std::fs::remove_dir(e.path()) {
                Ok(()) => removed.push(name),
                Err(s) if matches!(s.raw_os_error(), Some(libc::EBUSY | libc::ENOENT)) => {}
                Err(source) => {
                    return Err(Error::Io {
                        path: e.path(),
                        op: "rmdir".into(),
                        source,
                        detail: None,
                    })
                }
            }
        }
        Ok(removed)
    }
}
