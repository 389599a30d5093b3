//! The argument string of a USDT note (`-4@%edi 8@-8(%rbp) -4@$5` on x86, `-4@x0
//! 8@[sp, 16]` on arm64) and the `struct __bpf_usdt_spec` built from it, byte for byte as
//! libbpf 1.1's `usdt.bpf.h` reads it:
//!
//! ```text
//! struct __bpf_usdt_arg_spec { __u64 val_off; enum arg_type (u32); short reg_off;
//!                              bool arg_signed; char arg_bitshift; }        16 bytes
//! struct __bpf_usdt_spec { struct __bpf_usdt_arg_spec args[12]; __u64 usdt_cookie;
//!                          short arg_cnt; }                                 208 bytes
//! ```
//!
//! `arg_type` is `BPF_USDT_ARG_CONST` (0: `val_off` is the value), `_REG` (1: the register
//! at `reg_off` in the kernel's `struct pt_regs`), `_REG_DEREF` (2: the user memory at
//! that register plus `val_off`). The value is then shifted left and back by
//! `arg_bitshift` (sign-extending when `arg_signed`) to its size.

use crate::arch::Arch;

/// `BPF_USDT_MAX_ARG_CNT`.
pub const MAX_ARGS: usize = 12;
/// `sizeof(struct __bpf_usdt_spec)`.
pub const SPEC_SIZE: usize = 208;
const ARG_SPEC_SIZE: usize = 16;

/// Where an argument's value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ArgLoc<'a> {
    /// A constant.
    Const(i64),
    /// A register, by its offset in the kernel's `pt_regs`.
    Reg {
        /// Offset in `pt_regs`.
        reg_off: u16,
    },
    /// User memory at a register plus an offset.
    Deref {
        /// Offset of the base register in `pt_regs`.
        reg_off: u16,
        /// Added to the register.
        off: i64,
        /// A `%rip`-relative operand's symbol (`sym+8(%rip)`): its address minus the
        /// site's is added to `off` ([`Spec::parse`] asks its resolver).
        symbol: Option<&'a str>,
    },
}

/// One argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Arg<'a> {
    /// Size in bytes: 1, 2, 4 or 8.
    pub size: u8,
    /// Signed (`-4@`).
    pub signed: bool,
    /// Where it is.
    pub loc: ArgLoc<'a>,
}

/// Why an argument spec cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ArgError {
    /// No `SIZE@` prefix, or a size other than 1, 2, 4, 8.
    Size,
    /// A form this architecture's notes do not have, or libbpf's `usdt.bpf.h` cannot
    /// fetch (an x86 scaled-index operand `(%rax,%rdx,8)`).
    Unsupported,
    /// A register the kernel's `pt_regs` has no slot for.
    Register,
    /// A number that does not parse.
    Number,
    /// A `%rip`-relative symbol the binary does not define.
    Symbol,
}

impl core::fmt::Display for ArgError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ArgError::Size => "no size prefix of 1, 2, 4 or 8 bytes (SIZE@)",
            ArgError::Unsupported => "an operand form usdt.bpf.h cannot fetch",
            ArgError::Register => "a register the kernel's pt_regs has no slot for",
            ArgError::Number => "a number that does not parse",
            ArgError::Symbol => "a %rip-relative symbol the binary does not define",
        })
    }
}

impl core::error::Error for ArgError {}

/// Why a note's argument string cannot be used: which argument (0-based) and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SpecError {
    /// The argument's index; [`MAX_ARGS`] for "too many".
    pub index: usize,
    /// Why (`None`: more than [`MAX_ARGS`] arguments).
    pub error: Option<ArgError>,
}

impl core::fmt::Display for SpecError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.error {
            Some(e) => write!(f, "argument #{}: {e}", self.index),
            None => write!(f, "more than {MAX_ARGS} arguments"),
        }
    }
}

impl core::error::Error for SpecError {}

fn number(s: &str) -> Result<i64, ArgError> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => digits.parse::<u64>(),
    }
    .map_err(|_| ArgError::Number)?;
    // Two's complement, as the C side's `long` would hold it.
    Ok(if neg {
        (v as i64).wrapping_neg()
    } else {
        v as i64
    })
}

