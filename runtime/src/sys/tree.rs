//! The workload's process tree: everything it started, to end it as a whole. A workload
//! that ignores `SIGINT`/`SIGTERM`, or a shell that exits and leaves what it started
//! running, must not outlive the run. This process becomes a child subreaper
//! (`PR_SET_CHILD_SUBREAPER`, prctl(2)) when it starts a workload, so descendants whose
//! parent exits are re-parented here instead of to init, and stay findable through
//! `/proc/PID/task/TID/children` (proc(5), Linux 3.5).

use std::collections::BTreeSet;

/// Makes this process the reaper of its orphaned descendants.
///
/// # Errors
/// The errno of prctl(2).
pub fn become_subreaper() -> std::io::Result<()> {
    let me = rustix::process::getpid();
    rustix::process::set_child_subreaper(Some(me)).map_err(Into::into)
}

/// The pids of `pid`'s children (all its threads' children).
fn children_of(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        out.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    out
}

/// Whether `pid` is a zombie (exited, not yet reaped) or gone.
fn is_dead(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return true;
    };
    // The state follows the command name, which is in parentheses and may hold anything.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, r)| r.trim_start().chars().next());
    matches!(state, Some('Z' | 'X') | None)
}

/// Every live descendant of this process, breadth first.
#[must_use]
pub fn descendants() -> Vec<i32> {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    let mut queue = vec![me];
    while let Some(p) = queue.pop() {
        for c in children_of(p) {
            if seen.insert(c) {
                queue.push(c);
                if !is_dead(c) {
                    order.push(c);
                }
            }
        }
    }
    order
}

/// Sends `sig` to each of `pids` (a pid already gone is no error).
pub fn signal_all(pids: &[i32], sig: i32) {
    let Some(signal) = rustix::process::Signal::from_named_raw(sig) else {
        return;
    };
    for &p in pids {
        if let Some(pid) = rustix::process::Pid::from_raw(p) {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }
}

/// Reaps the zombies among this process's children except `keep` (the workload, whose
/// `std::process::Child` reaps it), without waiting.
pub fn reap_except(keep: i32) {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    for c in children_of(me) {
        if c == keep || !is_dead(c) {
            continue;
        }
        if let Some(pid) = rustix::process::Pid::from_raw(c) {
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
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
    fn a_grandchild_is_a_descendant() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let tree = loop {
            let d = descendants();
            if d.contains(&pid) && d.iter().any(|&p| children_of(pid).contains(&p)) {
                break d;
            }
            assert!(std::time::Instant::now() < until, "{d:?}");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let grandchild = children_of(pid)[0];
        assert!(tree.contains(&grandchild));
        signal_all(&[grandchild, pid], libc::SIGKILL);
        child.wait().unwrap();
    }
}
