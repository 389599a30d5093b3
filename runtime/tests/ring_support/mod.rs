//! Test-only helpers shared by the ring and tracefs kernel tests: a `perf_event_attr` and
//! `perf_event_open` through `libc::syscall`, so these tests do not depend on the
//! runtime's `sys` module. (Once `sluice_runtime::sys` lands these can be replaced by it.)
#![allow(
    dead_code,
    unsafe_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `PERF_TYPE_TRACEPOINT`.
pub const PERF_TYPE_TRACEPOINT: u32 = 2;
/// `PERF_FLAG_FD_CLOEXEC`.
pub const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// attr flag bit `disabled`.
pub const FLAG_DISABLED: u64 = 1 << 0;
/// `PERF_EVENT_IOC_ENABLE` = `_IO('$', 0)`.
pub const IOC_ENABLE: libc::c_ulong = 0x2400;
/// `PERF_EVENT_IOC_DISABLE` = `_IO('$', 1)`.
pub const IOC_DISABLE: libc::c_ulong = 0x2401;

/// `struct perf_event_attr` up to `PERF_ATTR_SIZE_VER5` (112 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct PerfEventAttr {
    pub kind: u32,
    pub size: u32,
    pub config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    /// `wakeup_events` / `wakeup_watermark`.
    pub wakeup: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved: u16,
}

const _: () = assert!(core::mem::size_of::<PerfEventAttr>() == 112);

impl PerfEventAttr {
    /// A tracepoint sampling attr: every hit a sample laid out by `sample_type`, wake-up
    /// fields from the ring config, starting disabled.
    pub fn tracepoint(id: u64, sample_type: u64, ring: &sluice_runtime::ring::RingConfig) -> Self {
        let (wake_flag, wakeup) = ring.attr_fields();
        PerfEventAttr {
            kind: PERF_TYPE_TRACEPOINT,
            size: core::mem::size_of::<PerfEventAttr>() as u32,
            config: id,
            sample_period: 1,
            sample_type,
            flags: FLAG_DISABLED | wake_flag,
            wakeup,
            ..Default::default()
        }
    }
}

/// `perf_event_open(2)`.
pub fn perf_event_open(attr: &PerfEventAttr, pid: i32, cpu: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: perf_event_open(2) reads `attr.size` bytes from a valid, live attr; the
    // other arguments are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid,
            cpu,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the syscall returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// A perf ioctl without argument.
pub fn ioctl(fd: &OwnedFd, request: libc::c_ulong) {
    // SAFETY: PERF_EVENT_IOC_ENABLE/DISABLE take no pointer argument (perf_event_open(2)).
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, 0) };
    assert_eq!(
        r,
        0,
        "perf ioctl {request:#x}: {}",
        std::io::Error::last_os_error()
    );
}

/// The calling thread's id.
pub fn gettid() -> i32 {
    // SAFETY: gettid(2) has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
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
