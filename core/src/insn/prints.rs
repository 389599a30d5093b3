//! Whether a program prints through `bpf_trace_printk` or `bpf_trace_vprintk`, told from
//! its instructions: what it prints goes to the `bpf_trace:bpf_trace_printk` tracepoint.

use super::opcode::{CALL, JMP};
use super::Insn;

/// Helper id of `bpf_trace_printk`.
pub const TRACE_PRINTK: i32 = 6;

/// Helper id of `bpf_trace_vprintk` (Linux 5.16).
pub const TRACE_VPRINTK: i32 = 177;

/// Whether `insns` call helper [`TRACE_PRINTK`] or [`TRACE_VPRINTK`] (a `call` with
/// source register 0: a helper, not a subprogram or kernel function).
#[must_use]
pub fn calls_trace_printk(insns: &[Insn]) -> bool {
    insns.iter().any(|i| {
        i.code() == JMP | CALL && i.src() == 0 && matches!(i.imm(), TRACE_PRINTK | TRACE_VPRINTK)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_helper_calls_6_and_177_print() {
        let exit = Insn::new(0x95, 0, 0, 0, 0);
        assert!(calls_trace_printk(&[Insn::call(6), exit]));
        assert!(calls_trace_printk(&[Insn::call(14), Insn::call(177), exit]));
        assert!(!calls_trace_printk(&[Insn::call(14), exit]));
        // A subprogram at pc+6 and a kernel function of BTF id 6 are not the helper.
        assert!(!calls_trace_printk(&[Insn::call_pc(6), exit]));
        assert!(!calls_trace_printk(&[Insn::call_kfunc(6, 0), exit]));
        // `r6 = 6` shares the immediate, not the opcode.
        assert!(!calls_trace_printk(&[Insn::new(0xb7, 6, 0, 0, 6), exit]));
        assert!(!calls_trace_printk(&[]));
    }
}
