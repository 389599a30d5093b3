//! The load phase: an opened [`Object`] in, maps and programs in the kernel out.
//!
//! The order is the seed's (create maps, relocate, load programs), with what kernels since
//! then added: the program type from the section name, the verifier log retried at the
//! size the kernel reports (`log_true_size`, Linux 6.4), names for maps and programs, and
//! errors that say which capability or kernel feature is missing. The object is never
//! re-parsed: loading again after [`LoadedObject::unload`] reuses the same [`Object`].

use super::btf::{self, ExtInfo};
use super::kconfig::kconfig_value;
use super::map::{create_maps, init_data_maps, Map, MapBtf};
use super::options::LoadOptions;
use super::program::{
    self, prog_info, AttachLoad, LoadLog, ProgInfo, ProgramLoad, DEFAULT_LOG_SIZE,
};
use crate::error::{Error, Result};
use crate::kernel::btf::{find_attach_types, AttachBtf, BTF_DIR};
use crate::kernel::config::read_kernel_config;
use crate::kernel::features::Features;
use crate::kernel::version::running_kernel_version;
use crate::probe::debuginfo::Site;
use crate::probe::{plans, Attach, Plan};
use crate::sys::bpf::ProgBtf;
use sluice_core::btf::{Btf, BtfExt, Candidate, CandidateIndex, CoreResolver};
use sluice_core::object::{KconfigExtern, LinkedPart, MapKind, Object, Program};
use sluice_core::Insn;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

/// A program in the kernel; its fd closes on drop.
#[derive(Debug)]
pub struct LoadedProgram {
    index: usize,
    name: String,
    section_name: String,
    spec: String,
    prog_type: u32,
    insns: Vec<Insn>,
    ext: ExtInfo,
    site: Option<Site>,
    /// `expected_attach_type`, `attach_btf_id`, flags it was loaded with.
    attach: (u32, u32, u32),
    /// The module BTF its `attach_btf_id` is in.
    attach_btf_obj: Option<OwnedFd>,
    fd: OwnedFd,
}

impl LoadedProgram {
    /// The DWARF site its prologue was built for, when its spec's arguments name variables:
    /// the probe for this copy of the program goes to [`Site::target`] with
    /// [`Site::fetch_args`]. A spec with several sites (inlined instances) gives one
    /// [`LoadedProgram`] per site, in the order of its plan's [`crate::probe::Plan::variants`].
    #[must_use]
    pub fn site(&self) -> Option<&Site> {
        self.site.as_ref()
    }
    /// Index in [`Object::programs`].
    #[must_use]
    pub fn index(&self) -> usize {
        self.index
    }
    /// Function name (section name when the object has no symbol for it).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Section name (the probe spec).
    #[must_use]
    pub fn section_name(&self) -> &str {
        &self.section_name
    }
    /// The probe spec it was loaded for: its [`LoadOptions::specs`] override, else the
    /// section name.
    #[must_use]
    pub fn spec(&self) -> &str {
        &self.spec
    }
    /// `BPF_PROG_TYPE_*` it was loaded as.
    #[must_use]
    pub fn prog_type(&self) -> u32 {
        self.prog_type
    }
    /// The instructions handed to the kernel: prologue, relocated program and the
    /// functions it calls.
    #[must_use]
    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }
    /// The `func_info` / `line_info` records it was loaded with (empty without BTF).
    #[must_use]
    pub fn ext_info(&self) -> &ExtInfo {
        &self.ext
    }
    /// What the kernel says about it.
    ///
    /// # Errors
    /// As [`prog_info`].
    pub fn info(&self) -> Result<ProgInfo> {
        prog_info(self.fd.as_fd())
    }
}

impl AsFd for LoadedProgram {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// One line of `sluice inspect --load`: a loaded program and what the kernel says of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramReport {
    /// Function name.
    pub name: String,
    /// Section name.
    pub section_name: String,
    /// Kernel's view: id, tag, instruction count after the verifier.
    pub info: ProgInfo,
}

