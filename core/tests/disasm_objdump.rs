//! Instruction decoding against `llvm-objdump -d` (LLVM 14) over every fixture object.
//!
//! For every `*.o` under `tests/bpf/` (both byte orders), every executable section is
//! decoded by us and disassembled by llvm-objdump. For each instruction llvm prints:
//!
//! 1. the raw bytes llvm shows must be our `Insn::to_bytes` of what we decoded (both slots
//!    of an `ld_imm64`), at the same instruction index;
//! 2. llvm's text must equal our decoded fields rendered in LLVM 14's syntax (`render`
//!    below), so opcode, registers, offset and immediate all agree;
//! 3. where LLVM 14 prints `<unknown>` (it cannot decode `BPF_ST`, `JSET`, and the 32-bit
//!    atomics other than add), the instruction must be one of exactly those, and our
//!    decoder must accept it; those are covered by the kernel goldens instead.
//!
//! For little-endian objects `Object::open` must give the same instructions for every
//! program as the section bytes.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use sluice_core::disasm::{validate, InsnFmt};
use sluice_core::elf::Elf;
use sluice_core::insn::opcode::*;
use sluice_core::object::{Object, ObjectStorage};
use sluice_core::Insn;

fn objdump() -> &'static str {
    for tool in ["llvm-objdump-14", "llvm-objdump"] {
        if Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            return tool;
        }
    }
    panic!("llvm-objdump (LLVM 14) is needed by this test and was not found on PATH");
}

/// One line of llvm's listing.
struct Line {
    index: usize,
    bytes: Vec<u8>,
    text: String,
}

/// llvm's listing, per section name.
fn llvm_listing(tool: &str, path: &Path) -> HashMap<String, Vec<Line>> {
    let out = Command::new(tool).arg("-d").arg(path).output().unwrap();
    assert!(out.status.success(), "{tool} failed on {}", path.display());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut sections: HashMap<String, Vec<Line>> = HashMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("Disassembly of section ") {
            let name = name.strip_suffix(':').unwrap().to_owned();
            sections.entry(name.clone()).or_default();
            current = Some(name);
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() != 3 || !fields[0].trim_end().ends_with(':') {
            continue;
        }
        let Ok(index) = fields[0].trim().trim_end_matches(':').parse() else {
            continue;
        };
        let bytes = fields[1]
            .split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).unwrap());
        // drop the `<LBB0_3>` / `<func+0x18>` target annotation
        let text = match fields[2].rsplit_once(" <") {
            Some((t, label)) if label.ends_with('>') && !label.contains(' ') => t,
            _ => fields[2],
        };
        let text = text.to_owned();
        let section = current
            .as_ref()
            .expect("instruction before any section header");
        sections.get_mut(section).unwrap().push(Line {
            index,
            bytes: bytes.collect(),
            text,
        });
    }
    sections
}

fn mem(reg: u8, off: i16) -> String {
    if off < 0 {
        format!("r{reg} - {}", -i32::from(off))
    } else {
        format!("r{reg} + {off}")
    }
}

fn bits(i: &Insn) -> u32 {
    u32::from(i.size_bytes()) * 8
}

