//! Legacy `maps` section: `struct bpf_map_def` records found through the symbols that
//! point into the section.
//!
//! The per-map size is the section size divided by the number of map symbols, as the
//! seed computed it; each known layout reports the fields it has:
//!
//! | bytes | layout | fields after `type, key_size, value_size, max_entries` |
//! |---|---|---|
//! | 16 | 2015 `bpf_map_def` (the seed) | — |
//! | 20 | + flags | `map_flags` |
//! | 24 | samples/bpf `bpf_map_def` | `map_flags, inner_map_idx` |
//! | 28 | iproute2 `bpf_elf_map` (tc) | `map_flags, id, pinning` |
//! | 36 | iproute2 `bpf_elf_map` with map-in-map | `map_flags, id, pinning, inner_id, inner_idx` |
//!
//! 28 bytes is also samples/bpf's `{..., inner_map_idx, numa_node}`; iproute2's meaning is
//! the one reported (tc objects are where 28-byte maps are still found), and the raw
//! words stay available through [`MapDef::words`].

use crate::btf::InnerMapDef;
use crate::error::{Error, Result, SectionRef};
use crate::perf::abi::BPF_OBJ_NAME_LEN;
use scroll::{Endian, Pread};

/// `BPF_F_RDONLY_PROG`: programs may only read the map (`.rodata`, `.kconfig`).
pub const BPF_F_RDONLY_PROG: u32 = 1 << 7;
/// `BPF_F_MMAPABLE`: the array can be `mmap`ed (global data maps).
pub const BPF_F_MMAPABLE: u32 = 1 << 10;
/// `BPF_MAP_TYPE_ARRAY`, the type of every global data map.
const MAP_TYPE_ARRAY: u32 = 2;

/// Where a map definition comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MapKind {
    /// A `struct bpf_map_def` of the legacy `maps` section.
    Legacy,
    /// A BTF-defined map: a variable of the `.maps` section described by `.BTF`.
    Btf,
    /// `.rodata*`: a one-element array, frozen after its initial value is written.
    #[doc(alias = "LIBBPF_MAP_RODATA")]
    Rodata,
    /// `.data*`: a one-element array holding the section's initial value.
    #[doc(alias = "LIBBPF_MAP_DATA")]
    Data,
    /// `.bss*`: a one-element array, zeroed.
    #[doc(alias = "LIBBPF_MAP_BSS")]
    Bss,
    /// `.kconfig`: the values of the object's `extern` Kconfig variables, filled by the
    /// loader from the running kernel's configuration.
    #[doc(alias = "LIBBPF_MAP_KCONFIG")]
    Kconfig,
}

impl MapKind {
    /// Whether the map holds global data (one array element, named after its section).
    #[must_use]
    pub fn is_internal(self) -> bool {
        matches!(
            self,
            MapKind::Rodata | MapKind::Data | MapKind::Bss | MapKind::Kconfig
        )
    }
}

/// Which `bpf_map_def` layout a legacy `maps` section uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MapLayout {
    /// 16 bytes: the 2015 seed's `{type, key_size, value_size, max_entries}`.
    Seed16,
    /// 20 bytes: + `map_flags`.
    Flags20,
    /// 24 bytes: + `map_flags, inner_map_idx` (samples/bpf).
    Inner24,
    /// 28 bytes: iproute2's `bpf_elf_map` + `flags, id, pinning`.
    Iproute28,
    /// 36 bytes: iproute2's `bpf_elf_map` + `flags, id, pinning, inner_id, inner_idx`.
    Iproute36,
}

impl MapLayout {
    /// The layout of a definition of `size` bytes, if it is a known one.
    #[must_use]
    pub fn from_size(size: u64) -> Option<Self> {
        Some(match size {
            16 => MapLayout::Seed16,
            20 => MapLayout::Flags20,
            24 => MapLayout::Inner24,
            28 => MapLayout::Iproute28,
            36 => MapLayout::Iproute36,
            _ => return None,
        })
    }

    /// Size of one definition in bytes.
    #[must_use]
    pub fn size(self) -> usize {
        match self {
            MapLayout::Seed16 => 16,
            MapLayout::Flags20 => 20,
            MapLayout::Inner24 => 24,
            MapLayout::Iproute28 => 28,
            MapLayout::Iproute36 => 36,
        }
    }
}

/// Most 32-bit words any known layout has.
pub const MAX_MAP_WORDS: usize = 9;

