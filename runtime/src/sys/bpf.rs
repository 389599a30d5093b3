//! Typed, safe wrappers around `bpf(2)`: map create/lookup/update/delete/next-key, program
//! load, object info, a program by id, BTF load.
//!
//! Every wrapper builds its `bpf_attr` from Rust slices it holds for the duration of the call,
//! and checks slice lengths against what the kernel will write before calling.

use super::{owned_fd, syscall, NR};
use rustix::io::Errno;
use sluice_core::perf::abi::{
    cmd, map_type, BtfInfoRaw, BtfLoadAttr, IdAttr, LinkCreateAttr, LinkCreateKprobeMultiAttr,
    MapCreateAttr, MapElemAttr, MapInfoRaw, ObjInfoAttr, ObjPinAttr, ProgInfoRaw, ProgLoadAttr,
    RawTracepointOpenAttr, BPF_OBJ_NAME_LEN,
};
use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::OnceLock;

mod sealed {
    /// `bpf_attr` shapes: `repr(C)` structs of plain integers, no padding bytes.
    pub trait Attr {}
    impl Attr for sluice_core::perf::abi::MapCreateAttr {}
    impl Attr for sluice_core::perf::abi::MapElemAttr {}
    impl Attr for sluice_core::perf::abi::ProgLoadAttr {}
    impl Attr for sluice_core::perf::abi::ObjInfoAttr {}
    impl Attr for sluice_core::perf::abi::BtfLoadAttr {}
    impl Attr for sluice_core::perf::abi::ObjPinAttr {}
    impl Attr for sluice_core::perf::abi::LinkCreateAttr {}
    impl Attr for sluice_core::perf::abi::LinkCreateUprobeMultiAttr {}
    impl Attr for sluice_core::perf::abi::LinkCreateKprobeMultiAttr {}
    impl Attr for sluice_core::perf::abi::RawTracepointOpenAttr {}
    impl Attr for sluice_core::perf::abi::IdAttr {}
}

/// Calls `bpf(cmd, attr, sizeof(*attr))`.
///
/// # Safety
/// Every address inside `attr` must be valid for what `cmd` does with it (man 2 bpf).
unsafe fn sys_bpf<A: sealed::Attr>(cmd: u32, attr: &mut A) -> Result<usize, Errno> {
    let size = core::mem::size_of::<A>();
    let ptr: *mut A = attr;
    // SAFETY: `attr` is a live, exclusive reference to a repr(C) bpf_attr image of `size`
    // bytes (kernel/bpf/syscall.c copies min(size, sizeof(union bpf_attr)) in and may write
    // output fields such as log_true_size back); addresses inside are the caller's contract.
    unsafe { syscall(NR.bpf, [cmd as usize, ptr as usize, size, 0, 0]) }
}

fn addr<T>(p: *const T) -> u64 {
    p as usize as u64
}

/// Number of possible CPUs ([`cpus::POSSIBLE`](crate::kernel::cpus::POSSIBLE)), what the kernel's
/// `num_possible_cpus()` counts and per-CPU map values are sized by. Read once.
///
/// # Errors
/// `ENOENT` when the file cannot be read, does not parse, or lists no CPU.
pub fn possible_cpus() -> Result<usize, Errno> {
    static CPUS: OnceLock<Option<usize>> = OnceLock::new();
    let n = CPUS.get_or_init(|| {
        crate::kernel::cpus::possible()
            .ok()
            .map(|cpus| cpus.len())
            .filter(|&n| n > 0)
    });
    n.ok_or(Errno::NOENT)
}

/// A map fd together with the sizes the kernel created it with, so element calls can check
/// their buffers before the kernel writes into them.
#[derive(Debug)]
pub struct MapFd {
    fd: OwnedFd,
    map_type: u32,
    key_size: u32,
    value_size: u32,
    value_bytes: usize,
}

/// Creates a map (`BPF_MAP_CREATE`).
///
/// # Errors
/// The kernel's errno (`EINVAL` for an unknown type or bad sizes, `EPERM` without
/// `CAP_BPF`, `E2BIG` when `attr` carries fields the kernel is too old to know), or `ENOENT`
/// when a per-CPU map is asked for and the possible-CPU count cannot be read.
#[doc(alias = "BPF_MAP_CREATE")]
pub fn map_create(attr: &MapCreateAttr) -> Result<MapFd, Errno> {
    let value_bytes = if map_type::is_per_cpu(attr.map_type) {
        let rounded = (attr.value_size as usize)
            .checked_next_multiple_of(8)
            .ok_or(Errno::INVAL)?;
        rounded.checked_mul(possible_cpus()?).ok_or(Errno::INVAL)?
    } else {
        attr.value_size as usize
    };
    let mut a = *attr;
    // SAFETY: MapCreateAttr holds no addresses (man 2 bpf, BPF_MAP_CREATE).
    let fd = owned_fd(unsafe { sys_bpf(cmd::MAP_CREATE, &mut a) }?)?;
    Ok(MapFd {
        fd,
        map_type: attr.map_type,
        key_size: attr.key_size,
        value_size: attr.value_size,
        value_bytes,
    })
}

