//! Fuzz the prologue generator: its input comes from debug info and probe specs of untrusted
//! binaries.
//!
//! The bytes are decoded into an `ArgLocs`: the architecture, the memory kind, up to four
//! values (random bases — `pt_regs` registers, a foreign register now and then, stack slots,
//! addresses, constants — random dereference counts and offsets, sizes, signs; any input the
//! constructors reject is skipped), and a `$err` position. Then `prologue::write` into a
//! buffer of `MAX_INSNS` slots. Properties:
//! - constructing and writing never panic; a full buffer always suffices, a short one is an
//!   error;
//! - the output passes `disasm::validate`; it starts with `r6 = r1` and ends with `r1 = r6`;
//! - no instruction names r7–r9; r10 is never written (only read, and stored through);
//! - every stack access (through r10, or through a register set to r10 + k and handed to the
//!   read helper with a constant size) lies inside the 512-byte frame;
//! - every jump goes forward and lands inside the prologue;
//! - every fetched value's `fetch_arg` and the `Prologue` listing display.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_core::arch::{Arch, Reg};
use sluice_core::disasm::validate;
use sluice_core::prologue::{self, ArgLoc, ArgLocs, Base, Memory, Prologue, Value};
use sluice_core::Insn;

/// Reads the input front to back; zeros past its end.
struct Bytes<'d>(&'d [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }
    /// Mostly small offsets, sometimes any 32-bit value.
    fn offset(&mut self) -> i32 {
        let sel = self.u8();
        if sel & 1 == 0 {
            i32::from(self.u8() as i8) * 8
        } else {
            self.u32() as i32
        }
    }
}

