//! The objects' maps as metric families, read at each scrape through their dup'd fds on
//! the server's thread (never the drain's): each map `OBJECT_MAP` (sanitised), one sample
//! per key, labelled by the key's BTF fields (a `comm` char array a `comm` label, an enum
//! its enumerator's name, an integer its value, a scalar key `key`).
//!
//! - A value with one integer (or a raw 1..8-byte value): a counter `OBJECT_MAP`.
//! - A struct value with several integer members: a counter per member,
//!   `OBJECT_MAP_MEMBER` (nested members `OBJECT_MAP_OUTER_INNER`).
//! - A histogram ([`Shape::Hist`]): a Prometheus histogram, `_bucket{le=...}` at each slot's
//!   largest integer (`2^(i+1) - 1`; linear `(i+1)*STEP - 1`), `+Inf`, `_count`; no `_sum`,
//!   which the slots cannot tell.
//!
//! Per-CPU values are summed; what `--clear` removed stays in the totals
//! ([`MapTable::totals`]), so counters only grow.

use std::sync::Arc;

use sluice_core::btf::{walk, Btf, Int, Visitor};

use super::exposition::{sanitize, Encoder, Family, Kind};
use crate::output::hex_into;
use crate::output::maps::table::{raw_int, Leaves};
use crate::output::maps::{MapTable, Shape};

/// One map's families.
#[derive(Debug)]
pub struct MapFamily {
    table: Arc<MapTable>,
    /// `OBJECT_MAP`.
    name: String,
    /// The value's integer members' names (walk order) when there are several.
    members: Vec<String>,
}

