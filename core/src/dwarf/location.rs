//! What resolution produces: [`ArgLocation`] (the prologue's input) and its fetch-arg spelling.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use super::error::Error;
use crate::arch::Platform;
use crate::prologue::{ArgLoc, Base};

/// Where an argument's value starts, before any dereference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LocBase {
    /// The value of DWARF register `dwarf_reg` plus `offset` (`offset` is non-zero only for
    /// a `DW_OP_bregN off; DW_OP_stack_value` value with no dereference after it: a value the
    /// tracer cannot spell, but a prologue can compute).
    Register {
        /// DWARF register number.
        dwarf_reg: u16,
        /// Added to the register's value.
        offset: i64,
    },
    /// The memory at an absolute (link-time) address: a global (`DW_OP_addr`). Costs one read.
    Address(u64),
    /// The memory at a slot of the frame: the CFA (`cfa_reg + cfa_offset` at the probed pc, from
    /// the CFI) plus `offset` (`DW_OP_fbreg` with a `DW_OP_call_frame_cfa` frame base). Costs
    /// one read.
    FrameSlot {
        /// DWARF register the CFA is computed from at the probed pc.
        cfa_reg: u16,
        /// CFA = `cfa_reg` + `cfa_offset`.
        cfa_offset: i64,
        /// The slot's offset from the CFA.
        offset: i64,
    },
    /// A constant (`DW_OP_lit*`/`DW_OP_const*` + `DW_OP_stack_value`, `DW_OP_implicit_value`,
    /// `DW_AT_const_value`).
    Const(i64),
}

/// One argument's location at one probe address: a base, then reads at the value reached so
/// far plus each offset, then the final value's size and signedness.
///
/// `file->f_mapping->a_ops` with `file` in `%di` is `Register { dwarf_reg: 5, offset: 0 }`
/// with `derefs` `[248, 104]` (`+104(+248(%di)):u64`). Intermediate reads are pointer-sized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgLocation {
    /// Where the value starts.
    pub base: LocBase,
    /// Offsets of the reads after the base, innermost first.
    pub derefs: Vec<i64>,
    /// Size of the final value in bytes: 1, 2, 4 or 8.
    pub size: u8,
    /// Whether the final value is sign-extended (its base type is signed).
    pub signed: bool,
    /// For a global: its name and the offset of the value inside it, so the fetch-arg can say
    /// `@counter+0` as `perf probe` does (kprobes resolve the symbol; see [`FetchSyntax`]).
    pub global: Option<(String, u64)>,
}

/// The kernel symbol [`FetchSyntax::KprobeAnchored`] spells globals from: the start of the
/// kernel's text, which `/proc/kallsyms` lists with or without `CONFIG_KALLSYMS_ALL`.
pub const KERNEL_ANCHOR: &str = "_stext";

/// How a fetch-arg spells globals and unsigned values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchSyntax {
    /// As `perf probe` writes it: `@sym+off` for globals, `x` for unsigned types (`:x64`).
    Perf,
    /// For kprobe events: `@sym+off` for globals, `u` for unsigned (`:u64`).
    Kprobe,
    /// For kprobe events, globals as their distance from [`KERNEL_ANCHOR`] (`@_stext+0x2f83098`),
    /// `u` for unsigned: the kernel resolves the anchor in the running kernel, so the read is
    /// right under KASLR, and `_stext` is listed in every kernel's symbol table, where a
    /// global's own name is missing without `CONFIG_KALLSYMS_ALL` (Debian's arm64 kernels)
    /// and may name several statics.
    KprobeAnchored {
        /// The link-time address of [`KERNEL_ANCHOR`] in the `vmlinux`.
        anchor: u64,
    },
    /// For uprobe events, which take no symbols: globals as `@+FILEOFF`, the address minus
    /// `load_bias` (the text section's `sh_addr - sh_offset`, which the kernel adds back
    /// from the probed mapping); `u` for unsigned.
    Uprobe {
        /// `sh_addr - sh_offset` of the probed section.
        load_bias: u64,
    },
}

