//! Location expressions evaluated to what a prologue can fetch (a register, a frame slot
//! through the frame base and the CFI, a global, a constant), and the member-chain walk's
//! steps on that value.

use alloc::string::String;
use alloc::vec::Vec;

use gimli::constants as dw;
use gimli::{AttributeValue, Operation, RunTimeEndian, UnwindSection};

use super::error::{gimli_err, Error};
use super::location::{ArgLocation, LocBase};
use super::resolver::{DieRef, Resolver, R};
use super::sites::Site;
use crate::elf::SHT_NOBITS;

/// Most operations read from one location expression.
const MAX_OPS: usize = 16;

/// Where a value starts, before reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Start {
    /// A register plus an offset.
    Reg(u16, i64),
    /// The CFA: a register plus an offset, from the CFI.
    Cfa(u16, i64),
    /// A constant.
    Const(i64),
    /// The address of a global (a constant, remembered to name the global).
    Addr(u64),
}

/// A value, or an object in memory, as the chain walk sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Val {
    /// The value is `start` read through `derefs`.
    Value(Start, Vec<i64>),
    /// The object is in memory at (`start` read through `derefs`) + the offset.
    Memory(Start, Vec<i64>, i64),
}

impl<'s> Resolver<'s> {
    /// The value (or memory) of a variable DIE at `pc`.
    pub(super) fn variable_value(
        &self,
        site: &Site,
        die: DieRef,
        pc: u64,
        name: &str,
    ) -> Result<Val, Error> {
        let (unit, entry) = self.entry(die)?;
        let na = |reason| Error::not_available(name, pc, reason);
        match entry
            .attr_value(dw::DW_AT_location)
            .map_err(gimli_err("DW_AT_location"))?
        {
            Some(AttributeValue::Exprloc(expr)) => self.eval(site, unit, expr, pc, name),
            Some(v) => {
                let mut iter = self
                    .lists()?
                    .attr_locations(unit, v)
                    .map_err(gimli_err("location list"))?
                    .ok_or(na("location attribute of an unknown form"))?;
                while let Some(l) = iter.next().map_err(gimli_err("location list"))? {
                    if pc >= l.range.begin && pc < l.range.end {
                        return self.eval(site, unit, l.data, pc, name);
                    }
                }
                Err(na("no location at this address"))
            }
            None => match entry
                .attr_value(dw::DW_AT_const_value)
                .map_err(gimli_err("DW_AT_const_value"))?
            {
                Some(AttributeValue::Block(b)) => Ok(Val::Value(
                    Start::Const(le_value(b.slice()).ok_or(na("constant wider than 8 bytes"))?),
                    Vec::new(),
                )),
                Some(v) => {
                    let c = v
                        .sdata_value()
                        .or(v.udata_value().map(|u| u as i64))
                        .ok_or(na("constant of an unknown form"))?;
                    Ok(Val::Value(Start::Const(c), Vec::new()))
                }
                None => Err(na("optimized out")),
            },
        }
    }

