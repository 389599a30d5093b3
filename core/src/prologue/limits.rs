//! The prologue's limits and stack layout: how many values, dereferences, reads and
//! instruction slots at most, and where `$err`'s index lives.

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
