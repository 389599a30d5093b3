//! What the per-architecture tables are made of: a `pt_regs` slot ([`Reg`]), a register as
//! a fetch-arg names it ([`FetchReg`]), and a calling convention ([`ArgPassing`]).

use core::fmt;

/// One register slot of the kernel's `struct pt_regs`: the name the kprobe tracer gives it
/// (without `%`) and its byte offset, which is where a kprobe program reads it from its
/// context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Reg {
    /// Name as in fetch-args: `di`, `ax`, `x0`, `sp`.
    pub name: &'static str,
    /// Byte offset in `struct pt_regs`.
    pub offset: u16,
}

impl Reg {
    /// A register slot.
    #[must_use]
    pub const fn new(name: &'static str, offset: u16) -> Self {
        Reg { name, offset }
    }
}

impl fmt::Display for Reg {
    /// `%di`, as fetch-args write it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.name)
    }
}

/// A register as a fetch-arg reads it: a `pt_regs` slot (`%di`), or the tracer's `$stack`
/// where the slot does not hold the stack pointer (i386).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FetchReg {
    /// A `pt_regs` slot, written `%name`.
    Reg(Reg),
    /// The kernel stack pointer, written `$stack`.
    Stack,
}

impl fmt::Display for FetchReg {
    /// `%di` or `$stack`, as fetch-args write it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchReg::Reg(r) => fmt::Display::fmt(r, f),
            FetchReg::Stack => f.write_str("$stack"),
        }
    }
}

/// How a calling convention passes the first integer arguments of a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ArgPassing {
    /// In these registers, in order (by tracefs name); arguments past them are not
    /// described here.
    Regs(&'static [&'static str]),
    /// On the stack: the first at `sp + first` on entry, then every `slot` bytes (a value
    /// wider than a slot takes several).
    Stack {
        /// Offset of the first argument from the stack pointer at the function's entry.
        first: u8,
        /// Bytes per stack slot.
        slot: u8,
    },
}