    /// A location expression as a prologue can fetch it.
    pub(super) fn eval(
        &self,
        site: &Site,
        unit: &gimli::Unit<R<'s>>,
        expr: gimli::Expression<R<'s>>,
        pc: u64,
        name: &str,
    ) -> Result<Val, Error> {
        let na = |reason| Error::not_available(name, pc, reason);
        let mut ops: Vec<Operation<R<'s>>> = Vec::new();
        let mut iter = expr.operations(unit.encoding());
        while let Some(op) = iter.next().map_err(gimli_err("location expression"))? {
            if ops.len() >= MAX_OPS {
                return Err(na("expression too complex"));
            }
            ops.push(op);
        }
        let reg = |r: gimli::Register| r.0;
        match ops.as_slice() {
            [] => Err(na("optimized out (empty location)")),
            [Operation::Register { register }] => {
                Ok(Val::Value(Start::Reg(reg(*register), 0), Vec::new()))
            }
            [Operation::RegisterOffset {
                register, offset, ..
            }] => Ok(Val::Memory(
                Start::Reg(reg(*register), 0),
                Vec::new(),
                *offset,
            )),
            [Operation::RegisterOffset {
                register, offset, ..
            }, Operation::StackValue] => {
                Ok(Val::Value(Start::Reg(reg(*register), *offset), Vec::new()))
            }
            [Operation::FrameOffset { offset }] => {
                let (fb, reads) = self.frame_base(site, pc, name)?;
                Ok(Val::Memory(fb, reads, *offset))
            }
            [Operation::FrameOffset { offset }, Operation::StackValue] => {
                // The address of a frame slot, as a value (a pointer into the frame).
                match self.frame_base(site, pc, name)? {
                    (Start::Reg(r, o), reads) if reads.is_empty() => Ok(Val::Value(
                        Start::Reg(r, o.wrapping_add(*offset)),
                        Vec::new(),
                    )),
                    (Start::Cfa(r, o), reads) if reads.is_empty() => Ok(Val::Value(
                        Start::Cfa(r, o.wrapping_add(*offset)),
                        Vec::new(),
                    )),
                    _ => Err(na("the address of a slot of a frame found by a read")),
                }
            }
            [Operation::Address { address }] => {
                Ok(Val::Memory(Start::Addr(*address), Vec::new(), 0))
            }
            [Operation::AddressIndex { index }] => {
                let a = self
                    .dwarf
                    .address(unit, *index)
                    .map_err(gimli_err("DW_OP_addrx"))?;
                Ok(Val::Memory(Start::Addr(a), Vec::new(), 0))
            }
            [Operation::UnsignedConstant { value }, Operation::StackValue] => {
                Ok(Val::Value(Start::Const(*value as i64), Vec::new()))
            }
            [Operation::SignedConstant { value }, Operation::StackValue] => {
                Ok(Val::Value(Start::Const(*value), Vec::new()))
            }
            [Operation::Address { address }, Operation::StackValue] => {
                Ok(Val::Value(Start::Const(*address as i64), Vec::new()))
            }
            [Operation::ImplicitValue { data }] => Ok(Val::Value(
                Start::Const(
                    le_value(data.slice()).ok_or(na("implicit value wider than 8 bytes"))?,
                ),
                Vec::new(),
            )),
            ops if ops.iter().any(|o| matches!(o, Operation::Piece { .. })) => {
                Err(na("split in pieces"))
            }
            ops if ops
                .iter()
                .any(|o| matches!(o, Operation::EntryValue { .. })) =>
            {
                Err(na("only an entry value (the caller's register at entry)"))
            }
            ops if ops
                .iter()
                .any(|o| matches!(o, Operation::ImplicitPointer { .. })) =>
            {
                Err(na("an implicit pointer (the object is optimized out)"))
            }
            _ => Err(na("a computed location (arithmetic on registers)")),
        }
    }

    /// The frame base of the function around `site` at `pc`.
    pub(super) fn frame_base(
        &self,
        site: &Site,
        pc: u64,
        name: &str,
    ) -> Result<(Start, Vec<i64>), Error> {
        let na = |reason| Error::not_available(name, pc, reason);
        let outer = site.outer.unwrap_or(site.die);
        let (unit, entry) = self.entry(outer)?;
        let expr = match entry
            .attr_value(dw::DW_AT_frame_base)
            .map_err(gimli_err("DW_AT_frame_base"))?
        {
            Some(AttributeValue::Exprloc(e)) => e,
            Some(v) => {
                let mut iter = self
                    .lists()?
                    .attr_locations(unit, v)
                    .map_err(gimli_err("frame base list"))?
                    .ok_or(na("frame base of an unknown form"))?;
                let mut found = None;
                while let Some(l) = iter.next().map_err(gimli_err("frame base list"))? {
                    if pc >= l.range.begin && pc < l.range.end {
                        found = Some(l.data);
                        break;
                    }
                }
                found.ok_or(na("no frame base at this address"))?
            }
            None => return Err(na("DW_OP_fbreg without a frame base")),
        };
        let mut iter = expr.operations(unit.encoding());
        let first = iter.next().map_err(gimli_err("frame base"))?;
        let second = iter.next().map_err(gimli_err("frame base"))?;
        match (first, second) {
            (Some(Operation::CallFrameCFA), None) => self.cfa(unit.encoding(), pc, name),
            (Some(Operation::Register { register }), None) => {
                Ok((Start::Reg(register.0, 0), Vec::new()))
            }
            (
                Some(Operation::RegisterOffset {
                    register, offset, ..
                }),
                None,
            ) => Ok((Start::Reg(register.0, offset), Vec::new())),
            _ => Err(na("a frame base this resolver does not evaluate")),
        }
    }

