//! The running kernel's architecture: whose `struct pt_regs` a kprobe or uprobe program
//! gets, whatever this program was built for (the i686 build runs on x86-64 kernels).

use sluice_core::arch::Arch;

/// The architecture of a kernel whose `uname(2)` machine (or `/proc/sys/kernel/arch`) is
/// `machine`: `x86_64`, `i386`..`i686`, `aarch64`; `None` for one sluice has no tables for.
#[must_use]
pub fn parse_machine(machine: &str) -> Option<Arch> {
    match machine.trim() {
        "x86_64" => Some(Arch::X86_64),
        "i386" | "i486" | "i586" | "i686" => Some(Arch::I386),
        "aarch64" | "arm64" => Some(Arch::Aarch64),
        _ => None,
    }
}

/// The running kernel's architecture, if sluice has tables for it.
///
/// `/proc/sys/kernel/arch` first: it is the kernel's own machine, where `uname(2)` says
/// `i686` on an x86-64 kernel to a process run under `setarch i686` (`PER_LINUX32`); then
/// `uname(2)`'s machine (kernels before the sysctl, or without `/proc`).
#[must_use]
pub fn running_kernel_arch() -> Option<Arch> {
    if let Ok(text) = std::fs::read_to_string("/proc/sys/kernel/arch") {
        if let Some(arch) = parse_machine(&text) {
            return Some(arch);
        }
    }
    let u = rustix::system::uname();
    parse_machine(&u.machine().to_string_lossy())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn machines() {
        let rows = [
            ("x86_64", Some(Arch::X86_64)),
            ("x86_64\n", Some(Arch::X86_64)),
            ("i686", Some(Arch::I386)),
            ("i386", Some(Arch::I386)),
            ("aarch64", Some(Arch::Aarch64)),
            ("arm64", Some(Arch::Aarch64)),
            ("aarch64_be", None),
            ("riscv64", None),
            ("", None),
        ];
        for (m, want) in rows {
            assert_eq!(parse_machine(m), want, "{m:?}");
        }
    }

    /// The kernel's machine, not the build's: the i686 build on an x86-64 kernel says x86_64,
    /// and so does an aarch64 build run by qemu-user on one (qemu's `uname(2)` answers with the
    /// emulated machine; the kernel's `/proc/sys/kernel/arch` is the truth it passes through).
    #[test]
    fn the_running_kernel_is_the_kernels_own_machine() {
        let u = rustix::system::uname();
        let uname = u.machine().to_string_lossy().into_owned();
        let sysctl = std::fs::read_to_string("/proc/sys/kernel/arch").ok();
        let machine = sysctl.clone().unwrap_or_else(|| uname.clone());
        let Some(want) = parse_machine(&machine) else {
            eprintln!("no tables for this kernel's machine {machine:?}");
            return;
        };
        assert_eq!(
            running_kernel_arch(),
            Some(want),
            "sysctl {sysctl:?}, uname {uname:?}"
        );
        if cfg!(target_arch = "x86") && sysctl.as_deref().map(str::trim) == Some("x86_64") {
            assert_eq!(running_kernel_arch(), Some(Arch::X86_64));
        }
    }
}
