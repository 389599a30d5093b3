//! `kprobe.multi/PATTERN` and `kretprobe.multi/PATTERN`: one BPF link
//! (`BPF_TRACE_KPROBE_MULTI`, Linux 5.18, needs `CONFIG_FPROBE`) on every traceable kernel
//! function whose name matches the glob, as libbpf finds them: the names of tracefs's
//! `available_filter_functions` (`*` and `?` wildcards), less ftrace's
//! `__ftrace_invalid_address___*` placeholders, each name once (the kernel resolves a name
//! to one function; a static function with a twin elsewhere takes the first in kallsyms).
//!
//! Each function gets a BPF cookie, what `bpf_get_attach_cookie()` answers in the program:
//! its place in [`kprobe_multi_functions`]'s list (sorted by name), counted from 1.

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::io::Errno;

use super::events::Error;
use crate::kernel::hooks::config_set;
use crate::load::LoadedProgram;
use crate::probe::HookPlan;
use crate::sys::bpf as sys;

/// The functions `kprobe.multi/PATTERN` attaches to under the tracefs at `tracefs`: the
/// matching names of `available_filter_functions` (a module's without its `[module]`),
/// sorted, each once. The one at index `i` gets BPF cookie `i + 1`.
///
/// # Errors
/// The file cannot be read.
pub fn kprobe_multi_functions(tracefs: &Path, pattern: &str) -> std::io::Result<Vec<String>> {
    let text = std::fs::read_to_string(tracefs.join("available_filter_functions"))?;
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| !n.starts_with("__ftrace_invalid_address__"))
        .filter(|n| sluice_core::elf::glob_match(n.as_bytes(), pattern.as_bytes()))
        .map(str::to_owned)
        .collect();
    names.sort_unstable();
    names.dedup();
    Ok(names)
}

/// Attaches `prog` (planned as `hook`, a `kprobe.multi/` or `kretprobe.multi/`) to every
/// function its glob matches under `tracefs`, and returns the link's fd.
///
/// # Errors
/// [`Error::Unsupported`] without `CONFIG_FPROBE` (from the kernel's configuration, before
/// trying, or from its `EOPNOTSUPP`), without tracefs, or when no function matches;
/// [`Error::Refused`] for another refusal.
pub fn attach_kprobe_multi(
    hook: &HookPlan,
    prog: &LoadedProgram,
    tracefs: Option<&Path>,
    ret: bool,
) -> Result<OwnedFd, Error> {
    let unsupported = |reason: String| Error::Unsupported {
        program: prog.name().to_owned(),
        target: hook.section(),
        reason,
    };
    let config = config_set("CONFIG_FPROBE");
    if config == Some(false) {
        return Err(unsupported(no_fprobe(config)));
    }
    let tracefs = tracefs.ok_or_else(|| {
        unsupported("the functions are found in tracefs, which is not mounted".into())
    })?;
    let names = kprobe_multi_functions(tracefs, &hook.target).map_err(|e| {
        unsupported(format!(
            "cannot read {}: {e}",
            tracefs.join("available_filter_functions").display()
        ))
    })?;
    if names.is_empty() {
        return Err(unsupported(format!(
            "no traceable kernel function matches '{}' (available_filter_functions)",
            hook.target
        )));
    }
    // Names from a text file hold no NUL.
    let names: Vec<CString> = names
        .into_iter()
        .filter_map(|n| CString::new(n).ok())
        .collect();
    let syms: Vec<&std::ffi::CStr> = names.iter().map(CString::as_c_str).collect();
    let cookies: Vec<u64> = (1..=syms.len() as u64).collect();
    let fd = sys::link_create_kprobe_multi(prog.as_fd(), &syms, &cookies, ret).map_err(|e| {
        if e == Errno::OPNOTSUPP {
            return unsupported(no_fprobe(config));
        }
        let reason = if e == Errno::SRCH || e == Errno::NOENT {
            "a matching function cannot be attached (not found by name, or not an ftrace \
             location)"
                .to_owned()
        } else if e == Errno::BUSY {
            "a matching function already has the most fprobes it takes".to_owned()
        } else {
            "the kernel refused".to_owned()
        };
        Error::Refused {
            program: prog.name().to_owned(),
            target: format!("{} ({} functions)", hook.section(), syms.len()),
            call: "BPF_LINK_CREATE",
            errno: e,
            reason,
        }
    })?;
    log::info!(
        "attached '{}' to {} ({} functions: {})",
        prog.name(),
        hook.section(),
        syms.len(),
        names
            .iter()
            .map(|n| n.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    Ok(fd)
}

/// Why a kernel (config `config`) cannot attach kprobe.multi.
fn no_fprobe(config: Option<bool>) -> String {
    match config {
        Some(false) => "kprobe.multi needs a kernel built with CONFIG_FPROBE, which this one \
                        is not (BPF_TRACE_KPROBE_MULTI, Linux 5.18)"
            .into(),
        _ => "kprobe.multi needs a kernel built with CONFIG_FPROBE (BPF_TRACE_KPROBE_MULTI, \
              Linux 5.18): this one answers EOPNOTSUPP"
            .into(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn functions_sorted_once_without_modules_or_placeholders() {
        let dir = std::env::temp_dir().join(format!("sluice-multi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("available_filter_functions"),
            "security_task_getpgid\n__x64_sys_getpgid\n__ftrace_invalid_address___84\n\
             do_getpgid\ndo_getpgid\nfoo_getpgid [foo]\nvfs_read\n",
        )
        .unwrap();
        assert_eq!(
            kprobe_multi_functions(&dir, "*getpgid").unwrap(),
            [
                "__x64_sys_getpgid",
                "do_getpgid",
                "foo_getpgid",
                "security_task_getpgid"
            ]
        );
        assert!(kprobe_multi_functions(&dir, "*_address_*")
            .unwrap()
            .is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
