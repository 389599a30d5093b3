//! What a program wrote into a BPF ring buffer or a perf event array, decoded by the
//! object's BTF.
//!
//! A record is decoded as the object's struct whose size matches it: exactly for a
//! ring-buffer record, `S..S+7` bytes for a struct of size `S` in a perf event array (perf
//! pads raw samples to 8 bytes). Types that are never records are left out (see
//! [`sluice_core::btf::record_candidates`]). With several candidates or none the record
//! prints raw (hex) and `-v` says which types matched; `--decode MAP=TYPE` chooses
//! (`--decode events='struct event'`), `--decode MAP=raw` keeps the hex. A record shorter
//! than the type chosen for it prints raw and is counted ([`Records::short`]).

use std::collections::BTreeMap;

use sluice_core::btf::{find_c_type, record_candidates, walk, Btf, RecordFit};
use sluice_core::object::ObjectStorage;
use sluice_core::Object;
use sluice_runtime::int_map::FxHashMap;
use sluice_runtime::session::{ObjectSource, Source, SourceKind};

use super::value::{Fields, Stack};

/// What `--decode MAP=...` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// This C type (`struct event`, `union u`, a typedef name).
    Type(String),
    /// Hex, always.
    Raw,
}

/// Parses the value of `--decode`: `MAP=TYPE` or `MAP=raw`.
///
/// # Errors
/// A message when there is no `=` or a side is empty.
pub fn parse_decode(v: &str) -> Result<(String, Choice), String> {
    let (map, ty) = v
        .split_once('=')
        .filter(|(m, t)| !m.trim().is_empty() && !t.trim().is_empty())
        .ok_or_else(|| format!("--decode wants MAP=TYPE or MAP=raw, got '{v}'"))?;
    let choice = if ty.trim() == "raw" {
        Choice::Raw
    } else {
        Choice::Type(ty.trim().to_owned())
    };
    Ok((map.trim().to_owned(), choice))
}

/// The `.BTF` type indices of the objects, made before [`Records`] borrows them.
#[derive(Debug, Default)]
pub struct Indices {
    tables: Vec<Vec<u32>>,
    /// Each object's `.BTF` section, when it has one that parses.
    sections: Vec<Option<(usize, usize)>>,
}

impl Indices {
    /// Finds and sizes each object's `.BTF` (objects without one, or with BTF that does
    /// not parse, decode nothing).
    #[must_use]
    pub fn new(objects: &[ObjectSource]) -> Self {
        let mut me = Indices::default();
        for src in objects {
            let mut storage = ObjectStorage::new();
            let range = Object::open(&src.bytes, &mut storage)
                .ok()
                .and_then(|o| o.btf_bytes())
                .map(|b| {
                    let start = b.as_ptr() as usize - src.bytes.as_ptr() as usize;
                    (start, start + b.len())
                });
            let n = range
                .and_then(|(a, b)| src.bytes.get(a..b))
                .and_then(|b| Btf::count_types(b).ok())
                .unwrap_or(0);
            me.tables.push(vec![0; n as usize]);
            me.sections.push(range);
        }
        me
    }
}

/// How one (source, record length) prints.
#[derive(Clone, Copy, Debug)]
enum Plan {
    /// As type `id` of object `obj`.
    Type { obj: usize, id: u32, size: usize },
    /// As hex.
    Raw,
}

/// The decoder of one session's records.
pub struct Records<'a> {
    btfs: Vec<Option<Btf<'a>>>,
    /// Per source: its object's index and map, for ring buffers and perf event arrays.
    sources: Vec<Option<(usize, String, RecordFit)>>,
    forced: BTreeMap<String, Choice>,
    plans: FxHashMap<(usize, usize), Plan>,
    short: u64,
    /// The walk's nesting, reused by every record.
    stack: Stack,
}

impl std::fmt::Debug for Records<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("sources", &self.sources)
            .field("short", &self.short)
            .finish_non_exhaustive()
    }
}

