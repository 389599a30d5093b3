//! The attach points libbpf names in sections that are not probes of the kprobe/uprobe
//! grammar: BTF-typed hooks (`tp_btf/`, `fentry/`, `fexit/`, `fmod_ret/`, `lsm/` and their
//! sleepable `.s` forms), raw tracepoints (`raw_tp/`, `raw_tracepoint/`, the writable
//! `.w` forms), syscall probes (`ksyscall/`, `kretsyscall/`) and the multi-probes
//! (`kprobe.multi/`, `kretprobe.multi/`, `uprobe.multi/`, `uretprobe.multi/`).
//!
//! [`parse`](super::parse) reads all of these as [`Section::Title`](super::Section::Title)
//! (they take no fetch-args and no perf form); [`attach_point`] says what such a title
//! attaches to. The kernel side (the BTF id, the link) is the runtime's.

use super::cursor::{is_ident_cont, is_ident_start};

/// `BPF_F_SLEEPABLE` (`BPF_PROG_LOAD` flag, Linux 5.10): the program may sleep.
pub const BPF_F_SLEEPABLE: u32 = 1 << 4;

/// `enum bpf_attach_type` values of the attach points below.
pub mod attach_types {
    /// `BPF_TRACE_RAW_TP` (`tp_btf/`, Linux 5.5).
    pub const TRACE_RAW_TP: u32 = 23;
    /// `BPF_TRACE_FENTRY` (Linux 5.5).
    pub const TRACE_FENTRY: u32 = 24;
    /// `BPF_TRACE_FEXIT` (Linux 5.5).
    pub const TRACE_FEXIT: u32 = 25;
    /// `BPF_MODIFY_RETURN` (`fmod_ret/`, Linux 5.7).
    pub const MODIFY_RETURN: u32 = 26;
    /// `BPF_LSM_MAC` (`lsm/`, Linux 5.7).
    pub const LSM_MAC: u32 = 27;
    /// `BPF_PERF_EVENT` (a BPF link over a perf event, Linux 5.15).
    pub const PERF_EVENT: u32 = 41;
    /// `BPF_TRACE_KPROBE_MULTI` (Linux 5.18, needs `CONFIG_FPROBE`).
    pub const TRACE_KPROBE_MULTI: u32 = 42;
    /// `BPF_TRACE_UPROBE_MULTI` (Linux 6.6).
    pub const TRACE_UPROBE_MULTI: u32 = 48;
}

/// What kind of attach point a section names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AttachKind {
    /// `tp_btf/NAME`: a BTF-typed raw tracepoint (its `btf_trace_NAME` typedef).
    TpBtf,
    /// `fentry/FUNC`: a kernel function's entry through a BPF trampoline.
    Fentry,
    /// `fexit/FUNC`: a kernel function's return through a BPF trampoline.
    Fexit,
    /// `fmod_ret/FUNC`: may change a kernel function's return value.
    FmodRet,
    /// `lsm/HOOK`: an LSM hook (its `bpf_lsm_HOOK` function).
    Lsm,
    /// `raw_tp/NAME`, `raw_tracepoint/NAME`: a raw tracepoint by name.
    RawTp,
    /// `raw_tp.w/NAME`, `raw_tracepoint.w/NAME`: a writable raw tracepoint.
    RawTpWritable,
    /// `ksyscall/NAME`: a syscall's entry, through the arch's syscall wrapper.
    Ksyscall,
    /// `kretsyscall/NAME`: a syscall's return.
    Kretsyscall,
    /// `kprobe.multi/PATTERN`: a glob over the kernel's traceable functions.
    KprobeMulti,
    /// `kretprobe.multi/PATTERN`.
    KretprobeMulti,
    /// `uprobe.multi/PATH:PATTERN`.
    UprobeMulti,
    /// `uretprobe.multi/PATH:PATTERN`.
    UretprobeMulti,
    /// `usdt/PATH:PROVIDER:NAME`: the sites of a `sys/sdt.h` probe (the target is
    /// `PROVIDER:NAME`, see [`AttachPoint::usdt`]).
    Usdt,
}

