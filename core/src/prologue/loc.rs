//! Where each argument lives: [`ArgLoc`], [`ArgLocs`], and their fetch-arg spelling.

use core::fmt;

use heapless::Vec;

use crate::arch::{Arch, Platform, Reg};
use crate::probe::ProbeKind;
use crate::{Error, Result};

use super::limits::{MAX_DEREFS, MAX_VALUES};

/// Which memory the dereferences read, and so which helper reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Memory {
    /// Kernel memory (kprobes): `bpf_probe_read_kernel`.
    Kernel,
    /// The probed task's user memory (uprobes): `bpf_probe_read_user`.
    User,
}

/// `BPF_FUNC_probe_read_kernel`.
///
/// # Minimum kernel
/// 5.5.
#[doc(alias = "BPF_FUNC_probe_read_kernel")]
pub const PROBE_READ_KERNEL: i32 = 113;

/// `BPF_FUNC_probe_read_user`.
///
/// # Minimum kernel
/// 5.5.
#[doc(alias = "BPF_FUNC_probe_read_user")]
pub const PROBE_READ_USER: i32 = 112;

impl Memory {
    /// The memory a probe of `kind` reads.
    ///
    /// # Errors
    /// [`Error::Usage`] for a tracepoint: its context is no `pt_regs`, so it has no prologue.
    pub fn of(kind: ProbeKind) -> Result<Memory> {
        match kind {
            ProbeKind::Kprobe | ProbeKind::Kretprobe => Ok(Memory::Kernel),
            ProbeKind::Uprobe | ProbeKind::Uretprobe => Ok(Memory::User),
            ProbeKind::Tracepoint => Err(Error::Usage {
                what: "a tracepoint's context is not pt_regs: no prologue",
                value: 0,
            }),
        }
    }

    /// The helper that reads this memory: [`PROBE_READ_KERNEL`] or [`PROBE_READ_USER`].
    #[must_use]
    pub const fn helper(self) -> i32 {
        match self {
            Memory::Kernel => PROBE_READ_KERNEL,
            Memory::User => PROBE_READ_USER,
        }
    }
}

/// Where an argument's value starts, before any dereference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Base {
    /// The value of a register, read from the program's `pt_regs` context (`%di`).
    Reg(Reg),
    /// The memory at the stack pointer plus an offset (`+8(%sp)`): i386 user-space
    /// arguments, `$stackN`. Costs one read.
    Stack(i32),
    /// The memory at an absolute address (`@0xffffffff81a20160`). Costs one read.
    Addr(u64),
    /// The memory at the probed instruction's address (the `pt_regs` program counter, which
    /// holds it in a uprobe program) plus an offset: a global of a position-independent
    /// file (PIE, shared library), whose link-time distance from the probe site holds
    /// wherever the file is loaded. Costs one read. The tracer spells the same read
    /// `@+FILEOFFSET` for a uprobe; [`FetchArg`] writes `@%ip+OFF`, which no tracer takes.
    IpRel(i32),
    /// The memory at a file offset of the probed file: a uprobe's `@+FILEOFFSET`, which
    /// the kernel reads at the probed address less the probe's own file offset plus
    /// `FILEOFFSET` (`translate_user_vaddr`), what `sluice prologue --emit` writes for a
    /// global of a shared library or PIE. A prologue can read it only once that probe
    /// offset is known: [`ArgLocs::at_probe_offset`] makes it [`Base::IpRel`]; before,
    /// [`super::Prologue::generate`] refuses it. Costs one read.
    FileOffset(u64),
    /// A constant (`\42`).
    Const(u64),
}

impl Base {
    /// The offset of the read the base itself implies (`Stack` and `Addr`), if any.
    pub(super) fn implied_read(self) -> Option<i32> {
        match self {
            Base::Stack(off) => Some(off),
            Base::Addr(_) | Base::IpRel(_) | Base::FileOffset(_) => Some(0),
            Base::Reg(_) | Base::Const(_) => None,
        }
    }
}

/// One argument: a base, dereferences at offsets, and the final value's size and sign.
///
/// `+104(+248(%di)):u64` is `ArgLoc::new(Base::Reg(%di), 8, false)` with
/// `.deref(248)` then `.deref(104)`: the value of `%di` plus 248 is read as a pointer, that
/// pointer plus 104 is read as the 8-byte result. Intermediate reads are pointer-sized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgLoc<'a> {
    name: Option<&'a str>,
    base: Base,
    derefs: Vec<i32, MAX_DEREFS, u8>,
    size: u8,
    signed: bool,
}

#[cfg(feature = "defmt")]
impl defmt::Format for ArgLoc<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "ArgLoc {{ name: {}, base: {}, derefs: {}, size: {}, signed: {} }}",
            self.name,
            self.base,
            self.derefs.as_slice(),
            self.size,
            self.signed
        );
    }
}

