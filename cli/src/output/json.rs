//! One JSON object per line, hand-serialised (no serde in the binary).

use super::{decimal_into, hex_into, hex_u64_into, signed_into, Head, Value};

/// Appends `s` as a JSON string literal to `out`.
pub fn string_into(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    // Names (events, maps, processes) rarely need escaping: one scan, one copy.
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(s);
        out.push('"');
        return;
    }
    let mut plain = 0;
    // Every byte to escape is ASCII, so a byte scan finds them at char boundaries (bytes
    // of a multi-byte char are all >= 0x80).
    for (i, &b) in s.as_bytes().iter().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            b if b < 0x20 => "",
            _ => continue,
        };
        out.push_str(s.get(plain..i).unwrap_or_default());
        plain = i + 1;
        if escape.is_empty() {
            out.push_str("\\u00");
            hex_into(out, &[b]);
        } else {
            out.push_str(escape);
        }
    }
    out.push_str(s.get(plain..).unwrap_or_default());
    out.push('"');
}

fn value(out: &mut String, v: &Value) {
    match v {
        Value::Int(i) => signed_into(out, *i),
        Value::UInt(u) => decimal_into(out, *u),
        Value::Hex(h) => {
            out.push('"');
            hex_u64_into(out, *h);
            out.push('"');
        }
        Value::Str(s) => string_into(out, s),
        Value::Bytes(b) => {
            out.push('"');
            hex_into(out, b);
            out.push('"');
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
        Value::Missing => out.push_str("null"),
    }
}

fn number(out: &mut String, v: Option<u64>) {
    match v {
        Some(v) => decimal_into(out, v),
        None => out.push_str("null"),
    }
}

fn head(out: &mut String, h: &Head<'_>) {
    out.push_str("{\"type\":\"sample\",\"event\":");
    string_into(out, h.event);
    out.push_str(",\"comm\":");
    string_into(out, h.comm);
    out.push_str(",\"pid\":");
    number(out, h.pid.map(u64::from));
    out.push_str(",\"tid\":");
    number(out, h.tid.map(u64::from));
    out.push_str(",\"cpu\":");
    number(out, h.cpu.map(u64::from));
    out.push_str(",\"time\":");
    number(out, h.time);
}

fn trace_members(out: &mut String, h: &Head<'_>, ip: Option<u64>, fields: &[(&str, Value)]) {
    head(out, h);
    if let Some(ip) = ip {
        out.push_str(",\"ip\":\"");
        hex_u64_into(out, ip);
        out.push('"');
    }
    out.push_str(",\"fields\":{");
    for (i, (name, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string_into(out, name);
        out.push(':');
        value(out, v);
    }
    out.push('}');
}

fn output_members(out: &mut String, h: &Head<'_>, map: &str, raw: &[u8]) {
    head(out, h);
    record_members(out, map, raw, &mut |_| false);
}

/// `,"map":MAP,"size":N,` then `"fields":{...}` when `decode` appends them, else
/// `"data":"HEX"`.
fn record_members(
    out: &mut String,
    map: &str,
    raw: &[u8],
    decode: &mut dyn FnMut(&mut String) -> bool,
) {
    out.push_str(",\"map\":");
    string_into(out, map);
    out.push_str(",\"size\":");
    decimal_into(out, raw.len() as u64);
    out.push_str(",\"fields\":");
    if decode(out) {
        return;
    }
    out.truncate(out.len() - ",\"fields\":".len());
    out.push_str(",\"data\":\"");
    hex_into(out, raw);
    out.push('"');
}

/// Appends a ring-buffer record: `{"type":"record","event":..,"map":..,"size":..}` with
/// `"fields"` (decoded) or `"data"` (hex). It has no process, CPU or time.
pub fn record_line(
    out: &mut String,
    event: &str,
    map: &str,
    raw: &[u8],
    decode: &mut dyn FnMut(&mut String) -> bool,
) {
    out.push_str("{\"type\":\"record\",\"event\":");
    string_into(out, event);
    record_members(out, map, raw, decode);
    out.push('}');
}

/// Appends a trace sample with its decoded fields.
pub fn trace_line(out: &mut String, h: &Head<'_>, ip: Option<u64>, fields: &[(&str, Value)]) {
    trace_members(out, h, ip, fields);
    out.push('}');
}

/// Appends a bpf-output sample, with `"fields"` when `decode` appends them.
pub fn output_line(
    out: &mut String,
    h: &Head<'_>,
    map: &str,
    raw: &[u8],
    decode: &mut dyn FnMut(&mut String) -> bool,
) {
    head(out, h);
    record_members(out, map, raw, decode);
    out.push('}');
}

/// Appends a bpf-output and the trace sample of the same hit ([`super::pair`]):
/// `{"type":"pair","sample":TRACE,"output":OUTPUT}`, the two objects as [`trace_line`] and
/// [`output_line`] make them, the output with `"words"`: its payload typed by the
/// sample's fields ([`super::pair::words`]; `null` when it is not whole words).
pub fn pair_line(
    out: &mut String,
    trace: (&Head<'_>, Option<u64>),
    fields: &[(&str, Value)],
    output: (&Head<'_>, &str),
    raw: &[u8],
) {
    out.push_str("{\"type\":\"pair\",\"sample\":");
    trace_line(out, trace.0, trace.1, fields);
    out.push_str(",\"output\":");
    output_members(out, output.0, output.1, raw);
    out.push_str(",\"words\":");
    match super::pair::words(raw, fields) {
        Some(words) => {
            out.push('[');
            for (i, w) in words.enumerate() {
                if i > 0 {
                    out.push(',');
                }
                value(out, &w);
            }
            out.push(']');
        }
        None => out.push_str("null"),
    }
    out.push_str("}}");
}

/// Appends a LOST record.
pub fn lost_line(out: &mut String, event: &str, cpu: Option<u32>, lost: u64) {
    out.push_str("{\"type\":\"lost\",\"event\":");
    string_into(out, event);
    out.push_str(",\"cpu\":");
    number(out, cpu.map(u64::from));
    out.push_str(",\"lost\":");
    decimal_into(out, lost);
    out.push('}');
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn line(f: impl FnOnce(&mut String)) -> String {
        let mut s = String::new();
        f(&mut s);
        s
    }

    fn string(s: &str) -> String {
        line(|o| string_into(o, s))
    }

    #[test]
    fn strings_escape() {
        assert_eq!(string("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
        assert_eq!(string("é\u{1f}x"), "\"é\\u001fx\"");
        assert_eq!(string(""), "\"\"");
    }

    #[test]
    fn lines() {
        let h = Head {
            comm: "cat",
            pid: Some(1),
            tid: Some(2),
            cpu: Some(0),
            time: Some(5),
            event: "a:b",
        };
        let head = "\"type\":\"sample\",\"event\":\"a:b\",\"comm\":\"cat\",\"pid\":1,\"tid\":2,\"cpu\":0,\"time\":5";
        let x = [("x", Value::List(vec![Value::Int(-1), Value::Missing]))];
        assert_eq!(
            line(|s| trace_line(s, &h, Some(0x10), &x)),
            format!("{{{head},\"ip\":\"0x10\",\"fields\":{{\"x\":[-1,null]}}}}")
        );
        let a = [("a", Value::Int(5))];
        assert_eq!(
            line(|s| pair_line(s, (&h, None), &a, (&h, "m"), &5u64.to_ne_bytes())),
            format!(
                "{{\"type\":\"pair\",\"sample\":{{{head},\"fields\":{{\"a\":5}}}},\
                 \"output\":{{{head},\"map\":\"m\",\"size\":8,\"data\":\"0500000000000000\",\"words\":[5]}}}}"
            )
        );
        assert_eq!(
            line(|s| output_line(s, &h, "m", b"ab\0", &mut |_| false)),
            format!("{{{head},\"map\":\"m\",\"size\":3,\"data\":\"616200\"}}")
        );
        assert_eq!(
            line(|s| record_line(s, "ringbuf:r", "r", b"ab\0", &mut |o| {
                o.push_str("{\"a\":1}");
                true
            })),
            "{\"type\":\"record\",\"event\":\"ringbuf:r\",\"map\":\"r\",\"size\":3,\"fields\":{\"a\":1}}"
        );
        assert_eq!(
            line(|s| lost_line(s, "e", Some(3), 9)),
            "{\"type\":\"lost\",\"event\":\"e\",\"cpu\":3,\"lost\":9}"
        );
    }
}