impl MapFd {
    /// A second fd of the same map (`F_DUPFD_CLOEXEC`), for a reader on another thread.
    ///
    /// # Errors
    /// `EMFILE` when the process has no fd left.
    pub fn try_clone(&self) -> Result<MapFd, Errno> {
        let fd = rustix::io::fcntl_dupfd_cloexec(&self.fd, 0)?;
        Ok(MapFd {
            fd,
            map_type: self.map_type,
            key_size: self.key_size,
            value_size: self.value_size,
            value_bytes: self.value_bytes,
        })
    }

    /// The map's type.
    #[must_use]
    pub fn map_type(&self) -> u32 {
        self.map_type
    }
    /// Key size in bytes.
    #[must_use]
    pub fn key_size(&self) -> u32 {
        self.key_size
    }
    /// Value size in bytes as declared (one CPU's share for per-CPU maps).
    #[must_use]
    pub fn value_size(&self) -> u32 {
        self.value_size
    }
    /// Bytes a lookup writes: `value_size`, or for per-CPU maps `value_size` rounded up
    /// to 8 times the number of possible CPUs.
    #[must_use]
    pub fn value_bytes(&self) -> usize {
        self.value_bytes
    }

    fn check(&self, key: Option<&[u8]>, value: Option<usize>) -> Result<(), Errno> {
        if key.is_some_and(|k| k.len() != self.key_size as usize) {
            return Err(Errno::INVAL);
        }
        if value.is_some_and(|v| v < self.value_bytes) {
            return Err(Errno::INVAL);
        }
        Ok(())
    }

    fn elem(&self, cmd: u32, key: Option<&[u8]>, value: u64, flags: u64) -> Result<(), Errno> {
        let mut a = MapElemAttr {
            map_fd: self.fd.as_raw_fd() as u32,
            key: key.map_or(0, |k| addr(k.as_ptr())),
            value,
            flags,
            ..MapElemAttr::default()
        };
        // SAFETY: the key address is a live slice of exactly key_size bytes (checked by the
        // caller through `check`), `value` a live buffer of at least value_bytes bytes,
        // which is what kernel/bpf/syscall.c (map_lookup_elem, bpf_map_value_size) copies.
        unsafe { sys_bpf(cmd, &mut a) }.map(drop)
    }

    /// Looks `key` up and copies the value into `value` (`BPF_MAP_LOOKUP_ELEM`).
    ///
    /// # Errors
    /// `EINVAL` if `key` is not `key_size` bytes or `value` is shorter than
    /// [`value_bytes`](Self::value_bytes); `ENOENT` if the key is absent; the kernel's errno.
    #[doc(alias = "BPF_MAP_LOOKUP_ELEM")]
    pub fn lookup(&self, key: &[u8], value: &mut [u8]) -> Result<(), Errno> {
        self.check(Some(key), Some(value.len()))?;
        self.elem(cmd::MAP_LOOKUP_ELEM, Some(key), addr(value.as_mut_ptr()), 0)
    }

    /// Sets `key` to `value` (`BPF_MAP_UPDATE_ELEM`); `flags` is `BPF_ANY`, `BPF_NOEXIST`
    /// or `BPF_EXIST`.
    ///
    /// # Errors
    /// As [`lookup`](Self::lookup); `EEXIST`/`ENOENT` per `flags`; `E2BIG` when full.
    #[doc(alias = "BPF_MAP_UPDATE_ELEM")]
    pub fn update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<(), Errno> {
        self.check(Some(key), Some(value.len()))?;
        self.elem(cmd::MAP_UPDATE_ELEM, Some(key), addr(value.as_ptr()), flags)
    }

    /// Deletes `key` (`BPF_MAP_DELETE_ELEM`).
    ///
    /// # Errors
    /// `ENOENT` if absent; `EINVAL` on arrays (elements cannot be deleted); the kernel's errno.
    #[doc(alias = "BPF_MAP_DELETE_ELEM")]
    pub fn delete(&self, key: &[u8]) -> Result<(), Errno> {
        self.check(Some(key), None)?;
        self.elem(cmd::MAP_DELETE_ELEM, Some(key), 0, 0)
    }

    /// Writes the key after `key` (the first key when `None`) into `next`
    /// (`BPF_MAP_GET_NEXT_KEY`).
    ///
    /// # Errors
    /// `ENOENT` past the last key; `EINVAL` on wrong buffer sizes; the kernel's errno.
    #[doc(alias = "BPF_MAP_GET_NEXT_KEY")]
    pub fn next_key(&self, key: Option<&[u8]>, next: &mut [u8]) -> Result<(), Errno> {
        self.check(key, None)?;
        if next.len() != self.key_size as usize {
            return Err(Errno::INVAL);
        }
        self.elem(cmd::MAP_GET_NEXT_KEY, key, addr(next.as_mut_ptr()), 0)
    }
}

