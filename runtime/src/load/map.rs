//! Map handles: created maps with typed `get`/`update`/`delete`/`keys`, for hash, array
//! and per-CPU maps.
//!
//! Keys and values are plain data in native byte order (what a BPF program on this machine
//! sees). Per-CPU maps hold one value per *possible* CPU, each slot `value_size` rounded up
//! to 8 bytes (`kernel/bpf/syscall.c` `bpf_map_value_size`).
//!
//! The maps of an object are created here too ([`create_maps`]: plain maps first, then
//! map-in-maps with their inner template; [`init_data_maps`]: global data set and frozen).

use crate::error::{ConfigError, Error, Result};
use crate::kernel::errno::bpf_error;
use crate::sys::bpf::{self as sys, MapFd};
use rustix::io::Errno;
use sluice_core::btf::{Btf, Kind};
use sluice_core::object::{MapDef, MapKind};
use sluice_core::perf::abi::{
    map_type, object_name, MapCreateAttr, BPF_ANY, BPF_EXIST, BPF_NOEXIST,
};
use std::collections::BTreeMap;
use std::os::fd::{AsFd, BorrowedFd};

/// Plain data that can be a map key or value: fixed size, every byte pattern valid,
/// stored in native byte order.
pub trait Plain: Copy {
    /// Size in bytes.
    const SIZE: usize;
    /// Writes `self` into `out` (exactly [`SIZE`](Self::SIZE) bytes).
    fn write_to(&self, out: &mut [u8]);
    /// Reads a value from `bytes` (at least [`SIZE`](Self::SIZE) bytes; `None` if shorter).
    fn read_from(bytes: &[u8]) -> Option<Self>;
}

macro_rules! plain_int {
    ($($t:ty),*) => {$(
        impl Plain for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            fn write_to(&self, out: &mut [u8]) {
                for (d, s) in out.iter_mut().zip(self.to_ne_bytes()) {
                    *d = s;
                }
            }
            fn read_from(bytes: &[u8]) -> Option<Self> {
                Some(<$t>::from_ne_bytes(bytes.get(..Self::SIZE)?.try_into().ok()?))
            }
        }
    )*};
}
plain_int!(u8, u16, u32, u64, i8, i16, i32, i64);

impl<T: Plain + Default, const N: usize> Plain for [T; N] {
    const SIZE: usize = T::SIZE * N;
    fn write_to(&self, out: &mut [u8]) {
        for (chunk, v) in out.chunks_mut(T::SIZE.max(1)).zip(self) {
            v.write_to(chunk);
        }
    }
    fn read_from(bytes: &[u8]) -> Option<Self> {
        let mut out = [T::default(); N];
        for (i, slot) in out.iter_mut().enumerate() {
            let start = i.checked_mul(T::SIZE)?;
            *slot = T::read_from(bytes.get(start..)?)?;
        }
        Some(out)
    }
}

fn to_bytes<T: Plain>(v: &T) -> Vec<u8> {
    let mut b = vec![0u8; T::SIZE];
    v.write_to(&mut b);
    b
}

/// How an update treats an existing element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum UpdateMode {
    /// Create or replace (`BPF_ANY`).
    #[default]
    Any,
    /// Only create (`BPF_NOEXIST`).
    NoExist,
    /// Only replace (`BPF_EXIST`).
    Exist,
}

impl UpdateMode {
    fn flags(self) -> u64 {
        match self {
            UpdateMode::Any => BPF_ANY,
            UpdateMode::NoExist => BPF_NOEXIST,
            UpdateMode::Exist => BPF_EXIST,
        }
    }
}

/// What a map is created with.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct MapSpec {
    /// Name (sanitised and cut to 15 bytes for the kernel).
    pub name: String,
    /// `BPF_MAP_TYPE_*`.
    pub map_type: u32,
    /// Key size in bytes.
    pub key_size: u32,
    /// Value size in bytes.
    pub value_size: u32,
    /// Maximum number of entries.
    pub max_entries: u32,
    /// `BPF_F_*` creation flags.
    pub map_flags: u32,
}

