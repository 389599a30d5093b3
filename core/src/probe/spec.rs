//! What a section name says: [`Section`], a [`ProbeSpec`] (kind, target, place, arguments)
//! and its canonical `Display`.

use core::fmt;

use heapless::Vec;

use super::arg::Arg;
use super::ctype::TypedArg;

/// Most values the prologue passes to the program, in r2..r5 (`$err` included): the first
/// scalar arguments of a list ([`Args::passed`]); C-typed lists have at most this many.
pub const MAX_FETCHED_ARGS: usize = 4;
/// Most arguments a probe records (`$err` excluded): the kernel's fetch-args keep every one
/// beside the sample, strings and those past the first four included (perf's own limit is
/// far higher; each slot costs a [`ProbeSpec`] the size of an argument, 280 bytes).
pub const MAX_RECORDED_ARGS: usize = 8;
/// Most arguments in a list: the recorded ones plus one `$err`.
pub const MAX_ARGS: usize = MAX_RECORDED_ARGS + 1;
/// The probe group sluice creates events in.
pub const DEFAULT_GROUP: &str = "sluice";
/// The group perf used for the same events; accepted in a `GROUP:EVENT=` prefix.
pub const PERF_GROUP: &str = "perf_bpf_probe";

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

    /// Whether entry `index` of [`Args::exprs`] is passed to the program in a register:
    /// `$err` and the scalar (not string) arguments, in order, until [`MAX_FETCHED_ARGS`]
    /// values; the others are only recorded by the kernel beside the sample. C types are
    /// all passed.
    #[must_use]
    pub fn is_passed(&self, index: usize) -> bool {
        match self {
            Args::Typed(v) => index < v.len(),
            Args::Fetch(v) => {
                let mut values = 0usize;
                for (i, a) in v.iter().enumerate() {
                    if a.is_string() {
                        continue;
                    }
                    if i == index {
                        return values < MAX_FETCHED_ARGS;
                    }
                    values += 1;
                }
                false
            }
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

/// A parsed probe definition. Built only by [`parse`](super::parse), so its parts are consistent: a return
/// probe has [`Place::Return`], typed arguments sit at a function entry, `$retval` only in a
/// return probe, at most [`MAX_RECORDED_ARGS`] arguments, and `$err` among those passed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ProbeSpec<'a> {
    pub(super) kind: ProbeKind,
    pub(super) group: Option<&'a str>,
    pub(super) event: Option<&'a str>,
    pub(super) target: Target<'a>,
    pub(super) place: Place,
    pub(super) args: Args<'a>,
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
