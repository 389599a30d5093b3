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

/// A permission error with the missing capabilities and the sysctl read now.
pub(crate) fn permission_error(call: &'static str, errno: Errno) -> Error {
    use rustix::thread::{capabilities, CapabilitySet};
    let eff = capabilities(None)
        .map(|c| c.effective)
        .unwrap_or(CapabilitySet::empty());
    let missing = [
        (CapabilitySet::BPF, "CAP_BPF"),
        (CapabilitySet::PERFMON, "CAP_PERFMON"),
        (CapabilitySet::SYS_ADMIN, "CAP_SYS_ADMIN"),
    ]
    .into_iter()
    .filter(|(c, _)| !eff.contains(*c))
    .map(|(_, n)| n)
    .collect();
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
}
