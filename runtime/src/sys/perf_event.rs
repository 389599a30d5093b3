//! `perf_event_open(2)`, the perf event ioctls (`ENABLE`, `DISABLE`, `SET_BPF`,
//! `SET_OUTPUT`, `ID`, `QUERY_BPF`) and `read(2)` of an event's lost count.
//!
//! Under `cfg(test)` the ioctls ask the [`fake`](super::fake) first, as the funnel does.

use super::{owned_fd, syscall, NR};
use rustix::io::Errno;
use rustix::ioctl::{self, opcode, Getter, IntegerSetter, NoArg};
use sluice_core::perf::abi::PerfEventAttr;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

/// Opens a perf event (`perf_event_open(attr, pid, cpu, group_fd, flags)`).
///
/// `pid == -1, cpu >= 0` counts every task on one CPU (what tracepoint/kprobe events with a
/// BPF program use). On `E2BIG` the kernel writes the size it supports into `attr.size`.
///
/// `attr.config1` is an address for the `kprobe`/`uprobe` PMUs (the probed function or path,
/// a NUL-terminated string the kernel only reads); keep it pointing at live memory.
///
/// # Errors
/// The kernel's errno: `ENOENT`/`EINVAL` for an unknown event, `EACCES`/`EPERM` per
/// `kernel.perf_event_paranoid` and capabilities, `E2BIG` for an unknown attr size.
pub fn perf_event_open(
    attr: &mut PerfEventAttr,
    pid: i32,
    cpu: i32,
    group_fd: Option<BorrowedFd<'_>>,
    flags: u32,
) -> Result<OwnedFd, Errno> {
    let group = group_fd.map_or(-1, |f| f.as_raw_fd());
    let ptr: *mut PerfEventAttr = attr;
    // SAFETY: `attr` is a live, exclusive repr(C) perf_event_attr of attr.size bytes (a
    // const assertion pins its size to PERF_ATTR_SIZE_VER8); the kernel reads it and may
    // write `size` back (kernel/events/core.c perf_copy_attr); the remaining arguments are
    // integers (man 2 perf_event_open). Sign-extension of pid/cpu/group to usize is what
    // the C ABI does for `int` arguments.
    let r = unsafe {
        syscall(
            NR.perf_event_open,
            [
                ptr as usize,
                pid as isize as usize,
                cpu as isize as usize,
                group as isize as usize,
                flags as usize,
            ],
        )
    };
    r.and_then(owned_fd)
}

/// `PERF_EVENT_IOC_ENABLE` = `_IO('$', 0)`.
const IOC_ENABLE: ioctl::Opcode = opcode::none(b'$', 0);
/// `PERF_EVENT_IOC_DISABLE` = `_IO('$', 1)`.
const IOC_DISABLE: ioctl::Opcode = opcode::none(b'$', 1);
/// `PERF_EVENT_IOC_SET_OUTPUT` = `_IO('$', 5)`.
const IOC_SET_OUTPUT: ioctl::Opcode = opcode::none(b'$', 5);
/// `PERF_EVENT_IOC_ID` = `_IOR('$', 7, __u64 *)` (the size of a pointer: differs on i386).
const IOC_ID: ioctl::Opcode = opcode::read::<*mut u64>(b'$', 7);
/// `PERF_EVENT_IOC_SET_BPF` = `_IOW('$', 8, __u32)`.
const IOC_SET_BPF: ioctl::Opcode = opcode::write::<u32>(b'$', 8);
/// `PERF_EVENT_IOC_QUERY_BPF` = `_IOWR('$', 10, struct perf_event_query_bpf *)` (the size
/// of a pointer, as for `ID`).
const IOC_QUERY_BPF: ioctl::Opcode = opcode::read_write::<*mut u32>(b'$', 10);

/// Most program ids [`query_bpf`] reads (the kernel's own limit on a tracepoint's
/// programs is `BPF_TRACE_MAX_PROGS`, 64).
pub const QUERY_BPF_MAX: usize = 64;

/// `struct perf_event_query_bpf` with room for [`QUERY_BPF_MAX`] ids.
#[repr(C)]
struct QueryBpf {
    ids_len: u32,
    prog_cnt: u32,
    ids: [u32; QUERY_BPF_MAX],
}

/// Starts counting (`PERF_EVENT_IOC_ENABLE`).
///
/// # Errors
/// The kernel's errno (`ENOTTY` if `fd` is no perf event).
#[doc(alias = "PERF_EVENT_IOC_ENABLE")]
pub fn enable(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    #[cfg(test)]
    if let Some(r) = super::fake::intercept_ioctl(fd.as_raw_fd(), super::fake::Request::Enable) {
        return r.map(drop);
    }
    // SAFETY: PERF_EVENT_IOC_ENABLE takes no argument (man 2 perf_event_open, "ioctl").
    unsafe { ioctl::ioctl(fd, NoArg::<IOC_ENABLE>::new()) }
}

