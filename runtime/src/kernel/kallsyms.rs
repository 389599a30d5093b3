//! The running kernel's symbol addresses (`/proc/kallsyms`) and its KASLR offset: where a
//! kernel relocated at boot has put the `vmlinux` a probe's DWARF describes.
//!
//! ```text
//! /proc/kallsyms ──lookup──► running addresses of a few names (core kernel only, read until found)
//! vmlinux .symtab + those ──kaslr_offset──► running − link-time, the same for KERNEL_SYMBOLS,
//!                                           else an error (hidden addresses, another kernel)
//! ```
//!
//! A global a prologue reads is a link-time address (`DW_OP_addr`); a kernel booted with
//! KASLR (distribution kernels on real hardware, arm64 guests of QEMU's `virt` machine, which
//! passes a `kaslr-seed`) runs every symbol moved by one offset. The kprobe tracer's own
//! fetch-args name a symbol instead (`@_stext+0x2f83098`) and are resolved by the kernel.

use std::io::BufRead;

use crate::error::{Error, Result};

/// Where the running kernel lists its symbols.
pub const KALLSYMS: &str = "/proc/kallsyms";

/// The symbols the KASLR offset is computed from, each listed by every kernel's `kallsyms`
/// (text, so even without `CONFIG_KALLSYMS_ALL`) and unique: the start of the kernel's text
/// and of its init text. Two, so that a `vmlinux` of another build is caught rather than
/// trusted.
pub const KERNEL_SYMBOLS: [&str; 2] = ["_stext", "_sinittext"];

/// The core kernel's (not a module's) address of each of `names` in `kallsyms` text
/// (`ADDRESS TYPE NAME [MODULE]` lines), the first line of each name; reading stops once all
/// are found. `None`: not listed, or only by a module.
///
/// # Errors
/// [`Error::Io`] when reading fails; [`Error::KallsymsHidden`] when a name is listed at
/// address 0 ([`Error::KallsymsAddress`] for an address that is not hexadecimal):
/// the kernel hides its addresses (`kernel.kptr_restrict`, or a reader without
/// `CAP_SYSLOG`).
pub fn lookup_in(kallsyms: impl BufRead, names: &[&str]) -> Result<Vec<Option<u64>>> {
    let mut found: Vec<Option<u64>> = vec![None; names.len()];
    let mut left = names.len();
    for line in kallsyms.lines() {
        if left == 0 {
            break;
        }
        let line = line.map_err(|source| Error::Io {
            path: KALLSYMS.into(),
            source,
        })?;
        let mut f = line.split_ascii_whitespace();
        let (Some(addr), Some(_kind), Some(name), None) = (f.next(), f.next(), f.next(), f.next())
        else {
            continue; // a module's symbol (a fourth field), or a line of another shape
        };
        for (i, want) in names.iter().enumerate() {
            let Some(slot) = found.get_mut(i) else {
                continue;
            };
            if slot.is_some() || *want != name {
                continue;
            }
            let a = u64::from_str_radix(addr, 16)
                .map_err(|_| Error::KallsymsAddress { line: line.clone() })?;
            if a == 0 {
                return Err(Error::KallsymsHidden {
                    name: name.to_owned(),
                    kptr_restrict: kptr_restrict(),
                });
            }
            *slot = Some(a);
            left -= 1;
        }
    }
    Ok(found)
}

/// [`lookup_in`] on the running kernel's [`KALLSYMS`].
///
/// # Errors
/// As [`lookup_in`]; [`Error::Io`] when the file cannot be opened.
pub fn lookup(names: &[&str]) -> Result<Vec<Option<u64>>> {
    let file = std::fs::File::open(KALLSYMS).map_err(|source| Error::Io {
        path: KALLSYMS.into(),
        source,
    })?;
    lookup_in(std::io::BufReader::with_capacity(1 << 16, file), names)
}