/// What a map gets besides its [`MapSpec`]: BTF and the rarer creation fields.
#[derive(Clone, Copy, Debug, Default)]
pub struct MapExtra<'a> {
    /// The object's BTF.
    pub btf_fd: Option<BorrowedFd<'a>>,
    /// BTF type id of the key (0: none).
    pub btf_key_type_id: u32,
    /// BTF type id of the value (0: none).
    pub btf_value_type_id: u32,
    /// NUMA node to allocate on (`BPF_F_NUMA_NODE`).
    pub numa_node: Option<u32>,
    /// `map_extra` (bloom filter hash count ...).
    pub map_extra: u64,
}

/// A map this process created; closed on drop.
#[derive(Debug)]
pub struct Map {
    name: String,
    fd: MapFd,
    max_entries: u32,
}

impl Map {
    /// Creates a map (`BPF_MAP_CREATE`), with `inner` as the inner map template for
    /// map-in-map types.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for a map type this kernel does not know,
    /// [`Error::Permission`] without `CAP_BPF`, [`Error::Syscall`] otherwise.
    pub fn create(spec: &MapSpec, inner: Option<&Map>) -> Result<Map> {
        Self::create_with(spec, inner, &MapExtra::default())
    }

    /// [`Map::create`] with what BTF-defined maps add: the object's BTF and the key and
    /// value type ids (the kernel then checks them and `bpftool map dump` prints
    /// structured values), `numa_node`, `map_extra`. When the kernel refuses the BTF
    /// (map types that take none, old kernels), the map is created again without it, as
    /// libbpf does.
    ///
    /// # Errors
    /// As [`Map::create`].
    pub fn create_with(spec: &MapSpec, inner: Option<&Map>, extra: &MapExtra<'_>) -> Result<Map> {
        let with_btf =
            extra.btf_fd.is_some() && (extra.btf_key_type_id != 0 || extra.btf_value_type_id != 0);
        if with_btf {
            match Self::create_raw(spec, inner, extra) {
                Ok(m) => return Ok(m),
                Err(e) => log::debug!(
                    "map '{}': creating with BTF failed ({e}); retrying without BTF",
                    spec.name
                ),
            }
        }
        let bare = MapExtra {
            btf_fd: None,
            btf_key_type_id: 0,
            btf_value_type_id: 0,
            ..*extra
        };
        Self::create_raw(spec, inner, &bare)
    }

    fn create_raw(spec: &MapSpec, inner: Option<&Map>, extra: &MapExtra<'_>) -> Result<Map> {
        let numa = extra.numa_node.unwrap_or(0);
        let mut attr = MapCreateAttr {
            btf_fd: extra.btf_fd.map_or(0, |f| f.as_raw_fd_u32()),
            btf_key_type_id: extra.btf_key_type_id,
            btf_value_type_id: extra.btf_value_type_id,
            numa_node: numa,
            map_extra: extra.map_extra,
            map_type: spec.map_type,
            key_size: spec.key_size,
            value_size: spec.value_size,
            max_entries: spec.max_entries,
            map_flags: spec.map_flags
                | if extra.numa_node.is_some() {
                    sluice_core::perf::abi::BPF_F_NUMA_NODE
                } else {
                    0
                },
            inner_map_fd: inner.map_or(0, |m| m.fd.as_fd().as_raw_fd_u32()),
            map_name: object_name(&spec.name),
            ..MapCreateAttr::default()
        };
        let fd = match sys::map_create(&attr) {
            // Kernels before 4.15 know no map_name: E2BIG (non-zero unknown tail) or EINVAL.
            Err(e) if (e == Errno::TOOBIG || e == Errno::INVAL) && attr.map_name[0] != 0 => {
                attr.map_name = [0; 16];
                sys::map_create(&attr)
            }
            r => r,
        };
        let fd = fd.map_err(|errno| {
            let feature = map_type::min_kernel(spec.map_type)
                .map(|k| (format!("map type {}", spec.map_type), k));
            bpf_error("bpf(BPF_MAP_CREATE)", &spec.name, errno, feature)
        })?;
        log::debug!(
            "created map '{}' (type {}): fd {}",
            spec.name,
            spec.map_type,
            fd.as_fd().as_raw_fd_u32()
        );
        Ok(Map {
            name: spec.name.clone(),
            fd,
            max_entries: spec.max_entries,
        })
    }

