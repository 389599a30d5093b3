//! What the open phase found besides the program and map tables, and the lookup every
//! relocation makes: which map (if any) a symbol of a section loads.

use super::maps::MapDef;
use crate::elf::{Elf, SymbolTable};

/// What the object knows besides its two tables, written in place by the open phase.
#[derive(Clone, Copy, Debug)]
pub(super) struct Parts<'a> {
    pub(super) elf: Elf<'a>,
    pub(super) symbols: Option<SymbolTable<'a>>,
    pub(super) license: Option<&'a str>,
    pub(super) version: Option<u32>,
    /// The legacy `maps` section.
    pub(super) maps_section: Option<u32>,
    /// Size of one legacy map definition (0: none).
    pub(super) map_def_size: u32,
    /// Number of legacy maps (the first entries of the map table).
    pub(super) map_count: u32,
    /// The BTF-defined maps' `.maps` section.
    pub(super) btf_maps_section: Option<u32>,
    /// Number of symbols in `.maps` (BTF-defined maps).
    pub(super) btf_map_symbols: u32,
    /// `.BTF` and `.BTF.ext`.
    pub(super) btf_section: Option<u32>,
    pub(super) btf_ext_section: Option<u32>,
    /// Global data sections lie in `data_lo..data_hi`; their maps start at `first_data_map`
    /// (the BTF-defined maps lie in `map_count..first_data_map`).
    pub(super) data_lo: u32,
    pub(super) data_hi: u32,
    pub(super) first_data_map: u32,
    /// Undefined global symbols (`extern`).
    pub(super) externs: u32,
    /// The `.kconfig` map's index.
    pub(super) kconfig_map: Option<u32>,
    /// The REL tables of executable sections lie in `rel_lo..rel_hi`.
    pub(super) rel_lo: u32,
    pub(super) rel_hi: u32,
}

impl<'a> Parts<'a> {
    /// Nothing found yet in `elf`.
    pub(super) fn new(elf: Elf<'a>) -> Self {
        Parts {
            elf,
            symbols: None,
            license: None,
            version: None,
            maps_section: None,
            map_def_size: 0,
            map_count: 0,
            btf_maps_section: None,
            btf_map_symbols: 0,
            btf_section: None,
            btf_ext_section: None,
            data_lo: u32::MAX,
            data_hi: 0,
            first_data_map: 0,
            externs: 0,
            kconfig_map: None,
            rel_lo: u32::MAX,
            rel_hi: 0,
        }
    }
}

/// An executable section seen during the section pass.
#[derive(Clone, Copy, Debug)]
pub(super) struct ExecSection<'a> {
    pub(super) index: u32,
    pub(super) name: &'a str,
    pub(super) code: &'a [u8],
    pub(super) has_funcs: bool,
    /// The section's name in the ELF file: `name`, or `?` and `name` for a section written
    /// `SEC("?NAME")` (not loaded unless chosen: libbpf's `autoload = false`).
    pub(super) elf_name: &'a str,
}

/// What a relocation against a symbol of a section loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MapTarget {
    /// Not a map (code, extern, another section).
    None,
    /// A map's fd (`BPF_PSEUDO_MAP_FD`): legacy or BTF-defined map.
    Map(u32),
    /// An address inside a global data map's value (`BPF_PSEUDO_MAP_VALUE`).
    Value(u32),
    /// A map section, but no map there.
    Bad(&'static str),
}

impl Parts<'_> {
    /// What a relocation against a symbol of section `shndx` whose value is `value` loads.
    #[inline]
    pub(super) fn map_target(&self, maps: &[MapDef<'_>], shndx: u32, value: u64) -> MapTarget {
        if shndx == 0 {
            return MapTarget::None;
        }
        if Some(shndx) == self.maps_section {
            return match self.map_index_at(value) {
                Some(m) => MapTarget::Map(m),
                None => MapTarget::Bad("map index out of range"),
            };
        }
        if Some(shndx) == self.btf_maps_section {
            let lo = self.map_count as usize;
            let btf_maps = maps.get(lo..self.first_data_map as usize);
            return match btf_maps.and_then(|m| m.iter().position(|m| u64::from(m.offset) == value))
            {
                Some(i) => MapTarget::Map((lo + i) as u32),
                None => MapTarget::Bad("no BTF-defined map at this offset of .maps"),
            };
        }
        if shndx >= self.data_lo && shndx < self.data_hi {
            let lo = self.first_data_map as usize;
            let found = maps.get(lo..).and_then(|m| {
                m.iter()
                    .position(|m| m.section == shndx && m.kind.is_internal())
            });
            if let Some(i) = found {
                return MapTarget::Value((lo + i) as u32);
            }
        }
        MapTarget::None
    }

    /// The index of the legacy map whose definition starts at `offset` of `maps`.
    fn map_index_at(&self, offset: u64) -> Option<u32> {
        let size = u64::from(self.map_def_size);
        if size == 0 || offset % size != 0 {
            return None;
        }
        let idx = offset / size;
        (idx < u64::from(self.map_count)).then_some(idx as u32)
    }
}
