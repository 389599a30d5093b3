//! Output that cannot make a run deaf: a [`StopWriter`] writes to a blocking fd (stdout, a
//! pipe, a file) without ever sleeping in `write(2)` for longer than the fd takes to
//! become writable, and gives up, with [`ErrorKind::WouldBlock`], once a stop was asked
//! (a stopping signal arrived, or the deadline passed) while the fd is not writable. A
//! full pipe that nobody reads then ends a recording like Ctrl-C does instead of hanging
//! it, and nothing is lost silently: the caller is told what could not be written.
//!
//! The fd keeps its blocking mode (the file description is shared with the workload,
//! which must not see `EAGAIN`): each write is preceded by a `poll(2)` for `POLLOUT`, at
//! most [`STOP_POLL`] long, and writes at most [`PIPE_BUF`] bytes, which a pipe that polls
//! writable takes without blocking (pipe(7)). The signal handlers of
//! [`SignalPipe`](super::signal::SignalPipe) have no `SA_RESTART`, so a signal also
//! interrupts the poll at once.
//!
//! A regular file, and the memory devices (`/dev/null`), never make a write wait for a
//! reader: they are written whole, without the poll (a 380 MB output in 4 KiB writes,
//! each behind a poll, spent twice the system time of 256 KiB writes).

use std::io::{self, ErrorKind, Write};
use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use super::signal::SignalPipe;

/// Longest single wait for the fd to become writable before the stop is checked again.
pub const STOP_POLL: Duration = Duration::from_millis(100);

/// Most bytes one `write(2)` is given: what a pipe polling writable takes at once
/// (`PIPE_BUF`, pipe(7)).
pub const PIPE_BUF: usize = 4096;

/// What ends the waiting of a [`StopWriter`].
#[derive(Debug, Clone, Copy)]
pub struct Stops<'a> {
    /// The signal pipe of the run.
    pub signals: Option<&'a SignalPipe>,
    /// The signals that stop the run (not `SIGCHLD`).
    pub stopping: &'a [i32],
    /// The run's deadline.
    pub deadline: Option<Instant>,
}

impl Stops<'_> {
    fn asked(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
            || self
                .signals
                .is_some_and(|s| self.stopping.iter().any(|&sig| s.has_arrived(sig)))
    }
}

/// A writer to a blocking fd that gives up once a stop is asked while the fd is not
/// writable (module docs). Once it gave up, every later write fails at once: see
/// [`StopWriter::blocked`].
#[derive(Debug)]
pub struct StopWriter<'a> {
    fd: BorrowedFd<'a>,
    stops: Stops<'a>,
    blocked: bool,
    /// A regular file or a memory device: written whole, never polled.
    direct: bool,
}

/// The character devices' major number of `/dev/null`, `/dev/zero`, `/dev/full`
/// (devices.txt: "1 char: Memory devices").
const MEM_MAJOR: u32 = 1;

impl<'a> StopWriter<'a> {
    /// A writer to `fd` that stops waiting on `stops`.
    #[must_use]
    pub fn new(fd: BorrowedFd<'a>, stops: Stops<'a>) -> Self {
        use rustix::fs::FileType;
        let direct =
            rustix::fs::fstat(fd).is_ok_and(|st| match FileType::from_raw_mode(st.st_mode) {
                FileType::RegularFile => true,
                FileType::CharacterDevice => rustix::fs::major(st.st_rdev) == MEM_MAJOR,
                _ => false,
            });
        StopWriter {
            fd,
            stops,
            blocked: false,
            direct,
        }
    }

    /// Whether it gave up: a stop came while the fd was not writable.
    #[must_use]
    pub fn blocked(&self) -> bool {
        self.blocked
    }

    /// The error every write gives once [`StopWriter::blocked`].
    #[must_use]
    pub fn blocked_error() -> io::Error {
        io::Error::new(
            ErrorKind::WouldBlock,
            "the output is not being read (writes blocked) and the run was asked to stop",
        )
    }
}

