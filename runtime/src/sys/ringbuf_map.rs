//! The mapping of a BPF ring buffer (`BPF_MAP_TYPE_RINGBUF`, Linux 5.8) and its atomic
//! positions.
//!
//! `kernel/bpf/ringbuf.c` lays the map's pages out for `mmap(2)` as
//!
//! ```text
//! file offset 0          consumer page: consumer_pos (u64 at 0)      user: read-write
//! file offset PAGE       producer page: producer_pos (u64 at 0)      user: read-only
//! file offset 2 * PAGE   data, `max_entries` bytes (a power of two),  user: read-only
//!                        mapped twice in a row, so a record that wraps the end
//!                        reads on as one contiguous slice
//! ```
//!
//! The kernel refuses a writable mapping of anything past the consumer page
//! (`ringbuf_map_mmap_kern`), so this module makes two mappings: one page read-write for
//! `consumer_pos`, and `PAGE + 2 * size` read-only from file offset `PAGE`, as libbpf's
//! `ring_buffer__add` does.
//!
//! # Ordering (as the kernel pairs it)
//! - The producer (`__bpf_ringbuf_reserve`) writes a record's header with the BUSY bit,
//!   then publishes `producer_pos` with `smp_store_release`: we read `producer_pos` with
//!   Acquire, so the header word of every record before it is visible.
//! - The producer commits (`bpf_ringbuf_commit`) by exchanging the header word (a full
//!   barrier after the payload's writes) to clear BUSY or set DISCARD: we read that word
//!   with Acquire, so a record seen without BUSY has its payload visible.
//! - We publish `consumer_pos` with Release once the record is read; the kernel reads it
//!   with `smp_load_acquire` before reusing the space.

use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::os::fd::BorrowedFd;

use rustix::mm::{MapFlags, ProtFlags};

/// Why a ring buffer could not be mapped.
#[derive(Debug)]
pub(crate) enum MapError {
    /// `mmap(2)` failed.
    Errno(rustix::io::Errno),
    /// The size is not a power of two of at least one page (the kernel's own rule), or
    /// the mapping's length overflows.
    Size(u64),
}

/// One `mmap(2)` region, unmapped on drop.
#[derive(Debug)]
struct Region {
    ptr: NonNull<c_void>,
    len: usize,
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned and no slice into the region
        // outlives the `RingbufMapping` that owns it (they all borrow it).
        if let Err(e) = unsafe { rustix::mm::munmap(self.ptr.as_ptr(), self.len) } {
            log::warn!("munmap of a BPF ring buffer failed: {e}");
        }
    }
}

/// The two mappings of a ring buffer (or an anonymous stand-in).
///
/// Invariants, established by the constructors: `consumer` maps at least 8 bytes
/// read-write, page-aligned; `producer` maps `page + 2 * size` bytes, page-aligned, its
/// first 8 bytes `producer_pos`, the data at `page`, and the data's second copy at
/// `page + size`; `size` is a power of two and at least one page.
#[derive(Debug)]
pub(crate) struct RingbufMapping {
    consumer: Region,
    producer: Region,
    page: usize,
    size: usize,
    /// An anonymous stand-in: the data is not mapped twice, the writer copies it.
    anonymous: bool,
}

// SAFETY: the regions are owned by this value alone (unmapped in Drop) and hold no
// thread-bound state; shared access goes through atomics (positions, header words) or
// `&self` reads of records the producer committed.
unsafe impl Send for RingbufMapping {}

fn checked_size(size: u64, page: usize) -> Result<usize, MapError> {
    let s = usize::try_from(size).map_err(|_| MapError::Size(size))?;
    if !s.is_power_of_two() || s < page {
        return Err(MapError::Size(size));
    }
    Ok(s)
}

fn region(ptr: *mut c_void, len: usize) -> Result<Region, MapError> {
    let ptr = NonNull::new(ptr).ok_or(MapError::Errno(rustix::io::Errno::NOMEM))?;
    Ok(Region { ptr, len })
}

impl RingbufMapping {
    /// Maps the ring buffer map `fd` whose `max_entries` (the data size) is `size`.
    pub(crate) fn map_fd(fd: BorrowedFd<'_>, size: u64) -> Result<Self, MapError> {
        let page = rustix::param::page_size();
        let size = checked_size(size, page)?;
        let len = size
            .checked_mul(2)
            .and_then(|d| d.checked_add(page))
            .ok_or(MapError::Size(size as u64))?;
        // SAFETY: a fresh shared mapping at a kernel-chosen address (null hint) replaces
        // no memory; kernel/bpf/ringbuf.c (ringbuf_map_mmap_kern) allows the consumer
        // page, at file offset 0, to be mapped writable.
        let consumer = unsafe {
            rustix::mm::mmap(
                core::ptr::null_mut(),
                page,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd,
                0,
            )
        }
        .map_err(MapError::Errno)?;
        let consumer = region(consumer, page)?;
        // SAFETY: as above, read-only, from file offset PAGE: the producer page and the
        // data twice (the layout ringbuf.c gives the map's pages, and what libbpf maps).
        let producer = unsafe {
            rustix::mm::mmap(
                core::ptr::null_mut(),
                len,
                ProtFlags::READ,
                MapFlags::SHARED,
                fd,
                page as u64,
            )
        }
        .map_err(MapError::Errno)?;
        let producer = region(producer, len)?;
        Ok(RingbufMapping {
            consumer,
            producer,
            page,
            size,
            anonymous: false,
        })
    }

