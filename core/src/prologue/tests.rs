use std::format;
use std::string::{String, ToString};
use std::vec::Vec;

use super::*;
use crate::arch::Arch;
use crate::probe::{parse, ProbeKind, Section};
use crate::{Error, Insn, Result};

fn x86(name: &str) -> Base {
    Base::Reg(Arch::X86_64.reg(name).unwrap())
}

fn listing(p: &Prologue) -> Vec<String> {
    p.to_string().lines().map(String::from).collect()
}

fn typed(arch: Arch, spec: &str) -> Result<ArgLocs<'_>> {
    let Section::Probe(p) = parse(spec).unwrap() else {
        panic!("{spec}")
    };
    let kind = p.kind();
    // The spec borrows `spec`; rebuild the Args from it to return with its lifetime.
    from_typed_args(arch, kind, p.args())
}

#[test]
fn the_seed_example_reads_like_perfs_listing_and_fetch_args() {
    // a_ops=file->f_mapping->a_ops bytes offset, as perf resolved them on x86_64.
    let mut locs = ArgLocs::new(Arch::X86_64, Memory::Kernel);
    let a_ops = ArgLoc::new(x86("di"), 8, false)
        .unwrap()
        .named("a_ops")
        .deref(248)
        .unwrap()
        .deref(104)
        .unwrap();
    locs.push(a_ops).unwrap();
    locs.push(ArgLoc::new(x86("r12"), 8, false).unwrap().named("bytes"))
        .unwrap();
    locs.push(ArgLoc::new(x86("cx"), 8, false).unwrap().named("offset"))
        .unwrap();
    let got: Vec<String> = locs
        .fetched()
        .enumerate()
        .map(|(i, l)| l.fetch_arg(i + 1).to_string())
        .collect();
    assert_eq!(
        got,
        [
            "a_ops=+104(+248(%di)):u64",
            "bytes=%r12:u64",
            "offset=%cx:u64"
        ]
    );
    let p: Prologue = Prologue::generate(&locs).unwrap();
    let want = [
        "bpf_prologue: insn num=23",
        "(bf) r6 = r1",
        "(79) r3 = *(u64 *)(r6 +112)",
        "(07) r3 += 248",
        "(bf) r1 = r10",
        "(07) r1 += -8",
        "(b7) r2 = 8",
        "(85) call bpf_probe_read_kernel#113",
        "(55) if r0 != 0x0 goto pc+11",
        "(79) r3 = *(u64 *)(r10 -8)",
        "(07) r3 += 104",
        "(bf) r1 = r10",
        "(07) r1 += -8",
        "(b7) r2 = 8",
        "(85) call bpf_probe_read_kernel#113",
        "(55) if r0 != 0x0 goto pc+4",
        "(79) r2 = *(u64 *)(r10 -8)",
        "(79) r3 = *(u64 *)(r6 +24)",
        "(79) r4 = *(u64 *)(r6 +88)",
        "(05) goto pc+3",
        "(b7) r2 = 0",
        "(b7) r3 = 0",
        "(b7) r4 = 0",
        "(bf) r1 = r6",
    ];
    assert_eq!(listing(&p), want);
}

#[test]
fn no_r7_to_r9_and_r10_only_read() {
    for memory in [Memory::Kernel, Memory::User] {
        for n in 1..=4usize {
            let mut locs = ArgLocs::new(Arch::X86_64, memory);
            for i in 0..n {
                let mut a =
                    ArgLoc::new(Base::Stack(8 * i as i32), [1, 2, 4, 8][i], i % 2 == 1).unwrap();
                for d in 0..i {
                    a = a.deref(d as i32 * 8).unwrap();
                }
                locs.push(a).unwrap();
            }
            if n < 4 {
                locs.insert_err(0).unwrap();
            }
            let p: Prologue = Prologue::generate(&locs).unwrap();
            let insns = p.insns();
            assert_eq!(insns[0], Insn::mov64_reg(6, 1));
            assert_eq!(*insns.last().unwrap(), Insn::mov64_reg(1, 6));
            let helper = memory.helper();
            for i in insns {
                assert!(
                    !(7..=9).contains(&i.dst()) && !(7..=9).contains(&i.src()),
                    "{i:?}"
                );
                if i.is_ld_imm64() {
                    continue;
                }
                let class = i.code() & 7;
                // r10 is never written: no ALU/LDX into it.
                if matches!(class, 0x04 | 0x07 | 0x01) {
                    assert_ne!(i.dst(), 10, "{i:?}");
                }
                if i.code() == 0x85 {
                    assert_eq!(i.imm(), helper);
                }
            }
        }
    }
}

