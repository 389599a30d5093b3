//! Code generation: [`ArgLocs`] to instructions in a caller buffer ([`write`]), or into a
//! [`Prologue`] of its own.

use crate::insn::opcode::{ADD, AND, B, DW, H, JNE, W};
use crate::insn::reg::{R0, R1, R10, R2, R3, R6};
use core::fmt;

use heapless::Vec;

use crate::disasm::Listing;
use crate::{Error, Insn, Result};

use super::limits::{ERR_SLOT, MAX_INSNS, MAX_READS, MAX_VALUES};
use super::loc::{ArgLoc, ArgLocs, Base, Value};

/// The stack slot of value `j` (relative to r10): -8, -16, -24, -32.
fn slot(j: usize) -> i16 {
    // j < MAX_VALUES, so this is at most -8 * MAX_VALUES.
    -8 * (j as i16 + 1)
}

/// The `BPF_SIZE` of a load of `bytes`.
fn size_code(bytes: u8) -> u8 {
    match bytes {
        1 => B,
        2 => H,
        4 => W,
        _ => DW,
    }
}

/// Appends to a caller buffer; running out is [`Error::Capacity`].
struct Emitter<'o> {
    out: &'o mut [Insn],
    len: usize,
}

impl Emitter<'_> {
    fn push(&mut self, insn: Insn) -> Result<()> {
        let limit = self.out.len();
        let slot = self.out.get_mut(self.len).ok_or(Error::Capacity {
            what: "prologue instructions",
            limit: u32::try_from(limit).unwrap_or(u32::MAX),
        })?;
        *slot = insn;
        self.len += 1;
        Ok(())
    }

    fn extend(&mut self, insns: &[Insn]) -> Result<()> {
        insns.iter().try_for_each(|&i| self.push(i))
    }

    /// `dst = value` as a 64-bit constant (one slot when it fits a sign-extended `imm`).
    fn constant(&mut self, dst: u8, value: u64) -> Result<()> {
        match i32::try_from(value as i64) {
            Ok(imm) => self.push(Insn::mov64_imm(dst, imm)),
            Err(_) => self.extend(&Insn::ld_imm64(dst, 0, value)),
        }
    }

    /// Sets the jump at `at` to land on `target`.
    fn patch(&mut self, at: usize, target: usize) -> Result<()> {
        let off = i16::try_from(target as i64 - at as i64 - 1).map_err(|_| Error::Capacity {
            what: "prologue jump distance",
            limit: i16::MAX as u32,
        })?;
        if let Some(i) = self.out.get_mut(at) {
            i.set_off(off);
        }
        Ok(())
    }
}

/// `value` cut to `size` bytes and extended back to 64 bits as `signed` says.
fn fold(value: u64, size: u8, signed: bool) -> u64 {
    let bits = u32::from(size) * 8;
    if bits >= 64 {
        return value;
    }
    let shift = 64 - bits;
    if signed {
        (((value << shift) as i64) >> shift) as u64
    } else {
        (value << shift) >> shift
    }
}

/// Narrows `dst`, which holds a zero-extended `width`-byte value, to the argument's size
/// and sign.
fn narrow(e: &mut Emitter<'_>, dst: u8, width: u8, size: u8, signed: bool) -> Result<()> {
    if size >= width {
        return Ok(());
    }
    if signed {
        return e.extend(&Insn::sign_extend64(dst, i32::from(size) * 8));
    }
    match size {
        1 => e.push(Insn::alu64_imm(AND, dst, 0xff)),
        2 => e.push(Insn::alu64_imm(AND, dst, 0xffff)),
        _ => e.push(Insn::mov32_reg(dst, dst)),
    }
}

/// The message for a [`Base::FileOffset`] read given to the generator as such.
const FILE_OFFSET_UNPLACED: &str =
    "@+FILEOFFSET needs the probe's own file offset (ArgLocs::at_probe_offset)";

