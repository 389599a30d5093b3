//! The perf and bpf ABI: `bpf_attr`, `perf_event_attr`, ring records.

pub mod abi;