/// One map definition of the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MapDef<'a> {
    /// Name, from the symbol that points at the definition.
    pub name: &'a str,
    /// `BPF_MAP_TYPE_*` value (kept as a number: unknown types are values, not errors).
    pub map_type: u32,
    /// Key size in bytes.
    pub key_size: u32,
    /// Value size in bytes.
    pub value_size: u32,
    /// Maximum number of entries.
    pub max_entries: u32,
    /// `map_flags`, when the layout has it.
    pub map_flags: Option<u32>,
    /// Index of the inner map's definition for map-in-map (samples/bpf 24-byte layout).
    pub inner_map_idx: Option<u32>,
    /// iproute2 `id`.
    pub id: Option<u32>,
    /// iproute2 `pinning` (0 none, 1 object namespace, 2 global).
    pub pinning: Option<u32>,
    /// iproute2 `inner_id`.
    pub inner_id: Option<u32>,
    /// iproute2 `inner_idx`.
    pub inner_idx: Option<u32>,
    /// Layout the definition was read with.
    pub layout: MapLayout,
    /// Offset of the definition in the `maps` section (legacy), of the variable in `.maps`
    /// (BTF); 0 for global data.
    pub offset: u32,
    /// Where the definition comes from.
    pub kind: MapKind,
    /// Section header index of the `maps`, `.maps` or data section (0 for `.kconfig`).
    pub section: u32,
    /// `numa_node` (BTF maps; 0 otherwise).
    pub numa_node: u32,
    /// `map_extra` (BTF maps; 0 otherwise).
    pub map_extra: u64,
    /// BTF type id of the key (`__type(key, T)`), 0 when unknown.
    pub btf_key_type_id: u32,
    /// BTF type id of the value (`__type(value, T)`), 0 when unknown. Global data maps
    /// take their section's DATASEC, which the loader finds by name.
    pub btf_value_type_id: u32,
    /// The inner map of a BTF-defined map-in-map (`__array(values, struct { ... })`).
    pub inner: Option<InnerMapDef>,
    /// Initial value of a global data map (`.rodata`, `.data`: the section's bytes; empty
    /// for `.bss` and `.kconfig`, which start zeroed).
    pub initial: &'a [u8],
    words: [u32; MAX_MAP_WORDS],
}

impl<'a> MapDef<'a> {
    /// Reads a definition of `layout` at `offset` of the section's bytes.
    pub(crate) fn read(
        name: &'a str,
        data: &[u8],
        offset: u32,
        layout: MapLayout,
        endian: Endian,
        section: SectionRef,
    ) -> Result<Self> {
        let mut words = [0u32; MAX_MAP_WORDS];
        let n = layout.size() / 4;
        for (i, w) in words.iter_mut().take(n).enumerate() {
            let at = offset as usize + i * 4;
            *w = data
                .pread_with::<u32>(at, endian)
                .map_err(|_| Error::BadSection {
                    section,
                    what: "map definition past the end of the maps section",
                })?;
        }
        let has = |i: usize| (i < n).then(|| words.get(i).copied().unwrap_or(0));
        let iproute = matches!(layout, MapLayout::Iproute28 | MapLayout::Iproute36);
        Ok(MapDef {
            name,
            map_type: words[0],
            key_size: words[1],
            value_size: words[2],
            max_entries: words[3],
            map_flags: has(4),
            inner_map_idx: if iproute { None } else { has(5) },
            id: if iproute { has(5) } else { None },
            pinning: if iproute { has(6) } else { None },
            inner_id: if iproute { has(7) } else { None },
            inner_idx: if iproute { has(8) } else { None },
            layout,
            offset,
            kind: MapKind::Legacy,
            section: section.index,
            numa_node: 0,
            map_extra: 0,
            btf_key_type_id: 0,
            btf_value_type_id: 0,
            inner: None,
            initial: &[],
            words,
        })
    }