    /// A map opened rather than created (a pinned one), `max_entries` as the kernel says.
    pub(crate) fn from_fd(name: &str, fd: MapFd, max_entries: u32) -> Map {
        Map {
            name: name.to_owned(),
            fd,
            max_entries,
        }
    }

    /// Freezes the map (`BPF_MAP_FREEZE`): user space can no longer write it; a
    /// `.rodata` map is frozen once its initial value is in, so the verifier can treat
    /// its contents as constants.
    ///
    /// # Errors
    /// [`Error::Unsupported`] before Linux 5.2; the kernel's refusal.
    pub fn freeze(&self) -> Result<()> {
        sys::map_freeze(self.fd.as_fd()).map_err(|errno| {
            bpf_error(
                "bpf(BPF_MAP_FREEZE)",
                &self.name,
                errno,
                Some(("BPF_MAP_FREEZE".into(), "5.2")),
            )
        })
    }

    /// The same map through a second fd (a reader off the drain's thread: a scrape, an
    /// interval's dump); the map lives while either is open.
    ///
    /// # Errors
    /// [`Error::Syscall`] when no fd is left.
    pub fn try_clone(&self) -> Result<Map> {
        let fd = self
            .fd
            .try_clone()
            .map_err(|errno| self.err("fcntl(F_DUPFD_CLOEXEC)", errno))?;
        Ok(Map {
            name: self.name.clone(),
            fd,
            max_entries: self.max_entries,
        })
    }

    /// The map's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
    /// `BPF_MAP_TYPE_*`.
    #[must_use]
    pub fn map_type(&self) -> u32 {
        self.fd.map_type()
    }
    /// Key size in bytes.
    #[must_use]
    pub fn key_size(&self) -> u32 {
        self.fd.key_size()
    }
    /// Value size in bytes (one CPU's for per-CPU maps).
    #[must_use]
    pub fn value_size(&self) -> u32 {
        self.fd.value_size()
    }
    /// Maximum number of entries.
    #[must_use]
    pub fn max_entries(&self) -> u32 {
        self.max_entries
    }
    /// Whether values are per possible CPU.
    #[must_use]
    pub fn is_per_cpu(&self) -> bool {
        map_type::is_per_cpu(self.map_type())
    }
    /// Bytes one lookup returns (all CPUs' slots for per-CPU maps).
    #[must_use]
    pub fn value_bytes(&self) -> usize {
        self.fd.value_bytes()
    }

    fn err(&self, call: &'static str, errno: Errno) -> Error {
        bpf_error(call, &self.name, errno, None)
    }

    fn check_key(&self, len: usize) -> Result<()> {
        if len != self.key_size() as usize {
            return Err(Error::KeySize {
                map: self.name.clone(),
                expected: self.key_size() as usize,
                got: len,
            });
        }
        Ok(())
    }

    fn check_value(&self, len: usize) -> Result<()> {
        if len != self.value_bytes() {
            return Err(Error::ValueSize {
                map: self.name.clone(),
                expected: self.value_bytes(),
                got: len,
            });
        }
        Ok(())
    }

    /// Looks `key` up; `None` if absent. Per-CPU maps return every CPU's slot.
    ///
    /// # Errors
    /// [`Error::KeySize`] for a key of the wrong size; the kernel's refusal.
    pub fn get_bytes(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_key(key.len())?;
        let mut v = vec![0u8; self.value_bytes()];
        match self.fd.lookup(key, &mut v) {
            Ok(()) => Ok(Some(v)),
            Err(e) if e == Errno::NOENT => Ok(None),
            Err(e) => Err(self.err("bpf(BPF_MAP_LOOKUP_ELEM)", e)),
        }
    }

