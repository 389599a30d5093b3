//! `uprobe.multi/PATH:PATTERN` and `uretprobe.multi/PATH:PATTERN` (and their `.s` forms):
//! every function of the binary at PATH whose name matches the glob, in one `uprobe_multi`
//! link (`BPF_LINK_CREATE`/`BPF_TRACE_UPROBE_MULTI`, Linux 6.6), as libbpf's
//! `bpf_program__attach_uprobe_multi` makes it for a section name: PATH as written when it
//! holds a `/`, else searched where libbpf searches ([`resolve_path`]); the functions
//! found by [`sluice_core::elf::functions_matching`] (`.symtab`, else `.dynsym`), their
//! file offsets without semaphores or cookies; the returns with
//! `BPF_F_UPROBE_MULTI_RETURN`; only the process of `-p` when one is given. Two symbols
//! of one address (aliases) are one offset, so a call runs the program once.

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use sluice_core::elf::{functions_matching, Elf};

use super::events::{Error, Scope};
use super::link_error::LinkError;
use crate::error::SpecProblem;
use crate::kernel::errno::attach_reason;
use crate::kernel::hooks::attach_facts;
use crate::load::LoadedProgram;
use crate::probe::HookPlan;
use crate::sys::bpf as sys;
use crate::sys::mmap::Mmap;

/// Where libbpf looks for a PATH without `/` (`resolve_full_path`): a library (`.so`,
/// `.so.N`) in `$LD_LIBRARY_PATH`, `/usr/lib64`, `/usr/lib` and the arch's multiarch
/// folder, readable; anything else in `$PATH`, `/usr/bin`, `/usr/sbin`, readable and
/// executable. `None` when no folder has it.
#[must_use]
pub fn resolve_path(file: &str) -> Option<PathBuf> {
    use rustix::fs::{accessat, Access, AtFlags, CWD};
    let lib = file.ends_with(".so") || file.contains(".so.");
    let (var, fixed, perm) = if lib {
        let arch = if cfg!(target_arch = "x86_64") {
            ":/lib/x86_64-linux-gnu"
        } else if cfg!(target_arch = "aarch64") {
            ":/lib/aarch64-linux-gnu"
        } else if cfg!(target_arch = "x86") {
            ":/lib/i386-linux-gnu"
        } else {
            ""
        };
        (
            "LD_LIBRARY_PATH",
            format!("/usr/lib64:/usr/lib{arch}"),
            Access::READ_OK,
        )
    } else {
        (
            "PATH",
            "/usr/bin:/usr/sbin".to_owned(),
            Access::READ_OK | Access::EXEC_OK,
        )
    };
    let env = std::env::var(var).unwrap_or_default();
    env.split(':')
        .chain(fixed.split(':'))
        .filter(|dir| !dir.is_empty())
        .map(|dir| Path::new(dir).join(file))
        .find(|p| accessat(CWD, p, perm, AtFlags::EACCESS).is_ok())
}

/// The binary of `hook` and the deduplicated, sorted file offsets of its functions that
/// match its pattern.
///
/// # Errors
/// [`LinkError::Spec`] ([`SpecProblem::UprobeMulti`], bad input): PATH not found, not
/// readable or no ELF file, no function matching, a match in no loaded section.
pub fn uprobe_multi_offsets(hook: &HookPlan) -> Result<(PathBuf, Vec<u64>), LinkError> {
    let written = hook.path.as_deref().unwrap_or("");
    let bad = |why: String| {
        LinkError::Spec(SpecProblem::UprobeMulti {
            binary: written.to_owned(),
            pattern: hook.target.clone(),
            why,
        })
    };
    let path = if written.contains('/') {
        PathBuf::from(written)
    } else {
        resolve_path(written)
            .ok_or_else(|| bad("not found where libbpf looks (PATH, /usr/bin, ...)".into()))?
    };
    let data = Mmap::open(&path).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    let elf = Elf::parse(data.bytes()).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    let mut offsets = Vec::new();
    for f in functions_matching(&elf, &hook.target) {
        let offset = f.file_offset.ok_or_else(|| {
            bad(format!(
                "function {} at {:#x} lies in no loaded section",
                f.name, f.address
            ))
        })?;
        offsets.push(offset);
    }
    if offsets.is_empty() {
        return Err(bad(format!(
            "no function of {} matches (defined STT_FUNC symbols of .symtab, else .dynsym)",
            path.display()
        )));
    }
    offsets.sort_unstable();
    offsets.dedup();
    Ok((path, offsets))
}

/// Attaches `prog` to the functions of `hook` (see the module docs), in process `-p` of
/// `scope` only.
///
/// # Errors
/// As [`uprobe_multi_offsets`]; [`LinkError::Events`] with [`Error::Refused`] naming the
/// program, the binary and the kernel's reason.
pub fn attach_uprobe_multi(
    hook: &HookPlan,
    prog: &LoadedProgram,
    scope: Scope,
) -> Result<OwnedFd, LinkError> {
    let (path, offsets) = uprobe_multi_offsets(hook)?;
    let pid = match scope {
        Scope::Process { pid } => u32::try_from(pid).ok(),
        Scope::System | Scope::Task { .. } => None,
    };
    let target = format!(
        "{} ({} functions of {})",
        hook.section(),
        offsets.len(),
        path.display()
    );
    let c_path = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
        LinkError::Spec(SpecProblem::UprobeMulti {
            binary: path.display().to_string(),
            pattern: hook.target.clone(),
            why: "a NUL in the path".into(),
        })
    })?;
    let ret = hook.kind.is_return();
    let fd = sys::link_create_uprobe_multi(prog.as_fd(), &c_path, &offsets, ret, pid).map_err(
        |errno| {
            let binary = path.display().to_string();
            LinkError::Events(Error::Refused {
                program: prog.name().to_owned(),
                target: target.clone(),
                call: "BPF_LINK_CREATE",
                errno,
                reason: attach_reason(hook.kind, &binary, errno, &attach_facts(None, None)),
            })
        },
    )?;
    log::info!("attached '{}' to {target}", prog.name());
    Ok(fd)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use sluice_core::probe::attach_point;

    fn plan(s: &str) -> HookPlan {
        HookPlan::new(&attach_point(s).unwrap().unwrap())
    }

    #[test]
    fn paths_are_searched_as_libbpf_searches_them() {
        // `sh` is in PATH or /usr/bin on every machine the tests run on.
        let sh = resolve_path("sh").unwrap();
        assert!(sh.is_absolute() && sh.ends_with("sh"), "{}", sh.display());
        assert_eq!(resolve_path("sluice-no-such-binary-anywhere"), None);
        assert_eq!(resolve_path("libsluice-no-such.so.1"), None);
    }

    #[test]
    fn bad_input_names_the_pattern_and_binary() {
        let e = uprobe_multi_offsets(&plan("uprobe.multi/sluice-no-such-binary:f*")).unwrap_err();
        let m = e.to_string();
        assert!(
            m.starts_with("uprobe.multi pattern 'f*' of sluice-no-such-binary: not found"),
            "{m}"
        );
        let exe = std::env::current_exe().unwrap();
        let e = uprobe_multi_offsets(&plan(&format!(
            "uprobe.multi/{}:sluice_no_function_is_named_so_*",
            exe.display()
        )))
        .unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("pattern 'sluice_no_function_is_named_so_*'")
                && m.contains("no function of"),
            "{m}"
        );
        assert!(matches!(
            e,
            LinkError::Spec(SpecProblem::UprobeMulti { .. })
        ));
    }
}
