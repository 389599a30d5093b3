//! stdout and stderr without panics: `println!` and `eprintln!` panic when their stream is
//! closed (`sluice inspect x.o | true`, `sluice record ... 2>&1 | head -1`), and a panic
//! aborts the process (the release profile's `panic = "abort"`), which would leave a run's
//! probes and workload behind. Here a closed stdout is the reader saying it has enough
//! (the command ends quietly, exit 0, as it would on `SIGPIPE`), and a closed stderr
//! silences the messages without ending anything.

use crate::fail::Failure;
use std::io::Write as _;

/// Writes `text` to stdout (locked, flushed). A closed stdout (`EPIPE`) is success.
///
/// # Errors
/// A runtime failure naming stdout for any other write error (a full disk behind `>`).
pub fn out(text: &str) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::runtime(format!("writing to stdout: {e}"), None)),
    }
}

/// Writes `text` and a newline to stderr; a write that fails (stderr closed) is dropped.
pub fn err(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr
        .write_all(text.as_bytes())
        .and_then(|()| stderr.write_all(b"\n"));
}

/// `eprintln!` through [`err`]: never panics.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::console::err(&format!($($arg)*))
    };
}
pub(crate) use say;
