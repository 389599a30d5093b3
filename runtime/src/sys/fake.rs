//! A syscall fake for unit tests (`cfg(test)` only): loader and attach logic run against
//! scripted kernel answers, without a kernel (in the spirit of aya's `sys/fake.rs`).
//!
//! [`install`] puts a handler on the current thread. Until the returned [`Fake`] drops,
//! every `bpf(2)` and `perf_event_open(2)` that reaches the funnel ([`super::syscall`]) and
//! every perf event ioctl of [`perf_event`](super::perf_event) (enable, disable, set-bpf,
//! set-output, id) on this thread is answered by the handler instead of the kernel; other
//! threads (the other tests running in parallel) still reach the kernel. Code under test
//! that makes its calls on a thread of its own is not faked.
//!
//! [`set_kernel_release`] likewise makes this thread see another kernel release than
//! `uname(2)`'s, so the errnos that mean "too old" on an old kernel (an `EINVAL` for a
//! program or map type the kernel predates) are tested on any host.
//!
//! The handler gets a typed view of each call ([`Call`]): the decoded `bpf` command with
//! its attr, the `perf_event_open` arguments, or the ioctl. It may read the attr
//! ([`Bpf::prog_load`], [`PerfEventOpen::cpu`] ...) and write what the kernel would write
//! into the caller's buffers ([`Bpf::write_log`] fills the verifier log and
//! `log_true_size`, [`Bpf::write_info`] the struct of `BPF_OBJ_GET_INFO_BY_FD`). It answers
//! with an errno or a [`Reply`]:
//!
//! ```ignore
//! let fake = fake::install(|call| match call {
//!     Call::Bpf(b) if b.cmd == Cmd::ProgLoad => Err(Errno::PERM),
//!     Call::PerfEventOpen(o) if o.cpu == 1 => Err(Errno::EXIST),
//!     Call::PerfEventOpen(_) => Ok(fake::fd()),
//!     _ => Ok(Reply::Value(0)),
//! });
//! // ... call the code under test ...
//! assert_eq!(fake.count(), 3);
//! ```
//!
//! A call that returns an fd (`BPF_MAP_CREATE`, `BPF_PROG_LOAD`, `BPF_BTF_LOAD`,
//! `BPF_LINK_CREATE`, `BPF_RAW_TRACEPOINT_OPEN`, the `*_GET_FD_BY_ID` commands,
//! `perf_event_open`) must be answered with [`Reply::Fd`], a real fd the test gives away
//! ([`fd`], or [`watched_fd`] to see later whether the code closed it): the caller wraps
//! it in an `OwnedFd` and closes it. Answering such a call with a value, or another call
//! with an fd, panics, as does a syscall made from inside the handler.
//!
//! # Safety
//! The views are built from the raw arguments the typed wrappers of [`bpf`](super::bpf)
//! and [`perf_event`](super::perf_event) pass to the funnel, under the funnel's contract:
//! a `bpf` attr is `size` initialized bytes (a `repr(C)` attr without padding) that the
//! caller holds exclusively for the call; a `perf_event_open` attr is a whole
//! [`PerfEventAttr`]; and the addresses inside an attr (the log buffer, the info struct)
//! point at live, exclusive buffers of the sizes next to them, which is what the kernel
//! relies on too. Each `unsafe` block names the part it uses.
// Test-only code (declared `#[cfg(test)]` in sys/mod.rs, and here): its panics fire only
// when a test misuses the fake (an fd-returning call answered with a value, a syscall from
// inside the handler), failing the test that did it; no input reaches them.
#![cfg(test)]
#![allow(clippy::panic, clippy::indexing_slicing)]

use rustix::io::Errno;
use sluice_core::perf::abi::{
    cmd, BtfLoadAttr, IdAttr, LinkCreateAttr, MapCreateAttr, MapElemAttr, ObjInfoAttr,
    PerfEventAttr, ProgInfoRaw, ProgLoadAttr, RawTracepointOpenAttr,
};
use std::cell::RefCell;
use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};

