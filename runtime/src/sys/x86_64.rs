//! The raw syscall instruction on x86-64: `syscall`.
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
    // SAFETY: x86-64 syscall ABI (arch/x86/entry/entry_64.S): number in rax, arguments in
    // rdi, rsi, rdx, r10, r8; the kernel returns in rax and clobbers rcx (return rip) and
    // r11 (rflags). Memory validity is the caller's contract above.
    unsafe {
        asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") a0,
            in("rsi") a1,
            in("rdx") a2,
            in("r10") a3,
            in("r8") a4,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack, preserves_flags)
        );
    }
    ret
}
