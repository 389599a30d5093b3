//! A plan per program: its probe spec parsed once, and everything the load and attach
//! phases take from it.
//!
//! ```text
//! section name / --event PROG=SPEC ──parse (once)──► attach kind: tracepoint, probe, or skipped
//!                                                    program type (libbpf's table, else the kind)
//!                                  ──DWARF / calling convention──► one variant per site:
//!                                                    prologue (load) + site: target, fetch-args (attach)
//! ```
//!
//! [`crate::load::load_planned`] loads one program per [`Variant`]; [`crate::attach`] makes
//! one link per loaded program from its plan's [`Attach`] and the variant's [`Site`]. The
//! plan owns what it keeps (no borrow of the spec text), so it outlives the object's bytes.

use crate::error::{ConfigError, SpecProblem};
use std::path::PathBuf;

use sluice_core::object::{Object, Program};
use sluice_core::perf::abi::prog_type::PERF_EVENT;
use sluice_core::probe::{Place, ProbeKind, ProbeSpec, Section, Target};
use sluice_core::Insn;

use super::debuginfo::{spec_needs_debug_info, Site};
use super::events::EventSpecs;
use super::fetch::fetch_args;
use super::hook::HookPlan;
use super::spec::{convention_prologue, parse_error, program_spec, spec_sites};
use crate::error::Result;
use crate::load::LoadOptions;
use crate::tracefs::{self, ProbeTarget, UprobeSpec};
use sluice_core::probe::{attach_point, AttachKind};

/// One way program [`Plan::index`] is loaded: the prologue put before it and, when its
/// spec's arguments name variables, the DWARF site that prologue was built for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    /// Instructions before the program (empty: none).
    pub prologue: Vec<Insn>,
    /// The site (an inlined function has one per instance); `None` without debug info.
    pub site: Option<Site>,
}

/// Where a probe without a DWARF site goes, as written in its spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProbePlace {
    /// A kernel symbol and offset, or a raw file offset: nothing to look up.
    Resolved(ProbeTarget),
    /// A user binary's symbol: its file offset is looked up when the probe is made
    /// ([`UprobeSpec::resolve`]), the only place it is computed for such a spec.
    Symbol(UprobeSpec),
    /// The spec needs debug info (arguments naming variables, or a `:LINE` place): only the
    /// site a variant carries says where the probe goes.
    NeedsSite,
    /// `ksyscall/NAME`, `kretsyscall/NAME`: the arch's wrapper of syscall `NAME`
    /// (`__x64_sys_NAME`, ...), looked up in the running kernel when the probe is made.
    Syscall(String),
}

/// A kprobe, kretprobe, uprobe or uretprobe made through tracefs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbePlan {
    /// Entry or return, kernel or user.
    pub kind: tracefs::ProbeKind,
    /// The tracefs group (`sluice`, or the spec's `GROUP:`).
    pub group: String,
    /// Where it goes without a DWARF site.
    pub place: ProbePlace,
    /// The fetch-args of the arguments tracefs can fetch itself (without a site).
    pub fetch_args: String,
    /// Whether the spec has no argument list at all (`kprobe/FUNC`, `ksyscall/NAME`):
    /// only such a probe may go through the kprobe/uprobe PMUs.
    pub bare: bool,
}

/// How a program is attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attach {
    /// An existing tracepoint (`events/CATEGORY/NAME`).
    Tracepoint {
        /// Its category (the tracefs group).
        category: String,
        /// Its name.
        name: String,
    },
    /// A dynamic probe.
    Probe(ProbePlan),
    /// A sampling program (`perf_event`): a sampling event per CPU, the hardware cycles
    /// event or `cpu-clock` ([`crate::attach::open_sampling`]).
    Sample {
        /// Samples a second ([`LoadOptions::sample_freq`]).
        freq: u64,
    },
    /// A BPF link: a BTF hook (`tp_btf`, `fentry`, `fexit`, `fmod_ret`, `lsm`), a raw
    /// tracepoint, or a multi-probe.
    Hook(HookPlan),
    /// Not attached: the section is an opaque title; says why.
    Skip(String),
    /// The spec cannot be attached; says why.
    Invalid(SpecProblem),
}