/// `enum bpf_cmd` (include/uapi/linux/bpf.h), decoded; numbers it does not name stay raw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmd {
    /// `BPF_MAP_CREATE`.
    MapCreate,
    /// `BPF_MAP_LOOKUP_ELEM`.
    MapLookupElem,
    /// `BPF_MAP_UPDATE_ELEM`.
    MapUpdateElem,
    /// `BPF_MAP_DELETE_ELEM`.
    MapDeleteElem,
    /// `BPF_MAP_GET_NEXT_KEY`.
    MapGetNextKey,
    /// `BPF_PROG_LOAD`.
    ProgLoad,
    /// `BPF_OBJ_GET_INFO_BY_FD`.
    ObjGetInfoByFd,
    /// `BPF_RAW_TRACEPOINT_OPEN`.
    RawTracepointOpen,
    /// `BPF_BTF_LOAD`.
    BtfLoad,
    /// `BPF_MAP_FREEZE`.
    MapFreeze,
    /// `BPF_LINK_CREATE`.
    LinkCreate,
    /// `BPF_LINK_DETACH`.
    LinkDetach,
    /// Any other command.
    Other(u32),
}

/// `BPF_LINK_DETACH` (include/uapi/linux/bpf.h).
const LINK_DETACH: u32 = 34;

impl Cmd {
    /// Decodes a raw command number.
    #[must_use]
    pub fn from_raw(raw: u32) -> Cmd {
        match raw {
            cmd::MAP_CREATE => Cmd::MapCreate,
            cmd::MAP_LOOKUP_ELEM => Cmd::MapLookupElem,
            cmd::MAP_UPDATE_ELEM => Cmd::MapUpdateElem,
            cmd::MAP_DELETE_ELEM => Cmd::MapDeleteElem,
            cmd::MAP_GET_NEXT_KEY => Cmd::MapGetNextKey,
            cmd::PROG_LOAD => Cmd::ProgLoad,
            cmd::OBJ_GET_INFO_BY_FD => Cmd::ObjGetInfoByFd,
            cmd::RAW_TRACEPOINT_OPEN => Cmd::RawTracepointOpen,
            cmd::BTF_LOAD => Cmd::BtfLoad,
            cmd::MAP_FREEZE => Cmd::MapFreeze,
            cmd::LINK_CREATE => Cmd::LinkCreate,
            LINK_DETACH => Cmd::LinkDetach,
            other => Cmd::Other(other),
        }
    }

    /// Whether the kernel answers the command with a new fd (kernel/bpf/syscall.c).
    #[must_use]
    pub fn returns_fd(self) -> bool {
        match self {
            Cmd::MapCreate
            | Cmd::ProgLoad
            | Cmd::RawTracepointOpen
            | Cmd::BtfLoad
            | Cmd::LinkCreate => true,
            // OBJ_GET, PROG/MAP_GET_FD_BY_ID, BTF_GET_FD_BY_ID, LINK_GET_FD_BY_ID,
            // ENABLE_STATS, ITER_CREATE, TOKEN_CREATE.
            Cmd::Other(n) => matches!(n, 7 | 13 | 14 | 19 | 30 | 32 | 33 | 36),
            _ => false,
        }
    }
}

/// Kernel ABI structs the fake may read from or write into raw memory.
///
/// # Safety
/// Implementors are `repr(C)` structs of integers (and integer arrays) without padding
/// bytes: every byte pattern of their size is a value, and every byte of a value is
/// initialized.
pub unsafe trait Plain: Copy {}
// SAFETY: this and the impls below are repr(C) integer structs whose layouts sluice-core
// pins to the uapi headers with const assertions (core/src/perf/abi.rs); the uapi structs
// have explicit padding fields (`pad0`) and no implicit padding.
unsafe impl Plain for MapCreateAttr {}
// SAFETY: as above.
unsafe impl Plain for MapElemAttr {}
// SAFETY: as above.
unsafe impl Plain for ProgLoadAttr {}
// SAFETY: as above.
unsafe impl Plain for ObjInfoAttr {}
// SAFETY: as above.
unsafe impl Plain for BtfLoadAttr {}
// SAFETY: as above.
unsafe impl Plain for ProgInfoRaw {}
// SAFETY: as above.
unsafe impl Plain for LinkCreateAttr {}
// SAFETY: as above.
unsafe impl Plain for sluice_core::perf::abi::LinkCreateUprobeMultiAttr {}
// SAFETY: as above.
unsafe impl Plain for sluice_core::perf::abi::LinkCreateKprobeMultiAttr {}
// SAFETY: as above.
unsafe impl Plain for RawTracepointOpenAttr {}
// SAFETY: as above.
unsafe impl Plain for IdAttr {}
// SAFETY: as above.
unsafe impl Plain for PerfEventAttr {}
// SAFETY: as above.
unsafe impl Plain for sluice_core::perf::abi::MapInfoRaw {}