    /// Sets `key` to `value` (all CPUs' slots for per-CPU maps).
    ///
    /// # Errors
    /// [`Error::KeySize`] / [`Error::ValueSize`] for sizes that do not fit; the kernel's refusal (`EEXIST` with
    /// [`UpdateMode::NoExist`], `ENOENT` with [`UpdateMode::Exist`], `E2BIG` when full).
    pub fn update_bytes(&self, key: &[u8], value: &[u8], mode: UpdateMode) -> Result<()> {
        self.check_key(key.len())?;
        self.check_value(value.len())?;
        self.fd
            .update(key, value, mode.flags())
            .map_err(|e| self.err("bpf(BPF_MAP_UPDATE_ELEM)", e))
    }

    /// Deletes `key`; `false` if it was absent.
    ///
    /// # Errors
    /// [`Error::KeySize`] for a key of the wrong size; the kernel's refusal (`EINVAL` on
    /// arrays, whose elements cannot be deleted).
    pub fn delete_bytes(&self, key: &[u8]) -> Result<bool> {
        self.check_key(key.len())?;
        match self.fd.delete(key) {
            Ok(()) => Ok(true),
            Err(e) if e == Errno::NOENT => Ok(false),
            Err(e) => Err(self.err("bpf(BPF_MAP_DELETE_ELEM)", e)),
        }
    }

    /// Iterates over the keys (`BPF_MAP_GET_NEXT_KEY` from the start). Bounded by
    /// `max_entries + 1` steps so a map changing underneath cannot loop forever.
    pub fn keys_bytes(&self) -> KeysBytes<'_> {
        KeysBytes {
            map: self,
            last: None,
            left: u64::from(self.max_entries) + 1,
            done: false,
        }
    }

    /// Typed lookup.
    ///
    /// # Errors
    /// As [`get_bytes`](Self::get_bytes); [`Error::ValueSize`] if `V` does not fit the value size.
    pub fn get<K: Plain, V: Plain>(&self, key: &K) -> Result<Option<V>> {
        self.check_value(V::SIZE)?;
        Ok(self
            .get_bytes(&to_bytes(key))?
            .and_then(|b| V::read_from(&b)))
    }

    /// Typed update.
    ///
    /// # Errors
    /// As [`update_bytes`](Self::update_bytes).
    pub fn update<K: Plain, V: Plain>(&self, key: &K, value: &V, mode: UpdateMode) -> Result<()> {
        self.update_bytes(&to_bytes(key), &to_bytes(value), mode)
    }

    /// Typed delete; `false` if absent.
    ///
    /// # Errors
    /// As [`delete_bytes`](Self::delete_bytes).
    pub fn delete<K: Plain>(&self, key: &K) -> Result<bool> {
        self.delete_bytes(&to_bytes(key))
    }

    /// Typed keys; a single [`Error::KeySize`] if `K` is not the key size.
    pub fn keys<K: Plain + 'static>(&self) -> impl Iterator<Item = Result<K>> + '_ {
        let (err, keys) = match self.check_key(K::SIZE) {
            Ok(()) => (None, Some(self.keys_bytes())),
            Err(e) => (Some(Err(e)), None),
        };
        err.into_iter()
            .chain(keys.into_iter().flatten().filter_map(|k| match k {
                Ok(b) => K::read_from(&b).map(Ok),
                Err(e) => Some(Err(e)),
            }))
    }

    fn per_cpu_stride(&self) -> usize {
        (self.value_size() as usize).next_multiple_of(8)
    }

    /// Per-CPU lookup: one value per possible CPU.
    ///
    /// # Errors
    /// [`Error::NotPerCpu`] on a map that is not per-CPU or a `V` of the wrong size; as
    /// [`get_bytes`](Self::get_bytes).
    pub fn get_per_cpu<K: Plain, V: Plain>(&self, key: &K) -> Result<Option<Vec<V>>> {
        self.check_per_cpu::<V>()?;
        let stride = self.per_cpu_stride();
        Ok(self
            .get_bytes(&to_bytes(key))?
            .map(|b| b.chunks(stride).filter_map(V::read_from).collect()))
    }

    /// Per-CPU update: `values` holds one value per possible CPU.
    ///
    /// # Errors
    /// [`Error::NotPerCpu`] on a map that is not per-CPU or a `V` of the wrong size,
    /// [`Error::ValueSize`] for a count other than the possible CPUs; as
    /// [`update_bytes`](Self::update_bytes).
    pub fn update_per_cpu<K: Plain, V: Plain>(
        &self,
        key: &K,
        values: &[V],
        mode: UpdateMode,
    ) -> Result<()> {
        self.check_per_cpu::<V>()?;
        let stride = self.per_cpu_stride();
        let mut buf = vec![0u8; values.len().saturating_mul(stride)];
        for (chunk, v) in buf.chunks_mut(stride).zip(values) {
            v.write_to(chunk);
        }
        self.update_bytes(&to_bytes(key), &buf, mode)
    }

    fn check_per_cpu<V: Plain>(&self) -> Result<()> {
        if !self.is_per_cpu() || V::SIZE != self.value_size() as usize {
            return Err(Error::NotPerCpu {
                map: self.name.clone(),
                map_type: self.map_type(),
                value_size: self.value_size(),
                got: V::SIZE,
            });
        }
        Ok(())
    }
}

