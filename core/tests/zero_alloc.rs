//! Open + relocate + disassemble make zero heap allocations: a counting global allocator
//! watches them over every fixture.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

mod common;

use sluice_core::disasm::Listing;
use sluice_core::object::ObjectStorage;
use sluice_core::{Insn, Object};
use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static WATCH: AtomicBool = AtomicBool::new(false);
/// The watched thread's id: only its allocations count (the test harness's own threads
/// may allocate while the watched code runs).
static WATCHED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local!(static MARK: u8 = const { 0 });

/// This thread's identity without allocating (`thread::current()` may allocate): the address
/// of a const-initialised thread-local.
fn thread_mark() -> u64 {
    MARK.with(|m| m as *const u8 as u64)
}

fn on_watched_thread() -> bool {
    WATCH.load(Ordering::Relaxed) && WATCHED.load(Ordering::Relaxed) == thread_mark()
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if on_watched_thread() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if on_watched_thread() {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Counts bytes written without storing them.
struct Sink(usize);
impl Write for Sink {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

#[test]
fn open_relocate_disasm_allocate_nothing() {
    let files: Vec<Vec<u8>> = common::fixtures()
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let mut out = vec![Insn::default(); 1 << 16];
    let fds = [7i32; 128];
    let mut programs = 0;
    let mut text = Sink(0);
    ALLOCS.store(0, Ordering::SeqCst);
    WATCHED.store(thread_mark(), Ordering::SeqCst);
    WATCH.store(true, Ordering::SeqCst);
    for bytes in &files {
        let mut storage = ObjectStorage::new();
        let obj = Object::open(bytes, &mut storage).unwrap();
        for (i, _) in obj.programs().iter().enumerate() {
            // Programs with call/data relocations are not linkable yet; they still must not allocate.
            if let Ok(n) = obj.relocate(i, &[], &fds, &mut out) {
                write!(text, "{}", Listing::new(&out[..n])).unwrap();
                programs += 1;
            }
        }
    }
    WATCH.store(false, Ordering::SeqCst);
    let allocs = ALLOCS.load(Ordering::SeqCst);
    assert!(programs > 0 && text.0 > 0, "nothing was exercised");
    assert_eq!(
        allocs, 0,
        "{allocs} heap allocations over {programs} programs"
    );
}
