//! The load phase: an opened [`Object`] in, maps and programs in the kernel out.
//!
//! The order is the seed's (create maps, relocate, load programs), with what kernels since
//! then added: the program type from the section name, the verifier log retried at the
//! size the kernel reports (`log_true_size`, Linux 6.4), names for maps and programs, and
//! errors that say which capability or kernel feature is missing. The object is never
//! re-parsed: loading again after [`LoadedObject::unload`] reuses the same [`Object`].

use crate::error::{Error, Result};
use crate::maps::{Map, MapExtra, MapSpec};
use crate::sys::bpf::{self as sys, LogRequest, ProgBtf, ProgLoad};
use rustix::io::Errno;
use sluice_core::btf::{Btf, BtfExt, CandidateIndex, CoreResolver, Kind};
use sluice_core::object::{KconfigExtern, KconfigKind, LinkedPart, MapKind};
use sluice_core::object::{MapDef, Object, Program};
use sluice_core::perf::abi::{map_type, object_name, prog_type, ProgInfoRaw, BPF_TAG_SIZE};
use sluice_core::probe::{ProbeKind, ProbeSpec, Section};
use sluice_core::Insn;
use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;

/// The seed's log buffer size (`BPF_LOG_BUF_SIZE`, 64 KiB): the first size tried.
pub const DEFAULT_LOG_SIZE: usize = 64 * 1024;
/// Largest log buffer the loader grows to (16 MiB).
pub const MAX_LOG_SIZE: usize = 16 * 1024 * 1024;

/// How to load an object.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LoadOptions {
    /// Type for programs whose section name implies none (an opaque title): `KPROBE`, as
    /// the seed loaded everything.
    pub default_prog_type: u32,
    /// Force this type on every program, whatever the section says.
    pub prog_type: Option<u32>,
    /// `kern_version` to pass; `None`: the object's `version` section, else the running
    /// kernel's release.
    pub kern_version: Option<u32>,
    /// Verifier log level of the retry after a failure (1; 2 prints every instruction).
    pub log_level: u32,
    /// First log buffer size of the retry.
    pub log_size: usize,
    /// Instructions to put before each program, indexed like [`Object::programs`]
    /// (missing or empty: none).
    pub prologues: Vec<Vec<Insn>>,
    /// A file with DWARF for kernel probes whose arguments name variables (a `vmlinux`, or
    /// a module): `kprobe/generic_perform_write(file->f_mapping->a_ops, bytes)`. Uprobes
    /// look in the binary their spec names (and its build-id / debuglink debug files).
    pub debuginfo: Option<PathBuf>,
    /// Probe specs to use instead of section names, indexed like [`Object::programs`]
    /// (missing or `None`: the section name). Section names are fixed when the object is
    /// compiled; this gives a program a uprobe path, offset or argument list known only at
    /// run time: `uprobe//opt/app/bin:process(file->f_mapping->a_ops, bytes)`.
    pub specs: Vec<Option<String>>,
    /// The object's name, for the kernel names of its global data maps (libbpf's
    /// `<name>.rodata`, the name cut at its first `.`): usually the file name. `None`:
    /// the section name alone (`.rodata`).
    pub object_name: Option<String>,
    /// BTF to resolve CO-RE relocations against (`--btf FILE`); `None`: the running
    /// kernel's, [`crate::btf::VMLINUX_BTF`].
    pub target_btf: Option<PathBuf>,
    /// Kernel configuration for `.kconfig` externs (a `.config`, plain or gzipped);
    /// `None`: `/proc/config.gz`, else `/boot/config-$(uname -r)`.
    pub kconfig: Option<PathBuf>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            default_prog_type: prog_type::KPROBE,
            prog_type: None,
            kern_version: None,
            log_level: 1,
            log_size: DEFAULT_LOG_SIZE,
            prologues: Vec::new(),
            debuginfo: None,
            specs: Vec::new(),
            object_name: None,
            target_btf: None,
            kconfig: None,
        }
    }
}

/// The program type a section name implies, or `None` for an opaque title: libbpf's
/// section table (`kprobe/`, `uprobe/` and the seed's perf form are `KPROBE`, `tracepoint/`
/// is `TRACEPOINT`, `xdp`, `socket` ...), from [`sluice_core::probe::program_type`].
#[must_use]
pub fn section_prog_type(section: &str) -> Option<u32> {
    sluice_core::probe::program_type(section)
}

/// The probe spec of program `index` (`p`): its override in [`LoadOptions::specs`], else
/// its section name.
#[must_use]
pub fn program_spec<'a>(p: &Program<'a>, index: usize, opts: &'a LoadOptions) -> &'a str {
    match opts.specs.get(index) {
        Some(Some(spec)) => spec,
        _ => p.section_name,
    }
}

fn parse_probe<'s>(p: &Program<'_>, spec: &'s str) -> Result<Option<ProbeSpec<'s>>> {
    match sluice_core::probe::parse(spec) {
        Ok(Section::Probe(s)) => Ok(Some(s)),
        Ok(Section::Title(_)) => Ok(None),
        Err(e) => Err(Error::Usage {
            what: format!("program '{}': spec '{spec}': {e}", p.name.unwrap_or("?")),
        }),
    }
}

/// The prologue program `index` (`p`) needs, from its spec ([`program_spec`]):
///
/// - no arguments: none;
/// - typed entry arguments (`kprobe/vfs_read(void *, char *buf, unsigned long)`) and
///   registers / `$argN` / `$stackN`: the running architecture's calling convention;
/// - arguments that name variables (`uprobe//bin/app:process(file->f_mapping->a_ops,
///   bytes)`): DWARF, from the uprobe's binary or [`LoadOptions::debuginfo`] for kprobes
///   (see [`crate::debuginfo`]). The spec can have several sites (inlined instances), each
///   needing its own prologue: this is the first site's; [`site_prologues`] gives them
///   all, and [`load`] loads one program per site.
///
/// # Errors
/// [`Error::Usage`] naming the program, spec and argument for arguments that cannot be
/// fetched, more than four values, an architecture sluice has no tables for, or a debug-info
/// failure (file, function, variable and address).
pub fn prologue_for(p: &Program<'_>, index: usize, opts: &LoadOptions) -> Result<Vec<Insn>> {
    let spec_text = program_spec(p, index, opts);
    let Some(spec) = parse_probe(p, spec_text)? else {
        return Ok(Vec::new());
    };
    if spec.args().is_empty() {
        return Ok(Vec::new());
    }
    if crate::debuginfo::spec_needs_debug_info(&spec) {
        let mut sites = site_prologues(p, index, opts)?;
        return Ok(if sites.is_empty() {
            Vec::new()
        } else {
            sites.swap_remove(0).prologue
        });
    }
    let usage = |e: sluice_core::Error| Error::Usage {
        what: format!(
            "program '{}' (spec '{spec_text}'): {e}",
            p.name.unwrap_or("?"),
        ),
    };
    let arch = sluice_core::arch::Arch::native().ok_or_else(|| Error::Usage {
        what: "no argument-passing tables for this architecture".into(),
    })?;
    let symbols = kernel_symbols(&spec).map_err(|e| Error::Usage {
        what: format!(
            "program '{}' (spec '{spec_text}'): {e}",
            p.name.unwrap_or("?")
        ),
    })?;
    let mut symbol = |name: &str| symbols.iter().find_map(|(n, a)| (*n == name).then_some(*a));
    let locs =
        sluice_core::prologue::from_typed_args_with(arch, spec.kind(), spec.args(), &mut symbol)
            .map_err(usage)?;
    let mut out = vec![Insn::default(); sluice_core::prologue::MAX_INSNS];
    let n = sluice_core::prologue::write(&locs, &mut out).map_err(usage)?;
    out.truncate(n);
    Ok(out)
}

