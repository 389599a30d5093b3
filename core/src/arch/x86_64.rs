//! x86-64 tables.

/// `__NR_bpf` (`arch/x86/entry/syscalls/syscall_64.tbl`).
#[doc(alias = "__NR_bpf")]
pub const SYS_BPF: u32 = 321;

/// `__NR_perf_event_open` (`arch/x86/entry/syscalls/syscall_64.tbl`).
#[doc(alias = "__NR_perf_event_open")]
pub const SYS_PERF_EVENT_OPEN: u32 = 298;
