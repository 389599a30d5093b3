//! Fixed-size records (symbols, relocations, headers): the ELF class that lays them out,
//! and their fields read in either byte order.

use scroll::Endian;

/// ELF class: 32- or 64-bit layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Class {
    /// `ELFCLASS32`.
    Elf32,
    /// `ELFCLASS64`.
    Elf64,
}

/// The entries of a table of fixed-size records (symbols, relocations): the bytes, the class
/// and byte order that lay each record out, and how many whole records there are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entries<'a> {
    pub(crate) data: &'a [u8],
    pub(crate) class: Class,
    pub(crate) endian: Endian,
    pub(crate) count: u32,
}

impl<'a> Entries<'a> {
    /// Record `index`, `N` bytes long (the record size of `self.class`), read by `f`;
    /// `None` past the table. `f` is inlined once per byte order, so the usual one (the
    /// target's) reads each field natively, without a branch.
    #[inline(always)]
    pub(crate) fn read<const N: usize, R>(
        &self,
        index: u32,
        f: impl Fn(Fields<'a, N>) -> R,
    ) -> Option<R> {
        if index >= self.count {
            return None;
        }
        let off = index as usize * N;
        let native = cfg!(target_endian = "little");
        if (self.endian == Endian::Little) == native {
            Fields::at(self.data, off, native).map(f)
        } else {
            Fields::at(self.data, off, !native).map(f)
        }
    }
}

/// Fixed-position fields of a record already cut to its full size `N`: with `N` known,
/// every in-record read compiles to a plain load; a position past the record reads as 0
/// (callers only use positions inside it).
#[derive(Clone, Copy)]
pub(crate) struct Fields<'a, const N: usize> {
    pub(crate) b: &'a [u8; N],
    pub(crate) little: bool,
}

impl<'a, const N: usize> Fields<'a, N> {
    /// Cuts `N` bytes at `off` of `data`.
    #[inline]
    pub(crate) fn at(data: &'a [u8], off: usize, little: bool) -> Option<Self> {
        let b = data.get(off..off.checked_add(N)?)?.try_into().ok()?;
        Some(Fields { b, little })
    }
    #[inline(always)]
    fn bytes<const M: usize>(&self, at: usize) -> [u8; M] {
        let mut out = [0u8; M];
        if let Some(src) = self.b.get(at..at + M) {
            out.copy_from_slice(src);
        }
        out
    }
    #[inline(always)]
    pub(crate) fn u8(&self, at: usize) -> u8 {
        self.b.get(at).copied().unwrap_or(0)
    }
    #[inline(always)]
    pub(crate) fn u16(&self, at: usize) -> u16 {
        let b = self.bytes::<2>(at);
        if self.little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        }
    }
    #[inline(always)]
    pub(crate) fn u32(&self, at: usize) -> u32 {
        let b = self.bytes::<4>(at);
        if self.little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    }
    #[inline(always)]
    pub(crate) fn u64(&self, at: usize) -> u64 {
        let b = self.bytes::<8>(at);
        if self.little {
            u64::from_le_bytes(b)
        } else {
            u64::from_be_bytes(b)
        }
    }
}
