//! `core::arch`'s `pt_regs` table of the architecture this test runs on, checked against the
//! kernel's uapi headers as `linux-raw-sys` generated them (an oracle independent of us).
//! Cross runs under qemu-user check the i386 and aarch64 tables the same way.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::mem::{offset_of, size_of};

use sluice_core::arch::Arch;

fn check(arch: Arch, rows: &[(&str, usize)], size: usize) {
    for &(name, off) in rows {
        let r = arch
            .reg(name)
            .unwrap_or_else(|| panic!("{arch}: no {name}"));
        assert_eq!(usize::from(r.offset), off, "{arch} {name}");
    }
    assert_eq!(usize::from(arch.pt_regs_size()), size, "{arch} sizeof");
}

#[cfg(target_arch = "x86_64")]
#[test]
fn native_pt_regs_match_the_uapi_header() {
    use linux_raw_sys::ptrace::pt_regs as P;
    check(
        Arch::X86_64,
        &[
            ("r15", offset_of!(P, r15)),
            ("r12", offset_of!(P, r12)),
            ("bp", offset_of!(P, rbp)),
            ("bx", offset_of!(P, rbx)),
            ("r8", offset_of!(P, r8)),
            ("ax", offset_of!(P, rax)),
            ("cx", offset_of!(P, rcx)),
            ("dx", offset_of!(P, rdx)),
            ("si", offset_of!(P, rsi)),
            ("di", offset_of!(P, rdi)),
            ("orig_ax", offset_of!(P, orig_rax)),
            ("ip", offset_of!(P, rip)),
            ("flags", offset_of!(P, eflags)),
            ("sp", offset_of!(P, rsp)),
            ("ss", offset_of!(P, ss)),
        ],
        size_of::<P>(),
    );
}

#[cfg(target_arch = "x86")]
#[test]
fn native_pt_regs_match_the_uapi_header() {
    use linux_raw_sys::ptrace::pt_regs as P;
    check(
        Arch::I386,
        &[
            ("bx", offset_of!(P, ebx)),
            ("cx", offset_of!(P, ecx)),
            ("dx", offset_of!(P, edx)),
            ("si", offset_of!(P, esi)),
            ("di", offset_of!(P, edi)),
            ("bp", offset_of!(P, ebp)),
            ("ax", offset_of!(P, eax)),
            ("orig_ax", offset_of!(P, orig_eax)),
            ("ip", offset_of!(P, eip)),
            ("flags", offset_of!(P, eflags)),
            ("sp", offset_of!(P, esp)),
            ("ss", offset_of!(P, xss)),
        ],
        size_of::<P>(),
    );
}

#[cfg(target_arch = "aarch64")]
#[test]
fn native_pt_regs_match_the_uapi_header() {
    use linux_raw_sys::ptrace::user_pt_regs as P;
    let mut rows: Vec<(String, usize)> = (0..31)
        .map(|i| (format!("x{i}"), offset_of!(P, regs) + 8 * i))
        .collect();
    rows.push(("sp".into(), offset_of!(P, sp)));
    rows.push(("pc".into(), offset_of!(P, pc)));
    rows.push(("pstate".into(), offset_of!(P, pstate)));
    let rows: Vec<(&str, usize)> = rows.iter().map(|(n, o)| (n.as_str(), *o)).collect();
    check(Arch::Aarch64, &rows, size_of::<P>());
}
