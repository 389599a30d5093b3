//! A byte cursor over one region of a section name that reports errors by column.
//!
//! Positions are byte offsets into the *whole* section name, so every error points at the
//! column a reader sees. Predicates given to [`Cursor::take_while`] only accept ASCII bytes or
//! stop on ASCII bytes, so every slice the cursor hands out starts and ends on a `char`
//! boundary; slicing still goes through `str::get`, so a mistake would give an error, never a
//! panic.

use super::error::ProbeError;

/// A cursor over `s[pos..end]`.
#[derive(Clone, Copy)]
pub(super) struct Cursor<'a> {
    s: &'a str,
    pos: usize,
    end: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor over `s[start..end]` (clamped to `s`).
    pub(super) fn new(s: &'a str, start: usize, end: usize) -> Self {
        let end = end.min(s.len());
        Cursor {
            s,
            pos: start.min(end),
            end,
        }
    }

    /// The current byte position (a column into the whole section name).
    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    /// The end of the region.
    pub(super) fn end(&self) -> usize {
        self.end
    }

    /// The whole section name.
    pub(super) fn source(&self) -> &'a str {
        self.s
    }

    /// Whether the region is exhausted.
    pub(super) fn at_end(&self) -> bool {
        self.pos >= self.end
    }

    /// The byte under the cursor.
    pub(super) fn peek(&self) -> Option<u8> {
        self.peek_at(0)
    }

    /// The byte `n` bytes ahead of the cursor, inside the region.
    pub(super) fn peek_at(&self, n: usize) -> Option<u8> {
        let at = self.pos.checked_add(n)?;
        if at < self.end {
            self.s.as_bytes().get(at).copied()
        } else {
            None
        }
    }

    /// Skips one byte.
    pub(super) fn bump(&mut self) {
        if self.pos < self.end {
            self.pos += 1;
        }
    }

    /// Skips `b` if it is under the cursor.
    pub(super) fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.bump();
            true
        } else {
            false
        }
    }

    /// Skips `t` if the region continues with it.
    pub(super) fn eat_str(&mut self, t: &str) -> bool {
        let rest = self.rest();
        if rest.starts_with(t) {
            self.pos = self.pos.saturating_add(t.len());
            true
        } else {
            false
        }
    }

    /// The unread part of the region.
    pub(super) fn rest(&self) -> &'a str {
        self.slice(self.pos, self.end)
    }

    /// `s[a..b]`, or `""` if that is not a valid slice (never happens with ASCII stops).
    pub(super) fn slice(&self, a: usize, b: usize) -> &'a str {
        self.s.get(a..b).unwrap_or("")
    }

    /// Takes bytes while `pred` holds; `pred` must be false on some ASCII byte set only, or
    /// true only on ASCII bytes, so the slice ends on a `char` boundary.
    pub(super) fn take_while(&mut self, pred: impl Fn(u8) -> bool) -> &'a str {
        let start = self.pos;
        // One scan of the region's bytes (no per-byte bound checks through `peek`).
        let region = self.s.as_bytes().get(start..self.end).unwrap_or_default();
        let n = region
            .iter()
            .position(|&b| !pred(b))
            .unwrap_or(region.len());
        self.pos = start.saturating_add(n);
        // A multi-byte character cut in the middle would make `get` fail: step back to the
        // last boundary so the slice stays valid.
        while !self.s.is_char_boundary(self.pos) && self.pos > start {
            self.pos -= 1;
        }
        self.slice(start, self.pos)
    }

    /// Skips ASCII whitespace.
    pub(super) fn skip_space(&mut self) {
        self.take_while(|b| b.is_ascii_whitespace());
    }

    /// An error at the cursor.
    pub(super) fn err(&self, what: &'static str) -> ProbeError {
        err_at(self.pos, what)
    }
}

/// An error at byte column `pos`.
pub(super) fn err_at(pos: usize, what: &'static str) -> ProbeError {
    ProbeError {
        column: u32::try_from(pos).unwrap_or(u32::MAX),
        what,
    }
}

