//! The mapped perf ring itself: the control page's positions and bounded reads of the data area.
//!
//! `struct perf_event_mmap_page` (`include/uapi/linux/perf_event.h`) is one page; the
//! fields used here sit at fixed offsets that the kernel has kept since 4.1:
//! `data_head` at 1024, `data_tail` at 1032, `data_offset` at 1040, `data_size` at 1048
//! (the 1024 bytes before them are the self-monitoring part, padded by `__reserved`).
//! The kernel writes records, then publishes `data_head` after a write barrier, so
//! `data_head` is read with Acquire; the reader publishes what it consumed by writing
//! `data_tail` with Release, after which the kernel may overwrite those bytes.
//!
//! Only bytes in `[tail, head)` are ever turned into slices: they are the ones the kernel
//! promises not to touch until `data_tail` moves past them.

use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};
use std::os::fd::BorrowedFd;

use rustix::mm::{MapFlags, ProtFlags};

/// Offset of `data_head` in `struct perf_event_mmap_page`.
#[doc(alias = "data_head")]
pub const DATA_HEAD_OFFSET: usize = 1024;
/// Offset of `data_tail`.
#[doc(alias = "data_tail")]
pub const DATA_TAIL_OFFSET: usize = 1032;
/// Offset of `data_offset`.
#[doc(alias = "data_offset")]
pub const DATA_OFFSET_OFFSET: usize = 1040;
/// Offset of `data_size`.
#[doc(alias = "data_size")]
pub const DATA_SIZE_OFFSET: usize = 1048;

/// A `1 + 2^n` page shared mapping of a perf event (or an anonymous stand-in).
///
/// Invariants, established by the constructors: `ptr` is page-aligned and maps `len`
/// bytes readable and writable; `data_offset + data_size <= len`; `data_size` is a power
/// of two and at least one page; `data_offset >= DATA_SIZE_OFFSET + 8`.
#[derive(Debug)]
pub(crate) struct Mapping {
    ptr: NonNull<c_void>,
    len: usize,
    data_offset: usize,
    data_size: usize,
}

// SAFETY: the mapping is owned by this value alone (unmapped in Drop) and holds no
// thread-bound state; moving it to another thread moves that ownership. Shared access
// goes through atomics (positions) or `&self` reads of `[tail, head)`.
unsafe impl Send for Mapping {}

/// Why a mapping could not be set up.
#[derive(Debug)]
pub(crate) enum MapError {
    Errno(rustix::io::Errno),
    Layout { data_offset: u64, data_size: u64 },
}

impl Mapping {
    /// Maps `1 + data_pages` pages of the perf event `fd` (`mmap(2)` with `MAP_SHARED`,
    /// `PROT_READ | PROT_WRITE`: writable so `data_tail` can be stored, which puts the
    /// ring in the mode where the kernel never overwrites unread records).
    pub(crate) fn map_fd(fd: BorrowedFd<'_>, data_pages: usize) -> Result<Self, MapError> {
        let page = rustix::param::page_size();
        let len = total_len(page, data_pages)?;
        // SAFETY: a fresh mapping at an address the kernel chooses (null hint), so no
        // existing memory is replaced; perf_event_open(2) "MMAP layout" requires exactly
        // 1 + 2^n pages at offset 0, which `total_len` enforces.
        let ptr = unsafe {
            rustix::mm::mmap(
                core::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd,
                0,
            )
        }
        .map_err(MapError::Errno)?;
        Self::adopt(ptr, len, page)
    }

    /// An anonymous mapping laid out like a perf ring, with `data_offset` and `data_size`
    /// filled in as the kernel would: a ring with no kernel behind it.
    pub(crate) fn anonymous(data_pages: usize) -> Result<Self, MapError> {
        let page = rustix::param::page_size();
        let len = total_len(page, data_pages)?;
        // SAFETY: a fresh private anonymous mapping at a kernel-chosen address (mmap(2)).
        let ptr = unsafe {
            rustix::mm::mmap_anonymous(
                core::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }
        .map_err(MapError::Errno)?;
        let ptr = NonNull::new(ptr).ok_or(MapError::Errno(rustix::io::Errno::NOMEM))?;
        let tmp = Mapping {
            ptr,
            len,
            data_offset: page,
            data_size: len - page,
        };
        tmp.field(DATA_OFFSET_OFFSET)
            .store(page as u64, Ordering::Relaxed);
        tmp.field(DATA_SIZE_OFFSET)
            .store((len - page) as u64, Ordering::Relaxed);
        Ok(tmp)
    }

    /// Takes ownership of `ptr` (`len` bytes) and validates the control page.
    fn adopt(ptr: *mut c_void, len: usize, page: usize) -> Result<Self, MapError> {
        let ptr = NonNull::new(ptr).ok_or(MapError::Errno(rustix::io::Errno::NOMEM))?;
        // Provisional layout so Drop unmaps on the error paths below.
        let mut m = Mapping {
            ptr,
            len,
            data_offset: page,
            data_size: len - page,
        };
        let data_offset = m.field(DATA_OFFSET_OFFSET).load(Ordering::Relaxed);
        let data_size = m.field(DATA_SIZE_OFFSET).load(Ordering::Relaxed);
        if data_offset == 0 && data_size == 0 {
            // Kernels before 4.1 leave both zero: the data area is everything after the
            // first page.
            return Ok(m);
        }
        let fits = usize::try_from(data_offset)
            .ok()
            .zip(usize::try_from(data_size).ok())
            .filter(|&(off, size)| {
                off >= DATA_SIZE_OFFSET + 8
                    && size.is_power_of_two()
                    && off.checked_add(size).is_some_and(|end| end <= len)
            });
        let Some((off, size)) = fits else {
            return Err(MapError::Layout {
                data_offset,
                data_size,
            });
        };
        m.data_offset = off;
        m.data_size = size;
        Ok(m)
    }

    /// Size of the data area (a power of two).
    pub(crate) fn data_size(&self) -> usize {
        self.data_size
    }

    /// Offset of the data area from the start of the mapping.
    pub(crate) fn data_offset(&self) -> usize {
        self.data_offset
    }

    fn field(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset + 8 <= self.data_offset && offset % 8 == 0);
        // SAFETY: `offset` is one of the u64 fields of the control page, below
        // `data_offset` (invariant), 8-aligned because the mapping is page-aligned; the
        // memory lives as long as `&self`. The kernel accesses these words atomically
        // (READ_ONCE/smp_store_release in kernel/events/ring_buffer.c), so viewing them as
        // AtomicU64 matches its protocol.
        unsafe { AtomicU64::from_ptr(self.ptr.as_ptr().cast::<u8>().add(offset).cast::<u64>()) }
    }

