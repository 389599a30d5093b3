//! Every prologue shape sluice generates for x86_64 passes the running kernel's verifier,
//! as the start of a `BPF_PROG_TYPE_KPROBE` program whose body uses every value and the
//! restored context. Loading needs no kprobe support, only `bpf()`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use sluice_core::arch::Arch;
use sluice_core::disasm::Listing;
use sluice_core::insn::opcode::{ADD, DW};
use sluice_core::insn::reg::{R0, R1, R2};
use sluice_core::perf::abi::prog_type;
use sluice_core::probe::{parse, Section};
use sluice_core::prologue::{
    from_typed_args, ArgLoc, ArgLocs, Base, Memory, Prologue, MAX_DEREFS, MAX_INSNS,
};
use sluice_core::Insn;
use sluice_runtime::load::{self, LoadLog, ProgramLoad};

/// `r0 = r2 + ... + r(1+n) + *(u64 *)(r1 + 0); exit`: reads every value and the context.
fn body(n: usize) -> Vec<Insn> {
    let mut v = vec![Insn::mov64_imm(R0, 0)];
    for j in 0..n {
        v.push(Insn::alu64_reg(ADD, R0, R2 + j as u8));
    }
    v.push(Insn::ldx_mem(DW, R2, R1, 0));
    v.push(Insn::alu64_reg(ADD, R0, R2));
    v.push(Insn::exit());
    v
}

/// Loads prologue + body; on refusal panics with the verifier log and the listing.
fn verify(what: &str, locs: &ArgLocs<'_>) -> usize {
    let p: Prologue = Prologue::generate(locs).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut insns = p.insns().to_vec();
    insns.extend(body(locs.len()));
    let load = ProgramLoad {
        name: "prologue_test",
        prog_type: prog_type::KPROBE,
        insns: &insns,
        license: "GPL",
        kern_version: sluice_runtime::kernel::version::running_kernel_version().unwrap_or(0),
        btf: None,
        attach: Default::default(),
    };
    match load::program(
        &load,
        &LoadLog::Always {
            level: 1,
            size: 1 << 16,
        },
    ) {
        Ok(_) => p.len(),
        Err(e) => panic!("{what}: refused: {e}\nlisting:\n{}", Listing::new(&insns)),
    }
}

/// A base for argument `i` of a shape, cycling through every kind.
fn base(i: usize, depth: usize) -> Base {
    let x = Arch::X86_64;
    match (i + depth) % 5 {
        0 => Base::Reg(x.reg("di").unwrap()),
        1 => Base::Reg(x.reg("r12").unwrap()),
        2 => Base::Stack(8),
        3 => Base::Addr(0xffff_ffff_81a2_0160),
        _ => Base::Const(0x1234_5678_9abc),
    }
}

fn arg(i: usize, depth: usize, size: u8, signed: bool) -> ArgLoc<'static> {
    let mut a = ArgLoc::new(base(i, depth), size, signed).unwrap();
    for d in 0..depth {
        a = a.deref([248, 104, -16, 0][d % 4]).unwrap();
    }
    a
}

#[test]
fn every_shape_passes_the_verifier() {
    if !common::kernel("every_shape_passes_the_verifier") {
        return;
    }
    let mut loaded = 0;
    let mut longest = 0;
    for memory in [Memory::Kernel, Memory::User] {
        for n in 1..=4usize {
            for depth in 0..=4usize {
                for (size, signed) in [1u8, 2, 4, 8]
                    .into_iter()
                    .flat_map(|s| [(s, false), (s, true)])
                {
                    // No $err, then $err at every position that still fits r2..r5.
                    let err_positions: Vec<Option<usize>> = std::iter::once(None)
                        .chain((n < 4).then_some(0..=n).into_iter().flatten().map(Some))
                        .collect();
                    for err in err_positions {
                        let mut locs = ArgLocs::new(Arch::X86_64, memory);
                        for i in 0..n {
                            // Vary depth and size per argument too.
                            let d = (depth + i) % 5;
                            let (sz, sg) = if i == 0 {
                                (size, signed)
                            } else {
                                ([8, 4, 2, 1][i], i % 2 == 0)
                            };
                            locs.push(arg(i, d, sz, sg)).unwrap();
                        }
                        if let Some(pos) = err {
                            locs.insert_err(pos).unwrap();
                        }
                        let what = format!("{memory:?} n={n} depth={depth} size={size} signed={signed} err={err:?}");
                        longest = longest.max(verify(&what, &locs));
                        loaded += 1;
                    }
                }
            }
        }
    }
    eprintln!("{loaded} prologues accepted by the verifier; longest {longest} insns");
    assert!(loaded > 500);
}

#[test]
fn the_longest_prologue_passes_the_verifier() {
    if !common::kernel("the_longest_prologue_passes_the_verifier") {
        return;
    }
    // Four arguments, each with the most dereferences and a base that reads, and $err...
    // which makes five values: $err must replace one.
    let mut locs = ArgLocs::new(Arch::X86_64, Memory::Kernel);
    for i in 0..3 {
        let mut a = ArgLoc::new(Base::Addr(0xffff_ffff_8000_0000 + i), 2, true).unwrap();
        for d in 0..MAX_DEREFS {
            a = a.deref(8 * d as i32 + 1).unwrap();
        }
        locs.push(a).unwrap();
    }
    locs.push_err().unwrap();
    let n = verify("longest", &locs);
    assert!(n <= MAX_INSNS, "{n} > {MAX_INSNS}");
    eprintln!("longest real prologue: {n} insns (MAX_INSNS {MAX_INSNS})");
}

#[test]
fn typed_specs_pass_the_verifier() {
    if !common::kernel("typed_specs_pass_the_verifier") {
        return;
    }
    let specs = [
        "kprobe/vfs_read(void *, char *buf, unsigned long count)",
        "kprobe/vfs_read(struct file *file, char *buf, size_t count, loff_t *pos)",
        "kprobe/f(char c, short s, int i, long l)",
        "kprobe/f(unsigned char c, unsigned short s, unsigned int i, unsigned long long l)",
        "kprobe/f+0(s8, s16, s32, s64)",
        "uprobe/bin/true:main(int argc, char **argv)",
        "kprobe/f(%di, $err, %si:s32, %r12:u8)",
        "kprobe/f($stack2:s16, $err)",
        "kprobe/f($arg3:s8, $arg1, $stack, $err)",
        "kretprobe/vfs_read(ret=$retval:s64, $err)",
        "uretprobe/bin/true:main($retval:s32)",
        "kprobe/vfs_read",
    ];
    for spec in specs {
        let Section::Probe(p) = parse(spec).unwrap() else {
            panic!("{spec}: not a probe")
        };
        let locs = from_typed_args(Arch::X86_64, p.kind(), p.args())
            .unwrap_or_else(|e| panic!("{spec}: {e}"));
        verify(spec, &locs);
    }
}
