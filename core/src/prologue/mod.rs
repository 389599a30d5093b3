//! The BPF *prologue*: instructions put before a kprobe/uprobe program that fetch the probe's
//! arguments and pass them in r2..r5, so the program reads them as plain parameters:
//! `int f(struct pt_regs *ctx, void *a_ops, long bytes, long offset)`.
//!
//! # Input
//!
//! [`ArgLocs`]: the architecture (whose `struct pt_regs` the context is), which memory
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

use core::fmt;

use heapless::Vec;

use crate::disasm::Listing;
use crate::{Error, Insn, Result};

pub use gen::write;
pub use loc::{ArgLoc, ArgLocs, Base, FetchArg, Memory, Value, PROBE_READ_KERNEL, PROBE_READ_USER};
pub use typed::{c_type_layout, from_typed_args, from_typed_args_with, NEEDS_SYMBOLS};

/// Most values passed: r2..r5 (`$err` included).
pub const MAX_VALUES: usize = 4;
/// Most dereferences in one argument (as many as an argument expression has steps).
pub const MAX_DEREFS: usize = crate::probe::MAX_STEPS;
/// Most memory reads in one prologue: every value's dereferences plus the read its base
/// implies.
pub const MAX_READS: usize = MAX_VALUES * (MAX_DEREFS + 1);
/// Longest prologue, in instruction slots: `r6 = r1`; per value a `$err` index store, a
/// two-slot base, 7 instructions per read but one, 4 to narrow and store, one to load its
/// register; the jump over the error path, the error path, `r1 = r6`.
pub const MAX_INSNS: usize =
    1 + MAX_VALUES * (1 + 2 + (MAX_DEREFS + 1) * 7 - 1 + 4 + 1) + 1 + MAX_VALUES + 1;
/// The stack slot of the `$err` index (relative to r10), below the value slots.
pub const ERR_SLOT: i16 = -8 * (MAX_VALUES as i16 + 1);
/// The message (in [`Error::Usage`]) for an argument that needs debug info.
pub const NEEDS_DEBUG_INFO: &str = "needs debug info (--debuginfo FILE), not supported yet";

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