/// Everything one program's spec decides, parsed once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    index: usize,
    program: String,
    spec: String,
    prog_type: Option<u32>,
    attach: Attach,
    variants: Vec<Variant>,
}

impl Plan {
    /// Plans program `index` (`p`) at its first spec ([`program_spec`]): see
    /// [`Plan::with_spec`].
    ///
    /// # Errors
    /// As [`Plan::with_spec`].
    pub fn new(p: &Program<'_>, index: usize, opts: &LoadOptions) -> Result<Plan> {
        Plan::with_spec(p, index, program_spec(p, index, opts), opts)
    }

    /// Plans program `index` (`p`) at `spec_text` (one of its [`LoadOptions::specs`], else
    /// its section name): the spec parsed once, the program type it implies, how it is
    /// attached, and its variants: the prologue given in [`LoadOptions::prologues`], else
    /// one per DWARF site of a spec whose arguments name variables (an inlined function has
    /// several), else the calling convention's.
    ///
    /// # Errors
    /// [`crate::Error::BadSpec`] when it does not parse (unless a prologue is given),
    /// [`crate::Error::NoSite`] when the debug info has no site for it,
    /// [`crate::Error::Prologue`] naming the program and spec around why a prologue cannot be
    /// built (arguments that cannot be fetched, more than four values, a debug-info failure),
    /// [`crate::Error::NoArchTables`] for an architecture sluice has no tables for.
    pub fn with_spec(
        p: &Program<'_>,
        index: usize,
        spec_text: &str,
        opts: &LoadOptions,
    ) -> Result<Plan> {
        let name = p.name.unwrap_or("?");
        let program = p.name.unwrap_or(p.section_name);
        let parsed = sluice_core::probe::parse(spec_text);
        let prog_type = sluice_core::probe::program_type_parsed(spec_text, || match &parsed {
            Ok(Section::Probe(s)) => Some(s.kind()),
            _ => None,
        });
        let attach = match &parsed {
            Ok(Section::Probe(spec)) => attach_of(spec),
            Ok(Section::Title(_)) if prog_type == Some(PERF_EVENT) => Attach::Sample {
                freq: opts
                    .sample_freq
                    .unwrap_or(crate::attach::DEFAULT_SAMPLE_FREQ),
            },
            Ok(Section::Title(t)) => match attach_point(t) {
                Some(Ok(point)) => attach_of_point(&point),
                Some(Err(e)) => Attach::Invalid(SpecProblem::AttachPoint(e)),
                None if sluice_core::probe::bare_multi(t).is_some() => Attach::Skip(format!(
                    "section '{t}' is attached by hand under libbpf; give it a target with \
                     --event {program}={t}/PATH:PATTERN"
                )),
                None => Attach::Skip(format!(
                    "section '{t}' names no probe; map it with --event {program}=SPEC"
                )),
            },
            Err(e) => Attach::Invalid(SpecProblem::Parse(*e)),
        };
        let given = opts.prologues.get(index).filter(|g| !g.is_empty());
        let variants = match (given, &parsed) {
            (Some(given), _) => vec![Variant {
                prologue: given.clone(),
                site: None,
            }],
            (None, Err(e)) => return Err(parse_error(name, spec_text, e)),
            (None, Ok(Section::Title(_))) => vec![Variant {
                prologue: Vec::new(),
                site: None,
            }],
            (None, Ok(Section::Probe(spec))) => variants(name, spec_text, spec, opts)?,
        };
        Ok(Plan {
            index,
            program: program.to_owned(),
            spec: spec_text.to_owned(),
            prog_type,
            attach,
            variants,
        })
    }

    /// Index in [`Object::programs`].
    #[must_use]
    pub fn index(&self) -> usize {
        self.index
    }

    /// The program's function name (its section name when the object has no symbol).
    #[must_use]
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The spec: one of the [`LoadOptions::specs`] overrides, else the section name.
    #[must_use]
    pub fn spec(&self) -> &str {
        &self.spec
    }

    /// The `BPF_PROG_TYPE_*` the spec implies (`None`: an opaque title).
    #[must_use]
    pub fn prog_type(&self) -> Option<u32> {
        self.prog_type
    }

