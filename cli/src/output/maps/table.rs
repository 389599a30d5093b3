//! One map an object declares, read through a second fd of the loaded map
//! ([`Map::try_clone`]): its keys with `BPF_MAP_GET_NEXT_KEY`, each value with
//! `BPF_MAP_LOOKUP_ELEM`, its integers summed over the CPUs of a per-CPU map.
//!
//! What a value is comes from the object's BTF ([`Shape`]): a histogram when its type is a
//! struct with a member `slots` that is an array of integers (libbpf-tools'
//! `struct hist { __u32 slots[N]; ... }`), or an array of integers itself; fields otherwise,
//! walked by [`sluice_core::btf::walk`]. A value's numbers ([`Entry::sums`]) are its integer
//! leaves in walk order (a histogram's slots), each summed over the CPUs.
//!
//! `--clear` empties the map after a read (hash maps lose their keys, arrays are zeroed), as
//! the libbpf-tools interval modes do; what was cleared is kept in running totals so the
//! exporter's counters only grow ([`MapTable::totals`]).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use sluice_core::btf::{walk, Btf, Int, Kind, Visitor};
use sluice_core::object::MapKind;
use sluice_core::perf::abi::map_type;
use sluice_runtime::load::{Map, UpdateMode, TARGET_TGID_MAP};

/// Keys of cleared entries kept in the running totals at most (the exporter's memory bound).
pub const MAX_CLEARED_KEYS: usize = 65_536;

/// An object's `.BTF`, owned: each reader parses it into an index of its own.
#[derive(Debug)]
pub struct OwnedBtf {
    bytes: Vec<u8>,
    types: usize,
}

impl OwnedBtf {
    /// A copy of `bytes` when they parse as BTF.
    #[must_use]
    pub fn new(bytes: &[u8]) -> Option<OwnedBtf> {
        let types = Btf::count_types(bytes).ok()? as usize;
        let me = OwnedBtf {
            bytes: bytes.to_vec(),
            types,
        };
        me.with(|_| ()).map(|()| me)
    }

    /// `f` of the parsed BTF.
    pub fn with<R>(&self, f: impl FnOnce(&Btf<'_>) -> R) -> Option<R> {
        let mut index = vec![0u32; self.types];
        let btf = Btf::parse(&self.bytes, &mut index).ok()?;
        Some(f(&btf))
    }
}

/// What a map's value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `n` counters of `width` bytes at byte `offset` of the value: log2 slots (`step`
    /// `None`: slot `i` counts `[2^i, 2^(i+1))`, slot 0 `[0, 2)`) or linear (`[i*step,
    /// (i+1)*step)`, `--hist MAP=linear,STEP`).
    Hist {
        /// Where the slots start.
        offset: usize,
        /// Slot 0's place among the value's integer leaves in walk order (the struct's
        /// members before `slots`, e.g. hardirqs' `struct info { u64 count; u32 slots[N]; }`).
        first: usize,
        /// How many.
        n: usize,
        /// Bytes each (1, 2, 4, 8).
        width: usize,
        /// Linear buckets of this width; `None`: log2.
        step: Option<u64>,
    },
    /// Fields walked by BTF.
    Fields,
    /// No BTF: an integer when 1, 2, 4 or 8 bytes, else hex.
    Raw,
}

/// One key and its value.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The key's bytes.
    pub key: Vec<u8>,
    /// The value's bytes, one CPU's share after the other for a per-CPU map.
    pub value: Vec<u8>,
    /// The value's integers (a histogram's slots), summed over the CPUs.
    pub sums: Vec<i128>,
}

impl Entry {
    /// What entries sort by (descending): a histogram's total count (its other integers'
    /// sum when the slots are empty, as in hardirqs' count mode), else the value's first
    /// integer.
    #[must_use]
    #[inline(never)] // Called by the sort's every comparison: one copy, not one per use.
    pub fn rank(&self, shape: Shape) -> i128 {
        match shape {
            Shape::Hist { .. } => match self.slots(shape).iter().sum() {
                0 => self.sums.iter().sum(),
                t => t,
            },
            _ => self.sums.first().copied().unwrap_or(0),
        }
    }

    /// A histogram's slots among [`sums`](Self::sums) (empty for other shapes).
    #[must_use]
    pub fn slots(&self, shape: Shape) -> &[i128] {
        match shape {
            Shape::Hist { first, n, .. } => self.sums.get(first..first + n).unwrap_or_default(),
            _ => &[],
        }
    }
}

