//! The perf and bpf ABI: `bpf_attr`, `perf_event_attr`, ring records, and the perf.data
//! file format (`data`).

pub mod abi;
pub mod data;
pub mod record;
pub mod task;