/// Every map and program of an object, in the kernel. Dropping it (or [`unload`](Self::unload))
/// closes every fd, which frees them unless something else holds a reference (an attached
/// perf event keeps its program).
#[derive(Debug)]
pub struct LoadedObject {
    maps: Vec<Map>,
    programs: Vec<LoadedProgram>,
    license: String,
    kern_version: u32,
    btf_fd: Option<OwnedFd>,
}

impl LoadedObject {
    /// The maps, in the object's order.
    #[must_use]
    pub fn maps(&self) -> &[Map] {
        &self.maps
    }
    /// The map named `name`: its object name, or the kernel's (15 bytes at most:
    /// `__bpf_usdt_specs` is `__bpf_usdt_spec` there).
    #[must_use]
    pub fn map(&self, name: &str) -> Option<&Map> {
        self.maps.iter().find(|m| m.name() == name).or_else(|| {
            let kernel = name.get(..15).filter(|k| k.len() < name.len())?;
            self.maps.iter().find(|m| m.name() == kernel)
        })
    }
    /// The programs (subprograms excluded), in the object's order.
    #[must_use]
    pub fn programs(&self) -> &[LoadedProgram] {
        &self.programs
    }
    /// The program whose function or section name is `name`.
    #[must_use]
    pub fn program(&self, name: &str) -> Option<&LoadedProgram> {
        self.programs
            .iter()
            .find(|p| p.name == name || p.section_name == name)
    }
    /// Fd of the object's BTF in the kernel, if it has BTF and the kernel took it.
    #[must_use]
    pub fn btf_fd(&self) -> Option<BorrowedFd<'_>> {
        self.btf_fd.as_ref().map(AsFd::as_fd)
    }
    /// The `kern_version` programs were loaded with.
    #[must_use]
    pub fn kern_version(&self) -> u32 {
        self.kern_version
    }

    /// Loads program `prog` (an index into [`programs`](Self::programs)) once more with a
    /// verifier log at `level`, closes that copy, and returns the log. Level 2 lists every
    /// instruction the verifier walks, in its own disassembly.
    ///
    /// # Errors
    /// [`Error::NoLoadedProgram`] for an index past the programs; as [`program::program`].
    pub fn verifier_log(&self, prog: usize, level: u32) -> Result<Vec<u8>> {
        let p = self
            .programs
            .get(prog)
            .ok_or(Error::NoLoadedProgram { index: prog })?;
        let req = ProgramLoad {
            name: &p.name,
            prog_type: p.prog_type,
            insns: &p.insns,
            license: &self.license,
            kern_version: self.kern_version,
            btf: self.btf_fd.as_ref().map(|fd| ProgBtf {
                fd: fd.as_fd(),
                func_info: &p.ext.func_info,
                line_info: &p.ext.line_info,
            }),
            attach: AttachLoad {
                expected_attach_type: p.attach.0,
                attach_btf_id: p.attach.1,
                attach_btf_obj: p.attach_btf_obj.as_ref().map(AsFd::as_fd),
                prog_flags: p.attach.2,
            },
        };
        let log = LoadLog::Always {
            level,
            size: DEFAULT_LOG_SIZE,
        };
        program::program(&req, &log).map(|(_fd, log)| log)
    }

    /// Id, tag and post-verifier instruction count of every program (`inspect --load`).
    ///
    /// # Errors
    /// As [`prog_info`].
    pub fn report(&self) -> Result<Vec<ProgramReport>> {
        self.programs
            .iter()
            .map(|p| {
                Ok(ProgramReport {
                    name: p.name.clone(),
                    section_name: p.section_name.clone(),
                    info: p.info()?,
                })
            })
            .collect()
    }

    /// Closes every program and map fd.
    pub fn unload(self) {
        drop(self);
    }
}

