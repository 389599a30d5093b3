//! The first half of the open phase: the ELF header, one pass over the section headers
//! (programs, `license`, `version`, the map and data sections, the symbol table, where the
//! REL tables of code lie) and one over the symbols (functions split sections into
//! programs, map symbols name the maps). Every read goes through the views of
//! [`crate::elf`], which hold each check once.

use super::maps::{MapDef, MapKind, MapLayout};
use super::parts::{ExecSection, Parts};
use super::programs::Program;
use crate::elf::{
    self, Elf, SectionHeader, SHF_EXECINSTR, SHT_NOBITS, SHT_PROGBITS, SHT_REL, SHT_SYMTAB,
};
use crate::error::{Error, Result};
use heapless::vec::VecView;

/// `Error::Capacity` for a table of `limit` entries.
pub(super) fn capacity(what: &'static str, limit: usize) -> Error {
    Error::Capacity {
        what,
        limit: u32::try_from(limit).unwrap_or(u32::MAX),
    }
}

/// The open phase up to the BTF: header, sections, symbols, legacy maps and programs.
/// `Parts` is written in place into `slot`, the caller's storage.
pub(super) fn fill<'a, 'p>(
    bytes: &'a [u8],
    slot: &'p mut Option<Parts<'a>>,
    programs: &mut VecView<Program<'a>>,
    maps: &mut VecView<MapDef<'a>>,
    execs: &mut VecView<ExecSection<'a>>,
) -> Result<&'p mut Parts<'a>> {
    // The seed's rule first: an object in the other byte order is refused as such, not
    // as the garbage its fields read as in ours.
    let object_little = match bytes.get(5) {
        Some(2) => Some(false),
        Some(1) => Some(true),
        _ => None,
    };
    if bytes.get(..4) == Some(b"\x7fELF".as_slice())
        && object_little.is_some_and(|l| l != cfg!(target_endian = "little"))
    {
        return Err(Error::ByteOrder {
            object_little: !cfg!(target_endian = "little"),
        });
    }
    // So is a 32-bit ELF file: BPF objects are ELF64, and an ELF32 one would otherwise
    // read as an object without programs.
    if bytes.get(..4) == Some(b"\x7fELF".as_slice()) && bytes.get(4) == Some(&1) {
        return Err(Error::BadHeader {
            what: "ELFCLASS32: a BPF object is ELF64 (EI_CLASS 2)",
            offset: 4,
            value: 1,
        });
    }
    let elf = Elf::parse_header(bytes)?;
    let h = *elf.header();
    if h.e_type != elf::ET_REL {
        return Err(Error::BadHeader {
            what: "e_type is not ET_REL (relocatable object)",
            offset: 16,
            value: h.e_type.into(),
        });
    }
    if h.machine != elf::EM_BPF && h.machine != elf::EM_NONE {
        return Err(Error::BadHeader {
            what: "e_machine is not EM_BPF (247) or EM_NONE",
            offset: 18,
            value: h.machine.into(),
        });
    }
    if h.is_little_endian() != cfg!(target_endian = "little") {
        return Err(Error::ByteOrder {
            object_little: h.is_little_endian(),
        });
    }
    let parts = slot.insert(Parts::new(elf));
    // Every section header is checked before anything found in one is refused: a bad
    // header is reported first, wherever it lies.
    let symtab =
        scan_sections(parts, execs).map_err(|e| elf.check_sections().err().unwrap_or(e))?;
    if let Some(index) = symtab {
        parts.symbols = Some(elf.symbol_table_names_unchecked(index)?);
    }
    collect_symbols(parts, execs, programs, maps)?;
    // Sections without function symbols (hand-written or stripped objects): one program each.
    let little = h.is_little_endian();
    for e in execs.iter().filter(|e| !e.has_funcs) {
        push_program(programs, little, e, None, 0, e.code)?;
    }
    sort_programs(programs);
    Ok(parts)
}

