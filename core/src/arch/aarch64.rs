//! AArch64 tables.

/// `__NR_bpf` (`include/uapi/asm-generic/unistd.h`).
#[doc(alias = "__NR_bpf")]
pub const SYS_BPF: u32 = 280;

/// `__NR_perf_event_open` (`include/uapi/asm-generic/unistd.h`).
#[doc(alias = "__NR_perf_event_open")]
pub const SYS_PERF_EVENT_OPEN: u32 = 241;
