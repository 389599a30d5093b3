//! What a `bpf()` errno means on the running kernel: a missing privilege, a feature the
//! kernel is too old for, or a plain refusal.

use crate::error::Error;
use crate::kernel::version::{parse_kernel_release, running_kernel_version};
use rustix::io::Errno;

/// Builds the error for a failed `bpf()` call, classifying privilege and old-kernel errnos.
///
/// `feature` names what an `EINVAL` would be missing (with its minimum kernel), if the
/// call is one where `EINVAL` means "unknown to this kernel".
pub(crate) fn bpf_error(
    call: &'static str,
    subject: &str,
    errno: Errno,
    feature: Option<(String, &'static str)>,
) -> Error {
    if errno == Errno::NOSYS {
        return Error::Unsupported {
            feature: "bpf() system call".into(),
            min_kernel: "3.18",
            errno,
        };
    }
    if errno == Errno::PERM || errno == Errno::ACCESS {
        return permission_error(call, errno);
    }
    if errno == Errno::INVAL {
        // EINVAL means "unknown to this kernel" only if the kernel is older than the
        // feature; otherwise the request itself is wrong, a plain syscall error.
        let older = |min: &str| match (running_kernel_version(), parse_kernel_release(min)) {
            (Some(running), Some(min)) => running < min,
            _ => true,
        };
        if let Some((feature, min_kernel)) = feature.filter(|(_, k)| older(k)) {
            return Error::Unsupported {
                feature,
                min_kernel,
                errno,
            };
        }
    }
    Error::Syscall {
        call,
        subject: subject.into(),
        errno,
    }
}

/// What the kernel's refusal to attach a program means, in the kernel's terms, without the
/// errno (the caller adds it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachFacts {
    /// The effective capabilities this process lacks of `CAP_BPF`, `CAP_PERFMON`,
    /// `CAP_SYS_ADMIN`.
    pub missing_caps: Vec<&'static str>,
    /// The active LSMs (`/sys/kernel/security/lsm`), when readable.
    pub lsms: Option<Vec<String>>,
    /// Whether the function is in tracefs' `available_filter_functions` (`None`: not
    /// known).
    pub traceable: Option<bool>,
}

