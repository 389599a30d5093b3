//! `perf script`-like lines: `COMM PID/TID [CPU] SECS.USECS: GROUP:EVENT: field=value ...`.

use super::{
    decimal_into, decimal_len, decimal_padded_into, hex_into, hex_u64_into, quoted_into,
    signed_into, Head, Value,
};

/// Appends `SECS.USECS` of a perf timestamp in nanoseconds.
pub fn timestamp(out: &mut String, ns: Option<u64>) {
    let ns = ns.unwrap_or(0);
    decimal_into(out, ns / 1_000_000_000);
    out.push('.');
    decimal_padded_into(out, (ns % 1_000_000_000) / 1_000, 6);
}

const SPACES: &str = "                ";

/// Appends `n` spaces (at most 16).
fn spaces(out: &mut String, n: usize) {
    out.push_str(SPACES.get(..n).unwrap_or(SPACES));
}

/// Appends `text` padded with spaces to `width` (at most 16), on the left (`right`) or
/// the right.
fn padded(out: &mut String, text: &str, width: usize, right: bool) {
    // Process names are ASCII nearly always: count chars only when they are not.
    let len = if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    };
    let pad = width.saturating_sub(len);
    if right {
        spaces(out, pad);
        out.push_str(text);
    } else {
        out.push_str(text);
        spaces(out, pad);
    }
}

/// Appends an id (`-1` when absent) padded to 6 columns.
fn id(out: &mut String, v: Option<u32>, right: bool) {
    let (len, v) = match v {
        Some(v) => (decimal_len(u64::from(v)), Some(u64::from(v))),
        None => (2, None),
    };
    let pad = 6usize.saturating_sub(len);
    if right {
        spaces(out, pad);
    }
    match v {
        Some(v) => decimal_into(out, v),
        None => out.push_str("-1"),
    }
    if !right {
        spaces(out, pad);
    }
}

/// Appends the line's head: `COMM PID/TID [CPU] SECS.USECS: EVENT:`.
pub fn head(out: &mut String, h: &Head<'_>) {
    padded(out, h.comm, 16, true);
    out.push(' ');
    id(out, h.pid, true);
    out.push('/');
    id(out, h.tid, false);
    out.push_str(" [");
    decimal_padded_into(out, u64::from(h.cpu.unwrap_or(0)), 3);
    out.push_str("] ");
    timestamp(out, h.time);
    out.push_str(": ");
    out.push_str(h.event);
    out.push(':');
}