/// `kernel.kptr_restrict`, if readable.
fn kptr_restrict() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/kptr_restrict")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The KASLR offset (running minus link-time address, wrapping) from `(name, link-time
/// address in the vmlinux, running address)` of each of [`KERNEL_SYMBOLS`] (or any other
/// symbols): the same for every one of them, or the running kernel is not the one `vmlinux`
/// describes. 0 for a kernel that was not moved (`nokaslr`, x86 booted without its
/// decompressor).
///
/// # Errors
/// Naming `vmlinux`: [`Error::NoKaslrSymbols`] for no symbols given,
/// [`Error::NoLinkSymbol`] / [`Error::NoRunningSymbol`] for a symbol missing from either
/// side, [`Error::NotRunningKernel`] for two offsets that differ.
pub fn kaslr_offset(vmlinux: &str, symbols: &[(&str, Option<u64>, Option<u64>)]) -> Result<i64> {
    let mut first: Option<(&str, i64)> = None;
    for &(name, link, running) in symbols {
        let link = link.ok_or_else(|| Error::NoLinkSymbol {
            vmlinux: vmlinux.to_owned(),
            name: name.to_owned(),
        })?;
        let running = running.ok_or_else(|| Error::NoRunningSymbol {
            name: name.to_owned(),
        })?;
        let offset = running.wrapping_sub(link) as i64;
        match first {
            None => first = Some((name, offset)),
            Some((n0, o0)) if o0 != offset => {
                return Err(Error::NotRunningKernel {
                    vmlinux: vmlinux.to_owned(),
                    first: n0.to_owned(),
                    first_offset: o0,
                    name: name.to_owned(),
                    offset,
                })
            }
            Some(_) => {}
        }
    }
    first.map(|(_, o)| o).ok_or_else(|| Error::NoKaslrSymbols {
        vmlinux: vmlinux.to_owned(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// An arm64 guest's kallsyms with KASLR (the order and types of the real file).
    const ARM64: &str = "\
ffffcbb415e00000 t __efistub__text
ffffcbb415e10000 T _stext
ffffcbb415e10000 T __exception_text_start
ffffcbb415e924f0 T kernel_clone
ffffcbb416b00000 D _etext
ffffcbb417460000 T _sinittext
ffffcbb417500000 t helper\t[virtio_blk]
ffffcbb417500100 t only_in_a_module\t[virtio_blk]
ffffcbb417600000 T kernel_clone
";

    #[test]
    fn lookup_takes_the_first_core_kernel_entry_and_skips_modules() {
        let got = lookup_in(
            ARM64.as_bytes(),
            &[
                "_stext",
                "kernel_clone",
                "only_in_a_module",
                "nowhere",
                "_sinittext",
            ],
        )
        .unwrap();
        assert_eq!(
            got,
            [
                Some(0xffff_cbb4_15e1_0000),
                Some(0xffff_cbb4_15e9_24f0),
                None,
                None,
                Some(0xffff_cbb4_1746_0000)
            ]
        );
        let bad = "zzzz T _stext\n";
        assert!(lookup_in(bad.as_bytes(), &["_stext"]).is_err());
    }

    #[test]
    fn hidden_addresses_are_an_error_naming_kptr_restrict() {
        let hidden = "0000000000000000 T _stext\n0000000000000000 T _sinittext\n";
        let e = lookup_in(hidden.as_bytes(), &KERNEL_SYMBOLS).unwrap_err();
        assert!(e.to_string().contains("kptr_restrict"), "{e}");
    }

    #[test]
    fn offset_is_the_same_for_both_symbols_or_an_error() {
        // arm64: link-time addresses of the Debian 6.1 vmlinux, running ones from the guest.
        let stext = (0xffff_8000_0801_0000u64, 0xffff_cbb4_15e1_0000u64);
        let sinit = (0xffff_8000_0966_0000u64, 0xffff_cbb4_1746_0000u64);
        let off = kaslr_offset(
            "vmlinux",
            &[
                ("_stext", Some(stext.0), Some(stext.1)),
                ("_sinittext", Some(sinit.0), Some(sinit.1)),
            ],
        )
        .unwrap();
        assert_eq!(off, 0x4bb4_0de0_0000);
        assert_eq!(
            0xffff_8000_09f7_cbf0u64.wrapping_add_signed(off),
            0xffff_cbb4_17d7_cbf0
        );
        // Not moved (amd64 PVH, nokaslr): 0. Moved down: negative.
        let same = [(
            "_stext",
            Some(0xffff_ffff_8100_0000),
            Some(0xffff_ffff_8100_0000),
        )];
        assert_eq!(kaslr_offset("vmlinux", &same).unwrap(), 0);
        let down = [(
            "_stext",
            Some(0xffff_ffff_8100_0000),
            Some(0xffff_ffff_8000_0000),
        )];
        assert_eq!(kaslr_offset("vmlinux", &down).unwrap(), -0x100_0000);
        // Another build: the two disagree.
        let e = kaslr_offset(
            "vmlinux-6.1",
            &[
                ("_stext", Some(stext.0), Some(stext.1)),
                ("_sinittext", Some(sinit.0 + 0x1000), Some(sinit.1)),
            ],
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("vmlinux-6.1 is not the running kernel"), "{e}");
        // Missing on either side, or nothing to compare.
        assert!(kaslr_offset("v", &[("_stext", None, Some(1))]).is_err());
        assert!(kaslr_offset("v", &[("_stext", Some(1), None)]).is_err());
        assert!(kaslr_offset("v", &[]).is_err());
    }
}
