//! tracefs: where dynamic probes are made and tracepoints are described.
//!
//! - [`Tracefs::find`] locates the filesystem (`/sys/kernel/tracing`, then
//!   `/sys/kernel/debug/tracing`), mounting it when it is absent and we are root.
//! - [`Tracefs::add_probe`] writes a kprobe/kretprobe/uprobe/uretprobe definition
//!   (Documentation/trace/kprobetrace.rst, uprobetracer.rst) in group [`GROUP`] under a name
//!   that carries our pid (`p_<pid>_<n>_<func>`), and returns a [`ProbeGuard`] that removes it
//!   (`-:group/event`) when dropped, on every exit path.
//! - [`Tracefs::event_id`] and [`Tracefs::event_format`] read an event's `id` (the
//!   `config` of a `PERF_TYPE_TRACEPOINT` perf event) and its `format` (where each field
//!   sits in the sample's RAW data).
//! - [`Tracefs::tracing_texts`] reads the headers and formats a perf.data file carries.
//! - [`PrintkInstance`]: a private ftrace instance for `bpf_trace_printk` lines (programs on
//!   perf tracepoints, whose perf samples of them the kernel drops);
//!   [`Tracefs::clean_instances`] removes those a killed run left.
//! - [`Tracefs::list_ours`] and [`Tracefs::clean_unused`] find leftovers of killed runs, for
//!   `sluice probes --clean`.
//! - [`uprobe_offset`] turns `PATH:FUNC[+OFF]` into the FILE offset that uprobe_events
//!   wants, through the target ELF's symbols and sections ([`sluice_core::elf`]).

mod error;
mod format;
mod instance;
mod mount;
mod places;
mod probe;
mod texts;
mod uprobe;

pub use error::{Error, SymbolProblem};
pub use format::{DataLoc, EventFormat, Field, MAX_RECORD_SIZE};
pub use instance::{PrintkInstance, INSTANCE_PREFIX};
pub use mount::Tracefs;
pub use places::CANDIDATES;
pub use probe::{
    event_name, event_name_in, pid_namespace, pid_of_event, ListedProbe, LockKind, ProbeGuard,
    ProbeKind, ProbeRequest, ProbeTarget, SetupLock, GROUP, MAX_EVENT_NAME_LEN, OUR_GROUPS,
};
pub use texts::TracingTexts;
pub use uprobe::{elf_machine, symbol_address, uprobe_offset, UprobeSpec};
