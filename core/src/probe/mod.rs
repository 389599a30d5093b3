//! The section-name grammar: which probe a program wants and which arguments it fetches.
//!
//! An eBPF object names each program's section; the name says where to attach it. [`parse`]
//! reads one name, zero-copy (every name in the result is a slice of the input) and without
//! allocating (lists live in fixed-capacity [`heapless::Vec`]s; more than fits is an error).
//!
//! # Forms
//!
//! ```text
//! perf (the seed):  [[GROUP:]EVENT=]FUNC[+OFF|:LINE|%return] [ARG ...]
//!                   generic_perform_write=generic_perform_write+122 file->f_mapping->a_ops bytes offset
//!                   lock_page=lock_page        enter=sys_write $outdata:u64
//! libbpf style:     kprobe/FUNC[+OFF|:LINE][(ARG, ...)]        kretprobe/FUNC[(ARG, ...)]
//!                   uprobe/PATH:FUNC[+OFF|:LINE][(ARG, ...)]   uretprobe/PATH:FUNC[(ARG, ...)]
//!                   uprobe/PATH:ADDR (libbpf's raw offset, e.g. 0x1234)
//!                   tracepoint/CAT/NAME   tp/CAT/NAME
//! typed entry args: kprobe/vfs_read(struct file *, char *buf, size_t)
//! ARG:              [NAME=]BASE{.member|->member|[N]}[:TYPE]    BASE: var, %reg, $retval, $err, ...
//!                   [NAME=]{+|-OFF(}BASE{)}[:TYPE]    the kprobe tracer's memory reads, as
//!                   debug info resolves variables: a_ops=+144(+216(+8(%sp))):u64, @0xADDR, \IMM
//! ```
//!
//! `GROUP` may only be `sluice` or `perf_bpf_probe`. Numbers read like `strtoul(_, _, 0)`
//! (`0x` hex, leading `0` octal), as both perf and libbpf read them. An argument list is all
//! expressions or all C types. At most [`MAX_FETCHED_ARGS`] arguments are fetched (the
//! prologue passes them in r2..r5); the pseudo-argument `$err` does not count.
//!
//! # Titles
//!
//! Any other name is not an error but a [`Section::Title`]: libbpf's program kinds this
//! grammar does not describe (`xdp`, `socket`, `fentry/x`, `cgroup/skb`, `raw_tracepoint/z`,
//! bare `kprobe`), data sections (`license`, `maps`, `.text`), and a **bare identifier**
//! such as `generic_perform_write`. The seed's second series named programs that way and put
//! the probe itself in a separate `config` section; mapping a title to such a definition is
//! the object's business, not the grammar's. A name is read as the perf form only when it
//! does not start with a libbpf-style `prefix/` (`[A-Za-z0-9_.]+/`) and it has an argument
//! (a space) or one of `=`, `+`, `:`, `%` in its first word; from then on, and after a
//! `kprobe/`, `kretprobe/`, `uprobe/`, `uretprobe/`, `tracepoint/` or `tp/` prefix, a
//! malformed name is an error with a column.
//!
//! # Canonical form
//!
//! [`ProbeSpec`]'s `Display` prints the libbpf-style form when it can say everything (so
//! `f+0 a b` prints as `kprobe/f+0(a, b)`) and the perf form when the spec has an event
//! name, a group or a line number. Either way [`parse`] reads the output back to an equal
//! spec.

use core::fmt;

use heapless::Vec;

mod arg;
mod ctype;
mod cursor;
mod prog_type;
#[cfg(test)]
mod tests;

pub use arg::{Arg, ArgBase, FetchType, Step};
pub use ctype::{CType, IntWidth, Signedness, TypedArg};
pub use prog_type::{prog_types, program_type};

use cursor::{
    any_class, common_class, err_at, is_class, is_ident_cont, is_ident_start, Cursor, AT, DOT,
    IDENT_CONT, PERF, SYMBOL, WORD,
};

/// Most arguments a probe fetches: the prologue passes them in r2..r5.
pub const MAX_FETCHED_ARGS: usize = 4;
/// Most arguments in a list: the fetched ones plus one `$err`.
pub const MAX_ARGS: usize = MAX_FETCHED_ARGS + 1;
/// Most steps (`.m`, `->m`, `[n]`) in one argument expression.
pub const MAX_STEPS: usize = 8;
/// The probe group sluice creates events in.
pub const DEFAULT_GROUP: &str = "sluice";
/// The group perf used for the same events; accepted in a `GROUP:EVENT=` prefix.
pub const PERF_GROUP: &str = "perf_bpf_probe";

