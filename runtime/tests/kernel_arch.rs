//! Kprobe prologues are planned for the running kernel's `pt_regs` and calling convention,
//! not for the architecture sluice was built for (issue 14, item 1): the i686 build (CI step
//! `i686`) on an x86-64 kernel plans `guest_kprobes.o`'s `kprobe/vfs_read(void *, char *,
//! unsigned long, void *)` from `di`, `si`, `dx`, `cx` in 8-byte slots, where it used to
//! refuse a fourth argument (i386 `regparm(3)`). Needs no privilege: only `uname(2)`.
#![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

mod common;

use sluice_core::arch::{Arch, ArgPassing};
use sluice_core::disasm::Listing;
use sluice_runtime::kernel::arch::running_kernel_arch;
use sluice_runtime::probe::plans;

#[test]
fn guest_kprobes_plan_for_the_running_kernel() {
    let Some(kernel) = running_kernel_arch() else {
        eprintln!("SKIPPED: no tables for this kernel's machine");
        return;
    };
    let bytes = common::fixture("guest_kprobes.o");
    let mut storage = sluice_core::object::ObjectStorage::new();
    let obj = sluice_core::Object::open(&bytes, &mut storage).unwrap();
    let opts = sluice_runtime::LoadOptions::default();
    let result = plans(&obj, &opts);
    let ArgPassing::Regs(regs) = kernel.arg_passing(false) else {
        panic!("{kernel}: kernels pass arguments in registers")
    };
    if regs.len() < 4 {
        // An i386 kernel: regparm(3) has no fourth register.
        assert!(result.is_err(), "{kernel}");
        return;
    }
    let plans = result.unwrap_or_else(|e| panic!("{kernel}: {e}"));
    let read_args = plans.iter().find(|p| p.program() == "read_args").unwrap();
    let prologue = &read_args.variants()[0].prologue;
    let text: Vec<String> = (&Listing::new(prologue))
        .into_iter()
        .map(|l| l.to_string())
        .collect();
    let size = if kernel.reg_size() == 8 { "u64" } else { "u32" };
    let code = if kernel.reg_size() == 8 { "79" } else { "61" };
    for (j, name) in regs.iter().take(4).enumerate() {
        let off = kernel.reg(name).unwrap().offset;
        let want = format!("({code}) r{} = *({size} *)(r6 +{off})", j + 2);
        assert!(text.contains(&want), "{kernel}: {want} in {text:#?}");
    }
    if kernel == Arch::X86_64 {
        assert_eq!(text[1], "(79) r2 = *(u64 *)(r6 +112)");
    }
    eprintln!("{kernel} kernel: read_args' prologue {text:?}");
}
