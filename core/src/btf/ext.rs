//! `.BTF.ext`: per-instruction records the compiler writes beside `.BTF`.
//!
//! Three record lists, each grouped per ELF section (named by an offset into `.BTF`'s
//! string section): `func_info` (the FUNC type of each function start), `line_info` (source
//! file, line and column of instructions) and `core_relo` (CO-RE relocations). Every list
//! starts with its record size: readers take the fields they know from the start of each
//! record and skip the rest, so newer, longer records still read.
//!
//! Instruction offsets (`insn_off`) are in bytes from the start of the ELF section, as the
//! compiler writes them; divide by 8 for an instruction index.

use super::error::{BtfError, BtfResult};
use super::header::{endian_of, get_u32, rd32};
use super::types::Strings;
use super::Btf;
use super::CoreReloKind;
use scroll::Endian;

/// Bytes of the `.BTF.ext` header up to and including the line_info fields; `core_relo`
/// fields follow when `hdr_len` is at least 32.
pub const BTF_EXT_HEADER_LEN: u32 = 24;

/// The validated `.BTF.ext` header (`struct btf_ext_header`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[doc(alias = "btf_ext_header")]
pub struct ExtHeader {
    /// Whether the section is little-endian.
    pub little_endian: bool,
    /// `version` (1).
    pub version: u8,
    /// `flags`.
    pub flags: u8,
    /// `hdr_len`: offsets count from here.
    pub hdr_len: u32,
    /// `func_info_off`, `func_info_len`.
    pub func_info: (u32, u32),
    /// `line_info_off`, `line_info_len`.
    pub line_info: (u32, u32),
    /// `core_relo_off`, `core_relo_len` (0, 0 when `hdr_len` < 32).
    pub core_relo: (u32, u32),
}

/// One record type of a `.BTF.ext` list.
pub trait ExtRecord: Sized + Copy {
    /// Smallest record size that holds the fields this reader takes.
    const MIN_SIZE: u32;
    /// What the list is called in errors.
    const WHAT: &'static str;
    /// Reads the record at the start of `rec` (at least `MIN_SIZE` bytes).
    fn read(rec: &[u8], endian: Endian) -> Self;
    /// Checks offsets and ids against the `.BTF` the record refers to.
    ///
    /// # Errors
    /// A message saying which field is out of range.
    fn check(&self, btf: &Btf<'_>) -> Result<(), &'static str>;
}

/// `struct bpf_func_info`: the function starting at `insn_off` has FUNC type `type_id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[doc(alias = "bpf_func_info")]
pub struct FuncInfo {
    /// Byte offset of the function's first instruction in its section.
    pub insn_off: u32,
    /// Its FUNC type.
    pub type_id: u32,
}

impl ExtRecord for FuncInfo {
    const MIN_SIZE: u32 = 8;
    const WHAT: &'static str = "func_info";
    fn read(rec: &[u8], endian: Endian) -> Self {
        FuncInfo {
            insn_off: rd32(rec, 0, endian),
            type_id: rd32(rec, 4, endian),
        }
    }
    fn check(&self, btf: &Btf<'_>) -> Result<(), &'static str> {
        match btf.ty(self.type_id) {
            Some(t) if t.kind() == super::Kind::Func => Ok(()),
            _ => Err("func_info type is not a FUNC"),
        }
    }
}

/// `struct bpf_line_info`: source position of the instruction at `insn_off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[doc(alias = "bpf_line_info")]
pub struct LineInfo {
    /// Byte offset of the instruction in its section.
    pub insn_off: u32,
    /// String offset of the source file name.
    pub file_name_off: u32,
    /// String offset of the source line's text.
    pub line_off: u32,
    /// `line_col`: line number << 10 | column.
    pub line_col: u32,
}

impl LineInfo {
    /// Line number.
    #[must_use]
    pub fn line(&self) -> u32 {
        self.line_col >> 10
    }

