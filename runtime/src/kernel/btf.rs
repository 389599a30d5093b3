//! The running kernel's BTF as an attach target: the type id a `tp_btf/`, `fentry/`,
//! `fexit/`, `fmod_ret/` or `lsm/` program is loaded against (`attach_btf_id`), in
//! `/sys/kernel/btf/vmlinux` or, for a function of a module, in the module's split BTF
//! (`/sys/kernel/btf/MODULE`) together with that BTF object's fd (`attach_btf_obj_fd`),
//! found among the kernel's BTF objects by name (`BPF_BTF_GET_NEXT_ID`,
//! `BPF_BTF_GET_FD_BY_ID`).

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use sluice_core::btf::{Btf, Kind};

use crate::error::{Error, Result};
use crate::kernel::errno::bpf_error;
use crate::sys::bpf as sys;

/// Where the kernel publishes its BTF and its modules'.
pub const BTF_DIR: &str = "/sys/kernel/btf";

/// The BTF of a module that holds an attach target.
#[derive(Debug)]
pub struct ModuleBtf {
    /// The module (`nf_conntrack`).
    pub name: String,
    /// Its BTF object (`attach_btf_obj_fd`).
    pub fd: OwnedFd,
}

/// An attach target found in the kernel's BTF.
#[derive(Debug)]
pub struct AttachBtf {
    /// `attach_btf_id`: the type's id in vmlinux's BTF, or in the module's split BTF
    /// (counted after vmlinux's).
    pub id: u32,
    /// The module it is in (`None`: vmlinux).
    pub module: Option<ModuleBtf>,
}

/// What [`find_attach_types`] searched, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Searched {
    /// The base BTF (`/sys/kernel/btf/vmlinux`, or `--btf FILE`).
    pub base: PathBuf,
    /// Module BTF files read.
    pub modules: usize,
}

impl std::fmt::Display for Searched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.base.display())?;
        match self.modules {
            0 => Ok(()),
            1 => f.write_str(" and 1 module"),
            n => write!(f, " and {n} modules"),
        }
    }
}

/// Finds each type of `wanted` (a name and a kind) in the base BTF `base` (the running
/// kernel's `/sys/kernel/btf/vmlinux`, or a file given for a kernel without it) and, for
/// those not there, in the module BTF files beside it under `modules_dir` (in name order;
/// the first module with the type wins). Returns one entry per `wanted`, in order.
///
/// # Errors
/// [`Error::Io`] when the base cannot be read; [`Error::TargetBtf`] when it does not
/// parse; for a type found in a module, [`Error::Syscall`] / [`Error::Permission`] when
/// the module's BTF object cannot be opened. A module file that cannot be read or parsed
/// is skipped with a warning.
pub fn find_attach_types(
    base: &Path,
    modules_dir: Option<&Path>,
    wanted: &[(String, Kind)],
) -> Result<(Vec<Option<AttachBtf>>, Searched)> {
    let contents = crate::sys::mmap::Contents::open(base).map_err(|source| Error::Io {
        path: base.display().to_string(),
        source,
    })?;
    let bytes = contents.bytes();
    let target_err = |source| Error::TargetBtf {
        path: Some(base.display().to_string()),
        source,
    };
    let n = Btf::count_types(bytes).map_err(target_err)?;
    let mut index = vec![0u32; n as usize];
    let btf = Btf::parse(bytes, &mut index).map_err(target_err)?;
    let mut found: Vec<Option<AttachBtf>> = wanted
        .iter()
        .map(|(name, kind)| {
            btf.find(name, *kind).map(|t| AttachBtf {
                id: t.id(),
                module: None,
            })
        })
        .collect();
    let mut searched = Searched {
        base: base.to_owned(),
        modules: 0,
    };
    if found.iter().all(Option::is_some) {
        return Ok((found, searched));
    }
    let Some(dir) = modules_dir else {
        return Ok((found, searched));
    };
    for (module, path) in module_files(dir, base) {
        let split = match crate::sys::file::read_regular(&path) {
            Ok(b) => b,
            Err(e) => {
                log::warn!("module BTF {}: {e}", path.display());
                continue;
            }
        };
        searched.modules += 1;
        for (slot, (name, kind)) in found.iter_mut().zip(wanted) {
            if slot.is_some() {
                continue;
            }
            match btf.find_in_split(&split, name, *kind) {
                Ok(Some(id)) => {
                    let fd = module_btf_fd(&module)?;
                    log::debug!("{name}: BTF id {id} of module {module}");
                    *slot = Some(AttachBtf {
                        id,
                        module: Some(ModuleBtf {
                            name: module.clone(),
                            fd,
                        }),
                    });
                }
                Ok(None) => {}
                Err(e) => {
                    log::warn!("module BTF {}: {e}", path.display());
                    break;
                }
            }
        }
        if found.iter().all(Option::is_some) {
            break;
        }
    }
    Ok((found, searched))
}

