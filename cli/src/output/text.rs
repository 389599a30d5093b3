//! `perf script`-like lines: `COMM PID/TID [CPU] SECS.USECS: GROUP:EVENT: field=value ...`.

use std::fmt::Write as _;

use super::{hex, payload_text, Value};

/// `SECS.USECS` of a perf timestamp in nanoseconds.
pub fn timestamp(ns: Option<u64>) -> String {
    let ns = ns.unwrap_or(0);
    format!("{}.{:06}", ns / 1_000_000_000, (ns % 1_000_000_000) / 1_000)
}

/// The line's head: `COMM PID/TID [CPU] SECS.USECS: EVENT:`.
pub fn head(
    comm: &str,
    pid: Option<u32>,
    tid: Option<u32>,
    cpu: Option<u32>,
    time: Option<u64>,
    event: &str,
) -> String {
    let n = |v: Option<u32>| v.map_or_else(|| "-1".to_owned(), |v| v.to_string());
    format!(
        "{comm:>16} {:>6}/{:<6} [{:03}] {}: {event}:",
        n(pid),
        n(tid),
        cpu.unwrap_or(0),
        timestamp(time)
    )
}

fn value(out: &mut String, v: &Value) {
    match v {
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::UInt(u) => {
            let _ = write!(out, "{u}");
        }
        Value::Hex(h) => {
            let _ = write!(out, "{h:#x}");
        }
        Value::Str(s) => {
            let _ = write!(out, "{s:?}");
        }
        Value::Bytes(b) => {
            let _ = write!(out, "0x{}", hex(b));
        }
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                value(out, item);
            }
            out.push(']');
        }
        Value::Missing => out.push('?'),
    }
}

/// A trace sample: the head, then ` name=value` per field (IP first when sampled).
pub fn trace_line(head: &str, ip: Option<u64>, fields: &[(String, Value)]) -> String {
    let mut s = head.to_owned();
    if let Some(ip) = ip {
        let _ = write!(s, " ip={ip:#x}");
    }
    for (name, v) in fields {
        let _ = write!(s, " {name}=");
        value(&mut s, v);
    }
    s
}

/// A bpf-output sample: the head, the map, the size, the bytes in hex, and the text when
/// the payload starts with printable text.
pub fn output_line(head: &str, map: &str, raw: &[u8]) -> String {
    let mut s = format!("{head} map={map} size={} data={}", raw.len(), hex(raw));
    if let Some(t) = payload_text(raw) {
        let _ = write!(s, " str={t:?}");
    }
    s
}

/// A bpf-output and the trace sample of the same hit ([`super::pair`]): the trace line,
/// then ` | bpf(MAP): w0 w1 ...`, the payload's words typed by the sample's fields
/// ([`super::pair::words`]), or ` | bpf(MAP): data=HEX` when it is not whole words.
pub fn pair_line(trace: &str, map: &str, raw: &[u8], fields: &[(String, Value)]) -> String {
    let mut s = format!("{trace} | bpf({map}):");
    match super::pair::words(raw, fields) {
        Some(words) => {
            for w in &words {
                s.push(' ');
                value(&mut s, w);
            }
        }
        None => {
            let _ = write!(s, " data={}", hex(raw));
        }
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lines_look_like_perf_script() {
        let h = head(
            "cat",
            Some(12),
            Some(13),
            Some(1),
            Some(1_234_567_891_234),
            "syscalls:sys_enter_openat",
        );
        assert_eq!(
            h,
            "             cat     12/13     [001] 1234.567891: syscalls:sys_enter_openat:"
        );
        let l = trace_line(
            "h:",
            None,
            &[
                ("dfd".into(), Value::Int(-100)),
                ("f".into(), Value::Hex(16)),
            ],
        );
        assert_eq!(l, "h: dfd=-100 f=0x10");
        assert_eq!(
            pair_line(
                "h: a=-3 b=250",
                "out",
                &[(-3i64).to_ne_bytes(), 250u64.to_ne_bytes()].concat(),
                &[("a".into(), Value::Int(-3)), ("b".into(), Value::UInt(250))]
            ),
            "h: a=-3 b=250 | bpf(out): -3 250"
        );
        assert_eq!(
            pair_line("h:", "out", b"ab\0", &[]),
            "h: | bpf(out): data=616200"
        );
        assert_eq!(
            output_line("h:", "m", b"ab\0"),
            "h: map=m size=3 data=616200 str=\"ab\""
        );
    }
}
