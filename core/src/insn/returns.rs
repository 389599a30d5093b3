//! Whether a program can only ever return 0, told from its instructions.
//!
//! A kprobe or uprobe program's return value decides whether its probe writes a sample
//! (0: none). A program that returns 0 on every path never lets its probe write one, so the
//! loader may attach it without a sample stream (the kprobe/uprobe PMUs). The analysis is
//! conservative: `true` only when every `exit` reachable from the first instruction (calls
//! are stepped over, not entered) follows a `r0 = 0` / `w0 = 0` on every path to it.

use super::opcode::{
    ALU, ALU64, ATOMIC, CALL, CMPXCHG, EXIT, FETCH, JA, JMP, JMP32, K, LD, LDX, MOV, STX,
};
use super::Insn;

/// What is known of r0 before an instruction.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum R0 {
    /// Not reached yet.
    Unseen = 0,
    /// 0 on every path so far.
    Zero = 1,
    /// Anything.
    Any = 2,
}

impl R0 {
    fn meet(self, other: R0) -> R0 {
        match (self, other) {
            (R0::Unseen, x) | (x, R0::Unseen) => x,
            (R0::Zero, R0::Zero) => R0::Zero,
            _ => R0::Any,
        }
    }
}

/// Whether the program `insns` (the main function first; called functions after it) returns
/// 0 on every path. `false` for anything it cannot follow (a jump out of the program).
/// `scratch` holds one entry per instruction (its contents are overwritten); a shorter one
/// gives `None`.
#[must_use]
pub fn always_returns_zero(insns: &[Insn], scratch: &mut [u8]) -> Option<bool> {
    let n = insns.len();
    let state = scratch.get_mut(..n)?;
    state.fill(R0::Unseen as u8);
    Some(analyse(insns, state))
}

fn get(state: &[u8], i: usize) -> Option<R0> {
    state.get(i).map(|&b| match b {
        0 => R0::Unseen,
        1 => R0::Zero,
        _ => R0::Any,
    })
}