    /// Column.
    #[must_use]
    pub fn column(&self) -> u32 {
        self.line_col & 0x3ff
    }
}

impl ExtRecord for LineInfo {
    const MIN_SIZE: u32 = 16;
    const WHAT: &'static str = "line_info";
    fn read(rec: &[u8], endian: Endian) -> Self {
        LineInfo {
            insn_off: rd32(rec, 0, endian),
            file_name_off: rd32(rec, 4, endian),
            line_off: rd32(rec, 8, endian),
            line_col: rd32(rec, 12, endian),
        }
    }
    fn check(&self, btf: &Btf<'_>) -> Result<(), &'static str> {
        let n = btf.strings_len();
        if self.file_name_off as usize >= n || self.line_off as usize >= n {
            return Err("line_info string offset outside the string section");
        }
        Ok(())
    }
}

/// `struct bpf_core_relo`: a CO-RE relocation of the instruction at `insn_off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[doc(alias = "bpf_core_relo")]
pub struct CoreRelo {
    /// Byte offset of the instruction in its section.
    pub insn_off: u32,
    /// Local root type id.
    pub type_id: u32,
    /// String offset of the access string (`0:1:2`).
    pub access_str_off: u32,
    /// What to compute.
    pub kind: CoreReloKind,
}

impl ExtRecord for CoreRelo {
    const MIN_SIZE: u32 = 16;
    const WHAT: &'static str = "core_relo";
    fn read(rec: &[u8], endian: Endian) -> Self {
        CoreRelo {
            insn_off: rd32(rec, 0, endian),
            type_id: rd32(rec, 4, endian),
            access_str_off: rd32(rec, 8, endian),
            kind: CoreReloKind::from_u32(rd32(rec, 12, endian)),
        }
    }
    fn check(&self, btf: &Btf<'_>) -> Result<(), &'static str> {
        if self.type_id > btf.type_count() {
            return Err("core_relo type id out of range");
        }
        if btf.string(self.access_str_off).is_none() {
            return Err("core_relo access string outside the string section or not UTF-8");
        }
        if self.insn_off % 8 != 0 {
            return Err("core_relo insn_off not a multiple of 8");
        }
        Ok(())
    }
}

/// A validated `.BTF.ext` section.
#[derive(Clone, Copy, Debug)]
pub struct BtfExt<'a> {
    header: ExtHeader,
    endian: Endian,
    strings: Strings<'a>,
    func_info: &'a [u8],
    line_info: &'a [u8],
    core_relo: &'a [u8],
}

impl<'a> BtfExt<'a> {
    /// Validates `data` (a whole `.BTF.ext` section) against `btf` (the `.BTF` of the same
    /// object, whose string section the records name): header, every list's record size,
    /// every section block's extent and name, every record's string offsets and type ids.
    ///
    /// # Errors
    /// [`BtfError::Truncated`], [`BtfError::BadHeader`] or [`BtfError::BadExt`] with the
    /// offset in `data`.
    pub fn parse(data: &'a [u8], btf: &Btf<'a>) -> BtfResult<Self> {
        let endian = endian_of(data)?;
        let trunc = |what, offset, len| BtfError::Truncated { what, offset, len };
        let word = |off: usize| get_u32(data, off, endian);
        let hdr_len = word(4).ok_or(trunc(".BTF.ext header", 0, 8))?;
        if hdr_len < BTF_EXT_HEADER_LEN {
            return Err(BtfError::BadHeader {
                what: ".BTF.ext hdr_len shorter than 24",
                value: hdr_len,
            });
        }
        if hdr_len as usize > data.len() {
            return Err(trunc(".BTF.ext header (hdr_len)", 0, hdr_len));
        }
        let version = data.get(2).copied().unwrap_or(0);
        if version != 1 {
            return Err(BtfError::BadHeader {
                what: ".BTF.ext version is not 1",
                value: u32::from(version),
            });
        }
        let pair = |off: usize| (word(off).unwrap_or(0), word(off + 4).unwrap_or(0));
        let header = ExtHeader {
            little_endian: endian.is_little(),
            version,
            flags: data.get(3).copied().unwrap_or(0),
            hdr_len,
            func_info: pair(8),
            line_info: pair(16),
            core_relo: if hdr_len >= 32 { pair(24) } else { (0, 0) },
        };
        let body = data.get(hdr_len as usize..).unwrap_or_default();
        let list = |(off, len): (u32, u32), what| -> BtfResult<&'a [u8]> {
            let end = u64::from(off) + u64::from(len);
            if end > body.len() as u64 {
                return Err(trunc(what, hdr_len.saturating_add(off), len));
            }
            if len != 0 && off % 4 != 0 {
                return Err(BtfError::BadExt {
                    what: "record list not 4-byte aligned",
                    offset: hdr_len.saturating_add(off),
                });
            }
            Ok(body.get(off as usize..end as usize).unwrap_or_default())
        };
        let ext = BtfExt {
            header,
            endian,
            strings: Strings(btf.strings.0),
            func_info: list(header.func_info, "func_info")?,
            line_info: list(header.line_info, "line_info")?,
            core_relo: list(header.core_relo, "core_relo")?,
        };
        let base = |(off, _): (u32, u32)| hdr_len.saturating_add(off);
        check_list::<FuncInfo>(ext.func_info, endian, btf, base(header.func_info))?;
        check_list::<LineInfo>(ext.line_info, endian, btf, base(header.line_info))?;
        check_list::<CoreRelo>(ext.core_relo, endian, btf, base(header.core_relo))?;
        Ok(ext)
    }