impl Drop for LoadedObject {
    fn drop(&mut self) {
        log::debug!(
            "unloading {} program(s) and {} map(s)",
            self.programs.len(),
            self.maps.len()
        );
    }
}

fn program_name<'a>(p: &Program<'a>) -> &'a str {
    p.name.unwrap_or(p.section_name)
}

/// The CO-RE target: the BTF bytes and its type index, parsed on use.
struct Target {
    bytes: crate::sys::mmap::Contents,
    index: Vec<u32>,
}

fn read_target(path: &std::path::Path) -> Result<Target> {
    let bytes = crate::sys::mmap::Contents::open(path).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })?;
    let n = Btf::count_types(bytes.bytes()).map_err(|source| Error::TargetBtf {
        path: Some(path.display().to_string()),
        source,
    })?;
    Ok(Target {
        bytes,
        index: vec![0; n as usize],
    })
}

/// Loads `obj`: loads its BTF (fixed up, and sanitised for the running kernel), creates
/// every map (BTF-defined ones with their key/value types, global data maps initialised,
/// `.rodata` and `.kconfig` frozen), links every program with the functions it calls,
/// applies its CO-RE relocations against the kernel's BTF, and loads it with its
/// `func_info` / `line_info` and the type its section implies.
///
/// # Errors
/// The first failure, with everything created so far closed again:
/// [`Error::Verifier`] (program name, errno, whole log, plus a note for each instruction a
/// CO-RE relocation poisoned), [`Error::Permission`], [`Error::Unsupported`],
/// [`Error::Core`] for relocation problems, [`Error::Syscall`], [`Error::Io`] for a
/// missing kernel configuration or target BTF; as [`Plan::new`].
pub fn load(obj: &Object<'_, '_>, opts: &LoadOptions) -> Result<LoadedObject> {
    load_planned(obj, &plans(obj, opts)?, opts)
}

