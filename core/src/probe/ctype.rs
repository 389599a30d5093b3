//! C parameter types for typed entry arguments without debug info:
//! `kprobe/vfs_read(struct file *, char *buf, size_t)`.
//!
//! Only what decides how a value sits in an argument register matters: whether it is a
//! pointer, and otherwise its width and signedness. Widths that depend on the ABI (`long`,
//! pointers) stay symbolic so the architecture tables decide.

use core::fmt;

use super::cursor::{err_at, is_ident_cont, Cursor};
use super::error::ProbeError;

/// The width of an integer parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum IntWidth {
    /// 1 byte.
    W8,
    /// 2 bytes.
    W16,
    /// 4 bytes.
    W32,
    /// 8 bytes.
    W64,
    /// The ABI's `long` (8 bytes on LP64, 4 on ILP32).
    Long,
}

/// The signedness of an integer parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Signedness {
    /// Sign-extended.
    Signed,
    /// Zero-extended.
    Unsigned,
    /// Plain `char`: the ABI decides (signed on x86 user space, unsigned on arm64 and in
    /// kernels since 6.2, which build with `-funsigned-char`).
    PlainChar,
}

/// A C parameter type as far as the calling convention cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CType {
    /// Any pointer (`void *`, `const char *`, `struct file *`); its size is the ABI's.
    Pointer,
    /// An integer (or `bool`, or an `enum`, taken as `unsigned int`).
    Int {
        /// Its width.
        width: IntWidth,
        /// Its signedness.
        sign: Signedness,
    },
}

/// One typed entry argument: a C type and, optionally, the parameter's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TypedArg<'a> {
    /// The type.
    pub ty: CType,
    /// The parameter name written after the type (`buf` in `char *buf`), if any.
    pub name: Option<&'a str>,
}

/// Typedef names known without debug info, with what they stand for.
const TYPEDEFS: &[(&str, CType)] = {
    use IntWidth::{Long, W16, W32, W64, W8};
    use Signedness::{Signed as S, Unsigned as U};
    const fn int(width: IntWidth, sign: Signedness) -> CType {
        CType::Int { width, sign }
    }
    &[
        ("u8", int(W8, U)),
        ("u16", int(W16, U)),
        ("u32", int(W32, U)),
        ("u64", int(W64, U)),
        ("s8", int(W8, S)),
        ("s16", int(W16, S)),
        ("s32", int(W32, S)),
        ("s64", int(W64, S)),
        ("__u8", int(W8, U)),
        ("__u16", int(W16, U)),
        ("__u32", int(W32, U)),
        ("__u64", int(W64, U)),
        ("__s8", int(W8, S)),
        ("__s16", int(W16, S)),
        ("__s32", int(W32, S)),
        ("__s64", int(W64, S)),
        ("uint8_t", int(W8, U)),
        ("uint16_t", int(W16, U)),
        ("uint32_t", int(W32, U)),
        ("uint64_t", int(W64, U)),
        ("int8_t", int(W8, S)),
        ("int16_t", int(W16, S)),
        ("int32_t", int(W32, S)),
        ("int64_t", int(W64, S)),
        ("size_t", int(Long, U)),
        ("ssize_t", int(Long, S)),
        ("loff_t", int(W64, S)),
        ("pid_t", int(W32, S)),
        ("bool", int(W8, U)),
        ("_Bool", int(W8, U)),
    ]
};

/// Qualifiers and kernel address-space annotations, which do not change the register.
const QUALIFIERS: &[&str] = &[
    "const",
    "volatile",
    "restrict",
    "__restrict",
    "__user",
    "__kernel",
    "__iomem",
    "__percpu",
    "__rcu",
    "__force",
];

/// Keywords that make up builtin integer types.
const BUILTIN: &[&str] = &["char", "short", "int", "long", "signed", "unsigned"];

/// Words that only ever start a C type, never an argument expression.
const TYPE_START: &[&str] = &[
    "void", "const", "volatile", "struct", "union", "enum", "float", "double",
];

