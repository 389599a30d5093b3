//! Every variant: its message, and the inner error `source()` gives.

use super::*;
use sluice_core::btf::BtfError;
use sluice_core::dwarf::Error as DwarfError;
use sluice_core::probe::ProbeError;
use std::error::Error as _;
use std::sync::Arc;

fn btf() -> BtfError {
    BtfError::Truncated {
        what: "header",
        offset: 0,
        len: 24,
    }
}

fn core() -> sluice_core::Error {
    sluice_core::Error::BadInsn {
        index: 3,
        opcode: 0xff,
    }
}

fn probe() -> ProbeError {
    ProbeError {
        column: 9,
        what: "expected ')'",
    }
}

fn not_available() -> DwarfError {
    DwarfError::NotAvailable {
        name: "v".into(),
        pc: 0x10,
        reason: "optimized out",
        available: Default::default(),
    }
}

/// `(error, its message, the message of its source: None when it has none)`.
fn rows() -> Vec<(Error, String, Option<String>)> {
    let (btf, core, probe) = (btf(), core(), probe());
    let dwarf = DwarfError::NoDebugInfo;
    let na = not_available();
    let s = |x: &str| x.to_owned();
    vec![
        (Error::NoProgram { index: 4 }, s("no program #4"), None),
        (
            Error::NoLoadedProgram { index: 2 },
            s("no loaded program #2"),
            None,
        ),
        (
            Error::TargetBtf {
                path: Some("/b".into()),
                source: btf,
            },
            format!("target BTF /b: {btf}"),
            Some(btf.to_string()),
        ),
        (
            Error::TargetBtf {
                path: None,
                source: btf,
            },
            format!("target BTF: {btf}"),
            Some(btf.to_string()),
        ),
        (
            Error::ObjectBtf { source: btf },
            format!("object BTF: {btf}"),
            Some(btf.to_string()),
        ),
        (
            Error::DatasecSection {
                datasec: ".bss".into(),
            },
            s("BTF DATASEC '.bss': no ELF section of that name to size it"),
            None,
        ),
        (
            Error::DatasecVariable {
                datasec: ".data".into(),
                variable: "x".into(),
            },
            s("BTF DATASEC '.data': variable 'x' has no symbol to place it"),
            None,
        ),
        (
            Error::Enum64Unsupported,
            s("object BTF has ENUM64, which this kernel does not know (Linux 6.0)"),
            None,
        ),
        (
            Error::BtfRefused {
                errno: Errno::INVAL,
                log: "[1] bad".into(),
            },
            format!("the kernel refused the object's BTF ({}):\n[1] bad", Errno::INVAL),
            Some(Errno::INVAL.to_string()),
        ),
        (
            Error::CoreRelocation {
                program: "p".into(),
                index: 7,
                source: btf,
            },
            format!("program 'p': CO-RE relocation #7: {btf}"),
            Some(btf.to_string()),
        ),
        (
            Error::Kconfig {
                name: "CONFIG_X".into(),
                problem: KconfigProblem::BadValue {
                    value: "q".into(),
                    why: "not a tristate",
                },
            },
            s("extern 'CONFIG_X' (.kconfig): value 'q': not a tristate"),
            Some(s("value 'q': not a tristate")),
        ),
        (
            Error::Kconfig {
                name: "FOO".into(),
                problem: KconfigProblem::Unknown,
            },
            s("extern 'FOO' (.kconfig): not a CONFIG_ name nor one libbpf provides"),
            Some(s("not a CONFIG_ name nor one libbpf provides")),
        ),
        (
            Error::Kconfig {
                name: "CONFIG_Y".into(),
                problem: KconfigProblem::NotSet,
            },
            s("extern 'CONFIG_Y' (.kconfig): not set in the kernel configuration (declare it \
               __weak to default to 0)"),
            Some(s(
                "not set in the kernel configuration (declare it __weak to default to 0)",
            )),
        ),
        (
            Error::Kconfig {
                name: "CONFIG_Z".into(),
                problem: KconfigProblem::OutsideMap,
            },
            s("extern 'CONFIG_Z' (.kconfig): outside the .kconfig map"),
            Some(s("outside the .kconfig map")),
        ),
        (
            Error::KeySize {
                map: "m".into(),
                expected: 4,
                got: 8,
            },
            s("map 'm': key of 8 bytes, the map's keys have 4"),
            None,
        ),
        (
            Error::ValueSize {
                map: "m".into(),
                expected: 16,
                got: 8,
            },
            s("map 'm': value of 8 bytes, the map's values take 16"),
            None,
        ),
        (
            Error::NotPerCpu {
                map: "m".into(),
                map_type: 1,
                value_size: 8,
                got: 4,
            },
            s("map 'm' (type 1, value size 8) is no per-CPU map of 4-byte values"),
            None,
        ),
        (
            Error::InnerMap {
                map: "outer".into(),
                inner: 3,
            },
            s("map 'outer': inner map #3 is missing or itself a map-in-map"),
            None,
        ),
        (
            Error::KallsymsAddress { line: "zz T f".into() },
            s("/proc/kallsyms: 'zz T f': the address is not hexadecimal"),
            None,
        ),
        (
            Error::KallsymsHidden {
                name: "_stext".into(),
                kptr_restrict: Some(2),
            },
            s("/proc/kallsyms lists _stext at address 0: the kernel hides its symbol addresses \
               (kernel.kptr_restrict = 2; root with CAP_SYSLOG sees them when it is 0 or 1), so \
               a kernel global's address in the running kernel is unknown"),
            None,
        ),
        (
            Error::KallsymsHidden {
                name: "_stext".into(),
                kptr_restrict: None,
            },
            s("/proc/kallsyms lists _stext at address 0: the kernel hides its symbol addresses \
               (kernel.kptr_restrict = ?; root with CAP_SYSLOG sees them when it is 0 or 1), so \
               a kernel global's address in the running kernel is unknown"),
            None,
        ),
        (
            Error::SymbolNotListed {
                name: "jiffies".into(),
            },
            s("@jiffies: /proc/kallsyms does not list it in the core kernel (a module's symbol, \
               or a data symbol of a kernel without CONFIG_KALLSYMS_ALL: sluice prologue --emit \
               spells globals from _stext, which every kernel lists)"),
            None,
        ),
        (
            Error::NoLinkSymbol {
                vmlinux: "vmlinux".into(),
                name: "_stext".into(),
            },
            s("vmlinux: no symbol _stext in its symbol table: cannot place the kernel's globals"),
            None,
        ),
        (
            Error::NoRunningSymbol {
                name: "_stext".into(),
            },
            s("/proc/kallsyms lists no _stext: cannot tell the running kernel's KASLR offset"),
            None,
        ),
        (
            Error::NotRunningKernel {
                vmlinux: "vmlinux".into(),
                first: "_stext".into(),
                first_offset: 0x1000,
                name: "_etext".into(),
                offset: 0x2000,
            },
            s("vmlinux is not the running kernel: _stext is 0x1000 away from its link-time \
               address in /proc/kallsyms, _etext 0x2000 (give the vmlinux of this build, see \
               uname -v)"),
            None,
        ),
        (
            Error::NoKaslrSymbols {
                vmlinux: "vmlinux".into(),
            },
            s("vmlinux: no symbols to compute the KASLR offset from"),
            None,
        ),
        (
            Error::BadSpec {
                program: "p".into(),
                spec: "kprobe/f(".into(),
                source: probe,
            },
            format!("program 'p': spec 'kprobe/f(': {probe}"),
            Some(probe.to_string()),
        ),
        (
            Error::NoSite {
                program: "p".into(),
                spec: "kprobe/f(x)".into(),
            },
            s("program 'p' (spec 'kprobe/f(x)'): no probe site in the debug info"),
            None,
        ),
        (
            Error::Prologue {
                program: "p".into(),
                spec: "kprobe/f(x)".into(),
                source: Box::new(Error::Core(core)),
            },
            format!("program 'p' (spec 'kprobe/f(x)'): {core}"),
            Some(core.to_string()),
        ),
        (
            Error::NoArchTables,
            s("no argument-passing tables for this architecture"),
            None,
        ),
        (
            Error::ForeignBinary {
                path: "/bin/x".into(),
                machine: 183,
                kernel: sluice_core::arch::Arch::X86_64,
            },
            s("/bin/x: aarch64 code does not run under this x86_64 kernel"),
            None,
        ),
        (
            Error::ForeignBinary {
                path: "/bin/x".into(),
                machine: 243,
                kernel: sluice_core::arch::Arch::X86_64,
            },
            s("/bin/x: no argument-passing tables for its ELF machine 243 (this kernel is x86_64)"),
            None,
        ),
        (
            Error::NotElf {
                path: "/x".into(),
                source: core,
            },
            format!("/x: not an ELF file: {core}"),
            Some(core.to_string()),
        ),
        (
            Error::NoDebugSections {
                path: "/d".into(),
                source: dwarf.clone(),
            },
            format!("/d: no usable debug info: {dwarf}"),
            Some(dwarf.to_string()),
        ),
        (
            Error::NoDebugInfo {
                path: "/bin/x".into(),
                candidates: vec![],
            },
            s("/bin/x: no debug info in the file nor in any of 0 candidate(s)"),
            None,
        ),
        (
            Error::NoDebugInfo {
                path: "/bin/x".into(),
                candidates: vec!["/a.debug".into(), "/b.debug".into()],
            },
            s("/bin/x: no debug info in the file nor in any of 2 candidate(s): /a.debug, /b.debug"),
            None,
        ),
        (
            Error::NeedsVmlinux {
                func: "vfs_read".into(),
                line: false,
            },
            s("vfs_read: the arguments name variables: a kernel probe needs a vmlinux with debug \
               info (LoadOptions::debuginfo, --debuginfo FILE)"),
            None,
        ),
        (
            Error::NeedsVmlinux {
                func: "vfs_read".into(),
                line: true,
            },
            s("vfs_read: a :LINE place is found in the line table: a kernel probe needs a \
               vmlinux with debug info (LoadOptions::debuginfo, --debuginfo FILE)"),
            None,
        ),
        (
            Error::RawOffset { path: "/x".into() },
            s("/x: a probe at a raw file offset has no function to look up in the debug info"),
            None,
        ),
        (
            Error::TracepointVariables {
                category: "sched".into(),
                name: "sched_switch".into(),
            },
            s("tracepoint sched/sched_switch: its arguments are record fields, not variables"),
            None,
        ),
        (
            Error::NoFunction { path: "/x".into() },
            s("/x: the probe names no function to look up in the debug info"),
            None,
        ),
        (
            Error::Dwarf {
                path: "/x".into(),
                func: "f".into(),
                source: dwarf.clone(),
            },
            format!("/x: f: {dwarf}"),
            Some(dwarf.to_string()),
        ),
        (
            Error::Dwarf {
                path: "/x".into(),
                func: "f".into(),
                source: na.clone(),
            },
            format!("/x: f: {na} (optimized code: try another place, e.g. FUNC+0 or a line)"),
            Some(na.to_string()),
        ),
        (
            Error::DebugFile {
                path: "/x".into(),
                func: "f".into(),
                source: core,
            },
            format!("/x: f: {core}"),
            Some(core.to_string()),
        ),
        (
            site(SiteProblem::NoFileOffset),
            s("/x: f at 0x40: the address lies in no section with file contents"),
            Some(s("the address lies in no section with file contents")),
        ),
        (
            site(SiteProblem::NoSymbol),
            s("/x: f at 0x40: no function symbol holds the address"),
            Some(s("no function symbol holds the address")),
        ),
        (
            site(SiteProblem::NotProbe),
            s("/x: f at 0x40: not a kprobe or uprobe"),
            Some(s("not a kprobe or uprobe")),
        ),
        (
            site(SiteProblem::Prologue(core)),
            format!("/x: f at 0x40: {core}"),
            Some(core.to_string()),
        ),
        (
            site(SiteProblem::FetchArg(dwarf.clone())),
            format!("/x: f at 0x40: {dwarf}"),
            Some(dwarf.to_string()),
        ),
        (
            site(SiteProblem::NotResolved {
                position: 2,
                arg: "b".into(),
            }),
            s("/x: f at 0x40: argument 2 'b' was not resolved"),
            Some(s("argument 2 'b' was not resolved")),
        ),
        (
            site(SiteProblem::KernelGlobal {
                position: 1,
                arg: "jiffies".into(),
                source: Arc::new(Error::NoRunningSymbol {
                    name: "_stext".into(),
                }),
            }),
            s("/x: f at 0x40: argument 1 'jiffies' is a kernel global: /proc/kallsyms lists no \
               _stext: cannot tell the running kernel's KASLR offset"),
            Some(s("argument 1 'jiffies' is a kernel global: /proc/kallsyms lists no _stext: \
                    cannot tell the running kernel's KASLR offset")),
        ),
        (
            Error::FewerFetchArgs {
                spec: "kprobe/f(a, b)".into(),
                address: 0x40,
            },
            s("'kprobe/f(a, b)': site 0x40 has fewer fetch-args than the spec"),
            None,
        ),
        (
            Error::Unspellable {
                spec: "uprobe/x:f(g)".into(),
                address: 0x40,
                text: "uprobe/x:0x40(@+8)".into(),
                source: Some(probe),
            },
            format!(
                "'uprobe/x:f(g)': at 0x40 it reads as 'uprobe/x:0x40(@+8)': the spec grammar \
                 cannot take it: {probe}"
            ),
            Some(probe.to_string()),
        ),
        (
            Error::Unspellable {
                spec: "uprobe/x:f(g)".into(),
                address: 0x40,
                text: "xdp".into(),
                source: None,
            },
            s("'uprobe/x:f(g)': at 0x40 it reads as 'xdp': no probe spec"),
            None,
        ),
    ]
}

