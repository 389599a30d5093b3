//! Probe points and variables resolved: every site of a function at a place, and each
//! argument's location there ([`Resolver::resolve`] and its forms).

use alloc::string::String;
use alloc::vec::Vec;

use gimli::constants as dw;

use super::error::Error;
use super::eval::{address_of, finish, member_at, pointee, Start, Val};
use super::location::ResolvedArg;
use super::resolver::Resolver;
use super::scope::Visible;
use super::sites::Site;
use super::types::Kind;
use crate::probe::{Arg, ArgBase, FetchType, Place, ProbeSpec, Step};

/// One place to attach a probe, and the arguments resolved there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeSite {
    /// The function probed.
    pub function: String,
    /// The link-time address.
    pub address: u64,
    /// The file offset (what a uprobe takes), when the address lies in a section with file
    /// contents.
    pub file_offset: Option<u64>,
    /// Whether this is an inlined instance (`DW_TAG_inlined_subroutine`).
    pub inlined: bool,
    /// The arguments, in order (`$err` excluded).
    pub args: Vec<ResolvedArg>,
}

impl<'s> Resolver<'s> {
    /// Resolves a parsed probe spec: its function, place and fetch arguments.
    ///
    /// # Errors
    /// As [`Resolver::resolve`]; [`Error::NoPlace`] for a spec without a function.
    pub fn resolve_spec(&self, spec: &ProbeSpec<'_>) -> Result<Vec<ProbeSite>, Error> {
        let func = spec.func().ok_or(Error::NoPlace {
            function: String::new(),
            what: "the probe names no function",
        })?;
        self.resolve(func, spec.place(), spec.args().exprs())
    }

