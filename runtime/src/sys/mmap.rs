//! A file mapped read-only: the bytes of a large ELF file (a 600 MB `vmlinux`) without
//! reading them into the heap, so only the pages a lookup touches count in the resident set,
//! and those it is done with can be dropped again ([`Mmap::release`]).
//!
//! The mapping is private and never written. Like every reader of a mapped file, it assumes
//! the file is not truncated or rewritten while mapped (a truncated file raises `SIGBUS` on
//! access; `man 2 mmap`, "Use of a mapped region can result in these signals").

use std::fs::File;
use std::os::fd::AsFd;
use std::path::Path;
use std::ptr::NonNull;

use rustix::mm::{self, Advice, MapFlags, ProtFlags};

/// A whole file mapped `PROT_READ`, `MAP_PRIVATE`.
#[derive(Debug)]
pub struct Mmap {
    /// Start of the mapping; dangling (and never dereferenced) when `len` is 0.
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is read-only memory owned by this value alone; sharing `&[u8]` views
// of it across threads is as safe as sharing any immutable byte slice.
unsafe impl Send for Mmap {}
// SAFETY: as above; no method mutates through `&self` (`release` only asks the kernel to
// drop page-table entries, after which reads fault the same file contents back in).
unsafe impl Sync for Mmap {}

impl Mmap {
    /// Maps the regular file at `path` ([`super::file::open_regular`]: a FIFO or a device
    /// is refused, never waited on or read without end).
    ///
    /// # Errors
    /// The `std::io::Error` of opening, `fstat` or `mmap(2)`; `InvalidInput` for a file
    /// that is not regular; a file larger than the address space is `EFBIG`.
    pub fn open(path: &Path) -> std::io::Result<Mmap> {
        let file = super::file::open_regular(path)?;
        Self::of(&file)
    }