impl AttachKind {
    /// The `enum bpf_attach_type` the program is loaded with (`expected_attach_type`);
    /// 0 where the kernel wants none.
    #[must_use]
    pub fn expected_attach_type(self) -> u32 {
        use attach_types as a;
        match self {
            AttachKind::TpBtf => a::TRACE_RAW_TP,
            AttachKind::Fentry => a::TRACE_FENTRY,
            AttachKind::Fexit => a::TRACE_FEXIT,
            AttachKind::FmodRet => a::MODIFY_RETURN,
            AttachKind::Lsm => a::LSM_MAC,
            AttachKind::KprobeMulti | AttachKind::KretprobeMulti => a::TRACE_KPROBE_MULTI,
            AttachKind::UprobeMulti | AttachKind::UretprobeMulti => a::TRACE_UPROBE_MULTI,
            AttachKind::RawTp
            | AttachKind::RawTpWritable
            | AttachKind::Ksyscall
            | AttachKind::Kretsyscall
            | AttachKind::Usdt => 0,
        }
    }

    /// Whether the program needs an `attach_btf_id` (a type of the kernel's BTF) at load.
    #[must_use]
    pub fn needs_btf_id(self) -> bool {
        matches!(
            self,
            AttachKind::TpBtf
                | AttachKind::Fentry
                | AttachKind::Fexit
                | AttachKind::FmodRet
                | AttachKind::Lsm
        )
    }

    /// The name of the kernel BTF type the target is found by: `btf_trace_NAME` (a
    /// typedef) for `tp_btf`, `bpf_lsm_HOOK` (a function) for `lsm`, the function itself
    /// for `fentry`/`fexit`/`fmod_ret`. Returns the prefix to put before the target.
    #[must_use]
    pub fn btf_name_prefix(self) -> &'static str {
        match self {
            AttachKind::TpBtf => "btf_trace_",
            AttachKind::Lsm => "bpf_lsm_",
            _ => "",
        }
    }

    /// Whether the BTF type searched is a `TYPEDEF` (`tp_btf`) rather than a `FUNC`.
    #[must_use]
    pub fn btf_is_typedef(self) -> bool {
        self == AttachKind::TpBtf
    }

    /// Whether it fires on a return.
    #[must_use]
    pub fn is_return(self) -> bool {
        matches!(
            self,
            AttachKind::Fexit
                | AttachKind::Kretsyscall
                | AttachKind::KretprobeMulti
                | AttachKind::UretprobeMulti
        )
    }

    /// Whether it is a multi-probe (`kprobe.multi`, `uretprobe.multi` ...): its target a glob.
    #[must_use]
    pub fn is_multi(self) -> bool {
        matches!(
            self,
            AttachKind::KprobeMulti
                | AttachKind::KretprobeMulti
                | AttachKind::UprobeMulti
                | AttachKind::UretprobeMulti
        )
    }

    /// libbpf's section prefix, without the `.s` suffix (`tp_btf`, `kprobe.multi`).
    #[must_use]
    pub fn prefix(self) -> &'static str {
        match self {
            AttachKind::TpBtf => "tp_btf",
            AttachKind::Fentry => "fentry",
            AttachKind::Fexit => "fexit",
            AttachKind::FmodRet => "fmod_ret",
            AttachKind::Lsm => "lsm",
            AttachKind::RawTp => "raw_tp",
            AttachKind::RawTpWritable => "raw_tp.w",
            AttachKind::Ksyscall => "ksyscall",
            AttachKind::Kretsyscall => "kretsyscall",
            AttachKind::KprobeMulti => "kprobe.multi",
            AttachKind::KretprobeMulti => "kretprobe.multi",
            AttachKind::UprobeMulti => "uprobe.multi",
            AttachKind::UretprobeMulti => "uretprobe.multi",
            AttachKind::Usdt => "usdt",
        }
    }
}

/// An attach point read from a section name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AttachPoint<'a> {
    /// What kind.
    pub kind: AttachKind,
    /// The tracepoint, function, hook, syscall or glob pattern.
    pub target: &'a str,
    /// The binary of a `uprobe.multi/PATH:PATTERN`; `None` for every other kind.
    pub path: Option<&'a str>,
    /// The `.s` form: loaded with [`BPF_F_SLEEPABLE`].
    pub sleepable: bool,
}