    /// An anonymous stand-in of `size` data bytes, with no kernel behind it: the data is
    /// not mapped twice, so the stand-in writer ([`RingbufMapping::write`]) writes every
    /// byte to both copies.
    pub(crate) fn anonymous(size: u64) -> Result<Self, MapError> {
        let page = rustix::param::page_size();
        let size = checked_size(size, page)?;
        let len = size
            .checked_mul(2)
            .and_then(|d| d.checked_add(page))
            .ok_or(MapError::Size(size as u64))?;
        let anon = |len: usize| {
            // SAFETY: a fresh private anonymous mapping at a kernel-chosen address.
            let p = unsafe {
                rustix::mm::mmap_anonymous(
                    core::ptr::null_mut(),
                    len,
                    ProtFlags::READ | ProtFlags::WRITE,
                    MapFlags::PRIVATE,
                )
            }
            .map_err(MapError::Errno)?;
            region(p, len)
        };
        Ok(RingbufMapping {
            consumer: anon(page)?,
            producer: anon(len)?,
            page,
            size,
            anonymous: true,
        })
    }

    /// Size of the data area (`max_entries`).
    pub(crate) fn size(&self) -> usize {
        self.size
    }

    fn consumer_word(&self) -> &AtomicU64 {
        // SAFETY: offset 0 of the consumer region, page-aligned hence 8-aligned, at least
        // 8 bytes (invariant), alive as long as `&self`. The kernel reads it with
        // smp_load_acquire: an atomic view matches its protocol.
        unsafe { AtomicU64::from_ptr(self.consumer.ptr.as_ptr().cast::<u64>()) }
    }

    fn producer_word(&self) -> &AtomicU64 {
        // SAFETY: offset 0 of the producer region (page-aligned, at least a page long),
        // alive as long as `&self`; the kernel writes it with smp_store_release.
        unsafe { AtomicU64::from_ptr(self.producer.ptr.as_ptr().cast::<u64>()) }
    }

    /// `consumer_pos` (Acquire).
    pub(crate) fn consumer_pos(&self) -> u64 {
        self.consumer_word().load(Ordering::Acquire)
    }

    /// Publishes `consumer_pos` with Release: the bytes before it may be reused.
    pub(crate) fn set_consumer_pos(&self, pos: u64) {
        self.consumer_word().store(pos, Ordering::Release);
    }

    /// `producer_pos` (Acquire): every record header before it is written.
    pub(crate) fn producer_pos(&self) -> u64 {
        self.producer_word().load(Ordering::Acquire)
    }

    /// The header word (length and BUSY/DISCARD bits) of the record at data offset
    /// `off & (size - 1)`, read with Acquire (paired with the kernel's `xchg` at commit).
    pub(crate) fn header(&self, off: u64) -> u32 {
        // Records are 8-aligned in the data area (lengths are rounded up to 8).
        let off = (off as usize & (self.size - 1)) & !7;
        // SAFETY: `page + off + 4 <= page + size <= len` of the producer region, 8-aligned
        // (page-aligned base, 8-aligned offset); the kernel writes this word atomically
        // (xchg in bpf_ringbuf_commit, WRITE_ONCE at reserve).
        let word = unsafe {
            AtomicU32::from_ptr(
                self.producer
                    .ptr
                    .as_ptr()
                    .cast::<u8>()
                    .add(self.page + off)
                    .cast::<u32>(),
            )
        };
        word.load(Ordering::Acquire)
    }

    /// The `len` bytes at data offset `off & (size - 1)`, contiguous even when they pass the
    /// end of the data area (the second copy follows it); `None` when `len` exceeds the
    /// data size.
    ///
    /// The caller asks only for a committed record (its header read without BUSY): the
    /// kernel does not write those bytes until `consumer_pos` passes them.
    pub(crate) fn bytes(&self, off: u64, len: usize) -> Option<&[u8]> {
        if len > self.size {
            return None;
        }
        let off = off as usize & (self.size - 1);
        // SAFETY: `off < size` and `len <= size`, so `page + off + len <= page + 2 * size`,
        // the producer region's length (invariant); it lives as long as `&self`.
        Some(unsafe {
            core::slice::from_raw_parts(
                self.producer
                    .ptr
                    .as_ptr()
                    .cast::<u8>()
                    .add(self.page + off)
                    .cast_const(),
                len,
            )
        })
    }

    /// The stand-in writer: copies `bytes` at data offset `off`, into both copies of the
    /// data, and stores `producer_pos` with Release when `publish` is given. Only an
    /// anonymous stand-in may be written (`None` otherwise, or when too long).
    pub(crate) fn write(&mut self, off: u64, bytes: &[u8], publish: Option<u64>) -> Option<()> {
        if !self.anonymous || bytes.len() > self.size {
            return None;
        }
        let off = off as usize & (self.size - 1);
        let first = bytes.len().min(self.size - off);
        let (a, b) = bytes.split_at(first);
        for (at, part) in [(off, a), (0, b), (off + self.size, a), (self.size, b)] {
            if part.is_empty() {
                continue;
            }
            // SAFETY: `at + part.len() <= 2 * size` in each case (a ends at most at size,
            // b is shorter than size - 0), so the destination is inside the producer
            // region after its page; `&mut self` excludes readers, and an anonymous
            // region has no kernel writer.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    part.as_ptr(),
                    self.producer.ptr.as_ptr().cast::<u8>().add(self.page + at),
                    part.len(),
                );
            }
        }
        if let Some(pos) = publish {
            self.producer_word().store(pos, Ordering::Release);
        }
        Some(())
    }
}
