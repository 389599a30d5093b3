//! Opens (and relocates) eBPF objects in a loop, for whole-process and callgrind
//! measurements beside the peers (`benches/vs_peers.sh`).
//!
//! ```text
//! objopen -c K OBJ        one warm-up, then K calls of `measured_open` (fresh storage on
//!                         its own frame each time), then the same for `measured_reopen`
//!                         (one storage reused across calls), then `measured_open_only`
//!                         (fresh storage, no relocation: what the peers' "open" does);
//!                         callgrind: --toggle-collect=measured_open, measured_reopen or
//!                         measured_open_only
//! objopen -a OBJ...       print heap allocations per open+relocate of each object
//! ```
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use sluice_core::object::{Object, ObjectStorage};
use sluice_core::Insn;
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        // SAFETY: caller's contract.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: caller's contract.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// One open of `bytes` into storage reused across calls, plus the relocation of every
/// program.
#[inline(never)]
#[unsafe(no_mangle)]
pub fn measured_reopen(
    storage: &mut ObjectStorage<'static>,
    bytes: &'static [u8],
    out: &mut [Insn],
) -> usize {
    let Ok(obj) = Object::open(bytes, storage) else {
        return usize::MAX;
    };
    relocate_all(&obj, out)
}

/// One open of `bytes` (into fresh storage on this frame) plus the relocation of every
/// program into `out`; returns the number of instructions written (or `usize::MAX` when
/// the object does not open).
#[inline(never)]
#[unsafe(no_mangle)]
pub fn measured_open(bytes: &[u8], out: &mut [Insn]) -> usize {
    let mut storage = ObjectStorage::new();
    let Ok(obj) = Object::open(bytes, &mut storage) else {
        return usize::MAX;
    };
    relocate_all(&obj, out)
}

/// One open of `bytes` into fresh storage on this frame, nothing relocated (libbpf's
/// `bpf_object__open` and aya's `Object::parse` relocate nothing either); returns the
/// number of programs (or `usize::MAX` when the object does not open).
#[inline(never)]
#[unsafe(no_mangle)]
pub fn measured_open_only(bytes: &[u8]) -> usize {
    let mut storage = ObjectStorage::new();
    match Object::open(bytes, &mut storage) {
        Ok(obj) => obj.programs().len(),
        Err(_) => usize::MAX,
    }
}

#[inline(always)]
fn relocate_all(obj: &Object<'_, '_>, out: &mut [Insn]) -> usize {
    let mut n = 0;
    for p in 0..obj.programs().len() {
        n += obj.relocate(p, &[], &[3; 128], out).unwrap_or(0);
    }
    n
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut out = vec![Insn::default(); 1 << 16];
    match args.first().map(String::as_str) {
        Some("-c") => {
            let k: usize = args[1].parse().expect("K");
            let bytes = std::fs::read(&args[2]).expect("object");
            let first = measured_open(black_box(&bytes), &mut out);
            for _ in 0..k {
                black_box(measured_open(black_box(&bytes), &mut out));
            }
            println!("{} insns relocated per open", first);
            let bytes: &'static [u8] = Vec::leak(bytes);
            let mut storage = Box::new(ObjectStorage::new());
            measured_reopen(&mut storage, bytes, &mut out);
            for _ in 0..k {
                black_box(measured_reopen(&mut storage, black_box(bytes), &mut out));
            }
            for _ in 0..=k {
                black_box(measured_open_only(black_box(bytes)));
            }
        }
        Some("-a") => {
            for path in &args[1..] {
                let bytes = std::fs::read(path).expect("object");
                let before = ALLOCS.load(Relaxed);
                let n = measured_open(black_box(&bytes), &mut out);
                let allocs = ALLOCS.load(Relaxed) - before;
                let status = if n == usize::MAX {
                    "refused".to_string()
                } else {
                    format!("{n} insns")
                };
                println!("{path}\t{allocs} allocs\t{status}");
            }
        }
        _ => {
            eprintln!("usage: objopen -c K OBJ | -a OBJ...");
            std::process::exit(2);
        }
    }
}
