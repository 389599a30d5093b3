//! Who produced a sample: process names and the recorded process tree, from the kernel's
//! `PERF_RECORD_COMM`/`FORK`/`EXIT` side-band records (one dummy event per CPU,
//! [`open_tasks`]), so that a process that has already exited keeps its name and a
//! system-wide tracepoint's samples of other processes can be left out.
//!
//! The tree is the workload (`-- CMD`) or the process (`-p PID`) and every process forked
//! from it since; a FORK record is written by the parent before the child can run, so when
//! a sample's pid is not known yet, draining the task rings once more settles it.

use crate::int_map::{FxHashMap, FxHashSet};

use sluice_core::perf::record::Record;
use sluice_core::perf::task::{task_record, Task};

use crate::attach::{open_tasks, Error as AttachError, PerCpuEvents, Scope};
use crate::ring::{Error as RingError, PerfRing, RingConfig};

/// Errors of opening the task events.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Opening or enabling the events.
    Events(AttachError),
    /// Mapping a ring.
    Ring(RingError),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Events(e) => write!(f, "task events: {e}"),
            Error::Ring(e) => write!(f, "task events' ring: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Events(e) => Some(e),
            Error::Ring(e) => Some(e),
        }
    }
}

/// The names of the tasks and the process tree of a recording.
pub struct Tasks {
    // Rings before events: the mappings are released first.
    rings: Vec<PerfRing>,
    events: PerCpuEvents,
    /// Each thread's names, oldest first, with the time it took each.
    names: FxHashMap<u32, Vec<(u64, String)>>,
    /// Each thread's process, as its COMM or FORK said.
    pids: FxHashMap<u32, u32>,
    /// The pids of the tree; `None` system-wide.
    tree: Option<FxHashSet<u32>>,
    /// sluice's own pid (never shown system-wide).
    own: u32,
    /// Samples left out: from outside the tree, or sluice's own.
    left_out: u64,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("names", &self.names.len())
            .field("tree", &self.tree.as_ref().map(FxHashSet::len))
            .field("left_out", &self.left_out)
            .finish_non_exhaustive()
    }
}

impl Tasks {
    /// Opens the task events of `scope` on `cpus`, maps their rings and enables them
    /// (a workload held for `exec` enables them by its `exec`).
    ///
    /// # Errors
    /// [`Error`] of the step that failed.
    pub fn open(scope: Scope, cpus: &[u32], ring: &RingConfig) -> Result<Self, Error> {
        let events = open_tasks(scope, cpus, ring).map_err(Error::Events)?;
        let mut rings = Vec::with_capacity(events.events().len());
        for e in events.events() {
            rings.push(
                PerfRing::map(&e.fd, ring.data_pages, events.format(), Some(e.cpu))
                    .map_err(Error::Ring)?,
            );
        }
        events.redirect_followers().map_err(Error::Events)?;
        if !matches!(scope, Scope::Task { on_exec: true, .. }) {
            events.enable().map_err(Error::Events)?;
        }
        let tree = scope
            .target_pid()
            .map(|p| FxHashSet::from_iter([u32::try_from(p).unwrap_or(u32::MAX)]));
        Ok(Tasks {
            rings,
            events,
            names: FxHashMap::default(),
            pids: FxHashMap::default(),
            tree,
            own: std::process::id(),
            left_out: 0,
        })
    }

    /// Reads every task record written so far.
    pub fn update(&mut self) {
        let Tasks {
            rings,
            names,
            pids,
            tree,
            ..
        } = self;
        for ring in rings.iter_mut() {
            let result = ring.drain(|rec| {
                let Record::Other { header, body } = rec else {
                    return;
                };
                // The sample id's TIME is the body's last 8 bytes.
                let time = body
                    .len()
                    .checked_sub(8)
                    .and_then(|at| body.get(at..))
                    .and_then(|b| b.try_into().ok())
                    .map_or(0, u64::from_ne_bytes);
                match task_record(header, body) {
                    Some(Task::Comm { pid, tid, comm, .. }) => {
                        pids.insert(tid, pid);
                        learn(names, tid, time, String::from_utf8_lossy(comm).into_owned());
                    }
                    Some(Task::Fork {
                        pid,
                        ppid,
                        tid,
                        ptid,
                        time,
                        exit: false,
                    }) => {
                        if let Some(tree) = tree.as_mut() {
                            if tree.contains(&ppid) {
                                tree.insert(pid);
                            }
                        }
                        pids.insert(tid, pid);
                        // A child starts with its parent's name.
                        if let Some(name) = name_at(names, ptid, time).map(str::to_owned) {
                            learn(names, tid, time, name);
                        }
                    }
                    _ => {}
                }
            });
            if let Err(e) = result {
                log::warn!("task ring: {e}");
            }
        }
    }