/// [`load`] with the programs' plans made already ([`crate::probe::plans`]): one program
/// per [`Variant`](crate::probe::Variant) of each plan, behind its prologue, as the type
/// the plan gives.
///
/// # Errors
/// As [`load`].
pub fn load_planned(
    obj: &Object<'_, '_>,
    plans: &[Plan],
    opts: &LoadOptions,
) -> Result<LoadedObject> {
    let kern_version = opts
        .kern_version
        .or_else(|| obj.version())
        .or_else(running_kernel_version)
        .unwrap_or(0);
    let license = obj.license().unwrap_or("").to_owned();
    let object_name = opts.object_name.as_deref().unwrap_or("");
    // Kconfig externs and their values.
    let mut slots = vec![None; sluice_core::object::MAX_EXTERNS];
    let n = obj.kconfig_externs(&mut slots)?;
    let kconfig: Vec<KconfigExtern<'_>> = slots.into_iter().take(n).flatten().collect();
    let kconfig_value = match obj.maps().iter().find(|m| m.kind == MapKind::Kconfig) {
        Some(m) => {
            let config = read_kernel_config(opts.kconfig.as_deref())?;
            Some(kconfig_value(
                &kconfig,
                m.value_size,
                &config,
                opts.bpf_cookie(),
            )?)
        }
        None => None,
    };
    // The object's BTF: optional, as for libbpf (a kernel that refuses it still loads
    // the programs, without source lines).
    let local_types = obj
        .btf_bytes()
        .map_or(Ok(0), Btf::count_types)
        .map_err(|e| Error::Core(e.into()))?;
    let mut local_index = vec![0u32; local_types as usize];
    let local = obj.parse_btf(&mut local_index)?;
    let btf_fd = match btf::fixup(obj, &kconfig) {
        Ok(Some(mut bytes)) => {
            let sanitised = btf::sanitize(&mut bytes, &Features::probe());
            match sanitised.and_then(|_| btf::load(&bytes)) {
                Ok(fd) => Some(fd),
                Err(e) => {
                    log::warn!("object BTF not loaded, going on without it: {e}");
                    None
                }
            }
        }
        Ok(None) => None,
        Err(e) => {
            log::warn!("object BTF not usable, going on without it: {e}");
            None
        }
    };
    let ext = match (obj.btf_ext_bytes(), local.as_ref()) {
        (Some(bytes), Some(btf)) => match BtfExt::parse(bytes, btf) {
            Ok(ext) => Some(ext),
            Err(e) => {
                log::warn!("object .BTF.ext not usable: {e}");
                None
            }
        },
        _ => None,
    };
    // `--set` checked before anything is created.
    let values = super::globals::initial_values(obj, local.as_ref(), &opts.globals)?;
    let map_btf = MapBtf {
        fd: btf_fd.as_ref().map(AsFd::as_fd),
        local: local.as_ref(),
    };
    let maps = create_maps(
        obj.maps(),
        object_name,
        &map_btf,
        &opts.map_sizes,
        opts.pin_root.as_deref(),
    )?;
    init_data_maps(obj.maps(), &maps, kconfig_value.as_deref(), &values)?;
    let map_fds: Vec<i32> = maps.iter().map(|m| m.as_fd().as_raw_fd()).collect();
    // CO-RE: the target BTF is read only when some relocation needs it.
    let has_core = ext
        .as_ref()
        .is_some_and(|e| e.core_relos().next().is_some());
    let mut target = match has_core {
        true => Some(read_target(
            opts.target_btf
                .as_deref()
                .unwrap_or(std::path::Path::new(btf::VMLINUX_BTF)),
        )?),
        false => None,
    };
    let mut scratch: Vec<Candidate>;
    let target_btf = match target.as_mut() {
        Some(t) => Some(
            Btf::parse(t.bytes.bytes(), &mut t.index)
                .map_err(|source| Error::TargetBtf { path: None, source })?,
        ),
        None => None,
    };
    // Only the types the relocations are rooted at are looked up: the index holds those.
    let mut wanted: Vec<&[u8]> = match (ext.as_ref(), local.as_ref()) {
        (Some(e), Some(l)) => e
            .core_relos()
            .flat_map(|s| s.records())
            .filter_map(|r| l.ty(r.type_id))
            .map(|t| t.name_bytes())
            .collect(),
        _ => Vec::new(),
    };
    CandidateIndex::wanted(&mut wanted);
    let cands = match target_btf {
        Some(t) => {
            scratch = vec![Candidate::default(); CandidateIndex::required_len_for(&t, &wanted)];
            Some(
                CandidateIndex::for_names(t, &wanted, &mut scratch)
                    .map_err(|source| Error::TargetBtf { path: None, source })?,
            )
        }
        None => None,
    };
    let shared = Shared {
        opts,
        license: &license,
        kern_version,
        map_fds: &map_fds,
        btf_fd: btf_fd.as_ref().map(AsFd::as_fd),
        ext: ext.as_ref(),
        local: local.as_ref(),
        cands: cands.as_ref(),
    };
    let hooks = attach_btfs(plans, opts)?;
    let mut programs = Vec::with_capacity(plans.len());
    for (plan, hook) in plans.iter().zip(&hooks) {
        // One program per DWARF site (inlined instances), each with its own prologue.
        for v in plan.variants() {
            let loaded = load_one(obj, plan, hook.as_ref(), &v.prologue, &shared)?;
            programs.push(LoadedProgram {
                site: v.site.clone(),
                ..loaded
            });
        }
    }
    log::info!(
        "loaded {} program(s), {} map(s), kern_version {:#x}",
        programs.len(),
        maps.len(),
        kern_version
    );
    Ok(LoadedObject {
        maps,
        programs,
        license,
        kern_version,
        btf_fd,
    })
}