impl<'a> ArgLoc<'a> {
    /// An argument read from `base` with no dereference, `size` bytes (1, 2, 4 or 8),
    /// sign-extended to 64 bits when `signed`.
    ///
    /// # Errors
    /// [`Error::Usage`] for another size.
    pub fn new(base: Base, size: u8, signed: bool) -> Result<Self> {
        if !matches!(size, 1 | 2 | 4 | 8) {
            return Err(Error::Usage {
                what: "argument size must be 1, 2, 4 or 8 bytes",
                value: u64::from(size),
            });
        }
        Ok(ArgLoc {
            name: None,
            base,
            derefs: Vec::new(),
            size,
            signed,
        })
    }

    /// The same argument named `name` (the `NAME=` of its fetch-arg).
    #[must_use]
    pub fn named(mut self, name: &'a str) -> Self {
        self.name = Some(name);
        self
    }

    /// The same argument, then read at the value reached so far plus `offset`.
    ///
    /// # Errors
    /// [`Error::Capacity`] past [`MAX_DEREFS`] dereferences.
    pub fn deref(mut self, offset: i32) -> Result<Self> {
        self.derefs.push(offset).map_err(|_| Error::Capacity {
            what: "dereferences in one argument",
            limit: MAX_DEREFS as u32,
        })?;
        Ok(self)
    }

    /// The same argument with an absolute address base ([`Base::Addr`]) moved by `offset`,
    /// wrapping: a kernel global read at its link-time address (`DW_OP_addr` in `vmlinux`)
    /// moved to where a kernel relocated by KASLR has it (`offset` = running address minus
    /// link-time address of any kernel symbol). Other bases are unchanged.
    #[must_use]
    pub fn relocated(mut self, offset: i64) -> Self {
        if let Base::Addr(a) = self.base {
            self.base = Base::Addr(a.wrapping_add_signed(offset));
        }
        self
    }

    /// The name, if any.
    #[must_use]
    pub fn name(&self) -> Option<&'a str> {
        self.name
    }

    /// Where the value starts.
    #[must_use]
    pub fn base(&self) -> Base {
        self.base
    }

    /// The dereference offsets, innermost first.
    #[must_use]
    pub fn derefs(&self) -> &[i32] {
        &self.derefs
    }

    /// Size of the final value in bytes.
    #[must_use]
    pub fn size(&self) -> u8 {
        self.size
    }

    /// Whether the final value is sign-extended.
    #[must_use]
    pub fn signed(&self) -> bool {
        self.signed
    }

    /// Number of memory reads (helper calls) the argument costs.
    #[must_use]
    pub fn reads(&self) -> usize {
        self.derefs.len() + usize::from(self.base.implied_read().is_some())
    }

    /// The kprobe tracer's fetch-arg for this argument, named `name` or, when it has none,
    /// `arg{index}`.
    #[must_use]
    pub fn fetch_arg(&self, index: usize) -> FetchArg<'_, 'a> {
        FetchArg { loc: self, index }
    }
}

/// An [`ArgLoc`] spelled as a kprobe-tracer fetch-arg: `a_ops=+104(+248(%di)):u64`,
/// `bytes=%r12:u64`, `x=+8(%sp):s32`. Allocation-free `Display`.
#[derive(Clone, Copy, Debug)]
pub struct FetchArg<'l, 'a> {
    loc: &'l ArgLoc<'a>,
    index: usize,
}

impl fmt::Display for FetchArg<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let loc = self.loc;
        match loc.name {
            Some(name) => write!(f, "{name}=")?,
            None => write!(f, "arg{}=", self.index)?,
        }
        for off in loc.derefs.iter().rev() {
            write!(f, "{off:+}(")?;
        }
        match loc.base {
            Base::Reg(r) => write!(f, "{r}")?,
            Base::Stack(off) => write!(f, "{off:+}(%sp)")?,
            Base::Addr(a) => write!(f, "@{a:#x}")?,
            Base::IpRel(off) if off < 0 => write!(f, "@%ip-{:#x}", off.unsigned_abs())?,
            Base::IpRel(off) => write!(f, "@%ip+{off:#x}")?,
            Base::FileOffset(off) => write!(f, "@+{off:#x}")?,
            Base::Const(c) => write!(f, "\\{c}")?,
        }
        for _ in loc.derefs.iter() {
            f.write_str(")")?;
        }
        let sign = if loc.signed { 's' } else { 'u' };
        write!(f, ":{sign}{}", u32::from(loc.size) * 8)
    }
}

/// One value the prologue passes to the program, in r2, r3, r4 or r5.
#[allow(clippy::large_enum_variant)] // no heap; `Fetch` is the common case
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Value<'a> {
    /// A fetched argument.
    Fetch(ArgLoc<'a>),
    /// The pseudo-argument `$err`: 0, or the 1-based index (among fetched arguments) of the
    /// argument whose read failed.
    Err,
}

/// The values of one probe for its prologue: the platform (the kernel's `pt_regs`, the
/// probed code's ABI), which memory reads go to, and up to [`MAX_VALUES`] values (r2..r5),
/// at most one of them `$err`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgLocs<'a> {
    platform: Platform,
    memory: Memory,
    values: Vec<Value<'a>, MAX_VALUES, u8>,
}

