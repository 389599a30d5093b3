//! A [`Link`]: everything one attached program needs, released by one `Drop` in the order
//! the kernel requires (see the [module docs](super)).
//!
//! [`Linker::attach`] makes one from a program's [`Plan`]: the tracefs probe (from the
//! variant's DWARF site, else from the spec), the event's id and format, one perf event per
//! CPU, and `PERF_EVENT_IOC_SET_BPF`. A failure at any step releases what the steps before
//! made. [`Linker::output`] wraps the `PERF_COUNT_SW_BPF_OUTPUT` events of a perf event
//! array the same way: a link without a program or probe.

use crate::error::SpecProblem;
use std::os::fd::{AsFd, OwnedFd};

use super::events::{open_bpf_output, open_tracepoint, EventOptions, PerCpuEvents, Scope};
use super::hook::{attach_hook, attach_pmu_probe, program_only, PmuProbe};
pub use super::link_error::LinkError;
use super::sampling::open_sampling;
use super::uprobe_multi::attach_uprobe_multi;
use super::usdt::{attach_usdt, SpecIds};
use crate::kernel::hooks::{probe_pmu, syscall_function};
use crate::load::{LoadedProgram, Map};
use crate::probe::{unique_arg_names, Attach, Plan, ProbePlace, ProbePlan};
use crate::ring::RingConfig;
use crate::tracefs::{self, EventFormat, PrintkInstance, ProbeGuard, ProbeRequest, Tracefs};
use sluice_core::probe::AttachKind;

/// The tracepoint of `bpf_trace_printk` and `bpf_trace_vprintk` (`GROUP:EVENT`): one line
/// per call, system-wide, in the context of the task the program ran for.
pub const PRINTK_EVENT: &str = "bpf_trace:bpf_trace_printk";

/// One attached program (or one perf event array's output events): its per-CPU perf
/// events, its BPF link, its tracefs probe.
///
/// Dropping it (or [`Link::close`]) disables the events, closes them and the BPF link, then
/// removes the probe: a probe with an open event cannot be removed (`EBUSY`), and a
/// program leaves its tracepoint only when the event that attached it is freed.
#[derive(Debug)]
pub struct Link {
    /// `GROUP:EVENT`, or `bpf-output:MAP`.
    name: String,
    /// The program attached; `None` for output events.
    program: Option<String>,
    /// `None` only once released.
    events: Option<PerCpuEvents>,
    /// A BPF link (`BPF_LINK_CREATE`, `BPF_RAW_TRACEPOINT_OPEN`: tp_btf, fentry, raw_tp,
    /// a PMU probe's `BPF_PERF_EVENT`).
    bpf_link: Option<OwnedFd>,
    /// The perf event of a kprobe/uprobe PMU probe (no ring, no tracefs entry).
    pmu_event: Option<OwnedFd>,
    /// The tracefs probe made for it; `None` for tracepoints and output events.
    probe: Option<ProbeGuard>,
    /// The uprobe PMU events and links of a `usdt/` program, one per site.
    sites: Vec<PmuProbe>,
    /// The ftrace instance of [`Linker::printk_instance`].
    instance: Option<PrintkInstance>,
}

impl Link {
    /// A program attached through a BPF link alone (`tp_btf`, `fentry`, `raw_tp` ...),
    /// named `name` (its section).
    fn hook(name: String, program: String, link: OwnedFd) -> Link {
        Link {
            name,
            program: Some(program),
            events: None,
            bpf_link: Some(link),
            pmu_event: None,
            probe: None,
            sites: Vec::new(),
            instance: None,
        }
    }

    /// A program attached to a PMU probe's perf event, through `link` or (no link) the
    /// event's `SET_BPF`.
    pub(super) fn pmu(
        name: String,
        program: String,
        event: OwnedFd,
        link: Option<OwnedFd>,
    ) -> Link {
        Link {
            name,
            program: Some(program),
            events: None,
            bpf_link: link,
            pmu_event: Some(event),
            probe: None,
            sites: Vec::new(),
            instance: None,
        }
    }