/// A section name that does not parse, with the column where it stops making sense.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ProbeError {
    /// 0-based byte column in the spec.
    pub column: u32,
    /// What was expected or found.
    pub what: &'static str,
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "probe spec, column {}: {}", self.column + 1, self.what)
    }
}

/// What a section name says.
// No heap to box the probe into; a `Section` is short-lived (objects store names and re-parse).
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Section<'a> {
    /// A probe to create and attach to.
    Probe(ProbeSpec<'a>),
    /// Any other name, kept as it is (see the module docs on titles).
    Title(&'a str),
}

/// The kind of probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ProbeKind {
    /// A kernel function or instruction.
    Kprobe,
    /// A kernel function's return.
    Kretprobe,
    /// A user-space function or instruction.
    Uprobe,
    /// A user-space function's return.
    Uretprobe,
    /// A static kernel tracepoint.
    Tracepoint,
}

impl ProbeKind {
    /// Whether it fires on a function's return (so `$retval` exists).
    #[must_use]
    pub fn is_return(self) -> bool {
        matches!(self, ProbeKind::Kretprobe | ProbeKind::Uretprobe)
    }

    /// Whether it probes user space (so dereferences read user memory).
    #[must_use]
    pub fn is_user(self) -> bool {
        matches!(self, ProbeKind::Uprobe | ProbeKind::Uretprobe)
    }
}

/// What is probed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Target<'a> {
    /// A kernel function (kprobes).
    Kernel {
        /// Its symbol (`generic_perform_write`, `foo.isra.0`).
        func: &'a str,
    },
    /// A function in a user-space file (uprobes).
    User {
        /// The binary or library, as written (`/usr/lib/libc.so.6`, `libc.so.6`).
        path: &'a str,
        /// Its symbol.
        func: &'a str,
    },
    /// An offset into a user-space file (libbpf's `uprobe/PATH:0x1234`).
    UserOffset {
        /// The binary or library.
        path: &'a str,
        /// The file offset.
        offset: u64,
    },
    /// A static tracepoint.
    Tracepoint {
        /// Its category (`syscalls`, `sched`).
        category: &'a str,
        /// Its name (`sys_enter_write`).
        name: &'a str,
    },
}

/// Where in the target the probe sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Place {
    /// The function's entry: after its prologue when debug info says where that ends (as
    /// `perf probe FUNC` does), else the symbol itself. Also the place of tracepoints and of
    /// [`Target::UserOffset`].
    Entry,
    /// `+OFF` bytes past the symbol (`+0` is exactly the symbol).
    Offset(u64),
    /// `:LINE`, a line relative to the function's first line (needs debug info).
    Line(u32),
    /// The function's return (`%return`, `kretprobe/`, `uretprobe/`).
    Return,
}

/// A probe's argument list.
#[allow(clippy::large_enum_variant)] // no heap; the expression list is the common case
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Args<'a> {
    /// Expressions to fetch (perhaps none), in order, including at most one `$err`.
    Fetch(Vec<Arg<'a>, MAX_ARGS, u8>),
    /// C types of the first parameters, fetched at the entry by the calling convention.
    Typed(Vec<TypedArg<'a>, MAX_FETCHED_ARGS, u8>),
}

impl<'a> Args<'a> {
    /// No arguments.
    #[must_use]
    pub fn none() -> Self {
        Args::Fetch(Vec::new())
    }

    /// Number of entries, `$err` included.
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            Args::Fetch(v) => v.len(),
            Args::Typed(v) => v.len(),
        }
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of values fetched (`$err` excluded).
    #[must_use]
    pub fn fetched(&self) -> usize {
        match self {
            Args::Fetch(v) => v.iter().filter(|a| !a.is_err()).count(),
            Args::Typed(v) => v.len(),
        }
    }

    /// The expressions, or an empty slice for typed arguments.
    #[must_use]
    pub fn exprs(&self) -> &[Arg<'a>] {
        match self {
            Args::Fetch(v) => v,
            Args::Typed(_) => &[],
        }
    }

    /// The C types, or an empty slice for expressions.
    #[must_use]
    pub fn typed(&self) -> &[TypedArg<'a>] {
        match self {
            Args::Fetch(_) => &[],
            Args::Typed(v) => v,
        }
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Args<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self {
            Args::Fetch(v) => defmt::write!(f, "Fetch({})", v.as_slice()),
            Args::Typed(v) => defmt::write!(f, "Typed({})", v.as_slice()),
        }
    }
}

