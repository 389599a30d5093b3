//! The object's BTF in the kernel, and what programs get from it.
//!
//! - [`fixup`]: a copy of `.BTF` the kernel accepts (libbpf's `btf_fixup_datasec`): clang
//!   leaves every DATASEC's size and its variables' offsets 0 in a `.o`; the sizes come
//!   from the ELF sections of the same name, the offsets from the variables' symbols,
//!   `.kconfig`'s from the layout of [`Object::kconfig_externs`] (its extern VARs become
//!   global ones, which the kernel takes); variables are sorted by offset, as the kernel
//!   requires.
//! - [`sanitize`]: kinds the running kernel does not know, replaced as libbpf replaces
//!   them, after probing with a tiny BTF each ([`Features::probe`]):
//!
//!   | kind (kernel) | replaced by |
//!   |---|---|
//!   | VAR, DATASEC (5.2) | INT of 1 byte; STRUCT with one member per variable |
//!   | FUNC, FUNC_PROTO (5.0) | TYPEDEF; ENUM with one enumerator per parameter (unnamed
//!   |   | parameters stay unnamed: kernels before 5.0 take that, today's would not) |
//!   | FUNC with global linkage (5.6) | FUNC with static linkage |
//!   | FLOAT (5.13) | STRUCT of the same size without members |
//!   | DECL_TAG (5.16) | INT of 1 byte |
//!   | TYPE_TAG (5.17) | CONST |
//!   | ENUM64 (6.0) | not replaced (libbpf adds a placeholder type, changing ids): the
//!   |   | object loads without BTF |
//!
//! - [`ext_info`]: `bpf_func_info` / `bpf_line_info` of a linked program: `.BTF.ext` keeps
//!   them per section with byte offsets; each function's records move to where
//!   [`Object::link_layout`] put it, in instructions, after the prologue (whose
//!   instructions count as the program's first line).
//! - [`apply_core`]: CO-RE relocations of every function of a linked program, resolved
//!   against a target BTF (the running kernel's `/sys/kernel/btf/vmlinux`, or a file);
//!   one that cannot be resolved poisons its instruction (`call 0xbad2310`) as libbpf
//!   does, and is reported so a verifier refusal can name its access string.

use crate::error::{Error, Result};
use crate::kernel::errno::bpf_error;
use crate::kernel::features::{enc, Features};
use crate::sys::bpf::{self as sys, LogRequest};
use sluice_core::btf::{
    patch_insn, Btf, BtfExt, CoreResolver, Kind, PatchOutcome, TYPE_HEADER_LEN,
};
use sluice_core::object::{KconfigExtern, LinkedPart, Object};
use sluice_core::Insn;
use std::os::fd::OwnedFd;

/// Default path of the running kernel's BTF.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

fn rd(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map_or(0, u32::from_ne_bytes)
}

fn wr(b: &mut [u8], at: usize, v: u32) {
    if let Some(s) = b.get_mut(at..at + 4) {
        s.copy_from_slice(&v.to_ne_bytes());
    }
}

fn btf_err(source: sluice_core::btf::BtfError) -> Error {
    Error::ObjectBtf { source }
}

/// A parsed copy of a BTF blob: the bytes, and each type's byte offset in them.
struct Layout {
    /// Byte offset of each type's record in the blob (`[id - 1]`).
    records: Vec<usize>,
    kinds: Vec<Kind>,
}

fn layout(bytes: &[u8]) -> Result<Layout> {
    let n = Btf::count_types(bytes).map_err(btf_err)? as usize;
    let mut index = vec![0u32; n];
    let btf = Btf::parse(bytes, &mut index).map_err(btf_err)?;
    let h = btf.header();
    let base = (h.hdr_len + h.type_off) as usize;
    let kinds = btf.types().map(|t| t.kind()).collect();
    Ok(Layout {
        records: index.iter().map(|&o| base + o as usize).collect(),
        kinds,
    })
}

