//! Argument expressions, as `perf probe` writes them: `[NAME=]BASE{STEP}[:TYPE]`, and as the
//! kprobe tracer fetches them: `[NAME=]{+|-OFF(}BASE{)}[:TYPE]`.
//!
//! `BASE` is a variable (`file`), a register (`%di`, `%x0`), a `$` variable (`$retval`,
//! `$stack3`, `$arg2`, `$comm`, the pseudo-argument `$err`, or any other `$name` the seed's
//! examples use such as `$outdata`), an absolute address `@ADDR`, a kernel symbol plus an
//! offset `@SYM+OFF` (the kprobe tracer resolves it in the running kernel, so it holds under
//! KASLR), a file offset of a uprobe's file `@+OFFSET` (the uprobe tracer's: a global of a
//! shared library or PIE, wherever it is loaded) or a constant `\IMM`.
//! `STEP`s are `.member`, `->member` and `[index]`; only a variable or `$retval` has a type
//! that steps can walk. `TYPE` is a kprobe-tracer fetch type.
//!
//! `+OFF(...)` / `-OFF(...)` is the kprobe tracer's memory read: the value inside plus `OFF`
//! is read as an address (`+144(+216(+8(%sp))):u64`). Such arguments are what debug info
//! resolves variables to (`perf probe -D` prints them), so a spec written with them needs no
//! debug info where it runs: `sluice prologue --emit` writes one for a resolved spec.

use core::fmt;

use heapless::Vec;

use super::ctype::is_type_keyword;
use super::cursor::{err_at, is_ident_cont, is_ident_start, Cursor};
use super::error::ProbeError;

/// Most steps (`.m`, `->m`, `[n]`) in one argument expression.
pub const MAX_STEPS: usize = 8;

/// Where an argument's value starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ArgBase<'a> {
    /// A C variable or parameter, found through debug info: `file`.
    Var(&'a str),
    /// A register by its kprobe-tracer name, without the `%`: `di`, `x0`, `r12`.
    /// Which names exist is the architecture's business.
    Reg(&'a str),
    /// `$retval`: the return value (return probes only).
    Retval,
    /// `$err`: the pseudo-argument that receives 0, or the 1-based index of the first
    /// argument whose read failed. It fetches nothing and takes no steps or type.
    Err,
    /// `$stack`: the stack pointer.
    Stack,
    /// `$stackN`: the N-th word on the stack.
    StackN(u32),
    /// `$argN`: the N-th function argument by the calling convention (1-based).
    ArgN(u32),
    /// `$comm`: the current task's name.
    Comm,
    /// Any other `$name` (the seed's `$outdata`), without the `$`; the prologue decides.
    Special(&'a str),
    /// `@ADDR`: the memory at an absolute (kernel) address, the kprobe tracer's `@ADDR`.
    Addr(u64),
    /// `@SYM`, `@SYM+OFF`, `@SYM-OFF`: the memory at a kernel symbol's address in the running
    /// kernel (its `/proc/kallsyms` entry) plus an offset, the kprobe tracer's `@SYM[+|-OFF]`.
    /// Right whatever the kernel's KASLR offset; `sluice prologue --emit` writes kernel
    /// globals this way.
    Sym {
        /// The symbol: `[A-Za-z_.][A-Za-z0-9_.]*`.
        name: &'a str,
        /// Added to the symbol's address (32 bits, as memory read offsets: a kernel image is
        /// far smaller than 2 GiB, and it keeps [`ArgBase`] at three words).
        offset: i32,
    },
    /// `@+OFFSET`: the memory at a file offset of the probed file, the uprobe tracer's
    /// `@+OFFSET` (uprobes only): the kernel reads it at the probed address less the probe's
    /// own file offset plus `OFFSET`, so it holds wherever the file is loaded; `sluice
    /// prologue --emit` writes a global of a shared library or PIE this way.
    FileOffset(u64),
    /// `\IMM`: a constant, the kprobe tracer's immediate.
    Imm(u64),
}

impl ArgBase<'_> {
    /// Whether a memory read `+OFF(...)` may wrap this base: registers, `$` values that
    /// are numbers, and `@ADDR`; not variables (they use `->member`), constants, `$comm`,
    /// `$err` or unknown `$name`s.
    fn readable(self) -> bool {
        matches!(
            self,
            ArgBase::Reg(_)
                | ArgBase::Retval
                | ArgBase::Stack
                | ArgBase::StackN(_)
                | ArgBase::ArgN(_)
                | ArgBase::Addr(_)
                | ArgBase::Sym { .. }
                | ArgBase::FileOffset(_)
        )
    }
}

/// One step from a base to the value fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Step<'a> {
    /// `.member`: a member of the struct value reached so far.
    Member(&'a str),
    /// `->member`: a member of the struct the value reached so far points to.
    Deref(&'a str),
    /// `[n]`: an element of the array (or pointer) reached so far.
    Index(u64),
}

/// How the fetched value is typed, the kprobe tracer's `:TYPE` suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[allow(missing_docs)] // the variant names are the suffixes
pub enum FetchType {
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    X8,
    X16,
    X32,
    X64,
    /// A NUL-terminated string the value points to.
    String,
    /// A NUL-terminated string in user memory the value points to (`:ustring`).
    UString,
}

impl FetchType {
    const ALL: [FetchType; 14] = [
        FetchType::U8,
        FetchType::U16,
        FetchType::U32,
        FetchType::U64,
        FetchType::S8,
        FetchType::S16,
        FetchType::S32,
        FetchType::S64,
        FetchType::X8,
        FetchType::X16,
        FetchType::X32,
        FetchType::X64,
        FetchType::String,
        FetchType::UString,
    ];

    /// The suffix as written after `:`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FetchType::U8 => "u8",
            FetchType::U16 => "u16",
            FetchType::U32 => "u32",
            FetchType::U64 => "u64",
            FetchType::S8 => "s8",
            FetchType::S16 => "s16",
            FetchType::S32 => "s32",
            FetchType::S64 => "s64",
            FetchType::X8 => "x8",
            FetchType::X16 => "x16",
            FetchType::X32 => "x32",
            FetchType::X64 => "x64",
            FetchType::String => "string",
            FetchType::UString => "ustring",
        }
    }

    /// The type named by `s`, if any.
    #[must_use]
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|t| t.as_str() == s)
    }

    /// Size in bytes of an integer type; `None` for `string`.
    #[must_use]
    pub fn size(self) -> Option<u8> {
        match self {
            FetchType::U8 | FetchType::S8 | FetchType::X8 => Some(1),
            FetchType::U16 | FetchType::S16 | FetchType::X16 => Some(2),
            FetchType::U32 | FetchType::S32 | FetchType::X32 => Some(4),
            FetchType::U64 | FetchType::S64 | FetchType::X64 => Some(8),
            FetchType::String | FetchType::UString => None,
        }
    }

    /// Whether the value is sign-extended.
    #[must_use]
    pub fn is_signed(self) -> bool {
        matches!(
            self,
            FetchType::S8 | FetchType::S16 | FetchType::S32 | FetchType::S64
        )
    }
}