impl fmt::Display for Args<'_> {
    /// `a, b, c` (expressions perf-style, types canonically).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn list<T: fmt::Display>(
            f: &mut fmt::Formatter<'_>,
            items: &[T],
            sep: &str,
        ) -> fmt::Result {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    f.write_str(sep)?;
                }
                write!(f, "{item}")?;
            }
            Ok(())
        }
        let sep = if f.alternate() { " " } else { ", " };
        match self {
            Args::Fetch(v) => list(f, v, sep),
            Args::Typed(v) => list(f, v, sep),
        }
    }
}

/// A parsed probe definition. Built only by [`parse`], so its parts are consistent: a return
/// probe has [`Place::Return`], typed arguments sit at a function entry, `$retval` only in a
/// return probe, and at most [`MAX_FETCHED_ARGS`] fetched arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ProbeSpec<'a> {
    kind: ProbeKind,
    group: Option<&'a str>,
    event: Option<&'a str>,
    target: Target<'a>,
    place: Place,
    args: Args<'a>,
}

impl<'a> ProbeSpec<'a> {
    /// The kind of probe.
    #[must_use]
    pub fn kind(&self) -> ProbeKind {
        self.kind
    }

    /// The group written in a `GROUP:EVENT=` prefix (`sluice` or `perf_bpf_probe`), if any.
    #[must_use]
    pub fn group(&self) -> Option<&'a str> {
        self.group
    }

    /// The group to create the event in: the one written, else [`DEFAULT_GROUP`].
    #[must_use]
    pub fn group_or_default(&self) -> &'a str {
        self.group.unwrap_or(DEFAULT_GROUP)
    }

    /// The event name written in an `EVENT=` prefix, if any; else the loader picks one.
    #[must_use]
    pub fn event(&self) -> Option<&'a str> {
        self.event
    }

    /// What is probed.
    #[must_use]
    pub fn target(&self) -> Target<'a> {
        self.target
    }

    /// The function probed, if the target has one.
    #[must_use]
    pub fn func(&self) -> Option<&'a str> {
        match self.target {
            Target::Kernel { func } | Target::User { func, .. } => Some(func),
            Target::UserOffset { .. } | Target::Tracepoint { .. } => None,
        }
    }

    /// Where in the target.
    #[must_use]
    pub fn place(&self) -> Place {
        self.place
    }

    /// The arguments.
    #[must_use]
    pub fn args(&self) -> &Args<'a> {
        &self.args
    }

    /// Whether `Display` needs the perf form to say everything (a kernel `:LINE` keeps the
    /// perf form it was first written in; a uprobe's has only the libbpf-style one).
    fn needs_perf_form(&self) -> bool {
        self.event.is_some()
            || self.group.is_some()
            || (matches!(self.place, Place::Line(_))
                && matches!(self.target, Target::Kernel { .. }))
    }
}

impl fmt::Display for ProbeSpec<'_> {
    /// The canonical form (see the module docs): `parse` reads it back to an equal spec.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.needs_perf_form() {
            if let Some(event) = self.event {
                if let Some(group) = self.group {
                    write!(f, "{group}:")?;
                }
                write!(f, "{event}=")?;
            }
            if let Some(func) = self.func() {
                f.write_str(func)?;
            }
            match self.place {
                Place::Entry => {}
                Place::Offset(off) => write!(f, "+{off}")?,
                Place::Line(line) => write!(f, ":{line}")?,
                Place::Return => f.write_str("%return")?,
            }
            if !self.args.is_empty() {
                write!(f, " {:#}", self.args)?;
            }
            return Ok(());
        }
        let prefix = |entry, ret| if self.kind.is_return() { ret } else { entry };
        match self.target {
            Target::Tracepoint { category, name } => {
                return write!(f, "tracepoint/{category}/{name}");
            }
            Target::Kernel { func } => write!(f, "{}/{func}", prefix("kprobe", "kretprobe"))?,
            Target::User { path, func } => {
                write!(f, "{}/{path}:{func}", prefix("uprobe", "uretprobe"))?;
            }
            Target::UserOffset { path, offset } => {
                write!(f, "{}/{path}:{offset:#x}", prefix("uprobe", "uretprobe"))?;
            }
        }
        match self.place {
            Place::Offset(off) => write!(f, "+{off}")?,
            Place::Line(line) => write!(f, ":{line}")?,
            Place::Entry | Place::Return => {}
        }
        if !self.args.is_empty() {
            write!(f, "({})", self.args)?;
        }
        Ok(())
    }
}

