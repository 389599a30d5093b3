//! The grammar: section names read into a [`Section`] (the perf form, the libbpf-style
//! prefixes, tracepoints, argument lists), and [`validate`] without building the result.

use heapless::Vec;

use super::arg::Arg;
use super::ctype::{self, TypedArg};
use super::cursor::{
    any_class, common_class, err_at, is_class, is_ident_cont, is_ident_start, Cursor, AT, DOT,
    IDENT_CONT, PERF, SYMBOL, WORD,
};
use super::error::ProbeError;
use super::spec::{
    Args, Place, ProbeKind, ProbeSpec, Section, Target, DEFAULT_GROUP, MAX_ARGS, MAX_FETCHED_ARGS,
    MAX_RECORDED_ARGS, PERF_GROUP,
};

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
pub(super) fn validate_by_parsing(section: &str) -> Result<(), ProbeError> {
    parse_with(section, &mut ArgCount::default()).map(|_| ())
}

/// Whether `name` is one of the forms most objects use, which [`parse`] accepts without
/// looking further, told in one pass over its bytes: `kprobe/FUNC` and `kretprobe/FUNC`
/// (a kernel symbol and nothing after it), `tracepoint/CAT/NAME` and `tp/CAT/NAME`, and
/// titles (`xdp`, `socket`, `fentry/f`: a libbpf-style `prefix/` of `[A-Za-z0-9_.]` other
/// than the probe kinds, or no `/` and none of the perf form's space, `=`, `+`, `:`,
/// `%`). `false` says nothing: [`parse`] decides.
pub(super) fn plainly_valid(name: &[u8]) -> bool {
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
pub(super) struct Head<'a> {
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
pub(super) trait ArgSink<'a> {
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
pub(super) struct ArgCount {
    /// Entries, `$err` included.
    len: usize,
    /// Whether a `$err` was seen.
    err: bool,
    /// Scalar (not string) arguments, `$err` excluded.
    scalars: usize,
}

/// More arguments than a probe records.
const TOO_MANY: &str = "more than 8 arguments";
/// `$err` after the values that fill r2..r5.
const ERR_NOT_PASSED: &str =
    "$err after four scalar arguments: it is passed in r2..r5 with them (put it earlier)";

impl<'a> ArgSink<'a> for ArgCount {
    fn push_expr(&mut self, arg: Arg<'a>, at: usize) -> Result<(), ProbeError> {
        if arg.is_err() {
            if self.err {
                return Err(err_at(at, "$err given twice"));
            }
            if self.scalars >= MAX_FETCHED_ARGS {
                return Err(err_at(at, ERR_NOT_PASSED));
            }
            self.err = true;
        } else if self.len - usize::from(self.err) >= MAX_RECORDED_ARGS {
            return Err(err_at(at, TOO_MANY));
        }
        if self.len >= MAX_ARGS {
            return Err(err_at(at, "too many arguments"));
        }
        if !arg.is_err() && !arg.is_string() {
            self.scalars += 1;
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
pub(super) fn is_manual_uprobe(body: &[u8]) -> bool {
    !body.is_empty() && !body.iter().take_while(|&&b| b != b'(').any(|&b| b == b':')
}

/// [`parse`] with the arguments going to `args`: `None` for a title.
pub(super) fn parse_with<'a>(
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
pub(super) fn is_perf_form(section: &str) -> bool {
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
pub(super) fn kernel_func<'a>(c: &mut Cursor<'a>) -> Result<&'a str, ProbeError> {
    if !c.peek().is_some_and(is_ident_start) {
        return Err(c.err("expected a function name"));
    }
    Ok(c.take_while(|b| is_class(b, IDENT_CONT | DOT)))
}

/// A user-space symbol: also allows `@` for versioned names (`memcpy@GLIBC_2.14`).
pub(super) fn user_func<'a>(c: &mut Cursor<'a>) -> Result<&'a str, ProbeError> {
    if !c.peek().is_some_and(is_ident_start) {
        return Err(c.err("expected a function name or an offset"));
    }
    Ok(c.take_while(|b| is_class(b, IDENT_CONT | DOT | AT)))
}

/// `kprobe/FUNC[+OFF|:LINE][(ARGS)]` or `kretprobe/FUNC[(ARGS)]`, from column `start`.
pub(super) fn kernel<'a>(
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
pub(super) fn user<'a>(
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
pub(super) fn place_and_list_start(c: &mut Cursor<'_>, ret: bool) -> Result<Place, ProbeError> {
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
pub(super) fn paren_list<'a>(
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
pub(super) fn push_arg<'a>(
    v: &mut Vec<Arg<'a>, MAX_ARGS, u8>,
    arg: Arg<'a>,
    at: usize,
) -> Result<(), ProbeError> {
    if arg.is_err() {
        if v.iter().any(Arg::is_err) {
            return Err(err_at(at, "$err given twice"));
        }
        if v.iter().filter(|a| !a.is_string()).count() >= MAX_FETCHED_ARGS {
            return Err(err_at(at, ERR_NOT_PASSED));
        }
    } else if v.iter().filter(|a| !a.is_err()).count() >= MAX_RECORDED_ARGS {
        return Err(err_at(at, TOO_MANY));
    }
    v.push(arg).map_err(|_| err_at(at, "too many arguments"))
}

/// `s[a..z]` without ASCII whitespace at either end, as positions.
pub(super) fn trim(s: &str, mut a: usize, mut z: usize) -> (usize, usize) {
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
pub(super) fn tracepoint(s: &str, start: usize) -> Result<Head<'_>, ProbeError> {
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
pub(super) fn perf<'a>(s: &'a str, args: &mut impl ArgSink<'a>) -> Result<Head<'a>, ProbeError> {
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
