//! Debug info for probes whose arguments name C variables: a probed ELF file (a user binary
//! or library, or `vmlinux`) in, one [`Site`] per probe address out, each with its prologue
//! and the tracefs fetch-args that fetch the same values.
//!
//! ```text
//! target ELF ──DebugInfo::open──► its own DWARF, else the first build-id / .gnu_debuglink
//!                                 candidate that exists (core::dwarf::debug_file_candidates)
//! ProbeSpec ──DebugInfo::sites──► per site (the function, every inlined instance):
//!                                 address, tracefs target, prologue (r2..r5), fetch-args
//! ```
//!
//! Arguments that name variables (`file->f_mapping->a_ops`, `bytes`) are resolved through
//! DWARF at each site's address ([`sluice_core::dwarf::Resolver`]); the others (`%di`,
//! `$arg2`, `$stack1`, `$retval`) come from the calling convention, as without debug info;
//! `$err` keeps its place. Dereferences read kernel memory for kprobes and user memory for
//! uprobes. Errors name the file, the function, and the variable and address involved.
//!
//! A kernel global (`DW_OP_addr`) is at its link-time address in `vmlinux`; a kernel booted
//! with KASLR runs it elsewhere. [`DebugInfo::sites`] keeps link-time addresses (the build
//! host's view: `sluice prologue`); [`DebugInfo::running_sites`] (what `record` loads)
//! moves them by the running kernel's offset ([`crate::kernel::kallsyms`]). The kernel's own
//! fetch-arg names the global by its distance from `_stext` (`@_stext+0x2f83098`), which the
//! kernel resolves itself, so resolved specs carry no address of one boot.

use std::cell::{Cell, OnceCell};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_core::arch::{Arch, Platform};
use sluice_core::dwarf::{
    debug_file_candidates, DebugSections, Error as DwarfError, FetchSyntax, LocBase, ProbeSite,
    Resolver, KERNEL_ANCHOR,
};
use sluice_core::elf::{Elf, ET_REL, SHT_SYMTAB, STT_FUNC};
use sluice_core::probe::{Arg, ArgBase, Args, Place, ProbeKind, ProbeSpec, Target};
use sluice_core::prologue::{self, ArgLoc, ArgLocs, Memory};
use sluice_core::Insn;

use crate::error::{ArgProblem, Error, Result, SiteProblem};
use crate::sys::mmap::Mmap;
use crate::tracefs::ProbeTarget;

/// Whether `arg` needs debug info: it names a variable, or steps through members (which need
/// the types).
#[must_use]
pub fn needs_debug_info(arg: &Arg<'_>) -> bool {
    matches!(arg.base(), ArgBase::Var(_)) || !arg.steps().is_empty()
}

/// Whether `spec` needs debug info: its place is a line (`FUNC:LINE`), or an argument
/// needs it ([`needs_debug_info`]).
#[must_use]
pub fn spec_needs_debug_info(spec: &ProbeSpec<'_>) -> bool {
    matches!(spec.place(), Place::Line(_)) || spec.args().exprs().iter().any(needs_debug_info)
}

/// One place to attach a probe of a spec, with everything a program there needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The function probed (for an inlined instance: the inlined function).
    pub function: String,
    /// The link-time address.
    pub address: u64,
    /// The file offset of the address, when it lies in a section with file contents.
    pub file_offset: Option<u64>,
    /// Whether this is an inlined instance.
    pub inlined: bool,
    /// Where tracefs puts the probe: the file and file offset (uprobes), or the kernel
    /// symbol holding the address and the offset into it (kprobes).
    pub target: ProbeTarget,
    /// The instructions that fetch the arguments into r2..r5 (see [`sluice_core::prologue`]).
    pub prologue: Vec<Insn>,
    /// `NAME=FETCHARG` per fetched argument (`$err` has none), as `uprobe_events` /
    /// `kprobe_events` take them: the kernel's own fetch of the same values.
    pub fetch_args: Vec<String>,
    /// The same fetch-args as `perf probe -n -v` spells them (`:x64` for unsigned values,
    /// `@sym+off` for globals), for comparison with perf.
    pub perf_fetch_args: Vec<String>,
}

/// A probed ELF file and the file its DWARF was found in (the same one, or a separate debug
/// file), both mapped read-only ([`Mmap`]): a lookup reads only the pages it needs, and
/// drops those of `.debug_info` it only grepped ([`Resolver::with_release`]).
#[derive(Debug)]
pub struct DebugInfo {
    code_path: PathBuf,
    code: Mmap,
    debug_path: PathBuf,
    /// `None`: the DWARF is in `code`.
    debug: Option<Mmap>,
    /// The kernel a uprobe's prologue is for; `None`: the running kernel.
    kernel: Option<Arch>,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.display().to_string(),
        source,
    }
}

