//! Task side-band records (`attr.comm`, `attr.task`): `PERF_RECORD_COMM`, `FORK` and
//! `EXIT`, which name a process and place it in the tree ([`task_record`]).

use super::record::Header;

/// `PERF_RECORD_COMM`.
pub const RECORD_COMM: u32 = 3;
/// `PERF_RECORD_EXIT`.
pub const RECORD_EXIT: u32 = 4;
/// `PERF_RECORD_FORK`.
pub const RECORD_FORK: u32 = 7;
/// `PERF_RECORD_MISC_COMM_EXEC`: the COMM record of an `exec`.
pub const MISC_COMM_EXEC: u16 = 1 << 13;

/// What a task side-band record (`attr.comm`, `attr.task`) says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task<'a> {
    /// `PERF_RECORD_COMM`: thread `tid` of process `pid` is now named `comm`.
    Comm {
        /// The process.
        pid: u32,
        /// The thread.
        tid: u32,
        /// The name, up to its NUL (at most the record's bytes).
        comm: &'a [u8],
        /// Named by an `exec` ([`MISC_COMM_EXEC`]).
        exec: bool,
    },
    /// `PERF_RECORD_FORK` (`exit == false`) or `PERF_RECORD_EXIT`.
    Fork {
        /// The new (exiting) process.
        pid: u32,
        /// Its parent.
        ppid: u32,
        /// The new (exiting) thread.
        tid: u32,
        /// The parent thread.
        ptid: u32,
        /// When (the record's own timestamp).
        time: u64,
        /// An EXIT record.
        exit: bool,
    },
}

/// Reads a COMM, FORK or EXIT record's body (after its header, sample-id trailer
/// included); `None` for another kind or a body too short for its fields.
#[must_use]
pub fn task_record(header: Header, body: &[u8]) -> Option<Task<'_>> {
    let u32_at = |at: usize| {
        body.get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_ne_bytes)
    };
    match header.kind {
        RECORD_COMM => {
            let name = body.get(8..)?;
            let end = name.iter().position(|&b| b == 0)?;
            Some(Task::Comm {
                pid: u32_at(0)?,
                tid: u32_at(4)?,
                comm: name.get(..end)?,
                exec: header.misc & MISC_COMM_EXEC != 0,
            })
        }
        RECORD_FORK | RECORD_EXIT => Some(Task::Fork {
            pid: u32_at(0)?,
            ppid: u32_at(4)?,
            tid: u32_at(8)?,
            ptid: u32_at(12)?,
            time: body
                .get(16..24)
                .and_then(|b| b.try_into().ok())
                .map(u64::from_ne_bytes)?,
            exit: header.kind == RECORD_EXIT,
        }),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::perf::record::RECORD_SAMPLE;
    use std::vec::Vec;

    #[test]
    fn task_records_read_their_fields_and_refuse_short_bodies() {
        let h = |kind, misc| Header {
            kind,
            misc,
            size: 0,
        };
        let mut comm = Vec::new();
        comm.extend_from_slice(&7u32.to_ne_bytes());
        comm.extend_from_slice(&8u32.to_ne_bytes());
        comm.extend_from_slice(b"true\0\0\0\0");
        assert_eq!(
            task_record(h(RECORD_COMM, MISC_COMM_EXEC), &comm),
            Some(Task::Comm {
                pid: 7,
                tid: 8,
                comm: b"true",
                exec: true
            })
        );
        // No NUL: not a name.
        assert_eq!(task_record(h(RECORD_COMM, 0), &comm[..12]), None);
        let mut fork = Vec::new();
        for v in [10u32, 9, 11, 9] {
            fork.extend_from_slice(&v.to_ne_bytes());
        }
        fork.extend_from_slice(&1234u64.to_ne_bytes());
        let want = Task::Fork {
            pid: 10,
            ppid: 9,
            tid: 11,
            ptid: 9,
            time: 1234,
            exit: false,
        };
        assert_eq!(task_record(h(RECORD_FORK, 0), &fork), Some(want));
        assert!(matches!(
            task_record(h(RECORD_EXIT, 0), &fork),
            Some(Task::Fork { exit: true, .. })
        ));
        for n in 0..fork.len() {
            assert_eq!(task_record(h(RECORD_FORK, 0), &fork[..n]), None);
        }
        assert_eq!(task_record(h(RECORD_SAMPLE, 0), &fork), None);
    }
}
