//! The raw syscall instruction on 32-bit x86: `int 0x80`.
//!
//! Works the same on a 32-bit kernel and on an x86-64 kernel through IA32 emulation
//! (`CONFIG_IA32_EMULATION`), where the i386 numbers of `core::arch::i386` apply.
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
    // SAFETY: i386 syscall ABI (arch/x86/entry/entry_32.S, `int $0x80`): number in eax,
    // arguments in ebx, ecx, edx, esi, edi; result in eax; no other register is changed.
    // LLVM reserves esi as a base pointer, so the fourth argument travels in a scratch
    // register and is swapped into esi around the instruction (restoring esi after).
    // Memory validity is the caller's contract above.
    unsafe {
        asm!(
            "xchg esi, {a3}",
            "int 0x80",
            "xchg esi, {a3}",
            a3 = inout(reg) a3 => _,
            inlateout("eax") nr as isize => ret,
            in("ebx") a0,
            in("ecx") a1,
            in("edx") a2,
            in("edi") a4,
            options(nostack, preserves_flags)
        );
    }
    ret
}