/// What every program of an object is loaded with.
struct Shared<'a, 'o> {
    opts: &'a LoadOptions,
    license: &'a str,
    kern_version: u32,
    map_fds: &'a [i32],
    btf_fd: Option<BorrowedFd<'a>>,
    ext: Option<&'a BtfExt<'o>>,
    local: Option<&'a Btf<'o>>,
    cands: Option<&'a CandidateIndex<'o>>,
}

/// The kernel BTF type of each plan that needs one (`tp_btf`, `fentry`, `fexit`,
/// `fmod_ret`, `lsm`), in the order of `plans`: read from the running kernel's BTF (or
/// [`LoadOptions::target_btf`]) and its modules' only when some plan needs it.
///
/// # Errors
/// [`Error::NoAttachTarget`] for a type in none of them; as [`find_attach_types`].
fn attach_btfs(plans: &[Plan], opts: &LoadOptions) -> Result<Vec<Option<AttachBtf>>> {
    let wanted: Vec<(usize, (String, sluice_core::btf::Kind))> = plans
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p.attach() {
            Attach::Hook(h) => h.btf_type().map(|t| (i, t)),
            _ => None,
        })
        .collect();
    let mut out: Vec<Option<AttachBtf>> = plans.iter().map(|_| None).collect();
    if wanted.is_empty() {
        return Ok(out);
    }
    let base = opts
        .target_btf
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from(btf::VMLINUX_BTF));
    let types: Vec<(String, sluice_core::btf::Kind)> =
        wanted.iter().map(|(_, t)| t.clone()).collect();
    let (found, searched) = find_attach_types(&base, Some(std::path::Path::new(BTF_DIR)), &types)?;
    for ((i, (name, _)), hit) in wanted.into_iter().zip(found) {
        let plan = plans.get(i).ok_or(Error::NoProgram { index: i })?;
        let Some(hit) = hit else {
            let section = match plan.attach() {
                Attach::Hook(h) => h.section(),
                _ => plan.spec().to_owned(),
            };
            return Err(Error::NoAttachTarget {
                program: plan.program().to_owned(),
                section,
                btf_name: name,
                searched: searched.to_string(),
            });
        };
        log::debug!(
            "program '{}': attach_btf_id {} ({name}{})",
            plan.program(),
            hit.id,
            hit.module
                .as_ref()
                .map_or_else(String::new, |m| format!(", module {}", m.name))
        );
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(hit);
        }
    }
    Ok(out)
}

/// The error of loading a BTF hook's program: a refusal without a verifier log, by a
/// process that has every capability, is the hook's (no BPF trampolines, no BPF LSM),
/// said in the kernel's terms rather than as a missing privilege.
fn hook_load_error(plan: &Plan, name: &str, e: Error) -> Error {
    let Attach::Hook(h) = plan.attach() else {
        return e;
    };
    let errno = match &e {
        Error::Permission { errno, .. } | Error::Syscall { errno, .. } => *errno,
        Error::Verifier { errno, log, .. } if log.is_empty() => *errno,
        _ => return e,
    };
    let facts = crate::kernel::hooks::attach_facts(None, None);
    if !facts.missing_caps.is_empty() {
        return e;
    }
    Error::HookRefused {
        program: name.to_owned(),
        section: h.section(),
        call: "BPF_PROG_LOAD",
        errno,
        reason: crate::kernel::errno::attach_reason(h.kind, &h.target, errno, &facts),
    }
}