impl AsFd for MapFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// What `BPF_PROG_LOAD` needs besides the log.
#[derive(Clone, Copy, Debug)]
pub struct ProgLoad<'a> {
    /// `enum bpf_prog_type`.
    pub prog_type: u32,
    /// Instructions, each in native byte order (`Insn::to_native_bytes`).
    pub insns: &'a [[u8; 8]],
    /// Licence string (GPL-only helpers need a GPL-compatible one).
    pub license: &'a CStr,
    /// `KERNEL_VERSION(a, b, c)` for kernels that check it (kprobes before 5.0).
    pub kern_version: u32,
    /// Program name as the kernel stores it ([`sluice_core::perf::abi::object_name`]).
    pub name: [u8; BPF_OBJ_NAME_LEN],
    /// `BPF_F_*` load flags.
    pub prog_flags: u32,
    /// `enum bpf_attach_type`, for the types that need it at load time.
    pub expected_attach_type: u32,
    /// The kernel BTF type a tracing or LSM program attaches to (0: none).
    pub attach_btf_id: u32,
    /// The module BTF that [`attach_btf_id`](Self::attach_btf_id) is in (`None`: vmlinux).
    pub attach_btf_obj: Option<BorrowedFd<'a>>,
    /// The program's BTF with its `bpf_func_info` / `bpf_line_info` records (instruction
    /// indices of the linked program), so verifier messages name source lines.
    pub btf: Option<ProgBtf<'a>>,
}

/// BTF of a program: the object's BTF fd and the records placing its functions and lines.
#[derive(Clone, Copy, Debug)]
pub struct ProgBtf<'a> {
    /// Fd of the object's BTF (`BPF_BTF_LOAD`).
    pub fd: BorrowedFd<'a>,
    /// `struct bpf_func_info { insn_off, type_id }`, sorted by instruction.
    pub func_info: &'a [[u32; 2]],
    /// `struct bpf_line_info { insn_off, file_name_off, line_off, line_col }`, sorted.
    pub line_info: &'a [[u32; 4]],
}

/// A verifier log request: the buffer and the level (1, 2, or with 4 for stats).
#[derive(Debug)]
pub struct LogRequest<'b> {
    /// Buffer the verifier writes its NUL-terminated log into.
    pub buf: &'b mut [u8],
    /// `log_level`.
    pub level: u32,
}

/// Loads a program (`BPF_PROG_LOAD`). Returns the result and `log_true_size`, which
/// kernels ≥ 6.4 fill with the log size the verifier needed (0 otherwise or without a log).
///
/// # Errors
/// The kernel's errno: `EACCES`/`EINVAL` when the verifier refuses (details in the log),
/// `ENOSPC` when the log buffer is too small, `EPERM` without capability, `E2BIG` when
/// the program is too large, `EINVAL` if there are no instructions or more than
/// `u32::MAX`, or a log buffer over `u32::MAX` bytes.
#[doc(alias = "BPF_PROG_LOAD")]
pub fn prog_load(req: &ProgLoad<'_>, log: Option<LogRequest<'_>>) -> (Result<OwnedFd, Errno>, u32) {
    let Ok(insn_cnt) = u32::try_from(req.insns.len()) else {
        return (Err(Errno::INVAL), 0);
    };
    let (log_buf, log_size, log_level) = match log {
        Some(LogRequest { buf, level }) => match u32::try_from(buf.len()) {
            Ok(n) => {
                if let Some(b) = buf.first_mut() {
                    *b = 0;
                }
                (addr(buf.as_mut_ptr()), n, level)
            }
            Err(_) => return (Err(Errno::INVAL), 0),
        },
        None => (0, 0, 0),
    };
    let (btf_fd, func_info, func_info_cnt, line_info, line_info_cnt) = match req.btf {
        Some(b) => match (
            u32::try_from(b.func_info.len()),
            u32::try_from(b.line_info.len()),
        ) {
            (Ok(f), Ok(l)) => (
                b.fd.as_raw_fd() as u32,
                if f == 0 {
                    0
                } else {
                    addr(b.func_info.as_ptr())
                },
                f,
                if l == 0 {
                    0
                } else {
                    addr(b.line_info.as_ptr())
                },
                l,
            ),
            _ => return (Err(Errno::INVAL), 0),
        },
        None => (0, 0, 0, 0, 0),
    };
    let mut a = ProgLoadAttr {
        prog_btf_fd: btf_fd,
        func_info_rec_size: if func_info_cnt == 0 { 0 } else { 8 },
        func_info,
        func_info_cnt,
        line_info_rec_size: if line_info_cnt == 0 { 0 } else { 16 },
        line_info,
        line_info_cnt,
        prog_type: req.prog_type,
        insn_cnt,
        insns: addr(req.insns.as_ptr()),
        license: addr(req.license.as_ptr()),
        log_level,
        log_size,
        log_buf,
        kern_version: req.kern_version,
        prog_flags: req.prog_flags,
        prog_name: req.name,
        expected_attach_type: req.expected_attach_type,
        attach_btf_id: req.attach_btf_id,
        attach_prog_fd: req.attach_btf_obj.map_or(0, |fd| fd.as_raw_fd() as u32),
        ..ProgLoadAttr::default()
    };
    // SAFETY: insns points at insn_cnt live 8-byte instructions, license at a live
    // NUL-terminated string, log_buf (if any) at a live exclusive buffer of log_size bytes,
    // func_info / line_info (if any) at func_info_cnt records of 8 bytes / line_info_cnt
    // records of 16 bytes borrowed for the call; the kernel reads/writes only those
    // (kernel/bpf/syscall.c bpf_prog_load, kernel/bpf/verifier.c check_btf_info,
    // kernel/bpf/log.c bpf_vlog_init). No other address field is set.
    let r = unsafe { sys_bpf(cmd::PROG_LOAD, &mut a) }.and_then(owned_fd);
    (r, a.log_true_size)
}

