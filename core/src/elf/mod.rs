//! Zero-copy ELF views: header, section headers and names, symbols, REL entries.
//!
//! ELF32 and ELF64, both byte orders: the byte order is carried as a value
//! ([`scroll::Endian`]), not a type. [`Elf::parse`] bound-checks every offset, size, count
//! and string index of the header and the section header table once; the views it hands
//! out ([`SymbolTable`], [`RelTable`], [`StrTab`]) check their own tables once when created,
//! so their accessors cannot fail afterwards.
//!
//! Files, each using only those listed before it: `record` (the class and fields of
//! fixed-size records), `header`, `section` (section headers, string tables), `file`
//! ([`Elf`]), `symbol`, `reloc` (with the [`Elf`] methods that hand their tables out), `note`
//! (the GNU build id), `find` (a definition by name, functions by glob: uprobe targets).

mod file;
mod find;
mod header;
mod note;
mod record;
mod reloc;
mod section;
mod symbol;

pub use file::Elf;
pub use find::{definition, functions_matching, glob_match, FunctionMatch};
pub use header::{Header, EM_BPF, EM_NONE, ET_DYN, ET_EXEC, ET_REL};
pub use note::{build_id_in_notes, NT_GNU_BUILD_ID, SHT_NOTE};
pub use record::Class;
pub use reloc::{Rel, RelTable};
pub use section::{
    SectionHeader, StrTab, SHF_ALLOC, SHF_COMPRESSED, SHF_EXECINSTR, SHF_WRITE, SHT_DYNSYM,
    SHT_NOBITS, SHT_NULL, SHT_PROGBITS, SHT_REL, SHT_RELA, SHT_STRTAB, SHT_SYMTAB,
};
pub use symbol::{
    Symbol, SymbolTable, STB_GLOBAL, STB_LOCAL, STB_WEAK, STT_FUNC, STT_NOTYPE, STT_OBJECT,
    STT_SECTION,
};