fn value(out: &mut String, v: &Value) {
    match v {
        Value::Int(i) => signed_into(out, *i),
        Value::UInt(u) => decimal_into(out, *u),
        Value::Hex(h) => hex_u64_into(out, *h),
        Value::Str(s) => quoted_into(out, s),
        Value::Bytes(b) => {
            out.push_str("0x");
            hex_into(out, b);
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

/// Appends a trace sample: the head, then ` name=value` per field (IP first when sampled).
pub fn trace_line(out: &mut String, h: &Head<'_>, ip: Option<u64>, fields: &[(&str, Value)]) {
    head(out, h);
    if let Some(ip) = ip {
        out.push_str(" ip=");
        hex_u64_into(out, ip);
    }
    for (name, v) in fields {
        out.push(' ');
        out.push_str(name);
        out.push('=');
        value(out, v);
    }
}

/// Appends a `bpf_trace_printk` line (`bpf_trace:bpf_trace_printk`): the head, then the
/// text as the program printed it, its trailing newline dropped (an inner one shown as
/// `\\n`, so one call stays one line). Without a text field, as [`trace_line`].
pub fn printk_line(out: &mut String, h: &Head<'_>, fields: &[(&str, Value)]) {
    let Some(text) = fields.iter().find_map(|(_, v)| match v {
        Value::Str(s) => Some(s),
        _ => None,
    }) else {
        return trace_line(out, h, None, fields);
    };
    head(out, h);
    out.push(' ');
    for (i, part) in text.trim_end_matches('\n').split('\n').enumerate() {
        if i > 0 {
            out.push_str("\\n");
        }
        out.push_str(part);
    }
}

/// Appends a bpf-output sample: the head, then the record's fields when `decode` appends
/// them ([`super::records`]), else the map, the size and the bytes in hex.
pub fn output_line(
    out: &mut String,
    h: &Head<'_>,
    map: &str,
    raw: &[u8],
    decode: &mut dyn FnMut(&mut String) -> bool,
) {
    head(out, h);
    if !decode(out) {
        raw_fields(out, map, raw);
    }
}

/// ` map=MAP size=N data=HEX`.
fn raw_fields(out: &mut String, map: &str, raw: &[u8]) {
    out.push_str(" map=");
    out.push_str(map);
    out.push_str(" size=");
    decimal_into(out, raw.len() as u64);
    out.push_str(" data=");
    hex_into(out, raw);
}

/// Appends a ring-buffer record: `ringbuf:MAP:` and its fields when `decode` appends
/// them, else the map, size and hex. A ring-buffer record has no process, CPU or time.
pub fn record_line(
    out: &mut String,
    event: &str,
    map: &str,
    raw: &[u8],
    decode: &mut dyn FnMut(&mut String) -> bool,
) {
    out.push_str(event);
    out.push(':');
    if !decode(out) {
        raw_fields(out, map, raw);
    }
}

/// Appends a bpf-output and the trace sample of the same hit ([`super::pair`]): the trace
/// line, then ` | bpf(MAP): w0 w1 ...`, the payload's words typed by the sample's fields
/// ([`super::pair::words`]), or ` | bpf(MAP): data=HEX` when it is not whole words.
pub fn pair_line(
    out: &mut String,
    trace: (&Head<'_>, Option<u64>),
    fields: &[(&str, Value)],
    map: &str,
    raw: &[u8],
) {
    trace_line(out, trace.0, trace.1, fields);
    out.push_str(" | bpf(");
    out.push_str(map);
    out.push_str("):");
    match super::pair::words(raw, fields) {
        Some(words) => {
            for w in words {
                out.push(' ');
                value(out, &w);
            }
        }
        None => {
            out.push_str(" data=");
            hex_into(out, raw);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn h(event: &str) -> Head<'_> {
        Head {
            comm: "cat",
            pid: Some(12),
            tid: Some(13),
            cpu: Some(1),
            time: Some(1_234_567_891_234),
            event,
        }
    }

    fn line(f: impl FnOnce(&mut String)) -> String {
        let mut s = String::new();
        f(&mut s);
        s
    }

    #[test]
    fn printk_lines_show_the_text_without_its_newline() {
        let ev = "bpf_trace:bpf_trace_printk";
        let fields = [("bpf_string", Value::Str("who exec 12\n".into()))];
        assert_eq!(
            line(|s| printk_line(s, &h(ev), &fields)),
            "             cat     12/13     [001] 1234.567891: bpf_trace:bpf_trace_printk: who exec 12"
        );
        let fields = [("bpf_string", Value::Str("a\nb\n".into()))];
        assert!(line(|s| printk_line(s, &h(ev), &fields)).ends_with(": a\\nb"));
        let fields = [("n", Value::Int(1))];
        assert!(line(|s| printk_line(s, &h(ev), &fields)).ends_with(": n=1"));
    }

    #[test]
    fn lines_look_like_perf_script() {
        let ev = "syscalls:sys_enter_openat";
        assert_eq!(
            line(|s| head(s, &h(ev))),
            "             cat     12/13     [001] 1234.567891: syscalls:sys_enter_openat:"
        );
        let unknown = Head {
            comm: "a-very-long-command-name",
            pid: None,
            tid: Some(1_234_567),
            cpu: Some(123),
            time: Some(5_000),
            event: "e",
        };
        assert_eq!(
            line(|s| head(s, &unknown)),
            format!(
                "{:>16} {:>6}/{:<6} [{:03}] {}: e:",
                "a-very-long-command-name", "-1", 1_234_567, 123, "0.000005"
            )
        );
        let fields = [("dfd", Value::Int(-100)), ("f", Value::Hex(16))];
        assert_eq!(
            line(|s| trace_line(s, &h("e"), Some(0xff), &fields)),
            "             cat     12/13     [001] 1234.567891: e: ip=0xff dfd=-100 f=0x10"
        );
        let fields = [("a", Value::Int(-3)), ("b", Value::UInt(250))];
        let raw = [(-3i64).to_ne_bytes(), 250u64.to_ne_bytes()].concat();
        assert_eq!(
            line(|s| pair_line(s, (&h("e"), None), &fields, "out", &raw)),
            "             cat     12/13     [001] 1234.567891: e: a=-3 b=250 | bpf(out): -3 250"
        );
        assert_eq!(
            line(|s| pair_line(s, (&h("e"), None), &[], "out", b"ab\0")),
            "             cat     12/13     [001] 1234.567891: e: | bpf(out): data=616200"
        );
        // No text guessed from the payload's first bytes.
        assert_eq!(
            line(|s| output_line(s, &h("m"), "m", b"ab\0", &mut |_| false)),
            "             cat     12/13     [001] 1234.567891: m: map=m size=3 data=616200"
        );
        assert_eq!(
            line(|s| record_line(s, "ringbuf:rb", "rb", b"ab\0", &mut |_| false)),
            "ringbuf:rb: map=rb size=3 data=616200"
        );
        assert_eq!(
            line(|s| record_line(s, "ringbuf:rb", "rb", b"ab\0", &mut |o| {
                o.push_str(" a=1");
                true
            })),
            "ringbuf:rb: a=1"
        );
    }
}