/// A copy of the object's `.BTF` with DATASEC sizes and VAR offsets filled in (see the
/// module docs); `kconfig` is [`Object::kconfig_externs`]. `None` without `.BTF`.
///
/// # Errors
/// [`Error::DatasecSection`] / [`Error::DatasecVariable`] for a DATASEC whose section or a
/// variable whose symbol is missing; [`Error::ObjectBtf`] for BTF that does not parse.
pub fn fixup(obj: &Object<'_, '_>, kconfig: &[KconfigExtern<'_>]) -> Result<Option<Vec<u8>>> {
    let Some(orig) = obj.btf_bytes() else {
        return Ok(None);
    };
    let mut bytes = orig.to_vec();
    let l = layout(&bytes)?;
    let mut index = vec![0u32; l.records.len()];
    let btf = Btf::parse(orig, &mut index).map_err(btf_err)?;
    let kconfig_size = kconfig.iter().map(|e| e.offset + e.size).max().unwrap_or(0);
    let hidden = hidden_functions(obj);
    for (i, kind) in l.kinds.iter().enumerate() {
        if *kind == Kind::Func && !hidden.is_empty() {
            // A `__hidden` global function (usdt.bpf.h's bpf_usdt_arg) is verified as a
            // static one, as libbpf marks it: the verifier then checks it in its callers'
            // context (a global function is checked alone, its pointer arguments maybe
            // NULL).
            let name = btf.ty(i as u32 + 1).map_or("", |t| t.name());
            let rec = l.records.get(i).copied().unwrap_or(0);
            let info = rd(&bytes, rec + 4);
            if info & 0xffff == BTF_FUNC_GLOBAL && hidden.contains(&name) {
                wr(&mut bytes, rec + 4, info & !0xffff);
            }
            continue;
        }
        if *kind != Kind::Datasec {
            continue;
        }
        let Some(t) = btf.ty(i as u32 + 1) else {
            continue;
        };
        let sec = t.name();
        let rec = l.records.get(i).copied().unwrap_or(0);
        let is_kconfig = sec == ".kconfig";
        if sec == ".ksyms" {
            continue; // refused at relocation: no kfuncs / ksyms yet
        }
        let mut size = t.size_or_type();
        if is_kconfig {
            size = kconfig_size;
        } else if size == 0 {
            size = obj
                .section_size_by_name(sec)
                .and_then(|s| u32::try_from(s).ok())
                .filter(|&s| s > 0)
                .ok_or_else(|| Error::DatasecSection {
                    datasec: sec.to_owned(),
                })?;
        }
        wr(&mut bytes, rec + 8, size);
        let mut vars: Vec<[u32; 3]> = Vec::new();
        for v in t.datasec_vars() {
            let name = btf.ty(v.type_id).map(|x| x.name()).unwrap_or("");
            if is_kconfig {
                // The kernel takes no extern VARs: libbpf makes them global allocated ones.
                if let Some(&var_rec) = l.records.get((v.type_id as usize).wrapping_sub(1)) {
                    wr(&mut bytes, var_rec + TYPE_HEADER_LEN, 1);
                }
            }
            let offset = if is_kconfig {
                kconfig
                    .iter()
                    .find(|e| e.name == name)
                    .map_or(v.offset, |e| e.offset)
            } else if t.size_or_type() == 0 {
                // Functions of a DATASEC (none in practice) have no object symbol.
                match obj.variable_offset(name) {
                    Some(o) => u32::try_from(o).unwrap_or(u32::MAX),
                    None => {
                        return Err(Error::DatasecVariable {
                            datasec: sec.to_owned(),
                            variable: name.to_owned(),
                        })
                    }
                }
            } else {
                v.offset
            };
            vars.push([v.type_id, offset, v.size]);
        }
        vars.sort_by_key(|v| v[1]);
        for (k, v) in vars.iter().enumerate() {
            let at = rec + TYPE_HEADER_LEN + k * 12;
            wr(&mut bytes, at, v[0]);
            wr(&mut bytes, at + 4, v[1]);
            wr(&mut bytes, at + 8, v[2]);
        }
    }
    Ok(Some(bytes))
}

/// `BTF_FUNC_GLOBAL` (a FUNC's linkage, its `vlen`).
const BTF_FUNC_GLOBAL: u32 = 1;
/// `STV_HIDDEN` (`st_other & 3`).
const STV_HIDDEN: u8 = 2;

/// The names of `obj`'s global functions of hidden visibility (`__hidden`).
fn hidden_functions<'a>(obj: &Object<'a, '_>) -> Vec<&'a str> {
    let elf = obj.elf();
    let mut names = Vec::new();
    for (index, _) in elf
        .sections()
        .filter(|(_, sh)| sh.sh_type == sluice_core::elf::SHT_SYMTAB)
    {
        let Ok(table) = elf.symbol_table(index) else {
            continue;
        };
        for (_, sym) in table.iter() {
            if sym.kind() == sluice_core::elf::STT_FUNC
                && sym.bind() != sluice_core::elf::STB_LOCAL
                && sym.other & 3 == STV_HIDDEN
            {
                if let Some(name) = table.name(&sym) {
                    names.push(name);
                }
            }
        }
    }
    names
}

/// Replaces in `bytes` (a whole BTF blob) the kinds `f` says the kernel lacks; see the
/// module docs. Returns how many types changed.
///
/// # Errors
/// [`Error::ObjectBtf`] for BTF that does not parse, [`Error::Enum64Unsupported`] for ENUM64
/// on a kernel without it.
pub fn sanitize(bytes: &mut [u8], f: &Features) -> Result<usize> {
    let l = layout(bytes)?;
    let mut changed = 0;
    for (i, kind) in l.kinds.iter().enumerate() {
        let rec = l.records.get(i).copied().unwrap_or(0);
        let info = rd(bytes, rec + 4);
        let vlen = info & 0xffff;
        let new_info = match kind {
            Kind::Var if !f.datasec => {
                // INT of 1 byte: the linkage word becomes the INT encoding (8 bits).
                wr(bytes, rec + 8, 1);
                wr(bytes, rec + 12, 8);
                Some(enc(1, 0, 0))
            }
            Kind::Datasec if !f.datasec => {
                // STRUCT: each (type, offset, size) entry becomes (name, type, bit offset).
                for k in 0..vlen as usize {
                    let at = rec + TYPE_HEADER_LEN + k * 12;
                    let (ty, off) = (rd(bytes, at), rd(bytes, at + 4));
                    let name = l
                        .records
                        .get((ty as usize).wrapping_sub(1))
                        .map_or(0, |&r| rd(bytes, r));
                    wr(bytes, at, name);
                    wr(bytes, at + 4, ty);
                    wr(bytes, at + 8, off.saturating_mul(8));
                }
                // A DATASEC name (".data") is no C identifier: drop it.
                wr(bytes, rec, 0);
                Some(enc(4, vlen, 0))
            }
            Kind::FuncProto if !f.func => {
                // ENUM of 4 bytes (libbpf: the parameters are read as enumerators).
                wr(bytes, rec + 8, 4);
                Some(enc(6, vlen, 0))
            }
            Kind::Func if !f.func => Some(enc(8, 0, 0)),
            Kind::Func if !f.func_global && vlen != 0 => Some(enc(12, 0, 0)),
            Kind::Float if !f.float => {
                wr(bytes, rec, 0);
                Some(enc(4, 0, 0))
            }
            Kind::DeclTag if !f.decl_tag => {
                wr(bytes, rec, 0);
                wr(bytes, rec + 8, 1);
                wr(bytes, rec + 12, 8);
                Some(enc(1, 0, 0))
            }
            Kind::TypeTag if !f.type_tag => {
                wr(bytes, rec, 0);
                Some(enc(10, 0, 0))
            }
            Kind::Enum64 if !f.enum64 => return Err(Error::Enum64Unsupported),
            _ => None,
        };
        if let Some(n) = new_info {
            wr(bytes, rec + 4, n);
            changed += 1;
        }
    }
    Ok(changed)
}

/// Loads a BTF blob (`BPF_BTF_LOAD`); on refusal, again with a log for the error.
///
/// # Errors
/// [`Error::BtfRefused`] with the kernel's BTF log; [`Error::Permission`] / [`Error::Unsupported`].
pub fn load(bytes: &[u8]) -> Result<OwnedFd> {
    let (r, _) = sys::btf_load(bytes, None);
    match r {
        Ok(fd) => Ok(fd),
        Err(errno) => {
            let mut buf = vec![0u8; 1 << 20];
            let (_, _) = sys::btf_load(
                bytes,
                Some(LogRequest {
                    buf: &mut buf,
                    level: 1,
                }),
            );
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            let log = String::from_utf8_lossy(buf.get(..end).unwrap_or_default());
            match bpf_error(
                "bpf(BPF_BTF_LOAD)",
                "",
                errno,
                Some(("BPF_BTF_LOAD".into(), "4.18")),
            ) {
                Error::Syscall { errno, .. } => Err(Error::BtfRefused {
                    errno,
                    log: log.into_owned(),
                }),
                e => Err(e),
            }
        }
    }
}

/// `func_info` and `line_info` of a linked program, in instruction units of the
/// instructions [`Object::relocate`] wrote (after `prologue_len` prologue instructions).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExtInfo {
    /// `bpf_func_info { insn_off, type_id }`.
    pub func_info: Vec<[u32; 2]>,
    /// `bpf_line_info { insn_off, file_name_off, line_off, line_col }`.
    pub line_info: Vec<[u32; 4]>,
}