impl AsFd for Map {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

trait RawU32 {
    fn as_raw_fd_u32(&self) -> u32;
}
impl RawU32 for BorrowedFd<'_> {
    fn as_raw_fd_u32(&self) -> u32 {
        use std::os::fd::AsRawFd;
        self.as_raw_fd() as u32
    }
}

/// Iterator over a map's keys as bytes; see [`Map::keys_bytes`].
#[derive(Debug)]
pub struct KeysBytes<'m> {
    map: &'m Map,
    last: Option<Vec<u8>>,
    left: u64,
    done: bool,
}

impl Iterator for KeysBytes<'_> {
    type Item = Result<Vec<u8>>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.left == 0 {
            return None;
        }
        self.left -= 1;
        let mut next = vec![0u8; self.map.key_size() as usize];
        match self.map.fd.next_key(self.last.as_deref(), &mut next) {
            Ok(()) => {
                self.last = Some(next.clone());
                Some(Ok(next))
            }
            Err(e) if e == Errno::NOENT => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(self.map.err("bpf(BPF_MAP_GET_NEXT_KEY)", e)))
            }
        }
    }
}

/// The kernel's map request for object map `def`: its kernel name (`<object>.rodata` for
/// global data), its size from `sizes` (`--map-size`) when named there, a perf event
/// array sized to the possible CPUs when it says 0, and a stack trace map whose value size
/// is 0 given room for the deepest stack the kernel records ([`stack_value_size`]).
///
/// # Errors
/// [`ConfigError::ZeroEntries`] for any other map left at 0 entries.
pub(crate) fn map_spec(
    def: &MapDef<'_>,
    object_name: &str,
    sizes: &BTreeMap<String, u32>,
) -> Result<MapSpec> {
    let mut max_entries = sizes.get(def.name).copied().unwrap_or(def.max_entries);
    // Local storage maps (sk, inode, task, cgroup) must say 0: the kernel sizes them.
    let storage = matches!(def.map_type, 24 | 28 | 29 | 32);
    if max_entries == 0 && def.map_type != map_type::PERF_EVENT_ARRAY && !storage {
        return Err(Error::Config(ConfigError::ZeroEntries {
            map: def.name.to_owned(),
        }));
    }
    if def.map_type == map_type::PERF_EVENT_ARRAY && max_entries == 0 {
        // One slot per CPU, what libbpf fills in when the object leaves it to the loader.
        max_entries = sys::possible_cpus()
            .map_err(|errno| Error::Syscall {
                call: "read /sys/devices/system/cpu/possible",
                subject: String::new(),
                errno,
            })?
            .try_into()
            .unwrap_or(u32::MAX);
    }
    let value_size = match (def.map_type, def.value_size) {
        (map_type::STACK_TRACE, 0) => stack_value_size(),
        (_, size) => size,
    };
    let name = def.kernel_name(object_name);
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok(MapSpec {
        name: String::from_utf8_lossy(name.get(..end).unwrap_or_default()).into_owned(),
        map_type: def.map_type,
        key_size: def.key_size,
        value_size,
        max_entries,
        map_flags: def.map_flags.unwrap_or(0),
    })
}