    /// `data_head`, with Acquire: every record before it is fully written.
    pub(crate) fn head(&self) -> u64 {
        self.field(DATA_HEAD_OFFSET).load(Ordering::Acquire)
    }

    /// Publishes `data_tail` with Release: our reads of the bytes before it are done.
    pub(crate) fn set_tail(&self, tail: u64) {
        self.field(DATA_TAIL_OFFSET).store(tail, Ordering::Release);
    }

    /// `data_tail` as last published (by us), with Acquire; used by the stand-in writer.
    pub(crate) fn tail(&self) -> u64 {
        self.field(DATA_TAIL_OFFSET).load(Ordering::Acquire)
    }

    /// Publishes `data_head`: only the stand-in writer of an anonymous ring does this.
    pub(crate) fn set_head(&self, head: u64) {
        self.field(DATA_HEAD_OFFSET).store(head, Ordering::Release);
    }

    /// The `len` data bytes at ring offset `off`, when they do not wrap.
    ///
    /// The caller passes only bytes inside `[tail, head)` (see the module doc); `None`
    /// when the span is out of the data area.
    pub(crate) fn span(&self, off: usize, len: usize) -> Option<&[u8]> {
        let end = off.checked_add(len)?;
        if end > self.data_size {
            return None;
        }
        // SAFETY: `off + len <= data_size` and `data_offset + data_size <= len` of the
        // mapping (invariant), so the range is inside the mapping, which outlives `&self`.
        // The caller only asks for published, unconsumed bytes, which the kernel does not
        // write until `data_tail` passes them (perf_event_open(2), "data_tail").
        Some(unsafe {
            core::slice::from_raw_parts(
                self.ptr
                    .as_ptr()
                    .cast::<u8>()
                    .add(self.data_offset + off)
                    .cast_const(),
                len,
            )
        })
    }

    /// Asks the CPU to fetch the cache line at ring offset `off` (wrapped into the data
    /// area) ahead of its read: a hint, which never faults and changes nothing.
    pub(crate) fn prefetch(&self, off: usize) {
        let off = off & (self.data_size - 1);
        let at = self
            .ptr
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(self.data_offset + off);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch reads nothing into the program and cannot fault; the address
        // is inside the mapping anyway (`off < data_size`). SSE is baseline on x86_64.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                at.cast_const().cast(),
            );
        }
        #[cfg(target_arch = "aarch64")]
        // SAFETY: `prfm` is a hint: it cannot fault, writes no register and no memory.
        unsafe {
            core::arch::asm!(
                "prfm pldl1keep, [{0}]",
                in(reg) at,
                options(nostack, preserves_flags, readonly)
            );
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let _ = at;
    }

    /// Copies `out.len()` bytes starting at ring offset `off`, wrapping at the end of the
    /// data area. `out.len()` must not exceed the data size.
    pub(crate) fn copy_wrapped(&self, off: usize, out: &mut [u8]) -> Option<()> {
        let off = off & (self.data_size - 1);
        let first = out.len().min(self.data_size - off);
        let (a, b) = out.split_at_mut(first);
        a.copy_from_slice(self.span(off, first)?);
        b.copy_from_slice(self.span(0, b.len())?);
        Some(())
    }

    /// Writes `bytes` at ring offset `off`, wrapping: the stand-in writer's copy.
    pub(crate) fn write_wrapped(&mut self, off: usize, bytes: &[u8]) -> Option<()> {
        if bytes.len() > self.data_size {
            return None;
        }
        let off = off & (self.data_size - 1);
        let first = bytes.len().min(self.data_size - off);
        let (a, b) = bytes.split_at(first);
        for (at, part) in [(off, a), (0, b)] {
            // SAFETY: `at + part.len() <= data_size` by construction (first part ends at
            // most at data_size, second part is shorter than off), so the destination is
            // inside the data area; `&mut self` excludes readers of this mapping, and an
            // anonymous mapping has no kernel writer.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    part.as_ptr(),
                    self.ptr.as_ptr().cast::<u8>().add(self.data_offset + at),
                    part.len(),
                );
            }
        }
        Some(())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned and no slice into the mapping
        // outlives `self` (they all borrow it).
        if let Err(e) = unsafe { rustix::mm::munmap(self.ptr.as_ptr(), self.len) } {
            log::warn!("munmap of a perf ring failed: {e}");
        }
    }
}

fn total_len(page: usize, data_pages: usize) -> Result<usize, MapError> {
    if !data_pages.is_power_of_two() {
        return Err(MapError::Layout {
            data_offset: page as u64,
            data_size: data_pages as u64,
        });
    }
    data_pages
        .checked_add(1)
        .and_then(|p| p.checked_mul(page))
        .ok_or(MapError::Errno(rustix::io::Errno::NOMEM))
}
