//! `usdt/PATH:PROVIDER:NAME`: a uprobe PMU event per site of the probe (its file offset
//! from the binary's `.note.stapsdt`, its semaphore's as `ref_ctr_offset` so the kernel
//! counts it while attached), each with a `BPF_PERF_EVENT` link whose BPF cookie is the
//! site's spec id in the object's `__bpf_usdt_specs` map — what `usdt.bpf.h`'s
//! `bpf_usdt_arg()` reads, as libbpf fills it.
//!
//! Spec ids are per object (its programs share the map): a [`SpecIds`] hands them out,
//! one per distinct argument string of the probes attached.
//!
//! Without BPF cookies (kernels before 5.15, or
//! [`LoadOptions::without_bpf_cookie`](crate::load::LoadOptions::without_bpf_cookie)),
//! `usdt.bpf.h` looks the spec id up by the probe's address in [`IP_MAP`]
//! (`LINUX_HAS_BPF_COOKIE` is false), as libbpf fills it: the site's link-time address in
//! an `ET_EXEC` binary, its address in the process of `-p` in a PIE or library (found in
//! `/proc/PID/maps`: without a process, such a binary cannot be attached this way).

use std::ffi::CString;
use std::os::fd::AsFd;
use std::path::Path;

use sluice_core::arch::Arch;
use sluice_core::elf::Elf;
use sluice_core::probe::attach_types;
use sluice_core::usdt::{self, Spec};

use super::events::Error;
use super::hook::{pmu_event, PmuProbe};
use super::link_error::LinkError;
use crate::error::SpecProblem;
use crate::kernel::arch::running_kernel_arch;
use crate::kernel::hooks::probe_pmu;
use crate::load::{LoadedProgram, Map, UpdateMode};
use crate::probe::HookPlan;
use crate::sys::bpf as sys;
use crate::sys::mmap::Mmap;
use crate::tracefs::symbol_address;

/// The map of argument specs `usdt.bpf.h` declares.
pub const SPECS_MAP: &str = "__bpf_usdt_specs";
/// The map of spec ids by probe address `usdt.bpf.h` reads without BPF cookies.
pub const IP_MAP: &str = "__bpf_usdt_ip_to_spec_id";

/// One site of a USDT probe, as read from its binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsdtSite {
    /// Its address (after the prelink adjustment).
    pub address: u64,
    /// The uprobe's file offset.
    pub file_offset: u64,
    /// The semaphore's file offset, if it has one.
    pub semaphore_offset: Option<u64>,
    /// The semaphore's address (0: none).
    pub semaphore: u64,
    /// The argument string (`-4@%edi 8@%rsi`).
    pub args: String,
}

/// The spec ids of one object's `__bpf_usdt_specs`, handed out in order, and how a
/// program finds its own: the BPF cookie, or (`by_address`) [`IP_MAP`].
#[derive(Debug, Default)]
pub struct SpecIds {
    next: u32,
    given: Vec<(Vec<u8>, u32)>,
    by_address: bool,
}

impl SpecIds {
    /// Ids for an object loaded with `bpf_cookie`
    /// ([`LoadOptions::bpf_cookie`](crate::load::LoadOptions::bpf_cookie)): else they go
    /// into [`IP_MAP`] by address.
    #[must_use]
    pub fn new(bpf_cookie: bool) -> SpecIds {
        SpecIds {
            by_address: !bpf_cookie,
            ..SpecIds::default()
        }
    }
}

fn problem(binary: &Path, probe: &str, why: impl Into<String>) -> LinkError {
    LinkError::Spec(SpecProblem::Usdt {
        binary: binary.display().to_string(),
        probe: probe.to_owned(),
        why: why.into(),
    })
}