/// A readable map of one object.
#[derive(Debug)]
pub struct MapTable {
    /// The object's file name.
    pub object: String,
    /// The map's name.
    pub name: String,
    map: Map,
    btf: Option<std::sync::Arc<OwnedBtf>>,
    /// BTF type of the key (0: none).
    pub key_type: u32,
    /// BTF type of the value (0: none).
    pub value_type: u32,
    /// What the value is.
    pub shape: Shape,
    /// Possible CPUs of a per-CPU map (1 otherwise).
    pub cpus: usize,
    /// What `--clear` took away, per key, for the exporter's totals.
    cleared: Mutex<HashMap<Vec<u8>, Vec<i128>>>,
    /// A `.bss` variable's elements instead of the map's entries.
    var: Option<Var>,
}

/// A global variable of a `.bss` map, read as an array map of its elements (softirqs'
/// `struct hist hists[NR_SOFTIRQS]`): keys are the indexes, a scalar has one.
#[derive(Clone, Copy, Debug)]
pub struct Var {
    /// Its offset in the map's one value.
    pub offset: usize,
    /// Bytes of one element.
    pub size: usize,
    /// Elements (1 for a scalar).
    pub n: usize,
}

/// Whether a map of `kind`, `map_type` and `name` is one a program keeps its results in:
/// hash, array, per-CPU and LRU hash, LPM trie maps; not global data, `.kconfig`, perf
/// event arrays, ring buffers, program and stack-trace maps, map-in-map, the usdt
/// tables, nor sluice's own `target_tgid`.
#[must_use]
pub fn is_shown(kind: MapKind, map_type: u32, name: &str) -> bool {
    matches!(kind, MapKind::Legacy | MapKind::Btf)
        && matches!(
            map_type,
            map_type::HASH
                | map_type::ARRAY
                | map_type::PERCPU_HASH
                | map_type::PERCPU_ARRAY
                | map_type::LRU_HASH
                | map_type::LRU_PERCPU_HASH
                | 11 // LPM_TRIE
        )
        && !matches!(
            name,
            "__bpf_usdt_specs" | "__bpf_usdt_ip_to_spec_id" | TARGET_TGID_MAP
        )
}

impl MapTable {
    /// A table of `map` (a second fd of it is taken), named `name` as the object does, typed
    /// by `btf`.
    ///
    /// # Errors
    /// The dup's.
    pub fn new(
        object: &str,
        name: &str,
        map: &Map,
        btf: Option<std::sync::Arc<OwnedBtf>>,
        types: (u32, u32),
        linear: Option<u64>,
    ) -> Result<MapTable, String> {
        let dup = map
            .try_clone()
            .map_err(|e| format!("map '{}': {e}", map.name()))?;
        let cpus = if map.is_per_cpu() {
            // A lookup writes one 8-byte-aligned share per possible CPU.
            (map.value_bytes() / (map.value_size() as usize).next_multiple_of(8).max(1)).max(1)
        } else {
            1
        };
        let (key_type, value_type) = types;
        let shape = btf
            .as_ref()
            .filter(|_| value_type != 0)
            .and_then(|b| b.with(|btf| shape_of(btf, value_type, linear)))
            .unwrap_or(Shape::Raw);
        Ok(MapTable {
            object: object.rsplit('/').next().unwrap_or(object).to_owned(),
            name: name.to_owned(),
            map: dup,
            btf,
            key_type,
            value_type,
            shape,
            cpus,
            cleared: Mutex::new(HashMap::new()),
            var: None,
        })
    }

    /// A table of the `.bss` variable `name` of `map`, elements of type `elem` (see
    /// [`Var`]).
    ///
    /// # Errors
    /// The dup's.
    pub fn variable(
        object: &str,
        name: &str,
        map: &Map,
        btf: std::sync::Arc<OwnedBtf>,
        elem: u32,
        var: Var,
    ) -> Result<MapTable, String> {
        let mut t = MapTable::new(object, name, map, Some(btf), (0, elem), None)?;
        t.var = Some(var);
        Ok(t)
    }

    /// Bytes of one value (of one CPU's).
    fn size(&self) -> usize {
        self.var.map_or(self.map.value_size() as usize, |v| v.size)
    }

