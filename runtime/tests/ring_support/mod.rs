//! Test-only helpers shared by the ring and tracefs kernel tests: tracepoint attrs, perf
//! event open/enable/disable through `sluice_runtime::sys`, and the root check.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::fd::{AsFd, OwnedFd};

use sluice_core::perf::abi::{attr_flags, perf_type, PerfEventAttr, PERF_FLAG_FD_CLOEXEC};
use sluice_runtime::ring::RingConfig;
use sluice_runtime::sys::perf_event;

/// A tracepoint sampling attr: every hit a sample laid out by `sample_type`, the ring's
/// wake-up policy, starting disabled.
pub fn tracepoint_attr(id: u64, sample_type: u64, ring: &RingConfig) -> PerfEventAttr {
    let mut attr = PerfEventAttr::new(perf_type::TRACEPOINT, id);
    attr.sample_period = 1;
    attr.sample_type = sample_type;
    attr.flags = attr_flags::DISABLED;
    ring.apply(&mut attr);
    attr
}

/// `perf_event_open(2)` without group, close-on-exec.
pub fn perf_event_open(attr: &PerfEventAttr, pid: i32, cpu: i32) -> std::io::Result<OwnedFd> {
    let mut attr = *attr;
    Ok(perf_event::perf_event_open(
        &mut attr,
        pid,
        cpu,
        None,
        PERF_FLAG_FD_CLOEXEC,
    )?)
}

/// `PERF_EVENT_IOC_ENABLE`.
pub fn enable(fd: &impl AsFd) {
    perf_event::enable(fd.as_fd()).expect("PERF_EVENT_IOC_ENABLE");
}

/// `PERF_EVENT_IOC_DISABLE`.
pub fn disable(fd: &impl AsFd) {
    perf_event::disable(fd.as_fd()).expect("PERF_EVENT_IOC_DISABLE");
}

/// The calling thread's id.
pub fn gettid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// `n` getppid(2) system calls (rustix issues the syscall every time; nothing caches it).
pub fn getppid_calls(n: usize) {
    for _ in 0..n {
        std::hint::black_box(rustix::process::getppid());
    }
}

/// Whether kernel tests can run: root. Otherwise skips loudly, or fails when
/// `SLUICE_REQUIRE_KERNEL=1`.
pub fn kernel_or_skip(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    if std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() == Ok("1") {
        panic!("{test}: needs root (SLUICE_REQUIRE_KERNEL=1)");
    }
    eprintln!(
        "SKIPPED {test}: kernel test needs root (set SLUICE_REQUIRE_KERNEL=1 to fail instead)"
    );
    false
}
