//! `record` warns at start when a tracepoint it attaches to carries more than one program:
//! two of the run's own (`-e acc.o -e rej.o` on one tracepoint), named with their objects.
//! The runtime's tests (`runtime/tests/shared_tracepoint.rs`) cover another process's
//! program.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

fn kernel(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    common::skip(&format!("{test}: needs root"));
    false
}

#[test]
fn two_filters_of_one_run_on_one_tracepoint_are_said_at_start() {
    if !kernel("two_filters_of_one_run_on_one_tracepoint_are_said_at_start") {
        return;
    }
    let obj = common::fixture("shared_tp.o");
    let (code, _out, err) =
        common::sluice(&["record", "-e", &obj, "-e", &obj, "-a", "--duration", "0.2"]);
    assert_eq!(code, 0, "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("sluice: warning: syscalls:sys_enter_getpriority carries 2"))
        .unwrap_or_else(|| panic!("no warning in: {err}"));
    assert!(
        line.contains(&format!(
            "carries 2 programs of this run: {obj}: shared_accept, {obj}: shared_accept;"
        )),
        "{line}"
    );
    assert!(line.contains("drops the sample for every reader"), "{line}");
    // Said at start: before the summary.
    let summary = err.find("sluice record: ").unwrap();
    assert!(err.find(line).unwrap() < summary, "{err}");
}