/// Whether `word` is a C keyword that only appears in types (`int`, `struct`, `const`, ...).
pub(super) fn is_type_keyword(word: &str) -> bool {
    TYPE_START.contains(&word) || BUILTIN.contains(&word) || QUALIFIERS.contains(&word)
}

/// Whether the argument text `item` is meant as a C type rather than an expression: it has a
/// `*`, or its first word is a C type keyword or a known typedef.
pub(super) fn looks_like_type(item: &str) -> bool {
    if item.contains('*') {
        return true;
    }
    let first = item
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("");
    // `u32` followed by `=`, `.`, `->` ... is still an expression only if it could be one;
    // a bare known type name is a type.
    let next = item.as_bytes().get(first.len()).copied();
    let word_ends_cleanly = next.is_none() || next.is_some_and(|b| b.is_ascii_whitespace());
    TYPE_START.contains(&first)
        || BUILTIN.contains(&first)
        || (word_ends_cleanly && TYPEDEFS.iter().any(|(n, _)| *n == first))
}

/// What the words before any `*` have said so far.
#[derive(Clone, Copy)]
enum Spec {
    /// Nothing yet.
    Empty,
    /// Builtin integer keywords, counted in [`BUILTIN`] order.
    Builtin([u8; 6]),
    /// `void`.
    Void,
    /// A known typedef or an `enum`.
    Known(CType),
    /// `struct X` or `union X` (at column, is_struct): only valid behind a pointer.
    Tag(usize, bool),
    /// An unknown typedef name at a column: only valid behind a pointer.
    Unknown(usize),
}

impl<'a> TypedArg<'a> {
    /// Parses `s[start..end]` as a C parameter declaration (no arrays or function types).
    pub(super) fn parse(s: &'a str, start: usize, end: usize) -> Result<Self, ProbeError> {
        let mut c = Cursor::new(s, start, end);
        let mut spec = Spec::Empty;
        let mut pointers = 0u32;
        let mut name: Option<&'a str> = None;

        loop {
            c.skip_space();
            let at = c.pos();
            if c.at_end() {
                break;
            }
            if c.eat(b'*') {
                if matches!(spec, Spec::Empty) {
                    return Err(err_at(at, "expected a type before '*'"));
                }
                if name.is_some() {
                    return Err(err_at(at, "unexpected '*' after the parameter name"));
                }
                pointers = pointers.saturating_add(1);
                continue;
            }
            let Some(word) = c.ident() else {
                return Err(c.err("unexpected character in C type"));
            };
            if QUALIFIERS.contains(&word) && name.is_none() {
                continue;
            }
            if matches!(word, "float" | "double") {
                return Err(err_at(
                    at,
                    "floating-point arguments are not in integer registers",
                ));
            }
            if name.is_some() {
                return Err(err_at(at, "unexpected word after the parameter name"));
            }
            let keyword = BUILTIN.iter().position(|k| *k == word);
            match (spec, keyword) {
                (Spec::Builtin(mut counts), Some(i)) if pointers == 0 => {
                    if let Some(n) = counts.get_mut(i) {
                        *n = n.saturating_add(1);
                    }
                    spec = Spec::Builtin(counts);
                }
                (Spec::Empty, Some(i)) => {
                    let mut counts = [0u8; 6];
                    if let Some(n) = counts.get_mut(i) {
                        *n = 1;
                    }
                    spec = Spec::Builtin(counts);
                }
                (Spec::Empty, None) => {
                    spec = match word {
                        "void" => Spec::Void,
                        "struct" | "union" | "enum" => {
                            c.skip_space();
                            let tag = c.take_while(is_ident_cont);
                            if tag.is_empty() {
                                return Err(c.err("expected a tag name"));
                            }
                            if word == "enum" {
                                Spec::Known(CType::Int {
                                    width: IntWidth::W32,
                                    sign: Signedness::Unsigned,
                                })
                            } else {
                                Spec::Tag(at, word == "struct")
                            }
                        }
                        _ => match TYPEDEFS.iter().find(|(n, _)| *n == word) {
                            Some((_, t)) => Spec::Known(*t),
                            None => Spec::Unknown(at),
                        },
                    };
                }
                (_, Some(_)) => {
                    return Err(err_at(at, "unexpected integer keyword after a type"));
                }
                (_, None) => {
                    if TYPE_START.contains(&word) || TYPEDEFS.iter().any(|(n, _)| *n == word) {
                        return Err(err_at(at, "a type name cannot be the parameter name"));
                    }
                    name = Some(word);
                }
            }
        }

        let ty = match spec {
            Spec::Empty => return Err(err_at(start, "empty argument")),
            _ if pointers > 0 => CType::Pointer,
            Spec::Void => return Err(err_at(start, "void is only valid behind a pointer")),
            Spec::Tag(at, true) => {
                return Err(err_at(
                    at,
                    "a struct passed by value has no register; use a pointer",
                ))
            }
            Spec::Tag(at, false) => {
                return Err(err_at(
                    at,
                    "a union passed by value has no register; use a pointer",
                ))
            }
            Spec::Unknown(at) => {
                return Err(err_at(
                    at,
                    "unknown type name (only a pointer to it is allowed)",
                ))
            }
            Spec::Known(t) => t,
            Spec::Builtin(counts) => builtin(&counts)
                .ok_or_else(|| err_at(start, "invalid combination of integer keywords"))?,
        };
        Ok(TypedArg { ty, name })
    }
}