impl fmt::Display for FetchType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One argument expression: `[NAME=]BASE{STEP}[:TYPE]`, e.g. `a_ops=file->f_mapping->a_ops:u64`,
/// or a fetch-arg with memory reads, `a_ops=+144(+216(+8(%sp))):u64`.
///
/// `Display` renders it the way `perf probe` prints it (`file->f_mapping->a_ops`,
/// `+144(+216(+8(%sp)))`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arg<'a> {
    name: Option<&'a str>,
    base: ArgBase<'a>,
    derefs: Vec<i32, MAX_STEPS, u8>,
    steps: Vec<Step<'a>, MAX_STEPS, u8>,
    ty: Option<FetchType>,
}

impl<'a> Arg<'a> {
    /// The name given with `NAME=`, if any.
    #[must_use]
    pub fn name(&self) -> Option<&'a str> {
        self.name
    }

    /// Where the value starts.
    #[must_use]
    pub fn base(&self) -> ArgBase<'a> {
        self.base
    }

    /// The memory reads `+OFF(...)` around the base, innermost first: `+144(+216(%di))` is
    /// `[216, 144]` (read at `%di + 216`, then at that value `+ 144`). The last read has the
    /// fetch type's size, the others are pointer-sized.
    #[must_use]
    pub fn derefs(&self) -> &[i32] {
        &self.derefs
    }

    /// The member accesses, dereferences and indexing from the base, in order.
    #[must_use]
    pub fn steps(&self) -> &[Step<'a>] {
        &self.steps
    }

    /// The `:TYPE` suffix, if any.
    #[must_use]
    pub fn fetch_type(&self) -> Option<FetchType> {
        self.ty
    }

    /// Whether this is the `$err` pseudo-argument (which fetches nothing).
    #[must_use]
    pub fn is_err(&self) -> bool {
        self.base == ArgBase::Err
    }

    /// Whether the value is a string (`:string`, `:ustring`, `$comm`): the kernel records it
    /// beside the sample, but no register can pass it to the program.
    #[must_use]
    pub fn is_string(&self) -> bool {
        matches!(self.ty, Some(FetchType::String | FetchType::UString))
            || self.base == ArgBase::Comm
    }

    /// Parses `s[start..end]` as one argument of a probe whose kind says whether `$retval`
    /// exists.
    pub(super) fn parse(
        s: &'a str,
        start: usize,
        end: usize,
        is_return: bool,
    ) -> Result<Self, ProbeError> {
        let mut c = Cursor::new(s, start, end);
        if c.at_end() {
            return Err(c.err("empty argument"));
        }

        // `NAME=`: an identifier directly followed by `=`.
        let mut name = None;
        let mut look = c;
        if let Some(id) = look.ident() {
            if look.eat(b'=') {
                name = Some(id);
                c = look;
            }
        }

        // `+OFF(` / `-OFF(` memory reads, outermost first.
        let mut outer_first: Vec<i32, MAX_STEPS, u8> = Vec::new();
        while let Some(sign @ (b'+' | b'-')) = c.peek() {
            let at = c.pos();
            c.bump();
            let n = c.number()?;
            let off = if sign == b'-' {
                0i64.checked_sub_unsigned(n)
            } else {
                i64::try_from(n).ok()
            }
            .and_then(|v| i32::try_from(v).ok())
            .ok_or_else(|| err_at(at, "memory read offset out of the 32-bit range"))?;
            if !c.eat(b'(') {
                return Err(c.err("expected '(' after a memory read offset"));
            }
            outer_first
                .push(off)
                .map_err(|_| err_at(at, "too many memory reads in one argument"))?;
        }

        let base_at = c.pos();
        let base = if c.eat(b'%') {
            let reg = c.take_while(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
            if reg.is_empty() {
                return Err(c.err("expected a register name after '%'"));
            }
            ArgBase::Reg(reg)
        } else if c.eat(b'$') {
            let var = c.take_while(is_ident_cont);
            if var.is_empty() {
                return Err(c.err("expected a name after '$'"));
            }
            dollar(var, base_at)?
        } else if c.eat(b'@') {
            if c.eat(b'+') {
                ArgBase::FileOffset(c.number()?)
            } else if c.peek().is_some_and(|b| b.is_ascii_digit()) {
                ArgBase::Addr(c.number()?)
            } else if c.peek().is_some_and(|b| is_ident_start(b) || b == b'.') {
                let name = c.take_while(|b| is_ident_cont(b) || b == b'.');
                let offset = match c.peek() {
                    Some(sign @ (b'+' | b'-')) => {
                        let at = c.pos();
                        c.bump();
                        let n = c.number()?;
                        if sign == b'-' {
                            0i64.checked_sub_unsigned(n)
                        } else {
                            i64::try_from(n).ok()
                        }
                        .and_then(|v| i32::try_from(v).ok())
                        .ok_or_else(|| err_at(at, "symbol offset out of the 32-bit range"))?
                    }
                    _ => 0,
                };
                ArgBase::Sym { name, offset }
            } else {
                return Err(c.err("expected an address, a kernel symbol or +FILEOFFSET after '@'"));
            }
        } else if c.eat(b'\\') {
            ArgBase::Imm(c.number()?)
        } else if let Some(var) = c.ident() {
            if is_type_keyword(var) {
                return Err(err_at(base_at, "a C type keyword is not a variable"));
            }
            ArgBase::Var(var)
        } else {
            return Err(c.err(
                "expected a variable, %register, $variable, @address, \\constant or +OFF(...)",
            ));
        };
        if base == ArgBase::Retval && !is_return {
            return Err(err_at(base_at, "$retval exists only in a return probe"));
        }
        if !outer_first.is_empty() && !base.readable() {
            return Err(err_at(
                base_at,
                "a memory read +OFF(...) takes a register, $retval, $stack, $stackN, $argN or @address",
            ));
        }
        let mut derefs: Vec<i32, MAX_STEPS, u8> = Vec::new();
        for &off in outer_first.iter().rev() {
            if !c.eat(b')') {
                return Err(c.err("expected ')' closing a memory read"));
            }
            // Same capacity as `outer_first`: cannot fail.
            let _ = derefs.push(off);
        }

        let mut steps = Vec::new();
        loop {
            let step_at = c.pos();
            let step = if c.eat(b'.') {
                Step::Member(member(&mut c)?)
            } else if c.eat_str("->") {
                Step::Deref(member(&mut c)?)
            } else if c.eat(b'[') {
                let n = c.number()?;
                if !c.eat(b']') {
                    return Err(c.err("expected ']'"));
                }
                Step::Index(n)
            } else {
                break;
            };
            if !matches!(base, ArgBase::Var(_) | ArgBase::Retval) || !derefs.is_empty() {
                return Err(err_at(
                    step_at,
                    "only a variable or $retval has members or elements",
                ));
            }
            steps
                .push(step)
                .map_err(|_| err_at(step_at, "too many steps in one argument"))?;
        }

        let mut ty = None;
        if c.eat(b':') {
            let at = c.pos();
            let word = c.take_while(|b| b.is_ascii_alphanumeric());
            if word.is_empty() {
                return Err(c.err("expected a type after ':'"));
            }
            ty = Some(FetchType::from_name(word).ok_or_else(|| {
                err_at(at, "unknown fetch type (u8..u64, s8..s64, x8..x64, string)")
            })?);
            if base == ArgBase::Err {
                return Err(err_at(at, "$err takes no type"));
            }
        }
        if !c.at_end() {
            return Err(c.err("unexpected character in argument"));
        }
        Ok(Arg {
            name,
            base,
            derefs,
            steps,
            ty,
        })
    }
}