    /// Maps `file` (the mapping outlives the descriptor: `man 2 mmap`, "closing the file
    /// descriptor does not unmap the region").
    ///
    /// # Errors
    /// As [`Mmap::open`].
    pub fn of(file: &File) -> std::io::Result<Mmap> {
        let len = usize::try_from(file.metadata()?.len())
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EFBIG))?;
        if len == 0 {
            // mmap(2) rejects a zero length (EINVAL): an empty file is an empty slice.
            return Ok(Mmap {
                ptr: NonNull::dangling(),
                len: 0,
            });
        }
        // SAFETY: a new mapping chosen by the kernel (null hint), of `len` bytes of a file
        // open for reading, read-only and private: it aliases no Rust object (man 2 mmap).
        let ptr = unsafe {
            mm::mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ,
                MapFlags::PRIVATE,
                file.as_fd(),
                0,
            )
        }?;
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOMEM))?;
        Ok(Mmap { ptr, len })
    }

    /// The file's bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `ptr` is a live mapping of `len` readable bytes until `drop`, never
        // written (PROT_READ, MAP_PRIVATE), so an immutable slice tied to `&self` is valid.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Drops the resident pages that lie wholly inside `part` (a slice of [`Mmap::bytes`];
    /// any other slice is ignored): `madvise(MADV_DONTNEED)`. The bytes stay readable and
    /// unchanged: the next read faults them back in from the file. Returns the bytes
    /// released.
    pub fn release(&self, part: &[u8]) -> usize {
        let base = self.ptr.as_ptr() as usize;
        let start = part.as_ptr() as usize;
        let end = start.saturating_add(part.len());
        if self.len == 0 || start < base || end > base.saturating_add(self.len) {
            return 0;
        }
        let page = rustix::param::page_size();
        let first = start.div_ceil(page).saturating_mul(page);
        let last = end / page * page;
        if last <= first {
            return 0;
        }
        // SAFETY: [first, last) is page-aligned and inside this private read-only file
        // mapping. MADV_DONTNEED on it only discards page-table entries: later reads see
        // the file's contents again (man 2 madvise, "subsequent accesses of pages in the
        // range ... will result in repopulating the memory contents from the up-to-date
        // contents of the underlying mapped file"), which the mapping never changed, so
        // slices borrowed from `bytes` keep reading the same bytes.
        let r = unsafe {
            mm::madvise(
                first as *mut std::ffi::c_void,
                last - first,
                Advice::LinuxDontNeed,
            )
        };
        if r.is_ok() {
            last - first
        } else {
            0
        }
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        if self.len == 0 {
            return;
        }
        // SAFETY: `ptr`/`len` are exactly the mapping `of` created; no slice of it outlives
        // `&self`, so nothing refers to it any more (man 2 munmap).
        let _ = unsafe { mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// A whole regular file's bytes: mapped ([`Mmap`]) when the file can be, read into the heap
/// when it cannot. The kernel's `/sys/kernel/btf/vmlinux` maps since Linux 6.16 (its pages
/// are the kernel's own, so they neither cost a read nor count in the resident set); before
/// that, and for a module's BTF, sysfs refuses `mmap(2)` and hands out the file 4 KB a
/// `read(2)`.
#[derive(Debug)]
pub enum Contents {
    /// The file mapped read-only.
    Mapped(Mmap),
    /// The file read into memory.
    Read(Vec<u8>),
}

impl Contents {
    /// The regular file at `path` ([`super::file::open_regular`]), mapped or else read.
    ///
    /// # Errors
    /// As [`super::file::open_regular`]; the `read(2)` error when it is not mapped.
    pub fn open(path: &Path) -> std::io::Result<Contents> {
        use std::io::Read as _;
        let mut file = super::file::open_regular(path)?;
        // An empty size may be a file made on read (procfs): read it.
        match Mmap::of(&file) {
            Ok(m) if !m.bytes().is_empty() => return Ok(Contents::Mapped(m)),
            _ => {}
        }
        let size = file.metadata()?.len();
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.read_to_end(&mut bytes)?;
        Ok(Contents::Read(bytes))
    }

    /// The file's bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        match self {
            Contents::Mapped(m) => m.bytes(),
            Contents::Read(v) => v,
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
mod tests {
    use super::*;

    #[test]
    fn maps_reads_and_releases() {
        let dir = std::env::temp_dir().join(format!("sluice-mmap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("data");
        let page = rustix::param::page_size();
        let data: Vec<u8> = (0..page * 4 + 100).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let m = Mmap::open(&path).unwrap();
        assert_eq!(m.bytes(), &data[..]);
        // Pages wholly inside the slice: from the second page to the end of the fourth.
        let part = &m.bytes()[page - 1..page * 4 + 1];
        assert_eq!(m.release(part), page * 3);
        // Released pages read the same bytes again.
        assert_eq!(m.bytes(), &data[..]);
        // A slice from elsewhere is not ours to release.
        assert_eq!(m.release(&data[..]), 0);
        std::fs::write(dir.join("empty"), b"").unwrap();
        let e = Mmap::open(&dir.join("empty")).unwrap();
        assert!(e.bytes().is_empty());
        assert_eq!(e.release(e.bytes()), 0);
        assert!(Mmap::open(&dir.join("missing")).is_err());
        // A regular file maps; a sysfs attribute without mmap(2) is read.
        let c = Contents::open(&path).unwrap();
        assert!(matches!(c, Contents::Mapped(_)));
        assert_eq!(c.bytes(), &data[..]);
        let c = Contents::open(Path::new("/sys/kernel/mm/transparent_hugepage/enabled"));
        if let Ok(c) = c {
            assert!(matches!(c, Contents::Read(_)));
            assert!(!c.bytes().is_empty());
        }
        let c = Contents::open(Path::new("/proc/self/stat")).unwrap();
        assert!(c
            .bytes()
            .starts_with(std::process::id().to_string().as_bytes()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
