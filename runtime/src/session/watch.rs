//! What a run waits on between two drains: the rings, the signals, the workload (our
//! child, ended with a grace period) and a process that is not ours (`record -p`, watched
//! through a pidfd).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::event::epoll::{self, Event, EventData, EventFlags};
use rustix::event::Timespec;
use std::process::Child;
use std::time::{Duration, Instant};

use super::error::Error;
use crate::sys::signal::SignalPipe;

/// How long a workload gets to exit after the signal forwarded to it, before `SIGKILL`.
pub const WORKLOAD_GRACE: Duration = Duration::from_secs(2);

/// A pidfd for `pid` (`pidfd_open(2)`), `None` when the process is already gone.
pub(super) fn watch_process(pid: i32) -> Result<Option<OwnedFd>, Error> {
    let io = |source: std::io::Error| Error::Io {
        what: "watching the process (pidfd_open, Linux 5.3)",
        source,
    };
    let p = rustix::process::Pid::from_raw(pid)
        .ok_or_else(|| io(std::io::Error::from_raw_os_error(libc::ESRCH)))?;
    match rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(rustix::io::Errno::SRCH) => Ok(None),
        Err(e) => Err(io(e.into())),
    }
}

/// Whether the process of `pidfd` exited (the pidfd polls readable then).
pub(super) fn process_exited(pidfd: &OwnedFd) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
}

/// Ends the workload and everything it started: `sig` to every descendant of this process
/// (what a terminal's Ctrl-C does to a foreground job), up to [`WORKLOAD_GRACE`] for them
/// all to exit, then `SIGKILL` to whatever is left (a workload that ignores the signal, the
/// children a shell left behind); reaps them.
pub(super) fn end_workload(child: &mut Child, sig: i32) {
    use crate::sys::tree;
    let pid = i32::try_from(child.id()).unwrap_or(0);
    let running = |child: &mut Child| !matches!(child.try_wait(), Ok(Some(_)));
    tree::signal_all(&tree::descendants(), sig);
    let until = Instant::now() + WORKLOAD_GRACE;
    while Instant::now() < until {
        tree::reap_except(pid);
        if !running(child) && tree::descendants().is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    // A process may fork while it is being killed: a few rounds until nothing is left.
    for _ in 0..50 {
        let left = tree::descendants();
        if left.is_empty() {
            break;
        }
        tree::signal_all(&left, libc::SIGKILL);
        std::thread::sleep(Duration::from_millis(5));
        tree::reap_except(pid);
    }
    let _ = child.kill();
    let _ = child.wait();
    tree::reap_except(pid);
}

/// What a run sleeps on: one epoll set, built once, of every ring's event, every
/// ring-buffer map, the signal pipe and the `process` pidfd. (`poll(2)` registers and
/// unregisters each fd's wait queue at every call: with a perf event per CPU that was a
/// third of a wake-up's cost, paid again for every few records of 4 KiB.)
pub(super) struct Waiter {
    epoll: OwnedFd,
    ready: Vec<Event>,
}

/// What woke a [`Waiter::wait`] (besides the rings, which every drain reads anyway).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Woken {
    /// The signal pipe is readable.
    pub signal: bool,
    /// The watched process's pidfd is readable (it exited).
    pub process: bool,
}

const SIGNAL: u64 = u64::MAX;
const PROCESS: u64 = u64::MAX - 1;

impl Waiter {
    /// The set of `rings` (each one's data is its place in the iteration, which
    /// [`Waiter::wait`] is given again), `signals` and `process`.
    pub(super) fn new<'a>(
        rings: impl Iterator<Item = BorrowedFd<'a>>,
        signals: Option<&SignalPipe>,
        process: Option<&OwnedFd>,
    ) -> Result<Waiter, Error> {
        let io = |e: rustix::io::Errno| Error::Io {
            what: "epoll(7) for the perf rings",
            source: e.into(),
        };
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(io)?;
        let add = |fd: BorrowedFd<'_>, data: u64| {
            match epoll::add(&epoll, fd, EventData::new_u64(data), EventFlags::IN) {
                // The same ring-buffer map reached twice.
                Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
                Err(e) => Err(io(e)),
            }
        };
        for (i, fd) in rings.enumerate() {
            add(fd, i as u64)?;
        }
        if let Some(s) = signals {
            add(s.fd(), SIGNAL)?;
        }
        if let Some(p) = process {
            add(p.as_fd(), PROCESS)?;
        }
        Ok(Waiter {
            epoll,
            ready: Vec::with_capacity(64),
        })
    }

    /// Sleeps until a fd of the set is readable, or `timeout`. A ring that hung up (the
    /// per-task event of a task that exited, which would poll `POLLHUP` for ever) leaves
    /// the set; its ring is still drained. `rings` is the iteration [`Waiter::new`] got.
    pub(super) fn wait<'a>(
        &mut self,
        mut rings: impl Iterator<Item = BorrowedFd<'a>>,
        timeout: Duration,
    ) -> Result<Woken, Error> {
        let ts = Timespec {
            tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        self.ready.clear();
        match epoll::wait(
            &self.epoll,
            rustix::buffer::spare_capacity(&mut self.ready),
            Some(&ts),
        ) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => {
                return Err(Error::Io {
                    what: "epoll_wait(2) on the perf rings",
                    source: e.into(),
                })
            }
        }
        let mut woken = Woken::default();
        let mut at = 0usize;
        let mut hung: Vec<u64> = Vec::new();
        for e in &self.ready {
            let (flags, data) = (e.flags, e.data.u64());
            match data {
                SIGNAL => woken.signal = true,
                PROCESS => woken.process = true,
                _ if flags.contains(EventFlags::HUP) && !flags.contains(EventFlags::IN) => {
                    hung.push(data);
                }
                _ => {}
            }
        }
        hung.sort_unstable();
        hung.dedup();
        for i in hung {
            let skip = usize::try_from(i).unwrap_or(usize::MAX).saturating_sub(at);
            if let Some(fd) = rings.nth(skip) {
                let _ = epoll::delete(&self.epoll, fd);
                at = usize::try_from(i).unwrap_or(usize::MAX).saturating_add(1);
            }
        }
        Ok(woken)
    }
}