    /// How the program is attached.
    #[must_use]
    pub fn attach(&self) -> &Attach {
        &self.attach
    }

    /// The ways it is loaded, one program each.
    #[must_use]
    pub fn variants(&self) -> &[Variant] {
        &self.variants
    }
}

/// The plans of the programs of `obj` to load, in the object's order: those
/// [`LoadOptions::programs`] names, else every program but those written `SEC("?...")`
/// (subprograms never); a program with several [`LoadOptions::specs`] has a plan per spec,
/// in their order (each loaded and attached on its own).
///
/// # Errors
/// [`ConfigError::UnknownProgram`] for a chosen name the object lacks; as [`Plan::new`],
/// for the first program that fails.
pub fn plans(obj: &Object<'_, '_>, opts: &LoadOptions) -> Result<Vec<Plan>> {
    let chosen = chosen_programs(obj, opts.programs.as_deref())?;
    obj.programs()
        .iter()
        .enumerate()
        .filter(|(i, _)| chosen.contains(i))
        .flat_map(|(index, p)| {
            let given = opts.specs.get(index).filter(|s| !s.is_empty());
            let specs: Vec<&str> = match given {
                Some(specs) => specs.iter().map(String::as_str).collect(),
                None => vec![p.section_name],
            };
            specs
                .into_iter()
                .map(move |spec| Plan::with_spec(p, index, spec, opts))
        })
        .collect()
}

/// Whether `p` answers to `name`: its function name, else its section name.
pub fn program_named(p: &Program<'_>, name: &str) -> bool {
    p.name == Some(name) || p.section_name == name
}

/// The indices (in [`Object::programs`]) of the programs to load: those `names` names
/// (each must name one), else every program not written `SEC("?...")`; never a
/// subprogram.
///
/// # Errors
/// [`ConfigError::UnknownProgram`], listing the object's programs.
pub fn chosen_programs(obj: &Object<'_, '_>, names: Option<&[String]>) -> Result<Vec<usize>> {
    let programs = || obj.programs().iter().filter(|p| !p.is_subprogram());
    let Some(names) = names else {
        return Ok(obj
            .programs()
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.is_subprogram() && p.autoload())
            .map(|(i, _)| i)
            .collect());
    };
    if let Some(missing) = names
        .iter()
        .find(|n| !programs().any(|p| program_named(p, n)))
    {
        return Err(crate::Error::Config(ConfigError::UnknownProgram {
            option: "--prog",
            name: missing.clone(),
            programs: programs().map(describe_program).collect(),
        }));
    }
    Ok(obj
        .programs()
        .iter()
        .enumerate()
        .filter(|(_, p)| !p.is_subprogram() && names.iter().any(|n| program_named(p, n)))
        .map(|(i, _)| i)
        .collect())
}

/// `NAME (SECTION)` of every program of `obj` (subprograms excluded), the section with a
/// `?` first for a program not loaded unless chosen: what an unknown `--prog` lists.
pub fn program_list(obj: &Object<'_, '_>) -> Vec<String> {
    obj.programs()
        .iter()
        .filter(|p| !p.is_subprogram())
        .map(describe_program)
        .collect()
}

/// `NAME (SECTION)`, `?` first for a program not loaded unless chosen.
fn describe_program(p: &Program<'_>) -> String {
    let optional = if p.autoload() { "" } else { "?" };
    match p.name {
        Some(name) => format!("{name} ({optional}{})", p.section_name),
        None => format!("{optional}{}", p.section_name),
    }
}

/// Fills [`LoadOptions::specs`] from `events` (probe specs by program name,
/// `--event PROG=SPEC`, any number per program), so the prologue and probe site are
/// computed from the spec that is attached.
pub fn set_specs(obj: &Object<'_, '_>, events: &EventSpecs, opts: &mut LoadOptions) {
    for (i, p) in obj.programs().iter().enumerate() {
        if p.is_subprogram() {
            continue;
        }
        for name in events.programs() {
            if !program_named(p, name) {
                continue;
            }
            if opts.specs.len() <= i {
                opts.specs.resize(i + 1, Vec::new());
            }
            if let Some(slot) = opts.specs.get_mut(i) {
                slot.extend(events.specs_of(name).map(str::to_owned));
            }
        }
    }
}

