//! Symbols of an executable or shared library found by name or by glob: where a
//! `uprobe/PATH:FUNC` goes ([`definition`]) and the functions of a
//! `uprobe.multi/PATH:PATTERN` ([`functions_matching`]), as libbpf finds them (`elf.c`).

use super::file::Elf;
use super::section::{SHT_DYNSYM, SHT_SYMTAB};
use super::symbol::{Symbol, SymbolTable, STB_LOCAL, STT_FUNC, STT_NOTYPE, STT_OBJECT};

/// First section number of the reserved range (`SHN_LORESERVE`): `SHN_ABS`, `SHN_COMMON` ...
const SHN_LORESERVE: u16 = 0xff00;
/// `SHN_XINDEX`: the section index is elsewhere (a real section).
const SHN_XINDEX: u16 = 0xffff;

/// Whether `s` lies in a real section: not undefined, absolute or common.
fn in_section(s: &Symbol) -> bool {
    s.shndx != 0 && (s.shndx < SHN_LORESERVE || s.shndx == SHN_XINDEX)
}

/// The symbol tables of type `sh_type` (`.symtab` or `.dynsym`) that validate.
fn tables<'e, 'a>(elf: &'e Elf<'a>, sh_type: u32) -> impl Iterator<Item = SymbolTable<'a>> + 'e {
    elf.sections()
        .filter(move |(_, sh)| sh.sh_type == sh_type)
        .filter_map(move |(index, _)| match sh_type {
            SHT_DYNSYM => elf.dynamic_symbol_table(index).ok(),
            _ => elf.symbol_table(index).ok(),
        })
}

/// Address and size of the definition of `name`, `.symtab` first, then `.dynsym`
/// (stripped binaries, shared libraries): in each, the first `STT_FUNC` if there is one,
/// else the last other definition (an object, or an untyped symbol that is no `$` mapping
/// symbol). Undefined, absolute and common symbols are no definition, nor are
/// `STT_GNU_IFUNC` resolvers.
#[must_use]
pub fn definition(elf: &Elf<'_>, name: &str) -> Option<(u64, u64)> {
    definition_in(elf, SHT_SYMTAB, name).or_else(|| definition_in(elf, SHT_DYNSYM, name))
}

fn definition_in(elf: &Elf<'_>, sh_type: u32, name: &str) -> Option<(u64, u64)> {
    let mut best = None;
    for table in tables(elf, sh_type) {
        for (_, s) in table.iter() {
            if table.name(&s) != Some(name) || !in_section(&s) {
                continue;
            }
            let defines = match s.kind() {
                // Local untyped symbols starting with `$` are mapping symbols.
                STT_NOTYPE if s.bind() == STB_LOCAL => !name.starts_with('$'),
                STT_FUNC | STT_OBJECT | STT_NOTYPE => true,
                _ => false,
            };
            if !defines {
                continue;
            }
            best = Some((s.value, s.size));
            if s.kind() == STT_FUNC {
                return best;
            }
        }
    }
    best
}

/// Whether `name` matches the glob `pattern`: `*` any run of bytes (also none), `?` any
/// one byte, every other byte itself (libbpf's `glob_match`, without its backtracking
/// blow-up: linear in `name` for each `*`).
#[must_use]
pub fn glob_match(name: &[u8], pattern: &[u8]) -> bool {
    let (mut n, mut p) = (0usize, 0usize);
    // Where the last `*` was and the name position it is retried from.
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(&c) if c == b'?' || Some(&c) == name.get(n) => {
                n += 1;
                p += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern
        .get(p..)
        .unwrap_or_default()
        .iter()
        .all(|&c| c == b'*')
}

/// A function symbol a pattern matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionMatch<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its link-time address (`st_value`).
    pub address: u64,
    /// Where the address lies in the file ([`Elf::file_offset`]): what a uprobe wants;
    /// `None` when no loaded section holds it.
    pub file_offset: Option<u64>,
}

/// The defined `STT_FUNC` symbols whose names match the glob `pattern` ([`glob_match`]),
/// in table order: those of `.symtab`, or, when no symbol of `.symtab` matches (a stripped
/// binary), those of `.dynsym` — never both, so a function is not listed twice (libbpf's
/// `elf_resolve_pattern_offsets`). Undefined symbols (a library's functions a binary
/// imports) are left out.
pub fn functions_matching<'e, 'a>(
    elf: &'e Elf<'a>,
    pattern: &'e str,
) -> impl Iterator<Item = FunctionMatch<'a>> + 'e {
    let in_symtab = matches_in(elf, SHT_SYMTAB, pattern).next().is_some();
    let sh_type = if in_symtab { SHT_SYMTAB } else { SHT_DYNSYM };
    matches_in(elf, sh_type, pattern)
}

fn matches_in<'e, 'a>(
    elf: &'e Elf<'a>,
    sh_type: u32,
    pattern: &'e str,
) -> impl Iterator<Item = FunctionMatch<'a>> + 'e {
    tables(elf, sh_type).flat_map(move |table| {
        (0..table.len()).filter_map(move |i| {
            let s = table.get(i)?;
            if s.kind() != STT_FUNC || !in_section(&s) {
                return None;
            }
            let name = table.name(&s)?;
            glob_match(name.as_bytes(), pattern.as_bytes()).then(|| FunctionMatch {
                name,
                address: s.value,
                file_offset: elf.file_offset(s.value),
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs_as_libbpf_matches_them() {
        let yes: &[(&str, &str)] = &[
            ("um_hit_a", "um_hit_*"),
            ("um_hit_", "um_hit_*"),
            ("um_hit_a", "um_hit_?"),
            ("anything", "*"),
            ("", "*"),
            ("", ""),
            ("abc", "a*c"),
            ("abcbc", "a*bc"),
            ("aXbYc", "a*b*c"),
            ("malloc", "*alloc"),
            ("x.cold", "*.cold"),
            ("aaaaaaaaaaaaaaaaaaaab", "a*a*a*a*a*a*a*a*b"),
            ("__x64_sys_getpgid", "*getpgid"),
            ("vfs_readv", "vfs_read*"),
            ("vfs_read", "v?s_*d"),
            ("xxaxxbxx", "*a*b*"),
            ("ab", "a**b"),
        ];
        for (n, p) in yes {
            assert!(glob_match(n.as_bytes(), p.as_bytes()), "{n} ~ {p}");
        }
        let no: &[(&str, &str)] = &[
            ("um_miss", "um_hit_*"),
            ("um_hit", "um_hit_?"),
            ("um_hit_ab", "um_hit_?"),
            ("abc", "a*d"),
            ("abc", ""),
            ("", "?"),
            ("aaaaaaaaaaaaaaaaaaaaa", "a*a*a*a*a*a*a*a*b"),
            ("getpgid_x", "*getpgid"),
            ("vs_read", "v?s_*d"),
            ("xxbxxaxx", "*a*b*"),
            ("a", ""),
        ];
        for (n, p) in no {
            assert!(!glob_match(n.as_bytes(), p.as_bytes()), "{n} !~ {p}");
        }
    }
}