/// The `pt_regs` name of an x86 register operand (`rdi`, `edi`, `di`, `dil` are `di`).
fn x86_reg(name: &str) -> Option<&'static str> {
    const FAMILIES: &[(&str, &[&str])] = &[
        ("ax", &["rax", "eax", "ax", "al"]),
        ("bx", &["rbx", "ebx", "bx", "bl"]),
        ("cx", &["rcx", "ecx", "cx", "cl"]),
        ("dx", &["rdx", "edx", "dx", "dl"]),
        ("si", &["rsi", "esi", "si", "sil"]),
        ("di", &["rdi", "edi", "di", "dil"]),
        ("bp", &["rbp", "ebp", "bp", "bpl"]),
        ("sp", &["rsp", "esp", "sp", "spl"]),
        ("ip", &["rip", "eip"]),
    ];
    if let Some((canon, _)) = FAMILIES.iter().find(|(_, n)| n.contains(&name)) {
        return Some(canon);
    }
    const R: &[&str] = &["r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"];
    let base = name.trim_end_matches(['d', 'w', 'b']);
    R.iter().find(|r| **r == base).copied()
}

/// The `pt_regs` name of an arm64 register operand (`x0`, `w0`, `sp`).
fn arm64_reg(name: &str) -> Option<&'static str> {
    const X: &[&str] = &[
        "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",
        "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
        "x27", "x28", "x29", "x30",
    ];
    if name == "sp" {
        return Some("sp");
    }
    let n = name.strip_prefix('x').or_else(|| name.strip_prefix('w'))?;
    X.iter().find(|x| x.get(1..) == Some(n)).copied()
}

/// The `pt_regs` offset of register `name` (already the `pt_regs` spelling) in `kernel`.
fn reg_off(kernel: Arch, name: Option<&str>) -> Result<u16, ArgError> {
    name.and_then(|n| kernel.reg(n))
        .map(|r| r.offset)
        .ok_or(ArgError::Register)
}

/// One argument spec `text` of a binary for `code`, with registers placed in `kernel`'s
/// `pt_regs` (an i386 binary under an x86-64 kernel).
///
/// # Errors
/// [`ArgError`].
pub fn parse_arg(text: &str, code: Arch, kernel: Arch) -> Result<Arg<'_>, ArgError> {
    let (size, operand) = text.split_once('@').ok_or(ArgError::Size)?;
    let size: i64 = size.parse().map_err(|_| ArgError::Size)?;
    let signed = size < 0;
    let size = match size.unsigned_abs() {
        s @ (1 | 2 | 4 | 8) => s as u8,
        _ => return Err(ArgError::Size),
    };
    let loc = match code {
        Arch::X86_64 | Arch::I386 => x86_operand(operand, kernel)?,
        Arch::Aarch64 => arm64_operand(operand, kernel)?,
    };
    Ok(Arg { size, signed, loc })
}

fn x86_operand(op: &str, kernel: Arch) -> Result<ArgLoc<'_>, ArgError> {
    if let Some(imm) = op.strip_prefix('$') {
        return number(imm).map(ArgLoc::Const);
    }
    if let Some(reg) = op.strip_prefix('%') {
        return Ok(ArgLoc::Reg {
            reg_off: reg_off(kernel, x86_reg(reg))?,
        });
    }
    let (disp, rest) = op.split_once('(').ok_or(ArgError::Unsupported)?;
    let reg = rest
        .strip_suffix(')')
        .and_then(|r| r.strip_prefix('%'))
        .ok_or(ArgError::Unsupported)?;
    if reg.contains(',') {
        return Err(ArgError::Unsupported);
    }
    let canon = x86_reg(reg);
    let reg_off = reg_off(kernel, canon)?;
    let numeric = disp.is_empty()
        || disp
            .trim_start_matches(['-', '+'])
            .starts_with(|c: char| c.is_ascii_digit());
    if numeric {
        let off = if disp.is_empty() { 0 } else { number(disp)? };
        return Ok(ArgLoc::Deref {
            reg_off,
            off,
            symbol: None,
        });
    }
    // `sym`, `sym+8`, `sym-8`: only against %rip, where it is position-independent.
    if canon != Some("ip") {
        return Err(ArgError::Unsupported);
    }
    let split = disp.find(['+', '-']).unwrap_or(disp.len());
    let (sym, off) = disp.split_at(split);
    let off = if off.is_empty() { 0 } else { number(off)? };
    Ok(ArgLoc::Deref {
        reg_off,
        off,
        symbol: Some(sym),
    })
}