    /// Runs `f` with the object's BTF when the map has types.
    pub fn with_btf<R>(&self, f: impl FnOnce(&Btf<'_>) -> R) -> Option<R> {
        self.btf.as_ref()?.with(f)
    }

    /// Bytes of one CPU's value in a lookup's buffer.
    #[must_use]
    pub fn stride(&self) -> usize {
        if self.cpus > 1 {
            self.size().next_multiple_of(8)
        } else {
            self.size()
        }
    }

    /// One CPU's share of `value`.
    #[must_use]
    pub fn cpu_value<'v>(&self, value: &'v [u8], cpu: usize) -> &'v [u8] {
        let (stride, size) = (self.stride(), self.size());
        value
            .get(cpu * stride..cpu * stride + size)
            .unwrap_or_default()
    }

    /// Every entry, sorted by [`Entry::rank`] descending; with `clear`, the map is emptied
    /// of what was read (arrays zeroed). An array's all-zero entries are left out.
    ///
    /// # Errors
    /// The kernel's refusal of a call.
    pub fn read(&self, clear: bool) -> Result<Vec<Entry>, String> {
        let mut cleared = self.cleared.lock().unwrap_or_else(PoisonError::into_inner);
        self.read_locked(clear.then_some(&mut *cleared))
    }

    fn read_locked(
        &self,
        mut cleared: Option<&mut HashMap<Vec<u8>, Vec<i128>>>,
    ) -> Result<Vec<Entry>, String> {
        let array = matches!(
            self.map.map_type(),
            map_type::ARRAY | map_type::PERCPU_ARRAY
        );
        let mut out = Vec::new();
        let zero = vec![0u8; self.map.value_bytes()];
        let mut index = Vec::new();
        let parsed = self.btf.as_ref().and_then(|b| {
            index.resize(b.types, 0);
            Btf::parse(&b.bytes, &mut index).ok()
        });
        if let Some(var) = self.var {
            out = self.read_var(var, parsed.as_ref(), cleared)?;
        } else {
            for key in self.map.keys_bytes() {
                let key = key.map_err(|e| e.to_string())?;
                let Some(value) = self.map.get_bytes(&key).map_err(|e| e.to_string())? else {
                    continue;
                };
                let sums = self.sums(parsed.as_ref(), &value);
                if array && sums.iter().all(|&v| v == 0) {
                    continue;
                }
                if let Some(kept) = cleared.as_deref_mut() {
                    let done = if array {
                        self.map.update_bytes(&key, &zero, UpdateMode::Any)
                    } else {
                        self.map.delete_bytes(&key).map(drop)
                    };
                    done.map_err(|e| e.to_string())?;
                    if let Some(before) = kept.get_mut(&key) {
                        add(before, &sums);
                    } else if kept.len() < MAX_CLEARED_KEYS {
                        kept.insert(key.clone(), sums.clone());
                    }
                }
                out.push(Entry { key, value, sums });
            }
        }
        let shape = self.shape;
        out.sort_by_key(|e| std::cmp::Reverse(e.rank(shape)));
        Ok(out)
    }

    /// The entries as counters: what [`read`](Self::read) sees plus what `--clear` took
    /// away before, per key (a key that is gone keeps its total, its value bytes zeros).
    /// Reads and clears exclude each other, so a total never goes back.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    pub fn totals(&self) -> Result<Vec<Entry>, String> {
        let cleared = self.cleared.lock().unwrap_or_else(PoisonError::into_inner);
        let mut now = self.read_locked(None)?;
        if cleared.is_empty() {
            return Ok(now);
        }
        let mut seen = std::collections::HashSet::new();
        for e in &mut now {
            if let Some(before) = cleared.get(&e.key) {
                add(&mut e.sums, before);
            }
            seen.insert(e.key.clone());
        }
        for (key, sums) in cleared.iter().filter(|(k, _)| !seen.contains(*k)) {
            now.push(Entry {
                key: key.clone(),
                value: vec![0; self.size()],
                sums: sums.clone(),
            });
        }
        Ok(now)
    }

    /// Bytes of one CPU's value as declared.
    #[must_use]
    pub fn value_size(&self) -> usize {
        self.size()
    }

    /// [`read`](Self::read) of a `.bss` variable: its non-zero elements (unsorted);
    /// `cleared` zeroes them in one update of the map's value.
    fn read_var(
        &self,
        var: Var,
        btf: Option<&Btf<'_>>,
        cleared: Option<&mut HashMap<Vec<u8>, Vec<i128>>>,
    ) -> Result<Vec<Entry>, String> {
        let key = 0u32.to_ne_bytes();
        let mut all = self
            .map
            .get_bytes(&key)
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let mut out = Vec::new();
        for i in 0..var.n {
            let at = var.offset + i * var.size;
            let Some(value) = all.get(at..at + var.size) else {
                break;
            };
            let sums = self.sums(btf, value);
            if sums.iter().any(|&v| v != 0) {
                let key = u32::try_from(i).unwrap_or(u32::MAX).to_ne_bytes().to_vec();
                out.push(Entry {
                    key,
                    value: value.to_vec(),
                    sums,
                });
            }
        }
        if let Some(kept) = cleared {
            if let Some(place) = all.get_mut(var.offset..var.offset + var.n * var.size) {
                place.fill(0);
            }
            self.map
                .update_bytes(&key, &all, UpdateMode::Any)
                .map_err(|e| e.to_string())?;
            for e in &out {
                match kept.get_mut(&e.key) {
                    Some(before) => add(before, &e.sums),
                    None => {
                        kept.insert(e.key.clone(), e.sums.clone());
                    }
                }
            }
        }
        Ok(out)
    }

    /// The integers of `value`, summed over its CPUs.
    fn sums(&self, btf: Option<&Btf<'_>>, value: &[u8]) -> Vec<i128> {
        let mut total: Vec<i128> = Vec::new();
        for cpu in 0..self.cpus {
            let v = self.cpu_value(value, cpu);
            let one = match (self.shape, btf) {
                (Shape::Hist { .. } | Shape::Fields, Some(btf)) => {
                    let mut l = Leaves::default();
                    let _ = walk(btf, self.value_type, v, &mut l);
                    l.values
                }
                (
                    Shape::Hist {
                        offset, n, width, ..
                    },
                    None,
                ) => slots(v, offset, n, width),
                _ => raw_int(v).into_iter().collect(),
            };
            add(&mut total, &one);
        }
        total
    }
}

