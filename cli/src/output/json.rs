//! One JSON object per line, hand-serialised (no serde in the binary).

use std::fmt::Write as _;

use super::{hex, payload_text, Value};

/// A JSON string literal of `s`.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn value(out: &mut String, v: &Value) {
    match v {
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::UInt(u) => {
            let _ = write!(out, "{u}");
        }
        Value::Hex(h) => out.push_str(&string(&format!("{h:#x}"))),
        Value::Str(s) => out.push_str(&string(s)),
        Value::Bytes(b) => out.push_str(&string(&hex(b))),
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

/// The members every sample line starts with.
pub struct Head<'a> {
    /// Process name.
    pub comm: &'a str,
    /// Process id.
    pub pid: Option<u32>,
    /// Thread id.
    pub tid: Option<u32>,
    /// CPU.
    pub cpu: Option<u32>,
    /// Perf timestamp, ns.
    pub time: Option<u64>,
    /// `GROUP:EVENT` or `bpf-output:MAP`.
    pub event: &'a str,
}

fn head(h: &Head<'_>) -> String {
    let n = |v: Option<u32>| v.map_or_else(|| "null".to_owned(), |v| v.to_string());
    format!(
        "{{\"type\":\"sample\",\"event\":{},\"comm\":{},\"pid\":{},\"tid\":{},\"cpu\":{},\"time\":{}",
        string(h.event),
        string(h.comm),
        n(h.pid),
        n(h.tid),
        n(h.cpu),
        h.time.map_or_else(|| "null".to_owned(), |t| t.to_string())
    )
}

/// A trace sample with its decoded fields.
pub fn trace_line(h: &Head<'_>, ip: Option<u64>, fields: &[(String, Value)]) -> String {
    let mut s = head(h);
    if let Some(ip) = ip {
        let _ = write!(s, ",\"ip\":{}", string(&format!("{ip:#x}")));
    }
    s.push_str(",\"fields\":{");
    for (i, (name, v)) in fields.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&string(name));
        s.push(':');
        value(&mut s, v);
    }
    s.push_str("}}");
    s
}

/// A bpf-output sample.
pub fn output_line(h: &Head<'_>, map: &str, raw: &[u8]) -> String {
    let mut s = head(h);
    let _ = write!(
        s,
        ",\"map\":{},\"size\":{},\"data\":{}",
        string(map),
        raw.len(),
        string(&hex(raw))
    );
    if let Some(t) = payload_text(raw) {
        let _ = write!(s, ",\"str\":{}", string(&t));
    }
    s.push('}');
    s
}

/// A bpf-output and the trace sample of the same hit ([`super::pair`]):
/// `{"type":"pair","sample":TRACE,"output":OUTPUT}`, the two lines as [`trace_line`] and
/// [`output_line`] make them, the output with `"words"`: its payload typed by the
/// sample's fields ([`super::pair::words`]; `null` when it is not whole words).
pub fn pair_line(trace: &str, output: &str, raw: &[u8], fields: &[(String, Value)]) -> String {
    let mut words = String::new();
    match super::pair::words(raw, fields) {
        Some(w) => value(&mut words, &Value::List(w)),
        None => words.push_str("null"),
    }
    let output = output.strip_suffix('}').unwrap_or(output);
    format!("{{\"type\":\"pair\",\"sample\":{trace},\"output\":{output},\"words\":{words}}}}}")
}

/// A LOST record.
pub fn lost_line(event: &str, cpu: Option<u32>, lost: u64) -> String {
    format!(
        "{{\"type\":\"lost\",\"event\":{},\"cpu\":{},\"lost\":{lost}}}",
        string(event),
        cpu.map_or_else(|| "null".to_owned(), |c| c.to_string())
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn strings_escape() {
        assert_eq!(string("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
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
        assert_eq!(
            trace_line(&h, None, &[("x".into(), Value::List(vec![Value::Int(-1), Value::Missing]))]),
            "{\"type\":\"sample\",\"event\":\"a:b\",\"comm\":\"cat\",\"pid\":1,\"tid\":2,\"cpu\":0,\"time\":5,\"fields\":{\"x\":[-1,null]}}"
        );
        assert_eq!(
            pair_line(
                "{\"t\":1}",
                "{\"o\":2}",
                &5u64.to_ne_bytes(),
                &[("a".into(), Value::Int(5))]
            ),
            "{\"type\":\"pair\",\"sample\":{\"t\":1},\"output\":{\"o\":2,\"words\":[5]}}"
        );
        assert_eq!(
            lost_line("e", Some(3), 9),
            "{\"type\":\"lost\",\"event\":\"e\",\"cpu\":3,\"lost\":9}"
        );
    }
}