    /// The CFA at `pc` from `.eh_frame` (or `.debug_frame`): a register plus an offset, or
    /// the `DW_OP_bregN off; DW_OP_deref` expression of a realigned stack (i386 `main`).
    pub(super) fn cfa(
        &self,
        encoding: gimli::Encoding,
        pc: u64,
        name: &str,
    ) -> Result<(Start, Vec<i64>), Error> {
        let na = |reason| Error::not_available(name, pc, reason);
        let endian = if self.code.header().is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let find = |n: &str| {
            self.code
                .sections()
                .map(|(_, sh)| sh)
                .find(|sh| self.code.section_name(sh) == n && sh.sh_type != SHT_NOBITS)
        };
        let address_size = encoding.address_size;
        let encoding = Some(encoding);
        let mut ctx = gimli::UnwindContext::new();
        if let Some(eh) = find(".eh_frame") {
            let mut bases = gimli::BaseAddresses::default().set_eh_frame(eh.addr);
            if let Some(text) = find(".text") {
                bases = bases.set_text(text.addr);
            }
            if let Some(got) = find(".got") {
                bases = bases.set_got(got.addr);
            }
            let mut section = gimli::EhFrame::new(self.code.section_data(&eh), endian);
            section.set_address_size(address_size);
            if let Ok(row) = section.unwind_info_for_address(
                &bases,
                &mut ctx,
                pc,
                gimli::EhFrame::cie_from_offset,
            ) {
                let rule = row.cfa().clone();
                return cfa_rule(&rule, &section, encoding)
                    .ok_or(na("a CFA expression this resolver does not evaluate"));
            }
        }
        let debug_frame = self.debug.section(".debug_frame")?;
        let mut section = gimli::DebugFrame::new(debug_frame, endian);
        section.set_address_size(address_size);
        let bases = gimli::BaseAddresses::default();
        let row = section
            .unwind_info_for_address(&bases, &mut ctx, pc, gimli::DebugFrame::cie_from_offset)
            .map_err(|_| na("no call frame information at this address"))?;
        let rule = row.cfa().clone();
        cfa_rule(&rule, &section, encoding)
            .ok_or(na("a CFA expression this resolver does not evaluate"))
    }
}

/// A CFA rule as a start and reads.
fn cfa_rule<'s, S: UnwindSection<R<'s>>>(
    rule: &gimli::CfaRule<usize>,
    section: &S,
    encoding: Option<gimli::Encoding>,
) -> Option<(Start, Vec<i64>)> {
    match rule {
        gimli::CfaRule::RegisterAndOffset { register, offset } => {
            Some((Start::Cfa(register.0, *offset), Vec::new()))
        }
        gimli::CfaRule::Expression(e) => {
            let expr = e.get(section).ok()?;
            let mut ops = expr.operations(encoding?);
            let first = ops.next().ok()?;
            let second = ops.next().ok()?;
            let third = ops.next().ok()?;
            match (first, second, third) {
                (
                    Some(Operation::RegisterOffset {
                        register, offset, ..
                    }),
                    Some(Operation::Deref { .. }),
                    None,
                ) => Some((Start::Reg(register.0, 0), alloc::vec![offset])),
                _ => None,
            }
        }
    }
}

/// Bytes of a little-endian constant up to 8 bytes, sign-extended from its width.
fn le_value(b: &[u8]) -> Option<i64> {
    if b.len() > 8 || b.is_empty() {
        return None;
    }
    let mut v = [0u8; 8];
    v.get_mut(..b.len())?.copy_from_slice(b);
    let raw = u64::from_le_bytes(v);
    let shift = 64 - 8 * b.len() as u32;
    Some(((raw << shift) as i64) >> shift)
}

/// The value of a pointer-typed object: read it if it is in memory.
pub(super) fn pointee(v: Val) -> Val {
    match v {
        Val::Value(s, d) => Val::Value(s, d),
        Val::Memory(s, mut d, off) => {
            d.push(off);
            Val::Value(s, d)
        }
    }
}

/// The object `off` bytes into the object `v` points at (after [`pointee`]) or is.
pub(super) fn member_at(v: Val, off: i64) -> Option<Val> {
    match v {
        // A pointer value: the object it points at.
        Val::Value(s, d) => Some(Val::Memory(s, d, off)),
        Val::Memory(s, d, base) => Some(Val::Memory(s, d, base.wrapping_add(off))),
    }
}