/// Stops counting (`PERF_EVENT_IOC_DISABLE`).
///
/// # Errors
/// The kernel's errno.
#[doc(alias = "PERF_EVENT_IOC_DISABLE")]
pub fn disable(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    #[cfg(test)]
    if let Some(r) = super::fake::intercept_ioctl(fd.as_raw_fd(), super::fake::Request::Disable) {
        return r.map(drop);
    }
    // SAFETY: PERF_EVENT_IOC_DISABLE takes no argument (man 2 perf_event_open, "ioctl").
    unsafe { ioctl::ioctl(fd, NoArg::<IOC_DISABLE>::new()) }
}

/// Attaches BPF program `prog` to the event (`PERF_EVENT_IOC_SET_BPF`, Linux 4.1).
///
/// # Errors
/// `EEXIST` if a program is already attached, `EINVAL` for a program type that does not
/// fit the event, the kernel's errno.
#[doc(alias = "PERF_EVENT_IOC_SET_BPF")]
pub fn set_bpf(fd: BorrowedFd<'_>, prog: BorrowedFd<'_>) -> Result<(), Errno> {
    #[cfg(test)]
    if let Some(r) = super::fake::intercept_ioctl(
        fd.as_raw_fd(),
        super::fake::Request::SetBpf {
            prog: prog.as_raw_fd(),
        },
    ) {
        return r.map(drop);
    }
    let raw = usize::try_from(prog.as_raw_fd()).map_err(|_| Errno::BADF)?;
    // SAFETY: PERF_EVENT_IOC_SET_BPF takes the program fd by value as the ioctl argument
    // (kernel/events/core.c _perf_ioctl, `case PERF_EVENT_IOC_SET_BPF`).
    unsafe { ioctl::ioctl(fd, IntegerSetter::<IOC_SET_BPF>::new_usize(raw)) }
}

/// Sends the records of perf event `fd` into the ring of event `target`
/// (`PERF_EVENT_IOC_SET_OUTPUT`, Linux 2.6.33): several events (one per thread of a
/// process, on one CPU) then share one mapping. `fd` must not be mapped itself.
///
/// # Errors
/// The kernel's errno: `EINVAL` when the two events are on different CPUs (or one is
/// per-task and the other not), `EBUSY` when `fd` has its own mapping.
#[doc(alias = "PERF_EVENT_IOC_SET_OUTPUT")]
pub fn set_output(fd: BorrowedFd<'_>, target: BorrowedFd<'_>) -> Result<(), Errno> {
    #[cfg(test)]
    if let Some(r) = super::fake::intercept_ioctl(
        fd.as_raw_fd(),
        super::fake::Request::SetOutput {
            target: target.as_raw_fd(),
        },
    ) {
        return r.map(drop);
    }
    let raw = usize::try_from(target.as_raw_fd()).map_err(|_| Errno::BADF)?;
    // SAFETY: PERF_EVENT_IOC_SET_OUTPUT takes the target event's fd by value as the ioctl
    // argument (perf_event_open(2), "PERF_EVENT_IOC_SET_OUTPUT"; kernel/events/core.c
    // _perf_ioctl); nothing is read or written through it as a pointer.
    unsafe { ioctl::ioctl(fd, IntegerSetter::<IOC_SET_OUTPUT>::new_usize(raw)) }
}

/// The event's kernel id (`PERF_EVENT_IOC_ID`), as found in sample records.
///
/// # Errors
/// The kernel's errno.
#[doc(alias = "PERF_EVENT_IOC_ID")]
pub fn id(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    #[cfg(test)]
    if let Some(r) = super::fake::intercept_ioctl(fd.as_raw_fd(), super::fake::Request::Id) {
        return r.map(|v| v as u64);
    }
    // SAFETY: PERF_EVENT_IOC_ID writes one u64 through its pointer argument
    // (kernel/events/core.c perf_event_id / put_user); Getter supplies that u64.
    unsafe { ioctl::ioctl(fd, Getter::<IOC_ID, u64>::new()) }
}