/// Reads a program's `bpf_prog_info` (`BPF_OBJ_GET_INFO_BY_FD`, Linux 4.13).
///
/// Only the fixed fields are filled: every address field is left zero, so the kernel
/// copies no arrays.
///
/// # Errors
/// `EINVAL` if `fd` is not a BPF program (or the kernel is older than 4.13); the kernel's errno.
#[doc(alias = "BPF_OBJ_GET_INFO_BY_FD")]
pub fn prog_info(fd: BorrowedFd<'_>) -> Result<ProgInfoRaw, Errno> {
    let mut info = ProgInfoRaw::default();
    let mut a = ObjInfoAttr {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: core::mem::size_of::<ProgInfoRaw>() as u32,
        info: addr(&raw mut info),
    };
    // SAFETY: `info` is a live, exclusive, zeroed bpf_prog_info of info_len bytes; with all
    // its address fields zero the kernel writes only into it (kernel/bpf/syscall.c
    // bpf_prog_get_info_by_fd copies at most info_len bytes out).
    unsafe { sys_bpf(cmd::OBJ_GET_INFO_BY_FD, &mut a) }?;
    Ok(info)
}

/// An fd of the loaded program whose kernel-wide id is `id` (`BPF_PROG_GET_FD_BY_ID`,
/// Linux 4.13): how a program another process attached can be asked its name
/// ([`prog_info`]).
///
/// # Errors
/// `ENOENT` when no program has that id (any more), `EPERM` without `CAP_SYS_ADMIN`, the
/// kernel's errno.
#[doc(alias = "BPF_PROG_GET_FD_BY_ID")]
pub fn prog_get_fd_by_id(id: u32) -> Result<OwnedFd, Errno> {
    let mut a = IdAttr {
        id,
        ..IdAttr::default()
    };
    // SAFETY: the attr holds integers only (no address); the kernel reads it and answers
    // with a new fd (kernel/bpf/syscall.c bpf_prog_get_fd_by_id).
    unsafe { sys_bpf(cmd::PROG_GET_FD_BY_ID, &mut a) }.and_then(owned_fd)
}

/// Freezes a map (`BPF_MAP_FREEZE`, Linux 5.2): user space can no longer write it, and
/// the verifier treats a read-only-for-programs map's contents as constants.
///
/// # Errors
/// The kernel's errno (`EBUSY` when the map is mmapped writable, `EINVAL` before 5.2).
#[doc(alias = "BPF_MAP_FREEZE")]
pub fn map_freeze(fd: BorrowedFd<'_>) -> Result<(), Errno> {
    let mut a = MapElemAttr {
        map_fd: fd.as_raw_fd() as u32,
        ..MapElemAttr::default()
    };
    // SAFETY: MAP_FREEZE reads only map_fd (kernel/bpf/syscall.c map_freeze); no addresses.
    unsafe { sys_bpf(cmd::MAP_FREEZE, &mut a) }.map(drop)
}

/// Loads raw BTF (`BPF_BTF_LOAD`, Linux 4.18); returns the result and `btf_log_true_size`.
///
/// # Errors
/// The kernel's errno (`EINVAL` with details in the log for malformed BTF).
#[doc(alias = "BPF_BTF_LOAD")]
pub fn btf_load(btf: &[u8], log: Option<LogRequest<'_>>) -> (Result<OwnedFd, Errno>, u32) {
    let Ok(btf_size) = u32::try_from(btf.len()) else {
        return (Err(Errno::INVAL), 0);
    };
    let (log_buf, log_size, log_level) = match log {
        Some(LogRequest { buf, level }) => match u32::try_from(buf.len()) {
            Ok(n) => (addr(buf.as_mut_ptr()), n, level),
            Err(_) => return (Err(Errno::INVAL), 0),
        },
        None => (0, 0, 0),
    };
    let mut a = BtfLoadAttr {
        btf: addr(btf.as_ptr()),
        btf_log_buf: log_buf,
        btf_size,
        btf_log_size: log_size,
        btf_log_level: log_level,
        btf_log_true_size: 0,
    };
    // SAFETY: btf points at btf_size live bytes, btf_log_buf (if any) at a live exclusive
    // buffer of btf_log_size bytes (kernel/bpf/btf.c btf_parse).
    let r = unsafe { sys_bpf(cmd::BTF_LOAD, &mut a) }.and_then(owned_fd);
    (r, a.btf_log_true_size)
}

/// Pins `fd` (a map or program) at `path` in the BPF file system (`BPF_OBJ_PIN`, Linux 4.4).
///
/// # Errors
/// The kernel's errno (`EEXIST` when the path exists, `ENOENT` for a missing folder,
/// `EPERM` outside a BPF file system).
#[doc(alias = "BPF_OBJ_PIN")]
pub fn obj_pin(fd: BorrowedFd<'_>, path: &CStr) -> Result<(), Errno> {
    let mut a = ObjPinAttr {
        pathname: addr(path.as_ptr()),
        bpf_fd: fd.as_raw_fd() as u32,
        file_flags: 0,
    };
    // SAFETY: pathname points at a live NUL-terminated string the kernel only reads
    // (kernel/bpf/inode.c bpf_obj_pin_user); no other address.
    unsafe { sys_bpf(cmd::OBJ_PIN, &mut a) }.map(drop)
}

