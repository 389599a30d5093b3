//! DWARF resolution of probe points and argument locations (feature `dwarf`, uses `alloc`).
//!
//! ```text
//! ELF (+ separate debug file) ──DebugSections::load──► .debug_* (a compressed one inflated
//!                                                      when first read)
//! FUNC ──index (grep .debug_info for references to "FUNC")──► the units that may hold it
//! FUNC[+OFF|:LINE|%return] ──Resolver::sites──► one ProbeSite per address (out-of-line
//!                                               function, every inlined instance), those
//!                                               units alone parsed
//! ARG (var, var->m.n[2]) ──Resolver::resolve──► ArgLocation per site: register / global /
//!                                               frame slot / constant, derefs, size, sign
//! ArgLocation ──fetch_arg──► `+104(+248(%di)):u64`, as `perf probe` writes it
//! ```
//!
//! Placement follows `perf probe`: `FUNC` alone probes after the function's prologue (the
//! first line-table row with `prologue_end`, else the first row of another line) when the
//! unit is not optimized ([`PrologueSkip::Auto`]); `FUNC+OFF` is exact (`+0` is the entry);
//! `FUNC:LINE` is a line relative to the function's declaration; every
//! `DW_TAG_inlined_subroutine` of `FUNC` is one more site (no limit on their number).
//!
//! Variables are looked up at each site's address: parameters and locals of the innermost
//! lexical block that holds the address, through `DW_AT_abstract_origin` for inlined and
//! out-of-line copies, then globals of the unit. Locations are expressions or location
//! lists (`.debug_loc`, `.debug_loclists`); `DW_OP_fbreg` goes through the frame base, and a
//! `DW_OP_call_frame_cfa` frame base through the CFI (`.eh_frame`, `.debug_frame`).
//!
//! Lazy and indexed: nothing is parsed up front, a unit is parsed when a DIE of it is first
//! read, and a function or global is looked for only in the units whose bytes reference its
//! name (the module `index` says why that finds exactly what perf's walk over every unit
//! finds, and when it falls back to that walk); [`Lookup::Exhaustive`] walks every unit.
//!
//! Debug info is untrusted: nothing here panics on it, and every walk that follows
//! references (abstract origins, type chains, scopes) is bounded.

mod die;
mod error;
mod eval;
mod index;
mod location;
mod resolve;
mod resolver;
mod scope;
mod sections;
mod sites;
mod types;

pub use die::MAX_DEPTH;
pub use error::{Available, Error, MAX_AVAILABLE};
pub use location::{ArgLocation, FetchSyntax, LocBase, ResolvedArg, KERNEL_ANCHOR};
pub use resolve::ProbeSite;
pub use resolver::{Lookup, PrologueSkip, Release, Resolver};
pub use sections::{
    build_id, debug_file_candidates, debuglink, debuglink_crc, DebugSections, DEBUG_DIR,
    MAX_INFLATED,
};