/// Sorts programs by section and offset, keeping the order of equal keys (an insertion
/// sort: they come nearly sorted, and `core` has no stable sort).
fn sort_programs(programs: &mut [Program<'_>]) {
    let key = |p: &Program<'_>| (p.section_index, p.offset);
    for i in 1..programs.len() {
        let Some(k) = programs.get(i).map(key) else {
            break;
        };
        if programs.get(i - 1).is_some_and(|p| key(p) <= k) {
            continue; // in place already
        }
        // Where program `i` belongs among the sorted `..i`: after every key not above it.
        let to = programs
            .get(..i)
            .map_or(i, |done| done.partition_point(|p| key(p) <= k));
        if let Some(moved) = programs.get_mut(to..=i) {
            moved.rotate_right(1);
        }
    }
}

/// One pass over the section headers, each checked as it is read (a header that fails
/// is the error; the caller checks the rest when another is): notes the executable
/// sections in `execs` (their names checked as probe specs), `license`, `version`, the map,
/// BTF and data sections and where the REL tables of code lie. Returns the symbol table.
fn scan_sections<'a>(
    parts: &mut Parts<'a>,
    execs: &mut VecView<ExecSection<'a>>,
) -> Result<Option<u32>> {
    let elf = parts.elf;
    let names = *elf.shstrtab();
    let mut symtab = None;
    for (index, sh) in elf.sections() {
        elf.check_section(index, &sh)?;
        match sh.sh_type {
            // A program section when its size is a non-zero multiple of 8; an empty one
            // (a `.text` without functions) holds nothing; any other size cannot be code.
            SHT_PROGBITS if sh.is_exec() && sh.size != 0 && sh.size % 8 == 0 => {
                exec_section(&elf, execs, index, &sh)?;
            }
            SHT_PROGBITS if sh.is_exec() && sh.size == 0 => {}
            SHT_PROGBITS if sh.is_exec() => {
                return Err(Error::BadSection {
                    section: elf.section_ref(index),
                    what: "program section size is not a multiple of 8 (one instruction)",
                });
            }
            SHT_NOBITS if sh.flags & SHF_EXECINSTR != 0 && sh.size != 0 => {
                return Err(Error::BadSection {
                    section: elf.section_ref(index),
                    what: "program section has no contents in the file (SHT_NOBITS)",
                });
            }
            SHT_PROGBITS => named_section(parts, names.tail(sh.name), index, &sh)?,
            // Only tables of executable sections are ours (the symbol pass finds whether
            // the section holds a program); one that names no section is broken.
            SHT_REL => match elf.section(sh.info) {
                Some(t) if t.is_exec() => {
                    parts.rel_lo = parts.rel_lo.min(index);
                    parts.rel_hi = index + 1;
                }
                Some(_) => {}
                None => {
                    return Err(Error::BadSection {
                        section: elf.section_ref(index),
                        what: "REL table's sh_info names no section",
                    });
                }
            },
            SHT_SYMTAB => {
                if symtab.is_some() {
                    return Err(Error::BadSection {
                        section: elf.section_ref(index),
                        what: "more than one symbol table",
                    });
                }
                symtab = Some(index);
            }
            SHT_NOBITS if names.tail(sh.name).starts_with(b".bss") => {
                parts.data_lo = parts.data_lo.min(index);
                parts.data_hi = index + 1;
            }
            _ => {}
        }
    }
    Ok(symtab)
}

/// A program section (an executable section whose size is a non-zero multiple of 8): its
/// name checked as a probe spec.
fn exec_section<'a>(
    elf: &Elf<'a>,
    execs: &mut VecView<ExecSection<'a>>,
    index: u32,
    sh: &SectionHeader,
) -> Result<()> {
    let at = || elf.section_ref(index);
    let name = match elf.shstrtab().get(sh.name) {
        Some(name) => name,
        None if elf.shstrtab().is_empty() => "",
        None => {
            return Err(Error::BadSection {
                section: at(),
                what: "program section name is not valid UTF-8",
            })
        }
    };
    // libbpf's `SEC("?NAME")`: a program that is not loaded unless chosen; the `?` is no
    // part of its spec.
    let elf_name = name;
    let name = name.strip_prefix('?').unwrap_or(name);
    if name != ".text" {
        crate::probe::validate(name).map_err(|error| Error::Probe {
            section: at(),
            error,
        })?;
    }
    let exec = ExecSection {
        index,
        name,
        code: elf.section_data(sh),
        has_funcs: false,
        elf_name,
    };
    let cap = execs.capacity();
    execs.push(exec).map_err(|_| capacity("programs", cap))
}

/// A data section whose name (`t`: the name table from it on) may be one the open phase
/// reads: `license`, `version`, `maps`, `.maps`, `.BTF`, `.BTF.ext`, `.rodata*`, `.data*`.
fn named_section(parts: &mut Parts<'_>, t: &[u8], index: u32, sh: &SectionHeader) -> Result<()> {
    // Told apart on the first bytes: most names (`.debug_*`, `.rel*`, `.llvm_addrsig`) are
    // none of these.
    match (t.first(), t.get(1)) {
        (Some(b'l'), _) if t.starts_with(b"license\0") => license_section(parts, index, sh)?,
        (Some(b'v'), _) if t.starts_with(b"version\0") => version_section(parts, index, sh)?,
        (Some(b'm'), _) if t.starts_with(b"maps\0") => parts.maps_section = Some(index),
        (Some(b'.'), Some(b'm')) if t.starts_with(b".maps\0") => {
            parts.btf_maps_section = Some(index);
        }
        (Some(b'.'), Some(b'B')) if t.starts_with(b".BTF\0") => parts.btf_section = Some(index),
        (Some(b'.'), Some(b'B')) if t.starts_with(b".BTF.ext\0") => {
            parts.btf_ext_section = Some(index);
        }
        (Some(b'.'), Some(b'r' | b'd')) if t.starts_with(b".rodata") || t.starts_with(b".data") => {
            parts.data_lo = parts.data_lo.min(index);
            parts.data_hi = index + 1;
        }
        _ => {}
    }
    Ok(())
}

