//! Links without a tracefs event: BPF links to BTF hooks and raw tracepoints
//! ([`attach_hook`]), and kprobes/uprobes made through the kernel's kprobe and uprobe PMUs
//! ([`attach_pmu_probe`]), which leave nothing in tracefs (a killed run leaves nothing
//! behind: the probe goes with its perf event's fd).
//!
//! - `tp_btf/` and `raw_tp/`: `BPF_RAW_TRACEPOINT_OPEN` (with no name for `tp_btf`: the
//!   program's `attach_btf_id` says where).
//! - `fentry/`, `fexit/`, `fmod_ret/`, `lsm/`: `BPF_LINK_CREATE` with the program's expected
//!   attach type, else (`EINVAL` of a kernel before 5.7's links) `BPF_RAW_TRACEPOINT_OPEN`.
//! - `kprobe.multi/`, `kretprobe.multi/`: one `BPF_TRACE_KPROBE_MULTI` link on every
//!   function of the glob ([`super::multi`]); `uprobe.multi/` is [`super::uprobe_multi`]'s.
//! - A PMU probe: one perf event (every task, CPU 0: the probe fires on every CPU, and a
//!   second event would be a second probe running the program again), attached with
//!   `BPF_LINK_CREATE`/`BPF_PERF_EVENT` (Linux 5.15), else `PERF_EVENT_IOC_SET_BPF`. The
//!   event counts and never samples: only programs that always return 0 (which never let a
//!   probe write a sample) are attached this way, see [`super::Linker::attach`].

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::io::Errno;
use sluice_core::perf::abi::{PerfEventAttr, PERF_FLAG_FD_CLOEXEC};
use sluice_core::probe::{attach_types, AttachKind};

use super::events::Error;
use crate::kernel::errno::attach_reason;
use crate::kernel::hooks::{attach_facts, ProbePmu};
use crate::load::LoadedProgram;
use crate::probe::HookPlan;
use crate::sys::{bpf as sys, perf_event};
use crate::tracefs::{self, ProbeTarget};

/// Attaches `prog` to the hook of `hook` and returns the link's fd (named by
/// [`HookPlan::section`]). `tracefs` (when known) lets a refusal say whether the function
/// is traceable.
///
/// # Errors
/// [`Error::Refused`] with the reason in the kernel's terms; [`Error::Unsupported`] for
/// a `kprobe.multi/` this kernel cannot attach (`uprobe.multi/` is attached by
/// [`super::attach_uprobe_multi`]).
pub fn attach_hook(
    hook: &HookPlan,
    prog: &LoadedProgram,
    tracefs: Option<&Path>,
) -> Result<OwnedFd, Error> {
    let section = hook.section();
    let refused = |call, errno| {
        let func = match hook.kind {
            AttachKind::Lsm => format!("bpf_lsm_{}", hook.target),
            _ => hook.target.clone(),
        };
        let facts = attach_facts(tracefs, Some(&func));
        Error::Refused {
            program: prog.name().to_owned(),
            target: section.clone(),
            call,
            errno,
            reason: attach_reason(hook.kind, &hook.target, errno, &facts),
        }
    };
    let fd = match hook.kind {
        AttachKind::TpBtf => sys::raw_tracepoint_open(None, prog.as_fd())
            .map_err(|e| refused("BPF_RAW_TRACEPOINT_OPEN", e))?,
        AttachKind::RawTp | AttachKind::RawTpWritable => {
            let name = CString::new(hook.target.as_str()).map_err(|_| Error::Unsupported {
                program: prog.name().to_owned(),
                target: section.clone(),
                reason: "a NUL in the tracepoint name".into(),
            })?;
            sys::raw_tracepoint_open(Some(&name), prog.as_fd())
                .map_err(|e| refused("BPF_RAW_TRACEPOINT_OPEN", e))?
        }
        AttachKind::Fentry | AttachKind::Fexit | AttachKind::FmodRet | AttachKind::Lsm => {
            match sys::link_create(prog.as_fd(), None, hook.kind.expected_attach_type()) {
                Ok(fd) => fd,
                // Kernels before 5.7 know no BPF_LINK_CREATE for tracing programs.
                Err(e) if e == Errno::INVAL => sys::raw_tracepoint_open(None, prog.as_fd())
                    .map_err(|e2| refused("BPF_RAW_TRACEPOINT_OPEN", e2))?,
                Err(e) => return Err(refused("BPF_LINK_CREATE", e)),
            }
        }
        AttachKind::KprobeMulti | AttachKind::KretprobeMulti => {
            let ret = hook.kind == AttachKind::KretprobeMulti;
            super::multi::attach_kprobe_multi(hook, prog, tracefs, ret)?
        }
        AttachKind::UprobeMulti | AttachKind::UretprobeMulti => {
            return Err(Error::Unsupported {
                program: prog.name().to_owned(),
                target: section,
                reason: "a uprobe.multi program is attached by attach_uprobe_multi".into(),
            })
        }
        AttachKind::Usdt => {
            return Err(Error::Unsupported {
                program: prog.name().to_owned(),
                target: section,
                reason: "a usdt probe is attached per site (Linker::attach_usdt)".into(),
            })
        }
        AttachKind::Ksyscall | AttachKind::Kretsyscall => {
            return Err(Error::Unsupported {
                program: prog.name().to_owned(),
                target: section,
                reason: "a syscall probe is a kprobe, not a BPF link".into(),
            })
        }
    };
    log::info!("attached '{}' to {section}", prog.name());
    Ok(fd)
}