/// The type of a combination of builtin keywords (`[char, short, int, long, signed, unsigned]`).
fn builtin(counts: &[u8; 6]) -> Option<CType> {
    let [char_, short, int, long, signed, unsigned] = *counts;
    if char_ > 1 || short > 1 || int > 1 || long > 2 || signed > 1 || unsigned > 1 {
        return None;
    }
    if signed > 0 && unsigned > 0 {
        return None;
    }
    let sign = if unsigned > 0 {
        Signedness::Unsigned
    } else {
        Signedness::Signed
    };
    let width = if char_ > 0 {
        if short > 0 || int > 0 || long > 0 {
            return None;
        }
        let sign = match (signed, unsigned) {
            (0, 0) => Signedness::PlainChar,
            _ => sign,
        };
        return Some(CType::Int {
            width: IntWidth::W8,
            sign,
        });
    } else if short > 0 {
        if long > 0 {
            return None;
        }
        IntWidth::W16
    } else if long == 2 {
        IntWidth::W64
    } else if long == 1 {
        IntWidth::Long
    } else {
        IntWidth::W32
    };
    Some(CType::Int { width, sign })
}

impl fmt::Display for CType {
    /// A canonical spelling that parses back to the same type.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use IntWidth::{Long, W16, W32, W64, W8};
        use Signedness::{PlainChar, Signed, Unsigned};
        f.write_str(match *self {
            CType::Pointer => "void *",
            CType::Int {
                width: W8,
                sign: PlainChar,
            } => "char",
            CType::Int {
                width: W8,
                sign: Unsigned,
            } => "u8",
            CType::Int {
                width: W8,
                sign: Signed,
            } => "s8",
            CType::Int {
                width: W16,
                sign: Unsigned,
            } => "u16",
            CType::Int {
                width: W16,
                sign: _,
            } => "s16",
            CType::Int {
                width: W32,
                sign: Unsigned,
            } => "u32",
            CType::Int {
                width: W32,
                sign: _,
            } => "s32",
            CType::Int {
                width: W64,
                sign: Unsigned,
            } => "u64",
            CType::Int {
                width: W64,
                sign: _,
            } => "s64",
            CType::Int {
                width: Long,
                sign: Unsigned,
            } => "unsigned long",
            CType::Int {
                width: Long,
                sign: _,
            } => "long",
        })
    }
}

impl fmt::Display for TypedArg<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.ty, self.name) {
            (CType::Pointer, Some(n)) => write!(f, "void *{n}"),
            (t, Some(n)) => write!(f, "{t} {n}"),
            (t, None) => write!(f, "{t}"),
        }
    }
}
