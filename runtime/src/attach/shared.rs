//! Who else is on a tracepoint: the kernel keeps one program list per tracepoint (kprobe
//! and uprobe events included) and runs every program on it for each hit; when any of
//! them returns 0, no perf event of the tracepoint gets the sample — ours neither, and
//! nothing counts it as lost. [`programs_on`] asks the kernel for that list
//! (`PERF_EVENT_IOC_QUERY_BPF`) and [`sharing`] sorts it into this run's programs and the
//! others, named by id and name (`BPF_PROG_GET_FD_BY_ID`, `BPF_OBJ_GET_INFO_BY_FD`).

use std::fmt;
use std::os::fd::AsFd;

use rustix::io::Errno;

use super::events::PerCpuEvents;
use crate::sys::{bpf, perf_event};

/// A program on a tracepoint that this run did not load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignProgram {
    /// Kernel-wide id (`bpftool prog show id N`).
    pub id: u32,
    /// Its name, `None` when it cannot be asked (gone meanwhile, no privilege).
    pub name: Option<String>,
}

impl fmt::Display for ForeignProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "id {} '{name}'", self.id),
            None => write!(f, "id {} (name unknown)", self.id),
        }
    }
}

/// A tracepoint whose samples depend on more than one program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedTracepoint {
    /// `GROUP:EVENT`.
    pub event: String,
    /// This run's programs on it, as `OBJECT: PROGRAM`, when there are several.
    pub ours: Vec<String>,
    /// The programs on it that this run did not load.
    pub others: Vec<ForeignProgram>,
    /// Programs on it beyond those the kernel listed ([`perf_event::QUERY_BPF_MAX`]).
    pub unlisted: u32,
}

impl SharedTracepoint {
    /// The warning for it: what is on the tracepoint and what that means for the samples.
    #[must_use]
    pub fn warning(&self) -> String {
        let mut parts = Vec::new();
        if !self.others.is_empty() {
            let names: Vec<String> = self.others.iter().map(ToString::to_string).collect();
            parts.push(format!(
                "{} also runs {} program(s) this run did not load: {}",
                self.event,
                self.others.len(),
                names.join(", ")
            ));
        }
        if self.ours.len() > 1 {
            parts.push(format!(
                "{} carries {} programs of this run: {}",
                self.event,
                self.ours.len(),
                self.ours.join(", ")
            ));
        }
        if self.unlisted > 0 {
            parts.push(format!("{} more not listed", self.unlisted));
        }
        let mut text = format!(
            "{}; the kernel runs every program on a tracepoint and, when any returns 0, \
             drops the sample for every reader: hits one of them rejects are neither \
             recorded here nor counted as lost",
            parts.join("; ")
        );
        if self.ours.len() > 1 {
            text.push_str(", and a hit they all accept is recorded once per program of this run");
        }
        text
    }
}

/// The ids of the programs on the tracepoint of `events`, and how many there are in all.
///
/// # Errors
/// As [`perf_event::query_bpf`]; `ENOENT` when there is no event to ask.
pub fn programs_on(events: &PerCpuEvents) -> Result<(Vec<u32>, u32), Errno> {
    // Every event of a tracepoint answers with the same list; the anchor too.
    let fd = events
        .events()
        .first()
        .map(|e| e.fd.as_fd())
        .or_else(|| events.anchor())
        .ok_or(Errno::NOENT)?;
    perf_event::query_bpf(fd)
}

/// The name of program `id`, when the kernel tells.
#[must_use]
pub fn program_name(id: u32) -> Option<String> {
    let fd = bpf::prog_get_fd_by_id(id).ok()?;
    let info = crate::load::prog_info(fd.as_fd()).ok()?;
    Some(info.name)
}

/// Sorts the programs on tracepoint `event` (`ids` of `total`, from [`programs_on`])
/// into ours — `ours` maps this run's program ids to `OBJECT: PROGRAM` — and the
/// others, named by `name`. `None` when the tracepoint carries only one of ours.
#[must_use]
pub fn sharing(
    event: &str,
    (ids, total): (&[u32], u32),
    ours: &[(u32, String)],
    name: impl Fn(u32) -> Option<String>,
) -> Option<SharedTracepoint> {
    let mut shared = SharedTracepoint {
        event: event.to_owned(),
        unlisted: total.saturating_sub(u32::try_from(ids.len()).unwrap_or(u32::MAX)),
        ..SharedTracepoint::default()
    };
    for &id in ids {
        match ours.iter().find(|(o, _)| *o == id) {
            Some((_, label)) => shared.ours.push(label.clone()),
            None => shared.others.push(ForeignProgram { id, name: name(id) }),
        }
    }
    (shared.ours.len() > 1 || !shared.others.is_empty() || shared.unlisted > 0).then_some(shared)
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;

    fn ours() -> Vec<(u32, String)> {
        vec![(10, "a.o: acc".into()), (11, "b.o: rej".into())]
    }

    #[test]
    fn only_ours_once_is_no_sharing() {
        assert_eq!(sharing("g:e", (&[10], 1), &ours(), |_| None), None);
        assert_eq!(sharing("g:e", (&[], 0), &ours(), |_| None), None);
    }

    #[test]
    fn two_of_ours_are_named_with_their_objects() {
        let s = sharing("g:e", (&[10, 11], 2), &ours(), |_| None).unwrap();
        assert_eq!(s.ours, ["a.o: acc", "b.o: rej"]);
        assert!(s.others.is_empty());
        let w = s.warning();
        assert!(
            w.starts_with("g:e carries 2 programs of this run: a.o: acc, b.o: rej;"),
            "{w}"
        );
        assert!(w.contains("drops the sample for every reader"), "{w}");
    }

    #[test]
    fn others_are_named_by_id_and_name() {
        let name = |id| (id == 7).then(|| "opensnoop".to_owned());
        let s = sharing("syscalls:sys_enter_openat", (&[7, 10, 8], 3), &ours(), name).unwrap();
        assert_eq!(
            s.others,
            [
                ForeignProgram {
                    id: 7,
                    name: Some("opensnoop".into())
                },
                ForeignProgram { id: 8, name: None }
            ]
        );
        let w = s.warning();
        assert!(
            w.starts_with(
                "syscalls:sys_enter_openat also runs 2 program(s) this run did not load: \
                 id 7 'opensnoop', id 8 (name unknown);"
            ),
            "{w}"
        );
    }

    #[test]
    fn programs_beyond_the_list_are_counted() {
        let s = sharing("g:e", (&[10], 70), &ours(), |_| None).unwrap();
        assert_eq!(s.unlisted, 69);
        assert!(s.warning().contains("69 more not listed"));
    }
}