/// Reads a section name.
///
/// # Errors
/// A name that clearly means a probe (a `kprobe/`, `kretprobe/`, `uprobe/`, `uretprobe/`,
/// `tracepoint/` or `tp/` prefix, or the perf form, see the module docs) but does not follow
/// the grammar, with the 0-based byte column where it goes wrong.
pub fn parse(section: &str) -> Result<Section<'_>, ProbeError> {
    let mut args = Args::none();
    Ok(match parse_with(section, &mut args)? {
        Some(head) => Section::Probe(head.with_args(args)),
        None => Section::Title(section),
    })
}

/// Checks a section name exactly as [`parse`] reads it, without building the
/// [`ProbeSpec`]: `validate(s)` is `Err(e)` exactly when `parse(s)` is `Err(e)`, with the
/// same column and message. The open phase checks every program's name this way (a
/// `ProbeSpec` is over a kilobyte: building and moving one per program would cost more
/// than the rest of the check).
///
/// # Errors
/// As [`parse`].
pub fn validate(section: &str) -> Result<(), ProbeError> {
    if plainly_valid(section.as_bytes()) {
        return Ok(());
    }
    validate_by_parsing(section)
}

/// The full parse for names [`plainly_valid`] cannot tell: out of line, so the common case
/// does not set up its frame.
#[inline(never)]
fn validate_by_parsing(section: &str) -> Result<(), ProbeError> {
    parse_with(section, &mut ArgCount::default()).map(|_| ())
}

/// Whether `name` is one of the forms most objects use, which [`parse`] accepts without
/// looking further, told in one pass over its bytes: `kprobe/FUNC` and `kretprobe/FUNC`
/// (a kernel symbol and nothing after it), `tracepoint/CAT/NAME` and `tp/CAT/NAME`, and
/// titles (`xdp`, `socket`, `fentry/f`: a libbpf-style `prefix/` of `[A-Za-z0-9_.]` other
/// than the probe kinds, or no `/` and none of the perf form's space, `=`, `+`, `:`,
/// `%`). `false` says nothing: [`parse`] decides.
fn plainly_valid(name: &[u8]) -> bool {
    // Whole names are classified by the bits all (or any) of their bytes have: one table
    // load per byte and no branch, where testing byte by byte cost three times as much.
    let kernel_symbol = |rest: &[u8]| {
        rest.first().is_some_and(|&b| is_ident_start(b)) && common_class(rest) & SYMBOL != 0
    };
    // The commonest forms told by their prefix, compared at once.
    if let Some(rest) = name
        .strip_prefix(b"kprobe/")
        .or_else(|| name.strip_prefix(b"kretprobe/"))
    {
        return kernel_symbol(rest);
    }
    if let Some(rest) = name
        .strip_prefix(b"tracepoint/")
        .or_else(|| name.strip_prefix(b"tp/"))
    {
        return match rest.iter().position(|&b| b == b'/') {
            Some(i) => {
                let (category, name) = rest.split_at(i);
                let name = name.get(1..).unwrap_or_default();
                !category.is_empty()
                    && !name.is_empty()
                    && common_class(category) & common_class(name) & WORD != 0
            }
            None => false,
        };
    }
    let Some(slash) = name.iter().position(|&b| b == b'/') else {
        return any_class(name) & PERF == 0;
    };
    match name.get(..slash).unwrap_or_default() {
        b"uprobe" | b"uretprobe" => false,
        prefix => common_class(prefix) & SYMBOL != 0,
    }
}

/// Everything of a [`ProbeSpec`] but its arguments, which go to an [`ArgSink`].
#[derive(Clone, Copy)]
struct Head<'a> {
    kind: ProbeKind,
    group: Option<&'a str>,
    event: Option<&'a str>,
    target: Target<'a>,
    place: Place,
}