/// The `license` section: a NUL-terminated UTF-8 string.
fn license_section(parts: &mut Parts<'_>, index: u32, sh: &SectionHeader) -> Result<()> {
    let elf = parts.elf;
    let at = || elf.section_ref(index);
    let data = elf.section_data(sh);
    let len = data
        .iter()
        .position(|&b| b == 0)
        .ok_or_else(|| Error::BadSection {
            section: at(),
            what: "license is not NUL-terminated",
        })?;
    let text = data.get(..len).and_then(|t| core::str::from_utf8(t).ok());
    parts.license = Some(text.ok_or_else(|| Error::BadSection {
        section: at(),
        what: "license is not valid UTF-8",
    })?);
    Ok(())
}

/// The `version` section: exactly 4 bytes.
fn version_section(parts: &mut Parts<'_>, index: u32, sh: &SectionHeader) -> Result<()> {
    let elf = parts.elf;
    let data: [u8; 4] = elf
        .section_data(sh)
        .try_into()
        .map_err(|_| Error::BadSection {
            section: elf.section_ref(index),
            what: "version must be exactly 4 bytes (a u32 LINUX_VERSION_CODE)",
        })?;
    parts.version = Some(u32::from_ne_bytes(data));
    Ok(())
}

/// Appends a program: `code` of the section `e` from byte `offset` on.
pub(super) fn push_program<'a>(
    programs: &mut VecView<Program<'a>>,
    little: bool,
    e: &ExecSection<'a>,
    name: Option<&'a str>,
    offset: u32,
    code: &'a [u8],
) -> Result<()> {
    let program = Program {
        section_name: e.name,
        name,
        section_index: e.index,
        offset,
        code,
        little,
        rel_section: None,
        reloc_count: 0,
        map_reloc_count: 0,
        rel_first: 0,
        rel_end: 0,
        rel_base: 0,
        ref_first: 0,
        ref_len: 0,
        calls: false,
        elf_name: e.elf_name,
    };
    let cap = programs.capacity();
    programs
        .push(program)
        .map_err(|_| capacity("programs", cap))
}

/// Splits executable sections into programs at their function symbols and collects the
/// map symbols, in one pass over the symbols that also checks every symbol's name index;
/// then reads the legacy map definitions.
fn collect_symbols<'a>(
    parts: &mut Parts<'a>,
    execs: &mut [ExecSection<'a>],
    programs: &mut VecView<Program<'a>>,
    maps: &mut VecView<MapDef<'a>>,
) -> Result<()> {
    let elf = parts.elf;
    let Some(symbols) = parts.symbols else {
        if let Some(index) = parts.maps_section {
            let size = elf.section(index).map_or(0, |sh| sh.size);
            if size > 0 {
                return Err(Error::BadSection {
                    section: elf.section_ref(index),
                    what: "maps section without a symbol table to name the maps",
                });
            }
        }
        return Ok(());
    };
    let little = elf.header().is_little_endian();
    let name_limit = (symbols.strtab().len() as u64).max(1);
    let (mut btf_maps, mut externs) = (0u32, 0u32);
    let map_cap = maps.capacity();
    for (i, sym) in symbols.iter() {
        let bad = |what| Error::BadSymbol { index: i, what };
        if u64::from(sym.name) >= name_limit && sym.name != 0 {
            return Err(bad("name index outside the string table"));
        }
        let kind = sym.kind();
        if kind == elf::STT_SECTION {
            continue;
        }
        let shndx = u32::from(sym.shndx);
        if shndx == 0 {
            // An undefined global: an `extern` (Kconfig variable, ksym, kfunc).
            externs += u32::from(sym.name != 0 && sym.bind() != elf::STB_LOCAL);
            continue;
        }
        let is_btf_map = Some(shndx) == parts.btf_maps_section;
        if Some(shndx) == parts.maps_section || is_btf_map {
            let name = symbols
                .name(&sym)
                .ok_or_else(|| bad("map name is not valid UTF-8"))?;
            if name.is_empty() {
                continue;
            }
            let offset =
                u32::try_from(sym.value).map_err(|_| bad("map symbol offset too large"))?;
            // Fields are read once every symbol is known and the layout can be computed.
            let mut m = MapDef::placeholder(name, offset);
            if is_btf_map {
                m.kind = MapKind::Btf;
                btf_maps += 1;
            }
            maps.push(m).map_err(|_| capacity("maps", map_cap))?;
            continue;
        }
        if kind != elf::STT_FUNC {
            continue;
        }
        let Ok(x) = execs.binary_search_by_key(&shndx, |e| e.index) else {
            continue;
        };
        let Some(e) = execs.get_mut(x) else { continue };
        let name = symbols
            .name(&sym)
            .ok_or_else(|| bad("function name is not valid UTF-8"))?;
        // In u64, so that every target reports the same error for the same symbol (a
        // 32-bit `usize` would refuse a large offset before the checks below).
        let end = sym
            .value
            .checked_add(sym.size)
            .ok_or_else(|| bad("function size too large"))?;
        if sym.value % 8 != 0 || sym.size % 8 != 0 {
            return Err(bad("function is not aligned to whole instructions"));
        }
        let past_end = || bad("function extends past the end of its section");
        let start = usize::try_from(sym.value).map_err(|_| past_end())?;
        let end = usize::try_from(end).map_err(|_| past_end())?;
        let code = e.code.get(start..end).ok_or_else(past_end)?;
        if code.is_empty() {
            continue;
        }
        e.has_funcs = true;
        let e = *e;
        push_program(programs, little, &e, Some(name), start as u32, code)?;
    }
    if btf_maps > 0 && maps.len() as u32 != btf_maps {
        // Legacy maps first (by offset, as read_map_defs wants them), then the BTF ones.
        maps.sort_unstable_by_key(|m| (m.kind != MapKind::Legacy, m.offset));
    }
    let legacy = maps.len() - btf_maps as usize;
    if let (Some(section), Some(legacy)) = (parts.maps_section, maps.get_mut(..legacy)) {
        read_map_defs(parts, legacy, section)?;
    }
    parts.map_count = legacy as u32;
    parts.btf_map_symbols = btf_maps;
    parts.externs = externs;
    Ok(())
}

