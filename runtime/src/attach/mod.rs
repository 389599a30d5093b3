//! Attaching programs: a [`Link`] per program (its tracefs probe, one perf event per CPU,
//! `PERF_EVENT_IOC_SET_BPF`, enable), made by [`Linker::attach`] from the program's
//! [`Plan`](crate::probe::Plan); and the `PERF_COUNT_SW_BPF_OUTPUT` events behind
//! `BPF_MAP_TYPE_PERF_EVENT_ARRAY` ([`Linker::output`]).
//!
//! A tracepoint (kprobe and uprobe events are tracepoints too, once tracefs made them) has
//! one program list for all its perf events: the first `SET_BPF` adds the program, the
//! following ones (the other CPUs) answer `EEXIST` because it is already there. That is
//! expected (the seed's fix in `perf record`); any other error is fatal. The program then
//! runs on every hit, and when it returns 0 no perf event of the tracepoint gets a sample.
//!
//! # The program never rides an inherited event
//! With `inherit` (a workload and its children, `record -p`), every task the workload forks
//! gets a copy of each event, and since Linux 6.10 the copy also takes the parent event's
//! program (`perf_event_alloc`: `if (parent_event->prog) event->prog = ...`, from commit
//! f11f10bfa1ca "perf/bpf: Call BPF handler directly"). When that child exits, its copy is
//! freed and `perf_event_detach_bpf_prog` takes the program out of the tracepoint's one
//! program list — for every event of the tracepoint, while the parent event still names it
//! (so `bpftool perf list` shows it attached, but it never runs again; the kernel keeps
//! emitting the probe's samples). A workload like `sh -c "echo | prog"` loses its programs
//! as soon as its first child exits. So with `inherit`, the program is attached to one more
//! event per tracepoint ([`PerCpuEvents::anchor`]): same task, any CPU, no `inherit`, never
//! enabled; it only holds the program on the list until the session closes it. The
//! inherited events themselves carry no program, and their copies none either.
//!
//! Order matters on the way out: the program leaves the tracepoint when the event that
//! attached it is freed, so every event is disabled before any is closed
//! ([`PerCpuEvents`]'s `Drop`), and all are closed before their tracefs probe is removed
//! (`EBUSY` otherwise): [`Link`]'s one `Drop` does the three in that order.

mod events;
mod hook;
mod link;
mod link_error;
mod multi;
mod sampling;
mod shared;
mod uprobe_multi;
mod usdt;

pub use events::lost_read_format;
pub use events::{
    bpf_output_sample_type, open_bpf_output, open_tasks, open_tracepoint, open_tracking,
    threads_of, tracepoint_sample_type, tracking_sample_type, CpuEvent, Error, EventOptions,
    PerCpuEvents, Scope, IDENTIFIED, THREAD_LIST_PASSES,
};
pub use hook::{attach_hook, attach_pmu_probe, program_only, PmuProbe};
pub use link::{Link, LinkError, Linker, PRINTK_EVENT};
pub use multi::kprobe_multi_functions;
pub use sampling::{
    counter, open_counters, open_sampling, sampling_sample_type, COUNTERS, DEFAULT_SAMPLE_FREQ,
};
pub use shared::{program_name, programs_on, sharing, ForeignProgram, SharedTracepoint};
pub use uprobe_multi::{attach_uprobe_multi, resolve_path, uprobe_multi_offsets};
pub use usdt::{attach_usdt, usdt_sites, SpecIds, UsdtSite, IP_MAP, SPECS_MAP};