impl<'a> Head<'a> {
    fn with_args(self, args: Args<'a>) -> ProbeSpec<'a> {
        ProbeSpec {
            kind: self.kind,
            group: self.group,
            event: self.event,
            target: self.target,
            place: self.place,
            args,
        }
    }
}

/// Where the arguments of a name go as they are read: an [`Args`] list ([`parse`]) or
/// only their counts ([`validate`]). Both enforce the same limits with the same errors.
trait ArgSink<'a> {
    /// Appends an expression (found at column `at`): at most [`MAX_FETCHED_ARGS`]
    /// fetched, one `$err`.
    fn push_expr(&mut self, arg: Arg<'a>, at: usize) -> Result<(), ProbeError>;
    /// Switches the (empty) list to C types.
    fn start_typed(&mut self);
    /// Appends a C type (found at column `at`): at most [`MAX_FETCHED_ARGS`].
    fn push_typed(&mut self, arg: TypedArg<'a>, at: usize) -> Result<(), ProbeError>;
}

impl<'a> ArgSink<'a> for Args<'a> {
    fn push_expr(&mut self, arg: Arg<'a>, at: usize) -> Result<(), ProbeError> {
        match self {
            Args::Fetch(v) => push_arg(v, arg, at),
            Args::Typed(_) => Err(err_at(
                at,
                "C types and expressions mixed in one argument list",
            )),
        }
    }

    fn start_typed(&mut self) {
        *self = Args::Typed(Vec::new());
    }

    fn push_typed(&mut self, arg: TypedArg<'a>, at: usize) -> Result<(), ProbeError> {
        match self {
            Args::Typed(v) => v
                .push(arg)
                .map_err(|_| err_at(at, "more than 4 fetched arguments (r2..r5)")),
            Args::Fetch(_) => Err(err_at(
                at,
                "C types and expressions mixed in one argument list",
            )),
        }
    }
}

/// The counts [`validate`] keeps instead of the arguments.
#[derive(Default)]
struct ArgCount {
    /// Entries, `$err` included.
    len: usize,
    /// Whether a `$err` was seen.
    err: bool,
}

impl<'a> ArgSink<'a> for ArgCount {
    fn push_expr(&mut self, arg: Arg<'a>, at: usize) -> Result<(), ProbeError> {
        if arg.is_err() {
            if self.err {
                return Err(err_at(at, "$err given twice"));
            }
            self.err = true;
        } else if self.len - usize::from(self.err) >= MAX_FETCHED_ARGS {
            return Err(err_at(at, "more than 4 fetched arguments (r2..r5)"));
        }
        if self.len >= MAX_ARGS {
            return Err(err_at(at, "too many arguments"));
        }
        self.len += 1;
        Ok(())
    }

    fn start_typed(&mut self) {}

    fn push_typed(&mut self, _: TypedArg<'a>, at: usize) -> Result<(), ProbeError> {
        if self.len >= MAX_FETCHED_ARGS {
            return Err(err_at(at, "more than 4 fetched arguments (r2..r5)"));
        }
        self.len += 1;
        Ok(())
    }
}

/// Whether a non-empty `uprobe/` body names no binary (no `:` before any argument list):
/// libbpf reads such a section as a manually attached uprobe.
fn is_manual_uprobe(body: &[u8]) -> bool {
    !body.is_empty() && !body.iter().take_while(|&&b| b != b'(').any(|&b| b == b':')
}

/// [`parse`] with the arguments going to `args`: `None` for a title.
fn parse_with<'a>(
    section: &'a str,
    args: &mut impl ArgSink<'a>,
) -> Result<Option<Head<'a>>, ProbeError> {
    let bytes = section.as_bytes();
    if let Some(slash) = bytes.iter().position(|&b| b == b'/') {
        let prefix = bytes.get(..slash).unwrap_or_default();
        let start = slash.saturating_add(1);
        let head = match prefix {
            b"kprobe" => Some(kernel(section, start, false, args)?),
            b"kretprobe" => Some(kernel(section, start, true, args)?),
            // libbpf accepts `uprobe/FUNC` with no binary (bcc's libbpf-tools ship
            // `uretprobe/readline`): a program attached by hand, not auto-attachable, so a
            // title here rather than an error.
            b"uprobe" | b"uretprobe"
                if is_manual_uprobe(bytes.get(start..).unwrap_or_default()) =>
            {
                None
            }
            b"uprobe" => Some(user(section, start, false, args)?),
            b"uretprobe" => Some(user(section, start, true, args)?),
            b"tracepoint" | b"tp" => Some(tracepoint(section, start)?),
            _ => None,
        };
        if head.is_some() {
            return Ok(head);
        }
    }
    if is_perf_form(section) {
        return perf(section, args).map(Some);
    }
    Ok(None)
}