#[cfg(feature = "defmt")]
impl defmt::Format for ArgLocs<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(
            f,
            "ArgLocs {{ platform: {}, memory: {}, values: {} }}",
            self.platform,
            self.memory,
            self.values.as_slice()
        );
    }
}

const TOO_MANY: Error = Error::Capacity {
    what: "values for r2..r5 ($err included)",
    limit: MAX_VALUES as u32,
};

impl<'a> ArgLocs<'a> {
    /// No values yet, for a probe on `platform` (an [`Arch`] is both its kernel and its
    /// code).
    #[must_use]
    pub fn new(platform: impl Into<Platform>, memory: Memory) -> Self {
        ArgLocs {
            platform: platform.into(),
            memory,
            values: Vec::new(),
        }
    }

    /// Appends a fetched argument.
    ///
    /// # Errors
    /// [`Error::Capacity`] past [`MAX_VALUES`] values; [`Error::Usage`] for a register that is
    /// not a `pt_regs` slot of this architecture.
    pub fn push(&mut self, loc: ArgLoc<'a>) -> Result<()> {
        if let Base::Reg(r) = loc.base {
            if self.platform.reg(r.name) != Some(r) {
                return Err(Error::Usage {
                    what: "register is no pt_regs slot of this architecture",
                    value: u64::from(r.offset),
                });
            }
        }
        self.values.push(Value::Fetch(loc)).map_err(|_| TOO_MANY)
    }

    /// Appends the pseudo-argument `$err`.
    ///
    /// # Errors
    /// [`Error::Capacity`] past [`MAX_VALUES`] values; [`Error::Usage`] when there is one
    /// already.
    pub fn push_err(&mut self) -> Result<()> {
        if let Some(at) = self.err_position() {
            return Err(Error::Usage {
                what: "$err given twice",
                value: at as u64,
            });
        }
        self.values.push(Value::Err).map_err(|_| TOO_MANY)
    }

    /// Inserts `$err` before value `position` (0-based; `len()` appends).
    ///
    /// # Errors
    /// As [`ArgLocs::push_err`]; [`Error::Usage`] for a position past the end.
    pub fn insert_err(&mut self, position: usize) -> Result<()> {
        if position > self.values.len() {
            return Err(Error::Usage {
                what: "$err position past the end of the values",
                value: position as u64,
            });
        }
        self.push_err()?;
        self.values
            .get_mut(position..)
            .unwrap_or_default()
            .rotate_right(1);
        Ok(())
    }

    /// The kernel architecture whose `pt_regs` the prologue reads.
    /// Makes every [`Base::FileOffset`] read a [`Base::IpRel`] one, for a probe at file
    /// offset `probe` of the file: the distance between the two file offsets is the distance
    /// between the two addresses wherever the file is loaded, as the kernel's
    /// `@+FILEOFFSET` assumes. Valid where the program counter is the probed address: an
    /// entry or offset uprobe, not a return probe.
    ///
    /// # Errors
    /// [`Error::Usage`] (the 1-based position among the values) for a distance of 2 GiB
    /// or more.
    pub fn at_probe_offset(&mut self, probe: u64) -> Result<()> {
        for (i, v) in self.values.iter_mut().enumerate() {
            let Value::Fetch(loc) = v else { continue };
            if let Base::FileOffset(at) = loc.base {
                let delta = at.wrapping_sub(probe) as i64;
                let delta = i32::try_from(delta).map_err(|_| Error::Usage {
                    what: "@+FILEOFFSET 2 GiB or more away from the probe's file offset",
                    value: i as u64 + 1,
                })?;
                loc.base = Base::IpRel(delta);
            }
        }
        Ok(())
    }

    /// Whether a value is read at a file offset ([`Base::FileOffset`]), so needs
    /// [`ArgLocs::at_probe_offset`] before a prologue can be made.
    #[must_use]
    pub fn has_file_offsets(&self) -> bool {
        self.fetched()
            .any(|l| matches!(l.base, Base::FileOffset(_)))
    }

    /// The architecture whose `pt_regs` the prologue reads.
    #[must_use]
    pub fn arch(&self) -> Arch {
        self.platform.kernel()
    }

    /// The kernel's `pt_regs` and the probed code's ABI.
    #[must_use]
    pub fn platform(&self) -> Platform {
        self.platform
    }

    /// Which memory dereferences read.
    #[must_use]
    pub fn memory(&self) -> Memory {
        self.memory
    }

    /// The values in register order (r2 first).
    #[must_use]
    pub fn values(&self) -> &[Value<'a>] {
        &self.values
    }

    /// The fetched arguments in order, without `$err`.
    pub fn fetched(&self) -> impl Iterator<Item = &ArgLoc<'a>> {
        self.values.iter().filter_map(|v| match v {
            Value::Fetch(l) => Some(l),
            Value::Err => None,
        })
    }

    /// Where `$err` is (0-based, so its register is `r2 + position`), if requested.
    #[must_use]
    pub fn err_position(&self) -> Option<usize> {
        self.values.iter().position(|v| matches!(v, Value::Err))
    }

    /// Number of values.
    #[must_use]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no values.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}