fn loc(b: &mut Bytes<'_>, arch: Arch) -> Option<ArgLoc<'static>> {
    let kind = b.u8();
    let regs = arch.pt_regs();
    let base = match kind % 5 {
        0 | 1 => Base::Reg(*regs.get(usize::from(b.u8()) % regs.len().max(1))?),
        // A register that is no pt_regs slot of the arch: `push` must refuse it.
        2 if kind & 0x80 != 0 => Base::Reg(Reg::new("%bogus", b.u8().into())),
        2 => Base::Stack(b.offset()),
        // A global of a position-independent file: the program counter plus a distance.
        3 if kind & 0x80 != 0 => Base::IpRel(b.offset()),
        3 => Base::Addr(b.u64()),
        _ => Base::Const(b.u64()),
    };
    let size_sel = b.u8();
    let size = if size_sel & 0x80 != 0 {
        size_sel & 0x7f // mostly invalid
    } else {
        1 << (size_sel & 3)
    };
    let mut l = ArgLoc::new(base, size, size_sel & 0x40 != 0).ok()?;
    if kind & 0x40 != 0 {
        l = l.named("x");
    }
    let derefs = usize::from(b.u8()) % (prologue::MAX_DEREFS + 2);
    for _ in 0..derefs {
        l = l.deref(b.offset()).ok()?;
    }
    Some(l)
}

fn build(b: &mut Bytes<'_>) -> Option<ArgLocs<'static>> {
    let head = b.u8();
    let arch = *Arch::ALL.get(usize::from(head % 3))?;
    let memory = if head & 4 != 0 {
        Memory::User
    } else {
        Memory::Kernel
    };
    let n = usize::from((head >> 3) & 7) % (prologue::MAX_VALUES + 2);
    let mut locs = ArgLocs::new(arch, memory);
    for _ in 0..n {
        let l = loc(b, arch)?;
        locs.push(l).ok()?;
    }
    let err = b.u8();
    if err & 0x80 != 0 {
        locs.insert_err(usize::from(err & 7)).ok()?;
    } else if err & 0x40 != 0 {
        locs.push_err().ok()?;
    }
    Some(locs)
}

const R6: u8 = 6;
const R10: u8 = 10;
const FRAME: i64 = 512;

fn check_frame(off: i64, size: i64, what: &str, at: usize) {
    assert!(
        off >= -FRAME && off + size <= 0,
        "insn {at}: {what} of {size} bytes at r10{off:+} leaves the frame"
    );
}

fn check(insns: &[Insn]) {
    validate(insns).expect("prologue validates");
    assert_eq!(
        insns.first(),
        Some(&Insn::mov64_reg(R6, 1)),
        "starts with r6 = r1"
    );
    assert_eq!(
        insns.last(),
        Some(&Insn::mov64_reg(1, R6)),
        "ends with r1 = r6"
    );
    // What each register holds, when known: r10 + k, or a constant.
    #[derive(Clone, Copy)]
    enum Known {
        Fp(i64),
        Imm(i64),
    }
    let mut regs: [Option<Known>; 11] = [None; 11];
    let mut i = 0;
    while let Some(insn) = insns.get(i) {
        let (class, op, x) = (insn.code() & 7, insn.code() & 0xf0, insn.code() & 0x08 != 0);
        let size = match insn.code() & 0x18 {
            0x00 => 4,
            0x08 => 2,
            0x10 => 1,
            _ => 8,
        };
        let is_ld_imm64 = insn.code() == 0x18;
        for r in [insn.dst(), insn.src()] {
            assert!(!(7..=9).contains(&r), "insn {i} names r{r}: {insn:?}");
        }
        let writes_dst = matches!(class, 0x04 | 0x07 | 0x01) || is_ld_imm64;
        assert!(
            !(writes_dst && insn.dst() == R10),
            "insn {i} writes r10: {insn:?}"
        );
        match class {
            0x01 if insn.src() == R10 => check_frame(insn.off().into(), size, "load", i),
            0x02 | 0x03 if insn.dst() == R10 => check_frame(insn.off().into(), size, "store", i),
            0x05 | 0x06 => match op {
                0x80 => {
                    // A helper call: the read helper writes r2 bytes at r1.
                    if let (Some(Known::Fp(p)), Some(Known::Imm(n))) = (regs[1], regs[2]) {
                        check_frame(p, n, "helper write", i);
                    }
                    regs[..6].fill(None);
                }
                0x90 => panic!("insn {i}: exit inside a prologue"),
                _ => {
                    let target = i as i64 + 1 + i64::from(insn.off());
                    assert!(
                        insn.off() >= 0 && (target as usize) < insns.len(),
                        "insn {i}: jump to {target} of {}",
                        insns.len()
                    );
                    // Forward jumps: forget what the joining paths disagree on.
                    regs.fill(None);
                }
            },
            _ => {}
        }
        if writes_dst {
            let dst = usize::from(insn.dst());
            let new = match (class, op, x) {
                (0x07, 0xb0, true) if insn.src() == R10 => Some(Known::Fp(0)),
                (0x07, 0xb0, false) => Some(Known::Imm(insn.imm().into())),
                (0x07, 0x00, false) => match regs[dst] {
                    Some(Known::Fp(p)) => Some(Known::Fp(p + i64::from(insn.imm()))),
                    Some(Known::Imm(v)) => Some(Known::Imm(v.wrapping_add(insn.imm().into()))),
                    None => None,
                },
                _ => None,
            };
            regs[dst] = new;
        }
        i += if is_ld_imm64 { 2 } else { 1 };
    }
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let Some(locs) = build(&mut b) else {
        return;
    };
    assert!(locs.len() <= prologue::MAX_VALUES);
    assert!(locs.values().iter().filter(|v| **v == Value::Err).count() <= 1);
    for (j, l) in locs.fetched().enumerate() {
        let _ = l.fetch_arg(j).to_string();
        let _ = format!("{:?}", l.reads());
    }
    let mut buf = [Insn::default(); prologue::MAX_INSNS];
    let n = prologue::write(&locs, &mut buf).expect("MAX_INSNS always suffices");
    check(&buf[..n]);
    let p = Prologue::<{ prologue::MAX_INSNS }>::generate(&locs).expect("generate");
    assert_eq!(p.insns(), &buf[..n]);
    let _ = p.to_string();
    // One slot short is an error, not a panic or a truncation passed off as success.
    if n > 0 {
        let mut short = [Insn::default(); prologue::MAX_INSNS];
        assert!(prologue::write(&locs, &mut short[..n - 1]).is_err());
    }
});
