//! Programs: executable sections, their instructions viewed in place.

use crate::insn::{Insn, INSN_SIZE};

/// One program: an executable section of the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Program<'a> {
    /// The section name: the probe spec or title (`kprobe/vfs_read`, `socket`, ...).
    pub section_name: &'a str,
    /// Name of the function symbol at the start of the section, if any.
    pub name: Option<&'a str>,
    /// Section header index.
    pub section_index: u32,
    /// Byte offset of the program inside its section (several programs may share one).
    pub offset: u32,
    pub(crate) code: &'a [u8],
    pub(crate) little: bool,
    /// The REL section applying to this program, if any.
    pub(crate) rel_section: Option<u32>,
    pub(crate) reloc_count: u32,
    pub(crate) map_reloc_count: u32,
    /// Index of this program's first entry in its REL table.
    pub(crate) rel_first: u32,
    /// One past the index of its last entry (entries of other programs of the same
    /// section may sit in between when the table is not in offset order).
    pub(crate) rel_end: u32,
    /// Where its REL table's entries start in the object's relocation table (entry `j`
    /// of the REL table is entry `rel_base + j` there).
    pub(crate) rel_base: u32,
    /// Its code references in the relocation table: `ref_len` entries from `ref_first`.
    pub(crate) ref_first: u32,
    pub(crate) ref_len: u32,
    /// Whether a slot holds a bpf-to-bpf call (`src_reg = BPF_PSEUDO_CALL`), told at open
    /// for a function whose relocations are all map loads.
    pub(crate) calls: bool,
    /// The section's name in the ELF file: [`Program::section_name`], with a leading `?`
    /// for a section written `SEC("?NAME")` (libbpf's `autoload = false`).
    pub(crate) elf_name: &'a str,
}

impl<'a> Program<'a> {
    /// Number of instruction slots (`ld_imm64` counts two, as the kernel counts).
    #[must_use]
    pub fn insn_count(&self) -> usize {
        self.code.len() / INSN_SIZE
    }

    /// The instructions, decoded from the object in place.
    pub fn insns(&self) -> impl ExactSizeIterator<Item = Insn> + Clone + 'a {
        let little = self.little;
        self.code.chunks_exact(INSN_SIZE).map(move |c| {
            let mut b = [0u8; INSN_SIZE];
            b.copy_from_slice(c);
            Insn::from_bytes(b, little)
        })
    }

    /// Instruction `index`, or `None` past the end.
    #[must_use]
    pub fn insn(&self, index: usize) -> Option<Insn> {
        let start = index.checked_mul(INSN_SIZE)?;
        let bytes = self.code.get(start..start.checked_add(INSN_SIZE)?)?;
        let mut b = [0u8; INSN_SIZE];
        b.copy_from_slice(bytes);
        Some(Insn::from_bytes(b, self.little))
    }

    /// The raw instruction bytes as stored in the object.
    #[must_use]
    pub fn code(&self) -> &'a [u8] {
        self.code
    }

    /// Number of relocations applying to this program.
    #[must_use]
    pub fn reloc_count(&self) -> usize {
        self.reloc_count as usize
    }

    /// Number of those relocations that load a map.
    #[must_use]
    pub fn map_reloc_count(&self) -> usize {
        self.map_reloc_count as usize
    }

    /// Whether the program is loaded when none is chosen by name: `false` for a section
    /// written `SEC("?NAME")` (libbpf's `bpf_program__autoload`).
    #[must_use]
    #[doc(alias = "bpf_program__autoload")]
    pub fn autoload(&self) -> bool {
        self.elf_name.len() == self.section_name.len()
    }

    /// The section's name as the ELF file spells it (with the `?` of `SEC("?NAME")`):
    /// what `.BTF.ext` names the program's section by.
    #[must_use]
    pub fn elf_section_name(&self) -> &'a str {
        self.elf_name
    }

    /// Whether this is a `.text` function: a subprogram called by programs (bpf-to-bpf
    /// call), not a program of its own, as libbpf treats it.
    #[must_use]
    pub fn is_subprogram(&self) -> bool {
        self.section_name == ".text"
    }

    /// The section name parsed: a probe spec, or an opaque title.
    ///
    /// The object keeps only the name; it was validated at open, so this cannot fail for
    /// a program of an opened object, and it re-parses on each call (cheap, no alloc).
    #[must_use]
    pub fn section(&self) -> crate::probe::Section<'a> {
        crate::probe::parse(self.section_name)
            .unwrap_or(crate::probe::Section::Title(self.section_name))
    }
}
