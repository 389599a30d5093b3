//! The plan of a program attached through a BPF link rather than a perf event: a BTF hook
//! (`tp_btf/`, `fentry/`, `fexit/`, `fmod_ret/`, `lsm/`), a raw tracepoint (`raw_tp/`), or a
//! multi-probe (`kprobe.multi/`, `uprobe.multi/`). Made from a section title by
//! [`sluice_core::probe::attach_point`].

use sluice_core::btf::Kind;
use sluice_core::probe::{AttachKind, AttachPoint};

/// A program's BPF-link attach point, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookPlan {
    /// What kind.
    pub kind: AttachKind,
    /// The tracepoint, function, hook or glob.
    pub target: String,
    /// The binary of a `uprobe.multi/`.
    pub path: Option<String>,
    /// The `.s` form (`BPF_F_SLEEPABLE`).
    pub sleepable: bool,
}

impl HookPlan {
    /// The plan of `p`.
    #[must_use]
    pub fn new(p: &AttachPoint<'_>) -> HookPlan {
        HookPlan {
            kind: p.kind,
            target: p.target.to_owned(),
            path: p.path.map(str::to_owned),
            sleepable: p.sleepable,
        }
    }

    /// The kernel BTF type to find for `attach_btf_id` (`btf_trace_NAME` typedef,
    /// `bpf_lsm_HOOK` or the function), `None` for the kinds that need none.
    #[must_use]
    pub fn btf_type(&self) -> Option<(String, Kind)> {
        self.kind.needs_btf_id().then(|| {
            let kind = if self.kind.btf_is_typedef() {
                Kind::Typedef
            } else {
                Kind::Func
            };
            (
                format!("{}{}", self.kind.btf_name_prefix(), self.target),
                kind,
            )
        })
    }

    /// The section name as libbpf spells it (`fentry.s/vfs_read`).
    #[must_use]
    pub fn section(&self) -> String {
        AttachPoint {
            kind: self.kind,
            target: &self.target,
            path: self.path.as_deref(),
            sleepable: self.sleepable,
        }
        .to_string()
    }

    /// The `BPF_F_*` load flags.
    #[must_use]
    pub fn prog_flags(&self) -> u32 {
        if self.sleepable {
            sluice_core::probe::BPF_F_SLEEPABLE
        } else {
            0
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use sluice_core::probe::attach_point;

    fn plan(s: &str) -> HookPlan {
        HookPlan::new(&attach_point(s).unwrap().unwrap())
    }

    #[test]
    fn btf_types_of_each_kind() {
        assert_eq!(
            plan("tp_btf/sched_switch").btf_type(),
            Some(("btf_trace_sched_switch".into(), Kind::Typedef))
        );
        assert_eq!(
            plan("fentry/do_unlinkat").btf_type(),
            Some(("do_unlinkat".into(), Kind::Func))
        );
        assert_eq!(
            plan("fmod_ret/security_file_open").btf_type(),
            Some(("security_file_open".into(), Kind::Func))
        );
        assert_eq!(
            plan("lsm.s/file_open").btf_type(),
            Some(("bpf_lsm_file_open".into(), Kind::Func))
        );
        assert_eq!(plan("raw_tp/sched_switch").btf_type(), None);
        assert_eq!(plan("kprobe.multi/vfs_*").btf_type(), None);
        assert_eq!(plan("lsm.s/file_open").prog_flags(), 1 << 4);
        assert_eq!(plan("lsm/file_open").prog_flags(), 0);
        assert_eq!(plan("lsm.s/file_open").section(), "lsm.s/file_open");
    }
}
