//! `sluice probes [--clean]`: the kprobe/uprobe events of groups `sluice` and
//! `perf_bpf_probe` in tracefs, with the pid their name carries; `--clean` removes those no
//! perf event uses (what a `SIGKILL`ed run leaves behind: nothing else would remove them),
//! judged by the kernel, not by pids, which mean nothing across PID namespaces; and the
//! ftrace instances `sluice-PID` of killed runs (one a run has open cannot be removed).

use crate::fail::Failure;
use sluice_runtime::tracefs::Tracefs;
use std::fmt::Write as _;

/// Parses `probes`' arguments and runs it.
pub fn run(parser: &mut lexopt::Parser) -> Result<(), Failure> {
    use lexopt::prelude::*;
    let mut clean = false;
    while let Some(arg) = parser.next().map_err(crate::fail::usage)? {
        match arg {
            Long("clean") => clean = true,
            other => return Err(crate::fail::usage(other.unexpected())),
        }
    }
    let tracefs = Tracefs::find().map_err(|e| Failure::runtime(format!("tracefs: {e}"), None))?;
    let listed = tracefs
        .list_ours()
        .map_err(|e| Failure::runtime(format!("listing probes: {e}"), None))?;
    let alive = |pid: Option<u32>| {
        pid.is_some_and(|p| std::path::Path::new("/proc").join(p.to_string()).exists())
    };
    if clean {
        let removed = tracefs
            .clean_unused()
            .map_err(|e| Failure::runtime(format!("removing probes: {e}"), None))?;
        let mut text = String::new();
        for p in &removed {
            let _ = writeln!(
                text,
                "removed {}/{} (no perf event used it; pid {})",
                p.group,
                p.event,
                pid_text(p.pid)
            );
        }
        let instances = tracefs
            .clean_instances()
            .map_err(|e| Failure::runtime(format!("removing ftrace instances: {e}"), None))?;
        for name in &instances {
            let _ = writeln!(text, "removed ftrace instance {name} (no run had it open)");
        }
        crate::console::out(&text)?;
        let left = listed.len().saturating_sub(removed.len());
        crate::console::say!(
            "sluice probes: removed {}, {left} left (in use by a perf event)",
            removed.len()
        );
        return Ok(());
    }
    let mut text = String::new();
    for p in &listed {
        let state = match p.pid {
            Some(_) if alive(p.pid) => "alive",
            Some(_) => "dead",
            None => "no-pid",
        };
        let _ = writeln!(text, "{:<6} {:<7} {}", pid_text(p.pid), state, p.definition);
    }
    crate::console::out(&text)?;
    crate::console::say!(
        "sluice probes: {} event(s) in groups {}",
        listed.len(),
        sluice_runtime::tracefs::OUR_GROUPS.join(", ")
    );
    Ok(())
}

fn pid_text(pid: Option<u32>) -> String {
    pid.map_or_else(|| "-".to_owned(), |p| p.to_string())
}
