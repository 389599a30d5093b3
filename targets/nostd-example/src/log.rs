//! A `defmt` global logger for the example: encoded frames are appended to the host file
//! `sluice-defmt.bin` through semihosting (decode with `defmt-print -e <this ELF>`).
//! Single core, no interrupts: a flag is enough to catch re-entrant use.

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::semihosting::Handle;

#[defmt::global_logger]
struct Logger;

static TAKEN: AtomicBool = AtomicBool::new(false);
/// Host file handle + 1 (0: not opened yet).
static FILE: AtomicUsize = AtomicUsize::new(0);
static mut ENCODER: defmt::Encoder = defmt::Encoder::new();

fn file() -> Option<Handle> {
    match FILE.load(Ordering::Relaxed) {
        0 => {
            let h = Handle::create(b"sluice-defmt.bin\0")?;
            FILE.store(h.raw() + 1, Ordering::Relaxed);
            Some(h)
        }
        n => Some(Handle::from_raw(n - 1)),
    }
}

fn write(bytes: &[u8]) {
    if let Some(h) = file() {
        let _ = h.write(bytes);
    }
}

// SAFETY: acquire/release bracket every frame and `TAKEN` makes them exclusive, so the
// encoder is only ever used by one frame at a time (defmt's `Logger` contract).
unsafe impl defmt::Logger for Logger {
    fn acquire() {
        if TAKEN.swap(true, Ordering::Acquire) {
            panic!("defmt logger taken reentrantly");
        }
        // SAFETY: exclusive per the flag above; no other reference to ENCODER is live.
        unsafe { (*core::ptr::addr_of_mut!(ENCODER)).start_frame(write) }
    }

    unsafe fn flush() {}

    unsafe fn release() {
        // SAFETY: called after `acquire` by the same (only) thread of execution.
        unsafe { (*core::ptr::addr_of_mut!(ENCODER)).end_frame(write) }
        TAKEN.store(false, Ordering::Release);
    }

    unsafe fn write(bytes: &[u8]) {
        // SAFETY: between `acquire` and `release`, see above.
        unsafe { (*core::ptr::addr_of_mut!(ENCODER)).write(bytes, write) }
    }
}

defmt::timestamp!("{=u64}", {
    let ticks: u64;
    // SAFETY: CNTVCT_EL0 (the virtual count) is readable at EL1 and has no side effects.
    unsafe { core::arch::asm!("mrs {}, cntvct_el0", out(reg) ticks, options(nomem, nostack)) };
    ticks
});
