//! Argument locations without debug info: from C types by the calling convention, and from
//! the expressions that need no types (`%di`, `$arg2`, `$stack3`, `$retval`, `$err`, and
//! kprobe-tracer memory reads such as `+144(+216(+8(%sp)))`).

use crate::arch::{Arch, ArgPassing, Platform};
use crate::probe::{Arg, ArgBase, Args, CType, FetchType, IntWidth, ProbeKind, Signedness};
use crate::{Error, Result};

use super::loc::{ArgLoc, ArgLocs, Base, Memory};

/// The message (in [`Error::Usage`]) for an argument that needs debug info.
pub const NEEDS_DEBUG_INFO: &str = "needs debug info (--debuginfo FILE), not supported yet";

/// Size and signedness of a C parameter type on `arch`, for a probe in `memory`.
///
/// Plain `char` follows the ABI in user space and is unsigned in the kernel, which builds
/// with `-funsigned-char` on every architecture since Linux 6.2.
#[must_use]
pub fn c_type_layout(arch: Arch, memory: Memory, ty: CType) -> (u8, bool) {
    match ty {
        CType::Pointer => (arch.pointer_size(), false),
        CType::Int { width, sign } => {
            let size = match width {
                IntWidth::W8 => 1,
                IntWidth::W16 => 2,
                IntWidth::W32 => 4,
                IntWidth::W64 => 8,
                IntWidth::Long => arch.long_size(),
            };
            let signed = match sign {
                Signedness::Signed => true,
                Signedness::Unsigned => false,
                Signedness::PlainChar => memory == Memory::User && arch.char_signed(),
            };
            (size, signed)
        }
    }
}

/// Where the code's calling convention puts argument `index` (0-based) of `size` bytes,
/// given that the arguments before it took `stack_used` bytes of stack (updated): a
/// register is the kernel's `pt_regs` slot of that name, a stack slot is read through the
/// kernel's `sp` slot.
fn convention_base(
    arch: Platform,
    memory: Memory,
    index: usize,
    size: u8,
    stack_used: &mut u32,
) -> Result<Base> {
    let position = index as u64 + 1;
    match arch.arg_passing(memory == Memory::User) {
        ArgPassing::Regs(regs) => {
            let name = regs.get(index).ok_or(Error::Usage {
                what: "argument is past the argument registers of the calling convention",
                value: position,
            })?;
            if size > arch.word_size() {
                return Err(Error::Usage {
                    what: "argument is wider than a register (a register pair; not supported)",
                    value: position,
                });
            }
            let reg = arch.reg(name).ok_or(Error::Usage {
                what: "argument register missing from pt_regs",
                value: position,
            })?;
            Ok(Base::Reg(reg))
        }
        ArgPassing::Stack { first, slot } => {
            let slot = u32::from(slot.max(1));
            let at = u32::from(first).saturating_add(*stack_used);
            let taken = u32::from(size).div_ceil(slot).saturating_mul(slot);
            *stack_used = stack_used.saturating_add(taken);
            let off = i32::try_from(at).map_err(|_| Error::Usage {
                what: "stack argument offset out of range",
                value: position,
            })?;
            Ok(Base::Stack(off))
        }
    }
}

/// The size and sign a fetch type asks for, else `word` bytes, unsigned.
fn fetch_layout(word: u8, ty: Option<FetchType>, position: u64) -> Result<(u8, bool)> {
    match ty {
        None => Ok((word, false)),
        Some(t) => match t.size() {
            Some(size) => Ok((size, t.is_signed())),
            None => Err(Error::Usage {
                what: "a string is no register value (fetch types u8..u64, s8..s64, x8..x64)",
                value: position,
            }),
        },
    }
}

/// The message of [`from_typed_args`] for `@+FILEOFFSET` in a return probe.
pub const AT_RETURN: &str = "@+FILEOFFSET at a return probe: the program counter then holds the \
     return address, not one of the probed file (probe the function's entry or an offset)";

/// The message of [`from_typed_args`] for `@SYM` when it has no symbol table to look in.
pub const NEEDS_SYMBOLS: &str =
    "@SYMBOL needs the running kernel's symbol table (a kprobe; sluice record looks it up in /proc/kallsyms)";