    /// The header.
    #[must_use]
    pub fn header(&self) -> &ExtHeader {
        &self.header
    }

    /// `func_info` records, per section.
    #[must_use]
    pub fn func_info(&self) -> ExtSections<'a, FuncInfo> {
        ExtSections::new(self.func_info, self.endian, self.strings)
    }

    /// `line_info` records, per section.
    #[must_use]
    pub fn line_info(&self) -> ExtSections<'a, LineInfo> {
        ExtSections::new(self.line_info, self.endian, self.strings)
    }

    /// CO-RE relocations, per section.
    #[must_use]
    pub fn core_relos(&self) -> ExtSections<'a, CoreRelo> {
        ExtSections::new(self.core_relo, self.endian, self.strings)
    }
}

/// Validates one record list: record size, then each section block.
fn check_list<R: ExtRecord>(
    list: &[u8],
    endian: Endian,
    btf: &Btf<'_>,
    base: u32,
) -> BtfResult<()> {
    if list.is_empty() {
        return Ok(());
    }
    let at = |off: usize| base.saturating_add(off as u32);
    let rec_size = get_u32(list, 0, endian).ok_or(BtfError::Truncated {
        what: R::WHAT,
        offset: base,
        len: 4,
    })?;
    if rec_size < R::MIN_SIZE || rec_size % 4 != 0 {
        return Err(BtfError::BadExt {
            what: "record size too small or not a multiple of 4",
            offset: base,
        });
    }
    let mut off = 4usize;
    while off < list.len() {
        let (name_off, n) = match (get_u32(list, off, endian), get_u32(list, off + 4, endian)) {
            (Some(a), Some(b)) => (a, b),
            _ => {
                return Err(BtfError::Truncated {
                    what: "record block header",
                    offset: at(off),
                    len: 8,
                })
            }
        };
        if btf.string(name_off).is_none_or(str::is_empty) {
            return Err(BtfError::BadExt {
                what: "section name offset outside the string section, empty or not UTF-8",
                offset: at(off),
            });
        }
        if n == 0 {
            return Err(BtfError::BadExt {
                what: "section block with no records",
                offset: at(off),
            });
        }
        let start = off + 8;
        let len = u64::from(n) * u64::from(rec_size);
        if start as u64 + len > list.len() as u64 {
            return Err(BtfError::Truncated {
                what: R::WHAT,
                offset: at(start),
                len: u32::try_from(len).unwrap_or(u32::MAX),
            });
        }
        for i in 0..n as usize {
            let r = start + i * rec_size as usize;
            let rec = list.get(r..r + rec_size as usize).unwrap_or_default();
            R::read(rec, endian)
                .check(btf)
                .map_err(|what| BtfError::BadExt {
                    what,
                    offset: at(r),
                })?;
        }
        off = start + len as usize;
    }
    Ok(())
}