/// Places the `.BTF.ext` records of every function of a linked program; see the module
/// docs.
#[must_use]
pub fn ext_info(
    obj: &Object<'_, '_>,
    ext: &BtfExt<'_>,
    parts: &[LinkedPart],
    prologue_len: usize,
) -> ExtInfo {
    let mut out = ExtInfo::default();
    for part in parts {
        let Some(p) = obj.programs().get(part.program) else {
            continue;
        };
        let lo = u64::from(p.offset);
        let hi = lo + (p.insn_count() * 8) as u64;
        let main = part.start == 0;
        let place = |off: u32| -> Option<u32> {
            let off = u64::from(off);
            if off < lo || off >= hi {
                return None;
            }
            let at = (off - lo) / 8;
            // The program's first record covers the prologue too.
            let shift = if main && at == 0 { 0 } else { prologue_len };
            u32::try_from(at as usize + part.start + shift).ok()
        };
        if let Some(sec) = ext.func_info().section(p.elf_section_name()) {
            for r in sec.records() {
                if let Some(at) = place(r.insn_off) {
                    out.func_info.push([at, r.type_id]);
                }
            }
        }
        if let Some(sec) = ext.line_info().section(p.elf_section_name()) {
            for r in sec.records() {
                if let Some(at) = place(r.insn_off) {
                    out.line_info
                        .push([at, r.file_name_off, r.line_off, r.line_col]);
                }
            }
        }
    }
    out
}

