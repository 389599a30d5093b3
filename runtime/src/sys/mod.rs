//! The system-call layer: the only module of the runtime allowed `unsafe`.
//!
//! Calls that `rustix` covers (open, read, mmap, ioctl, poll, uname, fds) go through it.
//! The two it does not, `bpf(2)` and `perf_event_open(2)`, go through one raw-syscall funnel
//! per architecture ([`x86_64`](self) `syscall`, `x86` `int 0x80`, `aarch64` `svc 0`), with
//! the numbers from [`sluice_core::arch::native`]. Above the funnel, [`bpf`] and
//! [`perf_event`] are safe, typed wrappers that build every `bpf_attr` themselves, so the
//! addresses the kernel writes through always come from live Rust slices of the right size.
//! `ring_map` is the perf ring's shared mapping (`mmap(2)`, the atomic `data_head` /
//! `data_tail` views, bounded slices of the data area) that `ring` drains; `ringbuf_map` the
//! BPF ring buffer's two mappings (consumer page read-write, producer page and the data
//! twice read-only), its positions and header words.
//!
//! # Safety
//! Every `unsafe` block carries a `// SAFETY:` line naming the man page or kernel source
//! that makes it sound. The invariants are:
//! - the funnel passes addresses the kernel reads or writes only from references that live
//!   for the duration of the call, with lengths taken from the same slices;
//! - an fd the kernel returns is new and owned by nobody else, so wrapping it in
//!   [`OwnedFd`](std::os::fd::OwnedFd) once is correct.
//!
//! # Testing without a kernel
//! Under `cfg(test)`, [`fake`] lets a unit test answer the funnel's calls and the perf
//! ioctls on its own thread instead of the kernel (see its docs for how to script a call).
#![allow(unsafe_code)]

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "x86")]
mod x86;
#[cfg(target_arch = "x86_64")]
mod x86_64;

#[cfg(target_arch = "aarch64")]
use aarch64 as funnel;
#[cfg(target_arch = "x86")]
use x86 as funnel;
#[cfg(target_arch = "x86_64")]
use x86_64 as funnel;

#[cfg(feature = "alloc-count")]
pub mod alloc_count;
pub mod bpf;
#[cfg(test)]
pub mod fake;
pub mod file;
pub mod mmap;
pub mod out;
pub mod perf_event;
pub mod process;
pub(crate) mod ring_map;
pub(crate) mod ringbuf_map;
pub mod signal;
pub mod tree;

use rustix::io::Errno;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// Raw syscall numbers in use on this target.
const NR: sluice_core::arch::Syscalls = sluice_core::arch::Syscalls {
    bpf: sluice_core::arch::native::SYS_BPF,
    perf_event_open: sluice_core::arch::native::SYS_PERF_EVENT_OPEN,
};

/// Issues syscall `nr` and turns the kernel's `-errno` convention into a `Result`.
///
/// Under `cfg(test)`, a [`fake`] installed on this thread answers instead of the kernel.
///
/// # Safety
/// As [`funnel::syscall5`]: the arguments must be valid for syscall `nr`. With a fake
/// installed (tests), it reads and writes them as the typed wrappers lay them out: a
/// `bpf` attr as `size` initialized bytes the caller holds exclusively, a
/// `perf_event_open` attr as a whole [`PerfEventAttr`](sluice_core::perf::abi::PerfEventAttr).
unsafe fn syscall(nr: u32, a: [usize; 5]) -> Result<usize, Errno> {
    #[cfg(test)]
    // SAFETY: forwarded contract of this function, which includes what the fake needs.
    if let Some(r) = unsafe { fake::intercept(nr, a) } {
        return r;
    }
    let [a0, a1, a2, a3, a4] = a;
    // SAFETY: forwarded contract of this function (syscall(2)).
    let ret = unsafe { funnel::syscall5(nr, a0, a1, a2, a3, a4) };
    // Linux returns -4095..=-1 for errors (include/linux/err.h MAX_ERRNO).
    if (-4095..0).contains(&ret) {
        Err(Errno::from_raw_os_error(-ret as i32))
    } else {
        Ok(ret as usize)
    }
}

/// Takes ownership of an fd a successful syscall returned.
fn owned_fd(ret: usize) -> Result<OwnedFd, Errno> {
    let raw = RawFd::try_from(ret).map_err(|_| Errno::BADF)?;
    // SAFETY: `raw` was just returned by bpf(2)/perf_event_open(2) as a new file descriptor
    // (man 2 bpf, "RETURN VALUE"; man 2 perf_event_open "RETURN VALUE"), owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

/// Whether `errno` from `bpf(2)` means the kernel (or an emulator such as `qemu-user`)
/// has no `bpf()` at all.
#[must_use]
pub fn is_no_bpf(errno: Errno) -> bool {
    errno == Errno::NOSYS
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

    /// `core::arch` against linux-raw-sys, generated from the kernel headers of the build target.
    #[test]
    fn syscall_numbers_match_linux_raw_sys() {
        assert_eq!(NR.bpf, linux_raw_sys::general::__NR_bpf);
        assert_eq!(
            NR.perf_event_open,
            linux_raw_sys::general::__NR_perf_event_open
        );
    }

    /// The funnel reaches the kernel: an unknown bpf command is EINVAL (kernel/bpf/syscall.c
    /// `default: err = -EINVAL`), not ENOSYS, wherever bpf() exists; under qemu-user it is
    /// ENOSYS, and `is_no_bpf` says so.
    #[test]
    fn funnel_reaches_the_kernel() {
        let mut attr = sluice_core::perf::abi::ObjInfoAttr::default();
        let ptr: *mut _ = &mut attr;
        // SAFETY: a valid, live attr buffer of the given size (man 2 bpf); command 9999 is
        // unknown so the kernel reads nothing else.
        let r = unsafe {
            syscall(
                NR.bpf,
                [9999, ptr as usize, core::mem::size_of_val(&attr), 0, 0],
            )
        };
        match r {
            Err(e) if is_no_bpf(e) => {
                assert!(
                    std::env::var_os("SLUICE_REQUIRE_KERNEL").is_none_or(|v| v != "1"),
                    "bpf() is ENOSYS but SLUICE_REQUIRE_KERNEL=1"
                );
                eprintln!(
                    "*** SKIPPED funnel_reaches_the_kernel: bpf() is ENOSYS here (qemu-user?) ***"
                );
            }
            Err(e) => assert!(e == Errno::INVAL || e == Errno::PERM, "{e}"),
            Ok(v) => panic!("unknown bpf command succeeded: {v}"),
        }
        // getpid through the same funnel equals rustix's answer: arguments and return value
        // travel correctly.
        let nr_getpid = linux_raw_sys::general::__NR_getpid;
        // SAFETY: getpid(2) takes no arguments and touches no memory.
        let pid = unsafe { syscall(nr_getpid, [0; 5]) }.unwrap();
        assert_eq!(pid as i32, rustix::process::getpid().as_raw_nonzero().get());
    }
}