/// The ids of every BPF program attached to the tracepoint (or kprobe, uprobe) of perf
/// event `fd`, whoever attached them (`PERF_EVENT_IOC_QUERY_BPF`, Linux 4.16): the
/// kernel runs them all on each hit, and any one returning 0 drops the sample for every
/// perf event of that tracepoint. At most [`QUERY_BPF_MAX`] ids; the second value is how
/// many there are in all.
///
/// # Errors
/// The kernel's errno: `EPERM` without `CAP_PERFMON`/`CAP_SYS_ADMIN`, `EINVAL` for an
/// event that is no trace event, `ENOTTY` before 4.16.
#[doc(alias = "PERF_EVENT_IOC_QUERY_BPF")]
pub fn query_bpf(fd: BorrowedFd<'_>) -> Result<(Vec<u32>, u32), Errno> {
    let mut q = QueryBpf {
        ids_len: QUERY_BPF_MAX as u32,
        prog_cnt: 0,
        ids: [0; QUERY_BPF_MAX],
    };
    #[cfg(test)]
    if let Some(r) = super::fake::intercept_query_bpf(fd.as_raw_fd(), &mut q.ids) {
        let total = u32::try_from(r?).unwrap_or(u32::MAX);
        let n = (total as usize).min(QUERY_BPF_MAX);
        return Ok((q.ids.get(..n).unwrap_or_default().to_vec(), total));
    }
    // SAFETY: PERF_EVENT_IOC_QUERY_BPF reads ids_len and writes prog_cnt and at most
    // ids_len ids through its pointer argument (kernel/trace/bpf_trace.c
    // perf_event_query_prog_array); `q` is a live, exclusive struct with room for them.
    let r = unsafe { ioctl::ioctl(fd, ioctl::Updater::<IOC_QUERY_BPF, QueryBpf>::new(&mut q)) };
    match r {
        // More programs than room: the first ids_len are copied all the same.
        Ok(()) | Err(Errno::NOSPC) => {
            let n = (q.prog_cnt as usize).min(QUERY_BPF_MAX);
            Ok((q.ids.get(..n).unwrap_or_default().to_vec(), q.prog_cnt))
        }
        Err(e) => Err(e),
    }
}

/// How many records the kernel dropped for want of room in the ring of event `fd` (and of
/// the events it inherited to), since it was opened: `read(2)` of an event opened with
/// `read_format` = `PERF_FORMAT_LOST` alone, whose answer is `{ u64 value; u64 lost; }`
/// (kernel/events/core.c `perf_read_one`). Unlike the `PERF_RECORD_LOST` records, which
/// the kernel writes only when the next record fits, this includes losses not reported
/// yet.
///
/// # Errors
/// The kernel's errno; `EINVAL` when the read is shorter than the two words (the event
/// was opened with another `read_format`).
///
/// # Minimum kernel
/// 6.0 (`PERF_FORMAT_LOST`).
#[doc(alias = "PERF_FORMAT_LOST")]
pub fn read_lost(fd: BorrowedFd<'_>) -> Result<u64, Errno> {
    #[cfg(test)]
    if let Some(r) = super::fake::intercept_ioctl(fd.as_raw_fd(), super::fake::Request::ReadLost) {
        return r.map(|v| v as u64);
    }
    let mut buf = [0u8; 16];
    let n = rustix::io::read(fd, &mut buf)?;
    match (n, buf.get(8..16)) {
        (16, Some(lost)) => Ok(u64::from_ne_bytes(
            lost.try_into().map_err(|_| Errno::INVAL)?,
        )),
        _ => Err(Errno::INVAL),
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
    use sluice_core::perf::abi::{attr_flags, perf_type, PERF_FLAG_FD_CLOEXEC};
    use std::os::fd::AsFd;

    #[test]
    fn opcodes_match_the_uapi_header() {
        // include/uapi/linux/perf_event.h on x86-64: 0x2400, 0x2401, 0x2405, 0x80082407,
        // 0x40042408.
        assert_eq!(IOC_ENABLE, 0x2400);
        assert_eq!(IOC_DISABLE, 0x2401);
        assert_eq!(IOC_SET_OUTPUT, 0x2405);
        let ptr = core::mem::size_of::<usize>() as ioctl::Opcode;
        assert_eq!(IOC_ID, 0x8000_2407 | (ptr << 16));
        assert_eq!(IOC_SET_BPF, 0x4004_2408);
        assert_eq!(IOC_QUERY_BPF, 0xc000_240a | (ptr << 16));
    }

    /// A software counter on this thread: the kernel counts our own task clock, so
    /// enable/disable/id must all work wherever perf_event_open does.
    #[test]
    fn software_event_round_trip() {
        let mut attr = PerfEventAttr::new(perf_type::SOFTWARE, 1 /* TASK_CLOCK */);
        attr.flags = attr_flags::DISABLED | attr_flags::EXCLUDE_KERNEL | attr_flags::EXCLUDE_HV;
        let fd = match perf_event_open(&mut attr, 0, -1, None, PERF_FLAG_FD_CLOEXEC) {
            Ok(fd) => fd,
            Err(e) if e == Errno::NOSYS || e == Errno::ACCESS || e == Errno::PERM => {
                assert!(
                    std::env::var_os("SLUICE_REQUIRE_KERNEL").is_none(),
                    "perf_event_open unavailable: {e}"
                );
                eprintln!("SKIP software_event_round_trip: perf_event_open: {e}");
                return;
            }
            Err(e) => panic!("perf_event_open: {e}"),
        };
        enable(fd.as_fd()).unwrap();
        disable(fd.as_fd()).unwrap();
        assert!(id(fd.as_fd()).unwrap() > 0);
        // SET_BPF with a non-program fd is refused by the kernel, observably.
        // kernel/bpf/syscall.c __bpf_prog_get: a file that is no BPF program is EINVAL.
        assert_eq!(set_bpf(fd.as_fd(), fd.as_fd()), Err(Errno::INVAL));
    }
}