/// Our decoded instruction in LLVM 14's BPF assembly syntax, or `None` where LLVM 14
/// prints `<unknown>`.
fn render(i: &Insn, hi: Option<&Insn>) -> Option<String> {
    let (d, s, off, imm) = (i.dst(), i.src(), i.off(), i.imm());
    let jmp_off = if off < 0 {
        format!("{off}")
    } else {
        format!("+{off}")
    };
    Some(match i.class() {
        ALU | ALU64 => {
            let r = if i.class() == ALU { 'w' } else { 'r' };
            let op = match i.op() {
                ADD => "+=",
                SUB => "-=",
                MUL => "*=",
                DIV => "/=",
                OR => "|=",
                AND => "&=",
                LSH => "<<=",
                RSH => ">>=",
                MOD => "%=",
                XOR => "^=",
                MOV => "=",
                ARSH => "s>>=",
                NEG => return Some(format!("{r}{d} = -{r}{d}")),
                END => {
                    let e = if i.source() == TO_BE { "be" } else { "le" };
                    return Some(format!("r{d} = {e}{imm} r{d}"));
                }
                _ => return None,
            };
            if i.source() == X {
                format!("{r}{d} {op} {r}{s}")
            } else {
                format!("{r}{d} {op} {imm}")
            }
        }
        LDX => format!("r{d} = *(u{} *)({})", bits(i), mem(s, off)),
        STX if i.mode() == MEM => format!("*(u{} *)({}) = r{s}", bits(i), mem(d, off)),
        STX if i.mode() == ATOMIC => {
            let (m, b) = (mem(d, off), bits(i));
            let lock = |op: &str| format!("lock *(u{b} *)({m}) {op} r{s}");
            let dw = i.size() == DW;
            match imm {
                // LLVM 14 knows only add among the 32-bit atomics, and decodes a 32-bit
                // fetch_add as the plain add (it ignores BPF_FETCH there)
                ATOMIC_ADD => lock("+="),
                x if x == ATOMIC_ADD | FETCH && !dw => lock("+="),
                _ if !dw => return None,
                ATOMIC_OR => lock("|="),
                ATOMIC_AND => lock("&="),
                ATOMIC_XOR => lock("^="),
                x if dw && x == ATOMIC_ADD | FETCH => {
                    format!("r{s} = atomic_fetch_add((u64 *)({m}), r{s})")
                }
                x if dw && x == ATOMIC_AND | FETCH => {
                    format!("r{s} = atomic_fetch_and((u64 *)({m}), r{s})")
                }
                x if dw && x == ATOMIC_OR | FETCH => {
                    format!("r{s} = atomic_fetch_or((u64 *)({m}), r{s})")
                }
                x if dw && x == ATOMIC_XOR | FETCH => {
                    format!("r{s} = atomic_fetch_xor((u64 *)({m}), r{s})")
                }
                XCHG if dw => format!("r{s} = xchg_64({m}, r{s})"),
                CMPXCHG if dw => format!("r0 = cmpxchg_64({m}, r0, r{s})"),
                _ => return None,
            }
        }
        LD if i.mode() == ABS => format!("r0 = *(u{} *)skb[{imm}]", bits(i)),
        LD if i.mode() == IND => format!("r0 = *(u{} *)skb[r{s}]", bits(i)),
        LD if i.code() == LD_IMM64 => {
            let v = (u64::from(hi?.imm() as u32) << 32) | u64::from(imm as u32);
            format!("r{d} = {} ll", v as i64)
        }
        JMP | JMP32 => {
            let r = if i.class() == JMP32 { 'w' } else { 'r' };
            match (i.class(), i.op()) {
                (JMP, CALL) => return Some(format!("call {imm}")),
                (JMP, EXIT) => return Some("exit".into()),
                (JMP, JA) => return Some(format!("goto {jmp_off}")),
                _ => {}
            }
            let op = match i.op() {
                JEQ => "==",
                JGT => ">",
                JGE => ">=",
                JNE => "!=",
                JSGT => "s>",
                JSGE => "s>=",
                JLT => "<",
                JLE => "<=",
                JSLT => "s<",
                JSLE => "s<=",
                _ => return None, // JSET and the cpu v4 jumps are unknown to LLVM 14
            };
            if i.source() == X {
                format!("if {r}{d} {op} {r}{s} goto {jmp_off}")
            } else {
                format!("if {r}{d} {op} {imm} goto {jmp_off}")
            }
        }
        _ => return None, // ST: LLVM 14 has no BPF_ST instructions
    })
}

