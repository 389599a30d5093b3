//! Embedding `sluice-core` on bare metal: no `std`, no allocator, no kernel.
//!
//! An eBPF object is compiled into the image (`include_bytes!`), opened with small capacities
//! (`ObjectStorage<4, 4>`: the whole object state lives on the stack), and every program is relocated
//! into a fixed `[Insn; N]` buffer with made-up map fds, exactly as a loader would before
//! `BPF_PROG_LOAD`. The results go to the host through Arm semihosting, and the exit code says
//! whether every check held (0) or not (1), so `cargo run` under QEMU is a test.
//!
//! Not yet: argument-fetching prologues. When `sluice_core::prologue` exists, the empty
//! `PROLOGUE` below becomes a generated one (and the output buffer grows by its length).
#![no_std]
#![no_main]

mod semihosting;

use core::fmt::Write;
use core::panic::PanicInfo;

use sluice_core::object::PSEUDO_MAP_FD;
use sluice_core::{Insn, Object, ObjectStorage};

use semihosting::Handle;

core::arch::global_asm!(include_str!("boot.s"));

/// The first seed's kind of object: three perf-style probe programs and four legacy maps.
static OBJECT: &[u8] = include_bytes!("../../../tests/bpf/legacy_maps.o");

/// Capacities chosen for this object: at most 4 programs and 4 maps.
type SmallStorage<'a> = ObjectStorage<'a, 4, 4>;

/// Instructions per relocated program (the largest program here has 44).
const MAX_INSNS: usize = 64;

/// Stand-ins for the map fds `BPF_MAP_CREATE` would return, one per map.
const MAP_FDS: [i32; 4] = [10, 11, 12, 13];

/// Prepended to each program; empty until the prologue generator lands in `sluice-core`.
const PROLOGUE: &[Insn] = &[];

#[cfg(feature = "defmt")]
mod log;

/// What went wrong, for the exit code and the last line.
enum Failure {
    Open(sluice_core::Error),
    Relocate(usize, sluice_core::Error),
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

    let mut buf = [Insn::default(); MAX_INSNS];
    let mut patched_total = 0;
    for (i, prog) in obj.programs().iter().enumerate() {
        let n = obj
            .relocate(i, PROLOGUE, &MAP_FDS, &mut buf)
            .map_err(|e| Failure::Relocate(i, e))?;
        let written = buf
            .get(..n)
            .ok_or(Failure::Check("relocate overran its buffer"))?;
        // every map load must now carry BPF_PSEUDO_MAP_FD and one of our fds
        let patched = written
            .iter()
            .filter(|insn| insn.is_ld_imm64() && insn.src == PSEUDO_MAP_FD)
            .inspect(|insn| {
                #[cfg(feature = "defmt")]
                defmt::debug!("map load: {}", insn);
                let _ = insn;
            })
            .filter(|insn| MAP_FDS.contains(&insn.imm))
            .count();
        if patched != prog.map_reloc_count() {
            return Err(Failure::Check(
                "a map relocation was not patched with its fd",
            ));
        }
        if n != PROLOGUE.len() + prog.insn_count() {
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
