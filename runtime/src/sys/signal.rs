//! Signals as readable events: a handler that records which signal came and writes one
//! byte to a pipe, so a `poll(2)` loop wakes up and does the real work outside the handler.
//!
//! Only async-signal-safe work happens in the handler (signal-safety(7)): two atomic
//! operations and one `write(2)` to a non-blocking pipe; `errno` is saved and restored.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

/// Write end of the pipe of the installed [`SignalPipe`], or -1.
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);
/// Bit `n` set: signal `n` arrived and was not yet taken.
static PENDING: AtomicU64 = AtomicU64::new(0);
/// Bit `n` set: signal `n` was taken by [`SignalPipe::take`] since the install (sticky:
/// what [`SignalPipe::has_arrived`] still sees after the loop took it).
static TAKEN: AtomicU64 = AtomicU64::new(0);
/// Whether a [`SignalPipe`] is installed (there is one per process).
static INSTALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    // SAFETY: __errno_location returns the calling thread's errno slot (errno(3)); reading
    // and restoring it keeps the interrupted code's errno intact.
    let saved = unsafe { *libc::__errno_location() };
    if let Ok(bit) = u32::try_from(sig) {
        if bit < 64 {
            PENDING.fetch_or(1u64 << bit, Ordering::SeqCst);
        }
    }
    let fd = PIPE_WRITE.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write(2) is async-signal-safe (signal-safety(7)); `byte` lives across the
        // call; a full non-blocking pipe makes it fail with EAGAIN, which is harmless: the
        // reader is already due to wake up.
        unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = saved };
}

/// Handlers for a set of signals, reporting through a pipe; the previous dispositions come
/// back when it is dropped.
#[derive(Debug)]
pub struct SignalPipe {
    read: OwnedFd,
    write: OwnedFd,
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalPipe {
    /// Installs the handler for `signals` (e.g. `SIGINT`, `SIGTERM`, `SIGCHLD`).
    ///
    /// # Errors
    /// `EBUSY` when another `SignalPipe` is alive; the errno of `pipe2(2)` or
    /// `sigaction(2)`.
    pub fn install(signals: &[i32]) -> io::Result<SignalPipe> {
        if INSTALLED.swap(true, Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(libc::EBUSY));
        }
        let result = Self::install_inner(signals);
        if result.is_err() {
            INSTALLED.store(false, Ordering::SeqCst);
        }
        result
    }

    fn install_inner(signals: &[i32]) -> io::Result<SignalPipe> {
        use rustix::pipe::{pipe_with, PipeFlags};
        let (read, write) = pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK)?;
        PENDING.store(0, Ordering::SeqCst);
        TAKEN.store(0, Ordering::SeqCst);
        PIPE_WRITE.store(write.as_raw_fd(), Ordering::SeqCst);
        let mut pipe = SignalPipe {
            read,
            write,
            previous: Vec::new(),
        };
        for &sig in signals {
            // SAFETY: an all-zero sigaction is a valid value of the C struct (empty mask,
            // no flags) that we then fill in (sigaction(2)).
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            // No SA_RESTART: a blocking poll(2) returns EINTR at once either way, and other
            // calls must not hide the signal for long.
            action.sa_flags = 0;
            // SAFETY: sa_mask is a live sigset_t owned by `action` (sigemptyset(3)).
            unsafe { libc::sigemptyset(&raw mut action.sa_mask) };
            // SAFETY: as above for the previous action.
            let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: both pointers are to live sigaction structs (sigaction(2)); the
            // handler only does async-signal-safe work (module docs).
            let r = unsafe { libc::sigaction(sig, &raw const action, &raw mut old) };
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
            pipe.previous.push((sig, old));
        }
        Ok(pipe)
    }

    /// The read end: readable when a signal arrived.
    #[must_use]
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }

    /// Reports `sig` as if it had arrived (the next [`SignalPipe::take`] returns it, and the
    /// pipe wakes a waiting loop): for a stop that is found outside a handler, such as
    /// stdout closed under a recording (`SIGPIPE`, which Rust ignores).
    pub fn raise(&self, sig: i32) {
        if let Ok(bit) = u32::try_from(sig) {
            if bit < 64 {
                PENDING.fetch_or(1u64 << bit, Ordering::SeqCst);
            }
        }
        // A full pipe is fine: the loop is already due to wake.
        let _ = rustix::io::write(&self.write, &[1u8]);
    }

    /// Whether a signal arrived that [`SignalPipe::take`] has not returned yet (no syscall).
    #[must_use]
    pub fn pending(&self) -> bool {
        PENDING.load(Ordering::SeqCst) != 0
    }

    /// Empties the pipe and returns the signals that arrived since the last call.
    pub fn take(&self) -> Vec<i32> {
        let mut buf = [0u8; 64];
        while matches!(rustix::io::read(&self.read, &mut buf), Ok(n) if n > 0) {}
        let bits = PENDING.swap(0, Ordering::SeqCst);
        TAKEN.fetch_or(bits, Ordering::SeqCst);
        (0..64).filter(|b| bits & (1u64 << b) != 0).collect()
    }

    /// Whether `sig` arrived since the install, taken by [`SignalPipe::take`] or not (the
    /// pipe is left alone). Safe to ask from any thread, and from code that must not
    /// consume what the loop is due to take: a blocked writer that should give up once a
    /// stop was asked ([`crate::sys::out::StopWriter`]).
    #[must_use]
    pub fn has_arrived(&self, sig: i32) -> bool {
        let Ok(bit) = u32::try_from(sig) else {
            return false;
        };
        if bit >= 64 {
            return false;
        }
        let bits = PENDING.load(Ordering::SeqCst) | TAKEN.load(Ordering::SeqCst);
        bits & (1u64 << bit) != 0
    }
}

impl Drop for SignalPipe {
    fn drop(&mut self) {
        for (sig, old) in self.previous.drain(..).rev() {
            // SAFETY: restores a disposition sigaction(2) gave us for the same signal.
            unsafe { libc::sigaction(sig, &raw const old, std::ptr::null_mut()) };
        }
        PIPE_WRITE.store(-1, Ordering::SeqCst);
        INSTALLED.store(false, Ordering::SeqCst);
    }
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
    fn a_signal_becomes_a_readable_pipe() {
        let pipe = SignalPipe::install(&[libc::SIGUSR2]).unwrap();
        assert!(
            SignalPipe::install(&[libc::SIGUSR2]).is_err(),
            "one at a time"
        );
        rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::USR2)
            .unwrap();
        let fd = pipe.fd();
        let mut fds = [rustix::event::PollFd::new(
            &fd,
            rustix::event::PollFlags::IN,
        )];
        let n = rustix::event::poll(&mut fds, None).unwrap();
        assert_eq!(n, 1);
        assert!(pipe.has_arrived(libc::SIGUSR2));
        assert_eq!(pipe.take(), vec![libc::SIGUSR2]);
        assert!(pipe.take().is_empty());
        // Taken, still seen: a stop stays a stop.
        assert!(pipe.has_arrived(libc::SIGUSR2));
        assert!(!pipe.has_arrived(libc::SIGUSR1));
        assert!(!pipe.has_arrived(200));
        drop(pipe);
        assert!(SignalPipe::install(&[libc::SIGUSR2]).is_ok());
    }
}
