//! What the running kernel offers to attach to: its syscall wrappers (`ksyscall/`), the
//! kprobe and uprobe PMUs (`/sys/bus/event_source/devices/{kprobe,uprobe}`), the active
//! LSMs, whether a function is traceable, and configuration options an attach type needs.

use std::path::Path;

use crate::kernel::errno::{missing_caps, AttachFacts};

/// Where the dynamic PMUs describe themselves.
pub const PMU_DIR: &str = "/sys/bus/event_source/devices";
/// The active LSMs, comma-separated (securityfs).
pub const LSM_FILE: &str = "/sys/kernel/security/lsm";

/// The syscall-wrapper prefix of this build's architecture, as libbpf's
/// `arch_specific_syscall_pfx` gives it: the kernel function `ksyscall/NAME` probes is
/// `<prefix>NAME` (`__x64_sys_openat`) on kernels with syscall wrappers (4.17+).
#[must_use]
pub fn syscall_prefix() -> Option<&'static str> {
    if cfg!(target_arch = "x86_64") {
        Some("__x64_sys_")
    } else if cfg!(target_arch = "x86") {
        Some("__ia32_sys_")
    } else if cfg!(target_arch = "aarch64") {
        Some("__arm64_sys_")
    } else {
        None
    }
}

/// The kernel function of syscall `name`, found as libbpf finds it: the arch's wrapper
/// (`__x64_sys_NAME`) when the kernel has wrappers (it lists `<prefix>bpf` in
/// `/proc/kallsyms`), else `__se_sys_NAME`/`sys_NAME` of kernels without them.
///
/// # Errors
/// As [`crate::kernel::kallsyms::lookup`].
pub fn syscall_function(name: &str) -> crate::Result<String> {
    let Some(prefix) = syscall_prefix() else {
        return Ok(format!("sys_{name}"));
    };
    let probe = format!("{prefix}bpf");
    let wrapped = crate::kernel::kallsyms::lookup(&[probe.as_str()])?
        .first()
        .is_some_and(Option::is_some);
    Ok(if wrapped {
        format!("{prefix}{name}")
    } else {
        format!("sys_{name}")
    })
}

/// A dynamic PMU (`kprobe` or `uprobe`): its `perf_event_attr.type` and the `config` bit
/// that makes a return probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbePmu {
    /// `type`.
    pub type_: u32,
    /// The `retprobe` bit of `config` (`format/retprobe`: `config:0`).
    pub retprobe_bit: u32,
    /// The first bit of `config` that holds a uprobe's `ref_ctr_offset` (a USDT
    /// semaphore's file offset; `format/ref_ctr_offset`: `config:32-63`, Linux 4.20);
    /// `None` when the PMU has none.
    pub ref_ctr_shift: Option<u32>,
}

/// The `kprobe` or `uprobe` PMU (`pmu` is the device name), when the kernel has it
/// (Linux 4.17, `CONFIG_KPROBE_EVENTS` / `CONFIG_UPROBE_EVENTS`).
#[must_use]
pub fn probe_pmu(pmu: &str) -> Option<ProbePmu> {
    probe_pmu_in(Path::new(PMU_DIR), pmu)
}

/// [`probe_pmu`] under another devices directory (tests).
#[must_use]
pub fn probe_pmu_in(dir: &Path, pmu: &str) -> Option<ProbePmu> {
    let dev = dir.join(pmu);
    let type_ = std::fs::read_to_string(dev.join("type"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let first_bit = |name: &str| -> Option<u32> {
        let format = std::fs::read_to_string(dev.join("format").join(name)).ok()?;
        format
            .trim()
            .strip_prefix("config:")?
            .split('-')
            .next()?
            .parse()
            .ok()
    };
    Some(ProbePmu {
        type_,
        retprobe_bit: first_bit("retprobe")?,
        ref_ctr_shift: first_bit("ref_ctr_offset").filter(|b| *b < 64),
    })
}

/// The active LSMs, when securityfs is mounted and readable.
#[must_use]
pub fn active_lsms() -> Option<Vec<String>> {
    let text = std::fs::read_to_string(LSM_FILE).ok()?;
    Some(
        text.trim()
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    )
}

/// Whether `func` is in tracefs' `available_filter_functions` under `tracefs`: the
/// functions ftrace (and so BPF trampolines and kprobes' fast path) can hook. `None` when
/// the list cannot be read.
#[must_use]
pub fn is_traceable(tracefs: &Path, func: &str) -> Option<bool> {
    let text = std::fs::read_to_string(tracefs.join("available_filter_functions")).ok()?;
    Some(text.lines().any(|l| {
        // `name` or `name [module]`.
        l.split_whitespace().next() == Some(func)
    }))
}

/// Whether the running kernel's configuration sets `option` (`CONFIG_FPROBE`): `None`
/// when no configuration can be read.
#[must_use]
pub fn config_set(option: &str) -> Option<bool> {
    let config = crate::kernel::config::read_kernel_config(None).ok()?;
    let want = format!("{option}=");
    Some(
        config
            .lines()
            .any(|l| l.strip_prefix(&want).is_some_and(|v| v == "y" || v == "m")),
    )
}

/// What [`crate::kernel::errno`] needs to explain an attach refusal of `func` (a hook or
/// function name; `None` for tracepoints), read now.
#[must_use]
pub fn attach_facts(tracefs: Option<&Path>, func: Option<&str>) -> AttachFacts {
    AttachFacts {
        missing_caps: missing_caps(),
        lsms: active_lsms(),
        traceable: match (tracefs, func) {
            (Some(t), Some(f)) => is_traceable(t, f),
            _ => None,
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn pmu_type_and_retprobe_bit() {
        let dir = std::env::temp_dir().join(format!("sluice-pmu-{}", std::process::id()));
        let dev = dir.join("kprobe");
        std::fs::create_dir_all(dev.join("format")).unwrap();
        std::fs::write(dev.join("type"), "9\n").unwrap();
        std::fs::write(dev.join("format/retprobe"), "config:0\n").unwrap();
        assert_eq!(
            probe_pmu_in(&dir, "kprobe"),
            Some(ProbePmu {
                type_: 9,
                retprobe_bit: 0,
                ref_ctr_shift: None,
            })
        );
        std::fs::write(dev.join("format/ref_ctr_offset"), "config:32-63\n").unwrap();
        assert_eq!(
            probe_pmu_in(&dir, "kprobe").and_then(|p| p.ref_ctr_shift),
            Some(32)
        );
        assert_eq!(probe_pmu_in(&dir, "uprobe"), None);
        std::fs::write(dev.join("format/retprobe"), "nonsense\n").unwrap();
        assert_eq!(probe_pmu_in(&dir, "kprobe"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_hosts_uprobe_pmu_matches_sysfs() {
        // Whatever the kernel, the answer is what sysfs says.
        let sys = Path::new(PMU_DIR).join("uprobe/type");
        match std::fs::read_to_string(&sys) {
            Ok(t) => assert_eq!(
                probe_pmu("uprobe").map(|p| p.type_),
                Some(t.trim().parse().unwrap())
            ),
            Err(_) => assert_eq!(probe_pmu("uprobe"), None),
        }
    }

    #[test]
    fn syscall_prefix_of_this_arch() {
        let p = syscall_prefix();
        if cfg!(target_arch = "x86_64") {
            assert_eq!(p, Some("__x64_sys_"));
        } else if cfg!(target_arch = "x86") {
            assert_eq!(p, Some("__ia32_sys_"));
        } else if cfg!(target_arch = "aarch64") {
            assert_eq!(p, Some("__arm64_sys_"));
        }
    }
}