#[test]
fn err_value_and_positions() {
    // One reader: $err is set directly on the error path.
    let mut locs = ArgLocs::new(Arch::X86_64, Memory::Kernel);
    locs.push(ArgLoc::new(x86("di"), 4, true).unwrap().deref(8).unwrap())
        .unwrap();
    locs.push_err().unwrap();
    let p: Prologue = Prologue::generate(&locs).unwrap();
    let l = listing(&p);
    assert!(l.contains(&"(b7) r3 = 1".to_string()), "{l:#?}");
    assert!(l.contains(&"(b7) r3 = 0".to_string()), "{l:#?}");
    assert_eq!(
        locs.push_err(),
        Err(Error::Usage {
            what: "$err given twice",
            value: 1
        })
    );

    // Two readers: the index goes through the stack slot.
    let mut locs = ArgLocs::new(Arch::X86_64, Memory::User);
    locs.push_err().unwrap();
    locs.push(ArgLoc::new(x86("di"), 8, false).unwrap().deref(0).unwrap())
        .unwrap();
    locs.push(ArgLoc::new(x86("si"), 1, false).unwrap())
        .unwrap();
    locs.push(ArgLoc::new(Base::Addr(0x1000), 2, false).unwrap())
        .unwrap();
    let p: Prologue = Prologue::generate(&locs).unwrap();
    let l = listing(&p);
    assert!(
        l.contains(&"(7a) *(u64 *)(r10 -40) = 1".to_string()),
        "{l:#?}"
    );
    assert!(
        l.contains(&"(7a) *(u64 *)(r10 -40) = 3".to_string()),
        "{l:#?}"
    );
    assert!(
        l.contains(&"(79) r2 = *(u64 *)(r10 -40)".to_string()),
        "{l:#?}"
    );
    assert!(l.contains(&"(57) r4 &= 255".to_string()), "{l:#?}");
    assert!(l.iter().all(|s| !s.contains("call bpf_probe_read_kernel")));
    // A fifth value does not fit r2..r5.
    assert!(matches!(
        locs.push(ArgLoc::new(x86("dx"), 8, false).unwrap()),
        Err(Error::Capacity { limit: 4, .. })
    ));
    assert!(locs.insert_err(9).is_err());
}

#[test]
fn insert_err_puts_it_in_place() {
    for pos in 0..=3 {
        let mut locs = ArgLocs::new(Arch::Aarch64, Memory::Kernel);
        for r in ["x0", "x1", "x2"] {
            locs.push(ArgLoc::new(Base::Reg(Arch::Aarch64.reg(r).unwrap()), 8, false).unwrap())
                .unwrap();
        }
        locs.insert_err(pos).unwrap();
        assert_eq!(locs.err_position(), Some(pos));
        let regs: Vec<&str> = locs
            .fetched()
            .map(|l| match l.base() {
                Base::Reg(r) => r.name,
                _ => "",
            })
            .collect();
        assert_eq!(regs, ["x0", "x1", "x2"]);
    }
}

#[test]
fn capacity_is_an_error_and_max_insns_suffices() {
    let mut locs = ArgLocs::new(Arch::I386, Memory::Kernel);
    for i in 0..4 {
        let mut a = ArgLoc::new(Base::Addr(0xffff_ffff_8000_0000 + i), 2, true).unwrap();
        for d in 0..MAX_DEREFS {
            a = a.deref(d as i32 + 1).unwrap();
        }
        assert!(a.clone().deref(1).is_err(), "more than MAX_DEREFS");
        locs.push(a).unwrap();
    }
    let p: Prologue = Prologue::generate(&locs).unwrap();
    assert!(p.len() <= MAX_INSNS);
    assert!(Prologue::<16>::generate(&locs).is_err());
    let mut small = [Insn::default(); 8];
    assert!(matches!(
        write(&locs, &mut small),
        Err(Error::Capacity {
            what: "prologue instructions",
            limit: 8
        })
    ));
    // Every buffer length up to the real one fails cleanly, never panics.
    let mut buf = [Insn::default(); MAX_INSNS];
    for n in 0..p.len() {
        assert!(write(&locs, &mut buf[..n]).is_err());
    }
    assert_eq!(write(&locs, &mut buf).unwrap(), p.len());
}

