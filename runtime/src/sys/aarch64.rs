//! The raw syscall instruction on AArch64: `svc #0`.
//!
//! # Safety
//! Callers pass a syscall number and arguments valid for that call; see [`syscall5`].

use core::arch::asm;

/// Issues system call `nr` with five arguments and returns the kernel's raw result
/// (`-errno` on failure).
///
/// # Safety
/// The arguments must be what syscall `nr` expects: every address must point to memory
/// the kernel may read or write as that call documents, for as long as the call runs.
pub(super) unsafe fn syscall5(
    nr: u32,
    a0: usize,
    a1: usize,
    a2: usize,
    a3: usize,
    a4: usize,
) -> isize {
    let ret: isize;
    // SAFETY: AArch64 syscall ABI (arch/arm64/kernel/entry-common.c, syscall(2) man page):
    // number in x8, arguments in x0..x4, result in x0; other registers are preserved.
    // Memory validity is the caller's contract above.
    unsafe {
        asm!(
            "svc 0",
            in("x8") nr as usize,
            inlateout("x0") a0 as isize => ret,
            in("x1") a1,
            in("x2") a2,
            in("x3") a3,
            in("x4") a4,
            options(nostack, preserves_flags)
        );
    }
    ret
}