/// Why attaching a program of `kind` to `target` failed with `errno`.
pub(crate) fn attach_reason(
    kind: sluice_core::probe::AttachKind,
    target: &str,
    errno: Errno,
    facts: &AttachFacts,
) -> String {
    use sluice_core::probe::AttachKind as K;
    let denied = errno == Errno::PERM || errno == Errno::ACCESS;
    if denied && !facts.missing_caps.is_empty() {
        return format!(
            "permission denied: this process lacks {}",
            facts.missing_caps.join(", ")
        );
    }
    let trampoline = matches!(kind, K::Fentry | K::Fexit | K::FmodRet | K::Lsm);
    if kind == K::Lsm {
        if let Some(lsms) = &facts.lsms {
            if !lsms.iter().any(|l| l == "bpf") {
                return format!(
                    "the BPF LSM is not active: the kernel command line needs lsm=...,bpf \
                     (active LSMs: {})",
                    lsms.join(",")
                );
            }
        }
    }
    if trampoline && facts.traceable == Some(false) && kind != K::Lsm {
        return format!(
            "'{target}' is not traceable on this kernel (not in available_filter_functions: \
             notrace, inlined, or an __init function)"
        );
    }
    // ENOTSUPP (524) is the kernel-internal errno arch_prepare_bpf_trampoline returns.
    if trampoline && (errno.raw_os_error() == 524 || errno == Errno::OPNOTSUPP) {
        return "this kernel cannot make BPF trampolines here (no ftrace direct calls for \
                BPF on this architecture or kernel build)"
            .into();
    }
    if trampoline && denied {
        return "the kernel refuses BPF trampolines (fentry/fexit/fmod_ret/lsm) on this host \
                although this process has CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN (a \
                lockdown or hypervisor policy, not a missing privilege)"
            .into();
    }
    if kind == K::FmodRet && errno == Errno::INVAL {
        return format!(
            "'{target}' cannot have its return value changed (fmod_ret needs a function on \
             the kernel's error-injection list or a security_ hook)"
        );
    }
    if matches!(kind, K::RawTp | K::RawTpWritable) && errno == Errno::NOENT {
        return format!("this kernel has no raw tracepoint '{target}'");
    }
    if matches!(kind, K::RawTpWritable) && errno == Errno::INVAL {
        return format!("tracepoint '{target}' is not writable (no raw_tp.w for it)");
    }
    if matches!(kind, K::UprobeMulti | K::UretprobeMulti) {
        let old = running_kernel_version()
            .zip(parse_kernel_release("6.6"))
            .is_some_and(|(running, min)| running < min);
        if errno == Errno::INVAL && old {
            return "this kernel has no uprobe_multi links (BPF_TRACE_UPROBE_MULTI, Linux 6.6)"
                .into();
        }
        if errno == Errno::OPNOTSUPP {
            return "this kernel is built without uprobe_multi links (CONFIG_UPROBES)".into();
        }
        if errno == Errno::SRCH {
            return "no such process (-p)".into();
        }
        if errno == Errno::INVAL {
            return format!("the kernel cannot place a uprobe at every offset in '{target}'");
        }
    }
    if errno == Errno::BUSY {
        return format!("'{target}' already has a program attached that excludes this one");
    }
    if denied {
        return "the kernel refused although this process has CAP_BPF, CAP_PERFMON and \
                CAP_SYS_ADMIN"
            .into();
    }
    "the kernel refused".into()
}

/// The capabilities of `CAP_BPF`, `CAP_PERFMON`, `CAP_SYS_ADMIN` missing from this
/// thread's effective set.
pub(crate) fn missing_caps() -> Vec<&'static str> {
    use rustix::thread::{capabilities, CapabilitySet};
    let eff = capabilities(None)
        .map(|c| c.effective)
        .unwrap_or(CapabilitySet::empty());
    [
        (CapabilitySet::BPF, "CAP_BPF"),
        (CapabilitySet::PERFMON, "CAP_PERFMON"),
        (CapabilitySet::SYS_ADMIN, "CAP_SYS_ADMIN"),
    ]
    .into_iter()
    .filter(|(c, _)| !eff.contains(*c))
    .map(|(_, n)| n)
    .collect()
}