impl MapFamily {
    /// The families of `table`.
    #[must_use]
    pub fn new(table: Arc<MapTable>) -> MapFamily {
        let object = table.object.as_str();
        let object = object
            .strip_suffix(".bpf.o")
            .or_else(|| object.strip_suffix(".o"))
            .unwrap_or(object);
        let object = object.rsplit('/').next().unwrap_or(object);
        let name = sanitize(&format!("{object}_{}", table.name));
        let members = match table.shape {
            Shape::Fields => table
                .with_btf(|btf| {
                    let zeros = vec![0u8; table.value_size()];
                    let mut l = Leaves::named();
                    let _ = walk(btf, table.value_type, &zeros, &mut l);
                    l.names.unwrap_or_default()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let members = if members.len() > 1 {
            members
        } else {
            Vec::new()
        };
        MapFamily {
            table,
            name,
            members,
        }
    }

    fn labels(&self, btf: Option<&Btf<'_>>, key: &[u8]) -> Vec<(String, String)> {
        let mut l = Labels::default();
        let walked = self.table.key_type != 0
            && btf.is_some_and(|btf| walk(btf, self.table.key_type, key, &mut l).is_ok());
        if !walked {
            l.out.clear();
            let mut v = String::new();
            match raw_int(key) {
                Some(n) => v.push_str(&n.to_string()),
                None => {
                    v.push_str("0x");
                    hex_into(&mut v, key);
                }
            }
            l.out.push(("key".into(), v));
        }
        l.out
    }
}

fn counter(n: i128) -> u64 {
    u64::try_from(n.max(0)).unwrap_or(u64::MAX)
}

impl Family for MapFamily {
    fn encode(&self, encoder: &mut Encoder<'_>) {
        // The BTF parsed once per scrape, not per key.
        if self
            .table
            .with_btf(|btf| self.encode_with(Some(btf), encoder))
            .is_none()
        {
            self.encode_with(None, encoder);
        }
    }
}

impl MapFamily {
    fn encode_with(&self, btf: Option<&Btf<'_>>, encoder: &mut Encoder<'_>) {
        let entries = match self.table.totals() {
            Ok(e) => e,
            Err(e) => {
                log::warn!("map {}: {e}", self.table.name);
                return;
            }
        };
        let help = format!("BPF map {} of {}", self.table.name, self.table.object);
        if let Shape::Hist { step, .. } = self.table.shape {
            encoder.family(&self.name, &help, Kind::Histogram);
            let mut slots = Vec::new();
            for entry in &entries {
                slots.clear();
                slots.extend(
                    entry
                        .slots(self.table.shape)
                        .iter()
                        .enumerate()
                        .map(|(i, &c)| {
                            let hi = crate::output::maps::draw::bucket(i, step).1;
                            (hi.saturating_sub(1), counter(c))
                        }),
                );
                encoder.histogram(&self.labels(btf, &entry.key), &slots);
            }
            return;
        }
        if self.members.is_empty() {
            encoder.family(&self.name, &help, Kind::Counter);
            for entry in &entries {
                let Some(&v) = entry.sums.first() else {
                    continue;
                };
                encoder.counter(&self.labels(btf, &entry.key), counter(v));
            }
            return;
        }
        let labels: Vec<_> = entries.iter().map(|e| self.labels(btf, &e.key)).collect();
        for (i, member) in self.members.iter().enumerate() {
            let name = sanitize(&format!("{}_{member}", self.name));
            encoder.family(&name, &help, Kind::Counter);
            for (entry, labels) in entries.iter().zip(&labels) {
                let v = entry.sums.get(i).copied().unwrap_or(0);
                encoder.counter(labels, counter(v));
            }
        }
    }
}

/// A key's fields as labels.
#[derive(Debug, Default)]
struct Labels {
    out: Vec<(String, String)>,
    path: Vec<String>,
    /// Elements seen in the innermost array (their index names them).
    index: Vec<Option<u32>>,
}

impl Labels {
    fn put(&mut self, name: &str, value: String) {
        let mut parts: Vec<String> = self
            .path
            .iter()
            .filter(|p| !p.is_empty())
            .cloned()
            .collect();
        if let Some(Some(i)) = self.index.last_mut() {
            parts.push(i.to_string());
            *i += 1;
        }
        if !name.is_empty() {
            parts.push(name.to_owned());
        }
        let label = if parts.is_empty() {
            "key".to_owned()
        } else {
            sanitize(&parts.join("_"))
        };
        self.out.push((label, value));
    }
}

impl Visitor for Labels {
    fn int(&mut self, name: &str, value: Int, _: u8) {
        let v = match value {
            Int::Signed(i) => i.to_string(),
            Int::Unsigned(u) => u.to_string(),
        };
        self.put(name, v);
    }
    fn bool(&mut self, name: &str, value: bool) {
        self.put(name, value.to_string());
    }
    fn enumerator(&mut self, name: &str, e: Option<&str>, value: Int) {
        let v = match (e, value) {
            (Some(e), _) => e.to_owned(),
            (None, Int::Signed(i)) => i.to_string(),
            (None, Int::Unsigned(u)) => u.to_string(),
        };
        self.put(name, v);
    }
    fn string(&mut self, name: &str, text: &[u8]) {
        self.put(name, String::from_utf8_lossy(text).into_owned());
    }
    fn pointer(&mut self, name: &str, value: u64) {
        self.put(name, format!("{value:#x}"));
    }
    fn bytes(&mut self, name: &str, bytes: &[u8]) {
        let mut v = String::from("0x");
        hex_into(&mut v, bytes);
        self.put(name, v);
    }
    fn begin_struct(&mut self, name: &str, _: bool) {
        self.path.push(name.to_owned());
        self.index.push(None);
    }
    fn end_struct(&mut self) {
        self.path.pop();
        self.index.pop();
    }
    fn begin_array(&mut self, name: &str, _: u32) {
        self.path.push(name.to_owned());
        self.index.push(Some(0));
    }
    fn end_array(&mut self) {
        self.path.pop();
        self.index.pop();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn key_fields_become_labels() {
        let mut l = Labels::default();
        l.begin_struct("", false);
        l.int("pid", Int::Unsigned(7), 32);
        l.string("comm", b"cat");
        l.enumerator("op", Some("MOUNT"), Int::Unsigned(0));
        l.end_struct();
        assert_eq!(
            l.out,
            vec![
                ("pid".into(), "7".into()),
                ("comm".into(), "cat".into()),
                ("op".into(), "MOUNT".into())
            ]
        );
        let mut s = Labels::default();
        s.int("", Int::Unsigned(39), 32);
        assert_eq!(s.out, vec![("key".into(), "39".into())]);
    }
}