fn add(to: &mut Vec<i128>, from: &[i128]) {
    if to.len() < from.len() {
        to.resize(from.len(), 0);
    }
    for (t, f) in to.iter_mut().zip(from) {
        *t = t.saturating_add(*f);
    }
}

/// A value of 1, 2, 4 or 8 bytes as a native-endian unsigned integer.
#[must_use]
pub fn raw_int(v: &[u8]) -> Option<i128> {
    let mut b = [0u8; 8];
    if !matches!(v.len(), 1 | 2 | 4 | 8) {
        return None;
    }
    b.get_mut(..v.len())?.copy_from_slice(v);
    if cfg!(target_endian = "big") {
        b.get_mut(..v.len())?.reverse();
        return Some(i128::from(u64::from_be_bytes(b) >> (64 - 8 * v.len())));
    }
    Some(i128::from(u64::from_le_bytes(b)))
}

/// `n` native-endian unsigned counters of `width` bytes at `offset`.
fn slots(v: &[u8], offset: usize, n: usize, width: usize) -> Vec<i128> {
    (0..n)
        .map(|i| {
            let at = offset + i * width;
            v.get(at..at + width).and_then(raw_int).unwrap_or(0)
        })
        .collect()
}

/// The integer leaves of a walk, in order; with `names`, each one's member path
/// (`a_b` for member `b` of member `a`, array elements by index).
#[derive(Debug, Default)]
pub struct Leaves {
    /// The integers.
    pub values: Vec<i128>,
    /// Their names, when asked for.
    pub names: Option<Vec<String>>,
    path: Vec<(String, Option<u32>)>,
}

impl Leaves {
    /// A collector of names too.
    #[must_use]
    pub fn named() -> Leaves {
        Leaves {
            names: Some(Vec::new()),
            ..Leaves::default()
        }
    }

    fn name(&mut self, name: &str) -> String {
        let mut parts: Vec<String> = Vec::new();
        for (n, idx) in &mut self.path {
            if !n.is_empty() {
                parts.push(n.clone());
            }
            if let Some(i) = idx {
                parts.push(i.to_string());
            }
        }
        // The element just visited moves its array on.
        if let Some((_, Some(i))) = self.path.last_mut() {
            if name.is_empty() {
                *i += 1;
            }
        }
        if !name.is_empty() {
            parts.push(name.to_owned());
        }
        parts.join("_")
    }

    fn skip(&mut self, name: &str) {
        if self.names.is_some() {
            let _ = self.name(name);
        }
    }
}