/// The location of one expression argument (position is 1-based, for errors); `symbol` gives
/// a kernel symbol's address.
///
/// Without a `:TYPE`, a value is as wide as the tracer makes it: a whole `pt_regs` slot of
/// the kernel (`%ax`, `$stackN`: the kernel's `unsigned long`), but an argument slot of the
/// code for `$argN`, which only the prologue fetches.
fn expr_loc<'a>(
    arch: Platform,
    memory: Memory,
    arg: &Arg<'a>,
    position: u64,
    symbol: &mut dyn FnMut(&str) -> Option<u64>,
) -> Result<ArgLoc<'a>> {
    let word = match arg.base() {
        ArgBase::ArgN(_) => arch.word_size(),
        _ => arch.reg_size(),
    };
    let (size, signed) = fetch_layout(word, arg.fetch_type(), position)?;
    let needs_types = Error::Usage {
        what: NEEDS_DEBUG_INFO,
        value: position,
    };
    if !arg.steps().is_empty() {
        return Err(needs_types);
    }
    let base = match arg.base() {
        ArgBase::Var(_) => return Err(needs_types),
        ArgBase::Reg(name) => Base::Reg(arch.reg(name).ok_or(Error::Usage {
            what: "no such register on this architecture",
            value: position,
        })?),
        ArgBase::Retval => Base::Reg(arch.return_reg().ok_or(Error::Usage {
            what: "architecture without a return register",
            value: position,
        })?),
        ArgBase::Stack => Base::Reg(arch.sp().ok_or(Error::Usage {
            what: "architecture without a stack pointer slot",
            value: position,
        })?),
        ArgBase::StackN(n) => {
            let off = i64::from(n) * i64::from(arch.reg_size());
            Base::Stack(i32::try_from(off).map_err(|_| Error::Usage {
                what: "$stackN offset out of range",
                value: position,
            })?)
        }
        ArgBase::ArgN(n) => {
            // Earlier arguments are taken as word-sized, as the kprobe tracer's $argN does.
            let index = usize::try_from(n.saturating_sub(1)).unwrap_or(usize::MAX);
            let word = u32::from(arch.word_size());
            let mut used = u32::try_from(index)
                .unwrap_or(u32::MAX)
                .saturating_mul(word);
            convention_base(arch, memory, index, size, &mut used)?
        }
        ArgBase::Comm => {
            return Err(Error::Usage {
                what: "$comm is a string, not a register value",
                value: position,
            })
        }
        ArgBase::Special(_) => {
            return Err(Error::Usage {
                what: "unknown $variable",
                value: position,
            })
        }
        ArgBase::Err => {
            return Err(Error::Usage {
                what: "internal: $err is no fetched argument",
                value: position,
            })
        }
        ArgBase::Addr(a) => Base::Addr(a),
        ArgBase::Sym { name, offset } => {
            if memory != Memory::Kernel {
                return Err(Error::Usage {
                    what: "@SYMBOL is a kernel symbol: kprobes only (a uprobe reads @+FILEOFFSET)",
                    value: position,
                });
            }
            let at = symbol(name).ok_or(Error::Usage {
                what: NEEDS_SYMBOLS,
                value: position,
            })?;
            Base::Addr(at.wrapping_add_signed(i64::from(offset)))
        }
        ArgBase::FileOffset(off) => {
            if memory != Memory::User {
                return Err(Error::Usage {
                    what: "@+FILEOFFSET is a file offset of a uprobe's file: uprobes only (a kprobe reads @SYM+OFF or @ADDR)",
                    value: position,
                });
            }
            Base::FileOffset(off)
        }
        ArgBase::Imm(v) => Base::Const(v),
    };
    let mut loc = ArgLoc::new(base, size, signed)?;
    for &off in arg.derefs() {
        loc = loc.deref(off)?;
    }
    Ok(match arg.name() {
        Some(name) => loc.named(name),
        None => loc,
    })
}