/// Frames the kernel records at most when `/proc/sys/kernel/perf_event_max_stack` cannot
/// be read (its default).
pub(crate) const DEFAULT_MAX_STACK: u32 = 127;

/// The value size of a stack trace map an object leaves at 0 for user space to choose (as
/// libbpf-tools' offcputime, wakeuptime and capable do, sizing it from their
/// `--perf-max-stack-depth`, 127 by default): one `u64` per frame of the deepest stack the
/// kernel records, `/proc/sys/kernel/perf_event_max_stack` (the kernel refuses a
/// `bpf_get_stackid` deeper than it anyway).
pub(crate) fn stack_value_size() -> u32 {
    let frames = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_MAX_STACK);
    frames.saturating_mul(8)
}

/// The inner map template of a map-in-map: samples/bpf `inner_map_idx`, or iproute2 `inner_idx`.
/// Only map-in-map types have one: the field exists (as 0) in every definition of the layout.
fn inner_of(def: &MapDef<'_>) -> Option<u32> {
    matches!(
        def.map_type,
        map_type::ARRAY_OF_MAPS | map_type::HASH_OF_MAPS
    )
    .then(|| def.inner_map_idx.or(def.inner_idx))
    .flatten()
}

/// What map creation needs from the object's BTF.
pub(crate) struct MapBtf<'f, 'b> {
    pub(crate) fd: Option<BorrowedFd<'f>>,
    pub(crate) local: Option<&'b Btf<'b>>,
}