/// The running kernel's address of every symbol `spec`'s arguments name (`@SYM+OFF`, as
/// `sluice prologue --emit` writes kernel globals), from `/proc/kallsyms`; nothing read when
/// there is none.
///
/// # Errors
/// As [`crate::kallsyms::lookup`]; [`Error::Usage`] naming a symbol the kernel does not list.
fn kernel_symbols<'s>(spec: &ProbeSpec<'s>) -> Result<Vec<(&'s str, u64)>> {
    let mut names: Vec<&'s str> = Vec::new();
    for a in spec.args().exprs() {
        if let sluice_core::probe::ArgBase::Sym { name, .. } = a.base() {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    if names.is_empty() || !matches!(spec.kind(), ProbeKind::Kprobe | ProbeKind::Kretprobe) {
        // A uprobe's `@SYM` is refused by the prologue itself.
        return Ok(Vec::new());
    }
    let found = crate::kallsyms::lookup(&names)?;
    names
        .iter()
        .zip(found)
        .map(|(&name, at)| {
            at.map(|a| (name, a)).ok_or_else(|| Error::Usage {
                what: format!(
                    "@{name}: {} does not list it in the core kernel (a module's symbol, or a \
                     data symbol of a kernel without CONFIG_KALLSYMS_ALL: sluice prologue \
                     --emit spells globals from _stext, which every kernel lists)",
                    crate::kallsyms::KALLSYMS
                ),
            })
        })
        .collect()
}

/// Every site of program `index` (`p`)'s spec whose arguments name variables, each with its
/// prologue, tracefs target and fetch-args: a record session loads one program per site
/// ([`load_program`] with the site's prologue before [`Object::relocate`]d instructions) and
/// attaches each to a probe on its target.
///
/// # Errors
/// [`Error::Usage`] for a program without a probe spec, and as [`prologue_for`].
pub fn site_prologues(
    p: &Program<'_>,
    index: usize,
    opts: &LoadOptions,
) -> Result<Vec<crate::debuginfo::Site>> {
    let spec_text = program_spec(p, index, opts);
    let name = p.name.unwrap_or("?");
    let spec = parse_probe(p, spec_text)?.ok_or_else(|| Error::Usage {
        what: format!("program '{name}': '{spec_text}' is no probe spec"),
    })?;
    crate::debuginfo::resolve_running(&spec, opts.debuginfo.as_deref()).map_err(|e| Error::Usage {
        what: format!("program '{name}' (spec '{spec_text}'): {e}"),
    })
}

/// `KERNEL_VERSION(a, b, c)` from a release string such as `6.18.44-fc-v657`, with `c`
/// capped at 255 as the kernel's own macro does since 4.9.256 (`None` if no `a.b` prefix).
#[must_use]
pub fn parse_kernel_release(release: &str) -> Option<u32> {
    let mut nums = release.split(['.', '-', '+', '_']).map(|p| {
        let digits: &str = p.split(|c: char| !c.is_ascii_digit()).next().unwrap_or("");
        digits.parse::<u32>().ok()
    });
    let a = nums.next()??;
    let b = nums.next()??;
    let c = nums.next().flatten().unwrap_or(0);
    (a <= 255 && b <= 255).then(|| (a << 16) | (b << 8) | c.min(255))
}

/// The running kernel's `KERNEL_VERSION` from `uname -r`.
#[must_use]
pub fn running_kernel_version() -> Option<u32> {
    let u = rustix::system::uname();
    parse_kernel_release(&u.release().to_string_lossy())
}

/// What the kernel says about a loaded program (`BPF_OBJ_GET_INFO_BY_FD`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgInfo {
    /// Kernel-wide program id (what `bpftool prog show id N` takes).
    pub id: u32,
    /// Program type.
    pub prog_type: u32,
    /// Tag: the first 8 bytes of the SHA-1 of the instructions (map fds zeroed).
    pub tag: [u8; BPF_TAG_SIZE],
    /// Instructions after the verifier's rewrites (`xlated_prog_len / 8`).
    pub xlated_insns: u32,
    /// Bytes of JITed machine code (0 without JIT).
    pub jited_len: u32,
    /// Instructions the verifier processed (Linux 5.16; 0 before).
    pub verified_insns: u32,
    /// Name as the kernel stores it.
    pub name: String,
}

impl ProgInfo {
    /// The tag as 16 hex digits, as `bpftool` prints it.
    #[must_use]
    pub fn tag_hex(&self) -> String {
        self.tag.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl From<ProgInfoRaw> for ProgInfo {
    fn from(r: ProgInfoRaw) -> Self {
        let end = r.name.iter().position(|&b| b == 0).unwrap_or(r.name.len());
        ProgInfo {
            id: r.id,
            prog_type: r.prog_type,
            tag: r.tag,
            xlated_insns: r.xlated_prog_len / 8,
            jited_len: r.jited_prog_len,
            verified_insns: r.verified_insns,
            name: String::from_utf8_lossy(r.name.get(..end).unwrap_or_default()).into_owned(),
        }
    }
}

/// Reads what the kernel says about program `fd`.
///
/// # Errors
/// [`Error::Unsupported`] before Linux 4.13; the kernel's refusal.
pub fn prog_info(fd: BorrowedFd<'_>) -> Result<ProgInfo> {
    sys::prog_info(fd).map(ProgInfo::from).map_err(|e| {
        Error::bpf(
            "bpf(BPF_OBJ_GET_INFO_BY_FD)",
            "",
            e,
            Some(("BPF_OBJ_GET_INFO_BY_FD".into(), "4.13")),
        )
    })
}

/// One program to hand to the verifier.
#[derive(Clone, Debug)]
pub struct ProgramLoad<'a> {
    /// Name for messages and for the kernel (sanitised, cut to 15 bytes).
    pub name: &'a str,
    /// `BPF_PROG_TYPE_*`.
    pub prog_type: u32,
    /// The relocated instructions.
    pub insns: &'a [Insn],
    /// Licence.
    pub license: &'a str,
    /// `KERNEL_VERSION` to pass.
    pub kern_version: u32,
}

struct Prepared<'b> {
    bytes: Vec<[u8; 8]>,
    license: CString,
    btf: Option<ProgBtf<'b>>,
}

fn prepare<'b>(p: &ProgramLoad<'_>, btf: Option<ProgBtf<'b>>) -> Prepared<'b> {
    let lic = p.license.split('\0').next().unwrap_or("");
    Prepared {
        bytes: p.insns.iter().map(|i| i.to_native_bytes()).collect(),
        license: CString::new(lic).unwrap_or_default(),
        btf,
    }
}

fn log_bytes(mut buf: Vec<u8>) -> Vec<u8> {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    buf.truncate(end);
    buf
}

fn classify_load_error(p: &ProgramLoad<'_>, errno: Errno, log: Vec<u8>) -> Error {
    if !log.is_empty() {
        return Error::Verifier {
            program: p.name.into(),
            errno,
            log,
        };
    }
    let feature = (errno == Errno::INVAL)
        .then(|| prog_type::min_kernel(p.prog_type))
        .flatten()
        .map(|k| (format!("program type {}", p.prog_type), k));
    match Error::bpf("bpf(BPF_PROG_LOAD)", p.name, errno, feature) {
        Error::Syscall { errno, .. } => Error::Verifier {
            program: p.name.into(),
            errno,
            log,
        },
        e => e,
    }
}

/// Loads one program with a verifier log at `level` and returns its fd and the whole log.
///
/// The buffer starts at `log_size` bytes and grows to what the kernel reports it needed
/// (`log_true_size`, Linux 6.4), or by doubling up to [`MAX_LOG_SIZE`] when the kernel
/// reports nothing, whenever the kernel answers `ENOSPC`.
///
/// # Errors
/// [`Error::Verifier`] with the whole log when refused; [`Error::Permission`] /
/// [`Error::Unsupported`] when the kernel will not load programs at all.
pub fn load_program_with_log(
    p: &ProgramLoad<'_>,
    level: u32,
    log_size: usize,
) -> Result<(OwnedFd, Vec<u8>)> {
    load_program_with_log_btf(p, None, level, log_size)
}

/// [`load_program_with_log`] with the program's BTF (`func_info`, `line_info`): the
/// verifier's log then names source lines.
///
/// # Errors
/// As [`load_program_with_log`].
pub fn load_program_with_log_btf(
    p: &ProgramLoad<'_>,
    btf: Option<ProgBtf<'_>>,
    level: u32,
    log_size: usize,
) -> Result<(OwnedFd, Vec<u8>)> {
    let prep = prepare(p, btf);
    load_prepared_with_log(p, &prep, level, log_size)
}

fn request<'a>(p: &ProgramLoad<'_>, prep: &'a Prepared<'_>, named: bool) -> ProgLoad<'a> {
    ProgLoad {
        prog_type: p.prog_type,
        insns: &prep.bytes,
        license: &prep.license,
        kern_version: p.kern_version,
        name: if named { object_name(p.name) } else { [0; 16] },
        prog_flags: 0,
        expected_attach_type: 0,
        btf: prep.btf,
    }
}