/// Whether a name is meant as the perf form: not a libbpf-style `prefix/...` (a prefix of
/// `[A-Za-z0-9_.]`), and either with an argument or with `=`, `+`, `:` or `%` in its first word.
fn is_perf_form(section: &str) -> bool {
    if let Some((prefix, _)) = section.split_once('/') {
        if prefix.bytes().all(|b| is_ident_cont(b) || b == b'.') {
            return false;
        }
    }
    let trimmed = section.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let head_len = trimmed
        .find(|c: char| c.is_ascii_whitespace())
        .unwrap_or(trimmed.len());
    let (head, rest) = trimmed.split_at(head_len);
    let has_args = rest.bytes().any(|b| !b.is_ascii_whitespace());
    has_args || head.bytes().any(|b| matches!(b, b'=' | b'+' | b':' | b'%'))
}

/// A kernel function symbol: `[A-Za-z_][A-Za-z0-9_.]*` (GCC's `.isra.0`, `.cold` suffixes).
fn kernel_func<'a>(c: &mut Cursor<'a>) -> Result<&'a str, ProbeError> {
    if !c.peek().is_some_and(is_ident_start) {
        return Err(c.err("expected a function name"));
    }
    Ok(c.take_while(|b| is_class(b, IDENT_CONT | DOT)))
}

/// A user-space symbol: also allows `@` for versioned names (`memcpy@GLIBC_2.14`).
fn user_func<'a>(c: &mut Cursor<'a>) -> Result<&'a str, ProbeError> {
    if !c.peek().is_some_and(is_ident_start) {
        return Err(c.err("expected a function name or an offset"));
    }
    Ok(c.take_while(|b| is_class(b, IDENT_CONT | DOT | AT)))
}

/// `kprobe/FUNC[+OFF|:LINE][(ARGS)]` or `kretprobe/FUNC[(ARGS)]`, from column `start`.
fn kernel<'a>(
    s: &'a str,
    start: usize,
    ret: bool,
    args: &mut impl ArgSink<'a>,
) -> Result<Head<'a>, ProbeError> {
    let mut c = Cursor::new(s, start, s.len());
    let func = kernel_func(&mut c)?;
    let kind = if ret {
        ProbeKind::Kretprobe
    } else {
        ProbeKind::Kprobe
    };
    let place = place_and_list_start(&mut c, ret)?;
    paren_list(&mut c, kind, place, args)?;
    Ok(Head {
        kind,
        group: None,
        event: None,
        target: Target::Kernel { func },
        place,
    })
}

/// `uprobe/PATH:FUNC[+OFF|:LINE][(ARGS)]`, `uprobe/PATH:OFFSET[(ARGS)]`, `uretprobe/...`.
fn user<'a>(
    s: &'a str,
    start: usize,
    ret: bool,
    args: &mut impl ArgSink<'a>,
) -> Result<Head<'a>, ProbeError> {
    let mut c = Cursor::new(s, start, s.len());
    // libbpf takes the path up to the first ':'.
    let path = c.take_while(|b| b != b':' && b != b'(' && b != b')' && !b.is_ascii_whitespace());
    if path.is_empty() {
        return Err(c.err("expected a path"));
    }
    if let Some(bad) = path.bytes().position(|b| b.is_ascii_control()) {
        return Err(err_at(
            start.saturating_add(bad),
            "control character in path",
        ));
    }
    if !c.eat(b':') {
        return Err(c.err(if c.at_end() {
            "expected ':FUNC' after the path"
        } else {
            "unexpected character in path"
        }));
    }
    let kind = if ret {
        ProbeKind::Uretprobe
    } else {
        ProbeKind::Uprobe
    };
    let (target, place) = if c.peek().is_some_and(|b| b.is_ascii_digit()) {
        let offset = c.number()?;
        let place = if ret { Place::Return } else { Place::Entry };
        if c.peek() == Some(b'+') {
            return Err(c.err("an offset target takes no '+OFF'"));
        }
        if !c.at_end() && c.peek() != Some(b'(') {
            return Err(c.err("unexpected character after the offset"));
        }
        (Target::UserOffset { path, offset }, place)
    } else {
        let func = user_func(&mut c)?;
        (
            Target::User { path, func },
            place_and_list_start(&mut c, ret)?,
        )
    };
    paren_list(&mut c, kind, place, args)?;
    Ok(Head {
        kind,
        group: None,
        event: None,
        target,
        place,
    })
}

