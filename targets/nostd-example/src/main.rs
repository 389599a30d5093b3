//! Embedding `sluice-core` on bare metal: no `std`, no allocator, no kernel.
//!
//! An eBPF object is compiled into the image (`include_bytes!`), opened with small capacities
//! (`ObjectStorage<4, 4>`: the whole object state lives on the stack), and every program is relocated
//! into a fixed `[Insn; N]` buffer with made-up map fds, exactly as a loader would before
//! `BPF_PROG_LOAD`, behind an argument-fetching prologue generated for this arch from a typed
//! spec (`kprobe/vfs_read(void *, char *, unsigned long)`: x0..x2 of arm64's `pt_regs` into
//! r2..r4) in a fixed buffer. The results go to the host through Arm semihosting, and the exit
//! code says whether every check held (0) or not (1), so `cargo run` under QEMU is a test.
#![no_std]
#![no_main]

mod semihosting;

use core::fmt::Write;
use core::panic::PanicInfo;

use sluice_core::arch::Arch;
use sluice_core::object::PSEUDO_MAP_FD;
use sluice_core::{Insn, Object, ObjectStorage};

use semihosting::Handle;

core::arch::global_asm!(include_str!("boot.s"));

/// The first seed's kind of object: three perf-style probe programs and four legacy maps.
static OBJECT: &[u8] = include_bytes!("../../../tests/bpf/legacy_maps.o");

/// Capacities chosen for this object: at most 4 programs and 4 maps.
type SmallStorage<'a> = ObjectStorage<'a, 4, 4>;

/// Instructions per relocated program (the largest program here has 44, the prologue 5).
const MAX_INSNS: usize = 64;

/// The typed entry arguments the prologue fetches, from the calling convention (no DWARF).
const SPEC: &str = "kprobe/vfs_read(void *, char *, unsigned long)";

/// Room for the generated prologue.
const PROLOGUE_CAP: usize = 16;

/// Stand-ins for the map fds `BPF_MAP_CREATE` would return, one per map.
const MAP_FDS: [i32; 4] = [10, 11, 12, 13];

#[cfg(feature = "defmt")]
mod log;

/// What went wrong, for the exit code and the last line.
enum Failure {
    Open(sluice_core::Error),
    Relocate(usize, sluice_core::Error),
    Prologue(sluice_core::Error),
    Check(&'static str),
}

fn run(out: &mut Handle) -> Result<usize, Failure> {
    let mut storage = SmallStorage::with_capacities();
    let obj = Object::open(OBJECT, &mut storage).map_err(Failure::Open)?;
    let _ = writeln!(
        out,
        "sluice-nostd: object {} bytes, license {:?}, version {:?}, {} programs, {} maps",
        OBJECT.len(),
        obj.license(),
        obj.version(),
        obj.programs().len(),
        obj.maps().len()
    );
    #[cfg(feature = "defmt")]
    defmt::info!(
        "object: {=usize} programs, {=usize} maps",
        obj.programs().len(),
        obj.maps().len()
    );

    // The prologue: parse the spec, lay out its arguments by arm64's calling convention,
    // emit the instructions into a fixed buffer.
    let Ok(sluice_core::probe::Section::Probe(spec)) = sluice_core::probe::parse(SPEC) else {
        return Err(Failure::Check("the typed spec does not parse"));
    };
    let locs = sluice_core::prologue::from_typed_args(Arch::Aarch64, spec.kind(), spec.args())
        .map_err(Failure::Prologue)?;
    let mut pbuf = [Insn::default(); PROLOGUE_CAP];
    let plen = sluice_core::prologue::write(&locs, &mut pbuf).map_err(Failure::Prologue)?;
    let prologue = pbuf
        .get(..plen)
        .ok_or(Failure::Check("prologue overran its buffer"))?;
    // r6 = ctx first, x0..x2 (pt_regs offsets 0, 8, 16) into r2..r4, r1 = ctx last.
    let loads: [(u8, i16); 3] = [(2, 0), (3, 8), (4, 16)];
    let fetched = loads.iter().all(|&(dst, off)| {
        prologue
            .iter()
            .any(|i| i.code() == 0x79 && i.dst() == dst && i.src() == 6 && i.off() == off)
    });
    let framed = prologue
        .first()
        .is_some_and(|i| i.code() == 0xbf && i.dst() == 6 && i.src() == 1)
        && prologue
            .last()
            .is_some_and(|i| i.code() == 0xbf && i.dst() == 1 && i.src() == 6);
    if !fetched || !framed {
        return Err(Failure::Check("prologue does not fetch x0..x2 into r2..r4"));
    }
    let _ = writeln!(out, "sluice-nostd: prologue for `{SPEC}`: {plen} insns");
    #[cfg(feature = "defmt")]
    defmt::info!("prologue: {=usize} insns", plen);

    let mut buf = [Insn::default(); MAX_INSNS];
    let mut patched_total = 0;
    for (i, prog) in obj.programs().iter().enumerate() {
        let n = obj
            .relocate(i, prologue, &MAP_FDS, &mut buf)
            .map_err(|e| Failure::Relocate(i, e))?;
        let written = buf
            .get(..n)
            .ok_or(Failure::Check("relocate overran its buffer"))?;
        // every map load must now carry BPF_PSEUDO_MAP_FD and one of our fds
        let patched = written
            .iter()
            .filter(|insn| insn.is_ld_imm64() && insn.src() == PSEUDO_MAP_FD)
            .inspect(|insn| {
                #[cfg(feature = "defmt")]
                defmt::debug!("map load: {}", insn);
                let _ = insn;
            })
            .filter(|insn| MAP_FDS.contains(&insn.imm()))
            .count();
        if patched != prog.map_reloc_count() {
            return Err(Failure::Check(
                "a map relocation was not patched with its fd",
            ));
        }
        if buf.get(..plen) != Some(prologue) {
            return Err(Failure::Check(
                "the program does not start with the prologue",
            ));
        }
        if n != plen + prog.insn_count() {
            return Err(Failure::Check(
                "relocated length differs from the program's",
            ));
        }
        patched_total += patched;
        let _ = writeln!(
            out,
            "sluice-nostd: program {i} `{}`: {n} insns, {patched} map loads patched",
            prog.section_name
        );
        #[cfg(feature = "defmt")]
        defmt::info!(
            "program {=usize} {=str}: {=usize} insns",
            i,
            prog.section_name,
            n
        );
    }
    if patched_total == 0 {
        return Err(Failure::Check("the object's map loads were not found"));
    }
    Ok(obj.programs().len())
}

#[no_mangle]
extern "C" fn main() -> ! {
    let Some(mut out) = Handle::stdout() else {
        semihosting::exit(3);
    };
    let code = match run(&mut out) {
        Ok(programs) => {
            let _ = writeln!(out, "sluice-nostd: ok, {programs} programs relocated");
            0
        }
        Err(Failure::Open(e)) => {
            let _ = writeln!(out, "sluice-nostd: open failed: {e}");
            1
        }
        Err(Failure::Prologue(e)) => {
            let _ = writeln!(out, "sluice-nostd: prologue failed: {e}");
            1
        }
        Err(Failure::Relocate(i, e)) => {
            let _ = writeln!(out, "sluice-nostd: relocating program {i} failed: {e}");
            1
        }
        Err(Failure::Check(what)) => {
            let _ = writeln!(out, "sluice-nostd: check failed: {what}");
            1
        }
    };
    semihosting::exit(code)
}

#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    if let Some(mut out) = Handle::stdout() {
        let _ = writeln!(out, "sluice-nostd: panic: {info}");
    }
    semihosting::exit(101)
}