impl DebugInfo {
    /// Opens `target` and finds its DWARF: in `debug` when given, else in `target` itself,
    /// else in the first of its build-id / `.gnu_debuglink` candidates under
    /// [`sluice_core::dwarf::DEBUG_DIR`] and beside it that exists and has `.debug_info`.
    ///
    /// # Errors
    /// [`Error::Io`] when a file cannot be read; [`Error::NotElf`] naming the file when it is
    /// no ELF file, [`Error::NoDebugSections`] when a given debug file has no usable DWARF,
    /// [`Error::NoDebugInfo`] when no debug info was found (with the candidates tried).
    pub fn open(target: &Path, debug: Option<&Path>) -> Result<DebugInfo> {
        let code = Mmap::open(target).map_err(io(target))?;
        let elf = Elf::parse(code.bytes()).map_err(|source| Error::NotElf {
            path: target.display().to_string(),
            source,
        })?;
        if let Some(d) = debug {
            let bytes = Mmap::open(d).map_err(io(d))?;
            let delf = Elf::parse(bytes.bytes()).map_err(|source| Error::NotElf {
                path: d.display().to_string(),
                source,
            })?;
            DebugSections::load(&delf).map_err(|source| Error::NoDebugSections {
                path: d.display().to_string(),
                source,
            })?;
            return Ok(DebugInfo {
                code_path: target.to_path_buf(),
                debug_path: d.to_path_buf(),
                code,
                debug: Some(bytes),
                kernel: None,
            });
        }
        // Cheap: finds the sections, inflates none.
        if DebugSections::load(&elf).is_ok() {
            return Ok(DebugInfo {
                code_path: target.to_path_buf(),
                debug_path: target.to_path_buf(),
                code,
                debug: None,
                kernel: None,
            });
        }
        let candidates = debug_file_candidates(&elf, &target.to_string_lossy());
        for cand in &candidates {
            let Ok(bytes) = Mmap::open(Path::new(cand)) else {
                continue;
            };
            let usable = Elf::parse(bytes.bytes())
                .ok()
                .is_some_and(|e| DebugSections::load(&e).is_ok());
            if usable {
                log::debug!("debug info of {} found in {cand}", target.display());
                return Ok(DebugInfo {
                    code_path: target.to_path_buf(),
                    debug_path: PathBuf::from(cand),
                    code,
                    debug: Some(bytes),
                    kernel: None,
                });
            }
        }
        Err(Error::NoDebugInfo {
            path: target.display().to_string(),
            candidates,
        })
    }

    /// The same, with uprobe prologues for a kernel of architecture `kernel` rather than
    /// the running kernel's (`sluice prologue --arch`). A kprobe's kernel is the file's own.
    #[must_use]
    pub fn for_kernel(mut self, kernel: Arch) -> Self {
        self.kernel = Some(kernel);
        self
    }