impl AttachPoint<'_> {
    /// `(provider, name)` of a `usdt/` point; `None` for every other kind.
    #[must_use]
    pub fn usdt(&self) -> Option<(&str, &str)> {
        (self.kind == AttachKind::Usdt)
            .then(|| self.target.split_once(':'))
            .flatten()
    }

    /// The `BPF_F_*` load flags it needs.
    #[must_use]
    pub fn prog_flags(&self) -> u32 {
        if self.sleepable {
            BPF_F_SLEEPABLE
        } else {
            0
        }
    }
}

impl core::fmt::Display for AttachPoint<'_> {
    /// The section name, as libbpf spells it (`fentry.s/FUNC`, `uprobe.multi/PATH:PAT`).
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = if self.sleepable { ".s" } else { "" };
        write!(f, "{}{s}/", self.kind.prefix())?;
        if let Some(path) = self.path {
            write!(f, "{path}:")?;
        }
        f.write_str(self.target)
    }
}

/// Section prefixes, the kind and whether the `.s` form is sleepable.
const PREFIXES: &[(&str, AttachKind, bool)] = {
    use AttachKind as K;
    &[
        ("tp_btf", K::TpBtf, false),
        ("tp_btf.s", K::TpBtf, true),
        ("fentry", K::Fentry, false),
        ("fentry.s", K::Fentry, true),
        ("fexit", K::Fexit, false),
        ("fexit.s", K::Fexit, true),
        ("fmod_ret", K::FmodRet, false),
        ("fmod_ret.s", K::FmodRet, true),
        ("lsm", K::Lsm, false),
        ("lsm.s", K::Lsm, true),
        ("raw_tp", K::RawTp, false),
        ("raw_tracepoint", K::RawTp, false),
        ("raw_tp.w", K::RawTpWritable, false),
        ("raw_tracepoint.w", K::RawTpWritable, false),
        ("ksyscall", K::Ksyscall, false),
        ("kretsyscall", K::Kretsyscall, false),
        ("kprobe.multi", K::KprobeMulti, false),
        ("kretprobe.multi", K::KretprobeMulti, false),
        ("uprobe.multi", K::UprobeMulti, false),
        ("uprobe.multi.s", K::UprobeMulti, true),
        ("uretprobe.multi", K::UretprobeMulti, false),
        ("uretprobe.multi.s", K::UretprobeMulti, true),
        ("usdt", K::Usdt, false),
        ("usdt.s", K::Usdt, true),
    ]
};

/// Why a section with a known attach prefix names no usable target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AttachError {
    /// Nothing after the `/` (libbpf attaches such programs only by hand).
    NoTarget,
    /// The target is not a symbol (`[A-Za-z_][A-Za-z0-9_.]*`; for a multi-probe, a glob of
    /// those and `*?`); the byte column where it goes wrong.
    BadTarget(usize),
    /// A `uprobe.multi/` without `PATH:`, a `usdt/` without `PATH:PROVIDER:NAME`.
    NoPath,
}

impl core::fmt::Display for AttachError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AttachError::NoTarget => f.write_str("no target after the '/'"),
            AttachError::BadTarget(at) => write!(f, "column {at}: not a symbol name"),
            AttachError::NoPath => f.write_str("expected PATH:PATTERN (usdt: PATH:PROVIDER:NAME)"),
        }
    }
}

impl core::error::Error for AttachError {}

/// What `section` attaches to, when its prefix is one of the kinds of [`AttachKind`]:
/// `None` for every other name (probes of the grammar, `xdp`, `license`, a bare `fentry`).
///
/// # Errors
/// A known prefix with a missing or malformed target ([`AttachError`]).
pub fn attach_point(section: &str) -> Option<Result<AttachPoint<'_>, AttachError>> {
    let (prefix, rest) = section.split_once('/')?;
    let &(_, kind, sleepable) = PREFIXES.iter().find(|(p, _, _)| *p == prefix)?;
    let start = prefix.len().saturating_add(1);
    Some(target(kind, rest, start).map(|(path, target)| AttachPoint {
        kind,
        target,
        path,
        sleepable,
    }))
}

/// The multi-probe a section names by its prefix alone (`uprobe.multi`,
/// `uretprobe.multi.s`, `kprobe.multi`): libbpf loads such a program as that kind (its
/// `expected_attach_type`, `.s` sleepable) but leaves attaching it to the program's own
/// code; `(kind, sleepable)`, `None` for every other name.
#[must_use]
pub fn bare_multi(section: &str) -> Option<(AttachKind, bool)> {
    PREFIXES
        .iter()
        .find(|(p, kind, _)| *p == section && kind.is_multi())
        .map(|&(_, kind, sleepable)| (kind, sleepable))
}