/// Opens the map pinned at `path` (`BPF_OBJ_GET`, Linux 4.4) with the sizes the kernel
/// reports for it (`BPF_OBJ_GET_INFO_BY_FD`), so element calls are checked as for a map
/// created here. Returns the map and its info.
///
/// # Errors
/// The kernel's errno (`ENOENT`: nothing pinned there; `EINVAL`: a pinned program).
#[doc(alias = "BPF_OBJ_GET")]
pub fn obj_get_map(path: &CStr) -> Result<(MapFd, MapInfoRaw), Errno> {
    let mut a = ObjPinAttr {
        pathname: addr(path.as_ptr()),
        bpf_fd: 0,
        file_flags: 0,
    };
    // SAFETY: as in obj_pin: a live NUL-terminated path, read only
    // (kernel/bpf/inode.c bpf_obj_get_user).
    let fd = owned_fd(unsafe { sys_bpf(cmd::OBJ_GET, &mut a) }?)?;
    let info = map_info(fd.as_fd())?;
    let value_bytes = if map_type::is_per_cpu(info.map_type) {
        let rounded = (info.value_size as usize)
            .checked_next_multiple_of(8)
            .ok_or(Errno::INVAL)?;
        rounded.checked_mul(possible_cpus()?).ok_or(Errno::INVAL)?
    } else {
        info.value_size as usize
    };
    let map = MapFd {
        fd,
        map_type: info.map_type,
        key_size: info.key_size,
        value_size: info.value_size,
        value_bytes,
    };
    Ok((map, info))
}

/// Reads a map's `bpf_map_info` head (`BPF_OBJ_GET_INFO_BY_FD`, Linux 4.13).
///
/// # Errors
/// The kernel's errno (`EINVAL` when `fd` is no map).
pub fn map_info(fd: BorrowedFd<'_>) -> Result<MapInfoRaw, Errno> {
    let mut info = MapInfoRaw::default();
    let mut a = ObjInfoAttr {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: core::mem::size_of::<MapInfoRaw>() as u32,
        info: addr(&raw mut info),
    };
    // SAFETY: `info` is a live, exclusive, zeroed bpf_map_info head of info_len bytes; the
    // kernel copies at most info_len bytes into it (kernel/bpf/syscall.c
    // bpf_map_get_info_by_fd) and reads no address of it.
    unsafe { sys_bpf(cmd::OBJ_GET_INFO_BY_FD, &mut a) }?;
    Ok(info)
}

/// Attaches program `prog` (`BPF_LINK_CREATE`, Linux 5.7): a tracing or LSM program to its
/// `attach_btf_id` (`target` `None`), or a kprobe/uprobe program to perf event `target`
/// (`BPF_PERF_EVENT`, Linux 5.15). The link lasts as long as the returned fd.
///
/// # Errors
/// The kernel's errno: `EINVAL` for an attach type it does not know for this program,
/// `ENOTSUPP` (524) or `EPERM` when it cannot make a trampoline, `EBUSY`, `EEXIST`.
#[doc(alias = "BPF_LINK_CREATE")]
pub fn link_create(
    prog: BorrowedFd<'_>,
    target: Option<BorrowedFd<'_>>,
    attach_type: u32,
) -> Result<OwnedFd, Errno> {
    let mut a = LinkCreateAttr {
        prog_fd: prog.as_raw_fd() as u32,
        target_fd: target.map_or(0, |t| t.as_raw_fd() as u32),
        attach_type,
        ..LinkCreateAttr::default()
    };
    // SAFETY: LinkCreateAttr as filled holds no addresses (kernel/bpf/syscall.c
    // link_create reads fds and integers only for these attach types).
    unsafe { sys_bpf(cmd::LINK_CREATE, &mut a) }.and_then(owned_fd)
}

/// Attaches kprobe/uprobe program `prog` to perf event `event` with BPF cookie `cookie`
/// (`BPF_LINK_CREATE`/`BPF_PERF_EVENT`, `perf_event.bpf_cookie`: Linux 5.15), what the
/// program's `bpf_get_attach_cookie()` answers.
///
/// # Errors
/// As [`link_create`].
#[doc(alias = "BPF_LINK_CREATE")]
pub fn link_create_perf_cookie(
    prog: BorrowedFd<'_>,
    event: BorrowedFd<'_>,
    attach_type: u32,
    cookie: u64,
) -> Result<OwnedFd, Errno> {
    // `perf_event.bpf_cookie` is the u64 at offset 16 of the union: the bytes of
    // `target_btf_id` and the padding after it.
    let c = cookie.to_ne_bytes();
    let (lo, hi) = c.split_at(4);
    let word = |b: &[u8]| b.try_into().map_or(0, u32::from_ne_bytes);
    let mut a = LinkCreateAttr {
        prog_fd: prog.as_raw_fd() as u32,
        target_fd: event.as_raw_fd() as u32,
        attach_type,
        target_btf_id: word(lo),
        pad0: word(hi),
        ..LinkCreateAttr::default()
    };
    // SAFETY: LinkCreateAttr as filled holds no addresses (link_create reads two fds and
    // integers for BPF_PERF_EVENT).
    unsafe { sys_bpf(cmd::LINK_CREATE, &mut a) }.and_then(owned_fd)
}