fn site(problem: SiteProblem) -> Error {
    Error::Site {
        path: "/x".into(),
        func: "f".into(),
        address: 0x40,
        problem,
    }
}

#[test]
fn every_variant_says_what_and_where_and_chains_its_source() {
    for (e, display, source) in rows() {
        assert_eq!(e.to_string(), display, "{e:?}");
        assert_eq!(
            e.source().map(ToString::to_string),
            source,
            "source of {e:?}"
        );
    }
}

#[test]
fn sources_are_the_inner_errors_themselves() {
    let e = Error::TargetBtf {
        path: None,
        source: btf(),
    };
    assert_eq!(
        e.source().and_then(|s| s.downcast_ref::<BtfError>()),
        Some(&btf())
    );
    let e = Error::Dwarf {
        path: "/x".into(),
        func: "f".into(),
        source: not_available(),
    };
    assert_eq!(
        e.source().and_then(|s| s.downcast_ref::<DwarfError>()),
        Some(&not_available())
    );
    let e = Error::BadSpec {
        program: "p".into(),
        spec: "s".into(),
        source: probe(),
    };
    assert_eq!(
        e.source().and_then(|s| s.downcast_ref::<ProbeError>()),
        Some(&probe())
    );
    let e = Error::Prologue {
        program: "p".into(),
        spec: "s".into(),
        source: Box::new(Error::Core(core())),
    };
    let inner = e.source().and_then(|s| s.downcast_ref::<Error>());
    assert!(matches!(inner, Some(Error::Core(c)) if *c == core()));
    // The chain goes on: Prologue → Error::Core → sluice_core::Error.
    let innermost = inner.and_then(|i| i.source());
    assert_eq!(
        innermost.and_then(|s| s.downcast_ref::<sluice_core::Error>()),
        Some(&core())
    );
    let e = site(SiteProblem::Arg {
        position: 1,
        arg: "x".into(),
        problem: ArgProblem::Location(not_available()),
    });
    let problem = e.source().and_then(|s| s.downcast_ref::<SiteProblem>());
    assert!(matches!(problem, Some(SiteProblem::Arg { .. })));
    // Site → SiteProblem::Arg → ArgProblem::Location → the DWARF error.
    let arg = problem.and_then(|p| p.source());
    assert!(matches!(
        arg.and_then(|a| a.downcast_ref::<ArgProblem>()),
        Some(ArgProblem::Location(_))
    ));
    let location = arg.and_then(|a| a.source());
    assert_eq!(
        location.and_then(|s| s.downcast_ref::<DwarfError>()),
        Some(&not_available())
    );
}