impl Write for StopWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        if buf.is_empty() {
            return Ok(0);
        }
        if self.direct {
            return loop {
                match rustix::io::write(self.fd, buf) {
                    Err(rustix::io::Errno::INTR) => {}
                    r => break r.map_err(io::Error::from),
                }
            };
        }
        let chunk = buf.get(..buf.len().min(PIPE_BUF)).unwrap_or(buf);
        let wait = Timespec {
            tv_sec: 0,
            tv_nsec: i64::from(STOP_POLL.subsec_nanos()),
        };
        loop {
            if self.blocked {
                return Err(Self::blocked_error());
            }
            let mut fds = [PollFd::new(&self.fd, PollFlags::OUT)];
            let ready = match poll(&mut fds, Some(&wait)) {
                Ok(n) => n > 0,
                Err(rustix::io::Errno::INTR) => false,
                Err(e) => return Err(e.into()),
            };
            if !ready {
                self.blocked = self.stops.asked();
                continue;
            }
            // Writable, or an error or hang-up that the write reports (EPIPE).
            match rustix::io::write(self.fd, chunk) {
                Ok(n) => return Ok(n),
                Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.blocked {
            return Err(Self::blocked_error());
        }
        Ok(())
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
    use rustix::pipe::{pipe_with, PipeFlags};
    use std::os::fd::AsFd;

    /// A pipe nobody reads: writes go through until it is full, then the writer waits;
    /// the deadline passing makes it give up (and stay given up), without a byte lost
    /// unreported: what it accepted is in the pipe.
    #[test]
    fn a_full_pipe_gives_up_at_the_stop() {
        let (read, write) = pipe_with(PipeFlags::CLOEXEC).unwrap();
        let stops = Stops {
            signals: None,
            stopping: &[],
            deadline: Some(Instant::now() + Duration::from_millis(300)),
        };
        let mut w = StopWriter::new(write.as_fd(), stops);
        let line = [b'x'; 1000];
        let mut accepted = 0usize;
        let started = Instant::now();
        let err = loop {
            match w.write(&line) {
                Ok(n) => accepted += n,
                Err(e) => break e,
            }
            assert!(started.elapsed() < Duration::from_secs(5), "never gave up");
        };
        assert_eq!(err.kind(), ErrorKind::WouldBlock);
        assert!(w.blocked());
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert_eq!(w.write(b"more").unwrap_err().kind(), ErrorKind::WouldBlock);
        assert!(w.flush().is_err());
        // Everything accepted is there to read.
        let mut got = 0usize;
        let mut buf = vec![0u8; 1 << 16];
        rustix::fs::fcntl_setfl(&read, rustix::fs::OFlags::NONBLOCK).unwrap();
        while let Ok(n) = rustix::io::read(&read, &mut buf) {
            if n == 0 {
                break;
            }
            got += n;
        }
        assert_eq!(got, accepted);
        assert!(accepted >= PIPE_BUF, "{accepted}");
    }

    /// A pipe that is read writes everything, whatever the stops.
    #[test]
    fn a_read_pipe_takes_it_all() {
        let (read, write) = pipe_with(PipeFlags::CLOEXEC).unwrap();
        let reader = std::thread::spawn(move || {
            let mut f = std::fs::File::from(read);
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut f, &mut v).unwrap();
            v.len()
        });
        let stops = Stops {
            signals: None,
            stopping: &[],
            deadline: Some(Instant::now()),
        };
        {
            let mut w = StopWriter::new(write.as_fd(), stops);
            for _ in 0..100 {
                w.write_all(&[b'y'; 10_000]).unwrap();
            }
        }
        drop(write);
        assert_eq!(reader.join().unwrap(), 1_000_000);
    }

    /// A closed pipe is EPIPE, as a plain write says.
    #[test]
    fn a_closed_pipe_is_broken_pipe() {
        let (read, write) = pipe_with(PipeFlags::CLOEXEC).unwrap();
        drop(read);
        let stops = Stops {
            signals: None,
            stopping: &[],
            deadline: None,
        };
        let mut w = StopWriter::new(write.as_fd(), stops);
        assert_eq!(w.write(b"x").unwrap_err().kind(), ErrorKind::BrokenPipe);
    }

    /// A regular file and /dev/null take a whole buffer in one write; a pipe at most
    /// PIPE_BUF bytes.
    #[test]
    fn files_are_written_whole_and_pipes_by_pipe_buf() {
        let stops = Stops {
            signals: None,
            stopping: &[],
            deadline: None,
        };
        let big = vec![b'y'; 100_000];
        let path = std::env::temp_dir().join(format!("sluice-out-{}", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        assert_eq!(
            StopWriter::new(file.as_fd(), stops).write(&big).unwrap(),
            big.len()
        );
        drop(file);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 100_000);
        let _ = std::fs::remove_file(&path);
        let null = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap();
        assert_eq!(
            StopWriter::new(null.as_fd(), stops).write(&big).unwrap(),
            big.len()
        );
        let (_read, write) = pipe_with(PipeFlags::CLOEXEC).unwrap();
        assert_eq!(
            StopWriter::new(write.as_fd(), stops).write(&big).unwrap(),
            PIPE_BUF
        );
    }
}
