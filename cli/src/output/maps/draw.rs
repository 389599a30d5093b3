//! A map's entries as text or JSON, histograms drawn as bpftrace draws `hist()`.
//!
//! ```text
//! 12:00:01 syscount.bpf.o data: 2 entries
//!   39: count=1000 total_ns=0
//!   110: count=700 total_ns=0
//! 12:00:01 runqlat.bpf.o hists: 1 entries
//!   0: total 35
//! [0, 2)                 5 |@@@@@@@@                                            |
//! [2, 4)                30 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|
//! ```
//!
//! Keys and values print as their BTF types lay them out ([`super::super::value::Fields`]),
//! a per-CPU value summed (its integers; `--per-cpu` adds each CPU's), entries sorted by
//! value descending (a histogram by its total). JSON: one object per map per dump,
//! `{"type":"map","time":..,"object":..,"map":..,"entries":[{"key":..,"value":..}]}`, a
//! histogram's entries with `"total"` and `"hist":[{"lo":..,"hi":..,"count":..}]`.

use sluice_core::btf::{walk, Btf, Int, Visitor};

use super::super::json::string_into;
use super::super::value::{Fields, Stack};
use super::super::{decimal_into, hex_into};
use super::table::{raw_int, Entry, Leaves, MapTable, Shape};

/// How a dump prints.
#[derive(Clone, Copy, Debug, Default)]
pub struct Style {
    /// JSON instead of text.
    pub json: bool,
    /// Each CPU's value too.
    pub per_cpu: bool,
    /// At most this many entries (the largest).
    pub top: Option<usize>,
}

/// Width of a bar at its longest, as bpftrace's.
const BAR: usize = 52;