#[test]
fn decoding_agrees_with_llvm_objdump() {
    let tool = objdump();
    let objects = common::all_fixtures();
    assert!(!objects.is_empty(), "no fixture objects under tests/bpf");
    let (mut checked, mut unknown, mut programs) = (0usize, 0usize, 0usize);
    let mut failures = Vec::new();
    for path in &objects {
        let bytes = std::fs::read(path).unwrap();
        let elf = Elf::parse(&bytes).unwrap();
        let little = elf.header().is_little_endian();
        let llvm = llvm_listing(tool, path);
        let mut sections = HashMap::new();
        for (_, sh) in elf.sections() {
            if !sh.is_exec() || elf.section_data(&sh).is_empty() {
                continue;
            }
            let name = elf.section_name(&sh);
            let data = elf.section_data(&sh);
            let insns: Vec<Insn> = data
                .chunks_exact(8)
                .map(|c| Insn::from_bytes(c.try_into().unwrap(), little))
                .collect();
            let lines = llvm
                .get(name)
                .unwrap_or_else(|| panic!("{}: llvm skipped section {name}", path.display()));
            let mut next = 0;
            for line in lines {
                let at = format!("{}: {name}: insn {}", path.display(), line.index);
                assert_eq!(line.index, next, "{at}: llvm's numbering is not ours");
                let insn = insns[line.index];
                let hi = insns.get(line.index + 1);
                let mut ours = insn.to_bytes(little).to_vec();
                if insn.is_ld_imm64() {
                    ours.extend(hi.unwrap().to_bytes(little));
                }
                assert_eq!(ours, line.bytes, "{at}: bytes");
                next = line.index + insn.slots();
                match render(&insn, hi) {
                    Some(text) if line.text == "<unknown>" => {
                        failures.push(format!("{at}: llvm <unknown>, we decode {text:?}"))
                    }
                    Some(text) if text != line.text => {
                        failures.push(format!("{at}: ours {text:?}, llvm {:?}", line.text))
                    }
                    Some(_) => checked += 1,
                    None if line.text == "<unknown>" => {
                        // must be one of LLVM 14's known gaps, and valid for us
                        let gap = insn.class() == ST
                            || (insn.is_jmp() && insn.op() == JSET)
                            || (insn.class() == STX && insn.mode() == ATOMIC && insn.size() == W);
                        assert!(gap, "{at}: unexpected llvm <unknown> for {insn:?}");
                        let slot = [insn];
                        assert_eq!(validate(&slot), Ok(()), "{at}");
                        let kernel_text = InsnFmt::new(&slot, 0).unwrap().to_string();
                        assert!(!kernel_text.starts_with("BUG"), "{at}: {kernel_text}");
                        unknown += 1;
                    }
                    None => {
                        failures.push(format!("{at}: no llvm form for {insn:?}: {}", line.text))
                    }
                }
            }
            assert_eq!(
                next,
                insns.len(),
                "{}: {name}: llvm stopped early",
                path.display()
            );
            sections.insert(name, (sh, insns));
        }
        // The open phase sees the same instructions.
        if little == cfg!(target_endian = "little") {
            let mut storage = ObjectStorage::new();
            let obj = Object::open(&bytes, &mut storage).unwrap();
            for prog in obj.programs() {
                // Keyed as llvm-objdump names the section: with the `?` of SEC("?...").
                let (_, insns) = &sections[prog.elf_section_name()];
                let start = prog.offset as usize / 8;
                let ours: Vec<Insn> = prog.insns().collect();
                assert_eq!(
                    ours,
                    insns[start..start + ours.len()],
                    "{}",
                    prog.section_name
                );
                programs += 1;
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 500, "only {checked} instructions compared");
    eprintln!(
        "llvm-objdump: {} objects, {checked} instructions identical, {unknown} unknown to LLVM 14 \
         (ST/JSET/32-bit atomics, covered by the kernel goldens), {programs} programs via Object",
        objects.len()
    );
}