/// How an attach point is attached: `ksyscall`/`kretsyscall` as a kprobe on the syscall's
/// wrapper, every other kind through a BPF link.
fn attach_of_point(point: &sluice_core::probe::AttachPoint<'_>) -> Attach {
    let kind = match point.kind {
        AttachKind::Ksyscall => tracefs::ProbeKind::Kprobe,
        AttachKind::Kretsyscall => tracefs::ProbeKind::Kretprobe,
        _ => return Attach::Hook(HookPlan::new(point)),
    };
    Attach::Probe(ProbePlan {
        kind,
        group: sluice_core::probe::DEFAULT_GROUP.to_owned(),
        place: ProbePlace::Syscall(point.target.to_owned()),
        fetch_args: String::new(),
        bare: true,
    })
}

/// How `spec` is attached.
fn attach_of(spec: &ProbeSpec<'_>) -> Attach {
    let kind = match (spec.kind(), spec.target()) {
        (_, Target::Tracepoint { category, name }) => {
            return Attach::Tracepoint {
                category: category.to_owned(),
                name: name.to_owned(),
            }
        }
        (ProbeKind::Kprobe, _) => tracefs::ProbeKind::Kprobe,
        (ProbeKind::Kretprobe, _) => tracefs::ProbeKind::Kretprobe,
        (ProbeKind::Uprobe, _) => tracefs::ProbeKind::Uprobe,
        (ProbeKind::Uretprobe, _) => tracefs::ProbeKind::Uretprobe,
        (ProbeKind::Tracepoint, _) => return Attach::Invalid(SpecProblem::TracepointWithoutTarget),
    };
    let offset = match spec.place() {
        Place::Offset(off) => off,
        Place::Entry | Place::Return | Place::Line(_) => 0,
    };
    let place = match spec.target() {
        _ if spec_needs_debug_info(spec) => ProbePlace::NeedsSite,
        Target::Kernel { func } => ProbePlace::Resolved(ProbeTarget::Kernel {
            func: func.to_owned(),
            offset,
        }),
        Target::User { path, func } => ProbePlace::Symbol(UprobeSpec {
            path: path.into(),
            func: func.to_owned(),
            offset,
        }),
        Target::UserOffset { path, offset: at } => {
            let p = PathBuf::from(path);
            let func = p
                .file_name()
                .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
            ProbePlace::Resolved(ProbeTarget::User {
                path: p,
                offset: at.saturating_add(offset),
                func,
            })
        }
        Target::Tracepoint { .. } => ProbePlace::NeedsSite,
    };
    let fetch_args = match place {
        ProbePlace::NeedsSite => String::new(),
        _ => fetch_args(spec),
    };
    Attach::Probe(ProbePlan {
        kind,
        group: spec.group_or_default().to_owned(),
        place,
        fetch_args,
        bare: spec.args().is_empty(),
    })
}