#[test]
fn sizes_and_bases_are_checked() {
    assert!(ArgLoc::new(x86("di"), 3, false).is_err());
    assert!(ArgLoc::new(x86("di"), 0, false).is_err());
    let mut locs = ArgLocs::new(Arch::Aarch64, Memory::Kernel);
    assert!(
        locs.push(ArgLoc::new(x86("di"), 8, false).unwrap())
            .is_err(),
        "x86 reg on arm64"
    );
    assert!(Memory::of(ProbeKind::Tracepoint).is_err());
    assert_eq!(Memory::of(ProbeKind::Kretprobe), Ok(Memory::Kernel));
    assert_eq!(Memory::of(ProbeKind::Uretprobe).unwrap().helper(), 112);
}

#[test]
fn constants_are_folded_to_their_size() {
    let mut locs = ArgLocs::new(Arch::X86_64, Memory::Kernel);
    locs.push(ArgLoc::new(Base::Const(0x1ff), 1, true).unwrap())
        .unwrap();
    locs.push(ArgLoc::new(Base::Const(0x1234_5678_9abc), 8, false).unwrap())
        .unwrap();
    locs.push(ArgLoc::new(Base::Const(0xffff_ffff), 4, true).unwrap())
        .unwrap();
    let p: Prologue = Prologue::generate(&locs).unwrap();
    assert_eq!(
        listing(&p)[1..],
        [
            "(bf) r6 = r1",
            "(b7) r2 = -1",
            "(18) r3 = 0x123456789abc",
            "(b7) r4 = -1",
            "(bf) r1 = r6",
        ]
    );
    assert_eq!(p.len(), 6, "ld_imm64 takes two slots");
}

#[test]
fn fetch_arg_spellings() {
    let rows: &[(ArgLoc<'_>, &str)] = &[
        (
            ArgLoc::new(Base::Stack(8), 4, true).unwrap().named("x"),
            "x=+8(%sp):s32",
        ),
        (
            ArgLoc::new(Base::Stack(-16), 2, false).unwrap(),
            "arg3=-16(%sp):u16",
        ),
        (
            ArgLoc::new(Base::Addr(0xffff_ffff_81a2_0160), 8, false)
                .unwrap()
                .deref(-8)
                .unwrap(),
            "arg3=-8(@0xffffffff81a20160):u64",
        ),
        (
            ArgLoc::new(Base::Const(42), 1, false).unwrap(),
            "arg3=\\42:u8",
        ),
        (
            ArgLoc::new(Base::Reg(Arch::Aarch64.reg("x0").unwrap()), 8, true)
                .unwrap()
                .deref(0)
                .unwrap(),
            "arg3=+0(%x0):s64",
        ),
    ];
    for (loc, want) in rows {
        assert_eq!(loc.fetch_arg(3).to_string(), *want);
    }
}

#[test]
fn typed_args_follow_each_calling_convention() {
    let spec = "kprobe/vfs_read(void *, char *buf, unsigned long count, char c)";
    let rows: &[(Arch, &[&str])] = &[
        (
            Arch::X86_64,
            &["arg1=%di:u64", "buf=%si:u64", "count=%dx:u64", "c=%cx:u8"],
        ),
        (
            Arch::Aarch64,
            &["arg1=%x0:u64", "buf=%x1:u64", "count=%x2:u64", "c=%x3:u8"],
        ),
    ];
    for (arch, want) in rows {
        let locs = typed(*arch, spec).unwrap();
        let got: Vec<String> = locs
            .fetched()
            .enumerate()
            .map(|(i, l)| l.fetch_arg(i + 1).to_string())
            .collect();
        assert_eq!(got, *want, "{arch}");
    }
    // i386 kernel: regparm(3), so the fourth is an error naming its position.
    assert_eq!(
        typed(Arch::I386, spec).unwrap_err(),
        Error::Usage {
            what: "argument is past the argument registers of the calling convention",
            value: 4
        }
    );
    let locs = typed(Arch::I386, "kprobe/f(void *p, int i, char c)").unwrap();
    let got: Vec<String> = locs
        .fetched()
        .enumerate()
        .map(|(i, l)| l.fetch_arg(i + 1).to_string())
        .collect();
    assert_eq!(got, ["p=%ax:u32", "i=%dx:s32", "c=%cx:u8"]);
    assert!(
        typed(Arch::I386, "kprobe/f(long long x)").is_err(),
        "register pair"
    );
    // i386 user space: the stack, 8-byte values take two slots; plain char signed.
    let locs = typed(
        Arch::I386,
        "uprobe/b:f(char c, long long x, short s, void *p)",
    )
    .unwrap();
    let got: Vec<String> = locs
        .fetched()
        .enumerate()
        .map(|(i, l)| l.fetch_arg(i + 1).to_string())
        .collect();
    assert_eq!(
        got,
        [
            "c=+4(%sp):s8",
            "x=+8(%sp):s64",
            "s=+16(%sp):s16",
            "p=+20(%sp):u32"
        ]
    );
    // Plain char: signed in x86 user space, unsigned on arm64 and in kernels.
    let c = |arch, spec| {
        typed(arch, spec)
            .unwrap()
            .fetched()
            .next()
            .unwrap()
            .signed()
    };
    assert!(c(Arch::X86_64, "uprobe/b:f(char c)"));
    assert!(!c(Arch::Aarch64, "uprobe/b:f(char c)"));
    assert!(!c(Arch::X86_64, "kprobe/f(char c)"));
    assert!(c(Arch::X86_64, "kprobe/f(signed char c)"));
}

/// The seed's locations built by hand (as debug info resolves them).
fn seed_locs() -> ArgLocs<'static> {
    let mut locs = ArgLocs::new(Arch::X86_64, Memory::Kernel);
    let a_ops = ArgLoc::new(x86("di"), 8, false).unwrap().named("a_ops");
    locs.push(a_ops.deref(248).unwrap().deref(104).unwrap())
        .unwrap();
    locs.push(ArgLoc::new(x86("r12"), 8, false).unwrap().named("bytes"))
        .unwrap();
    locs.push(ArgLoc::new(x86("cx"), 8, false).unwrap().named("offset"))
        .unwrap();
    locs
}

