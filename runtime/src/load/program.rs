//! One program into the kernel: [`program`], its verifier log retried at the size the
//! kernel reports (`log_true_size`, Linux 6.4), and what the kernel says of a loaded
//! program ([`prog_info`]).

use crate::error::{Error, Result};
use crate::kernel::errno::bpf_error;
use crate::sys::bpf::{self as sys, LogRequest, ProgBtf, ProgLoad};
use rustix::io::Errno;
use sluice_core::perf::abi::{object_name, prog_type, ProgInfoRaw, BPF_TAG_SIZE};
use sluice_core::Insn;
use std::ffi::CString;
use std::os::fd::{BorrowedFd, OwnedFd};

/// The seed's log buffer size (`BPF_LOG_BUF_SIZE`, 64 KiB): the first size tried.
pub const DEFAULT_LOG_SIZE: usize = 64 * 1024;
/// Largest log buffer the loader grows to (16 MiB).
pub const MAX_LOG_SIZE: usize = 16 * 1024 * 1024;

/// What the kernel says about a loaded program (`BPF_OBJ_GET_INFO_BY_FD`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgInfo {
    /// Kernel-wide program id (what `bpftool prog show id N` takes).
    pub id: u32,
    /// Program type.
    pub prog_type: u32,
    /// Tag: the first 8 bytes of the SHA-1 of the instructions (map fds zeroed).
    pub tag: [u8; BPF_TAG_SIZE],
    /// Instructions after the verifier's rewrites (`xlated_prog_len / 8`).
    pub xlated_insns: u32,
    /// Bytes of JITed machine code (0 without JIT).
    pub jited_len: u32,
    /// Instructions the verifier processed (Linux 5.16; 0 before).
    pub verified_insns: u32,
    /// Name as the kernel stores it.
    pub name: String,
}

impl ProgInfo {
    /// The tag as 16 hex digits, as `bpftool` prints it.
    #[must_use]
    pub fn tag_hex(&self) -> String {
        self.tag.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl From<ProgInfoRaw> for ProgInfo {
    fn from(r: ProgInfoRaw) -> Self {
        let end = r.name.iter().position(|&b| b == 0).unwrap_or(r.name.len());
        ProgInfo {
            id: r.id,
            prog_type: r.prog_type,
            tag: r.tag,
            xlated_insns: r.xlated_prog_len / 8,
            jited_len: r.jited_prog_len,
            verified_insns: r.verified_insns,
            name: String::from_utf8_lossy(r.name.get(..end).unwrap_or_default()).into_owned(),
        }
    }
}

/// Reads what the kernel says about program `fd`.
///
/// # Errors
/// [`Error::Unsupported`] before Linux 4.13; the kernel's refusal.
pub fn prog_info(fd: BorrowedFd<'_>) -> Result<ProgInfo> {
    sys::prog_info(fd).map(ProgInfo::from).map_err(|e| {
        bpf_error(
            "bpf(BPF_OBJ_GET_INFO_BY_FD)",
            "",
            e,
            Some(("BPF_OBJ_GET_INFO_BY_FD".into(), "4.13")),
        )
    })
}

/// One program to hand to the verifier.
#[derive(Clone, Debug)]
pub struct ProgramLoad<'a> {
    /// Name for messages and for the kernel (sanitised, cut to 15 bytes).
    pub name: &'a str,
    /// `BPF_PROG_TYPE_*`.
    pub prog_type: u32,
    /// The relocated instructions.
    pub insns: &'a [Insn],
    /// Licence.
    pub license: &'a str,
    /// `KERNEL_VERSION` to pass.
    pub kern_version: u32,
    /// The program's BTF (`func_info`, `line_info`), if any: the verifier's log then names
    /// source lines.
    pub btf: Option<ProgBtf<'a>>,
    /// What a tracing or LSM program is verified against (nothing for the others).
    pub attach: AttachLoad<'a>,
}

/// The load-time half of an attach point: what `tp_btf/`, `fentry/`, `lsm/` and the
/// sleepable forms tell the verifier (`expected_attach_type`, `attach_btf_id`, the module
/// BTF it is in, `BPF_F_SLEEPABLE`). All zero for kprobes, tracepoints and raw tracepoints.
#[derive(Clone, Copy, Debug, Default)]
pub struct AttachLoad<'a> {
    /// `enum bpf_attach_type`.
    pub expected_attach_type: u32,
    /// The kernel BTF type id (a `FUNC`, or `tp_btf`'s `btf_trace_*` typedef).
    pub attach_btf_id: u32,
    /// The module's BTF fd when the type is in a module (`attach_btf_obj_fd`).
    pub attach_btf_obj: Option<BorrowedFd<'a>>,
    /// `BPF_F_*` load flags (`BPF_F_SLEEPABLE`).
    pub prog_flags: u32,
}

/// When to ask the verifier for its log, at which level and with which first buffer size.
///
/// The buffer grows to what the kernel reports it needed (`log_true_size`, Linux 6.4), or
/// by doubling up to [`MAX_LOG_SIZE`] when the kernel reports nothing, whenever the kernel
/// answers `ENOSPC`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadLog {
    /// Load without a log first (the fast path); on failure, load again with a log at
    /// `level` (at least 1) to explain the refusal. A success returns an empty log.
    OnFailure {
        /// Verifier log level of the retry.
        level: u32,
        /// First log buffer size of the retry.
        size: usize,
    },
    /// Load with a log at `level` and return the whole log with the fd.
    Always {
        /// Verifier log level (1; 2 prints every instruction).
        level: u32,
        /// First log buffer size.
        size: usize,
    },
}