/// A `.` or `->` member name.
fn member<'a>(c: &mut Cursor<'a>) -> Result<&'a str, ProbeError> {
    c.ident().ok_or_else(|| c.err("expected a member name"))
}

/// Decodes `$var` (given without the `$`, found at column `at`).
fn dollar(var: &str, at: usize) -> Result<ArgBase<'_>, ProbeError> {
    Ok(match var {
        "retval" => ArgBase::Retval,
        "err" => ArgBase::Err,
        "stack" => ArgBase::Stack,
        "comm" => ArgBase::Comm,
        _ => {
            if let Some(n) = var.strip_prefix("stack").and_then(decimal) {
                ArgBase::StackN(n)
            } else if let Some(n) = var.strip_prefix("arg").and_then(decimal) {
                if n == 0 {
                    return Err(err_at(at, "$argN counts from 1"));
                }
                ArgBase::ArgN(n)
            } else {
                ArgBase::Special(var)
            }
        }
    })
}

/// A plain decimal `u32` with no sign or leading `+`; `None` otherwise.
fn decimal(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

impl fmt::Display for ArgBase<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgBase::Var(v) => f.write_str(v),
            ArgBase::Reg(r) => write!(f, "%{r}"),
            ArgBase::Retval => f.write_str("$retval"),
            ArgBase::Err => f.write_str("$err"),
            ArgBase::Stack => f.write_str("$stack"),
            ArgBase::StackN(n) => write!(f, "$stack{n}"),
            ArgBase::ArgN(n) => write!(f, "$arg{n}"),
            ArgBase::Comm => f.write_str("$comm"),
            ArgBase::Special(v) => write!(f, "${v}"),
            ArgBase::Addr(a) => write!(f, "@{a:#x}"),
            ArgBase::Sym { name, offset: 0 } => write!(f, "@{name}"),
            ArgBase::Sym { name, offset } if *offset < 0 => {
                write!(f, "@{name}-{:#x}", offset.unsigned_abs())
            }
            ArgBase::Sym { name, offset } => write!(f, "@{name}+{offset:#x}"),
            ArgBase::FileOffset(o) => write!(f, "@+{o:#x}"),
            ArgBase::Imm(v) => write!(f, "\\{v}"),
        }
    }
}

impl fmt::Display for Step<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Member(m) => write!(f, ".{m}"),
            Step::Deref(m) => write!(f, "->{m}"),
            Step::Index(i) => write!(f, "[{i}]"),
        }
    }
}

impl fmt::Display for Arg<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = self.name {
            write!(f, "{name}=")?;
        }
        for off in self.derefs.iter().rev() {
            write!(f, "{off:+}(")?;
        }
        write!(f, "{}", self.base)?;
        for _ in &self.derefs {
            f.write_str(")")?;
        }
        for step in &self.steps {
            write!(f, "{step}")?;
        }
        if let Some(ty) = self.ty {
            write!(f, ":{ty}")?;
        }
        Ok(())
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Arg<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "Arg {{ name: {}, base: {}, derefs: {}, steps: {}, ty: {} }}",
            self.name,
            self.base,
            self.derefs.as_slice(),
            self.steps.as_slice(),
            self.ty
        );
    }
}