    /// Every site of `func` at `place`, each with `args` resolved at its address
    /// (`$err` skipped; `$retval` at a return probe is the return register).
    ///
    /// # Errors
    /// [`Error::FunctionNotFound`], [`Error::NoPlace`] when no site has that place; the
    /// first argument that does not resolve at a site ([`Error::VariableNotFound`],
    /// [`Error::NotAvailable`], [`Error::BadStep`], [`Error::NotScalar`]).
    pub fn resolve(
        &self,
        func: &str,
        place: Place,
        args: &[Arg<'_>],
    ) -> Result<Vec<ProbeSite>, Error> {
        let sites = self.find_sites(func)?;
        if sites.is_empty() {
            return Err(Error::FunctionNotFound(String::from(func)));
        }
        self.resolve_in(func, &sites, place, args)
    }

    /// Every line of `func` with code (relative to its declaration, as `FUNC:LINE` counts
    /// them), each with [`Resolver::resolve`]'s answer for `args` there: where the variables
    /// of a probe can be fetched, the way `perf probe -V FUNC:LINE` tells for one line.
    /// The function is looked up once.
    ///
    /// # Errors
    /// [`Error::FunctionNotFound`]; errors of the debug info itself. Per line, the first
    /// argument that does not resolve, as [`Resolver::resolve`].
    #[allow(clippy::type_complexity)]
    pub fn resolve_lines(
        &self,
        func: &str,
        args: &[Arg<'_>],
    ) -> Result<Vec<(u32, Result<Vec<ProbeSite>, Error>)>, Error> {
        let sites = self.find_sites(func)?;
        if sites.is_empty() {
            return Err(Error::FunctionNotFound(String::from(func)));
        }
        let mut lines: Vec<u32> = Vec::new();
        for site in &sites {
            let Some(decl) = self.udata_of(site.die, dw::DW_AT_decl_line)? else {
                continue;
            };
            let decl_file = self.udata_of(site.die, dw::DW_AT_decl_file)?;
            let want_file = decl_file.and_then(|f| self.file_name(site.die.unit, f));
            let ranges = self.ranges(site.die)?;
            let nested = self.nested_inlines(site.die)?;
            let inside = |a: u64, r: &[(u64, u64)]| r.iter().any(|&(b, e)| a >= b && a < e);
            lines.push(0);
            for &inline in &nested {
                if let Some(line) = self.call_line(inline, want_file)? {
                    if let Some(rel) = line.checked_sub(decl).and_then(|d| u32::try_from(d).ok()) {
                        lines.push(rel);
                    }
                }
            }
            for r in self.line_rows(site.die.unit)? {
                if !r.is_stmt || r.end_sequence || r.line < decl {
                    continue;
                }
                if !inside(r.address, &ranges) {
                    continue;
                }
                if want_file.is_some() && self.file_name(site.die.unit, r.file) != want_file {
                    continue;
                }
                if let Ok(rel) = u32::try_from(r.line - decl) {
                    lines.push(rel);
                }
            }
        }
        lines.sort_unstable();
        lines.dedup();
        Ok(lines
            .into_iter()
            .map(|rel| (rel, self.resolve_in(func, &sites, Place::Line(rel), args)))
            .collect())
    }

    /// [`Resolver::resolve`] for sites already found; an [`Error::SharedLine`] says whether
    /// the line it names can be probed ([`Resolver::probeable`]).
    pub(super) fn resolve_in(
        &self,
        func: &str,
        sites: &[Site],
        place: Place,
        args: &[Arg<'_>],
    ) -> Result<Vec<ProbeSite>, Error> {
        self.resolve_at(func, sites, place, args)
            .map_err(|e| match e {
                Error::SharedLine {
                    function,
                    line,
                    address,
                    owner_function,
                    owner_line,
                    probeable: _,
                } => Error::SharedLine {
                    probeable: self.probeable(&owner_function, owner_line),
                    function,
                    line,
                    address,
                    owner_function,
                    owner_line,
                },
                e => e,
            })
    }

    /// Whether `func:line` has an address of its own (it resolves; a line that shares its
    /// address too does not): a line a message may tell to probe instead.
    fn probeable(&self, func: &str, line: i64) -> bool {
        let Ok(rel) = u32::try_from(line) else {
            return false;
        };
        self.find_sites(func).is_ok_and(|s| {
            !s.is_empty() && self.resolve_at(func, &s, Place::Line(rel), &[]).is_ok()
        })
    }

    /// [`Resolver::resolve_in`] without checking the line an [`Error::SharedLine`] names.
    fn resolve_at(
        &self,
        func: &str,
        sites: &[Site],
        place: Place,
        args: &[Arg<'_>],
    ) -> Result<Vec<ProbeSite>, Error> {
        let mut out = Vec::new();
        for site in sites {
            for address in self.addresses(func, site, place)? {
                let mut resolved = Vec::new();
                // The scopes are walked once per address, for the first variable.
                let mut visible = None;
                for arg in args.iter().filter(|a| !a.is_err()) {
                    resolved.push(self.resolve_arg(site, address, place, arg, &mut visible)?);
                }
                out.push(ProbeSite {
                    function: String::from(func),
                    address,
                    file_offset: self.file_offset(address),
                    inlined: site.inlined,
                    args: resolved,
                });
            }
        }
        if out.is_empty() {
            return Err(Error::NoPlace {
                function: String::from(func),
                what: match place {
                    Place::Line(_) => "no code for that line",
                    Place::Offset(_) | Place::Return => "only inlined instances",
                    Place::Entry => "no entry address",
                },
            });
        }
        Ok(out)
    }

    pub(super) fn resolve_arg(
        &self,
        site: &Site,
        pc: u64,
        place: Place,
        arg: &Arg<'_>,
        visible: &mut Option<Visible<'s>>,
    ) -> Result<ResolvedArg, Error> {
        let (var_name, start_val, ty) = match arg.base() {
            ArgBase::Var(name) => {
                let visible = match visible {
                    Some(v) => v,
                    None => visible.insert(self.visible(site, pc)?),
                };
                let found = self
                    .find_variable(site, visible, pc, name)
                    .and_then(|die| Ok((die, self.variable_value(site, die, pc, name)?)));
                let (die, val) = found.map_err(|e| self.with_available(e, site, visible))?;
                (name, val, self.type_of(die)?)
            }
            ArgBase::Retval if place == Place::Return => {
                let ty = self.type_of(site.die)?;
                let reg = self.arch.return_dwarf_reg().ok_or(Error::Unexpressible {
                    what: "return register without a DWARF number",
                    value: 0,
                })?;
                ("$retval", Val::Value(Start::Reg(reg, 0), Vec::new()), ty)
            }
            _ => return Err(Error::NotAVariable(alloc::format!("{arg}"))),
        };
        let mut name = String::from(var_name.trim_start_matches('$'));
        if var_name == "$retval" {
            name = String::from("arg1");
        }
        let mut val = start_val;
        let mut ty = ty;
        for step in arg.steps() {
            let step_text = match step {
                Step::Member(m) => alloc::format!(".{m}"),
                Step::Deref(m) => alloc::format!("->{m}"),
                Step::Index(i) => alloc::format!("[{i}]"),
            };
            let bad = |reason| Error::BadStep {
                name: String::from(var_name),
                step: step_text.clone(),
                reason,
            };
            let t = ty.ok_or(bad("the value has no type"))?;
            let (t, kind) = self.strip(t)?;
            match *step {
                Step::Member(m) | Step::Deref(m) => {
                    let agg = match (step, kind) {
                        (Step::Deref(_), Kind::Pointer { target: Some(p) }) => {
                            val = pointee(val);
                            let (agg, k) = self.strip(p)?;
                            if k != Kind::Aggregate {
                                return Err(bad("'->' on a pointer to a non-struct"));
                            }
                            agg
                        }
                        (Step::Deref(_), _) => return Err(bad("'->' on a non-pointer")),
                        (_, Kind::Aggregate) => t,
                        (_, Kind::Pointer { .. }) => return Err(bad("'.' on a pointer: use '->'")),
                        _ => return Err(bad("'.' on a non-struct")),
                    };
                    let (off, mty) = self.member(agg, m, 0)?.ok_or(bad("no such member"))?;
                    val = member_at(val, off).ok_or(bad("the struct is in a register"))?;
                    ty = Some(mty);
                    name = String::from(m);
                }
                Step::Index(i) => match kind {
                    Kind::Array { elem } => {
                        let stride = self.array_stride(t)?.ok_or(bad("element size unknown"))?;
                        let off = (i as i64).wrapping_mul(stride as i64);
                        val = member_at(val, off).ok_or(bad("the array is in a register"))?;
                        ty = elem;
                    }
                    Kind::Pointer { target: Some(p) } => {
                        let size = self.size_of(p)?.ok_or(bad("element size unknown"))?;
                        val = pointee(val);
                        val = member_at(val, (i as i64).wrapping_mul(size as i64))
                            .ok_or(bad("the array is in a register"))?;
                        ty = Some(p);
                    }
                    _ => return Err(bad("'[]' on a non-array, non-pointer")),
                },
            }
        }
        if let (true, Some(t)) = (arg.steps().is_empty(), arg.fetch_type()) {
            // perf names `zSql:string` `zSql_string` (the arg text, ':' made '_').
            name = alloc::format!("{name}_{}", t.as_str());
        }
        if let Some(n) = arg.name() {
            name = String::from(n);
        }
        if arg.fetch_type() == Some(FetchType::UString) {
            return Err(Error::NotScalar {
                name,
                what: "a :ustring of a variable (write :string: with debug info the tracer \
                       reads the string where the variable points)",
            });
        }
        let string = arg.fetch_type() == Some(FetchType::String);
        let (size, signed) = match arg.fetch_type() {
            Some(FetchType::String) | None => {
                let t = ty.ok_or(Error::NotScalar {
                    name: name.clone(),
                    what: "a value without a type",
                })?;
                let (_, kind) = self.strip(t)?;
                let addr_size = u64::from(self.unit(t.unit)?.encoding().address_size);
                let not = |what| Error::NotScalar {
                    name: name.clone(),
                    what,
                };
                let (size, signed) = match kind {
                    Kind::Base { size, signed } => (size, signed),
                    Kind::Pointer { .. } => (addr_size, false),
                    Kind::Enum { size } => (size, false),
                    Kind::Array { .. } if string => {
                        // A char array: the string is the array's memory itself.
                        val = address_of(val).ok_or(not("an array in a register"))?;
                        (addr_size, false)
                    }
                    Kind::Aggregate => return Err(not("a struct or union")),
                    Kind::Array { .. } => return Err(not("an array")),
                    Kind::Other => return Err(not("a value of no fetchable type")),
                };
                if !matches!(size, 1 | 2 | 4 | 8) {
                    return Err(not("a value of another size"));
                }
                (size as u8, signed)
            }
            Some(t) => (t.size().unwrap_or(8), t.is_signed()),
        };
        Ok(ResolvedArg {
            name,
            location: finish(val, size, signed, self.global_name(site, pc, var_name)),
            string,
        })
    }

    /// The name of a global the argument starts from, for `@name+off` fetch-args.
    pub(super) fn global_name(&self, _site: &Site, _pc: u64, var: &str) -> String {
        String::from(var)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::dwarf::sections::DebugSections;
    use crate::elf::Elf;

    /// Inputs the `dwarf` fuzz target crashed on (see `fuzz/README.md`), each with what it
    /// broke, run through the target's steps: now errors or results, never a panic.
    const FUZZ_REGRESSIONS: &[(&str, &[u8])] = &[(
        // gcc -O2 chain.c with a DW_AT_high_pc length that overflows DW_AT_low_pc: gimli's
        // `die_ranges` added them unchecked.
        "high_pc_overflow",
        include_bytes!("regressions/high_pc_overflow"),
    )];

    #[test]
    fn fuzz_regressions() {
        use crate::probe::{self, Section};
        let specs = [
            "generic_perform_write file->f_mapping->a_ops bytes offset chunk",
            "generic_perform_write:5 chunk written",
            "generic_perform_write%return $retval",
            "main argc argv[0]:string",
            "process:8 slot i offset",
            "twice zz",
        ];
        for (name, bytes) in FUZZ_REGRESSIONS {
            let elf = Elf::parse(bytes).unwrap();
            let sections = DebugSections::load(&elf).unwrap();
            let r = Resolver::new(&elf, &sections).unwrap();
            for spec in specs {
                let Ok(Section::Probe(p)) = probe::parse(spec) else {
                    panic!("{name}: {spec}")
                };
                if let Ok(sites) = r.resolve_spec(&p) {
                    for a in sites.iter().flat_map(|s| &s.args) {
                        let _ = a.fetch_arg(r.arch(), super::super::FetchSyntax::Perf);
                    }
                }
            }
        }
    }
}