/// The bytes of a [`Plain`] value.
fn bytes_of<T: Plain>(v: &T) -> &[u8] {
    // SAFETY: `T: Plain` has no padding, so all `size_of::<T>()` bytes of `*v` are
    // initialized; the slice borrows `v`.
    unsafe { core::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }
}

/// A `bpf(cmd, attr, size)` call.
#[derive(Debug)]
pub struct Bpf<'a> {
    /// The command.
    pub cmd: Cmd,
    /// The attr as the wrapper laid it out (`size` bytes).
    attr: &'a mut [u8],
}

impl Bpf<'_> {
    /// The attr's bytes.
    #[must_use]
    pub fn attr_bytes(&self) -> &[u8] {
        self.attr
    }

    /// The attr read as `T`, when it is at least that long (for commands without a
    /// typed accessor, such as `BPF_LINK_CREATE` once its attr struct exists).
    #[must_use]
    pub fn attr<T: Plain>(&self) -> Option<T> {
        if self.attr.len() < size_of::<T>() {
            return None;
        }
        // SAFETY: at least size_of::<T>() initialized bytes; any byte pattern is a `T`
        // (`Plain`); read_unaligned needs no alignment.
        Some(unsafe { self.attr.as_ptr().cast::<T>().read_unaligned() })
    }

    fn typed<T: Plain>(&self, want: Cmd) -> Option<T> {
        (self.cmd == want).then(|| self.attr()).flatten()
    }

    /// The attr of a `BPF_MAP_CREATE`.
    #[must_use]
    pub fn map_create(&self) -> Option<MapCreateAttr> {
        self.typed(Cmd::MapCreate)
    }

    /// The attr of a map element command (lookup, update, delete, next key, freeze).
    #[must_use]
    pub fn map_elem(&self) -> Option<MapElemAttr> {
        matches!(
            self.cmd,
            Cmd::MapLookupElem
                | Cmd::MapUpdateElem
                | Cmd::MapDeleteElem
                | Cmd::MapGetNextKey
                | Cmd::MapFreeze
        )
        .then(|| self.attr())
        .flatten()
    }

    /// The attr of a `BPF_PROG_LOAD`.
    #[must_use]
    pub fn prog_load(&self) -> Option<ProgLoadAttr> {
        self.typed(Cmd::ProgLoad)
    }

    /// The attr of a `BPF_OBJ_GET_INFO_BY_FD`.
    #[must_use]
    pub fn obj_info(&self) -> Option<ObjInfoAttr> {
        self.typed(Cmd::ObjGetInfoByFd)
    }

    /// The attr of a `BPF_BTF_LOAD`.
    #[must_use]
    pub fn btf_load(&self) -> Option<BtfLoadAttr> {
        self.typed(Cmd::BtfLoad)
    }

    /// The attr of a `BPF_LINK_CREATE`.
    #[must_use]
    pub fn link_create(&self) -> Option<LinkCreateAttr> {
        self.typed(Cmd::LinkCreate)
    }

    /// The attr of a `BPF_RAW_TRACEPOINT_OPEN`.
    #[must_use]
    pub fn raw_tracepoint_open(&self) -> Option<RawTracepointOpenAttr> {
        self.typed(Cmd::RawTracepointOpen)
    }

    /// Answers a `BPF_BTF_GET_NEXT_ID` (or another `*_GET_NEXT_ID`): writes `next_id`.
    pub fn put_next_id(&mut self, id: u32) {
        self.put_u32(core::mem::offset_of!(IdAttr, next_id), id);
    }

    /// Writes a `u32` output field of the attr at `offset` (skipped if the attr is shorter).
    fn put_u32(&mut self, offset: usize, v: u32) {
        if let Some(dst) = self.attr.get_mut(offset..offset + 4) {
            dst.copy_from_slice(&v.to_ne_bytes());
        }
    }

    /// Overwrites `log_true_size` of a `BPF_PROG_LOAD` or `BPF_BTF_LOAD` after
    /// [`write_log`](Self::write_log): 0 is what kernels before 6.4 leave there.
    ///
    /// # Panics
    /// For another command.
    pub fn set_log_true_size(&mut self, size: u32) {
        let at = match self.cmd {
            Cmd::ProgLoad => core::mem::offset_of!(ProgLoadAttr, log_true_size),
            Cmd::BtfLoad => core::mem::offset_of!(BtfLoadAttr, btf_log_true_size),
            other => panic!("fake: set_log_true_size on {other:?}"),
        };
        self.put_u32(at, size);
    }

    /// Does what the verifier does with its log for a `BPF_PROG_LOAD` or `BPF_BTF_LOAD`
    /// (kernel/bpf/log.c): writes as much of `log` as fits into the caller's `log_buf` of
    /// `log_size` bytes, NUL-terminated, and sets `log_true_size` to `log.len() + 1`.
    /// Returns whether the whole log and its NUL fit: when not, the kernel answers
    /// `ENOSPC`. Without a log buffer it writes nothing and returns `log.is_empty()`.
    ///
    /// # Panics
    /// For another command.
    pub fn write_log(&mut self, log: &[u8]) -> bool {
        let (buf, size, true_size_at) = if let Some(a) = self.prog_load() {
            let at = core::mem::offset_of!(ProgLoadAttr, log_true_size);
            (a.log_buf, a.log_size, at)
        } else if let Some(a) = self.btf_load() {
            let at = core::mem::offset_of!(BtfLoadAttr, btf_log_true_size);
            (a.btf_log_buf, a.btf_log_size, at)
        } else {
            panic!(
                "fake: write_log on {:?}, not PROG_LOAD or BTF_LOAD",
                self.cmd
            );
        };
        let true_size = u32::try_from(log.len() + 1).unwrap_or(u32::MAX);
        self.put_u32(true_size_at, true_size);
        let (Ok(addr), Ok(size)) = (usize::try_from(buf), usize::try_from(size)) else {
            panic!("fake: log buffer {buf:#x}+{size} does not fit this target");
        };
        if addr == 0 || size == 0 {
            return log.is_empty();
        }
        // SAFETY: for PROG_LOAD and BTF_LOAD the wrappers (sys/bpf.rs prog_load, btf_load)
        // set log_buf/log_size from a live, exclusive `&mut [u8]` they hold borrowed for
        // the whole call (an exposed address: `as usize` casts); the kernel writes there
        // too (kernel/bpf/log.c bpf_vlog_finalize).
        let dst = unsafe {
            core::slice::from_raw_parts_mut(
                core::ptr::with_exposed_provenance_mut::<u8>(addr),
                size,
            )
        };
        let n = log.len().min(size - 1);
        dst[..n].copy_from_slice(&log[..n]);
        dst[n] = 0;
        log.len() < size
    }

    /// Does what `BPF_OBJ_GET_INFO_BY_FD` does: copies `info` into the caller's buffer,
    /// at most `info_len` bytes, and sets `info_len` to the bytes copied
    /// (kernel/bpf/syscall.c bpf_prog_get_info_by_fd).
    ///
    /// # Panics
    /// For another command.
    pub fn write_info<T: Plain>(&mut self, info: &T) {
        let Some(a) = self.obj_info() else {
            panic!("fake: write_info on {:?}, not OBJ_GET_INFO_BY_FD", self.cmd);
        };
        let Ok(addr) = usize::try_from(a.info) else {
            panic!("fake: info address {:#x} does not fit this target", a.info);
        };
        let n = (a.info_len as usize).min(size_of::<T>());
        if addr == 0 || n == 0 {
            return;
        }
        // SAFETY: the wrapper (sys/bpf.rs prog_info) sets info/info_len from a live,
        // exclusive, zeroed struct it holds for the call; the kernel copies at most
        // info_len bytes there (copy_to_user in bpf_prog_get_info_by_fd).
        let dst = unsafe {
            core::slice::from_raw_parts_mut(core::ptr::with_exposed_provenance_mut::<u8>(addr), n)
        };
        dst.copy_from_slice(&bytes_of(info)[..n]);
        self.put_u32(
            core::mem::offset_of!(ObjInfoAttr, info_len),
            u32::try_from(n).unwrap_or(u32::MAX),
        );
    }
}

