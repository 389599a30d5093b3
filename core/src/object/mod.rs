//! The open phase: an eBPF object read without the kernel (the seed's `bpf_object__open`).
//!
//! [`Object::open`] checks the header (`ET_REL`; `EM_BPF` or `EM_NONE`; the target's byte
//! order), reads `license` and `version`, the legacy `maps` section, every executable
//! section as a program, the BTF-defined, global data and `.kconfig` maps, and checks
//! every relocation of every program. Programs are views of the input; each keeps where
//! its entries lie in its REL table. [`Object::relocate`] copies a program into the
//! caller's buffer, applies its patches and appends the functions it calls (one walk: see
//! [`link`]'s docs), following a table written at open (see `table`).
//!
//! The program and map tables live in an [`ObjectStorage`] the caller owns (capacities
//! are its const generics), and the [`Object`] borrows them: opening writes only the
//! entries the object has, never initialises or moves the whole capacity, and a tool that
//! reads many objects reuses one storage.
//!
//! Files, each using only those listed before it: `programs` and `maps` (the tables'
//! entries), `externs` (`.kconfig` layout), `parts` (what open found besides the tables),
//! `sections` (header, sections, symbols), `reloc` (relocation kinds, their checks and
//! actions), `table` (the relocation table written at open: the pass that checks every relocation and writes its entry, then each function's code references), `open` ([`Object`], [`ObjectStorage`], the open phase), `link` (relocating).
//!
//! ```
//! # fn f(bytes: &[u8]) -> sluice_core::Result<()> {
//! use sluice_core::object::{Object, ObjectStorage};
//! let mut storage = ObjectStorage::new();
//! let obj = Object::open(bytes, &mut storage)?;
//! for p in obj.programs() {
//!     let _ = (p.section_name, p.insn_count());
//! }
//! # Ok(()) }
//! ```

mod externs;
mod link;
mod maps;
mod open;
mod parts;
mod programs;
mod reloc;
mod sections;
mod table;

pub use externs::{KconfigExtern, KconfigKind, MAX_EXTERNS};
pub use link::{LinkedPart, MAX_CALL_DEPTH, MAX_LINKED};
pub use maps::{
    map_type_name, MapDef, MapKind, MapLayout, BPF_F_MMAPABLE, BPF_F_RDONLY_PROG, MAX_MAP_WORDS,
};
pub use open::{Object, ObjectStorage, DEFAULT_BTF_TYPES, DEFAULT_MAPS, DEFAULT_PROGRAMS};
pub use programs::Program;
pub use reloc::{
    Reloc, RelocKind, PSEUDO_CALL, PSEUDO_FUNC, PSEUDO_MAP_FD, PSEUDO_MAP_VALUE, R_BPF_64_32,
    R_BPF_64_64,
};
pub use table::DEFAULT_PATCHES;