impl ArgLocation {
    /// Number of memory reads the argument costs (the base's own read included).
    #[must_use]
    pub fn reads(&self) -> usize {
        let base = usize::from(matches!(
            self.base,
            LocBase::Address(_) | LocBase::FrameSlot { .. }
        ));
        self.derefs.len() + base
    }

    /// The same location with a [`LocBase::FrameSlot`] turned into a register base and one
    /// more dereference (`cfa_reg`, then a read at `cfa_offset + offset`): the form a prologue
    /// that reads registers from `pt_regs` consumes.
    #[must_use]
    pub fn with_register_base(&self) -> ArgLocation {
        let mut out = self.clone();
        if let LocBase::FrameSlot {
            cfa_reg,
            cfa_offset,
            offset,
        } = self.base
        {
            out.base = LocBase::Register {
                dwarf_reg: cfa_reg,
                offset: 0,
            };
            out.derefs.insert(0, cfa_offset.wrapping_add(offset));
        }
        out
    }

    /// The prologue generator's input for this location on `arch`, named `name`: a frame
    /// slot becomes its CFA register and one more read. `arch` is the kernel's `pt_regs`
    /// and the code's DWARF registers ([`Platform`]; an `Arch` is both): an i386 register
    /// under an x86-64 kernel is the 64-bit slot of the same name, the value its low half.
    ///
    /// # Errors
    /// [`Error::Unexpressible`] for a register without a `pt_regs` slot, a register plus
    /// offset value, or a read offset beyond 32 bits; [`Error::Core`] past the prologue's
    /// dereference capacity.
    pub fn to_arg_loc<'n>(
        &self,
        arch: impl Into<Platform>,
        name: &'n str,
    ) -> Result<ArgLoc<'n>, Error> {
        self.to_arg_loc_at(arch, name, None)
    }

    /// As [`to_arg_loc`](Self::to_arg_loc), for a probe at link-time address `site` of a
    /// position-independent file (a PIE or a shared library, `ET_DYN`) when `site` is given:
    /// a global's link-time address is not where the file is loaded, so it is read at the
    /// probed instruction's address plus the global's link-time distance from `site`
    /// ([`Base::IpRel`]) — how the tracer's `@+FILEOFFSET` finds it too. `None`: globals at
    /// their link-time address (`ET_EXEC`, the kernel).
    ///
    /// # Errors
    /// As [`to_arg_loc`](Self::to_arg_loc); [`Error::Unexpressible`] for a global 2 GiB or
    /// more away from `site`.
    pub fn to_arg_loc_at<'n>(
        &self,
        arch: impl Into<Platform>,
        name: &'n str,
        site: Option<u64>,
    ) -> Result<ArgLoc<'n>, Error> {
        let arch = arch.into();
        let loc = self.with_register_base();
        let base = match loc.base {
            LocBase::Register { dwarf_reg, offset } => {
                if offset != 0 {
                    return Err(Error::Unexpressible {
                        what: "register plus offset as a value",
                        value: offset,
                    });
                }
                Base::Reg(arch.dwarf_reg(dwarf_reg).ok_or(Error::Unexpressible {
                    what: "register without a pt_regs slot",
                    value: i64::from(dwarf_reg),
                })?)
            }
            LocBase::Address(a) => match site {
                None => Base::Addr(a),
                Some(at) => {
                    let delta = a.wrapping_sub(at) as i64;
                    Base::IpRel(i32::try_from(delta).map_err(|_| Error::Unexpressible {
                        what: "global 2 GiB or more away from the probe site",
                        value: delta,
                    })?)
                }
            },
            LocBase::Const(c) => Base::Const(c as u64),
            // Turned into a register base above.
            LocBase::FrameSlot { .. } => {
                return Err(Error::Unexpressible {
                    what: "frame slot",
                    value: 0,
                })
            }
        };
        let mut out = ArgLoc::new(base, self.size, self.signed)?.named(name);
        for &d in &loc.derefs {
            let d = i32::try_from(d).map_err(|_| Error::Unexpressible {
                what: "read offset beyond 32 bits",
                value: d,
            })?;
            out = out.deref(d)?;
        }
        Ok(out)
    }

    /// The kprobe-tracer fetch-arg (without `NAME=`): `+104(+248(%di)):u64`, `-40(%bp):s32`,
    /// `@counter+0:s32`, `\42:s32`. `string` makes it a string fetch of the pointer value
    /// (`+0(%si):string`).
    ///
    /// # Errors
    /// [`Error::Unexpressible`] for a register the tracer cannot name, or a register plus
    /// offset value with nothing to dereference.
    pub fn fetch_arg(
        &self,
        arch: impl Into<Platform>,
        syntax: FetchSyntax,
        string: bool,
    ) -> Result<String, Error> {
        let arch = arch.into();
        let mut inner = String::new();
        let reg = |r: u16| {
            arch.dwarf_fetch_reg(r).ok_or(Error::Unexpressible {
                what: "register the tracer cannot read",
                value: i64::from(r),
            })
        };
        let mut derefs: Vec<i64> = self.derefs.clone();
        if string {
            derefs.push(0);
        }
        match &self.base {
            LocBase::Register { dwarf_reg, offset } => {
                if *offset != 0 {
                    return Err(Error::Unexpressible {
                        what: "register plus offset as a value",
                        value: *offset,
                    });
                }
                let _ = write!(inner, "{}", reg(*dwarf_reg)?);
            }
            LocBase::FrameSlot {
                cfa_reg,
                cfa_offset,
                offset,
            } => {
                let _ = write!(
                    inner,
                    "{:+}({})",
                    cfa_offset.wrapping_add(*offset),
                    reg(*cfa_reg)?
                );
            }
            LocBase::Address(addr) => match (syntax, &self.global) {
                (FetchSyntax::Uprobe { load_bias }, _) => {
                    let _ = write!(inner, "@+{:#x}", addr.wrapping_sub(load_bias));
                }
                (FetchSyntax::KprobeAnchored { anchor }, _) => {
                    let delta = addr.wrapping_sub(anchor) as i64;
                    let delta = i32::try_from(delta).map_err(|_| Error::Unexpressible {
                        what: "global 2 GiB or more away from _stext",
                        value: delta,
                    })?;
                    if delta < 0 {
                        let _ = write!(inner, "@{KERNEL_ANCHOR}-{:#x}", delta.unsigned_abs());
                    } else {
                        let _ = write!(inner, "@{KERNEL_ANCHOR}+{delta:#x}");
                    }
                }
                (_, Some((name, off))) => {
                    let _ = write!(inner, "@{name}+{off}");
                }
                (_, None) => {
                    let _ = write!(inner, "@{addr:#x}");
                }
            },
            LocBase::Const(v) => {
                let _ = write!(inner, "\\{v}");
            }
        }
        let mut out = String::new();
        for off in derefs.iter().rev() {
            let _ = write!(out, "{off:+}(");
        }
        out.push_str(&inner);
        for _ in &derefs {
            out.push(')');
        }
        if string {
            out.push_str(":string");
        } else {
            let prefix = if self.signed {
                's'
            } else if syntax == FetchSyntax::Perf {
                'x'
            } else {
                'u'
            };
            let _ = write!(out, ":{prefix}{}", u32::from(self.size) * 8);
        }
        Ok(out)
    }
}

