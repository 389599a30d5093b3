//! Maps pinned by name (`LIBBPF_PIN_BY_NAME`, the BTF map attribute `pinning`): a map the
//! object marks so lives at `ROOT/NAME` in the BPF file system (`/sys/fs/bpf` unless the
//! caller says otherwise), shared by every run and every program that opens it. An existing
//! pin is reused when it is the map the object defines (type, key and value size,
//! `max_entries`, flags: libbpf's `map_is_reuse_compat`); otherwise the run stops naming the
//! difference. A map not pinned yet is created and pinned.

use std::ffi::CString;
use std::os::fd::BorrowedFd;
use std::path::{Path, PathBuf};

use rustix::io::Errno;
use sluice_core::object::{MapDef, MapKind};

use crate::error::{ConfigError, Error, Result};
use crate::sys::bpf as sys;

/// `LIBBPF_PIN_BY_NAME`: the value of the `pinning` attribute that pins a map by its name.
pub const PIN_BY_NAME: u32 = 1;

/// Where pinned maps go when no root is given.
pub const DEFAULT_PIN_ROOT: &str = "/sys/fs/bpf";

/// The pin path of `def` under `root`, when the object pins it by name.
#[must_use]
pub fn pin_path(def: &MapDef<'_>, root: Option<&Path>) -> Option<PathBuf> {
    (def.kind == MapKind::Btf && def.pinning == Some(PIN_BY_NAME))
        .then(|| root.unwrap_or(Path::new(DEFAULT_PIN_ROOT)).join(def.name))
}

fn pin_error(map: &str, path: &Path, call: &'static str, errno: Errno) -> Error {
    Error::Config(ConfigError::Pin {
        map: map.to_owned(),
        path: path.display().to_string(),
        call,
        errno,
    })
}

/// What a pinned map must have to be reused: the object's map as it would be created.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Shape<'a> {
    /// The map's name.
    pub(crate) name: &'a str,
    /// `BPF_MAP_TYPE_*`.
    pub(crate) map_type: u32,
    /// Key size in bytes.
    pub(crate) key_size: u32,
    /// Value size in bytes.
    pub(crate) value_size: u32,
    /// Maximum number of entries.
    pub(crate) max_entries: u32,
    /// `BPF_F_*` creation flags.
    pub(crate) map_flags: u32,
}

/// The map pinned at `path` when it has `spec`'s shape, with its `max_entries`; `None`
/// when nothing is pinned there.
///
/// # Errors
/// [`ConfigError::PinMismatch`] naming the first attribute that differs;
/// [`ConfigError::Pin`] when the path cannot be opened.
pub(crate) fn reuse(spec: &Shape<'_>, path: &Path) -> Result<Option<(sys::MapFd, u32)>> {
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| pin_error(spec.name, path, "bpf(BPF_OBJ_GET)", Errno::INVAL))?;
    let (fd, info) = match sys::obj_get_map(&c) {
        Ok(found) => found,
        Err(Errno::NOENT) => return Ok(None),
        Err(errno) => return Err(pin_error(spec.name, path, "bpf(BPF_OBJ_GET)", errno)),
    };
    let checks: [(&'static str, u32, u32); 5] = [
        ("type", info.map_type, spec.map_type),
        ("key_size", info.key_size, spec.key_size),
        ("value_size", info.value_size, spec.value_size),
        ("max_entries", info.max_entries, spec.max_entries),
        ("map_flags", info.map_flags, spec.map_flags),
    ];
    if let Some((what, pinned, wanted)) = checks.into_iter().find(|(_, p, w)| p != w) {
        return Err(Error::Config(ConfigError::PinMismatch {
            map: spec.name.to_owned(),
            path: path.display().to_string(),
            what,
            pinned: u64::from(pinned),
            wanted: u64::from(wanted),
        }));
    }
    log::info!(
        "map '{}': reusing the map pinned at {}",
        spec.name,
        path.display()
    );
    Ok(Some((fd, info.max_entries)))
}

/// `BPF_FS_MAGIC`: `statfs` of a BPF file system.
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;

// `f_type` is an i64 on x86_64 and a 32-bit word on i686: the conversion is not useless
// everywhere.
#[allow(clippy::useless_conversion)]
fn is_bpffs(dir: &Path) -> bool {
    rustix::fs::statfs(dir).is_ok_and(|s| i64::from(s.f_type) == BPF_FS_MAGIC)
}

/// Makes the folder of `path` ready for a pin: the BPF file system mounted on
/// [`DEFAULT_PIN_ROOT`] when it is the root and nothing is mounted there (as bpftool
/// does; systemd usually has done it), and the folder made if missing (as libbpf does).
fn prepare(map: &str, path: &Path) -> Result<()> {
    let Some(dir) = path.parent() else {
        return Ok(());
    };
    let default = Path::new(DEFAULT_PIN_ROOT);
    if dir.starts_with(default) && !is_bpffs(default) {
        rustix::mount::mount(
            "bpf",
            default,
            "bpf",
            rustix::mount::MountFlags::empty(),
            None,
        )
        .map_err(|errno| pin_error(map, default, "mount -t bpf", errno))?;
        log::info!("mounted the BPF file system on {DEFAULT_PIN_ROOT}");
    }
    if !dir.is_dir() {
        std::fs::create_dir_all(dir).map_err(|e| {
            let errno = Errno::from_io_error(&e).unwrap_or(Errno::IO);
            pin_error(map, dir, "mkdir", errno)
        })?;
    }
    Ok(())
}

