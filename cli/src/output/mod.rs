//! Turning session events into lines: `perf script`-like text ([`text`]) or JSON lines
//! ([`json`]); a program's bpf-output and its probe's sample of the same hit side by side
//! ([`pair`]). RAW data is decoded by the event's tracefs `format`; nothing in a sample is
//! trusted (a field that does not fit prints as `?`).

pub mod json;
pub mod pair;
pub mod text;

use std::collections::HashMap;

use sluice_runtime::tracefs::{EventFormat, Field};

/// A decoded field value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A pointer or address, printed in hex.
    Hex(u64),
    /// Text (a `char` array or `__data_loc char[]`), up to its NUL.
    Str(String),
    /// Bytes without a better reading.
    Bytes(Vec<u8>),
    /// Elements of a fixed array.
    List(Vec<Value>),
    /// The field does not fit the RAW data.
    Missing,
}

/// The fields of `raw` laid out by `format`, the `common_*` ones left out.
pub fn decode(format: &EventFormat, raw: &[u8]) -> Vec<(String, Value)> {
    format
        .fields
        .iter()
        .filter(|f| !f.name.starts_with("common_"))
        .map(|f| (f.name.clone(), field_value(f, raw)))
        .collect()
}

fn is_char(f: &Field) -> bool {
    matches!(
        f.c_type.trim_start_matches("const ").trim(),
        "char" | "unsigned char" | "signed char" | "u8" | "s8"
    )
}

fn field_value(f: &Field, raw: &[u8]) -> Value {
    if f.data_loc.is_some() {
        return match f.dynamic(raw) {
            Some(b) if is_char(f) => Value::Str(until_nul(b)),
            Some(b) => Value::Bytes(b.to_vec()),
            None => Value::Missing,
        };
    }
    if let Some(n) = f.array_len {
        let Some(bytes) = f.bytes(raw) else {
            return Value::Missing;
        };
        if is_char(f) {
            return Value::Str(until_nul(bytes));
        }
        let elem = f.size.checked_div(n).unwrap_or(0);
        if !matches!(elem, 1 | 2 | 4 | 8) {
            return Value::Bytes(bytes.to_vec());
        }
        let items = (0..n)
            .map(|i| {
                let one = Field {
                    offset: f.offset.saturating_add(i.saturating_mul(elem)),
                    size: elem,
                    array_len: None,
                    ..f.clone()
                };
                scalar(&one, raw)
            })
            .collect();
        return Value::List(items);
    }
    scalar(f, raw)
}

fn scalar(f: &Field, raw: &[u8]) -> Value {
    let pointer = f.c_type.contains('*');
    if pointer {
        return f.read_u64(raw).map_or(Value::Missing, Value::Hex);
    }
    if f.signed {
        f.read_i64(raw).map_or(Value::Missing, Value::Int)
    } else {
        match f.read_u64(raw) {
            Some(v) => Value::UInt(v),
            None => f
                .bytes(raw)
                .map_or(Value::Missing, |b| Value::Bytes(b.to_vec())),
        }
    }
}

/// The bytes up to the first NUL, as text (invalid UTF-8 replaced).
pub fn until_nul(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(b.get(..end).unwrap_or(b)).into_owned()
}

/// The printable text at the start of a bpf-output payload, if it is one: non-empty,
/// printable ASCII up to a NUL.
pub fn payload_text(b: &[u8]) -> Option<String> {
    let end = b.iter().position(|&c| c == 0)?;
    let text = b.get(..end)?;
    (!text.is_empty() && text.iter().all(|c| (0x20..0x7f).contains(c)))
        .then(|| String::from_utf8_lossy(text).into_owned())
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// Process names by pid, read once from `/proc/PID/comm` (perf learns them from COMM
/// records; a pid gone before its first sample prints as `:PID`, as perf prints unknowns).
#[derive(Debug, Default)]
pub struct Comms {
    names: HashMap<u32, String>,
}

impl Comms {
    /// The name of `tid` (its thread's name, else its process's).
    pub fn get(&mut self, pid: Option<u32>, tid: Option<u32>) -> String {
        let key = tid.or(pid).unwrap_or(0);
        self.names
            .entry(key)
            .or_insert_with(|| {
                let read = |p: u32| {
                    std::fs::read_to_string(format!("/proc/{p}/comm"))
                        .ok()
                        .map(|s| s.trim_end().to_owned())
                };
                tid.and_then(read)
                    .or_else(|| pid.and_then(read))
                    .unwrap_or_else(|| format!(":{key}"))
            })
            .clone()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    const FORMAT: &str = "name: t\nID: 7\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:int nr;\toffset:8;\tsize:4;\tsigned:1;\n\
\tfield:const char * filename;\toffset:16;\tsize:8;\tsigned:0;\n\
\tfield:char comm[8];\toffset:24;\tsize:8;\tsigned:0;\n\
\tfield:__data_loc char[] name;\toffset:32;\tsize:4;\tsigned:0;\n\
\tfield:unsigned long args[2];\toffset:40;\tsize:16;\tsigned:0;\n";

    fn raw() -> Vec<u8> {
        let mut r = vec![0u8; 64];
        r[8..12].copy_from_slice(&(-3i32).to_ne_bytes());
        r[16..24].copy_from_slice(&0xdead_beefu64.to_ne_bytes());
        r[24..28].copy_from_slice(b"cat\0");
        r[40..48].copy_from_slice(&1u64.to_ne_bytes());
        r[48..56].copy_from_slice(&2u64.to_ne_bytes());
        r[56..61].copy_from_slice(b"/etc\0");
        let loc = (5u32 << 16) | 56;
        r[32..36].copy_from_slice(&loc.to_ne_bytes());
        r
    }

    #[test]
    fn fields_decode_by_format() {
        let f = EventFormat::parse(FORMAT).unwrap();
        let got = decode(&f, &raw());
        assert_eq!(
            got,
            vec![
                ("nr".into(), Value::Int(-3)),
                ("filename".into(), Value::Hex(0xdead_beef)),
                ("comm".into(), Value::Str("cat".into())),
                ("name".into(), Value::Str("/etc".into())),
                (
                    "args".into(),
                    Value::List(vec![Value::UInt(1), Value::UInt(2)])
                ),
            ]
        );
    }

    #[test]
    fn short_or_hostile_raw_never_panics() {
        let f = EventFormat::parse(FORMAT).unwrap();
        for len in 0..64 {
            let _ = decode(&f, &raw()[..len]);
        }
        let mut r = raw();
        r[32..36].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert!(decode(&f, &r).contains(&("name".into(), Value::Missing)));
        assert_eq!(decode(&f, &[])[0], ("nr".into(), Value::Missing));
    }

    #[test]
    fn payload_text_only_when_printable() {
        assert_eq!(payload_text(b"/etc/x\0\0").as_deref(), Some("/etc/x"));
        assert_eq!(payload_text(b"\x01\x02\0"), None);
        assert_eq!(payload_text(b"no nul"), None);
        assert_eq!(hex(&[0, 0xab]), "00ab");
    }
}