/// The locations of a probe's arguments without debug info.
///
/// `platform` is the kernel whose `pt_regs` the program reads and the ABI of the probed code
/// ([`Platform`]; an [`Arch`] is both: every kprobe, and a uprobe of a binary of the
/// kernel's own architecture).
///
/// - **C types** (`kprobe/vfs_read(void *, char *buf, unsigned long)`): argument *i* is
///   where the code's calling convention puts it at the function's entry (the kernel's or
///   user space's, by `kind`), sized and signed by its type (`long` and pointers by the
///   code's ABI; plain `char` see [`c_type_layout`]). i386 user space reads them from the
///   stack (`+4(%sp)`, `+8(%sp)`, ...) through the kernel's `sp` slot (the 64-bit one under
///   an x86-64 kernel), the i386 kernel from `ax`, `dx`, `cx` only.
/// - **Expressions that need no types**: `%REG`, `$argN`, `$stack`, `$stackN`, `$retval`,
///   `@ADDR`, `\IMM`, each inside any `+OFF(...)` memory reads (the kprobe tracer's
///   fetch-args, as `perf probe -D` and `sluice prologue` print resolved variables), each
///   `:TYPE` sized (default: a whole `pt_regs` slot, unsigned; an argument slot of the code
///   for `$argN`), and `$err`.
///
/// **`$err` and typed lists.** A list of C types never holds `$err`: the grammar reads it as
/// an expression and refuses to mix the two. Entry registers cannot fail to read, so only
/// i386 user-space (stack) arguments could use it; a caller that wants it there adds it
/// with [`ArgLocs::insert_err`].
///
/// # Errors
/// [`Error::Usage`] whose `value` is the 1-based position of the argument: a variable, a
/// member access or an index ([`NEEDS_DEBUG_INFO`]), an argument past the convention's
/// registers, one wider than a register, an unknown register, `$comm`, a string type.
/// [`Error::Capacity`] for more than [`MAX_VALUES`] values, `$err` included: callers
/// name the spec in the message. [`Memory::of`]'s error for a tracepoint. `@SYMBOL`
/// ([`NEEDS_SYMBOLS`]): use [`from_typed_args_with`].
pub fn from_typed_args<'a>(
    platform: impl Into<Platform>,
    kind: ProbeKind,
    args: &Args<'a>,
) -> Result<ArgLocs<'a>> {
    from_typed_args_with(platform, kind, args, &mut |_| None)
}

/// [`from_typed_args`], with `symbol` giving the address of a kernel symbol an `@SYM+OFF`
/// argument names (the running kernel's, from `/proc/kallsyms`: the argument is then read at
/// that address plus `OFF`, right under KASLR).
///
/// # Errors
/// As [`from_typed_args`]; [`Error::Usage`] ([`NEEDS_SYMBOLS`]) for a symbol `symbol` does
/// not know, or `@SYM` in a uprobe.
pub fn from_typed_args_with<'a>(
    platform: impl Into<Platform>,
    kind: ProbeKind,
    args: &Args<'a>,
    symbol: &mut dyn FnMut(&str) -> Option<u64>,
) -> Result<ArgLocs<'a>> {
    let arch = platform.into();
    let memory = Memory::of(kind)?;
    let mut locs = ArgLocs::new(arch, memory);
    match args {
        Args::Typed(list) => {
            let mut stack_used = 0u32;
            for (i, t) in list.iter().enumerate() {
                let (size, signed) = c_type_layout(arch.code(), memory, t.ty);
                let base = convention_base(arch, memory, i, size, &mut stack_used)?;
                let loc = ArgLoc::new(base, size, signed)?;
                locs.push(match t.name {
                    Some(name) => loc.named(name),
                    None => loc,
                })?;
            }
        }
        Args::Fetch(list) => {
            // The values passed in r2..r5; strings and the rest are only recorded by the
            // kernel's fetch-args (`Args::is_passed`).
            for (i, arg) in list.iter().enumerate() {
                if !args.is_passed(i) {
                    continue;
                }
                if arg.is_err() {
                    locs.push_err()?;
                } else if kind.is_return() && matches!(arg.base(), ArgBase::FileOffset(_)) {
                    return Err(Error::Usage {
                        what: AT_RETURN,
                        value: i as u64 + 1,
                    });
                } else {
                    locs.push(expr_loc(arch, memory, arg, i as u64 + 1, symbol)?)?;
                }
            }
        }
    }
    Ok(locs)
}