/// The variants of `spec` (program `name`, written `spec_text`) without a given prologue.
fn variants(
    name: &str,
    spec_text: &str,
    spec: &ProbeSpec<'_>,
    opts: &LoadOptions,
) -> Result<Vec<Variant>> {
    if !spec_needs_debug_info(spec) {
        return Ok(vec![Variant {
            prologue: convention_prologue(name, spec_text, spec)?,
            site: None,
        }]);
    }
    let sites = spec_sites(name, spec_text, spec, opts)?;
    if sites.is_empty() {
        return Err(crate::Error::NoSite {
            program: name.to_owned(),
            spec: spec_text.to_owned(),
        });
    }
    if sites.len() > 1 {
        log::info!(
            "program '{name}' ({spec_text}): {} sites (inlined instances): one program each",
            sites.len()
        );
    }
    Ok(sites
        .into_iter()
        .map(|s| Variant {
            prologue: s.prologue.clone(),
            site: Some(s),
        })
        .collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn attach(text: &str) -> Attach {
        match sluice_core::probe::parse(text).unwrap() {
            Section::Probe(spec) => attach_of(&spec),
            Section::Title(t) => panic!("{t}"),
        }
    }

    fn probe(text: &str) -> ProbePlan {
        match attach(text) {
            Attach::Probe(p) => p,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn a_program_given_several_specs_has_a_plan_at_each() {
        let bytes = include_bytes!("../../../tests/bpf/dwarf_words.o");
        let mut storage = sluice_core::object::ObjectStorage::new();
        let obj = Object::open(bytes, &mut storage).unwrap();
        let mut events = EventSpecs::new();
        let at = |off: u64| format!("uprobe//bin/true:{off:#x}");
        events.insert("p_words".into(), at(0x1290));
        events.insert("p_words".into(), at(0x1270));
        let mut opts = LoadOptions::default();
        set_specs(&obj, &events, &mut opts);
        let plans = plans(&obj, &opts).unwrap();
        let places: Vec<(usize, &str, &Attach)> = plans
            .iter()
            .map(|p| (p.index(), p.spec(), p.attach()))
            .collect();
        let index = plans[0].index();
        let expect = |off: u64| {
            Attach::Probe(ProbePlan {
                kind: tracefs::ProbeKind::Uprobe,
                group: "sluice".into(),
                place: ProbePlace::Resolved(ProbeTarget::User {
                    path: "/bin/true".into(),
                    offset: off,
                    func: "true".into(),
                }),
                fetch_args: String::new(),
                bare: true,
            })
        };
        let (a, b) = (at(0x1290), at(0x1270));
        let (ea, eb) = (expect(0x1290), expect(0x1270));
        assert_eq!(
            places,
            [(index, a.as_str(), &ea), (index, b.as_str(), &eb)],
            "one plan per spec, in the order given"
        );
        assert!(plans.iter().all(|p| p.program() == "p_words"));
        // Without a spec given, the section name.
        let p = &obj.programs()[index];
        assert_eq!(
            program_spec(p, index, &LoadOptions::default()),
            "uprobe//sluice/dwarf_words:f(a, b, c, d)"
        );
        assert_eq!(program_spec(p, index, &opts), a, "the first spec given");
    }

    #[test]
    fn attach_kinds() {
        assert_eq!(
            attach("tracepoint/syscalls/sys_enter_openat"),
            Attach::Tracepoint {
                category: "syscalls".into(),
                name: "sys_enter_openat".into()
            }
        );
        let k = probe("kprobe/vfs_read+8(%di)");
        assert_eq!(k.kind, tracefs::ProbeKind::Kprobe);
        assert_eq!(k.group, "sluice");
        assert_eq!(
            k.place,
            ProbePlace::Resolved(ProbeTarget::Kernel {
                func: "vfs_read".into(),
                offset: 8
            })
        );
        assert_eq!(k.fetch_args, "arg1=%di");
        assert_eq!(
            probe("kretprobe/vfs_read").kind,
            tracefs::ProbeKind::Kretprobe
        );
        let u = probe("uprobe//bin/true:main+4");
        assert_eq!(
            u.place,
            ProbePlace::Symbol(UprobeSpec {
                path: "/bin/true".into(),
                func: "main".into(),
                offset: 4
            })
        );
        let raw = probe("uprobe//bin/true:0x1040");
        assert_eq!(
            raw.place,
            ProbePlace::Resolved(ProbeTarget::User {
                path: "/bin/true".into(),
                offset: 0x1040,
                func: "true".into()
            })
        );
        // Syscall probes go to the wrapper, found when the probe is made.
        let Attach::Probe(k) =
            attach_of_point(&attach_point("kretsyscall/openat").unwrap().unwrap())
        else {
            panic!()
        };
        assert_eq!(
            (k.kind, k.place),
            (
                tracefs::ProbeKind::Kretprobe,
                ProbePlace::Syscall("openat".into())
            )
        );
        assert!(matches!(
            attach_of_point(&attach_point("tp_btf/sched_switch").unwrap().unwrap()),
            Attach::Hook(HookPlan {
                kind: AttachKind::TpBtf,
                ..
            })
        ));
        // Variables and lines need the DWARF site a variant carries.
        let d = probe("uprobe//bin/true:main(argc)");
        assert_eq!(
            (d.place, d.fetch_args.as_str()),
            (ProbePlace::NeedsSite, "")
        );
        assert_eq!(
            probe("uprobe//bin/true:main:3").place,
            ProbePlace::NeedsSite
        );
    }
}