fn load_prepared_with_log(
    p: &ProgramLoad<'_>,
    prep: &Prepared<'_>,
    level: u32,
    log_size: usize,
) -> Result<(OwnedFd, Vec<u8>)> {
    let req = request(p, prep, true);
    let mut size = log_size.clamp(256, MAX_LOG_SIZE);
    loop {
        let mut buf = vec![0u8; size];
        let (r, true_size) = sys::prog_load(
            &req,
            Some(LogRequest {
                buf: &mut buf,
                level,
            }),
        );
        let log = log_bytes(buf);
        match r {
            Ok(fd) => return Ok((fd, log)),
            Err(e) if e == Errno::NOSPC && size < MAX_LOG_SIZE => {
                let wanted = true_size as usize;
                size = if wanted > size {
                    wanted
                } else {
                    size.saturating_mul(2)
                }
                .min(MAX_LOG_SIZE);
                log::debug!(
                    "verifier log of '{}' needs more room: retrying with {size} bytes",
                    p.name
                );
            }
            Err(e) => return Err(classify_load_error(p, e, log)),
        }
    }
}

/// Loads one program: first without a log (fast path), then, on failure, again with a log
/// at `log_level` to explain the refusal.
///
/// # Errors
/// As [`load_program_with_log`].
pub fn load_program(p: &ProgramLoad<'_>, log_level: u32, log_size: usize) -> Result<OwnedFd> {
    load_program_btf(p, None, log_level, log_size)
}

/// [`load_program`] with the program's BTF (`func_info`, `line_info`).
///
/// # Errors
/// As [`load_program_with_log`].
pub fn load_program_btf(
    p: &ProgramLoad<'_>,
    btf: Option<ProgBtf<'_>>,
    log_level: u32,
    log_size: usize,
) -> Result<OwnedFd> {
    let prep = prepare(p, btf);
    let (r, _) = sys::prog_load(&request(p, &prep, true), None);
    let first = match r {
        Ok(fd) => return Ok(fd),
        Err(e) => e,
    };
    if first == Errno::NOSYS {
        return Err(classify_load_error(p, first, Vec::new()));
    }
    if first == Errno::TOOBIG {
        // Kernels before 4.15 know no prog_name: the non-zero tail is E2BIG.
        if let (Ok(fd), _) = sys::prog_load(&request(p, &prep, false), None) {
            return Ok(fd);
        }
    }
    log::warn!(
        "load bpf program '{}' failed: {first}; retrying with a verifier log",
        p.name
    );
    match load_prepared_with_log(p, &prep, log_level.max(1), log_size) {
        Ok((fd, _)) => Ok(fd),
        Err(e) => {
            if let Error::Verifier { log, .. } = &e {
                log::warn!("bpf: load: failed to load program '{}':", p.name);
                log::warn!("-- BEGIN DUMP LOG ---");
                log::warn!("{}", String::from_utf8_lossy(log));
                log::warn!("-- END LOG --");
            }
            Err(e)
        }
    }
}

/// A program in the kernel; its fd closes on drop.
#[derive(Debug)]
pub struct LoadedProgram {
    index: usize,
    name: String,
    section_name: String,
    spec: String,
    prog_type: u32,
    insns: Vec<Insn>,
    ext: crate::btf::ExtInfo,
    site: Option<crate::debuginfo::Site>,
    fd: OwnedFd,
}