/// After a function name: `[+OFF|:LINE]`, then the end or a `(`.
fn place_and_list_start(c: &mut Cursor<'_>, ret: bool) -> Result<Place, ProbeError> {
    let place = if c.peek() == Some(b'+') {
        if ret {
            return Err(c.err("a return probe takes no offset"));
        }
        c.bump();
        Place::Offset(c.number()?)
    } else if c.peek() == Some(b':') {
        if ret {
            return Err(c.err("a return probe takes no line"));
        }
        c.bump();
        let at = c.pos();
        let line = c.number()?;
        Place::Line(u32::try_from(line).map_err(|_| err_at(at, "line number too large"))?)
    } else if ret {
        Place::Return
    } else {
        Place::Entry
    };
    if !c.at_end() && c.peek() != Some(b'(') {
        return Err(c.err("unexpected character after the function"));
    }
    Ok(place)
}

/// `[(ARG, ...)]` to the end of the cursor's region.
fn paren_list<'a>(
    c: &mut Cursor<'a>,
    kind: ProbeKind,
    place: Place,
    args: &mut impl ArgSink<'a>,
) -> Result<(), ProbeError> {
    if c.at_end() {
        return Ok(());
    }
    let open = c.pos();
    if !c.eat(b'(') {
        return Err(c.err("expected '('"));
    }
    let s = c.source();
    let inner_start = c.pos();
    // The ')' that closes the list: arguments hold parentheses only as balanced memory
    // reads (`+8(%sp)`), and no commas.
    let mut depth = 0usize;
    let mut close = None;
    for (i, b) in c.rest().bytes().enumerate() {
        match b {
            b'(' => depth = depth.saturating_add(1),
            b')' if depth == 0 => {
                close = inner_start.checked_add(i);
                break;
            }
            b')' => depth -= 1,
            _ => {}
        }
    }
    let close = close.ok_or_else(|| err_at(open, "unbalanced '(': no ')'"))?;
    let after = close.saturating_add(1);
    if after < c.end() {
        return Err(err_at(after, "unexpected text after ')'"));
    }
    // Split on the commas outside parentheses; the first item decides whether the list is C
    // types or expressions.
    let mut typed = false;
    let mut first = true;
    let mut item_start = inner_start;
    let mut depth = 0usize;
    for (i, b) in s
        .bytes()
        .enumerate()
        .take(close.saturating_add(1))
        .skip(inner_start)
    {
        match b {
            b'(' => depth = depth.saturating_add(1),
            b')' if i != close => depth = depth.saturating_sub(1),
            _ => {}
        }
        if (b != b',' || depth > 0) && i != close {
            continue;
        }
        let (a, z) = trim(s, item_start, i);
        item_start = i.saturating_add(1);
        let text = s.get(a..z).unwrap_or("");
        if text.is_empty() {
            return Err(err_at(a, "empty argument"));
        }
        let is_type = ctype::looks_like_type(text);
        if first {
            first = false;
            if is_type {
                let at_entry = matches!(kind, ProbeKind::Kprobe | ProbeKind::Uprobe)
                    && matches!(place, Place::Entry | Place::Offset(0));
                if !at_entry {
                    return Err(err_at(
                        a,
                        "typed arguments need a function entry (no offset, no return)",
                    ));
                }
                typed = true;
                args.start_typed();
            }
        } else if is_type != typed {
            return Err(err_at(
                a,
                "C types and expressions mixed in one argument list",
            ));
        }
        if typed {
            args.push_typed(TypedArg::parse(s, a, z)?, a)?;
        } else {
            args.push_expr(Arg::parse(s, a, z, kind.is_return())?, a)?;
        }
    }
    Ok(())
}

/// Appends `arg` (found at column `at`), enforcing the fetch limit and a single `$err`.
fn push_arg<'a>(
    v: &mut Vec<Arg<'a>, MAX_ARGS, u8>,
    arg: Arg<'a>,
    at: usize,
) -> Result<(), ProbeError> {
    if arg.is_err() {
        if v.iter().any(Arg::is_err) {
            return Err(err_at(at, "$err given twice"));
        }
    } else if v.iter().filter(|a| !a.is_err()).count() >= MAX_FETCHED_ARGS {
        return Err(err_at(at, "more than 4 fetched arguments (r2..r5)"));
    }
    v.push(arg).map_err(|_| err_at(at, "too many arguments"))
}