/// Attaches uprobe program `prog` to the `offsets` (file offsets) of the binary at `path`
/// in one `uprobe_multi` link (`BPF_LINK_CREATE`/`BPF_TRACE_UPROBE_MULTI`, Linux 6.6): on
/// the functions' returns with `ret`, only in process `pid` when given. No semaphores, no
/// cookies (what libbpf passes for a section's `PATH:PATTERN`).
///
/// # Errors
/// The kernel's errno: `EINVAL` for a kernel without the attach type or a program not
/// loaded for it, `ENOENT`/`EBADF` for the path, `ESRCH` for the pid.
#[doc(alias = "BPF_LINK_CREATE")]
pub fn link_create_uprobe_multi(
    prog: BorrowedFd<'_>,
    path: &CStr,
    offsets: &[u64],
    ret: bool,
    pid: Option<u32>,
) -> Result<OwnedFd, Errno> {
    use sluice_core::perf::abi::{LinkCreateUprobeMultiAttr, BPF_F_UPROBE_MULTI_RETURN};
    let mut a = LinkCreateUprobeMultiAttr {
        prog_fd: prog.as_raw_fd() as u32,
        attach_type: sluice_core::probe::attach_types::TRACE_UPROBE_MULTI,
        path: addr(path.as_ptr()),
        offsets: addr(offsets.as_ptr()),
        cnt: u32::try_from(offsets.len()).map_err(|_| Errno::INVAL)?,
        multi_flags: if ret { BPF_F_UPROBE_MULTI_RETURN } else { 0 },
        pid: pid.unwrap_or(0),
        ..LinkCreateUprobeMultiAttr::default()
    };
    // SAFETY: path is a live NUL-terminated string and offsets `cnt` live u64s, both
    // borrowed for the call, which the kernel only reads (kernel/trace/bpf_trace.c
    // bpf_uprobe_multi_link_attach: strndup_user, copy_from_user); no ref_ctr_offsets and
    // no cookies (0).
    unsafe { sys_bpf(cmd::LINK_CREATE, &mut a) }.and_then(owned_fd)
}

/// Attaches kprobe.multi program `prog` to every function of `syms` at once, each with its
/// BPF cookie from `cookies` (`BPF_LINK_CREATE`/`BPF_TRACE_KPROBE_MULTI`, Linux 5.18, needs
/// `CONFIG_FPROBE`); with `ret`, on their returns (`BPF_F_KPROBE_MULTI_RETURN`).
///
/// # Errors
/// `EINVAL` when `cookies` is not as long as `syms` (not called) or the kernel refuses
/// (`EOPNOTSUPP`: no `CONFIG_FPROBE`; `ESRCH`/`ENOENT`: a function it cannot find or trace).
#[doc(alias = "BPF_LINK_CREATE")]
pub fn link_create_kprobe_multi(
    prog: BorrowedFd<'_>,
    syms: &[&CStr],
    cookies: &[u64],
    ret: bool,
) -> Result<OwnedFd, Errno> {
    let cnt = u32::try_from(syms.len()).map_err(|_| Errno::TOOBIG)?;
    if cookies.len() != syms.len() {
        return Err(Errno::INVAL);
    }
    let ptrs: Vec<u64> = syms.iter().map(|s| addr(s.as_ptr())).collect();
    let mut a = LinkCreateKprobeMultiAttr {
        prog_fd: prog.as_raw_fd() as u32,
        attach_type: sluice_core::probe::attach_types::TRACE_KPROBE_MULTI,
        multi_flags: if ret {
            sluice_core::perf::abi::BPF_F_KPROBE_MULTI_RETURN
        } else {
            0
        },
        cnt,
        syms: addr(ptrs.as_ptr()),
        cookies: addr(cookies.as_ptr()),
        ..LinkCreateKprobeMultiAttr::default()
    };
    // SAFETY: syms points at `cnt` addresses of live NUL-terminated strings (`syms`,
    // borrowed for the call), cookies at `cnt` u64s; the kernel only reads them
    // (kernel/trace/bpf_trace.c bpf_kprobe_multi_link_attach copies both in).
    unsafe { sys_bpf(cmd::LINK_CREATE, &mut a) }.and_then(owned_fd)
}

/// Attaches program `prog` to raw tracepoint `name` (`BPF_RAW_TRACEPOINT_OPEN`, Linux
/// 4.17), or, with `name` `None`, a `tp_btf`/`fentry`/`fexit`/`lsm` program to its
/// `attach_btf_id` (Linux 5.5). The attachment lasts as long as the returned fd.
///
/// # Errors
/// The kernel's errno: `ENOENT` for an unknown tracepoint, `EINVAL` for a program of the
/// wrong type.
#[doc(alias = "BPF_RAW_TRACEPOINT_OPEN")]
pub fn raw_tracepoint_open(name: Option<&CStr>, prog: BorrowedFd<'_>) -> Result<OwnedFd, Errno> {
    let mut a = RawTracepointOpenAttr {
        name: name.map_or(0, |n| addr(n.as_ptr())),
        prog_fd: prog.as_raw_fd() as u32,
        pad0: 0,
    };
    // SAFETY: name is 0 or a live NUL-terminated string borrowed for the call, which
    // the kernel only reads (kernel/bpf/syscall.c bpf_raw_tracepoint_open,
    // strncpy_from_user).
    unsafe { sys_bpf(cmd::RAW_TRACEPOINT_OPEN, &mut a) }.and_then(owned_fd)
}

