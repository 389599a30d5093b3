//! The perf and bpf ABI: `bpf_attr`, `perf_event_attr`, ring records, and the perf.data
//! file format (`data`); `ftrace_page`: a page of an ftrace ring buffer (`trace_pipe_raw`).

pub mod abi;
pub mod data;
pub mod ftrace_page;
pub mod record;
pub mod task;