/// Iterator over the section blocks of one validated record list.
#[derive(Clone, Debug)]
pub struct ExtSections<'a, R> {
    list: &'a [u8],
    rec_size: u32,
    off: usize,
    endian: Endian,
    strings: Strings<'a>,
    _r: core::marker::PhantomData<R>,
}

impl<'a, R: ExtRecord> ExtSections<'a, R> {
    fn new(list: &'a [u8], endian: Endian, strings: Strings<'a>) -> Self {
        ExtSections {
            list,
            rec_size: get_u32(list, 0, endian).unwrap_or(0),
            off: 4,
            endian,
            strings,
            _r: core::marker::PhantomData,
        }
    }

    /// The records of the section named `name`, if it has any.
    #[must_use]
    pub fn section(self, name: &str) -> Option<ExtSection<'a, R>> {
        self.into_iter().find(|s| s.name_bytes() == name.as_bytes())
    }
}

impl<'a, R: ExtRecord> Iterator for ExtSections<'a, R> {
    type Item = ExtSection<'a, R>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.rec_size == 0 || self.off >= self.list.len() {
            return None;
        }
        let name_off = get_u32(self.list, self.off, self.endian)?;
        let n = get_u32(self.list, self.off + 4, self.endian)?;
        let start = self.off + 8;
        let end = start.checked_add((n as usize).checked_mul(self.rec_size as usize)?)?;
        let records = self.list.get(start..end)?;
        self.off = end;
        Some(ExtSection {
            name_off,
            strings: self.strings,
            records: ExtRecords {
                data: records,
                rec_size: self.rec_size as usize,
                endian: self.endian,
                _r: core::marker::PhantomData,
            },
        })
    }
}

/// The records of one ELF section.
#[derive(Clone, Debug)]
pub struct ExtSection<'a, R> {
    name_off: u32,
    strings: Strings<'a>,
    records: ExtRecords<'a, R>,
}

impl<'a, R: ExtRecord> ExtSection<'a, R> {
    /// The ELF section's name.
    #[must_use]
    pub fn name(&self) -> &'a str {
        self.strings.str(self.name_off)
    }

    /// The ELF section's name as bytes.
    #[must_use]
    pub fn name_bytes(&self) -> &'a [u8] {
        self.strings.bytes(self.name_off)
    }

    /// The name's offset in `.BTF`'s string section.
    #[must_use]
    pub fn name_off(&self) -> u32 {
        self.name_off
    }

    /// The records.
    #[must_use]
    pub fn records(&self) -> ExtRecords<'a, R> {
        self.records.clone()
    }
}

/// Iterator over the records of one section block.
#[derive(Clone, Debug)]
pub struct ExtRecords<'a, R> {
    data: &'a [u8],
    rec_size: usize,
    endian: Endian,
    _r: core::marker::PhantomData<R>,
}

impl<R: ExtRecord> Iterator for ExtRecords<'_, R> {
    type Item = R;
    fn next(&mut self) -> Option<R> {
        let rec = self.data.get(..self.rec_size)?;
        self.data = self.data.get(self.rec_size..).unwrap_or_default();
        Some(R::read(rec, self.endian))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.data.len().checked_div(self.rec_size).unwrap_or(0);
        (n, Some(n))
    }
}

impl<R: ExtRecord> ExactSizeIterator for ExtRecords<'_, R> {}