/// The id of the first BTF object after `start` (`BPF_BTF_GET_NEXT_ID`, Linux 5.4): the
/// kernel's and each module's BTF have one.
///
/// # Errors
/// `ENOENT` after the last; `EPERM` without `CAP_SYS_ADMIN`.
#[doc(alias = "BPF_BTF_GET_NEXT_ID")]
pub fn btf_next_id(start: u32) -> Result<u32, Errno> {
    let mut a = IdAttr {
        id: start,
        ..IdAttr::default()
    };
    // SAFETY: IdAttr holds no addresses; the kernel writes next_id into it
    // (kernel/bpf/syscall.c bpf_obj_get_next_id).
    unsafe { sys_bpf(cmd::BTF_GET_NEXT_ID, &mut a) }?;
    Ok(a.next_id)
}

/// An fd of BTF object `id` (`BPF_BTF_GET_FD_BY_ID`, Linux 4.18).
///
/// # Errors
/// `ENOENT` for an id that is gone; `EPERM` without `CAP_SYS_ADMIN`.
#[doc(alias = "BPF_BTF_GET_FD_BY_ID")]
pub fn btf_fd_by_id(id: u32) -> Result<OwnedFd, Errno> {
    let mut a = IdAttr {
        id,
        ..IdAttr::default()
    };
    // SAFETY: IdAttr holds no addresses (kernel/bpf/syscall.c bpf_btf_get_fd_by_id).
    unsafe { sys_bpf(cmd::BTF_GET_FD_BY_ID, &mut a) }.and_then(owned_fd)
}

