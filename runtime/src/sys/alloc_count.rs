//! A global allocator that counts the allocations of each thread, for the tests that
//! prove a path allocates nothing per record (feature `alloc-count`; the CLI's output
//! tests declare it as their `#[global_allocator]`, the CLI itself forbids `unsafe`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    // A const-initialized `Cell<u64>`: no lazy set-up, no destructor, so reading it
    // inside the allocator allocates nothing.
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, counting `alloc` and `realloc` calls per thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counting;

impl Counting {
    /// Allocations (and reallocations) made by the calling thread so far.
    #[must_use]
    pub fn allocations() -> u64 {
        ALLOCS.with(Cell::get)
    }
}

fn count() {
    // During thread teardown the slot may be gone: that allocation is not counted.
    let _ = ALLOCS.try_with(|c| c.set(c.get().wrapping_add(1)));
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