fn arm64_operand(op: &str, kernel: Arch) -> Result<ArgLoc<'_>, ArgError> {
    if let Some(inner) = op.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or(ArgError::Unsupported)?;
        let (reg, off) = match inner.split_once(',') {
            Some((r, o)) => (r.trim(), number(o.trim())?),
            None => (inner.trim(), 0),
        };
        return Ok(ArgLoc::Deref {
            reg_off: reg_off(kernel, arm64_reg(reg))?,
            off,
            symbol: None,
        });
    }
    if op.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
        return number(op).map(ArgLoc::Const);
    }
    Ok(ArgLoc::Reg {
        reg_off: reg_off(kernel, arm64_reg(op))?,
    })
}

/// A `struct __bpf_usdt_spec`, as the map holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// Its bytes (host byte order: the map's).
    pub bytes: [u8; SPEC_SIZE],
    /// How many arguments.
    pub arg_count: usize,
}

impl Spec {
    /// The spec of argument string `args` of a site at `address` of a binary for `code`,
    /// under `kernel`, with `cookie` as its `usdt_cookie`; `symbol` gives the address of
    /// a `%rip`-relative operand's symbol.
    ///
    /// # Errors
    /// [`SpecError`]: which argument and why.
    pub fn parse(
        args: &str,
        code: Arch,
        kernel: Arch,
        address: u64,
        cookie: u64,
        symbol: &dyn Fn(&str) -> Option<u64>,
    ) -> Result<Spec, SpecError> {
        let mut bytes = [0u8; SPEC_SIZE];
        let mut count = 0usize;
        for (index, text) in args.split_ascii_whitespace().enumerate() {
            let slot = bytes
                .get_mut(index * ARG_SPEC_SIZE..(index + 1) * ARG_SPEC_SIZE)
                .filter(|_| index < MAX_ARGS)
                .ok_or(SpecError { index, error: None })?;
            let err = |e| SpecError {
                index,
                error: Some(e),
            };
            let arg = parse_arg(text, code, kernel).map_err(err)?;
            let (val_off, kind, reg_off): (u64, u32, u16) = match arg.loc {
                ArgLoc::Const(v) => (v as u64, 0, 0),
                ArgLoc::Reg { reg_off } => (0, 1, reg_off),
                ArgLoc::Deref {
                    reg_off,
                    off,
                    symbol: None,
                } => (off as u64, 2, reg_off),
                ArgLoc::Deref {
                    reg_off,
                    off,
                    symbol: Some(name),
                } => {
                    // %rip is the site's address at run time: the symbol is this far away.
                    let at = symbol(name).ok_or(err(ArgError::Symbol))?;
                    let delta = at.wrapping_sub(address).wrapping_add(off as u64);
                    (delta, 2, reg_off)
                }
            };
            write_arg(slot, val_off, kind, reg_off, arg.signed, 64 - arg.size * 8);
            count = index + 1;
        }
        if let Some(c) = bytes.get_mut(192..200) {
            c.copy_from_slice(&cookie.to_ne_bytes());
        }
        if let Some(c) = bytes.get_mut(200..202) {
            c.copy_from_slice(&(count as i16).to_ne_bytes());
        }
        Ok(Spec {
            bytes,
            arg_count: count,
        })
    }
}

