//! Arm semihosting (AArch64 `HLT #0xF000`): the debugger/emulator (here QEMU with
//! `-semihosting-config enable=on`) services console output, host files and exit.
//! Reference: Arm "Semihosting for AArch32 and AArch64", release 2.0, sections 5.x.

use core::arch::asm;
use core::fmt;

const SYS_OPEN: usize = 0x01;
const SYS_WRITE: usize = 0x05;
const SYS_EXIT: usize = 0x18;
/// `ADP_Stopped_ApplicationExit`: with the AArch64 parameter block, the subcode is the exit status.
const ADP_STOPPED_APPLICATION_EXIT: usize = 0x20026;
/// `SYS_OPEN` mode 4 is fopen's "w"; 5 is "wb".
const MODE_W: usize = 4;
#[cfg(feature = "defmt")]
const MODE_WB: usize = 5;

/// One semihosting call: operation in w0, parameter (usually a block pointer) in x1, result in x0.
fn call(op: usize, param: usize) -> isize {
    let ret: isize;
    // SAFETY: HLT #0xF000 is the architected AArch64 semihosting trap; QEMU reads the
    // operation and the parameter block (which the callers keep alive across the call) and
    // returns in x0. It touches no other register or memory of ours.
    unsafe {
        asm!("hlt #0xf000", inout("x0") op => ret, in("x1") param, options(nostack));
    }
    ret
}

/// An open host file handle.
#[derive(Clone, Copy)]
pub struct Handle(usize);

impl Handle {
    /// The host's console (the special file name `:tt` opened for writing).
    pub fn stdout() -> Option<Handle> {
        Self::open(b":tt\0", MODE_W)
    }

    /// A host file, created or truncated, opened for binary writes.
    #[cfg(feature = "defmt")]
    pub fn create(name_nul: &'static [u8]) -> Option<Handle> {
        Self::open(name_nul, MODE_WB)
    }

    fn open(name_nul: &[u8], mode: usize) -> Option<Handle> {
        let block = [
            name_nul.as_ptr() as usize,
            mode,
            name_nul.len().saturating_sub(1),
        ];
        let h = call(SYS_OPEN, block.as_ptr() as usize);
        usize::try_from(h).ok().map(Handle)
    }

    /// The host's handle number.
    #[cfg(feature = "defmt")]
    pub fn raw(self) -> usize {
        self.0
    }

    /// A handle number obtained from [`Handle::raw`].
    #[cfg(feature = "defmt")]
    pub fn from_raw(raw: usize) -> Handle {
        Handle(raw)
    }

    /// Writes all of `bytes` (SYS_WRITE returns the count *not* written).
    pub fn write(self, bytes: &[u8]) -> bool {
        let block = [self.0, bytes.as_ptr() as usize, bytes.len()];
        call(SYS_WRITE, block.as_ptr() as usize) == 0
    }
}

impl fmt::Write for Handle {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.write(s.as_bytes()) {
            Ok(())
        } else {
            Err(fmt::Error)
        }
    }
}

/// Ends the emulation; QEMU exits with `code`.
pub fn exit(code: u32) -> ! {
    let block = [ADP_STOPPED_APPLICATION_EXIT, code as usize];
    call(SYS_EXIT, block.as_ptr() as usize);
    // Not under semihosting (e.g. real hardware without a debugger): park the core.
    loop {
        core::hint::spin_loop();
    }
}
