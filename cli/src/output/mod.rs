//! Turning session events into lines: `perf script`-like text ([`text`]) or JSON lines
//! ([`json`]); a program's bpf-output and its probe's sample of the same hit side by side
//! ([`pair`]). RAW data is decoded by the event's tracefs `format`; what a program wrote
//! (bpf-output, ring buffers) by the object's BTF ([`records`], [`value`]), else shown as
//! hex — never guessed from its first bytes. Nothing in a sample is trusted (a field that
//! does not fit prints as `?`).

pub mod file;
pub mod json;
pub mod maps;
pub mod metrics;
#[cfg(test)]
mod no_alloc;
pub mod pair;
pub mod perf_data;
pub mod records;
pub mod text;
pub mod value;

use sluice_runtime::int_map::FxHashMap;

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

/// A sample's decoded fields: name (borrowed from the event's format) and value.
pub type Fields<'f> = Vec<(&'f str, Value)>;

/// The fields of `raw` laid out by `format`, the `common_*` ones left out.
pub fn decode<'f>(format: &'f EventFormat, raw: &[u8]) -> Fields<'f> {
    format
        .fields
        .iter()
        .filter(|f| !f.name.starts_with("common_"))
        .map(|f| (f.name.as_str(), field_value(f, raw)))
        .collect()
}

/// The members every sample line starts with, in text and in JSON.
#[derive(Clone, Copy, Debug)]
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

/// The lower-case hex of every byte value, two digits each.
// Evaluated at compile time: an index out of range fails the build, never a run.
#[allow(clippy::indexing_slicing)]
const HEX_PAIRS: [[u8; 2]; 256] = {
    let mut t = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = [HEX.as_bytes()[i >> 4], HEX.as_bytes()[i & 0xf]];
        i += 1;
    }
    t
};

/// Appends the lower-case hex of `b` to `out`.
pub fn hex_into(out: &mut String, b: &[u8]) {
    out.reserve(b.len() * 2);
    // Through a stack chunk and one `push_str` each: per-`char` pushes cost as much again;
    // a byte's two digits from one table entry.
    let mut chunk = [[0u8; 2]; 64];
    for part in b.chunks(chunk.len()) {
        for (pair, &x) in chunk.iter_mut().zip(part) {
            *pair = HEX_PAIRS.get(usize::from(x)).copied().unwrap_or(*b"??");
        }
        let ascii = chunk.as_flattened();
        ascii_into(out, ascii.get(..part.len() * 2).unwrap_or_default());
    }
}

/// Appends ASCII bytes (hex digits made here) to `out`.
fn ascii_into(out: &mut String, ascii: &[u8]) {
    out.push_str(std::str::from_utf8(ascii).unwrap_or("?"));
}

/// `00` to `99`: decimal digits two at a time, appended as slices of a `str` (nothing to
/// validate again).
const PAIRS: &str = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

/// The hex digits.
const HEX: &str = "0123456789abcdef";

/// How many decimal digits `v` has.
#[must_use]
pub fn decimal_len(v: u64) -> usize {
    v.checked_ilog10().unwrap_or(0) as usize + 1
}

/// Appends the last `digits` (at most 20) decimal digits of `v`, zero-padded, to `out`.
fn digits_into(out: &mut String, mut v: u64, digits: usize) {
    // Pairs taken from the right by constant divisions (multiplies), printed from the left.
    let mut pairs = [0u8; 10];
    let mut n = 0;
    for slot in pairs.iter_mut().take(digits / 2) {
        *slot = (v % 100) as u8;
        v /= 100;
        n += 1;
    }
    if digits % 2 == 1 {
        let d = (v % 10) as usize;
        out.push_str(PAIRS.get(2 * d + 1..2 * d + 2).unwrap_or("?"));
    }
    for &pair in pairs.iter().take(n).rev() {
        let pair = usize::from(pair);
        out.push_str(PAIRS.get(2 * pair..2 * pair + 2).unwrap_or("??"));
    }
}

/// Appends `v` in decimal to `out` (no `fmt` machinery: this runs per field per sample).
pub fn decimal_into(out: &mut String, v: u64) {
    digits_into(out, v, decimal_len(v));
}

/// Appends `v` in decimal, zero-padded to `width` digits, to `out`.
pub fn decimal_padded_into(out: &mut String, v: u64, width: usize) {
    digits_into(out, v, decimal_len(v).max(width));
}

