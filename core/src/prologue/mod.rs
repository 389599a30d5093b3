//! The BPF *prologue*: instructions put before a kprobe/uprobe program that fetch the probe's
//! arguments and pass them in r2..r5, so the program reads them as plain parameters:
//! `int f(struct pt_regs *ctx, void *a_ops, long bytes, long offset)`.
//!
//! # Input
//!
//! [`ArgLocs`]: the [`Platform`](crate::arch::Platform) (the kernel whose `struct pt_regs`
//! the context is, and the ABI of the probed code: they differ for an i386 binary under an
//! x86-64 kernel, whose stack arguments are read through the 64-bit `sp`), which memory
//! dereferences read ([`Memory`]: `bpf_probe_read_kernel` #113 for kprobes,
//! `bpf_probe_read_user` #112 for uprobes) and up to [`MAX_VALUES`] values in register order,
//! at most one of them the pseudo-argument `$err`. Each fetched value is an [`ArgLoc`]: a
//! [`Base`] (a register, a stack slot `sp+N`, an absolute address, the probed address plus
//! an offset for a global of a position-independent file, or a constant), up to
//! [`MAX_DEREFS`] dereference offsets, and the final size (1, 2, 4, 8) and sign. Debug info
//! (later) or [`from_typed_args`] (now: C types by the calling convention) produce them.
//!
//! # Output
//!
//! [`write()`] fills a caller buffer; [`Prologue`] holds one in a `heapless::Vec` of
//! const-generic capacity (default [`MAX_INSNS`], always enough). The code:
//!
//! ```text
//! r6 = r1                                   ctx, kept across helper calls
//! for each argument that reads memory (in order), into its own stack slot r10-8*(j+1):
//!   [*(u64 *)(r10 -40) = k]                 which argument, when $err is asked for
//!   r3 = *(u64 *)(r6 +OFF)                  base register from pt_regs
//!   per read:  r3 += OFF; r1 = r10; r1 += SLOT; r2 = SIZE; call probe_read_{kernel,user}
//!              if r0 != 0 goto error; r3 = *(SIZE *)(r10 SLOT) (all but the last read)
//!   last read narrower than 8: load it sized, sign-extend (lsh/arsh), store it as u64
//! r2..r5 = the slots; register-only arguments straight from pt_regs, narrowed;  $err = 0
//! goto out
//! error: every argument = 0; $err = k, the 1-based index of the argument whose read failed
//! out:   r1 = r6
//! ```
//!
//! Stack slots, not r7..r9, carry values across helper calls (perf's prologue used r7..r9
//! and so stopped at three arguments); r10 is only ever read. Every slot is written in full
//! before it is loaded, as the verifier requires. At most 40 bytes of stack are used, and
//! only before the program proper starts. Sign extension uses shift pairs rather than
//! `movsx`, so old kernels accept it; the helpers themselves need Linux 5.5.
//!
//! [`FetchArg`] spells each argument as the kprobe tracer would fetch it
//! (`a_ops=+104(+248(%di)):u64`), to compare with `perf probe` or to create the same event.

mod gen;
mod limits;
mod loc;
#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests;
mod typed;

pub use gen::{write, Prologue};
pub use limits::{ERR_SLOT, MAX_DEREFS, MAX_INSNS, MAX_READS, MAX_VALUES};
pub use loc::{ArgLoc, ArgLocs, Base, FetchArg, Memory, Value, PROBE_READ_KERNEL, PROBE_READ_USER};
pub use typed::{
    c_type_layout, from_typed_args, from_typed_args_with, AT_RETURN, NEEDS_DEBUG_INFO,
    NEEDS_SYMBOLS,
};