impl LoadedProgram {
    /// The DWARF site its prologue was built for, when its spec's arguments name variables:
    /// the probe for this copy of the program goes to [`Site::target`] with
    /// [`Site::fetch_args`]. A spec with several sites (inlined instances) gives one
    /// [`LoadedProgram`] per site, in the order of [`site_prologues`].
    ///
    /// [`Site::target`]: crate::debuginfo::Site::target
    /// [`Site::fetch_args`]: crate::debuginfo::Site::fetch_args
    #[must_use]
    pub fn site(&self) -> Option<&crate::debuginfo::Site> {
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
    pub fn ext_info(&self) -> &crate::btf::ExtInfo {
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
    /// The map named `name`.
    #[must_use]
    pub fn map(&self, name: &str) -> Option<&Map> {
        self.maps.iter().find(|m| m.name() == name)
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
    /// [`Error::Usage`] for an index past the programs; as [`load_program_with_log`].
    pub fn verifier_log(&self, prog: usize, level: u32) -> Result<Vec<u8>> {
        let p = self.programs.get(prog).ok_or_else(|| Error::Usage {
            what: format!("no loaded program #{prog}"),
        })?;
        let req = ProgramLoad {
            name: &p.name,
            prog_type: p.prog_type,
            insns: &p.insns,
            license: &self.license,
            kern_version: self.kern_version,
        };
        let btf = self.btf_fd.as_ref().map(|fd| ProgBtf {
            fd: fd.as_fd(),
            func_info: &p.ext.func_info,
            line_info: &p.ext.line_info,
        });
        load_program_with_log_btf(&req, btf, level, DEFAULT_LOG_SIZE).map(|(_fd, log)| log)
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

fn map_spec(def: &MapDef<'_>, object_name: &str) -> Result<MapSpec> {
    let mut max_entries = def.max_entries;
    if def.map_type == map_type::PERF_EVENT_ARRAY && max_entries == 0 {
        // One slot per CPU, what libbpf fills in when the object leaves it to the loader.
        max_entries = sys::possible_cpus()
            .map_err(|errno| Error::Syscall {
                call: "read /sys/devices/system/cpu/possible",
                subject: String::new(),
                errno,
            })?
            .try_into()
            .unwrap_or(u32::MAX);
    }
    let name = def.kernel_name(object_name);
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok(MapSpec {
        name: String::from_utf8_lossy(name.get(..end).unwrap_or_default()).into_owned(),
        map_type: def.map_type,
        key_size: def.key_size,
        value_size: def.value_size,
        max_entries,
        map_flags: def.map_flags.unwrap_or(0),
    })
}

/// The inner map template of a map-in-map: samples/bpf `inner_map_idx`, or iproute2 `inner_idx`.
/// Only map-in-map types have one: the field exists (as 0) in every definition of the layout.
fn inner_of(def: &MapDef<'_>) -> Option<u32> {
    matches!(
        def.map_type,
        map_type::ARRAY_OF_MAPS | map_type::HASH_OF_MAPS
    )
    .then(|| def.inner_map_idx.or(def.inner_idx))
    .flatten()
}

/// What map creation needs from the object's BTF.
struct MapBtf<'f, 'b> {
    fd: Option<BorrowedFd<'f>>,
    local: Option<&'b Btf<'b>>,
}

impl MapBtf<'_, '_> {
    /// `MapExtra` of `def`: its key/value type ids (a global data map's value is its
    /// section's DATASEC).
    fn extra(&self, def: &MapDef<'_>) -> MapExtra<'_> {
        let value = if def.kind.is_internal() {
            self.local
                .and_then(|b| b.find(def.name, Kind::Datasec))
                .map_or(0, |t| t.id())
        } else {
            def.btf_value_type_id
        };
        MapExtra {
            btf_fd: self.fd,
            btf_key_type_id: def.btf_key_type_id,
            btf_value_type_id: value,
            numa_node: (def.numa_node != 0).then_some(def.numa_node),
            map_extra: def.map_extra,
        }
    }
}

fn create_maps(defs: &[MapDef<'_>], object_name: &str, btf: &MapBtf<'_, '_>) -> Result<Vec<Map>> {
    let mut maps: Vec<Option<Map>> = defs.iter().map(|_| None).collect();
    // Plain maps first, so every map-in-map finds its inner template created.
    for inner_pass in [false, true] {
        for i in 0..defs.len() {
            let Some(def) = defs.get(i) else { continue };
            if inner_of(def).is_some() != inner_pass {
                continue;
            }
            let spec = map_spec(def, object_name)?;
            // A BTF-defined map-in-map: its inner definition is a template created for
            // the occasion (closed once the outer map holds its copy).
            let btf_inner = match def.inner {
                Some(inner) => {
                    let a = inner.attrs;
                    let ispec = MapSpec {
                        name: format!("{}.inner", spec.name),
                        map_type: a.map_type,
                        key_size: a.key_size,
                        value_size: a.value_size,
                        max_entries: a.max_entries,
                        map_flags: a.map_flags,
                    };
                    Some(Map::create(&ispec, None)?)
                }
                None => None,
            };
            let inner = match (inner_of(def), btf_inner.as_ref()) {
                (_, Some(m)) => Some(m),
                (Some(j), None) => Some(maps.get(j as usize).and_then(Option::as_ref).ok_or_else(
                    || Error::Usage {
                        what: format!(
                            "map '{}': inner map #{j} is missing or itself a map-in-map",
                            def.name
                        ),
                    },
                )?),
                (None, None) => None,
            };
            let m = Map::create_with(&spec, inner, &btf.extra(def))?;
            if let Some(slot) = maps.get_mut(i) {
                *slot = Some(m);
            }
        }
    }
    Ok(maps.into_iter().flatten().collect())
}

/// Writes the initial values of global data maps (`.rodata`, `.data`, `.kconfig`) and
/// freezes the read-only ones, as libbpf does.
fn init_data_maps(defs: &[MapDef<'_>], maps: &[Map], kconfig: Option<&[u8]>) -> Result<()> {
    for (def, map) in defs.iter().zip(maps) {
        let initial = match def.kind {
            MapKind::Kconfig => kconfig.unwrap_or_default(),
            MapKind::Rodata | MapKind::Data => def.initial,
            _ => continue,
        };
        let mut value = vec![0u8; def.value_size as usize];
        let n = initial.len().min(value.len());
        if let (Some(d), Some(s)) = (value.get_mut(..n), initial.get(..n)) {
            d.copy_from_slice(s);
        }
        map.update_bytes(&0u32.to_ne_bytes(), &value, crate::maps::UpdateMode::Any)?;
        if matches!(def.kind, MapKind::Rodata | MapKind::Kconfig) {
            map.freeze()?;
        }
    }
    Ok(())
}

/// The running kernel's configuration: `path`, else `/proc/config.gz`, else
/// `/boot/config-$(uname -r)`; gzip is recognised by its magic.
///
/// # Errors
/// [`Error::Io`] naming every place looked at when none can be read.
pub fn read_kernel_config(path: Option<&std::path::Path>) -> Result<String> {
    let release = rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned();
    let candidates: Vec<PathBuf> = match path {
        Some(p) => vec![p.to_path_buf()],
        None => vec![
            PathBuf::from("/proc/config.gz"),
            PathBuf::from(format!("/boot/config-{release}")),
        ],
    };
    let mut last = None;
    for c in &candidates {
        match std::fs::read(c) {
            Ok(bytes) => return Ok(String::from_utf8_lossy(&gunzip(&bytes, c)?).into_owned()),
            Err(e) => last = Some((c.clone(), e)),
        }
    }
    let (p, source) = last.unwrap_or_else(|| (PathBuf::new(), std::io::ErrorKind::NotFound.into()));
    Err(Error::Io {
        path: format!(
            "kernel configuration for .kconfig externs (tried {})",
            candidates
                .iter()
                .map(|c| c.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ) + &format!("; last: {}", p.display()),
        source,
    })
}

/// `bytes` decompressed if gzip (RFC 1952), else as is.
fn gunzip(bytes: &[u8], path: &std::path::Path) -> Result<Vec<u8>> {
    if bytes.get(..2) != Some(&[0x1f, 0x8b][..]) {
        return Ok(bytes.to_vec());
    }
    let bad = |what: &str| Error::Io {
        path: path.display().to_string(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned()),
    };
    let flags = *bytes.get(3).ok_or_else(|| bad("truncated gzip header"))?;
    let mut at = 10usize;
    if flags & 4 != 0 {
        let xlen = bytes
            .get(at..at + 2)
            .and_then(|b| <[u8; 2]>::try_from(b).ok())
            .map(|b| usize::from(u16::from_le_bytes(b)))
            .ok_or_else(|| bad("truncated gzip extra field"))?;
        at += 2 + xlen;
    }
    for flag in [8u8, 16] {
        if flags & flag != 0 {
            let rest = bytes
                .get(at..)
                .ok_or_else(|| bad("truncated gzip header"))?;
            at += rest
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| bad("unterminated gzip name"))?
                + 1;
        }
    }
    if flags & 2 != 0 {
        at += 2;
    }
    let body = bytes
        .get(at..)
        .ok_or_else(|| bad("truncated gzip stream"))?;
    miniz_oxide::inflate::decompress_to_vec(body).map_err(|_| bad("corrupt gzip stream"))
}

/// The `.kconfig` map's value: each extern from `config` (`CONFIG_X=y|m|n|"str"|number`)
/// or, for `LINUX_KERNEL_VERSION`, the running kernel's version; `size` bytes.
///
/// # Errors
/// [`Error::Usage`] naming the extern when a non-weak one is missing, has a value its
/// type cannot hold, or is no Kconfig name libbpf knows.
pub fn kconfig_value(externs: &[KconfigExtern<'_>], size: u32, config: &str) -> Result<Vec<u8>> {
    let mut out = vec![0u8; size as usize];
    for e in externs {
        let bad = |why: &str| Error::Usage {
            what: format!("extern '{}' (.kconfig): {why}", e.name),
        };
        let value: Option<String> = if e.name == "LINUX_KERNEL_VERSION" {
            running_kernel_version().map(|v| v.to_string())
        } else if e.name == "LINUX_HAS_SYSCALL_WRAPPER" || e.name == "LINUX_HAS_BPF_COOKIE" {
            // Every kernel sluice runs on (5.15 and later on x86_64/arm64) has both.
            Some("y".into())
        } else if e.name.starts_with("CONFIG_") {
            config.lines().find_map(|l| {
                l.strip_prefix(e.name)
                    .and_then(|r| r.strip_prefix('='))
                    .map(str::to_owned)
            })
        } else {
            return Err(bad("not a CONFIG_ name nor one libbpf provides"));
        };
        let Some(value) = value else {
            if e.weak {
                continue;
            }
            return Err(bad(
                "not set in the kernel configuration (declare it __weak to default to 0)",
            ));
        };
        let at = e.offset as usize;
        let slot = out
            .get_mut(at..at + e.size as usize)
            .ok_or_else(|| bad("outside the .kconfig map"))?;
        write_kconfig(slot, e.kind, &value)
            .map_err(|why| bad(&format!("value '{value}': {why}")))?;
    }
    Ok(out)
}

fn write_kconfig(
    slot: &mut [u8],
    kind: KconfigKind,
    value: &str,
) -> std::result::Result<(), &'static str> {
    let tri = match value {
        "y" => Some(b'y'),
        "m" => Some(b'm'),
        "n" => Some(b'n'),
        _ => None,
    };
    match (kind, tri) {
        (KconfigKind::Bool, Some(b'm')) => return Err("m for a bool"),
        (KconfigKind::Bool, Some(c)) => slot.fill(u8::from(c == b'y')),
        (KconfigKind::Tristate, Some(c)) => {
            let v: u32 = match c {
                b'y' => 1,
                b'm' => 2,
                _ => 0,
            };
            let b = v.to_ne_bytes();
            let n = slot.len().min(4);
            if let (Some(d), Some(s)) = (slot.get_mut(..n), b.get(..n)) {
                d.copy_from_slice(s);
            }
        }
        (KconfigKind::Char, Some(c)) => slot.fill(c),
        (KconfigKind::CharArray, _) => {
            let s = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .ok_or("not a string")?;
            let n = s.len().min(slot.len().saturating_sub(1));
            if let (Some(d), Some(src)) = (slot.get_mut(..n), s.as_bytes().get(..n)) {
                d.copy_from_slice(src);
            }
        }
        (KconfigKind::Int { .. } | KconfigKind::Char, None) => {
            let signed = matches!(kind, KconfigKind::Int { signed: true });
            let v: i128 = if let Some(h) = value.strip_prefix("0x") {
                i128::from_str_radix(h, 16).map_err(|_| "not a number")?
            } else {
                value.parse::<i128>().map_err(|_| "not a number")?
            };
            let bits = slot.len() * 8;
            let fits = if signed {
                v >= -(1i128 << (bits - 1)) && v < (1i128 << (bits - 1))
            } else {
                v >= 0 && v < (1i128 << bits)
            };
            if !fits {
                return Err("does not fit the extern's type");
            }
            let b = (v as u64).to_ne_bytes();
            let n = slot.len();
            #[cfg(target_endian = "little")]
            let src = b.get(..n);
            #[cfg(target_endian = "big")]
            let src = b.get(8 - n..);
            if let Some(src) = src {
                slot.copy_from_slice(src);
            }
        }
        _ => return Err("the extern's type cannot hold it"),
    }
    Ok(())
}

fn program_name<'a>(p: &Program<'a>) -> &'a str {
    p.name.unwrap_or(p.section_name)
}

/// The CO-RE target: the BTF bytes and its type index, parsed on use.
struct Target {
    bytes: Vec<u8>,
    index: Vec<u32>,
}

fn read_target(path: &std::path::Path) -> Result<Target> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.display().to_string(),
        source,
    })?;
    let n = Btf::count_types(&bytes).map_err(|e| Error::Usage {
        what: format!("target BTF {}: {e}", path.display()),
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
/// missing kernel configuration or target BTF.
pub fn load(obj: &Object<'_, '_>, opts: &LoadOptions) -> Result<LoadedObject> {
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
            Some(kconfig_value(&kconfig, m.value_size, &config)?)
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
    let btf_fd = match crate::btf::fixup(obj, &kconfig) {
        Ok(Some(mut bytes)) => {
            let sanitised = crate::btf::sanitize(&mut bytes, &crate::btf::Features::probe());
            match sanitised.and_then(|_| crate::btf::load(&bytes)) {
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
    let map_btf = MapBtf {
        fd: btf_fd.as_ref().map(AsFd::as_fd),
        local: local.as_ref(),
    };
    let maps = create_maps(obj.maps(), object_name, &map_btf)?;
    init_data_maps(obj.maps(), &maps, kconfig_value.as_deref())?;
    let map_fds: Vec<i32> = maps.iter().map(|m| m.as_fd().as_raw_fd()).collect();
    // CO-RE: the target BTF is read only when some relocation needs it.
    let has_core = ext
        .as_ref()
        .is_some_and(|e| e.core_relos().next().is_some());
    let mut target = match has_core {
        true => Some(read_target(
            opts.target_btf
                .as_deref()
                .unwrap_or(std::path::Path::new(crate::btf::VMLINUX_BTF)),
        )?),
        false => None,
    };
    let mut scratch: Vec<u32>;
    let target_btf = match target.as_mut() {
        Some(t) => Some(
            Btf::parse(&t.bytes, &mut t.index).map_err(|e| Error::Usage {
                what: format!("target BTF: {e}"),
            })?,
        ),
        None => None,
    };
    let cands = match target_btf {
        Some(t) => {
            scratch = vec![0u32; CandidateIndex::required_len(&t)];
            Some(
                CandidateIndex::new(t, &mut scratch).map_err(|e| Error::Usage {
                    what: format!("target BTF: {e}"),
                })?,
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
    let mut programs = Vec::with_capacity(obj.programs().len());
    for (index, p) in obj.programs().iter().enumerate() {
        if p.is_subprogram() {
            continue;
        }
        // One program per DWARF site (inlined instances), each with its own prologue.
        for (prologue, site) in variants(p, index, opts)? {
            let loaded = load_one(obj, index, &prologue, &shared)?;
            programs.push(LoadedProgram { site, ..loaded });
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

/// The prologues program `index` (`p`) is loaded with, each with the DWARF site it was
/// built for: the one given in [`LoadOptions::prologues`], else one per site of a spec whose
/// arguments name variables (an inlined function has several), else [`prologue_for`]'s.
fn variants(
    p: &Program<'_>,
    index: usize,
    opts: &LoadOptions,
) -> Result<Vec<(Vec<Insn>, Option<crate::debuginfo::Site>)>> {
    if let Some(given) = opts.prologues.get(index).filter(|g| !g.is_empty()) {
        return Ok(vec![(given.clone(), None)]);
    }
    let spec_text = program_spec(p, index, opts);
    let dwarf = parse_probe(p, spec_text)?
        .is_some_and(|spec| crate::debuginfo::spec_needs_debug_info(&spec));
    if !dwarf {
        return Ok(vec![(prologue_for(p, index, opts)?, None)]);
    }
    let sites = site_prologues(p, index, opts)?;
    if sites.is_empty() {
        return Err(Error::Usage {
            what: format!(
                "program '{}' (spec '{spec_text}'): no probe site in the debug info",
                p.name.unwrap_or("?")
            ),
        });
    }
    if sites.len() > 1 {
        log::info!(
            "program '{}' ({spec_text}): {} sites (inlined instances): one program each",
            p.name.unwrap_or("?"),
            sites.len()
        );
    }
    Ok(sites
        .into_iter()
        .map(|s| (s.prologue.clone(), Some(s)))
        .collect())
}

/// Relocates program `index` of `obj` behind `prologue` and loads it (`site`: none yet).
fn load_one(
    obj: &Object<'_, '_>,
    index: usize,
    prologue: &[Insn],
    sh: &Shared<'_, '_>,
) -> Result<LoadedProgram> {
    let (opts, license, kern_version) = (sh.opts, sh.license, sh.kern_version);
    let p = obj.programs().get(index).ok_or_else(|| Error::Usage {
        what: format!("no program #{index}"),
    })?;
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
        poisoned =
            crate::btf::apply_core(obj, ext, &resolver, &layout, prologue.len(), &mut insns)?;
        for x in &poisoned {
            log::debug!("{}: instruction {} poisoned", x.what, x.insn);
        }
    }
    let info = match sh.ext {
        Some(ext) if sh.btf_fd.is_some() => crate::btf::ext_info(obj, ext, &layout, prologue.len()),
        _ => crate::btf::ExtInfo::default(),
    };
    let prog_type = opts
        .prog_type
        .or_else(|| section_prog_type(program_spec(p, index, opts)))
        .unwrap_or(opts.default_prog_type);
    let req = ProgramLoad {
        name,
        prog_type,
        insns: &insns,
        license,
        kern_version,
    };
    let btf = sh.btf_fd.map(|fd| ProgBtf {
        fd,
        func_info: &info.func_info,
        line_info: &info.line_info,
    });
    let fd = match load_program_btf(&req, btf, opts.log_level, opts.log_size) {
        Ok(fd) => fd,
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
        Err(e) => return Err(e),
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
        spec: program_spec(p, index, opts).into(),
        prog_type,
        insns,
        ext: info,
        site: None,
        fd,
    })
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

    #[test]
    fn kernel_releases() {
        let rows = [
            ("6.18.44-fc-v657", Some(0x06122c)),
            ("4.9.337", Some(0x0409ff)),
            ("5.15.0-91-generic", Some(0x050f00)),
            ("6.1", Some(0x060100)),
            ("3.10.0-1160.el7.x86_64", Some(0x030a00)),
            ("6.8.0-rc3", Some(0x060800)),
            ("garbage", None),
            ("", None),
            ("6", None),
        ];
        for (r, v) in rows {
            assert_eq!(parse_kernel_release(r), v, "{r}");
        }
    }

    #[test]
    fn section_types() {
        let rows = [
            ("kprobe/vfs_read", Some(2)),
            ("kretprobe/vfs_read", Some(2)),
            ("uprobe/bin/ls:main", Some(2)),
            ("tracepoint/syscalls/sys_enter_write", Some(5)),
            ("tp/sched/sched_switch", Some(5)),
            ("func=sys_write", Some(2)), // the seed's perf form is a kprobe
            ("sys_write", None),
        ];
        for (s, t) in rows {
            assert_eq!(section_prog_type(s), t, "{s}");
        }
    }

    #[test]
    fn running_kernel_parses() {
        assert!(running_kernel_version().unwrap() >= 0x030000);
    }
}

/// The program-load errno paths on the syscall fake ([`crate::sys::fake`]): no kernel.
#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests_fake {
    use super::*;
    use crate::sys::fake::{self, Call, Cmd, Reply, Seen};
    use sluice_core::perf::abi::ProgLoadAttr;
    use std::cell::RefCell;
    use std::rc::Rc;

    const INSNS: [Insn; 2] = [Insn::mov64_imm(0, 0), Insn::exit()];

    fn program(prog_type: u32) -> ProgramLoad<'static> {
        ProgramLoad {
            name: "probe",
            prog_type,
            insns: &INSNS,
            license: "GPL",
            kern_version: 0,
        }
    }

    /// A verifier log of `n` bytes, lines numbered so a cut shows.
    fn long_log(n: usize) -> Vec<u8> {
        let mut log = Vec::with_capacity(n + 16);
        let mut i = 0;
        while log.len() < n {
            log.extend_from_slice(format!("{i}: R0=scalar() R1=ctx()\n").as_bytes());
            i += 1;
        }
        log.truncate(n);
        log
    }

    /// The PROG_LOAD attrs the fake saw, in order.
    type Loads = Rc<RefCell<Vec<ProgLoadAttr>>>;

    /// Installs a fake answering each PROG_LOAD with `answer(n, call)` (n counts from 0),
    /// and records the attrs.
    fn fake_loads(
        mut answer: impl FnMut(usize, &mut fake::Bpf<'_>) -> Result<Reply, Errno> + 'static,
    ) -> (fake::Fake, Loads) {
        let loads: Loads = Rc::default();
        let seen = Rc::clone(&loads);
        let f = fake::install(move |call| match call {
            Call::Bpf(mut b) if b.cmd == Cmd::ProgLoad => {
                let n = seen.borrow().len();
                seen.borrow_mut().push(b.prog_load().unwrap());
                answer(n, &mut b)
            }
            other => panic!("unexpected {other:?}"),
        });
        (f, loads)
    }

    #[test]
    fn eperm_is_a_permission_error() {
        let (fake, loads) = fake_loads(|_, _| Err(Errno::PERM));
        let e = load_program(&program(prog_type::KPROBE), 1, DEFAULT_LOG_SIZE).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Permission {
                    call: "bpf(BPF_PROG_LOAD)",
                    errno: Errno::PERM,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("CAP_BPF"), "{e}");
        // The fast path without a log, then once more with one to explain the refusal.
        assert_eq!(fake.seen(), [Seen::Bpf(Cmd::ProgLoad); 2]);
        let loads = loads.borrow();
        assert_eq!(
            (loads[0].log_level, loads[0].log_size, loads[0].log_buf),
            (0, 0, 0)
        );
        assert_eq!(loads[1].log_level, 1);
        assert_eq!(loads[1].log_size as usize, DEFAULT_LOG_SIZE);
        assert_eq!(
            (loads[1].prog_type, loads[1].insn_cnt),
            (prog_type::KPROBE, 2)
        );
        assert_eq!(&loads[1].prog_name[..6], b"probe\0");
    }

    /// No `bpf()` at all (before 3.18, or under qemu-user): unsupported, not retried.
    #[test]
    fn enosys_is_unsupported() {
        let (fake, _) = fake_loads(|_, _| Err(Errno::NOSYS));
        let e = load_program(&program(prog_type::KPROBE), 1, DEFAULT_LOG_SIZE).unwrap_err();
        assert!(
            matches!(
                &e,
                Error::Unsupported { feature, min_kernel: "3.18", errno: Errno::NOSYS }
                    if feature == "bpf() system call"
            ),
            "{e:?}"
        );
        assert_eq!(fake.count(), 1);
    }

    /// `EINVAL` without a log for a program type: unsupported when the running kernel is
    /// older than the type, else the verifier's plain refusal (empty log). Both
    /// expectations are computed from the host's release, so the test holds on any kernel;
    /// a type the table does not know is always the plain refusal.
    #[test]
    fn einval_on_an_older_kernel_is_unsupported() {
        let running = running_kernel_version();
        for t in [
            prog_type::SOCKET_FILTER,
            prog_type::KPROBE,
            prog_type::TRACEPOINT,
            32,
        ] {
            let min = prog_type::min_kernel(t).unwrap();
            let older = running.is_none_or(|r| r < parse_kernel_release(min).unwrap());
            let (fake, _) = fake_loads(|_, _| Err(Errno::INVAL));
            let e = load_program(&program(t), 1, DEFAULT_LOG_SIZE).unwrap_err();
            drop(fake);
            if older {
                assert!(
                    matches!(&e, Error::Unsupported { feature, min_kernel, errno: Errno::INVAL }
                        if *feature == format!("program type {t}") && *min_kernel == min),
                    "{t}: {e:?}"
                );
            } else {
                assert!(
                    matches!(&e, Error::Verifier { program, errno: Errno::INVAL, log }
                        if program == "probe" && log.is_empty()),
                    "{t}: {e:?}"
                );
            }
        }
        // Unknown to the table: never "unsupported", whatever the kernel.
        let (fake, _) = fake_loads(|_, _| Err(Errno::INVAL));
        let e = load_program(&program(999), 1, DEFAULT_LOG_SIZE).unwrap_err();
        drop(fake);
        assert!(
            matches!(e, Error::Verifier { errno: Errno::INVAL, ref log, .. } if log.is_empty()),
            "{e:?}"
        );
        // With a log, EINVAL is the verifier's refusal even for the newest type.
        let (_fake, _) = fake_loads(|_, b| {
            let _ = b.write_log(b"unknown func bpf_foo#999\n");
            Err(Errno::INVAL)
        });
        let e = load_program(&program(32), 1, DEFAULT_LOG_SIZE).unwrap_err();
        assert_eq!(e.verifier_log(), Some(&b"unknown func bpf_foo#999\n"[..]));
    }

    /// A log too small: the kernel fills it, says `ENOSPC` and (6.4+) the size it needed;
    /// the loader retries once at that size and returns the whole log.
    #[test]
    fn enospc_retries_at_the_size_the_kernel_reports() {
        let log = long_log(5000);
        let full = log.clone();
        let (fake, loads) = fake_loads(move |_, b| {
            if b.write_log(&log) {
                Err(Errno::ACCESS)
            } else {
                Err(Errno::NOSPC)
            }
        });
        let e = load_program_with_log(&program(prog_type::KPROBE), 2, 300).unwrap_err();
        match &e {
            Error::Verifier {
                program,
                errno,
                log,
            } => {
                assert_eq!((program.as_str(), *errno), ("probe", Errno::ACCESS));
                assert_eq!(log, &full);
            }
            other => panic!("{other:?}"),
        }
        let sizes: Vec<(u32, u32)> = loads
            .borrow()
            .iter()
            .map(|a| (a.log_level, a.log_size))
            .collect();
        assert_eq!(sizes, [(2, 300), (2, 5001)]);
        assert_eq!(fake.count(), 2);
    }

    /// Before 6.4 the kernel reports no size: the buffer doubles until the log fits, and a
    /// load that then succeeds returns its fd and log.
    #[test]
    fn enospc_doubles_without_log_true_size() {
        let log = long_log(2000);
        let full = log.clone();
        let (_fake, loads) = fake_loads(move |_, b| {
            let fits = b.write_log(&log);
            b.set_log_true_size(0);
            if fits {
                Ok(fake::fd())
            } else {
                Err(Errno::NOSPC)
            }
        });
        let (fd, got) = load_program_with_log(&program(prog_type::KPROBE), 1, 100).unwrap();
        assert_eq!(got, full);
        drop(fd);
        let sizes: Vec<u32> = loads.borrow().iter().map(|a| a.log_size).collect();
        // 100 is raised to the 256-byte floor first.
        assert_eq!(sizes, [256, 512, 1024, 2048]);
    }

    /// The growth stops at MAX_LOG_SIZE: a log that never fits ends as the verifier error
    /// with what the last buffer held.
    #[test]
    fn enospc_stops_at_the_largest_buffer() {
        let (_fake, loads) = fake_loads(|_, b| {
            let _ = b.write_log(b"0: x\n");
            b.set_log_true_size(u32::MAX);
            Err(Errno::NOSPC)
        });
        let e =
            load_program_with_log(&program(prog_type::KPROBE), 1, MAX_LOG_SIZE / 2).unwrap_err();
        assert!(
            matches!(
                e,
                Error::Verifier {
                    errno: Errno::NOSPC,
                    ..
                }
            ),
            "{e:?}"
        );
        let sizes: Vec<usize> = loads.borrow().iter().map(|a| a.log_size as usize).collect();
        assert_eq!(sizes, [MAX_LOG_SIZE / 2, MAX_LOG_SIZE]);
    }

    /// The whole fallback of [`load_program`]: no log, then a log that is too small, then
    /// the full log in the error.
    #[test]
    fn load_program_falls_back_to_a_growing_log() {
        let log = long_log(DEFAULT_LOG_SIZE + 10);
        let full = log.clone();
        let (fake, loads) = fake_loads(move |n, b| {
            if n == 0 {
                return Err(Errno::ACCESS);
            }
            if b.write_log(&log) {
                Err(Errno::ACCESS)
            } else {
                Err(Errno::NOSPC)
            }
        });
        let e = load_program(&program(prog_type::KPROBE), 1, DEFAULT_LOG_SIZE).unwrap_err();
        assert_eq!(e.verifier_log(), Some(&full[..]));
        let sizes: Vec<usize> = loads.borrow().iter().map(|a| a.log_size as usize).collect();
        assert_eq!(sizes, [0, DEFAULT_LOG_SIZE, DEFAULT_LOG_SIZE + 11]);
        assert_eq!(fake.count(), 3);
    }

    /// Kernels before 4.15 refuse a program name with E2BIG: loaded again without one.
    #[test]
    fn e2big_retries_without_a_name() {
        let (_fake, loads) = fake_loads(|n, _| {
            if n == 0 {
                Err(Errno::TOOBIG)
            } else {
                Ok(fake::fd())
            }
        });
        let fd = load_program(&program(prog_type::KPROBE), 1, DEFAULT_LOG_SIZE).unwrap();
        drop(fd);
        let names: Vec<[u8; 16]> = loads.borrow().iter().map(|a| a.prog_name).collect();
        assert_eq!(&names[0][..6], b"probe\0");
        assert_eq!(names[1], [0; 16]);
    }

    #[test]
    fn prog_info_reads_what_the_kernel_wrote() {
        let _fake = fake::install(|call| match call {
            Call::Bpf(mut b) if b.cmd == Cmd::ObjGetInfoByFd => {
                let mut name = [0u8; 16];
                name[..5].copy_from_slice(b"probe");
                b.write_info(&ProgInfoRaw {
                    id: 7,
                    prog_type: prog_type::KPROBE,
                    tag: [0xab; BPF_TAG_SIZE],
                    xlated_prog_len: 16,
                    name,
                    ..ProgInfoRaw::default()
                });
                Ok(Reply::Value(0))
            }
            other => panic!("unexpected {other:?}"),
        });
        let f = std::fs::File::open("/dev/null").unwrap();
        let info = prog_info(f.as_fd()).unwrap();
        assert_eq!(
            (info.id, info.xlated_insns, info.name.as_str()),
            (7, 2, "probe")
        );
        assert_eq!(info.tag_hex(), "abababababababab");
    }

    /// `EINVAL` from `BPF_OBJ_GET_INFO_BY_FD` on a kernel with it is a plain error.
    #[test]
    fn prog_info_einval_names_the_call() {
        let _fake = fake::install(|_| Err(Errno::INVAL));
        let f = std::fs::File::open("/dev/null").unwrap();
        let e = prog_info(f.as_fd()).unwrap_err();
        if running_kernel_version().is_some_and(|r| r >= 0x040d00) {
            assert!(
                matches!(
                    e,
                    Error::Syscall {
                        call: "bpf(BPF_OBJ_GET_INFO_BY_FD)",
                        ..
                    }
                ),
                "{e:?}"
            );
        } else {
            assert!(matches!(e, Error::Unsupported { .. }), "{e:?}");
        }
    }
}
