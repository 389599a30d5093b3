//! The patcher: a relocation's value written into its instruction, or the instruction
//! replaced by libbpf's poison call ([`patch_insn`]).

use super::resolver::CoreResult;
use crate::btf::error::{BtfError, BtfResult};
use crate::insn::Insn;

/// The immediate of the poison call (`0xbad2310`: "bad relo"); the verifier prints
/// `invalid func unknown#195896080` if it is reachable.
pub const POISON_IMM: i32 = 0x0bad_2310;

/// What [`patch_insn`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchOutcome {
    /// An ALU/ALU64 immediate changed.
    Imm {
        /// Before.
        from: i32,
        /// After.
        to: i32,
    },
    /// A LDX/ST/STX offset changed, and maybe the access size.
    Off {
        /// Before.
        from: i16,
        /// After.
        to: i16,
        /// `(old, new)` access size in bytes when it changed.
        size: Option<(u32, u32)>,
    },
    /// An `ld_imm64` immediate changed.
    Imm64 {
        /// Before.
        from: u64,
        /// After.
        to: u64,
    },
    /// The instruction (both slots of an `ld_imm64`) became `call 0xbad2310`.
    Poisoned {
        /// Why.
        reason: BtfError,
    },
}

const CLASS_LD: u8 = 0x00;
const CLASS_LDX: u8 = 0x01;
const CLASS_ST: u8 = 0x02;
const CLASS_STX: u8 = 0x03;
const CLASS_ALU: u8 = 0x04;
const CLASS_ALU64: u8 = 0x07;
const SRC_X: u8 = 0x08;
const JMP_CALL: u8 = 0x85;

fn size_bytes(code: u8) -> u32 {
    match code & 0x18 {
        0x00 => 4,
        0x08 => 2,
        0x10 => 1,
        _ => 8,
    }
}

fn size_code(bytes: u32) -> Option<u8> {
    Some(match bytes {
        4 => 0x00,
        2 => 0x08,
        1 => 0x10,
        8 => 0x18,
        _ => return None,
    })
}

fn poison(insn: &mut Insn) {
    *insn = Insn::new(JMP_CALL, 0, 0, 0, POISON_IMM);
}

/// Applies `res` to instruction `at` of `insns` (libbpf's `bpf_core_patch_insn`).
///
/// # Errors
/// [`BtfError::CoreRelo`] when the instruction is not one a relocation can apply to, does
/// not hold the value the compiler should have written (when `res.validate`), or the new
/// offset does not fit 16 bits; [`BtfError::NoType`]-free: `at` past the end is
/// [`BtfError::CoreRelo`] too.
pub fn patch_insn(insns: &mut [Insn], at: usize, res: &CoreResult) -> BtfResult<PatchOutcome> {
    let err = |what| BtfError::CoreRelo {
        index: res.index,
        insn: res.insn,
        ty: res.type_name,
        access: res.access,
        what,
    };
    let insn = *insns
        .get(at)
        .ok_or(err("instruction index past the program"))?;
    let poisoned = |insns: &mut [Insn], reason: BtfError| {
        if insn.is_ld_imm64() {
            if let Some(next) = insns.get_mut(at + 1) {
                poison(next);
            }
        }
        if let Some(i) = insns.get_mut(at) {
            poison(i);
        }
        Ok(PatchOutcome::Poisoned { reason })
    };
    if let Some(reason) = res.poison {
        return poisoned(insns, reason);
    }
    let (orig, new) = (res.orig_val, res.new_val);
    match insn.code() & 0x07 {
        CLASS_ALU | CLASS_ALU64 => {
            if insn.code() & SRC_X != 0 {
                return Err(err("ALU instruction with a register source"));
            }
            if res.validate && insn.imm() as i64 as u64 != orig {
                return Err(err("ALU immediate is not the value the compiler computed"));
            }
            let to = new as i32;
            if let Some(i) = insns.get_mut(at) {
                i.set_imm(to);
            }
            Ok(PatchOutcome::Imm {
                from: insn.imm(),
                to,
            })
        }
        CLASS_LDX | CLASS_ST | CLASS_STX => {
            if res.validate && insn.off() as i64 as u64 != orig {
                return Err(err(
                    "LDX/ST/STX offset is not the value the compiler computed",
                ));
            }
            if new > i16::MAX as u64 {
                return Err(err("new offset does not fit 16 bits"));
            }
            if res.fail_memsz_adjust {
                return poisoned(
                    insns,
                    err("field changed size and is not a pointer or unsigned integer"),
                );
            }
            let to = new as i16;
            let mut code = insn.code();
            let mut size = None;
            if res.new_size != res.orig_size {
                if size_bytes(insn.code()) != res.orig_size {
                    return Err(err("LDX/ST/STX access size is not the field's size"));
                }
                let c = size_code(res.new_size).ok_or(err("new field size is not 1, 2, 4 or 8"))?;
                code = (insn.code() & 0xe0) | c | (insn.code() & 0x07);
                size = Some((res.orig_size, res.new_size));
            }
            if let Some(i) = insns.get_mut(at) {
                i.set_off(to);
                i.set_code(code);
            }
            Ok(PatchOutcome::Off {
                from: insn.off(),
                to,
                size,
            })
        }
        CLASS_LD => {
            let next = insns.get(at + 1).copied();
            let Some(next) = next.filter(|n| {
                insn.is_ld_imm64()
                    && insn.src() == 0
                    && insn.off() == 0
                    && n.code() == 0
                    && n.dst() == 0
                    && n.src() == 0
                    && n.off() == 0
            }) else {
                return Err(err("ld_imm64 of an unexpected form"));
            };
            let from = u64::from(insn.imm() as u32) | (u64::from(next.imm() as u32) << 32);
            if res.validate && from != orig {
                return Err(err(
                    "ld_imm64 immediate is not the value the compiler computed",
                ));
            }
            if let Some(i) = insns.get_mut(at) {
                i.set_imm(new as u32 as i32);
            }
            if let Some(i) = insns.get_mut(at + 1) {
                i.set_imm((new >> 32) as u32 as i32);
            }
            Ok(PatchOutcome::Imm64 { from, to: new })
        }
        _ => Err(err("instruction class cannot be relocated")),
    }
}