/// A permission error with the missing capabilities and the sysctl read now.
pub(crate) fn permission_error(call: &'static str, errno: Errno) -> Error {
    let missing = missing_caps();
    let unprivileged_bpf_disabled =
        std::fs::read_to_string("/proc/sys/kernel/unprivileged_bpf_disabled")
            .ok()
            .and_then(|s| s.trim().parse().ok());
    Error::Permission {
        call,
        errno,
        missing,
        unprivileged_bpf_disabled,
    }
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
    use std::error::Error as _;

    #[test]
    fn classification() {
        let e = bpf_error("bpf(BPF_MAP_CREATE)", "m", Errno::NOSYS, None);
        assert!(
            matches!(
                e,
                Error::Unsupported {
                    min_kernel: "3.18",
                    ..
                }
            ),
            "{e}"
        );
        // A feature newer than any kernel: Unsupported, naming it and its release.
        let e = bpf_error(
            "bpf(BPF_MAP_CREATE)",
            "m",
            Errno::INVAL,
            Some(("map type 99".into(), "255.0")),
        );
        assert_eq!(
            e.to_string(),
            format!(
                "this kernel does not support map type 99 ({}); it needs Linux 255.0 or later",
                Errno::INVAL
            )
        );
        // One the running kernel has: EINVAL is a plain error about the request.
        let e = bpf_error(
            "bpf(BPF_MAP_CREATE)",
            "m",
            Errno::INVAL,
            Some(("map type 1".into(), "3.19")),
        );
        assert!(matches!(e, Error::Syscall { .. }), "{e}");
        let e = bpf_error("bpf(BPF_MAP_CREATE)", "m", Errno::PERM, None);
        let s = e.to_string();
        assert!(
            s.contains("CAP_BPF") && s.contains("kernel.unprivileged_bpf_disabled"),
            "{s}"
        );
        assert!(e.source().is_some());
        let e = bpf_error("bpf(BPF_MAP_UPDATE_ELEM)", "m", Errno::NOENT, None);
        assert_eq!(
            e.to_string(),
            format!("bpf(BPF_MAP_UPDATE_ELEM) for 'm': {}", Errno::NOENT)
        );
        assert_eq!(e.errno(), Some(Errno::NOENT));
    }

    #[test]
    fn attach_reasons_in_kernel_terms() {
        use sluice_core::probe::AttachKind as K;
        let root = AttachFacts {
            missing_caps: Vec::new(),
            lsms: Some(vec!["lockdown".into(), "capability".into()]),
            traceable: None,
        };
        // fentry's EPERM as root is no missing privilege: no capability hint.
        let r = attach_reason(K::Fentry, "do_unlinkat", Errno::PERM, &root);
        assert!(
            r.contains("refuses BPF trampolines") && r.contains("not a missing"),
            "{r}"
        );
        let user = AttachFacts {
            missing_caps: vec!["CAP_BPF"],
            ..root.clone()
        };
        assert!(attach_reason(K::Fentry, "f", Errno::PERM, &user).contains("lacks CAP_BPF"));
        let r = attach_reason(K::Fentry, "f", Errno::from_raw_os_error(524), &root);
        assert!(r.contains("cannot make BPF trampolines"), "{r}");
        let untraceable = AttachFacts {
            traceable: Some(false),
            ..root.clone()
        };
        let r = attach_reason(K::Fexit, "f", Errno::INVAL, &untraceable);
        assert!(r.contains("'f' is not traceable"), "{r}");
        let r = attach_reason(K::Lsm, "file_open", Errno::INVAL, &root);
        assert!(
            r.contains("lsm=...,bpf") && r.contains("lockdown,capability"),
            "{r}"
        );
        let with_bpf = AttachFacts {
            lsms: Some(vec!["bpf".into()]),
            ..root.clone()
        };
        assert!(!attach_reason(K::Lsm, "file_open", Errno::INVAL, &with_bpf).contains("lsm="));
        assert_eq!(
            attach_reason(K::RawTp, "nope", Errno::NOENT, &root),
            "this kernel has no raw tracepoint 'nope'"
        );
        assert!(attach_reason(K::FmodRet, "f", Errno::INVAL, &root).contains("error-injection"));
    }

    #[test]
    fn uprobe_multi_refusals_say_what_the_kernel_lacks() {
        use sluice_core::probe::AttachKind as K;
        let root = AttachFacts {
            missing_caps: Vec::new(),
            lsms: None,
            traceable: None,
        };
        let r = |kind, errno| attach_reason(kind, "/bin/x", errno, &root);
        {
            let _old = crate::sys::fake::set_kernel_release("6.1.0-28-amd64");
            assert_eq!(
                r(K::UretprobeMulti, Errno::INVAL),
                "this kernel has no uprobe_multi links (BPF_TRACE_UPROBE_MULTI, Linux 6.6)"
            );
        }
        let _new = crate::sys::fake::set_kernel_release("6.18.0");
        assert!(r(K::UprobeMulti, Errno::INVAL).contains("every offset in '/bin/x'"));
        assert!(r(K::UprobeMulti, Errno::OPNOTSUPP).contains("CONFIG_UPROBES"));
        assert!(r(K::UprobeMulti, Errno::SRCH).contains("no such process"));
    }
}