/// The time of day `HH:MM:SS` (UTC) of `t`.
#[must_use]
pub fn time_of_day(t: std::time::SystemTime) -> String {
    let s = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
        % 86_400;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// Replaces a walk's integers by the CPUs' sums, in order.
struct Summed<'s, 'v> {
    inner: &'v mut dyn Visitor,
    sums: &'s [i128],
    at: usize,
}

impl Visitor for Summed<'_, '_> {
    fn int(&mut self, name: &str, value: Int, bits: u8) {
        let v = self.sums.get(self.at).map_or(value, |&s| Int::Signed(s));
        self.at += 1;
        self.inner.int(name, v, bits);
    }
    fn bool(&mut self, name: &str, value: bool) {
        self.inner.bool(name, value);
    }
    fn enumerator(&mut self, name: &str, e: Option<&str>, value: Int) {
        self.inner.enumerator(name, e, value);
    }
    fn string(&mut self, name: &str, text: &[u8]) {
        self.inner.string(name, text);
    }
    fn pointer(&mut self, name: &str, value: u64) {
        self.inner.pointer(name, value);
    }
    fn bytes(&mut self, name: &str, bytes: &[u8]) {
        self.inner.bytes(name, bytes);
    }
    fn begin_struct(&mut self, name: &str, union: bool) {
        self.inner.begin_struct(name, union);
    }
    fn end_struct(&mut self) {
        self.inner.end_struct();
    }
    fn begin_array(&mut self, name: &str, len: u32) {
        self.inner.begin_array(name, len);
    }
    fn end_array(&mut self) {
        self.inner.end_array();
    }
}

/// Appends the integer members of histogram entry `e` other than its slots (hardirqs'
/// `count`), ` name=value` each, summed over the CPUs.
fn hist_fields_into(out: &mut String, btf: Option<&Btf<'_>>, t: &MapTable, e: &Entry) {
    let (Some(btf), Shape::Hist { first, n, .. }) = (btf, t.shape) else {
        return;
    };
    let mut l = Leaves::named();
    if walk(btf, t.value_type, t.cpu_value(&e.value, 0), &mut l).is_err() {
        return;
    }
    let names = l.names.unwrap_or_default();
    for (i, (name, v)) in names.iter().zip(&e.sums).enumerate() {
        if !(first..first + n).contains(&i) {
            out.push(' ');
            out.push_str(name);
            out.push('=');
            out.push_str(&v.to_string());
        }
    }
}

/// Appends the value `bytes` of type `id` (0: none) in `btf`; `sums` replace its
/// integers when given. Text fields each start with a space.
fn value_into(
    out: &mut String,
    btf: Option<&Btf<'_>>,
    id: u32,
    bytes: &[u8],
    sums: Option<&[i128]>,
    json: bool,
) {
    let mark = out.len();
    let done = (id != 0)
        .then(|| {
            btf.map(|btf| {
                // Maps print at exit and per interval, not per record: a stack each time.
                let mut stack = Stack::default();
                let mut f = Fields::new(out, json, &mut stack);
                let r = match sums {
                    Some(sums) => walk(
                        btf,
                        id,
                        bytes,
                        &mut Summed {
                            inner: &mut f,
                            sums,
                            at: 0,
                        },
                    ),
                    None => walk(btf, id, bytes, &mut f),
                };
                r.is_ok()
            })
        })
        .flatten()
        .unwrap_or(false);
    if done {
        return;
    }
    out.truncate(mark);
    if !json {
        out.push(' ');
    }
    match sums
        .and_then(<[i128]>::first)
        .copied()
        .or_else(|| raw_int(bytes))
    {
        Some(v) => out.push_str(&v.to_string()),
        None if json => {
            out.push_str("\"0x");
            hex_into(out, bytes);
            out.push('"');
        }
        None => {
            out.push_str("0x");
            hex_into(out, bytes);
        }
    }
}

/// A bucket bound as bpftrace writes it: `1K`, `4M` for multiples of powers of 1024.
fn bound_into(out: &mut String, v: u64) {
    const UNITS: [(u32, char); 6] = [
        (60, 'E'),
        (50, 'P'),
        (40, 'T'),
        (30, 'G'),
        (20, 'M'),
        (10, 'K'),
    ];
    for (shift, unit) in UNITS {
        if v >= 1 << shift && v % (1 << shift) == 0 {
            decimal_into(out, v >> shift);
            out.push(unit);
            return;
        }
    }
    decimal_into(out, v);
}

/// Bucket `i`'s `[lo, hi)`: log2 (slot 0 holds 0 and 1) or linear of `step`.
#[must_use]
pub fn bucket(i: usize, step: Option<u64>) -> (u64, u64) {
    let i = u32::try_from(i).unwrap_or(u32::MAX);
    match step {
        Some(s) => (
            u64::from(i).saturating_mul(s),
            u64::from(i).saturating_add(1).saturating_mul(s),
        ),
        None if i == 0 => (0, 2),
        None => (
            1u64.checked_shl(i).unwrap_or(u64::MAX),
            1u64.checked_shl(i + 1).unwrap_or(u64::MAX),
        ),
    }
}

/// The histogram of `slots` as bpftrace draws it, from the first to the last non-zero
/// bucket.
pub fn hist_into(out: &mut String, slots: &[i128], step: Option<u64>) {
    let first = slots.iter().position(|&c| c != 0);
    let last = slots.iter().rposition(|&c| c != 0);
    let (Some(first), Some(last)) = (first, last) else {
        return;
    };
    let max = slots.iter().copied().max().unwrap_or(1).max(1);
    for (i, &count) in slots.iter().enumerate().take(last + 1).skip(first) {
        let (lo, hi) = bucket(i, step);
        let mut label = String::with_capacity(16);
        label.push('[');
        bound_into(&mut label, lo);
        label.push_str(", ");
        bound_into(&mut label, hi);
        label.push(')');
        let bars = usize::try_from(count.max(0) * BAR as i128 / max).unwrap_or(BAR);
        out.push_str(&format!(
            "{label:<16} {count:>8} |{:<BAR$}|\n",
            "@".repeat(bars)
        ));
    }
}

/// Appends one dump of `t` (its `entries`, read at `time`) in `style`.
pub fn dump_into(out: &mut String, t: &MapTable, entries: &[Entry], time: &str, style: Style) {
    // The BTF parsed once per dump, not per entry.
    let done = t.with_btf(|btf| dump_with(out, t, Some(btf), entries, time, style));
    if done.is_none() {
        dump_with(out, t, None, entries, time, style);
    }
}

fn dump_with(
    out: &mut String,
    t: &MapTable,
    btf: Option<&Btf<'_>>,
    entries: &[Entry],
    time: &str,
    style: Style,
) {
    let shown = style.top.unwrap_or(usize::MAX).min(entries.len());
    let entries = entries.get(..shown).unwrap_or(entries);
    if style.json {
        return json_into(out, t, btf, entries, time, style);
    }
    out.push_str(&format!(
        "{time} {} {}: {} entries\n",
        t.object,
        t.name,
        entries.len()
    ));
    for e in entries {
        out.push(' ');
        value_into(out, btf, t.key_type, &e.key, None, false);
        out.push(':');
        match t.shape {
            Shape::Hist { step, n, .. } => {
                if e.sums.len() > n {
                    // The struct's other members (hardirqs' `count`), without the slots.
                    hist_fields_into(out, btf, t, e);
                }
                let slots = e.slots(t.shape);
                out.push_str(" total ");
                out.push_str(&slots.iter().sum::<i128>().to_string());
                out.push('\n');
                hist_into(out, slots, step);
            }
            _ => {
                value_into(
                    out,
                    btf,
                    t.value_type,
                    t.cpu_value(&e.value, 0),
                    Some(&e.sums),
                    false,
                );
                out.push('\n');
            }
        }
        if style.per_cpu && t.cpus > 1 {
            for cpu in 0..t.cpus {
                out.push_str(&format!("    cpu{cpu}:"));
                value_into(
                    out,
                    btf,
                    t.value_type,
                    t.cpu_value(&e.value, cpu),
                    None,
                    false,
                );
                out.push('\n');
            }
        }
    }
}

fn json_into(
    out: &mut String,
    t: &MapTable,
    btf: Option<&Btf<'_>>,
    entries: &[Entry],
    time: &str,
    style: Style,
) {
    out.push_str("{\"type\":\"map\",\"time\":");
    string_into(out, time);
    out.push_str(",\"object\":");
    string_into(out, &t.object);
    out.push_str(",\"map\":");
    string_into(out, &t.name);
    out.push_str(",\"entries\":[");
    for (n, e) in entries.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        out.push_str("{\"key\":");
        value_into(out, btf, t.key_type, &e.key, None, true);
        out.push_str(",\"value\":");
        value_into(
            out,
            btf,
            t.value_type,
            t.cpu_value(&e.value, 0),
            Some(&e.sums),
            true,
        );
        if let Shape::Hist { step, .. } = t.shape {
            let slots = e.slots(t.shape);
            out.push_str(",\"total\":");
            out.push_str(&slots.iter().sum::<i128>().to_string());
            out.push_str(",\"hist\":[");
            let mut first = true;
            for (i, &count) in slots.iter().enumerate().filter(|(_, &c)| c != 0) {
                let (lo, hi) = bucket(i, step);
                if !first {
                    out.push(',');
                }
                first = false;
                out.push_str(&format!("{{\"lo\":{lo},\"hi\":{hi},\"count\":{count}}}"));
            }
            out.push(']');
        }
        if style.per_cpu && t.cpus > 1 {
            out.push_str(",\"cpus\":[");
            for cpu in 0..t.cpus {
                if cpu > 0 {
                    out.push(',');
                }
                value_into(
                    out,
                    btf,
                    t.value_type,
                    t.cpu_value(&e.value, cpu),
                    None,
                    true,
                );
            }
            out.push(']');
        }
        out.push('}');
    }
    out.push_str("]}\n");
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn histograms_draw_as_bpftrace_does() {
        let mut out = String::new();
        hist_into(&mut out, &[0, 5, 10, 0, 0, 0, 0, 0, 0, 0, 1], None);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 10, "{out}");
        assert_eq!(
            lines[0],
            format!("[2, 4)                  5 |{:<52}|", "@".repeat(26))
        );
        assert_eq!(
            lines[1],
            format!("[4, 8)                 10 |{}|", "@".repeat(52))
        );
        assert!(
            lines[9].starts_with("[1K, 2K)                1 |@@@@@ "),
            "{out}"
        );
        let mut lin = String::new();
        hist_into(&mut lin, &[1, 0, 2], Some(10));
        assert!(lin.starts_with("[0, 10) "), "{lin}");
        assert!(lin.contains("[20, 30) "), "{lin}");
        assert_eq!(bucket(0, None), (0, 2));
        assert_eq!(bucket(20, None), (1 << 20, 1 << 21));
        let mut b = String::new();
        bound_into(&mut b, 3 << 20);
        assert_eq!(b, "3M");
        assert_eq!(
            time_of_day(std::time::UNIX_EPOCH + std::time::Duration::from_secs(3723)),
            "01:02:03"
        );
    }
}