/// A `perf_event_open(attr, pid, cpu, group_fd, flags)` call.
#[derive(Debug)]
pub struct PerfEventOpen<'a> {
    /// The attr (the kernel may write `size` back on `E2BIG`).
    pub attr: &'a mut PerfEventAttr,
    /// `pid`: -1 every task, 0 the caller, else a task.
    pub pid: i32,
    /// `cpu`: -1 any, else one CPU.
    pub cpu: i32,
    /// `group_fd`, -1 for none.
    pub group_fd: RawFd,
    /// `PERF_FLAG_*`.
    pub flags: u32,
}

/// A perf event ioctl (`PERF_EVENT_IOC_*`, man 2 perf_event_open).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// `PERF_EVENT_IOC_ENABLE`.
    Enable,
    /// `PERF_EVENT_IOC_DISABLE`.
    Disable,
    /// `PERF_EVENT_IOC_SET_BPF` with the program's fd.
    SetBpf {
        /// The program.
        prog: RawFd,
    },
    /// `PERF_EVENT_IOC_SET_OUTPUT` with the target event's fd.
    SetOutput {
        /// The event whose ring receives the records.
        target: RawFd,
    },
    /// `PERF_EVENT_IOC_ID` (answer with [`Reply::Value`], the id).
    Id,
    /// `PERF_EVENT_IOC_QUERY_BPF`: the handler gets [`Call::QueryBpf`] and answers with
    /// [`Reply::Value`], how many programs there are.
    QueryBpf,
    /// `read(2)` of the lost count of an event opened with `PERF_FORMAT_LOST` (answer
    /// with [`Reply::Value`], the count).
    ReadLost,
}

