//! What a run waits on between two drains: the rings, the signals, the workload (our
//! child, ended with a grace period) and a process that is not ours (`record -p`, watched
//! through a pidfd).

use std::os::fd::{BorrowedFd, OwnedFd};
use std::process::Child;
use std::time::{Duration, Instant};

use super::error::Error;
use crate::attach::PerCpuEvents;
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

/// Sleeps until a ring of `rings`, a ring-buffer map of `bufs`, the signal pipe or the
/// `process` pidfd is readable, or `timeout`.
pub(super) fn wait<'a>(
    rings: impl Iterator<Item = &'a PerCpuEvents>,
    bufs: &[BorrowedFd<'_>],
    signals: Option<&SignalPipe>,
    process: Option<&OwnedFd>,
    timeout: Duration,
) -> Result<(), Error> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds: Vec<PollFd<'_>> = rings
        .flat_map(|g| g.events().iter())
        .map(|e| PollFd::new(&e.fd, PollFlags::IN))
        .collect();
    fds.extend(bufs.iter().map(|fd| PollFd::new(fd, PollFlags::IN)));
    let sig = signals.map(SignalPipe::fd);
    if let Some(fd) = &sig {
        fds.push(PollFd::new(fd, PollFlags::IN));
    }
    if let Some(fd) = process {
        fds.push(PollFd::new(fd, PollFlags::IN));
    }
    let ts = Timespec {
        tv_sec: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(timeout.subsec_nanos()),
    };
    match poll(&mut fds, Some(&ts)) {
        Ok(_) | Err(rustix::io::Errno::INTR) => {}
        Err(e) => {
            return Err(Error::Io {
                what: "poll(2) on the perf rings",
                source: e.into(),
            })
        }
    }
    // A per-task event of an exited task polls POLLHUP for ever: do not spin on it.
    if fds
        .iter()
        .any(|f| f.revents().contains(PollFlags::HUP) && !f.revents().contains(PollFlags::IN))
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}