/// Emits the reads of argument `loc` (value `j`) into its stack slot; every failed read
/// jumps to the error path, whose jumps are collected in `jumps`.
fn emit_reads(
    e: &mut Emitter<'_>,
    locs: &ArgLocs<'_>,
    loc: &ArgLoc<'_>,
    j: usize,
    jumps: &mut heapless::Vec<usize, { MAX_READS }>,
) -> Result<()> {
    let arch = locs.platform();
    let reg_size = arch.reg_size();
    let helper = locs.memory().helper();
    let at = slot(j);
    match loc.base() {
        Base::Reg(r) => e.push(Insn::ldx_mem(size_code(reg_size), R3, R6, r.offset as i16))?,
        Base::Stack(_) => {
            let sp = arch.sp().ok_or(Error::Usage {
                what: "architecture without a stack pointer slot",
                value: 0,
            })?;
            e.push(Insn::ldx_mem(size_code(reg_size), R3, R6, sp.offset as i16))?;
        }
        Base::Addr(a) => e.constant(R3, a)?,
        Base::IpRel(off) => {
            let ip = arch.ip().ok_or(Error::Usage {
                what: "architecture without a program counter slot",
                value: 0,
            })?;
            e.push(Insn::ldx_mem(size_code(reg_size), R3, R6, ip.offset as i16))?;
            e.push(Insn::alu64_imm(ADD, R3, off))?;
        }
        Base::FileOffset(_) => {
            return Err(Error::Usage {
                what: FILE_OFFSET_UNPLACED,
                value: 0,
            })
        }
        Base::Const(c) => e.constant(R3, c)?,
    }
    let reads = loc
        .base()
        .implied_read()
        .into_iter()
        .chain(loc.derefs().iter().copied());
    let total = loc.reads();
    for (n, off) in reads.enumerate() {
        let last = n + 1 == total;
        let size = if last {
            loc.size()
        } else {
            arch.pointer_size()
        };
        if off != 0 {
            e.push(Insn::alu64_imm(ADD, R3, off))?;
        }
        e.push(Insn::mov64_reg(R1, R10))?;
        e.push(Insn::alu64_imm(ADD, R1, i32::from(at)))?;
        e.push(Insn::mov64_imm(R2, i32::from(size)))?;
        e.push(Insn::call(helper))?;
        jumps.push(e.len).map_err(|_| Error::Capacity {
            what: "memory reads in one prologue",
            limit: MAX_READS as u32,
        })?;
        e.push(Insn::jmp_imm(JNE, R0, 0, 0))?;
        if !last {
            e.push(Insn::ldx_mem(size_code(size), R3, R10, at))?;
        }
    }
    // The slot must hold 8 initialised bytes for the final load into r2..r5.
    if loc.size() < 8 {
        e.push(Insn::ldx_mem(size_code(loc.size()), R3, R10, at))?;
        if loc.signed() {
            e.extend(&Insn::sign_extend64(R3, i32::from(loc.size()) * 8))?;
        }
        e.push(Insn::stx_mem(DW, R10, R3, at))?;
    }
    Ok(())
}

/// Emits the value of `loc`, which reads no memory, straight into `dst`.
fn emit_direct(e: &mut Emitter<'_>, locs: &ArgLocs<'_>, loc: &ArgLoc<'_>, dst: u8) -> Result<()> {
    let reg_size = locs.platform().reg_size();
    match loc.base() {
        Base::Reg(r) => {
            e.push(Insn::ldx_mem(size_code(reg_size), dst, R6, r.offset as i16))?;
            narrow(e, dst, reg_size, loc.size(), loc.signed())
        }
        Base::Const(c) => e.constant(dst, fold(c, loc.size(), loc.signed())),
        // Both read memory, so they are never direct.
        Base::Stack(_) | Base::Addr(_) | Base::IpRel(_) | Base::FileOffset(_) => {
            Err(Error::Usage {
                what: "internal: a memory base taken as direct",
                value: 0,
            })
        }
    }
}