    /// The name the map gets in the kernel (at most 15 bytes, NUL-padded), as libbpf
    /// names it: the map's own name for legacy and BTF maps; for global data
    /// `<object>.rodata` (the object name cut at its first `.`, shortened so the section
    /// name fits), or the section name alone when it has a second dot (`.rodata.str1.1`).
    /// Bytes the kernel refuses become `_`.
    #[must_use]
    #[doc(alias = "internal_map_name")]
    pub fn kernel_name(&self, object_name: &str) -> [u8; BPF_OBJ_NAME_LEN] {
        if !self.kind.is_internal() {
            return crate::perf::abi::object_name(self.name);
        }
        let obj = object_name.split('.').next().unwrap_or("");
        let real = self.name.as_bytes();
        let sfx_len = real.len().clamp(7, BPF_OBJ_NAME_LEN - 1);
        let custom = real.get(1..).is_some_and(|r| r.contains(&b'.'));
        let pfx_len = if custom {
            0
        } else {
            (BPF_OBJ_NAME_LEN - sfx_len - 1).min(obj.len())
        };
        let mut out = [0u8; BPF_OBJ_NAME_LEN];
        let name = obj
            .as_bytes()
            .iter()
            .take(pfx_len)
            .chain(real.iter().take(sfx_len));
        for (dst, &b) in out.iter_mut().take(BPF_OBJ_NAME_LEN - 1).zip(name) {
            *dst = if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' {
                b
            } else {
                b'_'
            };
        }
        out
    }

    /// A BTF-defined map named `name` (its ELF symbol) at `offset` of `.maps` (section
    /// `section`).
    pub(crate) fn from_btf(
        name: &'a str,
        offset: u32,
        section: u32,
        d: &crate::btf::maps::RawMapDef,
    ) -> Self {
        let a = &d.attrs;
        MapDef {
            name,
            map_type: a.map_type,
            key_size: a.key_size,
            value_size: a.value_size,
            max_entries: a.max_entries,
            map_flags: Some(a.map_flags),
            inner_map_idx: None,
            id: None,
            pinning: Some(a.pinning),
            inner_id: None,
            inner_idx: None,
            layout: MapLayout::Seed16,
            offset,
            kind: MapKind::Btf,
            section,
            numa_node: a.numa_node,
            map_extra: a.map_extra,
            btf_key_type_id: a.key_type_id,
            btf_value_type_id: a.value_type_id,
            inner: d.inner,
            initial: &[],
            words: [0; MAX_MAP_WORDS],
        }
    }

    /// A global data map for section `section` named `name` (`.rodata`, `.data.foo`,
    /// `.bss` ...) of `size` bytes, initialised with `initial` (empty for `.bss`), or the
    /// `.kconfig` map.
    pub(crate) fn internal(
        name: &'a str,
        kind: MapKind,
        section: u32,
        size: u32,
        initial: &'a [u8],
    ) -> Self {
        let read_only = matches!(kind, MapKind::Rodata | MapKind::Kconfig);
        MapDef {
            name,
            map_type: MAP_TYPE_ARRAY,
            key_size: 4,
            value_size: size,
            max_entries: 1,
            map_flags: Some(if read_only { BPF_F_RDONLY_PROG } else { 0 }),
            inner_map_idx: None,
            id: None,
            pinning: None,
            inner_id: None,
            inner_idx: None,
            layout: MapLayout::Seed16,
            offset: 0,
            kind,
            section,
            numa_node: 0,
            map_extra: 0,
            btf_key_type_id: 0,
            btf_value_type_id: 0,
            inner: None,
            initial,
            words: [0; MAX_MAP_WORDS],
        }
    }

    /// Adds or removes `BPF_F_MMAPABLE` (global data maps: see the open phase's rule).
    pub(crate) fn set_mmapable(&mut self, on: bool) {
        let flags = self.map_flags.unwrap_or(0) & !BPF_F_MMAPABLE;
        self.map_flags = Some(if on { flags | BPF_F_MMAPABLE } else { flags });
    }

    /// The raw 32-bit words of the definition, in file order.
    #[must_use]
    pub fn words(&self) -> &[u32] {
        self.words
            .get(..self.layout.size() / 4)
            .unwrap_or(&self.words)
    }
}

impl<'a> MapDef<'a> {
    /// A definition whose fields are not read yet (the layout needs every map symbol).
    pub(crate) fn placeholder(name: &'a str, offset: u32) -> Self {
        MapDef {
            name,
            map_type: 0,
            key_size: 0,
            value_size: 0,
            max_entries: 0,
            map_flags: None,
            inner_map_idx: None,
            id: None,
            pinning: None,
            inner_id: None,
            inner_idx: None,
            layout: MapLayout::Seed16,
            offset,
            kind: MapKind::Legacy,
            section: 0,
            numa_node: 0,
            map_extra: 0,
            btf_key_type_id: 0,
            btf_value_type_id: 0,
            inner: None,
            initial: &[],
            words: [0; MAX_MAP_WORDS],
        }
    }
}

/// Kernel names of `BPF_MAP_TYPE_*` values, as `bpftool` prints them (index = value).
const MAP_TYPE_NAMES: [&str; 34] = [
    "unspec",
    "hash",
    "array",
    "prog_array",
    "perf_event_array",
    "percpu_hash",
    "percpu_array",
    "stack_trace",
    "cgroup_array",
    "lru_hash",
    "lru_percpu_hash",
    "lpm_trie",
    "array_of_maps",
    "hash_of_maps",
    "devmap",
    "sockmap",
    "cpumap",
    "xskmap",
    "sockhash",
    "cgroup_storage",
    "reuseport_sockarray",
    "percpu_cgroup_storage",
    "queue",
    "stack",
    "sk_storage",
    "devmap_hash",
    "struct_ops",
    "ringbuf",
    "inode_storage",
    "task_storage",
    "bloom_filter",
    "user_ringbuf",
    "cgrp_storage",
    "arena",
];

/// The kernel's name of a `BPF_MAP_TYPE_*` value (`hash`, `perf_event_array` ...), or
/// `None` for a value this version does not know.
#[must_use]
pub fn map_type_name(map_type: u32) -> Option<&'static str> {
    MAP_TYPE_NAMES.get(map_type as usize).copied()
}