#[test]
fn fetch_arg_specs_need_no_debug_info() {
    // The seed's probe written with the fetch-args perf printed for it: the same locations,
    // so the same prologue, as from debug info; and the fetch-args read back unchanged.
    for spec in [
        "generic_perform_write=generic_perform_write+122 a_ops=+104(+248(%di)):u64 \
         bytes=%r12:u64 offset=%cx:u64",
        "kprobe/generic_perform_write+122(a_ops=+104(+248(%di)):u64, bytes=%r12:u64, \
         offset=%cx:u64)",
    ] {
        let locs = typed(Arch::X86_64, spec).unwrap();
        assert_eq!(locs, seed_locs(), "{spec}");
        let a: Prologue = Prologue::generate(&locs).unwrap();
        let b: Prologue = Prologue::generate(&seed_locs()).unwrap();
        assert_eq!(listing(&a), listing(&b));
        assert_eq!(listing(&a)[0], "bpf_prologue: insn num=23");
    }
    let spec = "kprobe/f(w=+144(+216(%x26)):u64, n=-8(%x29):s32, g=+8(@0xffff800008d36280):u8, \
                c=\\5:u16)";
    let locs = typed(Arch::Aarch64, spec).unwrap();
    let got: Vec<String> = locs
        .fetched()
        .enumerate()
        .map(|(i, l)| l.fetch_arg(i + 1).to_string())
        .collect();
    assert_eq!(
        got,
        [
            "w=+144(+216(%x26)):u64",
            "n=-8(%x29):s32",
            "g=+8(@0xffff800008d36280):u8",
            "c=\\5:u16"
        ]
    );
    let first = locs.fetched().next().unwrap();
    assert_eq!(first.derefs(), [216, 144]);
    assert_eq!(first.reads(), 2);
    // `@ADDR` reads once itself, then once per `+OFF(...)`.
    assert_eq!(locs.fetched().nth(2).unwrap().reads(), 2);
    Prologue::<{ MAX_INSNS }>::generate(&locs).unwrap();
    // A register of another architecture is refused as before.
    assert!(typed(Arch::Aarch64, "kprobe/f(+8(%di))").is_err());
}

