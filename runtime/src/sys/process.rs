//! A workload started the way `perf record -- CMD` starts it: forked, held before `exec`
//! until its perf events exist, then released.
//!
//! [`std::process::Command::spawn`] returns only once the child has exec'd (it waits on a
//! close-on-exec pipe for an `exec` error), so a child held in `pre_exec` would block the
//! caller. The spawn therefore runs on a helper thread; the child writes its pid to a
//! "ready" pipe and blocks reading a "go" pipe; [`HeldChild::release`] writes the go byte and
//! joins the thread, which returns the [`Child`]. Dropping a `HeldChild` unreleased closes
//! the go pipe: the child sees end-of-file, fails its `pre_exec` and exits without running
//! the command.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt as _;
use std::process::{Child, Command};
use std::thread::JoinHandle;

/// A forked child waiting, before `exec`, for [`HeldChild::release`].
#[derive(Debug)]
pub struct HeldChild {
    pid: i32,
    go: Option<OwnedFd>,
    thread: Option<JoinHandle<io::Result<Child>>>,
}

/// What the held child does between `fork` and `exec`: announce its pid, wait for the go
/// byte. Only raw system calls, no allocation: the child of a multi-threaded parent may do
/// nothing else (fork(2), signal-safety(7)).
fn hold(ready: RawFd, go: RawFd, go_write: RawFd) -> io::Result<()> {
    // The fork copied the parent's write end of the go pipe: close it here, or a parent that
    // gives up (closes its own) would never make our read see end-of-file.
    // SAFETY: `go_write` is this process's copy of the parent's fd, used by nothing else in
    // the child; close(2) is async-signal-safe.
    unsafe { libc::close(go_write) };
    // SAFETY: both fds were open in the parent at fork time and the parent keeps its ends
    // alive until spawn returns; in the child they stay open until exec (close-on-exec).
    let (ready, go) = unsafe { (BorrowedFd::borrow_raw(ready), BorrowedFd::borrow_raw(go)) };
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    let bytes = pid.to_ne_bytes();
    let mut written = 0;
    while written < bytes.len() {
        match rustix::io::write(ready, bytes.get(written..).unwrap_or(&[])) {
            Ok(n) => written += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut byte = [0u8; 1];
    loop {
        match rustix::io::read(go, &mut byte) {
            Ok(1) => return Ok(()),
            // End of file: the parent gave up; do not run the command.
            Ok(_) => return Err(io::Error::from_raw_os_error(libc::ECANCELED)),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

impl HeldChild {
    /// Forks `cmd` and holds it before `exec`. Returns once the child's pid is known.
    ///
    /// # Errors
    /// The errno of `pipe2(2)`; the spawn error (`fork` failed, or the child could not
    /// report its pid).
    pub fn spawn(mut cmd: Command) -> io::Result<HeldChild> {
        use rustix::pipe::{pipe_with, PipeFlags};
        // What the workload starts stays ours to end, even when its parent exits first.
        super::tree::become_subreaper()?;
        let (ready_r, ready_w) = pipe_with(PipeFlags::CLOEXEC)?;
        let (go_r, go_w) = pipe_with(PipeFlags::CLOEXEC)?;
        let (ready_raw, go_raw, go_w_raw) =
            (ready_w.as_raw_fd(), go_r.as_raw_fd(), go_w.as_raw_fd());
        // SAFETY: `hold` only makes raw system calls without allocating or locking, which
        // is what may run between fork and exec (std::os::unix::process::CommandExt::pre_exec).
        unsafe {
            cmd.pre_exec(move || hold(ready_raw, go_raw, go_w_raw));
        }
        let thread = std::thread::Builder::new()
            .name("sluice-spawn".into())
            .spawn(move || {
                // Both child-side ends live until spawn returns, then close here, so the
                // parent's reads see end-of-file if the child died early.
                let child = cmd.spawn();
                drop((ready_w, go_r));
                child
            })?;
        let mut buf = [0u8; 4];
        let mut got = 0;
        while got < buf.len() {
            match rustix::io::read(&ready_r, buf.get_mut(got..).unwrap_or(&mut [])) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    drop(go_w);
                    let _ = thread.join();
                    return Err(e.into());
                }
            }
        }
        if got < buf.len() {
            drop(go_w);
            return Err(match thread.join() {
                Ok(Err(e)) => e,
                Ok(Ok(mut child)) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    io::Error::other("the workload never reported its pid")
                }
                Err(_) => io::Error::other("the spawning thread panicked"),
            });
        }
        Ok(HeldChild {
            pid: i32::from_ne_bytes(buf),
            go: Some(go_w),
            thread: Some(thread),
        })
    }

    /// The child's pid (it is already a process, not yet running the command).
    #[must_use]
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Lets the child `exec` and returns it once it has.
    ///
    /// # Errors
    /// The `exec` error (e.g. `ENOENT` for an unknown command), as `spawn` reports it.
    pub fn release(mut self) -> io::Result<Child> {
        if let Some(go) = self.go.take() {
            loop {
                match rustix::io::write(&go, &[1]) {
                    Ok(_) => break,
                    Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the spawning thread panicked")),
            None => Err(io::Error::other("workload already released")),
        }
    }
}

impl Drop for HeldChild {
    fn drop(&mut self) {
        // Unreleased: end-of-file on the go pipe makes the child fail before exec; spawn
        // then reports the failure and has reaped it.
        drop(self.go.take());
        if let Some(Ok(Ok(mut child))) = self.thread.take().map(JoinHandle::join) {
            let _ = child.kill();
            let _ = child.wait();
        }
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
    fn held_child_waits_then_runs() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo $$"])
            .stdout(std::process::Stdio::piped());
        let held = HeldChild::spawn(cmd).unwrap();
        let pid = held.pid();
        // Still the forked copy of us, not yet `sh`.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
        assert_ne!(comm.trim(), "sh");
        let child = held.release().unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), pid.to_string());
    }

    #[test]
    fn dropped_held_child_never_runs_the_command() {
        let dir = std::env::temp_dir().join(format!("sluice-held-{}", std::process::id()));
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &format!("touch {}", dir.display())]);
        let held = HeldChild::spawn(cmd).unwrap();
        let pid = held.pid();
        drop(held);
        assert!(!dir.exists());
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    }

    #[test]
    fn unknown_command_is_an_error_at_release() {
        let held = HeldChild::spawn(Command::new("/nonexistent/sluice-test")).unwrap();
        let e = held.release().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