    /// The probed file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.code_path
    }

    /// The file the DWARF was read from.
    #[must_use]
    pub fn debug_path(&self) -> &Path {
        &self.debug_path
    }

    /// The architecture of the probed file, when sluice has tables for its ELF machine.
    #[must_use]
    pub fn arch(&self) -> Option<Arch> {
        let elf = Elf::parse(self.code.bytes()).ok()?;
        Arch::from_machine(elf.header().machine)
    }

    /// Every site of `spec`, each with its prologue for `spec`'s argument list and its
    /// fetch-args.
    ///
    /// # Errors
    /// [`Error::Dwarf`] / [`Error::Site`] naming the file, function and (where it applies) the
    /// variable and address: the function is not in the debug info, a variable is not
    /// visible or not available at a site, a member chain does not fit the types, or the
    /// prologue's capacity is exceeded (strings and values past r5 are only recorded); [`Error::NoFunction`] / [`Error::DebugFile`] when the spec has no function
    /// or is a tracepoint.
    pub fn sites(&self, spec: &ProbeSpec<'_>) -> Result<Vec<Site>> {
        self.sites_for(spec, Kernel::LinkTime)
    }

    /// [`DebugInfo::sites`] for the running kernel: a kprobe's prologue reads kernel globals
    /// at their link-time address moved by the running kernel's KASLR offset (computed once,
    /// only when a global is read: [`crate::kernel::kallsyms::kaslr_offset`] of this file's and
    /// `/proc/kallsyms`' [`crate::kernel::kallsyms::KERNEL_SYMBOLS`]). Uprobes are as in
    /// [`DebugInfo::sites`].
    ///
    /// # Errors
    /// As [`DebugInfo::sites`]; [`Error::Site`] ([`SiteProblem::KernelGlobal`]) when a kprobe
    /// reads a global and the offset is unknown: `/proc/kallsyms` hides addresses or lacks a
    /// symbol, or this file is not the running kernel's `vmlinux` (the symbols disagree), or
    /// the file is a module.
    pub fn running_sites(&self, spec: &ProbeSpec<'_>) -> Result<Vec<Site>> {
        self.sites_for(spec, Kernel::Running(OnceCell::new()))
    }

    fn sites_for(&self, spec: &ProbeSpec<'_>, kernel: Kernel) -> Result<Vec<Site>> {
        self.with_resolver(spec, kernel, |ctx, func, dwarf_args| {
            let resolved = by_name_or_alias(&ctx.code, func, |name| {
                ctx.resolver.resolve(name, spec.place(), dwarf_args)
            })
            .map_err(|e| ctx.dwarf(func, e))?;
            resolved.iter().map(|site| ctx.site(spec, site)).collect()
        })
    }

    /// Every line of `spec`'s function with code, relative to its declaration (as
    /// `FUNC:LINE` counts), each with the sites of `spec`'s arguments at that line or why
    /// they cannot be fetched there: where a probe can see its variables, found with one
    /// lookup of the function. `spec`'s own place is ignored.
    ///
    /// # Errors
    /// As [`DebugInfo::sites`] for what concerns the whole function (not found, no debug
    /// info); per line, the error [`DebugInfo::sites`] would give for `FUNC:LINE`.
    #[allow(clippy::type_complexity)]
    pub fn lines(&self, spec: &ProbeSpec<'_>) -> Result<Vec<(u32, Result<Vec<Site>>)>> {
        self.with_resolver(spec, Kernel::LinkTime, |ctx, func, dwarf_args| {
            let scan = by_name_or_alias(&ctx.code, func, |name| {
                ctx.resolver.resolve_lines(name, dwarf_args)
            })
            .map_err(|e| ctx.dwarf(func, e))?;
            Ok(scan
                .into_iter()
                .map(|(line, found)| {
                    let sites = found
                        .map_err(|e| ctx.dwarf(func, e))
                        .and_then(|v| v.iter().map(|site| ctx.site(spec, site)).collect());
                    (line, sites)
                })
                .collect())
        })
    }

    /// Runs `f` with a resolver over this file's DWARF, `spec`'s function and the arguments
    /// that need debug info.
    fn with_resolver<T>(
        &self,
        spec: &ProbeSpec<'_>,
        kernel: Kernel,
        f: impl FnOnce(&Ctx<'_, '_>, &str, &[Arg<'_>]) -> Result<T>,
    ) -> Result<T> {
        let file = self.code_path.display().to_string();
        let func = spec
            .func()
            .ok_or_else(|| Error::NoFunction { path: file.clone() })?;
        let ctx = |source| Error::DebugFile {
            path: file.clone(),
            func: func.to_owned(),
            source,
        };
        let memory = Memory::of(spec.kind()).map_err(ctx)?;
        let code = Elf::parse(self.code.bytes()).map_err(ctx)?;
        let debug_elf = match &self.debug {
            Some(b) => Elf::parse(b.bytes()).map_err(ctx)?,
            None => code,
        };
        let sections = DebugSections::load(&debug_elf).map_err(|source| Error::Dwarf {
            path: self.debug_path.display().to_string(),
            func: func.to_owned(),
            source,
        })?;
        let map = self.debug.as_ref().unwrap_or(&self.code);
        let release = |part: &[u8]| {
            map.release(part);
        };
        let resolver = Resolver::new(&code, &sections)
            .map_err(|source| Error::Dwarf {
                path: file.clone(),
                func: func.to_owned(),
                source,
            })?
            .with_release(&release);
        // A kprobe's file is the kernel; a uprobe's binary runs under the running kernel (or
        // the one asked for), whose pt_regs its registers and stack pointer are read from.
        let code_arch = resolver.arch();
        let platform = match memory {
            Memory::Kernel => Platform::from(code_arch),
            Memory::User => {
                let kernel = self
                    .kernel
                    .or_else(crate::kernel::arch::running_kernel_arch)
                    .unwrap_or(code_arch);
                Platform::new(kernel, code_arch).ok_or_else(|| Error::ForeignBinary {
                    path: file.clone(),
                    machine: code.header().machine,
                    kernel,
                })?
            }
        };
        let dwarf_args: Vec<Arg<'_>> = spec
            .args()
            .exprs()
            .iter()
            .filter(|a| needs_debug_info(a))
            .cloned()
            .collect();
        let c = Ctx {
            file: &self.code_path,
            resolver: &resolver,
            platform,
            memory,
            code,
            lookups: Cell::new(0),
            kernel_syms: OnceCell::new(),
            kernel,
        };
        f(&c, func, &dwarf_args)
    }
}

/// `resolve(func)`, and when the debug info has no function of that name, `resolve` of each
/// other name the ELF symbol tables give the same address: users type a library's public
/// alias (`fwrite`), DWARF names the definition (`_IO_fwrite`).
fn by_name_or_alias<T>(
    code: &Elf<'_>,
    func: &str,
    mut resolve: impl FnMut(&str) -> std::result::Result<T, sluice_core::dwarf::Error>,
) -> std::result::Result<T, sluice_core::dwarf::Error> {
    match resolve(func) {
        Err(e @ sluice_core::dwarf::Error::FunctionNotFound(_)) => {
            for alias in aliases(code, func) {
                if let Ok(found) = resolve(alias) {
                    return Ok(found);
                }
            }
            Err(e)
        }
        other => other,
    }
}

/// The other defined function names at the address of function symbol `func`, from
/// `.symtab` and `.dynsym`.
fn aliases<'s>(code: &Elf<'s>, func: &str) -> Vec<&'s str> {
    let tables: Vec<_> = code
        .sections()
        .filter_map(|(i, sh)| match sh.sh_type {
            SHT_SYMTAB => code.symbol_table(i).ok(),
            sluice_core::elf::SHT_DYNSYM => code.dynamic_symbol_table(i).ok(),
            _ => None,
        })
        .collect();
    let defined = |s: &sluice_core::elf::Symbol| s.kind() == STT_FUNC && s.shndx != 0;
    let Some(addr) = tables.iter().find_map(|t| {
        t.iter()
            .find(|(_, s)| defined(s) && t.name(s) == Some(func))
            .map(|(_, s)| s.value)
    }) else {
        return Vec::new();
    };
    let mut out: Vec<&'s str> = Vec::new();
    for t in &tables {
        for (_, s) in t.iter() {
            if let Some(name) = t.name(&s).filter(|n| *n != func && !n.is_empty()) {
                if defined(&s) && s.value == addr && !out.contains(&name) {
                    out.push(name);
                }
            }
        }
    }
    out
}