#[test]
fn expressions_without_types() {
    let locs = typed(Arch::X86_64, "kretprobe/f(r=$retval:s32, $err)").unwrap();
    assert_eq!(
        locs.fetched().next().unwrap().fetch_arg(1).to_string(),
        "r=%ax:s32"
    );
    assert_eq!(locs.err_position(), Some(1));
    let locs = typed(Arch::X86_64, "kprobe/f($stack3:u16, $arg2, $stack, %r12)").unwrap();
    let got: Vec<String> = locs
        .fetched()
        .enumerate()
        .map(|(i, l)| l.fetch_arg(i + 1).to_string())
        .collect();
    assert_eq!(
        got,
        [
            "arg1=+24(%sp):u16",
            "arg2=%si:u64",
            "arg3=%sp:u64",
            "arg4=%r12:u64"
        ]
    );
    let locs = typed(Arch::I386, "uprobe/b:f($arg2:s32)").unwrap();
    assert_eq!(
        locs.fetched().next().unwrap().fetch_arg(1).to_string(),
        "arg1=+8(%sp):s32"
    );

    let needs = |spec| typed(Arch::X86_64, spec).unwrap_err();
    assert_eq!(
        needs("kprobe/f(%di, file->f_mapping)"),
        Error::Usage {
            what: NEEDS_DEBUG_INFO,
            value: 2
        }
    );
    assert_eq!(
        needs("f+122 bytes"),
        Error::Usage {
            what: NEEDS_DEBUG_INFO,
            value: 1
        }
    );
    assert!(matches!(
        needs("kprobe/f(%x0)"),
        Error::Usage { value: 1, .. }
    ));
    // Strings are recorded by the kernel beside the sample, never passed: no value.
    for spec in [
        "kprobe/f($comm)",
        "kprobe/f(%di:string)",
        "kprobe/f(+0(%di):ustring)",
    ] {
        assert!(
            typed(Arch::X86_64, spec).unwrap().values().is_empty(),
            "{spec}"
        );
    }
    assert!(matches!(
        needs("kprobe/f($outdata)"),
        Error::Usage { value: 1, .. }
    ));
    // r2..r5 take the first four values, `$err` included, strings skipped; the rest
    // are only recorded.
    let locs = typed(
        Arch::X86_64,
        "kprobe/f(%di, +0(%si):string, %dx, $err, %cx, %r8, %r9)",
    )
    .unwrap();
    let passed: Vec<String> = locs
        .fetched()
        .zip(1..)
        .map(|(l, n)| l.fetch_arg(n).to_string())
        .collect();
    assert_eq!(passed, ["arg1=%di:u64", "arg2=%dx:u64", "arg3=%cx:u64"]);
    assert_eq!(locs.values().len(), 4, "three values and $err");
    assert!(typed(Arch::X86_64, "tracepoint/sched/sched_switch").is_err());
}

#[test]
fn ip_relative_global_reads_at_the_program_counter_plus_its_distance() {
    // A global of a PIE 0x2db8 after the probe site, and one 0x139 before it, then a
    // pointer global dereferenced: each base is the pt_regs program counter plus the
    // distance, read with bpf_probe_read_user.
    for (arch, ip) in [(Arch::X86_64, 128), (Arch::Aarch64, 256), (Arch::I386, 48)] {
        let mut locs = ArgLocs::new(arch, Memory::User);
        locs.push(ArgLoc::new(Base::IpRel(0x2db8), 8, true).unwrap())
            .unwrap();
        locs.push(ArgLoc::new(Base::IpRel(-0x139), 4, false).unwrap())
            .unwrap();
        locs.push(
            ArgLoc::new(Base::IpRel(0x40), 2, false)
                .unwrap()
                .deref(8)
                .unwrap(),
        )
        .unwrap();
        let p: Prologue = Prologue::generate(&locs).unwrap();
        let l = listing(&p);
        let size = if arch == Arch::I386 { "u32" } else { "u64" };
        let load = format!("r3 = *({size} *)(r6 +{ip})");
        assert_eq!(l.iter().filter(|s| s.contains(&load)).count(), 3, "{l:#?}");
        for add in ["r3 += 11704", "r3 += -313", "r3 += 64", "r3 += 8"] {
            assert!(l.iter().any(|s| s.ends_with(add)), "{arch:?} {add}: {l:#?}");
        }
        assert_eq!(
            l.iter()
                .filter(|s| s.contains("call bpf_probe_read_user"))
                .count(),
            4,
            "{l:#?}"
        );
    }
    let loc = ArgLoc::new(Base::IpRel(-0x139), 4, true)
        .unwrap()
        .named("g");
    assert_eq!(loc.fetch_arg(1).to_string(), "g=@%ip-0x139:s32");
    let loc = ArgLoc::new(Base::IpRel(0x2db8), 8, false).unwrap();
    assert_eq!(loc.fetch_arg(2).to_string(), "arg2=@%ip+0x2db8:u64");
}