/// Pins `map` at `path` (the BPF file system mounted and the folder made first, see
/// [`prepare`]).
///
/// # Errors
/// [`ConfigError::Pin`] with the kernel's refusal (`EPERM` outside a BPF file system).
pub(crate) fn pin(name: &str, map: BorrowedFd<'_>, path: &Path) -> Result<()> {
    prepare(name, path)?;
    let c = CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| pin_error(name, path, "bpf(BPF_OBJ_PIN)", Errno::INVAL))?;
    sys::obj_pin(map, &c).map_err(|errno| pin_error(name, path, "bpf(BPF_OBJ_PIN)", errno))?;
    log::info!("map '{name}': pinned at {}", path.display());
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    //! The reuse decision on the syscall fake: nothing pinned, the same map, a different
    //! one, a path the kernel refuses.
    use super::*;
    use crate::sys::fake::{self, Call, Cmd, Reply};
    use sluice_core::perf::abi::MapInfoRaw;

    fn spec() -> Shape<'static> {
        Shape {
            name: "shared",
            map_type: 2,
            key_size: 4,
            value_size: 8,
            max_entries: 4,
            map_flags: 0,
        }
    }

    /// A fake whose `BPF_OBJ_GET` answers `get` and whose map info is `info`.
    fn kernel(get: Result<(), Errno>, info: MapInfoRaw) -> fake::Fake {
        fake::install(move |call| match call {
            Call::Bpf(b) if b.cmd == Cmd::Other(sluice_core::perf::abi::cmd::OBJ_GET) => {
                get.map(|()| fake::fd())
            }
            Call::Bpf(mut b) if b.cmd == Cmd::ObjGetInfoByFd => {
                b.write_info(&info);
                Ok(Reply::Value(0))
            }
            other => panic!("unexpected {other:?}"),
        })
    }

    fn same() -> MapInfoRaw {
        MapInfoRaw {
            map_type: 2,
            key_size: 4,
            value_size: 8,
            max_entries: 4,
            ..MapInfoRaw::default()
        }
    }

    #[test]
    fn nothing_pinned_means_create() {
        let _f = kernel(Err(Errno::NOENT), same());
        assert!(reuse(&spec(), Path::new("/sys/fs/bpf/shared"))
            .unwrap()
            .is_none());
    }

    #[test]
    fn the_same_map_is_reused() {
        let _f = kernel(Ok(()), same());
        let (fd, max_entries) = reuse(&spec(), Path::new("/sys/fs/bpf/shared"))
            .unwrap()
            .unwrap();
        assert_eq!((max_entries, fd.key_size(), fd.value_size()), (4, 4, 8));
    }

    #[test]
    fn a_different_map_names_the_difference() {
        for (what, info) in [
            (
                "type",
                MapInfoRaw {
                    map_type: 1,
                    ..same()
                },
            ),
            (
                "value_size",
                MapInfoRaw {
                    value_size: 16,
                    ..same()
                },
            ),
            (
                "max_entries",
                MapInfoRaw {
                    max_entries: 8,
                    ..same()
                },
            ),
            (
                "map_flags",
                MapInfoRaw {
                    map_flags: 1,
                    ..same()
                },
            ),
        ] {
            let _f = kernel(Ok(()), info);
            let e = reuse(&spec(), Path::new("/sys/fs/bpf/shared")).unwrap_err();
            match &e {
                Error::Config(ConfigError::PinMismatch { what: w, .. }) => assert_eq!(*w, what),
                other => panic!("{other:?}"),
            }
            assert!(e.is_bad_input());
            assert!(e.to_string().contains("/sys/fs/bpf/shared"), "{e}");
        }
    }

    #[test]
    fn a_refused_path_is_a_runtime_error() {
        let _f = kernel(Err(Errno::PERM), same());
        let e = reuse(&spec(), Path::new("/tmp/shared")).unwrap_err();
        assert!(!e.is_bad_input());
        assert_eq!(
            e.to_string(),
            "map 'shared': bpf(BPF_OBJ_GET) of /tmp/shared: Operation not permitted (os error 1)"
        );
    }

    #[test]
    fn only_btf_maps_pinned_by_name_have_a_path() {
        let bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/bpf/pinned.o"
        ))
        .unwrap();
        let mut storage = sluice_core::object::ObjectStorage::new();
        let obj = sluice_core::Object::open(&bytes, &mut storage).unwrap();
        let paths: Vec<_> = obj
            .maps()
            .iter()
            .filter_map(|m| pin_path(m, Some(Path::new("/x"))))
            .collect();
        assert_eq!(paths, [PathBuf::from("/x/sluice_pinned")]);
        let sized = obj
            .maps()
            .iter()
            .find(|m| m.name == "sluice_pinned")
            .unwrap();
        assert_eq!(
            pin_path(sized, None),
            Some(PathBuf::from("/sys/fs/bpf/sluice_pinned"))
        );
    }
}