/// What turning a resolved [`ProbeSite`] into a [`Site`] needs.
struct Ctx<'r, 's> {
    file: &'r Path,
    resolver: &'r Resolver<'s>,
    /// The kernel's `pt_regs` and the code's ABI.
    platform: Platform,
    memory: Memory,
    /// The probed file, whose `.symtab` names the kernel function holding a site.
    code: Elf<'s>,
    /// Kernel symbol lookups so far: the first few scan the symbol table in place, more
    /// (`--lines` over a long function) sort it once.
    lookups: Cell<usize>,
    kernel_syms: OnceCell<Vec<(u64, u64, &'s str)>>,
    /// Where kernel globals are read.
    kernel: Kernel,
}

/// Where a kprobe's prologue reads the kernel's globals.
enum Kernel {
    /// At their link-time addresses (the `vmlinux` as built: `sluice prologue`).
    LinkTime,
    /// Moved by the running kernel's KASLR offset, computed on first use.
    Running(OnceCell<std::result::Result<i64, Arc<Error>>>),
}

impl Ctx<'_, '_> {
    fn dwarf(&self, func: &str, source: DwarfError) -> Error {
        Error::Dwarf {
            path: self.file.display().to_string(),
            func: func.to_owned(),
            source,
        }
    }

    /// The kernel function symbol holding `address` and the offset into it.
    fn kernel_symbol(&self, address: u64) -> Option<(String, u64)> {
        let n = self.lookups.get();
        self.lookups.set(n.saturating_add(1));
        if n < 8 {
            return containing_symbol(function_symbols(&self.code), address);
        }
        let sorted = self.kernel_syms.get_or_init(|| {
            let mut v: Vec<_> = function_symbols(&self.code).collect();
            v.sort_unstable();
            v
        });
        // The last symbol at or below `address` in (address, size, name) order is the
        // maximum `containing_symbol` picks.
        let i = sorted.partition_point(|s| s.0 <= address).checked_sub(1)?;
        containing_symbol(sorted.get(i).copied().into_iter(), address)
    }