/// An ioctl on a perf event fd.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfIoctl {
    /// The event.
    pub fd: RawFd,
    /// What is asked.
    pub request: Request,
}

/// A call the fake answers.
#[derive(Debug)]
pub enum Call<'a> {
    /// `bpf(2)`.
    Bpf(Bpf<'a>),
    /// `perf_event_open(2)`.
    PerfEventOpen(PerfEventOpen<'a>),
    /// A perf event ioctl.
    PerfIoctl(PerfIoctl),
    /// `PERF_EVENT_IOC_QUERY_BPF` on `fd`: write the program ids into `ids` (its length
    /// is the room the caller gave) and answer [`Reply::Value`] with their number.
    QueryBpf {
        /// The event.
        fd: RawFd,
        /// Where the ids go.
        ids: &'a mut [u32],
    },
    /// Another syscall through the funnel: its number and raw arguments.
    Other {
        /// Syscall number.
        nr: u32,
        /// Arguments.
        args: [usize; 5],
    },
}

/// What a call did, as [`Fake::seen`] lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// `bpf(cmd)`.
    Bpf(Cmd),
    /// `perf_event_open` for `pid` on `cpu`.
    PerfEventOpen {
        /// `pid`.
        pid: i32,
        /// `cpu`.
        cpu: i32,
    },
    /// A perf event ioctl.
    PerfIoctl(PerfIoctl),
    /// Another syscall number.
    Other(u32),
}

/// A successful answer.
#[derive(Debug)]
pub enum Reply {
    /// A new fd, handed over to the caller (which closes it): the answer to every call
    /// that returns an fd.
    Fd(OwnedFd),
    /// A plain return value (0 for most calls, the id for `PERF_EVENT_IOC_ID`).
    Value(usize),
}

/// A new fd for [`Reply::Fd`]: `/dev/null` opened read-only.
///
/// # Panics
/// When `/dev/null` cannot be opened.
#[must_use]
pub fn fd() -> Reply {
    match std::fs::File::open("/dev/null") {
        Ok(f) => Reply::Fd(f.into()),
        Err(e) => panic!("fake: open /dev/null: {e}"),
    }
}

/// A new fd for [`Reply::Fd`] whose closing the test can observe: the write end of a
/// pipe, whose read end [`FdWatch`] keeps (it reads end-of-file once every copy of the
/// write end is closed, whatever fd numbers other threads reuse meanwhile).
///
/// # Panics
/// When no pipe can be made.
#[must_use]
pub fn watched_fd() -> (Reply, FdWatch) {
    use rustix::pipe::{pipe_with, PipeFlags};
    let (read, write) = match pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK) {
        Ok(p) => p,
        Err(e) => panic!("fake: pipe: {e}"),
    };
    let raw = write.as_raw_fd();
    (Reply::Fd(write), FdWatch { read, raw })
}