fn write_arg(slot: &mut [u8], val_off: u64, kind: u32, reg_off: u16, signed: bool, shift: u8) {
    let mut put = |at: usize, b: &[u8]| {
        if let Some(d) = slot.get_mut(at..at + b.len()) {
            d.copy_from_slice(b);
        }
    };
    put(0, &val_off.to_ne_bytes());
    put(8, &kind.to_ne_bytes());
    put(12, &reg_off.to_ne_bytes());
    put(14, &[u8::from(signed)]);
    put(15, &[shift]);
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use Arch::{Aarch64 as A64, I386, X86_64 as X64};

    fn loc(text: &str, code: Arch, kernel: Arch) -> (u8, bool, ArgLoc<'_>) {
        let a = parse_arg(text, code, kernel).unwrap();
        (a.size, a.signed, a.loc)
    }

    #[test]
    fn x86_forms() {
        let reg = |reg_off| ArgLoc::Reg { reg_off };
        let deref = |reg_off, off| ArgLoc::Deref {
            reg_off,
            off,
            symbol: None,
        };
        assert_eq!(loc("-4@%edi", X64, X64), (4, true, reg(112)));
        assert_eq!(loc("8@%rsi", X64, X64), (8, false, reg(104)));
        assert_eq!(loc("1@%r8b", X64, X64), (1, false, reg(72)));
        assert_eq!(loc("-2@%r15w", X64, X64), (2, true, reg(0)));
        assert_eq!(loc("8@-8(%rbp)", X64, X64), (8, false, deref(32, -8)));
        assert_eq!(loc("4@(%rax)", X64, X64), (4, false, deref(80, 0)));
        assert_eq!(loc("-4@$5", X64, X64), (4, true, ArgLoc::Const(5)));
        assert_eq!(loc("8@$-9", X64, X64), (8, false, ArgLoc::Const(-9)));
        assert_eq!(
            loc("4@counter+4(%rip)", X64, X64).2,
            ArgLoc::Deref {
                reg_off: 128,
                off: 4,
                symbol: Some("counter")
            }
        );
        assert_eq!(loc("8@16(%rip)", X64, X64).2, deref(128, 16));
        // An i386 binary under an x86-64 kernel: the kernel's pt_regs.
        assert_eq!(loc("-4@%eax", I386, X64), (4, true, reg(80)));
        assert_eq!(
            parse_arg("8@(%rax,%rdx,8)", X64, X64),
            Err(ArgError::Unsupported)
        );
        assert_eq!(parse_arg("3@%rax", X64, X64), Err(ArgError::Size));
        assert_eq!(parse_arg("%rax", X64, X64), Err(ArgError::Size));
        assert_eq!(parse_arg("8@%xmm0", X64, X64), Err(ArgError::Register));
        assert_eq!(
            parse_arg("8@sym(%rbx)", X64, X64),
            Err(ArgError::Unsupported)
        );
    }

    #[test]
    fn arm64_forms() {
        assert_eq!(
            loc("-4@x0", A64, A64),
            (4, true, ArgLoc::Reg { reg_off: 0 })
        );
        assert_eq!(loc("4@w3", A64, A64).2, ArgLoc::Reg { reg_off: 24 });
        let deref = |reg_off, off| ArgLoc::Deref {
            reg_off,
            off,
            symbol: None,
        };
        assert_eq!(loc("8@[sp, 16]", A64, A64).2, deref(248, 16));
        assert_eq!(loc("8@[x0]", A64, A64).2, deref(0, 0));
        assert_eq!(loc("8@[x29, -8]", A64, A64).2, deref(232, -8));
        assert_eq!(loc("-4@-7", A64, A64).2, ArgLoc::Const(-7));
        assert_eq!(parse_arg("8@x31", A64, A64), Err(ArgError::Register));
        assert_eq!(parse_arg("8@[x1", A64, A64), Err(ArgError::Unsupported));
    }

    #[test]
    fn spec_layout_is_usdt_bpf_h() {
        let sym = |s: &str| (s == "counter").then_some(0x4010u64);
        let s = Spec::parse(
            "-4@%edi 8@-8(%rbp) 2@$7 4@counter(%rip)",
            X64,
            X64,
            0x1000,
            9,
            &sym,
        )
        .unwrap();
        assert_eq!(s.arg_count, 4);
        let b = &s.bytes;
        // args[0]: REG di, signed, shift 32.
        assert_eq!(&b[8..12], &1u32.to_ne_bytes());
        assert_eq!(&b[12..14], &112u16.to_ne_bytes());
        assert_eq!((b[14], b[15]), (1, 32));
        // args[1]: REG_DEREF bp - 8.
        assert_eq!(&b[16..24], &(-8i64).to_ne_bytes());
        assert_eq!(&b[24..28], &2u32.to_ne_bytes());
        assert_eq!((b[30], b[31]), (0, 0));
        // args[2]: CONST 7, shift 48.
        assert_eq!(&b[32..40], &7u64.to_ne_bytes());
        assert_eq!(b[47], 48);
        // args[3]: the symbol 0x3010 past the site.
        assert_eq!(&b[48..56], &0x3010u64.to_ne_bytes());
        assert_eq!(&b[192..200], &9u64.to_ne_bytes());
        assert_eq!(&b[200..202], &4i16.to_ne_bytes());
        let many = "8@%rax ".repeat(13);
        assert_eq!(
            Spec::parse(&many, X64, X64, 0, 0, &sym).unwrap_err(),
            SpecError {
                index: 12,
                error: None
            }
        );
        assert_eq!(
            Spec::parse("8@%rax 4@nope(%rip)", X64, X64, 0, 0, &sym).unwrap_err(),
            SpecError {
                index: 1,
                error: Some(ArgError::Symbol)
            }
        );
    }
}
