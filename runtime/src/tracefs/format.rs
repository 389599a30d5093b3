//! An event's `format` file: where each field sits in a sample's RAW data.

/// One field of an event's `format`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Name (`__syscall_nr`, `arg1`, `comm`).
    pub name: String,
    /// C type, without the name and array suffix (`int`, `unsigned long`, `char`).
    pub c_type: String,
    /// Offset in the RAW data.
    pub offset: usize,
    /// Size in the RAW data (the whole array for arrays; 4 for `__data_loc`).
    pub size: usize,
    /// Whether the kernel marks it signed.
    pub signed: bool,
    /// Element count of a fixed array (`char comm[16]`); 0 for a flexible one
    /// (`char buf[]`, size 0).
    pub array_len: Option<usize>,
    /// A `__data_loc` (or `__rel_loc`) field: a u32 `len << 16 | offset` locating
    /// variable-length data.
    pub data_loc: Option<DataLoc>,
}

/// How a dynamic field's u32 locates its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataLoc {
    /// `__data_loc`: the offset is from the start of the RAW data.
    Absolute,
    /// `__rel_loc`: the offset is from the end of this field.
    Relative,
}

impl Field {
    /// The bytes of the field in `raw`, `None` when out of bounds.
    #[must_use]
    pub fn bytes<'a>(&self, raw: &'a [u8]) -> Option<&'a [u8]> {
        raw.get(self.offset..self.offset.checked_add(self.size)?)
    }

    /// The field as an integer (sign-extended when signed), for sizes 1, 2, 4 and 8;
    /// `None` when out of bounds or of another size.
    #[must_use]
    pub fn read_i64(&self, raw: &[u8]) -> Option<i64> {
        let b = self.bytes(raw)?;
        Some(match (b.len(), self.signed) {
            (1, true) => i64::from(i8::from_ne_bytes(b.try_into().ok()?)),
            (1, false) => i64::from(u8::from_ne_bytes(b.try_into().ok()?)),
            (2, true) => i64::from(i16::from_ne_bytes(b.try_into().ok()?)),
            (2, false) => i64::from(u16::from_ne_bytes(b.try_into().ok()?)),
            (4, true) => i64::from(i32::from_ne_bytes(b.try_into().ok()?)),
            (4, false) => i64::from(u32::from_ne_bytes(b.try_into().ok()?)),
            (8, _) => i64::from_ne_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }

    /// The field as an unsigned integer (its bits, zero-extended), sizes 1, 2, 4, 8.
    #[must_use]
    pub fn read_u64(&self, raw: &[u8]) -> Option<u64> {
        let b = self.bytes(raw)?;
        let mut buf = [0u8; 8];
        match b.len() {
            1 | 2 | 4 | 8 if cfg!(target_endian = "little") => {
                buf.get_mut(..b.len())?.copy_from_slice(b)
            }
            1 | 2 | 4 | 8 => buf.get_mut(8 - b.len()..)?.copy_from_slice(b),
            _ => return None,
        }
        Some(u64::from_ne_bytes(buf))
    }

    /// The variable-length data of a `__data_loc`/`__rel_loc` field; `None` when the field
    /// is not one or its location is out of bounds.
    #[must_use]
    pub fn dynamic<'a>(&self, raw: &'a [u8]) -> Option<&'a [u8]> {
        let loc = self.data_loc?;
        let word = u32::from_ne_bytes(self.bytes(raw)?.try_into().ok()?);
        let (off, len) = ((word & 0xffff) as usize, (word >> 16) as usize);
        let start = match loc {
            DataLoc::Absolute => off,
            DataLoc::Relative => self.offset.checked_add(self.size)?.checked_add(off)?,
        };
        raw.get(start..start.checked_add(len)?)
    }
}

/// Largest RAW payload a perf sample can carry: the record header's size is a `u16`, so no
/// field of a recordable event lies past this many bytes. [`EventFormat::parse`] refuses
/// fields that would.
pub const MAX_RECORD_SIZE: usize = u16::MAX as usize;

/// An event's `format` file: its name, id and fields (common ones included).
///
/// A parsed format keeps these promises (checked by [`EventFormat::parse`], relied on by
/// decoders, exercised by the `tracefs_format` fuzz target): every field's
/// `offset + size` is at most [`EventFormat::record_size`], itself at most
/// [`MAX_RECORD_SIZE`]; a `__data_loc`/`__rel_loc` field is 4 bytes and has no
/// `array_len`; a fixed array has a non-zero length dividing its size (`char comm[16]`:
/// 16 elements of 1 byte), or is a flexible array (`char buf[]`, `array_len` 0, size 0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EventFormat {
    /// `name:`.
    pub name: String,
    /// `ID:`.
    pub id: u64,
    /// Every `field:` line, in order.
    pub fields: Vec<Field>,
}