fn analyse(insns: &[Insn], state: &mut [u8]) -> bool {
    let n = insns.len();
    let Some(first) = state.get_mut(0) else {
        return false;
    };
    *first = R0::Any as u8;
    // Each instruction's state only goes Unseen -> Zero -> Any, so a sweep that changes
    // nothing ends it: at most 2n + 1 sweeps, each O(n).
    let mut exits_seen = false;
    for _ in 0..=n.saturating_mul(2) {
        let mut changed = false;
        let mut i = 0usize;
        while i < n {
            let (Some(insn), Some(before)) = (insns.get(i), get(state, i)) else {
                return false;
            };
            let width = if insn.code() == (LD | 0x18) { 2 } else { 1 };
            if before == R0::Unseen {
                i += width;
                continue;
            }
            let class = insn.code() & 0x07;
            let op = insn.code() & 0xf0;
            let mut after = before;
            let mut targets: [Option<usize>; 2] = [Some(i + width), None];
            match class {
                ALU | ALU64 if insn.dst() == 0 => {
                    after = if op == MOV && insn.code() & 0x08 == K && insn.imm() == 0 {
                        R0::Zero
                    } else {
                        R0::Any
                    };
                }
                LD => after = R0::Any,
                LDX if insn.dst() == 0 => after = R0::Any,
                STX if insn.code() & 0xe0 == ATOMIC => {
                    let imm = insn.imm();
                    if imm == CMPXCHG || (imm & FETCH != 0 && insn.src() == 0) {
                        after = R0::Any;
                    }
                }
                JMP | JMP32 => {
                    let jump = |off: i64| {
                        i64::try_from(i)
                            .ok()
                            .and_then(|i| i.checked_add(1)?.checked_add(off))
                            .and_then(|t| usize::try_from(t).ok())
                            .filter(|&t| t < n)
                    };
                    match op {
                        CALL if class == JMP => after = R0::Any,
                        EXIT if class == JMP => {
                            exits_seen = true;
                            if before != R0::Zero {
                                return false;
                            }
                            targets = [None, None];
                        }
                        JA => {
                            let off = if class == JMP32 {
                                i64::from(insn.imm())
                            } else {
                                i64::from(insn.off())
                            };
                            let Some(t) = jump(off) else { return false };
                            targets = [Some(t), None];
                        }
                        _ => {
                            let Some(t) = jump(i64::from(insn.off())) else {
                                return false;
                            };
                            targets[1] = Some(t);
                        }
                    }
                }
                _ => {}
            }
            for t in targets.into_iter().flatten() {
                // Falling off the end of the program.
                let (Some(old), Some(slot)) = (get(state, t), state.get_mut(t)) else {
                    return false;
                };
                let new = old.meet(after);
                if new != old {
                    *slot = new as u8;
                    changed = true;
                }
            }
            i += width;
        }
        if !changed {
            return exits_seen;
        }
    }
    false
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::insn::opcode::{JEQ, JNE};

    fn zero(insns: &[Insn]) -> bool {
        let mut scratch = [0u8; 64];
        always_returns_zero(insns, &mut scratch).unwrap()
    }

    #[test]
    fn straight_lines() {
        assert!(zero(&[Insn::mov64_imm(0, 0), Insn::exit()]));
        assert!(zero(&[Insn::mov32_imm(0, 0), Insn::exit()]));
        assert!(!zero(&[Insn::mov64_imm(0, 1), Insn::exit()]));
        // A helper's result returned.
        assert!(!zero(&[Insn::call(14), Insn::exit()]));
        // r0 = 0 then a call: the call's result is returned.
        assert!(!zero(&[
            Insn::mov64_imm(0, 0),
            Insn::call(14),
            Insn::exit()
        ]));
        // A call, then r0 = 0.
        assert!(zero(&[Insn::call(14), Insn::mov64_imm(0, 0), Insn::exit()]));
        // r0 from a register or memory.
        assert!(!zero(&[Insn::mov64_reg(0, 1), Insn::exit()]));
        assert!(!zero(&[Insn::ldx_mem(0x18, 0, 1, 0), Insn::exit()]));
        // Another register zeroed says nothing of r0 at entry.
        assert!(!zero(&[Insn::mov64_imm(1, 0), Insn::exit()]));
        // ld_imm64 into r0 (two slots).
        let [a, b] = Insn::ld_imm64(0, 0, 0);
        assert!(!zero(&[a, b, Insn::exit()]));
        assert!(!zero(&[]));
    }

    #[test]
    fn branches_meet() {
        // if r1 == 0 goto +2; r0 = 0; exit; r0 = 0; exit
        let both = [
            Insn::jmp_imm(JEQ, 1, 0, 2),
            Insn::mov64_imm(0, 0),
            Insn::exit(),
            Insn::mov64_imm(0, 0),
            Insn::exit(),
        ];
        assert!(zero(&both));
        // One branch returns 1.
        let one = [
            Insn::jmp_imm(JEQ, 1, 0, 2),
            Insn::mov64_imm(0, 0),
            Insn::exit(),
            Insn::mov64_imm(0, 1),
            Insn::exit(),
        ];
        assert!(!zero(&one));
        // A shared exit block reached with r0 = 0 from both sides.
        let shared = [
            Insn::mov64_imm(0, 0),
            Insn::jmp_imm(JNE, 1, 0, 1),
            Insn::mov64_imm(2, 7),
            Insn::exit(),
        ];
        assert!(zero(&shared));
        // A loop back edge that sets r0 to 1 before leaving.
        let looped = [
            Insn::mov64_imm(0, 0),
            Insn::jmp_imm(JEQ, 1, 0, 2),
            Insn::mov64_imm(0, 1),
            Insn::ja(-3),
            Insn::exit(),
        ];
        assert!(!zero(&looped));
        // A jump out of the program.
        assert!(!zero(&[Insn::ja(5), Insn::exit()]));
        // Falling off the end.
        assert!(!zero(&[Insn::mov64_imm(0, 0)]));
    }

    #[test]
    fn called_functions_are_stepped_over() {
        // main: call +2; r0 = 0; exit; sub: r0 = 1; exit
        let p = [
            Insn::call_pc(2),
            Insn::mov64_imm(0, 0),
            Insn::exit(),
            Insn::mov64_imm(0, 1),
            Insn::exit(),
        ];
        assert!(zero(&p));
    }

    #[test]
    fn short_scratch() {
        let mut s = [0u8; 1];
        assert_eq!(
            always_returns_zero(&[Insn::mov64_imm(0, 0), Insn::exit()], &mut s),
            None
        );
    }
}