#[test]
fn file_offsets_read_at_their_distance_from_the_probes_file_offset() {
    // `@+FILEOFFSET`, as `--emit` writes a shared library's global: kept as written (the
    // tracer's spelling) until the probe's own file offset is known, then read at the
    // program counter plus the distance between the two offsets.
    let spec = "uprobe//lib/x.so:0x1120(n=%di:s32, g=@+0x4018:s64, +8(@+0x1000):u16, $err)";
    let mut locs = typed(Arch::X86_64, spec).unwrap();
    assert!(locs.has_file_offsets());
    let shown: Vec<String> = locs
        .fetched()
        .zip(1..)
        .map(|(l, n)| l.fetch_arg(n).to_string())
        .collect();
    assert_eq!(
        shown,
        ["n=%di:s32", "g=@+0x4018:s64", "arg3=+8(@+0x1000):u16"]
    );
    // Unplaced, no prologue can read it.
    assert!(matches!(
        Prologue::<{ MAX_INSNS }>::generate(&locs),
        Err(Error::Usage { what, .. }) if what.contains("probe's own file offset")
    ));
    locs.at_probe_offset(0x1120).unwrap();
    assert!(!locs.has_file_offsets());
    let bases: Vec<Base> = locs.fetched().map(ArgLoc::base).collect();
    assert_eq!(bases[1..], [Base::IpRel(0x2ef8), Base::IpRel(-0x120)]);
    let p: Prologue = Prologue::generate(&locs).unwrap();
    let l = listing(&p);
    for want in [
        "r3 = *(u64 *)(r6 +128)",
        "r3 += 12024",
        "r3 += -288",
        "r3 += 8",
    ] {
        assert!(l.iter().any(|s| s.ends_with(want)), "{want}: {l:#?}");
    }
    // 2 GiB or more away: refused, naming the value.
    let mut far = typed(Arch::X86_64, "uprobe//lib/x.so:0x10(@+0x90000000)").unwrap();
    assert!(matches!(
        far.at_probe_offset(0x10),
        Err(Error::Usage { value: 1, .. })
    ));
    // A kprobe has no probed file; at a return probe the program counter is the return
    // address: both refused, naming the argument.
    assert!(matches!(
        typed(Arch::X86_64, "kprobe/f(%di, @+0x10)"),
        Err(Error::Usage { value: 2, what }) if what.contains("uprobes only")
    ));
    assert!(matches!(
        typed(Arch::X86_64, "uretprobe//lib/x.so:0x10(@+0x10:u8)"),
        Err(Error::Usage { value: 1, what }) if what == AT_RETURN
    ));
}