    /// A `usdt/` program attached to each of its sites, named `name` (its section).
    fn usdt(name: String, program: String, sites: Vec<PmuProbe>) -> Link {
        Link {
            name,
            program: Some(program),
            events: None,
            bpf_link: None,
            pmu_event: None,
            probe: None,
            sites,
            instance: None,
        }
    }

    /// What each site of a `usdt/` program is attached to (empty for other programs).
    pub fn sites(&self) -> impl Iterator<Item = &str> {
        self.sites.iter().map(|s| s.what.as_str())
    }

    /// Whether the program rides a BPF link or a PMU probe, without sample events.
    #[must_use]
    pub fn is_program_only(&self) -> bool {
        self.events.is_none() && self.program.is_some()
    }

    /// `GROUP:EVENT` for trace events, `bpf-output:MAP` for output events.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The program attached (`None`: the output events of a perf event array).
    #[must_use]
    pub fn program(&self) -> Option<&str> {
        self.program.as_deref()
    }

    /// The per-CPU events (`None` only while the link is being released).
    #[must_use]
    pub fn events(&self) -> Option<&PerCpuEvents> {
        self.events.as_ref()
    }

    /// The tracefs probe made for it, as `group/event`.
    #[must_use]
    pub fn probe_name(&self) -> Option<String> {
        self.probe
            .as_ref()
            .map(|p| format!("{}/{}", p.group(), p.event()))
    }

    /// Starts every event.
    ///
    /// # Errors
    /// As [`PerCpuEvents::enable`].
    pub fn enable(&self) -> Result<(), super::Error> {
        self.events.as_ref().map_or(Ok(()), PerCpuEvents::enable)
    }

    /// Stops every event (the rings stay readable).
    pub fn disable(&self) {
        if let Some(e) = &self.events {
            e.disable();
        }
        if let Some(i) = &self.instance {
            i.disable();
        }
    }

    /// The ftrace instance of [`Linker::printk_instance`], if this is it.
    pub(crate) fn instance_mut(&mut self) -> Option<&mut PrintkInstance> {
        self.instance.as_mut()
    }

    /// Releases the link now, as dropping it does, and says how its probe's removal went:
    /// `None` without a probe, else its name and the outcome.
    pub fn close(mut self) -> Option<(String, Result<(), tracefs::Error>)> {
        let name = self.probe_name();
        let removed = self.release();
        name.zip(removed)
    }

    /// Disables and closes the events, closes the BPF link, then removes the probe.
    fn release(&mut self) -> Option<Result<(), tracefs::Error>> {
        // `PerCpuEvents`' own drop disables every event before it closes any.
        drop(self.events.take());
        drop(self.instance.take());
        drop(self.bpf_link.take());
        drop(self.pmu_event.take());
        for site in self.sites.drain(..) {
            drop(site.link);
            drop(site.event);
        }
        self.probe.take().map(ProbeGuard::remove)
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let name = self.probe_name();
        if let (Some(name), Some(Err(e))) = (name, self.release()) {
            log::warn!("leaving probe {name} behind: {e}");
        }
    }
}

/// What every link of a session is made with.
#[derive(Clone, Copy, Debug)]
pub struct Linker<'a> {
    /// Where probes are made and events described.
    pub tracefs: &'a Tracefs,
    /// The CPUs to open events on.
    pub cpus: &'a [u32],
    /// Whose events.
    pub scope: Scope,
    /// Ring size and wake-up policy of every event.
    pub ring: RingConfig,
    /// Make probes whose program always returns 0 (so never lets the probe write a sample)
    /// and that fetch nothing through the kprobe/uprobe PMUs where the kernel has them:
    /// no tracefs entry. `false` keeps every probe in tracefs (a perf.data file describes
    /// each event by its tracefs format).
    pub pmu: bool,
}