    /// How far the running kernel moved this `vmlinux` (0 at link time).
    fn kaslr_offset(&self) -> std::result::Result<i64, Arc<Error>> {
        let Kernel::Running(cell) = &self.kernel else {
            return Ok(0);
        };
        cell.get_or_init(|| {
            let names = crate::kernel::kallsyms::KERNEL_SYMBOLS;
            let running = crate::kernel::kallsyms::lookup(&names).map_err(Arc::new)?;
            let pairs: Vec<(&str, Option<u64>, Option<u64>)> = names
                .iter()
                .zip(running)
                .map(|(&n, r)| (n, symbol_value(&self.code, n), r))
                .collect();
            let file = self.file.display().to_string();
            let offset = crate::kernel::kallsyms::kaslr_offset(&file, &pairs).map_err(Arc::new)?;
            log::info!("{file}: the running kernel's KASLR offset is {offset:#x}");
            Ok(offset)
        })
        .clone()
    }

    /// One site's target, prologue and fetch-args.
    fn site(&self, spec: &ProbeSpec<'_>, site: &ProbeSite) -> Result<Site> {
        let at = |problem| Error::Site {
            path: self.file.display().to_string(),
            func: spec.func().unwrap_or("?").to_owned(),
            address: site.address,
            problem,
        };
        let target = match spec.target() {
            Target::User { path, .. } => ProbeTarget::User {
                path: PathBuf::from(path),
                offset: site
                    .file_offset
                    .ok_or_else(|| at(SiteProblem::NoFileOffset))?,
                func: site.function.clone(),
            },
            Target::Kernel { .. } => {
                let (sym, off) = self
                    .kernel_symbol(site.address)
                    .ok_or_else(|| at(SiteProblem::NoSymbol))?;
                ProbeTarget::Kernel {
                    func: sym,
                    offset: off,
                }
            }
            _ => return Err(at(SiteProblem::NotProbe)),
        };
        let syntax = match spec.kind() {
            ProbeKind::Uprobe | ProbeKind::Uretprobe => FetchSyntax::Uprobe {
                load_bias: self.resolver.load_bias(site.address).unwrap_or(0),
            },
            // A module has no _stext: its globals are refused below.
            _ => match symbol_value(&self.code, KERNEL_ANCHOR) {
                Some(anchor) => FetchSyntax::KprobeAnchored { anchor },
                None => FetchSyntax::Kprobe,
            },
        };
        let arch = self.platform;
        let exprs = spec.args().exprs();
        // Globals of a PIE or shared library are read relative to the probed address.
        let pic = self.memory == Memory::User && self.resolver.position_independent();
        let kernel = Globals {
            module: self.memory == Memory::Kernel && self.code.header().e_type == ET_REL,
            offset: &|| self.kaslr_offset(),
        };
        let built =
            build_site(arch, self.memory, spec, exprs, site, syntax, pic, &kernel).map_err(at)?;
        Ok(Site {
            function: site.function.clone(),
            address: site.address,
            file_offset: site.file_offset,
            inlined: site.inlined,
            target,
            prologue: built.0,
            fetch_args: built.1,
            perf_fetch_args: built.2,
        })
    }
}

/// `spec` with its place and arguments as resolved at `site`: the probe at the site's
/// symbol and offset (a uprobe at its file offset), every variable replaced by the
/// fetch-arg that reads it there (`a_ops=+144(+216(+8(%sp))):u64`), `$err` kept in place,
/// and the event name and group kept. Such a spec needs no debug info where it is
/// recorded (`sluice record --event PROG=SPEC` on a device without the `vmlinux`), and its
/// prologue and kernel fetch-args are the ones computed here, for this build of the code
/// only.
///
/// # Errors
/// [`Error::Unspellable`] when a fetch-arg has no spelling the spec grammar reads (a uprobe's
/// `@+OFFSET` global), or the result does not parse; [`Error::FewerFetchArgs`].
pub fn resolved_spec(spec: &ProbeSpec<'_>, site: &Site) -> Result<String> {
    let names = crate::probe::unique_arg_names(&site.fetch_args);
    let mut fetched = names.iter();
    let mut args = Vec::new();
    for a in spec.args().exprs() {
        if a.is_err() {
            args.push("$err".to_owned());
        } else {
            let f = fetched.next().ok_or_else(|| Error::FewerFetchArgs {
                spec: spec.to_string(),
                address: site.address,
            })?;
            args.push(f.clone());
        }
    }
    let ret = spec.kind().is_return();
    let text = match (&site.target, spec.event()) {
        (ProbeTarget::Kernel { func, offset }, Some(event)) => {
            let group = spec.group().map_or_else(String::new, |g| format!("{g}:"));
            let place = if ret {
                "%return".to_owned()
            } else {
                format!("+{offset}")
            };
            let mut t = format!("{group}{event}={func}{place}");
            for a in &args {
                t.push(' ');
                t.push_str(a);
            }
            t
        }
        (ProbeTarget::Kernel { func, offset }, None) => {
            let head = if ret {
                format!("kretprobe/{func}")
            } else {
                format!("kprobe/{func}+{offset}")
            };
            with_list(head, &args)
        }
        (ProbeTarget::User { path, offset, .. }, _) => {
            let kind = if ret { "uretprobe" } else { "uprobe" };
            with_list(format!("{kind}/{}:{offset:#x}", path.display()), &args)
        }
    };
    let parsed = match sluice_core::probe::parse(&text) {
        Ok(sluice_core::probe::Section::Probe(_)) => Ok(()),
        Ok(_) => Err(None),
        Err(e) => Err(Some(e)),
    };
    match parsed {
        Ok(()) => Ok(text),
        Err(source) => Err(Error::Unspellable {
            spec: spec.to_string(),
            address: site.address,
            text,
            source,
        }),
    }
}

fn with_list(head: String, args: &[String]) -> String {
    if args.is_empty() {
        head
    } else {
        format!("{head}({})", args.join(", "))
    }
}

type Built = (Vec<Insn>, Vec<String>, Vec<String>);

/// What a kprobe's prologue needs to read a kernel global where the kernel runs it.
struct Globals<'f> {
    /// The file is a kernel module (`ET_REL`): its globals' addresses are known only once it
    /// is loaded.
    module: bool,
    /// The running kernel's KASLR offset (0 for link-time addresses).
    offset: &'f dyn Fn() -> std::result::Result<i64, Arc<Error>>,
}