struct Prepared {
    bytes: Vec<[u8; 8]>,
    license: CString,
}

fn prepare(p: &ProgramLoad<'_>) -> Prepared {
    let lic = p.license.split('\0').next().unwrap_or("");
    Prepared {
        bytes: p.insns.iter().map(|i| i.to_native_bytes()).collect(),
        license: CString::new(lic).unwrap_or_default(),
    }
}

fn log_bytes(mut buf: Vec<u8>) -> Vec<u8> {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    buf.truncate(end);
    buf
}

fn classify_load_error(p: &ProgramLoad<'_>, errno: Errno, log: Vec<u8>) -> Error {
    if !log.is_empty() {
        return Error::Verifier {
            program: p.name.into(),
            errno,
            log,
        };
    }
    let feature = (errno == Errno::INVAL)
        .then(|| prog_type::min_kernel(p.prog_type))
        .flatten()
        .map(|k| (format!("program type {}", p.prog_type), k));
    match bpf_error("bpf(BPF_PROG_LOAD)", p.name, errno, feature) {
        Error::Syscall { errno, .. } => Error::Verifier {
            program: p.name.into(),
            errno,
            log,
        },
        e => e,
    }
}

fn request<'a>(p: &ProgramLoad<'a>, prep: &'a Prepared, named: bool) -> ProgLoad<'a> {
    ProgLoad {
        prog_type: p.prog_type,
        insns: &prep.bytes,
        license: &prep.license,
        kern_version: p.kern_version,
        name: if named { object_name(p.name) } else { [0; 16] },
        prog_flags: p.attach.prog_flags,
        expected_attach_type: p.attach.expected_attach_type,
        attach_btf_id: p.attach.attach_btf_id,
        attach_btf_obj: p.attach.attach_btf_obj,
        btf: p.btf,
    }
}

fn load_prepared_with_log(
    p: &ProgramLoad<'_>,
    prep: &Prepared,
    level: u32,
    log_size: usize,
) -> Result<(OwnedFd, Vec<u8>)> {
    let req = request(p, prep, true);
    let mut size = log_size.clamp(256, MAX_LOG_SIZE);
    loop {
        let mut buf = vec![0u8; size];
        let (r, true_size) = sys::prog_load(
            &req,
            Some(LogRequest {
                buf: &mut buf,
                level,
            }),
        );
        let log = log_bytes(buf);
        match r {
            Ok(fd) => return Ok((fd, log)),
            Err(e) if e == Errno::NOSPC && size < MAX_LOG_SIZE => {
                let wanted = true_size as usize;
                size = if wanted > size {
                    wanted
                } else {
                    size.saturating_mul(2)
                }
                .min(MAX_LOG_SIZE);
                log::debug!(
                    "verifier log of '{}' needs more room: retrying with {size} bytes",
                    p.name
                );
            }
            Err(e) => return Err(classify_load_error(p, e, log)),
        }
    }
}

/// Loads one program, with its verifier log as `log` asks, and returns its fd and the log
/// (empty for [`LoadLog::OnFailure`] when the first load succeeds).
///
/// A kernel before 4.15 knows no program name: its `E2BIG` is retried without one.
///
/// # Errors
/// [`Error::Verifier`] with the whole log when refused; [`Error::Permission`] /
/// [`Error::Unsupported`] when the kernel will not load programs at all.
pub fn program(p: &ProgramLoad<'_>, log: &LoadLog) -> Result<(OwnedFd, Vec<u8>)> {
    let prep = prepare(p);
    let (level, size) = match *log {
        LoadLog::Always { level, size } => return load_prepared_with_log(p, &prep, level, size),
        LoadLog::OnFailure { level, size } => (level, size),
    };
    let (r, _) = sys::prog_load(&request(p, &prep, true), None);
    let first = match r {
        Ok(fd) => return Ok((fd, Vec::new())),
        Err(e) => e,
    };
    if first == Errno::NOSYS {
        return Err(classify_load_error(p, first, Vec::new()));
    }
    if first == Errno::TOOBIG {
        // Kernels before 4.15 know no prog_name: the non-zero tail is E2BIG.
        if let (Ok(fd), _) = sys::prog_load(&request(p, &prep, false), None) {
            return Ok((fd, Vec::new()));
        }
    }
    log::warn!(
        "load bpf program '{}' failed: {first}; retrying with a verifier log",
        p.name
    );
    match load_prepared_with_log(p, &prep, level.max(1), size) {
        Ok((fd, _)) => Ok((fd, Vec::new())),
        Err(e) => {
            // The error carries the log to whoever reports it; the dump the seed's libbpf
            // prints is for debugging only, so a user sees the log once.
            if let Error::Verifier { log, .. } = &e {
                log::debug!("bpf: load: failed to load program '{}':", p.name);
                log::debug!("-- BEGIN DUMP LOG ---");
                log::debug!("{}", String::from_utf8_lossy(log));
                log::debug!("-- END LOG --");
            }
            Err(e)
        }
    }
}

#[cfg(test)]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
#[path = "program_fake_tests.rs"]
mod tests_fake;