/// Reads the legacy map definitions: the section holds one per map symbol, all of one
/// known size, one after the other.
fn read_map_defs(parts: &mut Parts<'_>, maps: &mut [MapDef<'_>], section: u32) -> Result<()> {
    let elf = parts.elf;
    if maps.is_empty() {
        return Ok(());
    }
    let at = elf.section_ref(section);
    let sh = elf.section(section).unwrap_or_default();
    let data = elf.section_data(&sh);
    maps.sort_unstable_by_key(|m| m.offset);
    let count = maps.len() as u64;
    let def_size = sh.size / count;
    let bad = Error::BadMapDef {
        section: at,
        def_size,
        maps: count as u32,
    };
    if sh.size % count != 0 {
        return Err(bad);
    }
    let layout = MapLayout::from_size(def_size).ok_or(bad)?;
    let endian = elf.endian();
    for (i, m) in maps.iter_mut().enumerate() {
        if u64::from(m.offset) != i as u64 * def_size {
            return Err(Error::BadSection {
                section: at,
                what: "map symbols do not point at consecutive definitions",
            });
        }
        *m = MapDef::read(m.name, data, m.offset, layout, endian, at)?;
    }
    parts.map_def_size = def_size as u32;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::{push_program, sort_programs, ExecSection, Program};
    use heapless::Vec;

    #[test]
    fn programs_sort_stably_by_section_and_offset() {
        // Keys from a small generator: sorted runs with a few out of place, and shuffles;
        // names tell equal keys apart.
        let names = ["a", "b", "c", "d", "e", "f", "g", "h"];
        let mut seed = 7u64;
        for round in 0..200 {
            let mut programs: Vec<Program<'_>, 64> = Vec::new();
            let n = round % 40;
            for i in 0..n {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                let r = (seed >> 33) as u32;
                let (section, offset) = if round % 2 == 0 && r % 5 != 0 {
                    (2 + i as u32 / 4, (i as u32 % 4) * 8)
                } else {
                    (r % 6, (r >> 8) % 5 * 8)
                };
                let e = ExecSection {
                    index: section,
                    name: "s",
                    code: &[],
                    has_funcs: true,
                    elf_name: "s",
                };
                let name = names[i % names.len()];
                push_program(programs.as_mut_view(), true, &e, Some(name), offset, &[]).unwrap();
            }
            let key = |p: &Program<'static>| (p.section_index, p.offset, p.name);
            let mut expected: std::vec::Vec<_> = programs.iter().map(key).collect();
            // A stable sort by (section, offset) alone.
            expected.sort_by_key(|&(s, o, _)| (s, o));
            sort_programs(&mut programs);
            let got: std::vec::Vec<_> = programs.iter().map(key).collect();
            assert_eq!(got, expected, "round {round}");
        }
    }
}