/// The module BTF files of `dir` (every file but the base), by name.
fn module_files(dir: &Path, base: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<(String, PathBuf)> = entries
        .filter_map(|e| {
            let e = e.ok()?;
            let name = e.file_name().to_str()?.to_owned();
            let path = e.path();
            (name != "vmlinux" && path != base).then_some((name, path))
        })
        .collect();
    v.sort();
    v
}

/// The fd of the BTF object the kernel holds for `module`: the one of that name among
/// `BPF_BTF_GET_NEXT_ID`'s.
fn module_btf_fd(module: &str) -> Result<OwnedFd> {
    let mut id = 0u32;
    // Every BTF object (programs' too) has an id; the walk ends with ENOENT.
    for _ in 0..1_000_000 {
        id = match sys::btf_next_id(id) {
            Ok(next) => next,
            Err(e) if e == rustix::io::Errno::NOENT => break,
            Err(e) => return Err(bpf_error("bpf(BPF_BTF_GET_NEXT_ID)", module, e, None)),
        };
        let fd = match sys::btf_fd_by_id(id) {
            Ok(fd) => fd,
            // Freed meanwhile.
            Err(e) if e == rustix::io::Errno::NOENT => continue,
            Err(e) => return Err(bpf_error("bpf(BPF_BTF_GET_FD_BY_ID)", module, e, None)),
        };
        if let Ok((_, name)) = sys::btf_name(std::os::fd::AsFd::as_fd(&fd)) {
            if name == module {
                return Ok(fd);
            }
        }
    }
    Err(Error::Syscall {
        call: "bpf(BPF_BTF_GET_FD_BY_ID)",
        subject: format!("module {module}: no BTF object of that name"),
        errno: rustix::io::Errno::NOENT,
    })
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

    /// The running kernel's BTF has the types each attach kind looks for.
    #[test]
    fn vmlinux_has_tracepoints_functions_and_hooks() {
        let base = Path::new(BTF_DIR).join("vmlinux");
        if !base.exists() {
            assert!(
                std::env::var_os("SLUICE_REQUIRE_KERNEL").is_none(),
                "no {}",
                base.display()
            );
            eprintln!("SKIP: no {}", base.display());
            return;
        }
        let wanted = [
            ("btf_trace_sched_switch".to_owned(), Kind::Typedef),
            ("do_unlinkat".to_owned(), Kind::Func),
            ("no_such_function_anywhere".to_owned(), Kind::Func),
            ("btf_trace_sched_switch".to_owned(), Kind::Func),
        ];
        let (found, searched) =
            find_attach_types(&base, Some(Path::new(BTF_DIR)), &wanted).unwrap();
        let ids: Vec<Option<u32>> = found.iter().map(|f| f.as_ref().map(|a| a.id)).collect();
        assert!(ids[0].is_some_and(|id| id > 0), "{ids:?}");
        assert!(ids[1].is_some_and(|id| id > 0), "{ids:?}");
        assert_eq!(ids[2], None);
        assert_eq!(ids[3], None, "a typedef is no function");
        assert!(found.iter().flatten().all(|a| a.module.is_none()));
        assert!(searched.to_string().starts_with("/sys/kernel/btf/vmlinux"));
    }

    #[test]
    fn searched_says_how_many_modules() {
        let s = |modules| {
            Searched {
                base: "/b".into(),
                modules,
            }
            .to_string()
        };
        assert_eq!(s(0), "/b");
        assert_eq!(s(1), "/b and 1 module");
        assert_eq!(s(3), "/b and 3 modules");
    }
}