/// Appends `v` in decimal, with its sign, to `out`.
pub fn signed_into(out: &mut String, v: i64) {
    if v < 0 {
        out.push('-');
    }
    decimal_into(out, v.unsigned_abs());
}

/// Appends `0x` and the shortest lower-case hex of `v` to `out` (as `{:#x}` prints it).
pub fn hex_u64_into(out: &mut String, v: u64) {
    let digits = (64 - v.leading_zeros()).div_ceil(4).max(1) as usize;
    out.push_str("0x");
    for i in (0..digits).rev() {
        let d = ((v >> (i * 4)) & 0xf) as usize;
        out.push_str(HEX.get(d..d + 1).unwrap_or("?"));
    }
}

/// Appends `s` quoted as Rust's `{:?}` writes it: printable ASCII without a quote or a
/// backslash straight into the line, anything else through `fmt`'s escaping.
pub fn quoted_into(out: &mut String, s: &str) {
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        use std::fmt::Write as _;
        let _ = write!(out, "{s:?}");
    }
}

/// Process names by pid, read once from `/proc/PID/comm` (perf learns them from COMM
/// records; a pid gone before its first sample prints as `:PID`, as perf prints unknowns).
#[derive(Debug, Default)]
pub struct Comms {
    names: FxHashMap<u32, String>,
}

impl Comms {
    /// The name of `tid` (its thread's name, else its process's).
    pub fn get(&mut self, pid: Option<u32>, tid: Option<u32>) -> &str {
        let key = tid.or(pid).unwrap_or(0);
        self.names.entry(key).or_insert_with(|| {
            let read = |p: u32| {
                std::fs::read_to_string(format!("/proc/{p}/comm"))
                    .ok()
                    .map(|s| s.trim_end().to_owned())
            };
            tid.and_then(read)
                .or_else(|| pid.and_then(read))
                .unwrap_or_else(|| format!(":{key}"))
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn digits_are_written_as_fmt_writes_them() {
        let mut vals: Vec<u64> = vec![0, 1, 9, 10, 99, 100, 101, 999_999, u64::MAX, u64::MAX - 1];
        vals.extend((0..64).map(|i| 1u64 << i));
        vals.extend((0..20).map(|i| 10u64.pow(i)));
        vals.extend((1..20).map(|i| 10u64.pow(i) - 1));
        for v in vals {
            let mut s = String::new();
            decimal_into(&mut s, v);
            assert_eq!(s, v.to_string());
            s.clear();
            decimal_padded_into(&mut s, v, 6);
            assert_eq!(s, format!("{v:06}"));
            s.clear();
            hex_u64_into(&mut s, v);
            assert_eq!(s, format!("{v:#x}"));
            s.clear();
            let i = v as i64;
            signed_into(&mut s, i);
            assert_eq!(s, i.to_string());
        }
    }

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
                ("nr", Value::Int(-3)),
                ("filename", Value::Hex(0xdead_beef)),
                ("comm", Value::Str("cat".into())),
                ("name", Value::Str("/etc".into())),
                ("args", Value::List(vec![Value::UInt(1), Value::UInt(2)])),
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
        assert!(decode(&f, &r).contains(&("name", Value::Missing)));
        assert_eq!(decode(&f, &[])[0], ("nr", Value::Missing));
    }

    #[test]
    fn quoted_as_debug_quotes() {
        for s in [
            "", "cat", "a b", "a\"b", "a\\b", "tab\t", "é", "\u{7f}", "\u{301}x",
        ] {
            let mut o = String::new();
            quoted_into(&mut o, s);
            assert_eq!(o, format!("{s:?}"));
        }
    }

    #[test]
    fn hex_of_bytes() {
        let mut s = String::new();
        hex_into(&mut s, &[0, 0xab]);
        assert_eq!(s, "00ab");
    }

    #[test]
    fn numbers_print_as_fmt_does() {
        for v in [
            0u64,
            1,
            9,
            10,
            15,
            16,
            255,
            4096,
            0xdead_beef,
            u64::MAX,
            u64::MAX / 3,
        ] {
            let mut s = String::new();
            decimal_into(&mut s, v);
            assert_eq!(s, v.to_string());
            s.clear();
            hex_u64_into(&mut s, v);
            assert_eq!(s, format!("{v:#x}"));
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX, -4096] {
            let mut s = String::new();
            signed_into(&mut s, v);
            assert_eq!(s, v.to_string());
        }
    }
}