/// One site's prologue and fetch-args: DWARF locations for the variables, the calling
/// convention for the rest, `$err` where it was written. `pic`: the file is
/// position-independent, so globals are read at the probed address plus their link-time
/// distance from the site (the program counter holds the probed address at a uprobe's entry,
/// but the return address at a uretprobe: there a global is refused). `kernel`: where a
/// kprobe reads the kernel's globals.
#[allow(clippy::too_many_arguments)]
fn build_site(
    arch: Platform,
    memory: Memory,
    spec: &ProbeSpec<'_>,
    exprs: &[Arg<'_>],
    site: &ProbeSite,
    syntax: FetchSyntax,
    pic: bool,
    kernel: &Globals<'_>,
) -> std::result::Result<Built, SiteProblem> {
    let mut locs = ArgLocs::new(arch, memory);
    let mut fetch_args = Vec::new();
    let mut perf_fetch_args = Vec::new();
    let mut resolved = site.args.iter();
    let mut fetched = 0usize;
    for (i, arg) in exprs.iter().enumerate() {
        let position = i + 1;
        let bad = |problem| SiteProblem::Arg {
            position,
            arg: arg.to_string(),
            problem,
        };
        if arg.is_err() {
            locs.push_err().map_err(SiteProblem::Prologue)?;
            continue;
        }
        fetched += 1;
        // Strings and the values past r5 are only recorded by the kernel's fetch-args.
        let passed = spec.args().is_passed(i);
        let loc = if needs_debug_info(arg) {
            let r = resolved.next().ok_or_else(|| SiteProblem::NotResolved {
                position,
                arg: arg.to_string(),
            })?;
            fetch_args.push(r.fetch_arg(arch, syntax).map_err(SiteProblem::FetchArg)?);
            perf_fetch_args.push(
                r.fetch_arg(arch, FetchSyntax::Perf)
                    .map_err(SiteProblem::FetchArg)?,
            );
            if r.string || !passed {
                continue;
            }
            let global = matches!(r.location.base, LocBase::Address(_));
            if pic && global && spec.kind() == ProbeKind::Uretprobe {
                return Err(bad(ArgProblem::PicGlobalAtReturn));
            }
            let loc = r
                .location
                .to_arg_loc_at(arch, &r.name, (pic && global).then_some(site.address))
                .map_err(|e| bad(ArgProblem::Location(e)))?;
            if global && memory == Memory::Kernel {
                if kernel.module {
                    return Err(bad(ArgProblem::ModuleGlobal));
                }
                let offset = (kernel.offset)().map_err(|source| SiteProblem::KernelGlobal {
                    position,
                    arg: arg.to_string(),
                    source,
                })?;
                loc.relocated(offset)
            } else {
                loc
            }
        } else if !passed {
            // Recorded only: the fetch-arg as written.
            if let Ok(Some(text)) = crate::probe::fetch::fetch_arg(i, arg) {
                perf_fetch_args.push(text.clone());
                fetch_args.push(text);
            }
            continue;
        } else {
            let loc = convention_loc(arch, spec, i).map_err(bad)?;
            let text = loc.fetch_arg(fetched).to_string();
            perf_fetch_args.push(text.clone());
            fetch_args.push(text);
            loc
        };
        locs.push(loc).map_err(|e| bad(ArgProblem::Prologue(e)))?;
    }
    if locs.values().is_empty() {
        // A `:LINE` place without arguments, or only recorded ones: the program runs as
        // written.
        return Ok((Vec::new(), fetch_args, perf_fetch_args));
    }
    let mut buf = vec![Insn::default(); prologue::MAX_INSNS];
    let n = prologue::write(&locs, &mut buf).map_err(SiteProblem::Prologue)?;
    buf.truncate(n);
    Ok((buf, fetch_args, perf_fetch_args))
}

/// The location of argument `index` of `spec` by the calling convention (no debug info).
fn convention_loc<'a>(
    arch: Platform,
    spec: &ProbeSpec<'a>,
    index: usize,
) -> std::result::Result<ArgLoc<'a>, ArgProblem> {
    let mut one = spec.args().clone();
    if let Args::Fetch(list) = &mut one {
        let mut k = 0usize;
        list.retain(|_| {
            k += 1;
            k == index + 1
        });
    }
    let locs = prologue::from_typed_args(arch, spec.kind(), &one).map_err(ArgProblem::Prologue)?;
    let first = locs.fetched().next().cloned();
    first.ok_or(ArgProblem::NoConvention {
        position: index + 1,
    })
}