/// The target of `kind` in `rest` (which starts at column `start`): `(path, target)`.
fn target(kind: AttachKind, rest: &str, start: usize) -> Result<(Option<&str>, &str), AttachError> {
    if rest.is_empty() {
        return Err(AttachError::NoTarget);
    }
    let multi = kind.is_multi();
    let (path, pattern, at) = match kind {
        AttachKind::Usdt => {
            // PATH:PROVIDER:NAME, the path itself may hold ':' (libbpf splits at the last
            // two).
            let (head, name) = rest.rsplit_once(':').ok_or(AttachError::NoPath)?;
            let (path, provider) = head.rsplit_once(':').ok_or(AttachError::NoPath)?;
            if path.is_empty() {
                return Err(AttachError::NoPath);
            }
            if let Some(bad) = path.bytes().position(|b| b.is_ascii_control()) {
                return Err(AttachError::BadTarget(start.saturating_add(bad)));
            }
            let at = start.saturating_add(path.len()).saturating_add(1);
            let ident = |s: &str| {
                s.bytes().enumerate().position(|(i, b)| {
                    !(if i == 0 {
                        is_ident_start(b)
                    } else {
                        is_ident_cont(b)
                    })
                })
            };
            if provider.is_empty() || name.is_empty() {
                return Err(AttachError::NoTarget);
            }
            if let Some(bad) = ident(provider) {
                return Err(AttachError::BadTarget(at.saturating_add(bad)));
            }
            if let Some(bad) = ident(name) {
                let at = at.saturating_add(provider.len()).saturating_add(1);
                return Err(AttachError::BadTarget(at.saturating_add(bad)));
            }
            return Ok((
                Some(path),
                rest.get(path.len().saturating_add(1)..).unwrap_or(""),
            ));
        }
        AttachKind::UprobeMulti | AttachKind::UretprobeMulti => {
            let (path, pattern) = rest.split_once(':').ok_or(AttachError::NoPath)?;
            if path.is_empty() {
                return Err(AttachError::NoPath);
            }
            if let Some(bad) = path.bytes().position(|b| b.is_ascii_control()) {
                return Err(AttachError::BadTarget(start.saturating_add(bad)));
            }
            let at = start.saturating_add(path.len()).saturating_add(1);
            (Some(path), pattern, at)
        }
        _ => (None, rest, start),
    };
    if pattern.is_empty() {
        return Err(AttachError::NoTarget);
    }
    // A raw tracepoint's name may hold '-' (none do today, but tracefs allows it); globs
    // take '*' and '?'; a symbol may hold '@' in a user binary.
    let ok = |i: usize, b: u8| {
        let glob = multi && matches!(b, b'*' | b'?');
        let user = path.is_some() && b == b'@';
        if i == 0 {
            is_ident_start(b) || glob
        } else {
            is_ident_cont(b) || b == b'.' || glob || user
        }
    };
    if let Some(bad) = pattern.bytes().enumerate().position(|(i, b)| !ok(i, b)) {
        return Err(AttachError::BadTarget(at.saturating_add(bad)));
    }
    Ok((path, pattern))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::probe::{parse, prog_types, program_type, Section};
    extern crate std;
    use std::format;

    fn point(s: &str) -> AttachPoint<'_> {
        attach_point(s).unwrap().unwrap()
    }

    #[test]
    fn kinds_targets_and_flags() {
        use attach_types as a;
        let table: &[(&str, AttachKind, &str, bool, u32, u32)] = &[
            (
                "tp_btf/sched_switch",
                AttachKind::TpBtf,
                "sched_switch",
                false,
                a::TRACE_RAW_TP,
                prog_types::TRACING,
            ),
            (
                "tp_btf.s/sched_switch",
                AttachKind::TpBtf,
                "sched_switch",
                true,
                a::TRACE_RAW_TP,
                prog_types::TRACING,
            ),
            (
                "fentry/do_unlinkat",
                AttachKind::Fentry,
                "do_unlinkat",
                false,
                a::TRACE_FENTRY,
                prog_types::TRACING,
            ),
            (
                "fentry.s/vfs_read",
                AttachKind::Fentry,
                "vfs_read",
                true,
                a::TRACE_FENTRY,
                prog_types::TRACING,
            ),
            (
                "fexit/vfs_read",
                AttachKind::Fexit,
                "vfs_read",
                false,
                a::TRACE_FEXIT,
                prog_types::TRACING,
            ),
            (
                "fexit.s/vfs_read",
                AttachKind::Fexit,
                "vfs_read",
                true,
                a::TRACE_FEXIT,
                prog_types::TRACING,
            ),
            (
                "fmod_ret/security_x",
                AttachKind::FmodRet,
                "security_x",
                false,
                a::MODIFY_RETURN,
                prog_types::TRACING,
            ),
            (
                "fmod_ret.s/security_x",
                AttachKind::FmodRet,
                "security_x",
                true,
                a::MODIFY_RETURN,
                prog_types::TRACING,
            ),
            (
                "lsm/file_open",
                AttachKind::Lsm,
                "file_open",
                false,
                a::LSM_MAC,
                prog_types::LSM,
            ),
            (
                "lsm.s/bprm_committed_creds",
                AttachKind::Lsm,
                "bprm_committed_creds",
                true,
                a::LSM_MAC,
                prog_types::LSM,
            ),
            (
                "raw_tp/sched_switch",
                AttachKind::RawTp,
                "sched_switch",
                false,
                0,
                prog_types::RAW_TRACEPOINT,
            ),
            (
                "raw_tracepoint/sys_enter",
                AttachKind::RawTp,
                "sys_enter",
                false,
                0,
                prog_types::RAW_TRACEPOINT,
            ),
            (
                "raw_tp.w/bpf_test_finish",
                AttachKind::RawTpWritable,
                "bpf_test_finish",
                false,
                0,
                prog_types::RAW_TRACEPOINT_WRITABLE,
            ),
            (
                "raw_tracepoint.w/bpf_test_finish",
                AttachKind::RawTpWritable,
                "bpf_test_finish",
                false,
                0,
                prog_types::RAW_TRACEPOINT_WRITABLE,
            ),
            (
                "ksyscall/openat",
                AttachKind::Ksyscall,
                "openat",
                false,
                0,
                prog_types::KPROBE,
            ),
            (
                "kretsyscall/openat",
                AttachKind::Kretsyscall,
                "openat",
                false,
                0,
                prog_types::KPROBE,
            ),
            (
                "kprobe.multi/vfs_*",
                AttachKind::KprobeMulti,
                "vfs_*",
                false,
                a::TRACE_KPROBE_MULTI,
                prog_types::KPROBE,
            ),
            (
                "kretprobe.multi/tcp_?end*",
                AttachKind::KretprobeMulti,
                "tcp_?end*",
                false,
                a::TRACE_KPROBE_MULTI,
                prog_types::KPROBE,
            ),
        ];
        for &(s, kind, target, sleepable, eat, pt) in table {
            let p = point(s);
            assert_eq!(
                (p.kind, p.target, p.sleepable, p.path),
                (kind, target, sleepable, None),
                "{s}"
            );
            assert_eq!(p.kind.expected_attach_type(), eat, "{s}");
            assert_eq!(
                p.prog_flags(),
                if sleepable { BPF_F_SLEEPABLE } else { 0 },
                "{s}"
            );
            assert_eq!(program_type(s), Some(pt), "{s}");
            // The probe grammar leaves these to the attach point: a title, no error.
            assert_eq!(parse(s), Ok(Section::Title(s)), "{s}");
        }
        let u = point("uprobe.multi//usr/lib/libc.so.6:str*@GLIBC_2.2.5");
        assert_eq!(
            (u.kind, u.path, u.target),
            (
                AttachKind::UprobeMulti,
                Some("/usr/lib/libc.so.6"),
                "str*@GLIBC_2.2.5"
            )
        );
        assert_eq!(u.kind.expected_attach_type(), a::TRACE_UPROBE_MULTI);
        assert!(point("uretprobe.multi.s//bin/x:f").sleepable);
    }

    #[test]
    fn btf_names() {
        assert_eq!(AttachKind::TpBtf.btf_name_prefix(), "btf_trace_");
        assert!(AttachKind::TpBtf.btf_is_typedef());
        assert_eq!(AttachKind::Lsm.btf_name_prefix(), "bpf_lsm_");
        assert!(!AttachKind::Lsm.btf_is_typedef());
        assert_eq!(AttachKind::Fentry.btf_name_prefix(), "");
        for k in [
            AttachKind::TpBtf,
            AttachKind::Fentry,
            AttachKind::Fexit,
            AttachKind::FmodRet,
            AttachKind::Lsm,
        ] {
            assert!(k.needs_btf_id());
        }
        for k in [
            AttachKind::RawTp,
            AttachKind::Ksyscall,
            AttachKind::KprobeMulti,
        ] {
            assert!(!k.needs_btf_id());
        }
        assert!(AttachKind::Fexit.is_return() && AttachKind::Kretsyscall.is_return());
        assert!(!AttachKind::Fentry.is_return());
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "tp_btf/sched_switch",
            "fentry.s/vfs_read",
            "lsm/file_open",
            "raw_tp.w/x",
            "kretsyscall/openat",
            "uprobe.multi//bin/x:f*",
        ] {
            assert_eq!(format!("{}", point(s)), s);
        }
        // The long raw_tracepoint spelling prints as the short one.
        assert_eq!(
            format!("{}", point("raw_tracepoint/sys_enter")),
            "raw_tp/sys_enter"
        );
    }

    #[test]
    fn not_attach_points() {
        for s in [
            "kprobe/vfs_read",
            "uprobe//bin/true:main",
            "tracepoint/syscalls/sys_enter_openat",
            "xdp",
            "fentry",
            "license",
            "generic_perform_write=generic_perform_write+122 file",
            "fentry.multi/x",
            "iter/task",
        ] {
            assert_eq!(attach_point(s), None, "{s}");
        }
    }

    #[test]
    fn bad_targets() {
        assert_eq!(attach_point("fentry/"), Some(Err(AttachError::NoTarget)));
        assert_eq!(
            attach_point("fentry/9x"),
            Some(Err(AttachError::BadTarget(7)))
        );
        assert_eq!(
            attach_point("fentry/a*"),
            Some(Err(AttachError::BadTarget(8)))
        );
        assert_eq!(
            attach_point("tp_btf/a b"),
            Some(Err(AttachError::BadTarget(8)))
        );
        assert_eq!(
            attach_point("uprobe.multi/f"),
            Some(Err(AttachError::NoPath))
        );
        assert_eq!(
            attach_point("uprobe.multi/:f"),
            Some(Err(AttachError::NoPath))
        );
        assert_eq!(
            attach_point("uprobe.multi//bin/x:"),
            Some(Err(AttachError::NoTarget))
        );
        assert_eq!(
            attach_point("uprobe.multi//bin/x:a b"),
            Some(Err(AttachError::BadTarget(21)))
        );
    }

    #[test]
    fn bare_multi_probes() {
        assert_eq!(
            bare_multi("uprobe.multi"),
            Some((AttachKind::UprobeMulti, false))
        );
        assert_eq!(
            bare_multi("uretprobe.multi.s"),
            Some((AttachKind::UretprobeMulti, true))
        );
        assert_eq!(
            bare_multi("kprobe.multi"),
            Some((AttachKind::KprobeMulti, false))
        );
        for s in ["uprobe.multi/x:y", "fentry", "usdt", "uprobe"] {
            assert_eq!(bare_multi(s), None, "{s}");
        }
    }

    #[test]
    fn usdt_points() {
        let p = point("usdt//usr/lib/libc.so.6:libc:setjmp");
        assert_eq!(p.kind, AttachKind::Usdt);
        assert_eq!(p.path, Some("/usr/lib/libc.so.6"));
        assert_eq!(p.usdt(), Some(("libc", "setjmp")));
        assert_eq!(format!("{p}"), "usdt//usr/lib/libc.so.6:libc:setjmp");
        assert_eq!(point("usdt/a:b:c:d").path, Some("a:b"));
        assert_eq!(
            attach_point("usdt//bin/x:libc"),
            Some(Err(AttachError::NoPath))
        );
        assert_eq!(
            attach_point("usdt//bin/x::n"),
            Some(Err(AttachError::NoTarget))
        );
        assert_eq!(
            attach_point("usdt//bin/x:p:n-1"),
            Some(Err(AttachError::BadTarget(15)))
        );
        assert_eq!(point("usdt.s//bin/x:p:n").prog_flags(), BPF_F_SLEEPABLE);
    }
}