/// The name of BTF object `fd` (`vmlinux`, or a module's name) and its id
/// (`BPF_OBJ_GET_INFO_BY_FD` on a BTF fd, Linux 5.11 for the name).
///
/// # Errors
/// The kernel's errno.
pub fn btf_name(fd: BorrowedFd<'_>) -> Result<(u32, String), Errno> {
    let mut name = [0u8; 64];
    let mut info = BtfInfoRaw {
        name: addr(name.as_mut_ptr()),
        name_len: name.len() as u32,
        ..BtfInfoRaw::default()
    };
    let mut a = ObjInfoAttr {
        bpf_fd: fd.as_raw_fd() as u32,
        info_len: core::mem::size_of::<BtfInfoRaw>() as u32,
        info: addr(&raw mut info),
    };
    // SAFETY: `info` is a live, exclusive bpf_btf_info of info_len bytes whose only
    // address, `name`, points at a live exclusive buffer of name_len bytes; the btf
    // address is 0, so the kernel copies no BTF (kernel/bpf/btf.c btf_get_info_by_fd).
    unsafe { sys_bpf(cmd::OBJ_GET_INFO_BY_FD, &mut a) }?;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let text = String::from_utf8_lossy(name.get(..end).unwrap_or_default()).into_owned();
    Ok((info.id, text))
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
    use crate::sys::fake::{self, Call, Cmd, Reply};
    use sluice_core::probe::attach_types;

    #[test]
    fn link_create_fills_the_attr() {
        let f = fake::install(|call| match call {
            Call::Bpf(b) if b.cmd == Cmd::LinkCreate => {
                let a = b.link_create().unwrap();
                assert_eq!(a.attach_type, attach_types::TRACE_FENTRY);
                assert_eq!(
                    (a.target_fd, a.flags, a.target_btf_id, a.cookie),
                    (0, 0, 0, 0)
                );
                Ok(fake::fd())
            }
            _ => Err(Errno::NOSYS),
        });
        let prog = std::fs::File::open("/dev/null").unwrap();
        link_create(prog.as_fd(), None, attach_types::TRACE_FENTRY).unwrap();
        assert_eq!(f.count(), 1);
    }

    #[test]
    fn uprobe_multi_link_fills_its_union_member() {
        use sluice_core::perf::abi::LinkCreateUprobeMultiAttr;
        let path = c"/bin/true";
        let offsets = [0x1040u64, 0x1100, 0x1230];
        let want = (
            addr(path.as_ptr()),
            addr(offsets.as_ptr()),
            (0u64, 0u64),
            (3u32, 1u32, 42u32),
        );
        let f = fake::install(move |call| match call {
            Call::Bpf(b) if b.cmd == Cmd::LinkCreate => {
                assert_eq!(b.attr_bytes().len(), 64);
                let a: LinkCreateUprobeMultiAttr = b.attr().unwrap();
                assert_eq!(
                    (a.attach_type, a.target_fd, a.flags),
                    (attach_types::TRACE_UPROBE_MULTI, 0, 0)
                );
                assert_eq!(
                    (
                        a.path,
                        a.offsets,
                        (a.ref_ctr_offsets, a.cookies),
                        (a.cnt, a.multi_flags, a.pid)
                    ),
                    want
                );
                Ok(fake::fd())
            }
            _ => Err(Errno::NOSYS),
        });
        let prog = std::fs::File::open("/dev/null").unwrap();
        link_create_uprobe_multi(prog.as_fd(), path, &offsets, true, Some(42)).unwrap();
        assert_eq!(f.count(), 1);
    }

    #[test]
    fn kprobe_multi_passes_names_cookies_and_the_return_flag() {
        use sluice_core::perf::abi::{LinkCreateKprobeMultiAttr, BPF_F_KPROBE_MULTI_RETURN};
        let _f = fake::install(|call| match call {
            Call::Bpf(b) if b.cmd == Cmd::LinkCreate => {
                let a: LinkCreateKprobeMultiAttr = b.attr().unwrap();
                assert_eq!(a.attach_type, attach_types::TRACE_KPROBE_MULTI);
                assert_eq!((a.flags, a.addrs, a.cnt), (0, 0, 2));
                let n = a.cnt as usize;
                // SAFETY: the wrapper passes cnt name addresses and cnt cookies, live for
                // the call.
                let (syms, cookies) = unsafe {
                    (
                        core::slice::from_raw_parts(
                            core::ptr::with_exposed_provenance::<u64>(a.syms as usize),
                            n,
                        ),
                        core::slice::from_raw_parts(
                            core::ptr::with_exposed_provenance::<u64>(a.cookies as usize),
                            n,
                        ),
                    )
                };
                // SAFETY: each is a live NUL-terminated string.
                let names: Vec<&str> = syms
                    .iter()
                    .map(|&p| unsafe {
                        CStr::from_ptr(core::ptr::with_exposed_provenance::<core::ffi::c_char>(
                            p as usize,
                        ))
                    })
                    .map(|c| c.to_str().unwrap())
                    .collect();
                assert_eq!(names, ["do_getpgid", "security_task_getpgid"]);
                assert_eq!(cookies, [1, 2]);
                if a.multi_flags == BPF_F_KPROBE_MULTI_RETURN {
                    Ok(fake::fd())
                } else {
                    Err(Errno::OPNOTSUPP)
                }
            }
            _ => Err(Errno::NOSYS),
        });
        let prog = std::fs::File::open("/dev/null").unwrap();
        let syms = [c"do_getpgid", c"security_task_getpgid"];
        link_create_kprobe_multi(prog.as_fd(), &syms, &[1, 2], true).unwrap();
        assert_eq!(
            link_create_kprobe_multi(prog.as_fd(), &syms, &[1, 2], false).unwrap_err(),
            Errno::OPNOTSUPP
        );
        assert_eq!(
            link_create_kprobe_multi(prog.as_fd(), &syms, &[1], true).unwrap_err(),
            Errno::INVAL
        );
    }

    #[test]
    fn raw_tracepoint_open_passes_the_name() {
        let _f = fake::install(|call| match call {
            Call::Bpf(b) if b.cmd == Cmd::RawTracepointOpen => {
                let a = b.raw_tracepoint_open().unwrap();
                if a.name == 0 {
                    return Err(Errno::INVAL);
                }
                // SAFETY: the wrapper passes a live NUL-terminated string for the call.
                let name = unsafe {
                    CStr::from_ptr(core::ptr::with_exposed_provenance::<core::ffi::c_char>(
                        a.name as usize,
                    ))
                };
                assert_eq!(name.to_str().unwrap(), "sched_switch");
                Ok(fake::fd())
            }
            _ => Err(Errno::NOSYS),
        });
        let prog = std::fs::File::open("/dev/null").unwrap();
        raw_tracepoint_open(Some(c"sched_switch"), prog.as_fd()).unwrap();
        assert_eq!(
            raw_tracepoint_open(None, prog.as_fd()).unwrap_err(),
            Errno::INVAL
        );
    }

    #[test]
    fn btf_ids_and_fds() {
        let _f = fake::install(|call| match call {
            Call::Bpf(mut b) => match b.cmd {
                Cmd::Other(cmd::BTF_GET_NEXT_ID) => {
                    let a: IdAttr = b.attr().unwrap();
                    if a.id >= 3 {
                        return Err(Errno::NOENT);
                    }
                    b.put_next_id(a.id + 1);
                    Ok(Reply::Value(0))
                }
                Cmd::Other(cmd::BTF_GET_FD_BY_ID) => Ok(fake::fd()),
                _ => Err(Errno::NOSYS),
            },
            _ => Err(Errno::NOSYS),
        });
        assert_eq!(btf_next_id(0), Ok(1));
        assert_eq!(btf_next_id(2), Ok(3));
        assert_eq!(btf_next_id(3), Err(Errno::NOENT));
        assert!(btf_fd_by_id(2).is_ok());
    }

    #[test]
    fn possible_cpus_reads_sysfs() {
        let n = possible_cpus().unwrap();
        assert!(n >= 1);
        assert!(
            n >= std::thread::available_parallelism()
                .map_or(1, |p| p.get())
                .min(n)
        );
    }
}