#[test]
fn argument_and_spec_problems() {
    let core = core();
    let rows: Vec<(ArgProblem, String, Option<String>)> = vec![
        (
            ArgProblem::String,
            "a string cannot be passed in a register (drop :string to get the pointer)".into(),
            None,
        ),
        (
            ArgProblem::PicGlobalAtReturn,
            "a global of a position-independent file (PIE or shared library) at a return \
             probe: the program finds where the file is loaded from the probed address, which \
             a return probe's registers no longer hold (they hold the return address); fetch \
             it at the function's entry or a line of it, or link the program -no-pie"
                .into(),
            None,
        ),
        (
            ArgProblem::ModuleGlobal,
            "a global of a kernel module: its address is known only once the module is loaded \
             (not supported; fetch it through a pointer argument, or probe vmlinux code)"
                .into(),
            None,
        ),
        (
            ArgProblem::Location(not_available()),
            not_available().to_string(),
            Some(not_available().to_string()),
        ),
        (
            ArgProblem::Prologue(core),
            core.to_string(),
            Some(core.to_string()),
        ),
        (
            ArgProblem::NoConvention { position: 3 },
            "no location by the calling convention (3)".into(),
            None,
        ),
    ];
    for (p, display, source) in rows {
        let e = site(SiteProblem::Arg {
            position: 3,
            arg: "a".into(),
            problem: p,
        });
        assert_eq!(
            e.to_string(),
            format!("/x: f at 0x40: argument 3 'a': {display}")
        );
        let SiteProblem::Arg { problem, .. } = e
            .source()
            .and_then(|s| s.downcast_ref::<SiteProblem>())
            .unwrap()
        else {
            panic!("{e:?}")
        };
        assert_eq!(problem.source().map(ToString::to_string), source);
    }
    let spec = [
        (SpecProblem::Parse(probe()), probe().to_string(), true),
        (
            SpecProblem::TracepointWithoutTarget,
            "tracepoint without a target".into(),
            false,
        ),
        (
            SpecProblem::NoSite,
            "the program was loaded without its DWARF site".into(),
            false,
        ),
        (
            SpecProblem::Title,
            "the section names no probe; map it with --event".into(),
            false,
        ),
    ];
    for (p, display, has_source) in spec {
        assert_eq!(p.to_string(), display);
        assert_eq!(p.source().is_some(), has_source, "{p:?}");
    }
}