/// A CO-RE relocation that could not be resolved: its instruction was poisoned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Poisoned {
    /// Instruction index in the linked program (prologue included).
    pub insn: usize,
    /// What libbpf would print: kind, local type, access string and why.
    pub what: String,
}

/// Applies the CO-RE relocations of every function of a linked program to `insns` (the
/// output of [`Object::relocate`], `prologue_len` instructions of prologue first).
/// Returns the poisoned instructions.
///
/// # Errors
/// [`Error::CoreRelocation`] naming the relocation for one that cannot be applied at all (an
/// instruction that is not what the compiler should have written).
pub fn apply_core(
    obj: &Object<'_, '_>,
    ext: &BtfExt<'_>,
    resolver: &CoreResolver<'_, '_, '_>,
    parts: &[LinkedPart],
    prologue_len: usize,
    insns: &mut [Insn],
) -> Result<Vec<Poisoned>> {
    let mut poisoned = Vec::new();
    for part in parts {
        let Some(p) = obj.programs().get(part.program) else {
            continue;
        };
        let Some(sec) = ext.core_relos().section(p.elf_section_name()) else {
            continue;
        };
        let lo = u64::from(p.offset);
        let hi = lo + (p.insn_count() * 8) as u64;
        for (i, relo) in sec.records().enumerate() {
            let off = u64::from(relo.insn_off);
            if off < lo || off >= hi {
                continue;
            }
            let at = prologue_len + part.start + ((off - lo) / 8) as usize;
            let name = p.name.unwrap_or(p.section_name);
            let res =
                resolver
                    .resolve(i as u32, &relo)
                    .map_err(|source| Error::CoreRelocation {
                        program: name.to_owned(),
                        index: i,
                        source,
                    })?;
            let outcome = patch_insn(insns, at, &res).map_err(|source| Error::CoreRelocation {
                program: name.to_owned(),
                index: i,
                source,
            })?;
            if matches!(outcome, PatchOutcome::Poisoned { .. }) || res.poison.is_some() {
                let why = res.poison.map(|e| e.to_string()).unwrap_or_default();
                poisoned.push(Poisoned {
                    insn: at,
                    what: format!(
                        "CO-RE relocation #{i} of '{name}' ({} of '{}', access '{}') could not be resolved: {why}",
                        res.kind.name(),
                        res.type_name,
                        res.access,
                    ),
                });
            }
        }
    }
    Ok(poisoned)
}