/// Relocates the program of `plan` behind `prologue` and loads it (`site`: none yet),
/// against `hook`'s BTF type when it has one.
fn load_one(
    obj: &Object<'_, '_>,
    plan: &Plan,
    hook: Option<&AttachBtf>,
    prologue: &[Insn],
    sh: &Shared<'_, '_>,
) -> Result<LoadedProgram> {
    let (opts, license, kern_version) = (sh.opts, sh.license, sh.kern_version);
    let index = plan.index();
    let p = obj
        .programs()
        .get(index)
        .ok_or(Error::NoProgram { index })?;
    let linked = obj.linked_len(index)?;
    let mut insns = vec![Insn::default(); prologue.len().saturating_add(linked)];
    let n = obj.relocate(index, prologue, sh.map_fds, &mut insns)?;
    insns.truncate(n);
    let mut layout = vec![LinkedPart::default(); sluice_core::object::MAX_LINKED];
    let parts = obj.link_layout(index, &mut layout)?;
    layout.truncate(parts);
    let name = program_name(p);
    let mut poisoned = Vec::new();
    if let (Some(ext), Some(local), Some(cands)) = (sh.ext, sh.local, sh.cands) {
        let resolver = CoreResolver::new(local, cands);
        poisoned = btf::apply_core(obj, ext, &resolver, &layout, prologue.len(), &mut insns)?;
        for x in &poisoned {
            log::debug!("{}: instruction {} poisoned", x.what, x.insn);
        }
    }
    let info = match sh.ext {
        Some(ext) if sh.btf_fd.is_some() => btf::ext_info(obj, ext, &layout, prologue.len()),
        _ => ExtInfo::default(),
    };
    let prog_type = opts
        .prog_type
        .or_else(|| plan.prog_type())
        .unwrap_or(opts.default_prog_type);
    let (expected_attach_type, prog_flags) = match plan.attach() {
        Attach::Hook(h) => (h.kind.expected_attach_type(), h.prog_flags()),
        // `SEC("uprobe.multi")`: loaded as libbpf loads it, attached by nobody.
        Attach::Skip(_) => sluice_core::probe::bare_multi(plan.spec()).map_or((0, 0), |(k, s)| {
            let flags = if s {
                sluice_core::probe::BPF_F_SLEEPABLE
            } else {
                0
            };
            (k.expected_attach_type(), flags)
        }),
        _ => (0, 0),
    };
    let attach_btf_obj = match hook.and_then(|h| h.module.as_ref()) {
        Some(m) => Some(m.fd.try_clone().map_err(|source| Error::Io {
            path: format!("BTF of module {}", m.name),
            source,
        })?),
        None => None,
    };
    let attach = AttachLoad {
        expected_attach_type,
        attach_btf_id: hook.map_or(0, |h| h.id),
        attach_btf_obj: attach_btf_obj.as_ref().map(AsFd::as_fd),
        prog_flags,
    };
    let req = ProgramLoad {
        name,
        prog_type,
        insns: &insns,
        license,
        kern_version,
        btf: sh.btf_fd.map(|fd| ProgBtf {
            fd,
            func_info: &info.func_info,
            line_info: &info.line_info,
        }),
        attach,
    };
    let log = LoadLog::OnFailure {
        level: opts.log_level,
        size: opts.log_size,
    };
    let fd = match program::program(&req, &log) {
        Ok((fd, _)) => fd,
        Err(Error::Verifier {
            program,
            errno,
            mut log,
        }) if !poisoned.is_empty() => {
            // Name what the poison stands for: the verifier only says
            // "invalid func unknown#195896080".
            for x in &poisoned {
                log.extend_from_slice(
                    format!("\nsluice: instruction {} poisoned: {}", x.insn, x.what).as_bytes(),
                );
            }
            return Err(Error::Verifier {
                program,
                errno,
                log,
            });
        }
        Err(e) => return Err(hook_load_error(plan, name, e)),
    };
    log::debug!(
        "load bpf program '{}' ({}): fd = {}",
        name,
        p.section_name,
        fd.as_raw_fd()
    );
    Ok(LoadedProgram {
        index,
        name: name.into(),
        section_name: p.section_name.into(),
        spec: plan.spec().into(),
        prog_type,
        insns,
        ext: info,
        site: None,
        attach: (expected_attach_type, attach.attach_btf_id, prog_flags),
        attach_btf_obj,
        fd,
    })
}