/// `s[a..z]` without ASCII whitespace at either end, as positions.
fn trim(s: &str, mut a: usize, mut z: usize) -> (usize, usize) {
    let bytes = s.as_bytes();
    while a < z && bytes.get(a).is_some_and(u8::is_ascii_whitespace) {
        a += 1;
    }
    while z > a && bytes.get(z - 1).is_some_and(u8::is_ascii_whitespace) {
        z -= 1;
    }
    (a, z)
}

/// `tracepoint/CAT/NAME` (or `tp/`), from column `start`.
fn tracepoint(s: &str, start: usize) -> Result<Head<'_>, ProbeError> {
    let mut c = Cursor::new(s, start, s.len());
    let word = |b: u8| is_ident_cont(b) || b == b'-';
    let category = c.take_while(word);
    if category.is_empty() {
        return Err(c.err("expected a tracepoint category"));
    }
    if !c.eat(b'/') {
        return Err(c.err(if c.at_end() {
            "expected '/NAME' after the tracepoint category"
        } else {
            "unexpected character in tracepoint category"
        }));
    }
    let name = c.take_while(word);
    if name.is_empty() {
        return Err(c.err("expected a tracepoint name"));
    }
    if !c.at_end() {
        return Err(
            c.err("unexpected character in tracepoint name (tracepoints take no arguments)")
        );
    }
    Ok(Head {
        kind: ProbeKind::Tracepoint,
        group: None,
        event: None,
        target: Target::Tracepoint { category, name },
        place: Place::Entry,
    })
}

/// The perf form `[[GROUP:]EVENT=]FUNC[+OFF|:LINE|%return] [ARG ...]`.
fn perf<'a>(s: &'a str, args: &mut impl ArgSink<'a>) -> Result<Head<'a>, ProbeError> {
    let mut c = Cursor::new(s, 0, s.len());
    c.skip_space();
    let head_start = c.pos();
    let head_end = s
        .get(head_start..)
        .and_then(|h| h.find(|ch: char| ch.is_ascii_whitespace()))
        .and_then(|i| head_start.checked_add(i))
        .unwrap_or(s.len());
    let head = c.slice(head_start, head_end);

    let mut group = None;
    let mut event = None;
    let mut h = Cursor::new(s, head_start, head_end);
    if let Some(eq) = head.find('=') {
        let left_end = head_start.saturating_add(eq);
        let left = c.slice(head_start, left_end);
        let mut ev_start = head_start;
        if let Some(colon) = left.find(':') {
            let g = c.slice(head_start, head_start.saturating_add(colon));
            if g != DEFAULT_GROUP && g != PERF_GROUP {
                return Err(err_at(
                    head_start,
                    "unknown probe group (sluice or perf_bpf_probe)",
                ));
            }
            group = Some(g);
            ev_start = head_start.saturating_add(colon).saturating_add(1);
        }
        let mut e = Cursor::new(s, ev_start, left_end);
        let name = e.ident().ok_or_else(|| e.err("expected an event name"))?;
        if !e.at_end() {
            return Err(e.err("unexpected character in event name"));
        }
        event = Some(name);
        h = Cursor::new(s, left_end.saturating_add(1), head_end);
    }

    let func = kernel_func(&mut h)?;
    let (kind, place) = if h.eat(b'+') {
        (ProbeKind::Kprobe, Place::Offset(h.number()?))
    } else if h.eat(b':') {
        let at = h.pos();
        let line = h.number()?;
        (
            ProbeKind::Kprobe,
            Place::Line(u32::try_from(line).map_err(|_| err_at(at, "line number too large"))?),
        )
    } else if h.eat(b'%') {
        if !h.eat_str("return") {
            return Err(h.err("expected 'return' after '%'"));
        }
        (ProbeKind::Kretprobe, Place::Return)
    } else {
        (ProbeKind::Kprobe, Place::Entry)
    };
    if !h.at_end() {
        return Err(h.err("unexpected character after the function"));
    }

    let mut a = Cursor::new(s, head_end, s.len());
    loop {
        a.skip_space();
        if a.at_end() {
            break;
        }
        let start = a.pos();
        let token = a.take_while(|b| !b.is_ascii_whitespace());
        // A type name is never a variable; C types need the `kprobe/FUNC(...)` form.
        if ctype::looks_like_type(token) {
            return Err(err_at(
                start,
                "C types need the kprobe/FUNC(TYPE, ...) form",
            ));
        }
        args.push_expr(Arg::parse(s, start, a.pos(), kind.is_return())?, start)?;
    }
    Ok(Head {
        kind,
        group,
        event,
        target: Target::Kernel { func },
        place,
    })
}