/// A PMU probe with its program: what it is (`kprobe vfs_read+0`), its perf event, and the
/// BPF link holding the program on it (`None`: attached with `SET_BPF`).
#[derive(Debug)]
pub struct PmuProbe {
    /// What it probes, for messages and the link's name.
    pub what: String,
    /// The perf event (the probe lives as long as it).
    pub event: OwnedFd,
    /// The `BPF_PERF_EVENT` link.
    pub link: Option<OwnedFd>,
}

/// Attaches `prog` to a kprobe or uprobe at `target` made through `pmu` (see the module
/// docs): no tracefs entry.
///
/// # Errors
/// [`Error::Refused`] for the perf event or the attach.
pub fn attach_pmu_probe(
    kind: tracefs::ProbeKind,
    target: &ProbeTarget,
    pmu: ProbePmu,
    prog: &LoadedProgram,
) -> Result<PmuProbe, Error> {
    let ret = matches!(
        kind,
        tracefs::ProbeKind::Kretprobe | tracefs::ProbeKind::Uretprobe
    );
    let (what, name, offset) = match target {
        ProbeTarget::Kernel { func, offset } => (
            format!("{} {func}+{offset}", kind_name(kind)),
            func.clone(),
            *offset,
        ),
        ProbeTarget::User { path, offset, func } => (
            format!(
                "{} {}:{func} (offset {offset:#x})",
                kind_name(kind),
                path.display()
            ),
            path.display().to_string(),
            *offset,
        ),
    };
    let refused = |call, errno| Error::Refused {
        program: prog.name().to_owned(),
        target: what.clone(),
        call,
        errno,
        reason: pmu_reason(kind, errno),
    };
    let name = CString::new(name).map_err(|_| Error::Unsupported {
        program: prog.name().to_owned(),
        target: what.clone(),
        reason: "a NUL in the name".into(),
    })?;
    let event = pmu_event(pmu, &name, offset, ret, 0).map_err(|e| refused("perf_event_open", e))?;
    let link = match sys::link_create(prog.as_fd(), Some(event.as_fd()), attach_types::PERF_EVENT) {
        Ok(fd) => Some(fd),
        // No BPF_PERF_EVENT link before 5.15: the ioctl.
        Err(e) if e == Errno::INVAL || e == Errno::OPNOTSUPP => {
            perf_event::set_bpf(event.as_fd(), prog.as_fd())
                .map_err(|e| refused("PERF_EVENT_IOC_SET_BPF", e))?;
            None
        }
        Err(e) => return Err(refused("BPF_LINK_CREATE", e)),
    };
    log::info!(
        "attached '{}' to {what} (PMU, no tracefs event)",
        prog.name()
    );
    Ok(PmuProbe { what, event, link })
}

/// Opens a kprobe/uprobe PMU event at `name` (a function, or a binary's path) plus
/// `offset`: every task, CPU 0, counting, enabled. `config` also carries `ref_ctr` (a USDT
/// semaphore's file offset, 0: none) at the PMU's `ref_ctr_offset` bits.
pub(super) fn pmu_event(
    pmu: ProbePmu,
    name: &std::ffi::CStr,
    offset: u64,
    ret: bool,
    ref_ctr: u64,
) -> Result<OwnedFd, Errno> {
    let mut attr = PerfEventAttr::new(pmu.type_, 0);
    if ret {
        attr.config |= 1u64 << pmu.retprobe_bit.min(63);
    }
    if let Some(shift) = pmu.ref_ctr_shift {
        attr.config |= ref_ctr.checked_shl(shift).unwrap_or(0);
    }
    attr.config1 = name.as_ptr() as usize as u64;
    attr.config2 = offset;
    // Counting, no samples; open enabled: the program runs from the attach on. `name`
    // outlives the call, where the kernel copies it.
    perf_event::perf_event_open(&mut attr, -1, 0, None, PERF_FLAG_FD_CLOEXEC)
}

fn kind_name(kind: tracefs::ProbeKind) -> &'static str {
    match kind {
        tracefs::ProbeKind::Kprobe => "kprobe",
        tracefs::ProbeKind::Kretprobe => "kretprobe",
        tracefs::ProbeKind::Uprobe => "uprobe",
        tracefs::ProbeKind::Uretprobe => "uretprobe",
    }
}

/// Why a PMU probe was refused.
fn pmu_reason(kind: tracefs::ProbeKind, errno: Errno) -> String {
    let user = matches!(
        kind,
        tracefs::ProbeKind::Uprobe | tracefs::ProbeKind::Uretprobe
    );
    if errno == Errno::NOENT || errno == Errno::INVAL {
        return if user {
            "the file or offset cannot be probed".into()
        } else {
            "no such function, or it cannot be probed (not in kallsyms, blacklisted, or \
             inside another function)"
                .into()
        };
    }
    let facts = attach_facts(None, None);
    if (errno == Errno::PERM || errno == Errno::ACCESS) && !facts.missing_caps.is_empty() {
        return format!(
            "permission denied: this process lacks {}",
            facts.missing_caps.join(", ")
        );
    }
    "the kernel refused".into()
}

/// Whether `prog` may be attached through a PMU probe: it returns 0 on every path, so its
/// probe would never write a sample anyway.
#[must_use]
pub fn program_only(prog: &LoadedProgram) -> bool {
    let mut scratch = vec![0u8; prog.insns().len()];
    sluice_core::insn::returns::always_returns_zero(prog.insns(), &mut scratch).unwrap_or(false)
}