impl EventFormat {
    /// The field called `name`.
    #[must_use]
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The fixed part of the record the format declares: the end of its farthest field
    /// (0 without fields). A RAW payload at least this long holds every field's bytes.
    #[must_use]
    pub fn record_size(&self) -> usize {
        // Offsets and sizes were bounded by `parse`: no overflow.
        self.fields
            .iter()
            .map(|f| f.offset.saturating_add(f.size))
            .max()
            .unwrap_or(0)
    }

    /// Parses the text of a `format` file.
    ///
    /// # Errors
    /// `(line, what)`: the 1-based line of a malformed `field:` entry (or `ID:` line).
    pub fn parse(text: &str) -> Result<Self, (usize, &'static str)> {
        let mut fmt = EventFormat::default();
        for (i, line) in text.lines().enumerate() {
            let line_no = i + 1;
            let t = line.trim();
            if let Some(v) = t.strip_prefix("name:") {
                fmt.name = v.trim().to_owned();
            } else if let Some(v) = t.strip_prefix("ID:") {
                fmt.id = v
                    .trim()
                    .parse()
                    .map_err(|_| (line_no, "ID is not a number"))?;
            } else if t.starts_with("field:") {
                fmt.fields
                    .push(parse_field(t).map_err(|what| (line_no, what))?);
            }
        }
        Ok(fmt)
    }
}

/// `field:TYPE NAME[N];\toffset:O;\tsize:S;\tsigned:B;`
fn parse_field(line: &str) -> Result<Field, &'static str> {
    const MALFORMED: &str = "malformed field line";
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, false);
    for part in line.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once(':').ok_or(MALFORMED)?;
        match key.trim() {
            "field" => decl = Some(value.trim()),
            "offset" => offset = value.trim().parse::<usize>().ok(),
            "size" => size = value.trim().parse::<usize>().ok(),
            "signed" => signed = value.trim() == "1",
            _ => {}
        }
    }
    let decl = decl.ok_or(MALFORMED)?;
    let (ty, name) = decl.rsplit_once(' ').ok_or(MALFORMED)?;
    let (name, array_len) = match name.split_once('[') {
        // `char buf[]`: a flexible array (ftrace's own events).
        Some((n, "]")) => (n, Some(0)),
        Some((n, rest)) => (
            n,
            Some(
                rest.strip_suffix(']')
                    .and_then(|l| l.parse::<usize>().ok())
                    .ok_or(MALFORMED)?,
            ),
        ),
        None => (name, None),
    };
    let (data_loc, ty) = if let Some(t) = ty.strip_prefix("__data_loc ") {
        (Some(DataLoc::Absolute), t)
    } else if let Some(t) = ty.strip_prefix("__rel_loc ") {
        (Some(DataLoc::Relative), t)
    } else {
        (None, ty)
    };
    if name.is_empty() {
        return Err(MALFORMED);
    }
    let (offset, size) = (offset.ok_or(MALFORMED)?, size.ok_or(MALFORMED)?);
    if offset
        .checked_add(size)
        .is_none_or(|end| end > MAX_RECORD_SIZE)
    {
        return Err("field lies past the largest perf record");
    }
    if data_loc.is_some() && size != 4 {
        return Err("__data_loc field is not 4 bytes");
    }
    let array_len = if data_loc.is_some() { None } else { array_len };
    match array_len {
        Some(0) if size != 0 => return Err("flexible array with a size"),
        Some(n) if n != 0 && size % n != 0 => {
            return Err("array size is not a multiple of its length")
        }
        _ => {}
    }
    Ok(Field {
        name: name.to_owned(),
        c_type: ty.trim().trim_end_matches("[]").trim().to_owned(),
        offset,
        size,
        signed,
        array_len,
        data_loc,
    })
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;

    const GETPPID: &str = "name: sys_enter_getppid
ID: 123
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:int __syscall_nr;\toffset:8;\tsize:4;\tsigned:1;
\tfield:char comm[16];\toffset:12;\tsize:16;\tsigned:0;
\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;
\tfield:__rel_loc char[] rel;\toffset:32;\tsize:4;\tsigned:0;

