//! CO-RE ("compile once, run everywhere") relocation resolution, after libbpf's
//! `relo_core.c`.
//!
//! A relocation names a local type (from the object's `.BTF`), an access string
//! (`0:1:2`: array index on the root, then member/element indices) and what to compute
//! (a field's byte offset, size, existence, signedness, bitfield shifts; a type's id,
//! existence, size or structural match; an enumerator's existence or value). The resolver
//!
//! 1. parses the access string into a *spec* against the local BTF;
//! 2. finds target candidates: types of the target BTF (normally the kernel's) whose name
//!    equals the local root's with any `___flavour` suffix stripped, and of a compatible
//!    kind — through a [`CandidateIndex`] in a caller-provided `&mut [Candidate]`: of every
//!    named target type (≈ 150 000 for vmlinux) sorted once by name, or of only those
//!    named as the relocations' roots ([`CandidateIndex::for_names`], one pass);
//! 3. matches the spec against each candidate: member by member (exact names, looking
//!    into anonymous struct/union members), array by array, with libbpf's "essentially
//!    compatible" rules for the field types;
//! 4. computes the value from the local spec (what the compiler wrote) and from the
//!    matching target spec (what the kernel needs). All matching candidates must agree;
//!    none matching gives 0 for the `*_exists`/`type_*` kinds and *poison* for the others.
//!
//! [`patch_insn`] then writes the new value into the instruction (ALU immediate, LDX/ST/STX
//! offset and, when the field changed size, the access size; `ld_imm64` immediate), or
//! replaces it with libbpf's poison `call 0xbad2310`, which the verifier rejects only if
//! the instruction is reachable.
//!
//! Stack use: three specs of [`MAX_SPEC_LEN`] accessors, about 5 KB; every walk is
//! bounded (spec length, [`crate::btf::MAX_RESOLVE_DEPTH`], a step budget per relocation).

mod candidates;
mod kind;
mod matcher;
mod patch;
mod resolver;
mod spec;
mod value;

pub use candidates::{essential_name_len, Candidate, CandidateIndex};
pub use kind::CoreReloKind;
pub use patch::{patch_insn, PatchOutcome, POISON_IMM};
pub use resolver::{CoreResolver, CoreResult};
pub use spec::MAX_SPEC_LEN;