/// Writes the prologue for `locs` into `out` and returns how many instruction slots it
/// used. See the [module docs](super) for the code's shape.
///
/// # Errors
/// [`Error::Capacity`] when `out` is too short ([`MAX_INSNS`] always suffices).
pub fn write(locs: &ArgLocs<'_>, out: &mut [Insn]) -> Result<usize> {
    let mut e = Emitter { out, len: 0 };
    e.push(Insn::mov64_reg(R6, R1))?;
    let values = locs.values();
    let reg = |j: usize| R2 + j as u8;
    let mut jumps: heapless::Vec<usize, { MAX_READS }> = heapless::Vec::new();

    // Arguments that read memory first: their helper calls clobber r1..r5.
    let readers = values
        .iter()
        .filter(|v| matches!(v, Value::Fetch(l) if l.reads() > 0))
        .count();
    let err_requested = locs.err_position().is_some();
    let mut fetched = 0i32;
    let mut only_reader = 0i32;
    for (j, v) in values.iter().enumerate().take(MAX_VALUES) {
        let Value::Fetch(loc) = v else { continue };
        fetched += 1;
        if loc.reads() == 0 {
            continue;
        }
        only_reader = fetched;
        if err_requested && readers > 1 {
            // Which argument is being read, for `$err` on the error path.
            e.push(Insn::st_mem(DW, R10, ERR_SLOT, fetched))?;
        }
        emit_reads(&mut e, locs, loc, j, &mut jumps)?;
    }
    for (j, v) in values.iter().enumerate().take(MAX_VALUES) {
        match v {
            Value::Fetch(loc) if loc.reads() > 0 => {
                e.push(Insn::ldx_mem(DW, reg(j), R10, slot(j)))?;
            }
            Value::Fetch(loc) => emit_direct(&mut e, locs, loc, reg(j))?,
            Value::Err => e.push(Insn::mov64_imm(reg(j), 0))?,
        }
    }
    if !jumps.is_empty() {
        let over = e.len;
        e.push(Insn::ja(0))?;
        let error_path = e.len;
        for (j, v) in values.iter().enumerate().take(MAX_VALUES) {
            match v {
                Value::Err if readers > 1 => {
                    e.push(Insn::ldx_mem(DW, reg(j), R10, ERR_SLOT))?;
                }
                Value::Err => e.push(Insn::mov64_imm(reg(j), only_reader))?,
                Value::Fetch(_) => e.push(Insn::mov64_imm(reg(j), 0))?,
            }
        }
        let end = e.len;
        e.patch(over, end)?;
        for &at in &jumps {
            e.patch(at, error_path)?;
        }
    }
    e.push(Insn::mov64_reg(R1, R6))?;
    Ok(e.len)
}

/// A generated prologue of at most `N` instruction slots.
///
/// `Display` prints it as perf did: `bpf_prologue: insn num=N`, then one instruction per line
/// in the verifier's format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prologue<const N: usize = MAX_INSNS> {
    insns: Vec<Insn, N>,
}

impl<const N: usize> Prologue<N> {
    /// The prologue for `locs`.
    ///
    /// # Errors
    /// [`Error::Capacity`] when it needs more than `N` slots.
    pub fn generate(locs: &ArgLocs<'_>) -> Result<Self> {
        let mut buf = [Insn::default(); N];
        let len = write(locs, &mut buf)?;
        let mut insns = Vec::new();
        insns
            .extend_from_slice(buf.get(..len).unwrap_or_default())
            .map_err(|_| Error::Capacity {
                what: "prologue instructions",
                limit: u32::try_from(N).unwrap_or(u32::MAX),
            })?;
        Ok(Prologue { insns })
    }

    /// The instructions, to prepend to the program.
    #[must_use]
    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }

    /// Number of instruction slots.
    #[must_use]
    pub fn len(&self) -> usize {
        self.insns.len()
    }

    /// Whether it is empty (it never is: it at least saves and restores the context).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.insns.is_empty()
    }
}

impl<const N: usize> fmt::Display for Prologue<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "bpf_prologue: insn num={}", self.insns.len())?;
        for line in &Listing::new(&self.insns) {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}