print fmt: \"\", REC->__syscall_nr
";

    #[test]
    fn format_fields() {
        let f = EventFormat::parse(GETPPID).unwrap();
        assert_eq!(
            (f.name.as_str(), f.id, f.fields.len()),
            ("sys_enter_getppid", 123, 8)
        );
        let nr = f.field("__syscall_nr").unwrap();
        assert_eq!(
            (nr.c_type.as_str(), nr.offset, nr.size, nr.signed),
            ("int", 8, 4, true)
        );
        let comm = f.field("comm").unwrap();
        assert_eq!(
            (comm.array_len, comm.size, comm.c_type.as_str()),
            (Some(16), 16, "char")
        );
        let name = f.field("name").unwrap();
        assert_eq!(
            (name.data_loc, name.array_len),
            (Some(DataLoc::Absolute), None)
        );
        assert_eq!(f.field("rel").unwrap().data_loc, Some(DataLoc::Relative));
        assert_eq!(f.field("common_type").unwrap().c_type, "unsigned short");

        let mut raw = vec![0u8; 48];
        raw[8..12].copy_from_slice(&(-5i32).to_ne_bytes());
        raw[28..32].copy_from_slice(&((3u32 << 16) | 40).to_ne_bytes());
        raw[40..43].copy_from_slice(b"abc");
        raw[32..36].copy_from_slice(&((2u32 << 16) | 4).to_ne_bytes()); // 36 + 4 = 40
        assert_eq!(nr.read_i64(&raw), Some(-5));
        assert_eq!(nr.read_u64(&raw), Some(u64::from((-5i32) as u32)));
        assert_eq!(name.dynamic(&raw), Some(&b"abc"[..]));
        assert_eq!(f.field("rel").unwrap().dynamic(&raw), Some(&b"ab"[..]));
        // Out of bounds reads are None, never a panic.
        assert_eq!(nr.read_i64(&raw[..10]), None);
        raw[28..32].copy_from_slice(&((300u32 << 16) | 40).to_ne_bytes());
        assert_eq!(name.dynamic(&raw), None);
        assert_eq!(comm.read_i64(&raw), None);
    }

    #[test]
    fn malformed_format_lines() {
        for bad in [
            "\tfield:int x;\toffset:zz;\tsize:4;\tsigned:1;",
            "\tfield:int;\toffset:0;\tsize:4;",
            "\tfield:int x[;\toffset:0;\tsize:4;",
            "ID: nope",
            // Past the largest perf record, or overflowing.
            "\tfield:int x;\toffset:65535;\tsize:4;\tsigned:1;",
            "\tfield:int x;\toffset:18446744073709551615;\tsize:4;",
            "\tfield:__data_loc char[] s;\toffset:8;\tsize:8;",
            "\tfield:u16 a[3];\toffset:8;\tsize:8;",
            "\tfield:char b[];\toffset:8;\tsize:4;",
        ] {
            assert!(EventFormat::parse(bad).is_err(), "{bad}");
        }
        let line = |s: &str| EventFormat::parse(s).map_err(|(l, _)| l);
        assert_eq!(line("name: x\nID: 1\n\tfield:int;"), Err(3));
    }

    #[test]
    fn record_size_bounds_every_field() {
        let f = EventFormat::parse(GETPPID).unwrap();
        assert_eq!(f.record_size(), 36);
        assert_eq!(EventFormat::default().record_size(), 0);
        // ftrace's own events end with a flexible array.
        let print = "\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n\
                     \tfield:char buf[];\toffset:16;\tsize:0;\tsigned:1;";
        let p = EventFormat::parse(print).unwrap();
        let buf = p.field("buf").unwrap();
        assert_eq!((buf.array_len, buf.size, p.record_size()), (Some(0), 0, 16));
    }

    /// Edge cases of the bounds (and, appended, every crash the `tracefs_format` fuzz
    /// target finds): each must parse or fail without panicking, and a success keeps the
    /// promises of [`EventFormat`].
    const FUZZ_REGRESSIONS: &[&str] = &[
        "field:a b[0];offset:0;size:0;",
        "field:a b[18446744073709551615];offset:0;size:0;",
        "field: b;offset:65531;size:4;",
        "field:__rel_loc x y;offset:65531;size:4;",
    ];

    #[test]
    fn fuzz_regressions_keep_the_promises() {
        for text in FUZZ_REGRESSIONS {
            let Ok(f) = EventFormat::parse(text) else {
                continue;
            };
            let end = f.record_size();
            assert!(end <= MAX_RECORD_SIZE, "{text:?}");
            let raw = vec![0xffu8; end];
            for field in &f.fields {
                assert!(field.offset + field.size <= end, "{text:?}");
                assert!(field.bytes(&raw).is_some(), "{text:?}");
                let _ = (
                    field.read_i64(&raw),
                    field.read_u64(&raw),
                    field.dynamic(&raw),
                );
            }
        }
    }
}