#[test]
fn kernel_symbols_and_kaslr_relocation_move_absolute_reads() {
    // `@SYM+OFF` reads at the symbol's address in the running kernel (given by the caller,
    // /proc/kallsyms in sluice record) plus the offset; the kernel's fetch-arg stays `@SYM+OFF`.
    let spec = "kprobe/f(t=@_stext+0x2f83098:s32, +8(@init_task-0x10):u64, %x0)";
    let Section::Probe(p) = parse(spec).unwrap() else {
        panic!("{spec}")
    };
    let stext = 0xffff_cf72_27a1_0000u64;
    let mut asked = Vec::new();
    let mut symbol = |name: &str| {
        asked.push(name.to_string());
        match name {
            "_stext" => Some(stext),
            "init_task" => Some(0xffff_cf72_29e0_0000),
            _ => None,
        }
    };
    let locs =
        from_typed_args_with(Arch::Aarch64, ProbeKind::Kprobe, p.args(), &mut symbol).unwrap();
    assert_eq!(asked, ["_stext", "init_task"]);
    let bases: Vec<Base> = locs.fetched().map(ArgLoc::base).collect();
    assert_eq!(
        bases[..2],
        [
            Base::Addr(stext + 0x2f8_3098),
            Base::Addr(0xffff_cf72_29df_fff0)
        ]
    );
    let p: Prologue = Prologue::generate(&locs).unwrap();
    let l = listing(&p).join("\n");
    assert!(l.contains(&format!("{:#x}", stext + 0x2f8_3098)), "{l}");
    assert_eq!(l.matches("call bpf_probe_read_kernel").count(), 3, "{l}");

    // Without a symbol table, or in a uprobe: an error naming the argument.
    assert_eq!(
        from_typed_args(Arch::Aarch64, ProbeKind::Kprobe, p_args(spec).args()).unwrap_err(),
        Error::Usage {
            what: NEEDS_SYMBOLS,
            value: 1
        }
    );
    assert!(matches!(
        from_typed_args_with(
            Arch::X86_64,
            ProbeKind::Uprobe,
            p_args("uprobe/b:f(%di, @g)").args(),
            &mut |_| Some(0x1000)
        ),
        Err(Error::Usage { value: 2, .. })
    ));

    // A DWARF global's link-time address moved by the KASLR offset, either way; registers,
    // constants and program-counter-relative bases are not addresses to move.
    let link = ArgLoc::new(Base::Addr(0xffff_8000_09f7_cbf0), 4, true).unwrap();
    let offset = 0xffff_cf72_27a1_0000u64.wrapping_sub(0xffff_8000_0801_0000) as i64;
    assert_eq!(
        link.clone().relocated(offset).base(),
        Base::Addr(0xffff_cf72_2997_cbf0)
    );
    assert_eq!(
        link.clone().relocated(offset).relocated(-offset),
        link.clone()
    );
    let amd = ArgLoc::new(Base::Addr(0xffff_ffff_83f8_3098), 4, true).unwrap();
    assert_eq!(
        amd.relocated(0x1e00_0000).base(),
        Base::Addr(0xffff_ffff_a1f8_3098)
    );
    for b in [x86("di"), Base::Const(7), Base::IpRel(8), Base::Stack(8)] {
        let l = ArgLoc::new(b, 8, false).unwrap();
        assert_eq!(l.clone().relocated(offset), l);
    }
}

fn p_args(spec: &str) -> crate::probe::ProbeSpec<'_> {
    let Section::Probe(p) = parse(spec).unwrap() else {
        panic!("{spec}")
    };
    p
}