impl Linker<'_> {
    /// Attaches `usdt/` program `prog` (planned by `plan`) to every site of its probe,
    /// its argument specs written into `maps` (the object's `__bpf_usdt_specs` and, without
    /// BPF cookies, `__bpf_usdt_ip_to_spec_id`) under ids from `ids` (one per object). Any
    /// other plan goes to [`Linker::attach`].
    ///
    /// # Errors
    /// As [`attach_usdt`].
    pub fn attach_usdt(
        &self,
        plan: &Plan,
        prog: &LoadedProgram,
        maps: (Option<&Map>, Option<&Map>),
        ids: &mut SpecIds,
    ) -> Result<(Link, Option<EventFormat>), LinkError> {
        match plan.attach() {
            Attach::Hook(h) if h.kind == AttachKind::Usdt => {
                let pid = match self.scope {
                    Scope::Process { pid } => Some(pid),
                    Scope::System | Scope::Task { .. } => None,
                };
                let sites = attach_usdt(h, prog, maps, ids, pid)?;
                Ok((Link::usdt(h.section(), prog.name().to_owned(), sites), None))
            }
            _ => self.attach(plan, prog),
        }
    }

    /// Attaches `prog`, loaded for `plan` (with its variant's site, if any): makes the
    /// probe, opens the event on every CPU and attaches the program. Returns the link and
    /// the event's format (the layout of its samples' RAW data).
    ///
    /// # Errors
    /// [`LinkError::Spec`] when the plan is not attachable; [`LinkError::Tracefs`],
    /// [`LinkError::Events`]. What was made before the failure is released.
    pub fn attach(
        &self,
        plan: &Plan,
        prog: &LoadedProgram,
    ) -> Result<(Link, Option<EventFormat>), LinkError> {
        let (probe, group, event) = match plan.attach() {
            Attach::Sample { freq } => return self.attach_sampling(*freq, prog),
            Attach::Skip(_) => return Err(LinkError::Spec(SpecProblem::Title)),
            Attach::Invalid(problem) => return Err(LinkError::Spec(problem.clone())),
            Attach::Hook(h) if h.kind == AttachKind::Usdt => {
                return Err(LinkError::Spec(SpecProblem::Usdt {
                    binary: h.path.clone().unwrap_or_default(),
                    probe: h.target.clone(),
                    why: "attached with its object's maps (Linker::attach_usdt)".into(),
                }))
            }
            Attach::Hook(h)
                if matches!(h.kind, AttachKind::UprobeMulti | AttachKind::UretprobeMulti) =>
            {
                let fd = attach_uprobe_multi(h, prog, self.scope)?;
                return Ok((Link::hook(h.section(), prog.name().to_owned(), fd), None));
            }
            Attach::Hook(h) => {
                let fd =
                    attach_hook(h, prog, Some(self.tracefs.root())).map_err(LinkError::Events)?;
                return Ok((Link::hook(h.section(), prog.name().to_owned(), fd), None));
            }
            Attach::Tracepoint { category, name } => (None, category.clone(), name.clone()),
            Attach::Probe(p) => {
                if let Some(link) = self.pmu_probe(plan, p, prog)? {
                    return Ok((link, None));
                }
                let req = match (prog.site(), &p.place) {
                    // The loader built this program's prologue for one DWARF site (`FUNC`
                    // alone is after the function's prologue, as perf places it; an
                    // inlined function has a program per instance): the probe must sit
                    // exactly there, with the kernel's own fetch of the same values
                    // alongside.
                    (Some(site), _) => ProbeRequest {
                        kind: p.kind,
                        target: site.target.clone(),
                        args: unique_arg_names(&site.fetch_args).join(" "),
                    },
                    (None, ProbePlace::NeedsSite) => {
                        return Err(LinkError::Spec(SpecProblem::NoSite))
                    }
                    (None, ProbePlace::Resolved(target)) => ProbeRequest {
                        kind: p.kind,
                        target: target.clone(),
                        args: p.fetch_args.clone(),
                    },
                    (None, ProbePlace::Symbol(at)) => ProbeRequest {
                        kind: p.kind,
                        target: at.resolve().map_err(LinkError::Tracefs)?,
                        args: p.fetch_args.clone(),
                    },
                    (None, ProbePlace::Syscall(name)) => ProbeRequest {
                        kind: p.kind,
                        target: syscall_target(plan, prog, name)?,
                        args: p.fetch_args.clone(),
                    },
                };
                let guard = self
                    .tracefs
                    .add_probe_in(&p.group, &req)
                    .map_err(LinkError::Tracefs)?;
                let (group, event) = (guard.group().to_owned(), guard.event().to_owned());
                log::info!("created probe {group}/{event} for '{}'", plan.spec());
                (Some(guard), group, event)
            }
        };
        let id = self
            .tracefs
            .event_id(&group, &event)
            .map_err(LinkError::Tracefs)?;
        let format = self
            .tracefs
            .event_format(&group, &event)
            .map_err(LinkError::Tracefs)?;
        let name = format!("{group}:{event}");
        let opts = EventOptions {
            scope: self.scope,
            ring: self.ring,
            sample_ip: matches!(plan.attach(), Attach::Probe(_)),
        };
        let events = open_tracepoint(&name, id, self.cpus, &opts).map_err(LinkError::Events)?;
        // The link first, so that a failure to attach releases the events, then the probe.
        let link = Link {
            name,
            program: Some(prog.name().to_owned()),
            events: Some(events),
            bpf_link: None,
            pmu_event: None,
            probe,
            sites: Vec::new(),
            instance: None,
        };
        if let Some(events) = &link.events {
            events
                .set_bpf(prog.name(), prog.as_fd())
                .map_err(LinkError::Events)?;
        }
        Ok((link, Some(format)))
    }

    /// The PMU probe of `p` for `prog`, when it qualifies (see [`Linker::pmu`]): written
    /// in libbpf's form (not the perf form, whose events the seeds' users expect in
    /// tracefs), no argument list (so no fetch-args beside it), no DWARF site, a program that always returns 0, and a
    /// kernel with the PMU. `None`: make it in tracefs.
    fn pmu_probe(
        &self,
        plan: &Plan,
        p: &ProbePlan,
        prog: &LoadedProgram,
    ) -> Result<Option<Link>, LinkError> {
        let libbpf_form = ["kprobe/", "kretprobe/", "uprobe/", "uretprobe/"]
            .iter()
            .any(|f| plan.spec().starts_with(f))
            || matches!(p.place, ProbePlace::Syscall(_));
        if !self.pmu || !libbpf_form || !p.bare || prog.site().is_some() {
            return Ok(None);
        }
        let user = matches!(
            p.kind,
            tracefs::ProbeKind::Uprobe | tracefs::ProbeKind::Uretprobe
        );
        let Some(pmu) = probe_pmu(if user { "uprobe" } else { "kprobe" }) else {
            return Ok(None);
        };
        if !program_only(prog) {
            log::debug!(
                "'{}' may return non-zero: its probe stays in tracefs for its samples",
                prog.name()
            );
            return Ok(None);
        }
        let target = match &p.place {
            ProbePlace::Resolved(t) => t.clone(),
            ProbePlace::Symbol(at) => at.resolve().map_err(LinkError::Tracefs)?,
            ProbePlace::Syscall(name) => syscall_target(plan, prog, name)?,
            ProbePlace::NeedsSite => return Ok(None),
        };
        let probe = attach_pmu_probe(p.kind, &target, pmu, prog).map_err(LinkError::Events)?;
        Ok(Some(Link::pmu(
            probe.what,
            prog.name().to_owned(),
            probe.event,
            probe.link,
        )))
    }

    /// A `perf_event` program on a sampling event per CPU ([`open_sampling`]): the link is
    /// named after the event (`cycles`, `cpu-clock`), its format has no fields (the
    /// samples carry no RAW data).
    fn attach_sampling(
        &self,
        freq: u64,
        prog: &LoadedProgram,
    ) -> Result<(Link, Option<EventFormat>), LinkError> {
        let (events, name) =
            open_sampling(freq, self.scope, self.cpus, &self.ring).map_err(LinkError::Events)?;
        log::info!("sampling {name} at {freq} Hz for '{}'", prog.name());
        let link = Link {
            name: name.to_owned(),
            program: Some(prog.name().to_owned()),
            events: Some(events),
            bpf_link: None,
            pmu_event: None,
            probe: None,
            sites: Vec::new(),
            instance: None,
        };
        if let Some(events) = &link.events {
            events
                .set_bpf(prog.name(), prog.as_fd())
                .map_err(LinkError::Events)?;
        }
        let format = EventFormat {
            name: name.to_owned(),
            ..EventFormat::default()
        };
        Ok((link, Some(format)))
    }

    /// The [`PRINTK_EVENT`] tracepoint, opened for the linker's scope as a sampled event
    /// without a program: what loaded programs print with `bpf_trace_printk` comes as its
    /// samples, merged in time with the others. Returns the link and the event's format
    /// (its string field as this kernel names it).
    ///
    /// # Errors
    /// [`LinkError::Tracefs`] when the event is not there; [`LinkError::Events`].
    pub fn printk(&self) -> Result<(Link, EventFormat), LinkError> {
        let (group, event) = PRINTK_EVENT.split_once(':').unwrap_or((PRINTK_EVENT, ""));
        let id = self
            .tracefs
            .event_id(group, event)
            .map_err(LinkError::Tracefs)?;
        let format = self
            .tracefs
            .event_format(group, event)
            .map_err(LinkError::Tracefs)?;
        let opts = EventOptions {
            scope: self.scope,
            ring: self.ring,
            sample_ip: false,
        };
        let events =
            open_tracepoint(PRINTK_EVENT, id, self.cpus, &opts).map_err(LinkError::Events)?;
        let link = Link {
            name: PRINTK_EVENT.to_owned(),
            program: None,
            events: Some(events),
            bpf_link: None,
            pmu_event: None,
            probe: None,
            sites: Vec::new(),
            instance: None,
        };
        Ok((link, format))
    }

    /// What loaded programs print with `bpf_trace_printk`, through a private ftrace
    /// instance ([`PrintkInstance`]) for the linker's scope and CPUs: for programs on perf
    /// tracepoints, whose [`PRINTK_EVENT`] perf samples the kernel drops. Returns the
    /// link and the event's format (an instance's record is a perf sample's RAW data).
    ///
    /// # Errors
    /// [`LinkError::Tracefs`] when the event is not there or the instance cannot be made.
    pub fn printk_instance(&self) -> Result<(Link, EventFormat), LinkError> {
        let (group, event) = PRINTK_EVENT.split_once(':').unwrap_or((PRINTK_EVENT, ""));
        let format = self
            .tracefs
            .event_format(group, event)
            .map_err(LinkError::Tracefs)?;
        let pids: Vec<u32> = match self.scope {
            Scope::System => Vec::new(),
            Scope::Task { pid, .. } => vec![pid.unsigned_abs()],
            Scope::Process { pid } => super::events::threads_of(pid)
                .unwrap_or_else(|_| vec![pid])
                .into_iter()
                .map(i32::unsigned_abs)
                .collect(),
        };
        let instance =
            PrintkInstance::create(self.tracefs, &pids, self.cpus).map_err(LinkError::Tracefs)?;
        let link = Link {
            name: PRINTK_EVENT.to_owned(),
            program: None,
            events: None,
            bpf_link: None,
            pmu_event: None,
            probe: None,
            sites: Vec::new(),
            instance: Some(instance),
        };
        Ok((link, format))
    }

    /// The output events of perf event array `map` ([`open_bpf_output`]), as a link
    /// without a program.
    ///
    /// # Errors
    /// As [`open_bpf_output`].
    pub fn output(&self, map: &Map) -> Result<Link, super::Error> {
        Ok(Link {
            name: format!("bpf-output:{}", map.name()),
            program: None,
            events: Some(open_bpf_output(map, self.cpus, &self.ring)?),
            bpf_link: None,
            pmu_event: None,
            probe: None,
            sites: Vec::new(),
            instance: None,
        })
    }
}

/// The kernel function of syscall `name` (`ksyscall/NAME`) for `prog`.
fn syscall_target(
    plan: &Plan,
    prog: &LoadedProgram,
    name: &str,
) -> Result<tracefs::ProbeTarget, LinkError> {
    let func = syscall_function(name).map_err(|e| {
        LinkError::Events(super::Error::Unsupported {
            program: prog.name().to_owned(),
            target: plan.spec().to_owned(),
            reason: format!("finding the syscall's kernel function: {e}"),
        })
    })?;
    Ok(tracefs::ProbeTarget::Kernel { func, offset: 0 })
}
