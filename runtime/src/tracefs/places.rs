//! Where tracefs is looked for.

/// Where tracefs is looked for, in order. The first is also where it is mounted.
pub const CANDIDATES: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