/// Byte class bit: `[A-Za-z_]`, the first byte of a C identifier.
pub(super) const IDENT_START: u8 = 1;
/// Byte class bit: `[A-Za-z0-9_]`, later bytes of a C identifier.
pub(super) const IDENT_CONT: u8 = 2;
/// Byte class bit: `.` (GCC's `.isra.0` symbol suffixes).
pub(super) const DOT: u8 = 4;
/// Byte class bit: `@` (versioned user-space symbols).
pub(super) const AT: u8 = 8;
/// Byte class bit: `[A-Za-z0-9_.]`, a later byte of a kernel symbol (`IDENT_CONT` or `DOT`).
pub(super) const SYMBOL: u8 = 16;
/// Byte class bit: `[A-Za-z0-9_-]`, a byte of a tracepoint's category or name.
pub(super) const WORD: u8 = 32;
/// Byte class bit: ASCII whitespace, `=`, `+`, `:`, `%`: the bytes of perf's form.
pub(super) const PERF: u8 = 64;

/// The class bits of every byte: one load per byte where a chain of range compares
/// would be half a dozen instructions (names are scanned for every program at open).
static CLASSES: [u8; 256] = classes();

// Runs at compile time only: an index out of range would fail the build, not panic.
#[allow(clippy::indexing_slicing)]
const fn classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let mut c = 0;
        if b.is_ascii_alphabetic() || b == b'_' {
            c |= IDENT_START | IDENT_CONT;
        }
        if b.is_ascii_digit() {
            c |= IDENT_CONT;
        }
        if b == b'.' {
            c |= DOT;
        }
        if b == b'@' {
            c |= AT;
        }
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' {
            c |= SYMBOL;
        }
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            c |= WORD;
        }
        if b.is_ascii_whitespace() || matches!(b, b'=' | b'+' | b':' | b'%') {
            c |= PERF;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// Whether byte `b` is in any of the classes of `mask`.
#[inline(always)]
pub(super) fn is_class(b: u8, mask: u8) -> bool {
    CLASSES.get(usize::from(b)).copied().unwrap_or(0) & mask != 0
}

/// The class bits every byte of `bytes` has (all bits for none): one load and one `and`
/// per byte, no branch.
#[inline(always)]
pub(super) fn common_class(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0xff, |acc, &b| acc & class_of(b))
}

/// The class bits any byte of `bytes` has.
#[inline(always)]
pub(super) fn any_class(bytes: &[u8]) -> u8 {
    bytes.iter().fold(0, |acc, &b| acc | class_of(b))
}

#[inline(always)]
fn class_of(b: u8) -> u8 {
    CLASSES.get(usize::from(b)).copied().unwrap_or(0)
}

/// `[A-Za-z_]`: first byte of a C identifier.
#[inline(always)]
pub(super) fn is_ident_start(b: u8) -> bool {
    is_class(b, IDENT_START)
}

/// `[A-Za-z0-9_]`: later bytes of a C identifier.
#[inline(always)]
pub(super) fn is_ident_cont(b: u8) -> bool {
    is_class(b, IDENT_CONT)
}

impl<'a> Cursor<'a> {
    /// A C identifier, or `None` (cursor unmoved) if none starts here.
    pub(super) fn ident(&mut self) -> Option<&'a str> {
        if self.peek().is_some_and(is_ident_start) {
            Some(self.take_while(is_ident_cont))
        } else {
            None
        }
    }

    /// An unsigned number the way `strtoul(s, _, 0)` reads it (`0x` hex, leading `0` octal,
    /// else decimal), as both `perf probe` and libbpf do.
    ///
    /// # Errors
    /// No digit here, a digit that is not of the base, or a value above `u64::MAX`.
    pub(super) fn number(&mut self) -> Result<u64, ProbeError> {
        let start = self.pos;
        if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
            return Err(self.err("expected a number"));
        }
        let radix = if self.peek() == Some(b'0') && matches!(self.peek_at(1), Some(b'x' | b'X')) {
            self.bump();
            self.bump();
            if !self.peek().is_some_and(|b| b.is_ascii_hexdigit()) {
                return Err(self.err("expected hex digits after 0x"));
            }
            16
        } else if self.peek() == Some(b'0') && self.peek_at(1).is_some_and(|b| b.is_ascii_digit()) {
            self.bump();
            8
        } else {
            10
        };
        let mut value: u64 = 0;
        while let Some(b) = self.peek() {
            if !b.is_ascii_alphanumeric() {
                break;
            }
            let digit = char::from(b).to_digit(radix).ok_or_else(|| {
                self.err(if radix == 8 {
                    "not an octal digit"
                } else {
                    "not a digit"
                })
            })?;
            value = value
                .checked_mul(u64::from(radix))
                .and_then(|v| v.checked_add(u64::from(digit)))
                .ok_or_else(|| err_at(start, "number too large"))?;
            self.bump();
        }
        Ok(value)
    }
}