impl MapBtf<'_, '_> {
    /// `MapExtra` of `def`: its key/value type ids (a global data map's value is its
    /// section's DATASEC).
    fn extra(&self, def: &MapDef<'_>) -> MapExtra<'_> {
        let value = if def.kind.is_internal() {
            self.local
                .and_then(|b| b.find(def.name, Kind::Datasec))
                .map_or(0, |t| t.id())
        } else {
            def.btf_value_type_id
        };
        MapExtra {
            btf_fd: self.fd,
            btf_key_type_id: def.btf_key_type_id,
            btf_value_type_id: value,
            numa_node: (def.numa_node != 0).then_some(def.numa_node),
            map_extra: def.map_extra,
        }
    }
}

/// Creates the maps of `defs` (map-in-maps after the rest), sized by `sizes` where it
/// names them; a map pinned by name under `pin_root` is reused, or created and pinned
/// ([`super::pin`]).
///
/// # Errors
/// [`ConfigError::UnknownMap`] for a name of `sizes` that is no map of `defs` (or a global
/// data map, sized by its section); as [`map_spec`] and [`Map::create_with`].
pub(crate) fn create_maps(
    defs: &[MapDef<'_>],
    object_name: &str,
    btf: &MapBtf<'_, '_>,
    sizes: &BTreeMap<String, u32>,
    pin_root: Option<&std::path::Path>,
) -> Result<Vec<Map>> {
    let sizable = || defs.iter().filter(|d| !d.kind.is_internal());
    if let Some(name) = sizes
        .keys()
        .find(|n| !sizable().any(|d| d.name == n.as_str()))
    {
        return Err(Error::Config(ConfigError::UnknownMap {
            name: name.clone(),
            maps: sizable()
                .map(|d| format!("{} (max_entries {})", d.name, d.max_entries))
                .collect(),
        }));
    }
    let mut maps: Vec<Option<Map>> = defs.iter().map(|_| None).collect();
    // Plain maps first, so every map-in-map finds its inner template created.
    for inner_pass in [false, true] {
        for i in 0..defs.len() {
            let Some(def) = defs.get(i) else { continue };
            if inner_of(def).is_some() != inner_pass {
                continue;
            }
            let spec = map_spec(def, object_name, sizes)?;
            // A BTF-defined map-in-map: its inner definition is a template created for
            // the occasion (closed once the outer map holds its copy).
            let btf_inner = match def.inner {
                Some(inner) => {
                    let a = inner.attrs;
                    let ispec = MapSpec {
                        name: format!("{}.inner", spec.name),
                        map_type: a.map_type,
                        key_size: a.key_size,
                        value_size: a.value_size,
                        max_entries: a.max_entries,
                        map_flags: a.map_flags,
                    };
                    Some(Map::create(&ispec, None)?)
                }
                None => None,
            };
            let inner = match (inner_of(def), btf_inner.as_ref()) {
                (_, Some(m)) => Some(m),
                (Some(j), None) => Some(maps.get(j as usize).and_then(Option::as_ref).ok_or_else(
                    || Error::InnerMap {
                        map: def.name.to_owned(),
                        inner: j,
                    },
                )?),
                (None, None) => None,
            };
            // Pinned by name: the pinned map when it is this one, else a new one pinned.
            let pin = super::pin::pin_path(def, pin_root);
            let reused = match &pin {
                Some(path) => {
                    let shape = super::pin::Shape {
                        name: &spec.name,
                        map_type: spec.map_type,
                        key_size: spec.key_size,
                        value_size: spec.value_size,
                        max_entries: spec.max_entries,
                        map_flags: spec.map_flags,
                    };
                    super::pin::reuse(&shape, path)?
                }
                None => None,
            };
            let m = match reused {
                Some((fd, max_entries)) => Map::from_fd(&spec.name, fd, max_entries),
                None => {
                    let m = Map::create_with(&spec, inner, &btf.extra(def))?;
                    if let Some(path) = &pin {
                        super::pin::pin(m.name(), m.as_fd(), path)?;
                    }
                    m
                }
            };
            if let Some(slot) = maps.get_mut(i) {
                *slot = Some(m);
            }
        }
    }
    Ok(maps.into_iter().flatten().collect())
}

/// Writes the initial values of global data maps (`.rodata`, `.data`, `.kconfig`) and
/// freezes the read-only ones, as libbpf does.
///
/// `values` (indexed like `defs`, from [`super::globals`]) replaces a map's initial value
/// where it has one (`--set`), a `.bss` map's too.
pub(crate) fn init_data_maps(
    defs: &[MapDef<'_>],
    maps: &[Map],
    kconfig: Option<&[u8]>,
    values: &[Option<Vec<u8>>],
) -> Result<()> {
    for (i, (def, map)) in defs.iter().zip(maps).enumerate() {
        let set = values.get(i).and_then(Option::as_deref);
        let initial = match (def.kind, set) {
            (MapKind::Kconfig, _) => kconfig.unwrap_or_default(),
            (MapKind::Rodata | MapKind::Data | MapKind::Bss, Some(v)) => v,
            (MapKind::Rodata | MapKind::Data, None) => def.initial,
            _ => continue,
        };
        let mut value = vec![0u8; def.value_size as usize];
        let n = initial.len().min(value.len());
        if let (Some(d), Some(s)) = (value.get_mut(..n), initial.get(..n)) {
            d.copy_from_slice(s);
        }
        map.update_bytes(&0u32.to_ne_bytes(), &value, UpdateMode::Any)?;
        if matches!(def.kind, MapKind::Rodata | MapKind::Kconfig) {
            map.freeze()?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
#[path = "map_fake_tests.rs"]
mod tests_fake;