    /// Whether a sample of process `pid` is shown: it is in the tree (or, system-wide,
    /// not sluice's own); counted in [`Tasks::left_out`] when not.
    pub fn shown(&mut self, pid: Option<u32>) -> bool {
        let Some(pid) = pid else {
            return true;
        };
        let shown = match &self.tree {
            None => pid != self.own,
            Some(tree) if tree.contains(&pid) => true,
            Some(_) => {
                // A child forked since the last read: its FORK record is in a ring already.
                self.update();
                self.tree.as_ref().is_some_and(|t| t.contains(&pid))
            }
        };
        if !shown {
            self.left_out += 1;
        }
        shown
    }

    /// The name thread `tid` had at `time`, as its COMM (or its parent's, at its FORK)
    /// said; `None` when no record named it (it ran before the recording started). The
    /// rings are read first (an empty ring costs one load): an `exec`'s COMM record is
    /// written before the sample that follows it.
    pub fn name(&mut self, tid: u32, time: u64) -> Option<&str> {
        self.update();
        name_at(&self.names, tid, time)
    }

    /// The process of thread `tid`, as its COMM or FORK record said (a record of the
    /// ftrace instance names only the thread); `None` when no record named it.
    pub fn pid_of(&mut self, tid: u32) -> Option<u32> {
        if !self.pids.contains_key(&tid) {
            self.update();
        }
        self.pids.get(&tid).copied()
    }

    /// Samples [`Tasks::shown`] left out.
    #[must_use]
    pub fn left_out(&self) -> u64 {
        self.left_out
    }

    /// Whether samples are filtered to a process tree.
    #[must_use]
    pub fn has_tree(&self) -> bool {
        self.tree.is_some()
    }

    /// Stops the events (before the last read).
    pub fn disable(&self) {
        self.events.disable();
    }
}

/// Records that `tid` took `name` at `time`. The rings are read one CPU after another, so
/// a thread's records come out of time order (its FORK on one CPU, its exec's COMM on
/// another): each name goes in at its time.
fn learn(names: &mut FxHashMap<u32, Vec<(u64, String)>>, tid: u32, time: u64, name: String) {
    let v = names.entry(tid).or_default();
    let at = v.partition_point(|(t, _)| *t <= time);
    if at
        .checked_sub(1)
        .and_then(|i| v.get(i))
        .is_none_or(|(_, n)| *n != name)
    {
        v.insert(at, (time, name));
    }
}

/// The name `tid` had at `time`: the last one taken at or before it, else its first.
fn name_at(names: &FxHashMap<u32, Vec<(u64, String)>>, tid: u32, time: u64) -> Option<&str> {
    let v = names.get(&tid)?;
    v.iter()
        .rev()
        .find(|(t, _)| *t <= time)
        .or_else(|| v.first())
        .map(|(_, n)| n.as_str())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_the_one_taken_last_before_the_time() {
        let mut names = FxHashMap::default();
        learn(&mut names, 5, 100, "sh".into());
        learn(&mut names, 5, 200, "true".into());
        learn(&mut names, 5, 300, "true".into());
        assert_eq!(name_at(&names, 5, 50), Some("sh"));
        assert_eq!(name_at(&names, 5, 150), Some("sh"));
        assert_eq!(name_at(&names, 5, 250), Some("true"));
        assert_eq!(names.get(&5).unwrap().len(), 2);
        assert_eq!(name_at(&names, 6, 250), None);
        // Read out of order (the exec's COMM from one CPU's ring, the FORK from another's):
        // each name at its time.
        learn(&mut names, 7, 200, "true".into());
        learn(&mut names, 7, 100, "sh".into());
        assert_eq!(name_at(&names, 7, 250), Some("true"));
        assert_eq!(name_at(&names, 7, 150), Some("sh"));
    }
}