/// The address of an object in memory, as a value.
pub(super) fn address_of(v: Val) -> Option<Val> {
    match v {
        Val::Memory(Start::Reg(r, o), d, off) if d.is_empty() => {
            Some(Val::Value(Start::Reg(r, o.wrapping_add(off)), d))
        }
        Val::Memory(Start::Addr(a), d, off) if d.is_empty() => Some(Val::Value(
            Start::Const(a.wrapping_add(off as u64) as i64),
            d,
        )),
        Val::Memory(s, mut d, off) => {
            // `+off(X)` as a value is X + off: only expressible when folded into a read later.
            let last = d.pop()?;
            d.push(last);
            let _ = off;
            let _ = s;
            None
        }
        Val::Value(..) => None,
    }
}

/// Turns the walk's value into an [`ArgLocation`].
pub(super) fn finish(v: Val, size: u8, signed: bool, var: String) -> ArgLocation {
    let (start, derefs) = match v {
        Val::Value(s, d) => (s, d),
        Val::Memory(s, mut d, off) => {
            d.push(off);
            (s, d)
        }
    };
    let mut global = None;
    let (base, derefs) = match (start, derefs.split_first()) {
        (Start::Reg(r, o), Some((&first, rest))) => (
            LocBase::Register {
                dwarf_reg: r,
                offset: 0,
            },
            core::iter::once(first.wrapping_add(o))
                .chain(rest.iter().copied())
                .collect(),
        ),
        (Start::Reg(r, o), None) => (
            LocBase::Register {
                dwarf_reg: r,
                offset: o,
            },
            Vec::new(),
        ),
        (Start::Cfa(r, o), Some((&first, rest))) => (
            LocBase::FrameSlot {
                cfa_reg: r,
                cfa_offset: o,
                offset: first,
            },
            rest.to_vec(),
        ),
        (Start::Cfa(r, o), None) => (
            LocBase::Register {
                dwarf_reg: r,
                offset: o,
            },
            Vec::new(),
        ),
        (Start::Addr(a), Some((&first, rest))) => {
            global = Some((var, first as u64));
            (
                LocBase::Address(a.wrapping_add(first as u64)),
                rest.to_vec(),
            )
        }
        (Start::Addr(a), None) => (LocBase::Const(a as i64), Vec::new()),
        (Start::Const(c), Some((&first, rest))) => (
            LocBase::Address((c as u64).wrapping_add(first as u64)),
            rest.to_vec(),
        ),
        (Start::Const(c), None) => (LocBase::Const(c), Vec::new()),
    };
    ArgLocation {
        base,
        derefs,
        size,
        signed,
        global,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn constants() {
        assert_eq!(le_value(&[0xff]), Some(-1));
        assert_eq!(le_value(&[0x2a, 0]), Some(42));
        assert_eq!(le_value(&[]), None);
        assert_eq!(le_value(&[0; 9]), None);
    }

    #[test]
    fn finishing() {
        // `file->f_mapping->a_ops`, file in %di.
        let v = Val::Memory(Start::Reg(5, 0), alloc::vec![248], 104);
        let l = finish(v, 8, false, String::new());
        assert_eq!(
            l.base,
            LocBase::Register {
                dwarf_reg: 5,
                offset: 0
            }
        );
        assert_eq!(l.derefs, alloc::vec![248, 104]);
        // An -O0 local: CFA (rbp+16) - 56.
        let l = finish(
            Val::Memory(Start::Cfa(6, 16), Vec::new(), -56),
            4,
            true,
            String::new(),
        );
        assert_eq!(
            l.base,
            LocBase::FrameSlot {
                cfa_reg: 6,
                cfa_offset: 16,
                offset: -56
            }
        );
        assert!(l.derefs.is_empty());
        // A global's member.
        let l = finish(
            Val::Memory(Start::Addr(0x4000), Vec::new(), 16),
            1,
            false,
            "g".into(),
        );
        assert_eq!(l.base, LocBase::Address(0x4010));
        assert_eq!(l.global, Some(("g".into(), 16)));
        // A frame base register with an offset folds into the first read.
        let l = finish(
            Val::Memory(Start::Reg(7, 8), Vec::new(), 4),
            4,
            false,
            String::new(),
        );
        assert_eq!(l.derefs, alloc::vec![12]);
    }
}