/// The read end of a [`watched_fd`].
#[derive(Debug)]
pub struct FdWatch {
    read: OwnedFd,
    raw: RawFd,
}

impl FdWatch {
    /// The number the watched fd had when handed out (what ioctls on it carry while it
    /// is open).
    #[must_use]
    pub fn raw(&self) -> RawFd {
        self.raw
    }

    /// Whether the watched fd has been closed.
    ///
    /// # Panics
    /// When reading the pipe fails otherwise than with `EAGAIN`.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        let mut b = [0u8; 1];
        match rustix::io::read(&self.read, &mut b) {
            Ok(0) => true,
            Err(Errno::AGAIN) => false,
            other => panic!("fake: reading the watch pipe: {other:?}"),
        }
    }
}

type Handler = Box<dyn FnMut(Call<'_>) -> Result<Reply, Errno>>;

struct State {
    /// `None` while the handler runs.
    handler: Option<Handler>,
    seen: Vec<Seen>,
}

thread_local! {
    static FAKE: RefCell<Option<State>> = const { RefCell::new(None) };
}

/// Installs `handler` for this thread's faked calls until the returned guard drops.
///
/// # Panics
/// When a fake is installed on this thread already.
pub fn install(handler: impl FnMut(Call<'_>) -> Result<Reply, Errno> + 'static) -> Fake {
    FAKE.with(|f| {
        let mut f = f.borrow_mut();
        assert!(f.is_none(), "fake: already installed on this thread");
        *f = Some(State {
            handler: Some(Box::new(handler)),
            seen: Vec::new(),
        });
    });
    Fake {
        _not_send: core::marker::PhantomData,
    }
}

/// An installed fake; dropping it gives this thread's calls back to the kernel.
#[derive(Debug)]
pub struct Fake {
    /// The state is per thread: keep the guard on it.
    _not_send: core::marker::PhantomData<*const ()>,
}

impl Fake {
    /// Every call answered so far, in order.
    #[must_use]
    pub fn seen(&self) -> Vec<Seen> {
        FAKE.with(|f| {
            f.borrow()
                .as_ref()
                .map(|s| s.seen.clone())
                .unwrap_or_default()
        })
    }

    /// How many calls were answered so far.
    #[must_use]
    pub fn count(&self) -> usize {
        FAKE.with(|f| f.borrow().as_ref().map_or(0, |s| s.seen.len()))
    }

    /// How many calls so far match `what`.
    #[must_use]
    pub fn count_of(&self, what: impl Fn(&Seen) -> bool) -> usize {
        self.seen().iter().filter(|s| what(s)).count()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        FAKE.with(|f| f.borrow_mut().take());
    }
}

fn installed() -> bool {
    FAKE.with(|f| f.borrow().is_some())
}

thread_local! {
    static RELEASE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Makes the kernel release this thread's code sees (`running_kernel_version` in
/// `kernel::version`, and through it every old-kernel classification of an errno) be
/// `release` instead of what `uname(2)` says, until the returned guard drops. Independent
/// of [`install`]: the two combine.
///
/// # Panics
/// When a release is set on this thread already.
#[must_use = "the release is only set until the guard drops"]
pub fn set_kernel_release(release: &str) -> KernelRelease {
    RELEASE.with(|r| {
        let mut r = r.borrow_mut();
        assert!(
            r.is_none(),
            "fake: a kernel release is set on this thread already"
        );
        *r = Some(release.to_owned());
    });
    KernelRelease {
        _not_send: core::marker::PhantomData,
    }
}

/// A kernel release set by [`set_kernel_release`]; dropping it gives `uname(2)` back.
#[derive(Debug)]
pub struct KernelRelease {
    /// The release is per thread: keep the guard on it.
    _not_send: core::marker::PhantomData<*const ()>,
}

impl Drop for KernelRelease {
    fn drop(&mut self) {
        RELEASE.with(|r| r.borrow_mut().take());
    }
}

/// The release set on this thread by [`set_kernel_release`], if any.
#[must_use]
pub fn kernel_release() -> Option<String> {
    RELEASE.with(|r| r.borrow().clone())
}

/// Runs the handler on `call`; `returns_fd` says which kind of [`Reply`] the call needs.
fn answer(call: Call<'_>, seen: Seen, returns_fd: bool) -> Result<usize, Errno> {
    let mut handler = FAKE.with(|f| {
        let mut f = f.borrow_mut();
        let Some(state) = f.as_mut() else {
            panic!("fake: answer without an installed fake");
        };
        state.seen.push(seen);
        match state.handler.take() {
            Some(h) => h,
            None => panic!("fake: {seen:?} made from inside the fake's handler"),
        }
    });
    let r = handler(call);
    FAKE.with(|f| {
        if let Some(state) = f.borrow_mut().as_mut() {
            state.handler = Some(handler);
        }
    });
    match r? {
        Reply::Fd(fd) if returns_fd => usize::try_from(fd.into_raw_fd()).map_err(|_| Errno::BADF),
        Reply::Value(v) if !returns_fd => Ok(v),
        Reply::Fd(_) => panic!("fake: {seen:?} returns no fd; answer with Reply::Value"),
        Reply::Value(_) => {
            panic!("fake: {seen:?} returns an fd; answer with Reply::Fd (a real fd)")
        }
    }
}

/// The funnel's hook: `None` when no fake is installed on this thread (the call goes to
/// the kernel), else the fake's answer.
///
/// # Safety
/// The funnel's contract ([`super::syscall`]) for syscall `nr` with arguments `a`.
pub(super) unsafe fn intercept(nr: u32, a: [usize; 5]) -> Option<Result<usize, Errno>> {
    if !installed() {
        return None;
    }
    let [a0, a1, a2, a3, a4] = a;
    Some(if nr == sluice_core::arch::native::SYS_BPF {
        let raw = a0 as u32;
        let attr: &mut [u8] = if a1 == 0 || a2 == 0 {
            &mut []
        } else {
            // SAFETY: the funnel's contract: a bpf attr is `a2` initialized bytes at `a1`,
            // held exclusively by the caller for the call (the wrappers pass a `&mut A`
            // with `A` a padding-free repr(C) attr, cast to an exposed address).
            unsafe {
                core::slice::from_raw_parts_mut(
                    core::ptr::with_exposed_provenance_mut::<u8>(a1),
                    a2,
                )
            }
        };
        let cmd = Cmd::from_raw(raw);
        answer(
            Call::Bpf(Bpf { cmd, attr }),
            Seen::Bpf(cmd),
            cmd.returns_fd(),
        )
    } else if nr == sluice_core::arch::native::SYS_PERF_EVENT_OPEN {
        let ptr = core::ptr::with_exposed_provenance_mut::<PerfEventAttr>(a0);
        // SAFETY: the funnel's contract: a perf_event_open attr is a whole, live,
        // exclusively borrowed PerfEventAttr (sys/perf_event.rs perf_event_open passes
        // `&mut PerfEventAttr`), so aligned, initialized and unaliased for the call.
        let Some(attr) = (unsafe { ptr.as_mut() }) else {
            return Some(Err(Errno::FAULT));
        };
        // The wrapper sign-extended these `int`s; truncating undoes it.
        let (pid, cpu, group_fd, flags) = (a1 as i32, a2 as i32, a3 as i32, a4 as u32);
        let call = Call::PerfEventOpen(PerfEventOpen {
            attr,
            pid,
            cpu,
            group_fd,
            flags,
        });
        answer(call, Seen::PerfEventOpen { pid, cpu }, true)
    } else {
        answer(Call::Other { nr, args: a }, Seen::Other(nr), false)
    })
}

/// The perf ioctls' hook: `None` when no fake is installed on this thread.
pub(super) fn intercept_ioctl(fd: RawFd, request: Request) -> Option<Result<usize, Errno>> {
    if !installed() {
        return None;
    }
    let ioctl = PerfIoctl { fd, request };
    Some(answer(
        Call::PerfIoctl(ioctl),
        Seen::PerfIoctl(ioctl),
        false,
    ))
}

/// The `PERF_EVENT_IOC_QUERY_BPF` hook: `None` when no fake is installed on this thread,
/// else the number of programs the handler says there are (it filled `ids`).
pub(super) fn intercept_query_bpf(fd: RawFd, ids: &mut [u32]) -> Option<Result<usize, Errno>> {
    if !installed() {
        return None;
    }
    let seen = Seen::PerfIoctl(PerfIoctl {
        fd,
        request: Request::QueryBpf,
    });
    Some(answer(Call::QueryBpf { fd, ids }, seen, false))
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
#[path = "fake_tests.rs"]
mod tests;