impl<'a> Records<'a> {
    /// The decoder for `sources` (the session's) of `objects`, with the `--decode`
    /// choices.
    ///
    /// # Errors
    /// A message when a `--decode` map is no ring buffer or perf event array of any
    /// object, or its type is not in that object's BTF.
    pub fn new(
        objects: &'a [ObjectSource],
        indices: &'a mut Indices,
        sources: &[Source],
        decode: &[(String, Choice)],
    ) -> Result<Self, String> {
        let btfs: Vec<Option<Btf<'a>>> = objects
            .iter()
            .zip(indices.tables.iter_mut())
            .zip(&indices.sections)
            .map(|((src, index), range)| {
                let bytes = range.and_then(|(a, b)| src.bytes.get(a..b))?;
                Btf::parse(bytes, index).ok()
            })
            .collect();
        let per_source = sources
            .iter()
            .map(|s| {
                let (map, fit) = match &s.kind {
                    SourceKind::RingBuf { map } => (map, RecordFit::Exact),
                    SourceKind::Output { map } => (map, RecordFit::Padded),
                    SourceKind::Trace { .. } | SourceKind::Hook { .. } => return None,
                };
                let obj = objects.iter().position(|o| o.name == s.object)?;
                Some((obj, map.clone(), fit))
            })
            .collect::<Vec<_>>();
        let mut forced = BTreeMap::new();
        for (map, choice) in decode {
            let users: Vec<usize> = per_source
                .iter()
                .flatten()
                .filter(|(_, m, _)| m == map)
                .map(|(o, _, _)| *o)
                .collect();
            if users.is_empty() {
                return Err(format!(
                    "--decode {map}=...: no ring buffer or perf event array named '{map}'"
                ));
            }
            if let Choice::Type(ty) = choice {
                for &o in &users {
                    let found = btfs
                        .get(o)
                        .and_then(Option::as_ref)
                        .and_then(|b| find_c_type(b, ty));
                    if found.is_none() {
                        let name = objects.get(o).map_or("?", |x| x.name.as_str());
                        return Err(format!(
                            "--decode {map}={ty}: {name} has no type '{ty}' in its BTF"
                        ));
                    }
                }
            }
            forced.insert(map.clone(), choice.clone());
        }
        Ok(Records {
            btfs,
            sources: per_source,
            forced,
            plans: FxHashMap::default(),
            short: 0,
            stack: Stack::default(),
        })
    }

    /// Records shown raw because they were shorter than their type.
    #[must_use]
    pub fn short(&self) -> u64 {
        self.short
    }

    /// Whether a record of `len` bytes of `source` prints on its own line as it is: decoded
    /// (a type chosen for it, the record long enough) or forced raw (`--decode MAP=raw`
    /// means hex, not words beside a probe's sample).
    pub fn stands_alone(&mut self, source: usize, len: usize) -> bool {
        let forced_raw = self
            .sources
            .get(source)
            .and_then(Option::as_ref)
            .is_some_and(|(_, map, _)| self.forced.get(map) == Some(&Choice::Raw));
        forced_raw || matches!(self.plan(source, len), Plan::Type { size, .. } if len >= size)
    }

    /// How a record of `len` bytes of `source` prints (decided once per length).
    fn plan(&mut self, source: usize, len: usize) -> Plan {
        if let Some(p) = self.plans.get(&(source, len)) {
            return *p;
        }
        let p = self.decide(source, len);
        self.plans.insert((source, len), p);
        p
    }

    fn decide(&self, source: usize, len: usize) -> Plan {
        let Some(Some((obj, map, fit))) = self.sources.get(source) else {
            return Plan::Raw;
        };
        let Some(btf) = self.btfs.get(*obj).and_then(Option::as_ref) else {
            return Plan::Raw;
        };
        match self.forced.get(map) {
            Some(Choice::Raw) => return Plan::Raw,
            Some(Choice::Type(ty)) => {
                return match find_c_type(btf, ty) {
                    Some(t) => Plan::Type {
                        obj: *obj,
                        id: t.id(),
                        size: btf.size_of(t.id()).map_or(usize::MAX, |s| s as usize),
                    },
                    None => Plan::Raw,
                }
            }
            None => {}
        }
        let mut ids = [0u32; 8];
        let n = record_candidates(btf, len, *fit, &mut ids);
        if n == 1 {
            if let Some(&id) = ids.first() {
                return Plan::Type {
                    obj: *obj,
                    id,
                    size: btf.size_of(id).map_or(usize::MAX, |s| s as usize),
                };
            }
        }
        let names: Vec<String> = ids
            .iter()
            .take(n.min(ids.len()))
            .filter_map(|&id| btf.ty(id))
            .map(|t| {
                let kw = if t.kind() == sluice_core::btf::Kind::Union {
                    "union"
                } else {
                    "struct"
                };
                format!("{kw} {}", t.name())
            })
            .collect();
        if n == 0 {
            log::info!(
                "{map}: no type of the object's BTF is a record of {len} bytes: printed raw"
            );
        } else {
            log::info!(
                "{map}: a record of {len} bytes may be any of {n} types ({}{}): printed raw; \
                 choose one with --decode {map}=TYPE",
                names.join(", "),
                if n > names.len() { ", ..." } else { "" }
            );
        }
        Plan::Raw
    }

    /// Appends the fields of `raw` (a record of `source`) to `out` — text ` name=value`
    /// each, or a JSON object — and returns `true`; returns `false`, appending nothing,
    /// when it prints raw.
    pub fn fields(&mut self, out: &mut String, source: usize, raw: &[u8], json: bool) -> bool {
        let Plan::Type { obj, id, size } = self.plan(source, raw.len()) else {
            return false;
        };
        if raw.len() < size {
            self.short += 1;
            return false;
        }
        let Some(btf) = self.btfs.get(obj).and_then(Option::as_ref) else {
            return false;
        };
        let before = out.len();
        match walk(btf, id, raw, &mut Fields::new(out, json, &mut self.stack)) {
            Ok(()) => true,
            Err(e) => {
                log::warn!("record of {} bytes: {e}: printed raw", raw.len());
                out.truncate(before);
                false
            }
        }
    }
}