/// Every site of `provider:name` in the binary at `path`, and the machine it is for.
///
/// # Errors
/// [`LinkError::Spec`] naming the binary and probe: it cannot be read, is no ELF file,
/// has no notes or no such probe, or a note is malformed.
pub fn usdt_sites(path: &Path, provider: &str, name: &str) -> Result<Vec<UsdtSite>, LinkError> {
    let probe = format!("{provider}:{name}");
    let data = Mmap::open(path).map_err(|e| problem(path, &probe, e.to_string()))?;
    let elf = Elf::parse(data.bytes()).map_err(|e| problem(path, &probe, e.to_string()))?;
    let sites = usdt::sites(&elf, provider, name)
        .map_err(|e| problem(path, &probe, e.to_string()))?
        .map(|s| {
            s.map(|s| UsdtSite {
                address: s.address,
                file_offset: s.file_offset,
                semaphore_offset: s.semaphore_offset,
                semaphore: s.note.semaphore,
                args: s.note.args.to_owned(),
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| problem(path, &probe, e.to_string()))?;
    if sites.is_empty() {
        return Err(problem(path, &probe, "the binary has no such probe"));
    }
    Ok(sites)
}

/// Attaches `prog` to every site of the `usdt/` probe of `hook`, writing their argument
/// specs into `specs` (the object's [`SPECS_MAP`]) under ids from `ids` (and, without
/// cookies, the ids by address into `ips`, the object's [`IP_MAP`], for process `pid`).
///
/// # Errors
/// [`LinkError::Spec`] (bad input: no such probe, an argument spec that cannot be
/// fetched, no [`SPECS_MAP`] in the object, more specs than it holds; without cookies, no
/// [`IP_MAP`] or a PIE without `-p`); [`LinkError::Events`] when the kernel refuses. What
/// was made before is released.
pub fn attach_usdt(
    hook: &HookPlan,
    prog: &LoadedProgram,
    (specs, ips): (Option<&Map>, Option<&Map>),
    ids: &mut SpecIds,
    pid: Option<i32>,
) -> Result<Vec<PmuProbe>, LinkError> {
    let path = Path::new(hook.path.as_deref().unwrap_or(""));
    let (provider, name) = hook.target.split_once(':').unwrap_or((&hook.target, ""));
    let probe = hook.target.as_str();
    let bad = |why: String| problem(path, probe, why);
    let sites = usdt_sites(path, provider, name)?;
    let specs = specs.ok_or_else(|| {
        bad(format!(
            "the object has no {SPECS_MAP} map (build the program with usdt.bpf.h's BPF_USDT)"
        ))
    })?;
    let data = Mmap::open(path).map_err(|e| bad(e.to_string()))?;
    let elf = Elf::parse(data.bytes()).map_err(|e| bad(e.to_string()))?;
    let code = Arch::from_machine(elf.header().machine).ok_or_else(|| {
        bad(format!(
            "ELF machine {} is not supported",
            elf.header().machine
        ))
    })?;
    let kernel = running_kernel_arch().unwrap_or(code);
    let pmu = probe_pmu("uprobe").ok_or_else(|| {
        LinkError::Events(Error::Unsupported {
            program: prog.name().to_owned(),
            target: hook.section(),
            reason: "the kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe)".into(),
        })
    })?;
    if pmu.ref_ctr_shift.is_none() && sites.iter().any(|s| s.semaphore_offset.is_some()) {
        return Err(LinkError::Events(Error::Unsupported {
            program: prog.name().to_owned(),
            target: hook.section(),
            reason: "the probe has a semaphore and the uprobe PMU no ref_ctr_offset \
                     (Linux 4.20)"
                .into(),
        }));
    }
    let c_path = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| bad("a NUL in the path".into()))?;
    let mut made = Vec::with_capacity(sites.len());
    for site in &sites {
        let spec = Spec::parse(&site.args, code, kernel, site.address, 0, &|sym| {
            symbol_address(&elf, sym)
        })
        .map_err(|e| {
            let text = site
                .args
                .split_ascii_whitespace()
                .nth(e.index)
                .unwrap_or("");
            bad(format!(
                "site {:#x}: {e} ('{text}' of '{}')",
                site.address, site.args
            ))
        })?;
        let id = ids.id_of(&spec, specs, path, probe)?;
        let what = format!(
            "usdt {}:{probe} at {:#x} (offset {:#x}{})",
            path.display(),
            site.address,
            site.file_offset,
            site.semaphore_offset
                .map_or(String::new(), |s| format!(", semaphore at {s:#x}"))
        );
        let refused = |call, errno| {
            LinkError::Events(Error::Refused {
                program: prog.name().to_owned(),
                target: what.clone(),
                call,
                errno,
                reason: if call == "BPF_LINK_CREATE" {
                    "usdt.bpf.h reads the spec id from the BPF cookie, which needs \
                     BPF_PERF_EVENT links (Linux 5.15)"
                        .into()
                } else {
                    "the file, offset or semaphore cannot be probed".into()
                },
            })
        };
        let event = pmu_event(
            pmu,
            &c_path,
            site.file_offset,
            false,
            site.semaphore_offset.unwrap_or(0),
        )
        .map_err(|e| refused("perf_event_open", e))?;
        let link = if ids.by_address {
            let ip = process_address(&elf, path, site, pid).map_err(bad)?;
            let ips = ips.ok_or_else(|| {
                bad(format!(
                    "the object has no {IP_MAP} map, which a kernel without BPF cookies needs"
                ))
            })?;
            ips.update(&ip, &id, UpdateMode::Any)
                .map_err(|e| bad(format!("{IP_MAP} is not usdt.bpf.h's map: {e}")))?;
            match sys::link_create(prog.as_fd(), Some(event.as_fd()), attach_types::PERF_EVENT) {
                Ok(fd) => Some(fd),
                // No BPF_PERF_EVENT link before 5.15: the ioctl.
                Err(_) => {
                    crate::sys::perf_event::set_bpf(event.as_fd(), prog.as_fd())
                        .map_err(|e| refused("PERF_EVENT_IOC_SET_BPF", e))?;
                    None
                }
            }
        } else {
            let fd = sys::link_create_perf_cookie(
                prog.as_fd(),
                event.as_fd(),
                attach_types::PERF_EVENT,
                u64::from(id),
            )
            .map_err(|e| refused("BPF_LINK_CREATE", e))?;
            Some(fd)
        };
        log::info!("attached '{}' to {what}, spec id {id}", prog.name());
        made.push(PmuProbe { what, event, link });
    }
    Ok(made)
}

/// The address `site` has in the processes that run it, what `PT_REGS_IP` says at the probe
/// (libbpf's `abs_ip`): the link-time address in an `ET_EXEC` binary; in a PIE or a
/// library, where process `pid` mapped its file offset (the mapping of the same device
/// and inode in `/proc/PID/maps`).
fn process_address(
    elf: &Elf<'_>,
    path: &Path,
    site: &UsdtSite,
    pid: Option<i32>,
) -> Result<i64, String> {
    if elf.header().e_type != sluice_core::elf::ET_DYN {
        return Ok(site.address as i64);
    }
    let pid = pid.ok_or(
        "without BPF cookies, a PIE or shared library's probe needs the process (-p PID) \
         whose addresses it has",
    )?;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map_err(|e| format!("/proc/{pid}/maps: {e}"))?;
    use std::os::unix::fs::MetadataExt;
    let (major, minor) = (rustix::fs::major(meta.dev()), rustix::fs::minor(meta.dev()));
    let hex = |s: &str| u64::from_str_radix(s, 16).ok();
    maps.lines()
        .find_map(|l| {
            let mut f = l.split_ascii_whitespace();
            let (range, _, offset, dev, inode) =
                (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
            let (start, end) = range.split_once('-')?;
            let (start, end, offset) = (hex(start)?, hex(end)?, hex(offset)?);
            let (maj, min) = dev.split_once(':')?;
            let same = inode.parse::<u64>().ok()? == meta.ino()
                && hex(maj)? == u64::from(major)
                && hex(min)? == u64::from(minor);
            let inside = site.file_offset >= offset && site.file_offset - offset < end - start;
            (same && inside).then(|| (start + (site.file_offset - offset)) as i64)
        })
        .ok_or_else(|| {
            format!(
                "process {pid} has no mapping of {} at offset {:#x}",
                path.display(),
                site.file_offset
            )
        })
}

impl SpecIds {
    /// The id of `spec` in `map`: the one given before to the same bytes, else the next,
    /// written into the map.
    fn id_of(
        &mut self,
        spec: &Spec,
        map: &Map,
        path: &Path,
        probe: &str,
    ) -> Result<u32, LinkError> {
        if let Some((_, id)) = self.given.iter().find(|(b, _)| b.as_slice() == spec.bytes) {
            return Ok(*id);
        }
        let id = self.next;
        if id >= map.max_entries() {
            return Err(problem(
                path,
                probe,
                format!(
                    "more argument specs than {SPECS_MAP} holds ({}; BPF_USDT_MAX_SPEC_CNT)",
                    map.max_entries()
                ),
            ));
        }
        map.update_bytes(&id.to_ne_bytes(), &spec.bytes, UpdateMode::Any)
            .map_err(|e| {
                problem(
                    path,
                    probe,
                    format!("{SPECS_MAP} is not usdt.bpf.h's map: {e}"),
                )
            })?;
        self.next = id.saturating_add(1);
        self.given.push((spec.bytes.to_vec(), id));
        Ok(id)
    }
}