/// An i386 binary under an x86-64 kernel: cdecl stack arguments read through the 64-bit
/// `sp` slot (+152) with `bpf_probe_read_user`, each its own size, sign- or
/// zero-extended by its type; registers are the low halves of the 64-bit slots.
#[test]
fn i386_code_under_an_x86_64_kernel() {
    let mixed = crate::arch::Platform::new(Arch::X86_64, Arch::I386).unwrap();
    let spec = "uprobe/b:f(int a, unsigned char b, short c, long long d)";
    let Section::Probe(p) = parse(spec).unwrap() else {
        panic!()
    };
    let locs = from_typed_args(mixed, p.kind(), p.args()).unwrap();
    assert_eq!(locs.arch(), Arch::X86_64);
    assert_eq!(locs.platform(), mixed);
    let got: Vec<String> = locs
        .fetched()
        .enumerate()
        .map(|(i, l)| l.fetch_arg(i + 1).to_string())
        .collect();
    assert_eq!(
        got,
        [
            "a=+4(%sp):s32",
            "b=+8(%sp):u8",
            "c=+12(%sp):s16",
            "d=+16(%sp):s64"
        ]
    );
    // Per argument j (slot -8*(j+1)): the 64-bit sp, plus the cdecl offset, one user read of
    // the argument's size; narrower ones loaded sized, sign-extended when signed, stored
    // whole. Then r2..r5 from the slots; the error path zeroes them. Counted by hand: 1 +
    // 4 * 7 reads + 4 + 2 + 4 + 0 extensions = 39, 4 loads and the jump: the error path is
    // instruction 44, so the reads' jumps (at 7, 18, 27, 38) skip 36, 25, 16 and 5.
    let read = |off: i32, slot: i32, size: u8, skip: i32| {
        [
            "(79) r3 = *(u64 *)(r6 +152)".to_string(),
            format!("(07) r3 += {off}"),
            "(bf) r1 = r10".to_string(),
            format!("(07) r1 += {slot}"),
            format!("(b7) r2 = {size}"),
            "(85) call bpf_probe_read_user#112".to_string(),
            format!("(55) if r0 != 0x0 goto pc+{skip}"),
        ]
    };
    let mut want = std::vec![
        "bpf_prologue: insn num=49".to_string(),
        "(bf) r6 = r1".into()
    ];
    want.extend(read(4, -8, 4, 36));
    want.extend([
        "(61) r3 = *(u32 *)(r10 -8)".to_string(),
        "(67) r3 <<= 32".into(),
        "(c7) r3 s>>= 32".into(),
        "(7b) *(u64 *)(r10 -8) = r3".into(),
    ]);
    want.extend(read(8, -16, 1, 25));
    want.extend([
        "(71) r3 = *(u8 *)(r10 -16)".to_string(),
        "(7b) *(u64 *)(r10 -16) = r3".into(),
    ]);
    want.extend(read(12, -24, 2, 16));
    want.extend([
        "(69) r3 = *(u16 *)(r10 -24)".to_string(),
        "(67) r3 <<= 48".into(),
        "(c7) r3 s>>= 48".into(),
        "(7b) *(u64 *)(r10 -24) = r3".into(),
    ]);
    want.extend(read(16, -32, 8, 5));
    want.extend([
        "(79) r2 = *(u64 *)(r10 -8)".to_string(),
        "(79) r3 = *(u64 *)(r10 -16)".into(),
        "(79) r4 = *(u64 *)(r10 -24)".into(),
        "(79) r5 = *(u64 *)(r10 -32)".into(),
        "(05) goto pc+4".into(),
        "(b7) r2 = 0".into(),
        "(b7) r3 = 0".into(),
        "(b7) r4 = 0".into(),
        "(b7) r5 = 0".into(),
        "(bf) r1 = r6".into(),
    ]);
    let prologue: Prologue = Prologue::generate(&locs).unwrap();
    assert_eq!(listing(&prologue), want);

    // The same spec for an i386 kernel reads its 32-bit sp slot (+60) with u32 loads; for
    // x86-64 code the arguments are registers.
    let native = typed(Arch::I386, spec).unwrap();
    let native: Prologue = Prologue::generate(&native).unwrap();
    assert!(listing(&native).contains(&"(61) r3 = *(u32 *)(r6 +60)".to_string()));
    assert!(!listing(&native).iter().any(|l| l.contains("+152")));

    // Registers, `$retval`, `$stack` and `$argN` under the mixed platform: kernel slots
    // read whole (u64) and narrowed by the type; `$argN` is a 4-byte cdecl slot.
    let Section::Probe(p) = parse("uretprobe/b:f(%cx:s32, $retval:u16, $stack, $arg2)").unwrap()
    else {
        panic!()
    };
    let locs = from_typed_args(mixed, p.kind(), p.args()).unwrap();
    let got: Vec<String> = locs
        .fetched()
        .enumerate()
        .map(|(i, l)| l.fetch_arg(i + 1).to_string())
        .collect();
    assert_eq!(
        got,
        [
            "arg1=%cx:s32",
            "arg2=%ax:u16",
            "arg3=%sp:u64",
            "arg4=+8(%sp):u32"
        ]
    );
    let prologue: Prologue = Prologue::generate(&locs).unwrap();
    let l = listing(&prologue);
    for line in [
        "(79) r3 = *(u64 *)(r6 +152)",
        "(07) r3 += 8",
        "(b7) r2 = 4",
        "(79) r2 = *(u64 *)(r6 +88)",
        "(67) r2 <<= 32",
        "(c7) r2 s>>= 32",
        "(79) r3 = *(u64 *)(r6 +80)",
        "(57) r3 &= 65535",
        "(79) r4 = *(u64 *)(r6 +152)",
    ] {
        assert!(l.contains(&line.to_string()), "{line} in {l:#?}");
    }
    // A kprobe under the same kernel is the kernel's own convention.
    let k = typed(
        Arch::X86_64,
        "kprobe/vfs_read(void *, char *, unsigned long)",
    )
    .unwrap();
    let k: Prologue = Prologue::generate(&k).unwrap();
    assert!(listing(&k).contains(&"(79) r4 = *(u64 *)(r6 +96)".to_string()));
}
