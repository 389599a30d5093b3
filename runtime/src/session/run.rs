//! The loop of [`Session::run`]: drain, wait on what [`watch`](super::watch) watches, stop.

use std::time::{Duration, Instant};

use sluice_core::perf::abi::map_type;

use super::{watch, Error, Event, RunControl, Session, Stop, DRAIN_INTERVAL};
use crate::load::LoadedObject;
use crate::sys::signal::SignalPipe;

/// A pause after a drain that found a BPF ring buffer busy: the kernel wakes its reader at
/// every record committed while the reader has caught up, so a reader that polls again at
/// once pays a wake-up for a few records. 200 µs is a tenth of the time a default 256 KiB
/// ring buffer takes to fill at 2.5 M records/s (48 bytes each).
const RINGBUF_BATCH: Duration = Duration::from_micros(200);

/// Longest time between two checks for the workload's exit when no `SIGCHLD` told of it.
const REAP_EVERY: Duration = Duration::from_millis(10);

impl Session {
    /// Records until the workload exits, the deadline passes or a signal comes, handing
    /// every event to `sink`; then disables the events and drains what is left.
    ///
    /// A signal is forwarded to the workload, which gets
    /// [`WORKLOAD_GRACE`](super::WORKLOAD_GRACE) to exit before `SIGKILL`; a workload still
    /// running at the deadline gets `SIGTERM` the same way.
    ///
    /// # Errors
    /// [`Error::Io`] when polling or waiting for the workload fails.
    pub fn run(
        &mut self,
        ctl: RunControl<'_>,
        sink: &mut dyn FnMut(&Session, &Event<'_>),
    ) -> Result<Stop, Error> {
        let RunControl {
            mut child,
            deadline,
            signals,
            process,
        } = ctl;
        let pidfd = match process.map(watch::watch_process).transpose()? {
            Some(None) => {
                // Already gone: nothing more can come from it.
                self.disable();
                self.drain_to_end(sink);
                return Ok(Stop::ProcessExited);
            }
            Some(Some(fd)) => Some(fd),
            None => None,
        };
        let mut waiter = watch::Waiter::new(self.wake_fds(), signals, pidfd.as_ref())?;
        let maps = || self.loaded.iter().flat_map(LoadedObject::maps);
        let busy = maps().any(|m| m.map_type() == map_type::RINGBUF);
        let mut woken = watch::Woken::default();
        let mut reap_at = Instant::now();
        let stop = loop {
            let signalled = signals.is_some_and(|s| woken.signal || s.pending());
            if let Some(sig) = signals
                .filter(|_| signalled)
                .map(SignalPipe::take)
                .and_then(|v| v.into_iter().find(|&s| s != libc::SIGCHLD))
            {
                if let Some(c) = child.as_deref_mut() {
                    watch::end_workload(c, sig);
                }
                break Stop::Signal(sig);
            }
            let now = Instant::now();
            // The workload's exit wakes the wait as SIGCHLD; else (no signals, or a caller
            // who did not ask for SIGCHLD) it is asked at least every REAP_EVERY. A
            // `waitid(2)` at each of the busy wake-ups cost more than the wait itself.
            if let Some(c) = child
                .as_deref_mut()
                .filter(|_| signalled || signals.is_none() || now >= reap_at)
            {
                reap_at = now + REAP_EVERY;
                if let Some(status) = c.try_wait().map_err(|source| Error::Io {
                    what: "waiting for the workload",
                    source,
                })? {
                    break Stop::Exited(status);
                }
            }
            if deadline.is_some_and(|d| now >= d) {
                if let Some(c) = child.as_deref_mut() {
                    watch::end_workload(c, libc::SIGTERM);
                }
                break Stop::Duration;
            }
            if woken.process && pidfd.as_ref().is_some_and(watch::process_exited) {
                break Stop::ProcessExited;
            }
            let wait = deadline.map_or(DRAIN_INTERVAL, |d| (d - now).min(DRAIN_INTERVAL));
            woken = waiter.wait(self.wake_fds(), wait)?;
            let handed = self.drain(sink);
            if handed > 0 {
                sink(self, &Event::Drained);
            }
            if handed >= 64 && busy {
                std::thread::sleep(RINGBUF_BATCH);
            }
        };
        self.disable();
        self.drain_to_end(sink);
        Ok(stop)
    }
}