#[test]
fn verifier_display_keeps_bytes() {
    let e = Error::Verifier {
        program: "p".into(),
        errno: Errno::ACCESS,
        log: b"0: R2 !read_ok\xff\n".to_vec(),
    };
    assert_eq!(e.verifier_log(), Some(&b"0: R2 !read_ok\xff\n"[..]));
    assert!(e.to_string().contains("R2 !read_ok"));
}

/// A program compiled to take a probe's arguments, loaded without them: the kernel's log
/// ends in `R5 !read_ok` (tests/bpf/dwarf_words.o with a spec of three arguments); the
/// message says which argument and how to give it (issue 14, item 6).
#[test]
fn an_argument_the_spec_does_not_pass_is_named() {
    let log = b"8: (7b) *(u64 *)(r10 -8) = r5\nR5 !read_ok\nprocessed 9 insns (limit 1000000)\n";
    let e = Error::Verifier {
        program: "p_words".into(),
        errno: Errno::ACCESS,
        log: log.to_vec(),
    };
    let text = e.to_string();
    let first = text.lines().next().unwrap();
    assert!(first.contains("it reads r5, its argument 4"), "{first}");
    assert!(first.contains("--event p_words=SPEC"), "{first}");
    // r1 (the context) or r0 are no arguments: no such hint.
    let e = Error::Verifier {
        program: "p".into(),
        errno: Errno::ACCESS,
        log: b"R0 !read_ok\n".to_vec(),
    };
    assert!(!e.to_string().contains("its argument"), "{e}");
}