/// One argument resolved at one probe address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedArg {
    /// The name `perf probe` gives it: the `NAME=` written, else the last member named in the
    /// chain, else the variable (`file->f_mapping->a_ops` is `a_ops`).
    pub name: String,
    /// Where the value is.
    pub location: ArgLocation,
    /// The arg asked for `:string`: the location is the pointer, the tracer reads the string.
    pub string: bool,
}

impl ResolvedArg {
    /// `NAME=FETCHARG`, as written to `uprobe_events`/`kprobe_events`.
    ///
    /// # Errors
    /// As [`ArgLocation::fetch_arg`].
    pub fn fetch_arg(
        &self,
        arch: impl Into<Platform>,
        syntax: FetchSyntax,
    ) -> Result<String, Error> {
        let mut s = self.name.clone();
        s.push('=');
        s.push_str(&self.location.fetch_arg(arch, syntax, self.string)?);
        Ok(s)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use crate::arch::Arch;
    use alloc::vec;

    fn slot(cfa_reg: u16, cfa_offset: i64, offset: i64) -> LocBase {
        LocBase::FrameSlot {
            cfa_reg,
            cfa_offset,
            offset,
        }
    }

    fn reg_plus(dwarf_reg: u16, offset: i64) -> LocBase {
        LocBase::Register { dwarf_reg, offset }
    }

    fn loc(base: LocBase, derefs: &[i64], size: u8, signed: bool) -> ArgLocation {
        ArgLocation {
            base,
            derefs: derefs.to_vec(),
            size,
            signed,
            global: None,
        }
    }

    #[test]
    fn spelling() {
        let reg = |r| reg_plus(r, 0);
        let cases = vec![
            (
                loc(reg(5), &[248, 104], 8, false),
                Arch::X86_64,
                FetchSyntax::Kprobe,
                "+104(+248(%di)):u64",
            ),
            (
                loc(reg(5), &[248, 104], 8, false),
                Arch::X86_64,
                FetchSyntax::Perf,
                "+104(+248(%di)):x64",
            ),
            (
                loc(reg(12), &[], 8, true),
                Arch::X86_64,
                FetchSyntax::Kprobe,
                "%r12:s64",
            ),
            (
                loc(slot(6, 16, -56), &[16], 2, true),
                Arch::X86_64,
                FetchSyntax::Perf,
                "+16(-40(%bp)):s16",
            ),
            (
                loc(slot(4, 4, 0), &[], 4, false),
                Arch::I386,
                FetchSyntax::Kprobe,
                "+4($stack):u32",
            ),
            (
                loc(LocBase::Const(-3), &[], 4, true),
                Arch::Aarch64,
                FetchSyntax::Kprobe,
                "\\-3:s32",
            ),
            (
                loc(LocBase::Address(0x4010), &[], 4, true),
                Arch::X86_64,
                FetchSyntax::Kprobe,
                "@0x4010:s32",
            ),
            (
                loc(LocBase::Address(0x4010), &[], 4, true),
                Arch::X86_64,
                FetchSyntax::Uprobe { load_bias: 0x1000 },
                "@+0x3010:s32",
            ),
        ];
        for (l, arch, syntax, want) in cases {
            assert_eq!(l.fetch_arg(arch, syntax, false).unwrap(), want);
        }
        let mut g = loc(LocBase::Address(0x4020), &[], 1, false);
        g.global = Some(("global_map".into(), 16));
        assert_eq!(
            g.fetch_arg(Arch::X86_64, FetchSyntax::Perf, false).unwrap(),
            "@global_map+16:x8"
        );
        // The kernel's fetch-arg of a vmlinux global: its distance from _stext.
        let anchored = |anchor| FetchSyntax::KprobeAnchored { anchor };
        assert_eq!(
            g.fetch_arg(Arch::X86_64, anchored(0x1000), false).unwrap(),
            "@_stext+0x3020:u8"
        );
        assert_eq!(
            g.fetch_arg(Arch::X86_64, anchored(0x5000), false).unwrap(),
            "@_stext-0xfe0:u8"
        );
        assert!(g
            .fetch_arg(Arch::X86_64, anchored(0x8000_5000), false)
            .is_err());
        let s = loc(reg(4), &[], 8, false);
        assert_eq!(
            s.fetch_arg(Arch::X86_64, FetchSyntax::Perf, true).unwrap(),
            "+0(%si):string"
        );
        let bad = loc(reg_plus(7, 8), &[], 8, false);
        assert!(bad
            .fetch_arg(Arch::X86_64, FetchSyntax::Perf, false)
            .is_err());
        assert!(loc(reg(40), &[], 8, false)
            .fetch_arg(Arch::X86_64, FetchSyntax::Perf, false)
            .is_err());
    }

    /// i386 DWARF under an x86-64 kernel: `ecx` (1) is the 64-bit `cx` slot, the frame's
    /// `esp` (4) the 64-bit `sp` slot, which the x86-64 tracer reads as `%sp`, where an
    /// i386 kernel reads `$stack`; an intermediate read is a 4-byte pointer.
    #[test]
    fn i386_dwarf_under_an_x86_64_kernel() {
        let reg = |n| reg_plus(n, 0);
        let mixed = Platform::new(Arch::X86_64, Arch::I386).unwrap();
        let r = loc(reg(1), &[], 4, true);
        let a = r.to_arg_loc(mixed, "n").unwrap();
        assert_eq!(a.base(), Base::Reg(Arch::X86_64.reg("cx").unwrap()));
        assert_eq!(alloc::format!("{}", a.fetch_arg(0)), "n=%cx:s32");
        assert_eq!(
            r.to_arg_loc(Arch::I386, "n").unwrap().base(),
            Base::Reg(Arch::I386.reg("cx").unwrap())
        );
        let s = loc(slot(4, 4, 4), &[8], 2, false);
        assert_eq!(
            s.fetch_arg(mixed, FetchSyntax::Kprobe, false).unwrap(),
            "+8(+8(%sp)):u16"
        );
        assert_eq!(
            s.fetch_arg(Arch::I386, FetchSyntax::Kprobe, false).unwrap(),
            "+8(+8($stack)):u16"
        );
        let a = s.to_arg_loc(mixed, "p").unwrap();
        assert_eq!(a.base(), Base::Reg(Arch::X86_64.reg("sp").unwrap()));
        assert_eq!(a.derefs(), &[8, 8]);
        let mut locs = crate::prologue::ArgLocs::new(mixed, crate::prologue::Memory::User);
        locs.push(a).unwrap();
        let p: crate::prologue::Prologue = crate::prologue::Prologue::generate(&locs).unwrap();
        let text = alloc::format!("{p}");
        for line in [
            "(79) r3 = *(u64 *)(r6 +152)",
            "(b7) r2 = 4",
            "(61) r3 = *(u32 *)(r10 -8)",
            "(b7) r2 = 2",
            "(85) call bpf_probe_read_user#112",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        // eip (8) at a uprobe: the 64-bit ip slot.
        assert_eq!(
            loc(reg(8), &[], 4, false)
                .fetch_arg(mixed, FetchSyntax::Perf, false)
                .unwrap(),
            "%ip:x32"
        );
    }

    #[test]
    fn prologue_input() {
        let l = loc(slot(6, 16, -56), &[16], 2, true);
        let a = l.to_arg_loc(Arch::X86_64, "s").unwrap();
        assert_eq!(a.base(), Base::Reg(Arch::X86_64.dwarf_reg(6).unwrap()));
        assert_eq!(a.derefs(), &[-40, 16]);
        assert_eq!((a.size(), a.signed(), a.name()), (2, true, Some("s")));
        assert_eq!(alloc::format!("{}", a.fetch_arg(0)), "s=+16(-40(%bp)):s16");
        // A position-independent file: the global at its distance from the probe site.
        let pie = loc(LocBase::Address(0x4010), &[8], 8, false);
        assert_eq!(
            pie.to_arg_loc_at(Arch::X86_64, "g", Some(0x1139))
                .unwrap()
                .base(),
            Base::IpRel(0x4010 - 0x1139)
        );
        assert_eq!(
            loc(LocBase::Address(0x1000), &[], 4, true)
                .to_arg_loc_at(Arch::X86_64, "g", Some(0x1139))
                .unwrap()
                .base(),
            Base::IpRel(-0x139)
        );
        assert!(loc(LocBase::Address(0x1_0000_1000), &[], 4, true)
            .to_arg_loc_at(Arch::X86_64, "g", Some(0x1000))
            .is_err());
        let g = loc(LocBase::Address(0x4010), &[8], 8, false);
        assert_eq!(
            g.to_arg_loc(Arch::Aarch64, "g").unwrap().base(),
            Base::Addr(0x4010)
        );
        let v = loc(reg_plus(7, 8), &[], 8, false);
        assert!(v.to_arg_loc(Arch::X86_64, "v").is_err());
        assert!(loc(reg_plus(17, 0), &[], 8, false)
            .to_arg_loc(Arch::X86_64, "xmm")
            .is_err());
    }

    #[test]
    fn frame_slot_as_register() {
        let l = loc(slot(6, 16, -56), &[16], 2, true);
        let r = l.with_register_base();
        assert_eq!(r.base, reg_plus(6, 0));
        assert_eq!(r.derefs, vec![-40, 16]);
        assert_eq!(l.reads(), 2);
        assert_eq!(r.reads(), 2);
    }
}