/// The value of the first defined symbol named `name` in `elf`'s `.symtab`, read in place.
fn symbol_value(elf: &Elf<'_>, name: &str) -> Option<u64> {
    let (i, _) = elf.sections().find(|(_, sh)| sh.sh_type == SHT_SYMTAB)?;
    let t = elf.symbol_table(i).ok()?;
    (0..t.len()).find_map(|k| {
        let s = t.get(k)?;
        (s.shndx != 0 && t.name(&s)? == name).then_some(s.value)
    })
}

/// `STT_GNU_IFUNC`: an indirect function (its symbol is where the resolver runs).
const STT_GNU_IFUNC: u8 = 10;

/// The defined function symbols (`STT_FUNC`, `STT_GNU_IFUNC`) of `elf`'s `.symtab`:
/// (address, size, name), read in place.
fn function_symbols<'a>(elf: &Elf<'a>) -> impl Iterator<Item = (u64, u64, &'a str)> + 'a {
    let table = elf
        .sections()
        .find(|(_, sh)| sh.sh_type == SHT_SYMTAB)
        .and_then(|(i, _)| elf.symbol_table(i).ok());
    table.into_iter().flat_map(|t| {
        (0..t.len()).filter_map(move |i| {
            let s = t.get(i)?;
            let func = matches!(s.kind(), STT_FUNC | STT_GNU_IFUNC) && s.shndx != 0;
            func.then(|| Some((s.value, s.size, t.name(&s)?)))?
        })
    })
}

/// The function symbol holding `address` and the offset into it: the last symbol at or
/// below it (the largest address, then size, then name), if its size covers it (a size of
/// 0 counts as covering).
fn containing_symbol<'a>(
    syms: impl Iterator<Item = (u64, u64, &'a str)>,
    address: u64,
) -> Option<(String, u64)> {
    let (start, size, name) = syms.filter(|s| s.0 <= address).max()?;
    let off = address - start;
    (size == 0 || off < size).then(|| (name.to_owned(), off))
}

/// The file whose DWARF describes a probe of `spec`: the binary named by a uprobe, else
/// `debuginfo` (a `vmlinux` with DWARF for kprobes).
///
/// # Errors
/// [`Error::NeedsVmlinux`] for a kprobe without `debuginfo`; [`Error::RawOffset`] /
/// [`Error::TracepointVariables`] for a probe with no file to look in.
pub fn target_file(spec: &ProbeSpec<'_>, debuginfo: Option<&Path>) -> Result<PathBuf> {
    match spec.target() {
        Target::User { path, .. } => Ok(PathBuf::from(path)),
        Target::Kernel { func } => {
            debuginfo
                .map(Path::to_path_buf)
                .ok_or_else(|| Error::NeedsVmlinux {
                    func: func.to_owned(),
                    line: matches!(spec.place(), Place::Line(_)),
                })
        }
        Target::UserOffset { path, .. } => Err(Error::RawOffset {
            path: path.to_owned(),
        }),
        Target::Tracepoint { category, name } => Err(Error::TracepointVariables {
            category: category.to_owned(),
            name: name.to_owned(),
        }),
    }
}

/// Resolves `spec` in the file [`target_file`] picks: the sites, each with its prologue.
///
/// # Errors
/// As [`target_file`], [`DebugInfo::open`] and [`DebugInfo::sites`].
pub fn resolve(spec: &ProbeSpec<'_>, debuginfo: Option<&Path>) -> Result<Vec<Site>> {
    let path = target_file(spec, debuginfo)?;
    DebugInfo::open(&path, None)?.sites(spec)
}

/// [`resolve`] for the running kernel ([`DebugInfo::running_sites`]): what `record` loads.
///
/// # Errors
/// As [`resolve`] and [`DebugInfo::running_sites`].
pub fn resolve_running(spec: &ProbeSpec<'_>, debuginfo: Option<&Path>) -> Result<Vec<Site>> {
    let path = target_file(spec, debuginfo)?;
    DebugInfo::open(&path, None)?.running_sites(spec)
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
    use sluice_core::probe::{parse, Section};

    fn spec(s: &str) -> ProbeSpec<'_> {
        match parse(s).unwrap() {
            Section::Probe(p) => p,
            Section::Title(t) => panic!("{t}"),
        }
    }

    #[test]
    fn which_arguments_need_debug_info() {
        // (`$err` is one of the four values passed: it comes before the fourth scalar.)
        let s = spec("uprobe/bin:f(file->f_mapping, %di, $arg2, $err, bytes)");
        let need: Vec<bool> = s.args().exprs().iter().map(needs_debug_info).collect();
        assert_eq!(need, [true, false, false, false, true]);
        assert!(spec_needs_debug_info(&s));
        assert!(!spec_needs_debug_info(&spec("uprobe/bin:f(%di, $arg2)")));
        assert!(!spec_needs_debug_info(&spec("kprobe/f(void *, int)")));
        // A line is found in the line table, whatever the arguments.
        assert!(spec_needs_debug_info(&spec("uprobe/bin:f:3")));
        assert!(spec_needs_debug_info(&spec("kprobe/f:3(%di)")));
        assert!(spec_needs_debug_info(&spec("f:3")));
    }

    #[test]
    fn symbol_holding_an_address() {
        let syms = [
            (0x2000, 0x10, "c"),
            (0x1000, 0x20, "a"),
            (0x1020, 0, "b"),
            (0x1000, 0x8, "a_alias"),
        ];
        let at = |a| containing_symbol(syms.iter().copied(), a);
        assert_eq!(at(0x1000), Some(("a".into(), 0)));
        assert_eq!(at(0x101f), Some(("a".into(), 0x1f)));
        assert_eq!(at(0x1500), Some(("b".into(), 0x4e0)));
        assert_eq!(at(0x2010), None);
        assert_eq!(at(0xfff), None);
    }

    #[test]
    fn kernel_probe_needs_a_file() {
        let e = target_file(&spec("kprobe/vfs_read(file->f_pos)"), None).unwrap_err();
        assert!(e.to_string().contains("vmlinux"), "{e}");
        let e = target_file(&spec("kprobe/vfs_read:4"), None).unwrap_err();
        assert!(e.to_string().contains(":LINE place"), "{e}");
        assert_eq!(
            target_file(&spec("uprobe//bin/x:f(a)"), None).unwrap(),
            PathBuf::from("/bin/x")
        );
    }

    #[test]
    fn convention_args_keep_their_position() {
        let s = spec("uprobe/bin:f(a, $arg2, %dx)");
        let l = convention_loc(Arch::X86_64.into(), &s, 1).unwrap();
        assert_eq!(l.fetch_arg(2).to_string(), "arg2=%si:u64");
        let l = convention_loc(Arch::X86_64.into(), &s, 2).unwrap();
        assert_eq!(l.fetch_arg(3).to_string(), "arg3=%dx:u64");
    }

    #[test]
    fn missing_file_is_named() {
        let e = DebugInfo::open(Path::new("/nonexistent/sluice-x"), None).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/sluice-x"), "{e}");
    }
}