impl Visitor for Leaves {
    fn int(&mut self, name: &str, value: Int, _bits: u8) {
        self.values.push(match value {
            Int::Signed(i) => i,
            Int::Unsigned(u) => i128::try_from(u).unwrap_or(i128::MAX),
        });
        if self.names.is_some() {
            let n = self.name(name);
            if let Some(names) = self.names.as_mut() {
                names.push(n);
            }
        }
    }
    fn bool(&mut self, name: &str, _: bool) {
        self.skip(name);
    }
    fn enumerator(&mut self, name: &str, _: Option<&str>, _: Int) {
        self.skip(name);
    }
    fn string(&mut self, name: &str, _: &[u8]) {
        self.skip(name);
    }
    fn pointer(&mut self, name: &str, _: u64) {
        self.skip(name);
    }
    fn bytes(&mut self, name: &str, _: &[u8]) {
        self.skip(name);
    }
    fn begin_struct(&mut self, name: &str, _: bool) {
        let n = if self.names.is_some() {
            self.name(name)
        } else {
            String::new()
        };
        self.path.push((n, None));
    }
    fn end_struct(&mut self) {
        self.path.pop();
    }
    fn begin_array(&mut self, name: &str, _: u32) {
        let n = if self.names.is_some() {
            self.name(name)
        } else {
            String::new()
        };
        self.path.push((n, Some(0)));
    }
    fn end_array(&mut self) {
        self.path.pop();
    }
}

/// What the value of type `id` is: a histogram (a struct's `slots` member, or an array, of
/// integers; an array only with `--hist`) or fields.
fn shape_of(btf: &Btf<'_>, id: u32, linear: Option<u64>) -> Shape {
    let ints = |id: u32| -> Option<(usize, usize)> {
        let t = btf.resolve_type(id).ok()??;
        let a = t.array()?;
        let e = btf.resolve_type(a.elem_type).ok()??;
        let width = e.size()? as usize;
        (e.kind() == Kind::Int && matches!(width, 1 | 2 | 4 | 8) && a.nelems > 0)
            .then_some((a.nelems as usize, width))
    };
    let Ok(Some(t)) = btf.resolve_type(id) else {
        return Shape::Fields;
    };
    let found = match t.kind() {
        Kind::Struct => t.members().find(|m| m.name == "slots").and_then(|m| {
            let (n, width) = ints(m.type_id)?;
            (m.bitfield_size == 0).then_some((m.bit_offset as usize / 8, n, width))
        }),
        Kind::Array if linear.is_some() => ints(id).map(|(n, w)| (0, n, w)),
        _ => None,
    };
    // Slot 0's place among the leaves: a walk of a zero value names them.
    let first = |offset: usize| -> Option<usize> {
        if offset == 0 {
            return Some(0);
        }
        let zeros = vec![0u8; btf.size_of(id).ok()? as usize];
        let mut l = Leaves::named();
        walk(btf, id, &zeros, &mut l).ok()?;
        l.names?.iter().position(|n| n == "slots_0")
    };
    match found.and_then(|(offset, n, width)| Some((offset, first(offset)?, n, width))) {
        Some((offset, first, n, width)) => Shape::Hist {
            offset,
            first,
            n,
            width,
            step: linear,
        },
        None => Shape::Fields,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn leaves_are_named_by_path() {
        let mut l = Leaves::named();
        l.begin_struct("", false);
        l.int("count", Int::Unsigned(3), 64);
        l.string("comm", b"x");
        l.begin_struct("lat", false);
        l.int("total", Int::Signed(-1), 64);
        l.end_struct();
        l.begin_array("slots", 2);
        l.int("", Int::Unsigned(1), 32);
        l.int("", Int::Unsigned(2), 32);
        l.end_array();
        l.end_struct();
        assert_eq!(l.values, vec![3, -1, 1, 2]);
        assert_eq!(
            l.names.unwrap(),
            vec!["count", "lat_total", "slots_0", "slots_1"]
        );
    }

    #[test]
    fn shown_maps() {
        assert!(is_shown(MapKind::Btf, map_type::HASH, "counts"));
        assert!(!is_shown(MapKind::Btf, map_type::RINGBUF, "events"));
        assert!(!is_shown(MapKind::Bss, map_type::ARRAY, "x.bss"));
        assert!(!is_shown(MapKind::Btf, map_type::HASH, "__bpf_usdt_specs"));
        assert!(!is_shown(MapKind::Btf, map_type::STACK_TRACE, "stacks"));
        assert_eq!(raw_int(&[1, 0, 0, 0]), Some(1));
        assert_eq!(raw_int(&[1, 0, 0]), None);
    }
}
