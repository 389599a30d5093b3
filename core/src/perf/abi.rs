//! The kernel ABI structs that `bpf(2)` and `perf_event_open(2)` take: `union bpf_attr`
//! (one struct per command sluice issues), `struct bpf_prog_info`, `struct perf_event_attr`,
//! and the command, type and flag values they carry.
//!
//! Every struct is `repr(C)` with explicit padding fields, so no byte of it is padding the
//! compiler may leave uninitialised, and its layout is the same on 32- and 64-bit targets
//! (the kernel's `__aligned_u64` puts every 64-bit field on an 8-byte boundary even on i386,
//! where a plain `u64` is only 4-aligned). Sizes and offsets are checked at compile time
//! against `include/uapi/linux/bpf.h` and `include/uapi/linux/perf_event.h`.
//!
//! # Sizes and the kernel
//! The kernel accepts a struct smaller than its own (missing fields read as zero) and a
//! larger one as long as every byte it does not know is zero (otherwise `E2BIG`). So these
//! structs may carry fields newer than the running kernel; leaving them zero keeps old
//! kernels working.

use core::mem::{offset_of, size_of};

/// `BPF_OBJ_NAME_LEN`: room for a map or program name, NUL included.
pub const BPF_OBJ_NAME_LEN: usize = 16;
/// `BPF_TAG_SIZE`: bytes of a program tag (a truncated SHA-1 of its instructions).
pub const BPF_TAG_SIZE: usize = 8;

/// `enum bpf_cmd` values sluice issues.
pub mod cmd {
    /// `BPF_MAP_CREATE` (Linux 3.18).
    pub const MAP_CREATE: u32 = 0;
    /// `BPF_MAP_LOOKUP_ELEM` (Linux 3.18).
    pub const MAP_LOOKUP_ELEM: u32 = 1;
    /// `BPF_MAP_UPDATE_ELEM` (Linux 3.18).
    pub const MAP_UPDATE_ELEM: u32 = 2;
    /// `BPF_MAP_DELETE_ELEM` (Linux 3.18).
    pub const MAP_DELETE_ELEM: u32 = 3;
    /// `BPF_MAP_GET_NEXT_KEY` (Linux 3.18).
    pub const MAP_GET_NEXT_KEY: u32 = 4;
    /// `BPF_PROG_LOAD` (Linux 3.18).
    pub const PROG_LOAD: u32 = 5;
    /// `BPF_OBJ_PIN` (Linux 4.4): a map or program given a path in the BPF file system.
    pub const OBJ_PIN: u32 = 6;
    /// `BPF_OBJ_GET` (Linux 4.4): an fd of the object pinned at a path.
    pub const OBJ_GET: u32 = 7;
    /// `BPF_OBJ_GET_INFO_BY_FD` (Linux 4.13).
    pub const OBJ_GET_INFO_BY_FD: u32 = 15;
    /// `BPF_RAW_TRACEPOINT_OPEN` (Linux 4.17): attaches a raw tracepoint, `tp_btf`, or
    /// (with no name) a tracing program to its `attach_btf_id`.
    pub const RAW_TRACEPOINT_OPEN: u32 = 17;
    /// `BPF_BTF_LOAD` (Linux 4.18).
    pub const BTF_LOAD: u32 = 18;
    /// `BPF_PROG_GET_FD_BY_ID` (Linux 4.13).
    pub const PROG_GET_FD_BY_ID: u32 = 13;
    /// `BPF_BTF_GET_FD_BY_ID` (Linux 4.18).
    pub const BTF_GET_FD_BY_ID: u32 = 19;
    /// `BPF_MAP_FREEZE` (Linux 5.2): user space may no longer write the map.
    pub const MAP_FREEZE: u32 = 22;
    /// `BPF_BTF_GET_NEXT_ID` (Linux 5.4).
    pub const BTF_GET_NEXT_ID: u32 = 23;
    /// `BPF_LINK_CREATE` (Linux 5.7).
    pub const LINK_CREATE: u32 = 28;
}

/// `enum bpf_map_type` values (unknown values are passed through untouched).
pub mod map_type {
    /// `BPF_MAP_TYPE_HASH` (Linux 3.19).
    pub const HASH: u32 = 1;
    /// `BPF_MAP_TYPE_ARRAY` (Linux 3.19).
    pub const ARRAY: u32 = 2;
    /// `BPF_MAP_TYPE_PROG_ARRAY` (Linux 4.2).
    pub const PROG_ARRAY: u32 = 3;
    /// `BPF_MAP_TYPE_PERF_EVENT_ARRAY` (Linux 4.3).
    pub const PERF_EVENT_ARRAY: u32 = 4;
    /// `BPF_MAP_TYPE_PERCPU_HASH` (Linux 4.6).
    pub const PERCPU_HASH: u32 = 5;
    /// `BPF_MAP_TYPE_PERCPU_ARRAY` (Linux 4.6).
    pub const PERCPU_ARRAY: u32 = 6;
    /// `BPF_MAP_TYPE_STACK_TRACE` (Linux 4.6).
    pub const STACK_TRACE: u32 = 7;
    /// `BPF_MAP_TYPE_LRU_HASH` (Linux 4.10).
    pub const LRU_HASH: u32 = 9;
    /// `BPF_MAP_TYPE_LRU_PERCPU_HASH` (Linux 4.10).
    pub const LRU_PERCPU_HASH: u32 = 10;
    /// `BPF_MAP_TYPE_ARRAY_OF_MAPS` (Linux 4.12).
    pub const ARRAY_OF_MAPS: u32 = 12;
    /// `BPF_MAP_TYPE_HASH_OF_MAPS` (Linux 4.12).
    pub const HASH_OF_MAPS: u32 = 13;
    /// `BPF_MAP_TYPE_PERCPU_CGROUP_STORAGE` (Linux 4.20).
    pub const PERCPU_CGROUP_STORAGE: u32 = 21;
    /// `BPF_MAP_TYPE_RINGBUF` (Linux 5.8).
    pub const RINGBUF: u32 = 27;

    /// Whether lookups on this map type return one value per possible CPU.
    #[must_use]
    pub const fn is_per_cpu(t: u32) -> bool {
        matches!(
            t,
            PERCPU_HASH | PERCPU_ARRAY | LRU_PERCPU_HASH | PERCPU_CGROUP_STORAGE
        )
    }

    /// First kernel release that knows map type `t` (`None` when sluice does not know `t`).
    #[must_use]
    pub const fn min_kernel(t: u32) -> Option<&'static str> {
        Some(match t {
            HASH | ARRAY => "3.19",
            PROG_ARRAY => "4.2",
            PERF_EVENT_ARRAY => "4.3",
            PERCPU_HASH | PERCPU_ARRAY | STACK_TRACE => "4.6",
            8 => "4.8",
            LRU_HASH | LRU_PERCPU_HASH => "4.10",
            11 => "4.11",
            ARRAY_OF_MAPS | HASH_OF_MAPS => "4.12",
            14 | 15 => "4.14",
            16 => "4.15",
            17 | 18 => "4.18",
            19 | 20 => "4.19",
            PERCPU_CGROUP_STORAGE | 22 | 23 => "4.20",
            24 => "5.2",
            25 => "5.4",
            26 => "5.6",
            RINGBUF => "5.8",
            28 => "5.10",
            29 => "5.11",
            30 => "5.16",
            31 => "6.1",
            32 => "6.2",
            33 => "6.9",
            _ => return None,
        })
    }
}

/// `enum bpf_prog_type` values (unknown values are passed through untouched).
pub mod prog_type {
    /// `BPF_PROG_TYPE_SOCKET_FILTER` (Linux 3.19).
    pub const SOCKET_FILTER: u32 = 1;
    /// `BPF_PROG_TYPE_KPROBE` (Linux 4.1): kprobes, kretprobes, uprobes.
    pub const KPROBE: u32 = 2;
    /// `BPF_PROG_TYPE_SCHED_CLS` (Linux 4.1).
    pub const SCHED_CLS: u32 = 3;
    /// `BPF_PROG_TYPE_SCHED_ACT` (Linux 4.1).
    pub const SCHED_ACT: u32 = 4;
    /// `BPF_PROG_TYPE_TRACEPOINT` (Linux 4.7).
    pub const TRACEPOINT: u32 = 5;
    /// `BPF_PROG_TYPE_XDP` (Linux 4.8).
    pub const XDP: u32 = 6;
    /// `BPF_PROG_TYPE_PERF_EVENT` (Linux 4.9).
    pub const PERF_EVENT: u32 = 7;
    /// `BPF_PROG_TYPE_RAW_TRACEPOINT` (Linux 4.17).
    pub const RAW_TRACEPOINT: u32 = 17;

    /// First kernel release that knows program type `t` (`None` when sluice does not know `t`).
    #[must_use]
    pub const fn min_kernel(t: u32) -> Option<&'static str> {
        Some(match t {
            SOCKET_FILTER => "3.19",
            KPROBE | SCHED_CLS | SCHED_ACT => "4.1",
            TRACEPOINT => "4.7",
            XDP => "4.8",
            PERF_EVENT => "4.9",
            8..=10 => "4.10",
            11..=13 => "4.13",
            14 => "4.14",
            15 => "4.15",
            16 => "4.17",
            RAW_TRACEPOINT..=19 => "4.17",
            20 => "4.18",
            21 => "4.19",
            22 => "4.20",
            23 => "5.2",
            24 => "5.2",
            25 => "5.3",
            26..=29 => "5.5",
            30 => "5.5",
            31 => "5.7",
            32 => "5.9",
            _ => return None,
        })
    }
}

/// `BPF_F_NUMA_NODE`: `numa_node` in [`MapCreateAttr`] is meaningful (Linux 4.14).
pub const BPF_F_NUMA_NODE: u32 = 1 << 2;

/// `BPF_ANY`: create a new element or update an existing one.
pub const BPF_ANY: u64 = 0;
/// `BPF_NOEXIST`: create a new element only if it did not exist.
pub const BPF_NOEXIST: u64 = 1;
/// `BPF_EXIST`: update an existing element only.
pub const BPF_EXIST: u64 = 2;

/// `union bpf_attr` as used by `BPF_MAP_CREATE`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "bpf_attr")]
pub struct MapCreateAttr {
    /// `enum bpf_map_type`.
    pub map_type: u32,
    /// Key size in bytes.
    pub key_size: u32,
    /// Value size in bytes.
    pub value_size: u32,
    /// Maximum number of entries.
    pub max_entries: u32,
    /// `BPF_F_*` creation flags.
    pub map_flags: u32,
    /// Fd of the inner map template (map-in-map types).
    pub inner_map_fd: u32,
    /// NUMA node, read only with [`BPF_F_NUMA_NODE`].
    pub numa_node: u32,
    /// NUL-terminated name: `[A-Za-z0-9_.]`, at most 15 bytes (Linux 4.15).
    pub map_name: [u8; BPF_OBJ_NAME_LEN],
    /// Netdev to offload to.
    pub map_ifindex: u32,
    /// Fd of the BTF describing key and value.
    pub btf_fd: u32,
    /// BTF type id of the key.
    pub btf_key_type_id: u32,
    /// BTF type id of the value.
    pub btf_value_type_id: u32,
    /// BTF type id of a kernel struct stored as value (struct_ops).
    pub btf_vmlinux_value_type_id: u32,
    /// Per-map-type extra (bloom filter hash count).
    pub map_extra: u64,
}

/// `union bpf_attr` as used by `BPF_MAP_{LOOKUP,UPDATE,DELETE}_ELEM` and
/// `BPF_MAP_GET_NEXT_KEY` (`value` doubles as `next_key`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "bpf_attr")]
pub struct MapElemAttr {
    /// Map fd.
    pub map_fd: u32,
    /// Explicit padding (zero).
    pub pad0: u32,
    /// Address of the key.
    pub key: u64,
    /// Address of the value (or of the next key for `GET_NEXT_KEY`).
    pub value: u64,
    /// `BPF_ANY`, `BPF_NOEXIST`, `BPF_EXIST`, `BPF_F_LOCK`.
    pub flags: u64,
}

/// `union bpf_attr` as used by `BPF_PROG_LOAD`, up to `log_true_size` (Linux 6.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "bpf_attr")]
pub struct ProgLoadAttr {
    /// `enum bpf_prog_type`.
    pub prog_type: u32,
    /// Number of 8-byte instructions.
    pub insn_cnt: u32,
    /// Address of the instructions.
    pub insns: u64,
    /// Address of the NUL-terminated licence string.
    pub license: u64,
    /// Verifier log verbosity: 0 none, 1 errors and path, 2 every instruction, 4 stats.
    pub log_level: u32,
    /// Size of the log buffer.
    pub log_size: u32,
    /// Address of the log buffer.
    pub log_buf: u64,
    /// `LINUX_VERSION_CODE` the program was built for (checked for kprobes before 5.0).
    pub kern_version: u32,
    /// `BPF_F_*` load flags.
    pub prog_flags: u32,
    /// NUL-terminated name, like [`MapCreateAttr::map_name`].
    pub prog_name: [u8; BPF_OBJ_NAME_LEN],
    /// Netdev to offload to.
    pub prog_ifindex: u32,
    /// `enum bpf_attach_type` needed at load time by some types.
    pub expected_attach_type: u32,
    /// Fd of the program's BTF.
    pub prog_btf_fd: u32,
    /// Size of one `bpf_func_info` record.
    pub func_info_rec_size: u32,
    /// Address of the `bpf_func_info` records.
    pub func_info: u64,
    /// Number of `bpf_func_info` records.
    pub func_info_cnt: u32,
    /// Size of one `bpf_line_info` record.
    pub line_info_rec_size: u32,
    /// Address of the `bpf_line_info` records.
    pub line_info: u64,
    /// Number of `bpf_line_info` records.
    pub line_info_cnt: u32,
    /// In-kernel BTF type id to attach to.
    pub attach_btf_id: u32,
    /// Program fd (or module BTF fd) to attach to.
    pub attach_prog_fd: u32,
    /// Number of `bpf_core_relo` records.
    pub core_relo_cnt: u32,
    /// Address of an fd array for `BPF_PSEUDO_MAP_IDX`.
    pub fd_array: u64,
    /// Address of the `bpf_core_relo` records.
    pub core_relos: u64,
    /// Size of one `bpf_core_relo` record.
    pub core_relo_rec_size: u32,
    /// Output (Linux 6.4): the log size the verifier needed, NUL included.
    pub log_true_size: u32,
}

/// `union bpf_attr` as used by `BPF_OBJ_GET_INFO_BY_FD`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "bpf_attr")]
pub struct ObjInfoAttr {
    /// Fd of the program, map, BTF or link.
    pub bpf_fd: u32,
    /// In: size of the info buffer; out: bytes the kernel filled.
    pub info_len: u32,
    /// Address of the info buffer.
    pub info: u64,
}

/// `union bpf_attr` as used by `BPF_OBJ_PIN` and `BPF_OBJ_GET` (without `path_fd`, Linux
/// 6.5: paths are absolute).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "bpf_attr")]
pub struct ObjPinAttr {
    /// Address of the NUL-terminated path.
    pub pathname: u64,
    /// `BPF_OBJ_PIN`: the fd to pin; `BPF_OBJ_GET`: 0.
    pub bpf_fd: u32,
    /// `BPF_OBJ_GET`: `BPF_F_RDONLY` / `BPF_F_WRONLY`, or 0.
    pub file_flags: u32,
}

/// The head of `struct bpf_map_info` (`BPF_OBJ_GET_INFO_BY_FD` on a map, Linux 4.13): the
/// kernel fills as much as `info_len` asks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
#[doc(alias = "bpf_map_info")]
pub struct MapInfoRaw {
    /// `BPF_MAP_TYPE_*`.
    pub map_type: u32,
    /// The map's id.
    pub id: u32,
    /// Key size in bytes.
    pub key_size: u32,
    /// Value size in bytes.
    pub value_size: u32,
    /// Maximum number of entries.
    pub max_entries: u32,
    /// `BPF_F_*` creation flags.
    pub map_flags: u32,
    /// The map's name, NUL-padded.
    pub name: [u8; BPF_OBJ_NAME_LEN],
}

/// `union bpf_attr` as used by `BPF_BTF_LOAD`, up to `btf_log_true_size` (Linux 6.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "bpf_attr")]
pub struct BtfLoadAttr {
    /// Address of the raw BTF blob.
    pub btf: u64,
    /// Address of the log buffer.
    pub btf_log_buf: u64,
    /// Size of the BTF blob.
    pub btf_size: u32,
    /// Size of the log buffer.
    pub btf_log_size: u32,
    /// Log verbosity.
    pub btf_log_level: u32,
    /// Output (Linux 6.4): the log size needed.
    pub btf_log_true_size: u32,
}

/// `union bpf_attr` as used by `BPF_LINK_CREATE`, with the `perf_event` / `tracing` union
/// member's `bpf_cookie` (Linux 5.15).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "bpf_attr")]
pub struct LinkCreateAttr {
    /// The program.
    pub prog_fd: u32,
    /// What it attaches to: a perf event fd (`BPF_PERF_EVENT`), 0 for tracing programs.
    pub target_fd: u32,
    /// `enum bpf_attach_type`.
    pub attach_type: u32,
    /// Flags (zero).
    pub flags: u32,
    /// `target_btf_id` for tracing (0: the program's `attach_btf_id`).
    pub target_btf_id: u32,
    /// Explicit padding (zero).
    pub pad0: u32,
    /// `bpf_cookie` (zero).
    pub cookie: u64,
}

/// `BPF_F_UPROBE_MULTI_RETURN`: a `uprobe_multi` link on the functions' returns.
pub const BPF_F_UPROBE_MULTI_RETURN: u32 = 1;

/// `union bpf_attr` as used by `BPF_LINK_CREATE` with `BPF_TRACE_UPROBE_MULTI` (Linux 6.6):
/// its `uprobe_multi` union member.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "bpf_attr")]
pub struct LinkCreateUprobeMultiAttr {
    /// The program.
    pub prog_fd: u32,
    /// Zero.
    pub target_fd: u32,
    /// `BPF_TRACE_UPROBE_MULTI`.
    pub attach_type: u32,
    /// Zero (the link's flags are [`Self::multi_flags`]).
    pub flags: u32,
    /// Address of the binary's NUL-terminated path.
    pub path: u64,
    /// Address of `cnt` file offsets (`u64`).
    pub offsets: u64,
    /// Address of `cnt` semaphore offsets, or 0.
    pub ref_ctr_offsets: u64,
    /// Address of `cnt` BPF cookies, or 0.
    pub cookies: u64,
    /// How many offsets.
    pub cnt: u32,
    /// [`BPF_F_UPROBE_MULTI_RETURN`] or 0.
    pub multi_flags: u32,
    /// Only this process (0: every task).
    pub pid: u32,
    /// Explicit padding (zero).
    pub pad0: u32,
}

/// `union bpf_attr` as used by `BPF_LINK_CREATE` with `BPF_TRACE_KPROBE_MULTI` (Linux 5.18):
/// the `kprobe_multi` union member, functions by name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "bpf_attr")]
pub struct LinkCreateKprobeMultiAttr {
    /// The program.
    pub prog_fd: u32,
    /// Zero.
    pub target_fd: u32,
    /// `BPF_TRACE_KPROBE_MULTI`.
    pub attach_type: u32,
    /// The link's flags (zero).
    pub flags: u32,
    /// [`BPF_F_KPROBE_MULTI_RETURN`] for a return probe.
    pub multi_flags: u32,
    /// Number of functions.
    pub cnt: u32,
    /// Address of `cnt` addresses of NUL-terminated function names.
    pub syms: u64,
    /// Address of `cnt` function addresses (0: `syms` names them).
    pub addrs: u64,
    /// Address of `cnt` BPF cookies, one per function (0: none).
    pub cookies: u64,
}

/// `BPF_F_KPROBE_MULTI_RETURN`: the multi-probe fires on return.
pub const BPF_F_KPROBE_MULTI_RETURN: u32 = 1;

/// `union bpf_attr` as used by `BPF_RAW_TRACEPOINT_OPEN` (without the 6.10 cookie).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "bpf_attr")]
pub struct RawTracepointOpenAttr {
    /// Address of the NUL-terminated tracepoint name; 0 for `tp_btf`, `fentry`, `lsm`
    /// (the program's `attach_btf_id` says where).
    pub name: u64,
    /// The program.
    pub prog_fd: u32,
    /// Explicit padding (zero).
    pub pad0: u32,
}

/// `union bpf_attr` as used by the `*_GET_NEXT_ID` and `*_GET_FD_BY_ID` commands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "bpf_attr")]
pub struct IdAttr {
    /// `start_id` (next id) or the id (fd by id).
    pub id: u32,
    /// Output of `*_GET_NEXT_ID`: the next id.
    pub next_id: u32,
    /// `open_flags` (zero).
    pub open_flags: u32,
    /// Explicit padding (zero).
    pub pad0: u32,
}

/// `struct bpf_btf_info`, as `BPF_OBJ_GET_INFO_BY_FD` fills it for a BTF object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "bpf_btf_info")]
pub struct BtfInfoRaw {
    /// Address of a buffer for the raw BTF (0: not copied).
    pub btf: u64,
    /// In: the buffer's size; out: the BTF's size.
    pub btf_size: u32,
    /// Kernel-wide BTF id.
    pub id: u32,
    /// Address of a buffer for the name (`vmlinux`, a module's name).
    pub name: u64,
    /// In: the name buffer's size; out: the name's length.
    pub name_len: u32,
    /// Whether it is the kernel's or a module's BTF (Linux 5.11).
    pub kernel_btf: u32,
}

/// `struct bpf_prog_info`, as `BPF_OBJ_GET_INFO_BY_FD` fills it (up to Linux 5.16's fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "bpf_prog_info")]
pub struct ProgInfoRaw {
    /// `enum bpf_prog_type`.
    pub prog_type: u32,
    /// Kernel-wide program id.
    pub id: u32,
    /// Tag: truncated SHA-1 of the instructions with map fds zeroed.
    pub tag: [u8; BPF_TAG_SIZE],
    /// Bytes of JITed code.
    pub jited_prog_len: u32,
    /// Bytes of translated (post-verifier) instructions.
    pub xlated_prog_len: u32,
    /// Address to copy JITed code to (0: don't).
    pub jited_prog_insns: u64,
    /// Address to copy translated instructions to (0: don't).
    pub xlated_prog_insns: u64,
    /// Nanoseconds since boot at load.
    pub load_time: u64,
    /// Uid of the loader.
    pub created_by_uid: u32,
    /// Number of maps used (in), filled (out).
    pub nr_map_ids: u32,
    /// Address to copy map ids to (0: don't).
    pub map_ids: u64,
    /// Program name.
    pub name: [u8; BPF_OBJ_NAME_LEN],
    /// Offload netdev.
    pub ifindex: u32,
    /// Bit 0: `gpl_compatible`.
    pub flags: u32,
    /// Offload netns device.
    pub netns_dev: u64,
    /// Offload netns inode.
    pub netns_ino: u64,
    /// Number of JITed symbols.
    pub nr_jited_ksyms: u32,
    /// Number of JITed function lengths.
    pub nr_jited_func_lens: u32,
    /// Address for JITed symbols (0: don't).
    pub jited_ksyms: u64,
    /// Address for JITed function lengths (0: don't).
    pub jited_func_lens: u64,
    /// BTF object id.
    pub btf_id: u32,
    /// Size of one func info record.
    pub func_info_rec_size: u32,
    /// Address for func info (0: don't).
    pub func_info: u64,
    /// Number of func info records.
    pub nr_func_info: u32,
    /// Number of line info records.
    pub nr_line_info: u32,
    /// Address for line info (0: don't).
    pub line_info: u64,
    /// Address for JITed line info (0: don't).
    pub jited_line_info: u64,
    /// Number of JITed line info records.
    pub nr_jited_line_info: u32,
    /// Size of one line info record.
    pub line_info_rec_size: u32,
    /// Size of one JITed line info record.
    pub jited_line_info_rec_size: u32,
    /// Number of program tags.
    pub nr_prog_tags: u32,
    /// Address for program tags (0: don't).
    pub prog_tags: u64,
    /// Total run time (with `kernel.bpf_stats_enabled`).
    pub run_time_ns: u64,
    /// Run count (with `kernel.bpf_stats_enabled`).
    pub run_cnt: u64,
    /// Runs skipped because of recursion.
    pub recursion_misses: u64,
    /// Instructions the verifier processed (Linux 5.16).
    pub verified_insns: u32,
    /// Attach BTF object id.
    pub attach_btf_obj_id: u32,
    /// Attach BTF type id.
    pub attach_btf_id: u32,
    /// Explicit padding (zero).
    pub pad0: u32,
}

/// `PERF_ATTR_SIZE_VER8`: the size of [`PerfEventAttr`] (Linux 6.3, `config3`).
pub const PERF_ATTR_SIZE_VER8: u32 = 136;

/// `struct perf_event_attr`, up to `config3` ([`PERF_ATTR_SIZE_VER8`]).
///
/// `size` must say how many bytes the kernel may read; a kernel older than the struct
/// rejects non-zero fields it does not know with `E2BIG` and writes its own size back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(8))]
#[doc(alias = "perf_event_attr")]
pub struct PerfEventAttr {
    /// `PERF_TYPE_*`, or a dynamic PMU type (`/sys/bus/event_source/devices/*/type`).
    pub type_: u32,
    /// Size of this struct as the caller knows it.
    pub size: u32,
    /// Type-specific event: a tracepoint id for `PERF_TYPE_TRACEPOINT`.
    pub config: u64,
    /// Sample period (or frequency with the `freq` bit).
    pub sample_period: u64,
    /// `PERF_SAMPLE_*` bits: what a sample record carries.
    pub sample_type: u64,
    /// `PERF_FORMAT_*` bits.
    pub read_format: u64,
    /// The bit-field word: see [`attr_flags`].
    pub flags: u64,
    /// Wake up every this many events (or bytes with `watermark`).
    pub wakeup_events: u32,
    /// Breakpoint type.
    pub bp_type: u32,
    /// `config1` (`kprobe_func`/`uprobe_path` address for the kprobe/uprobe PMUs).
    pub config1: u64,
    /// `config2` (probe offset for the kprobe/uprobe PMUs).
    pub config2: u64,
    /// `PERF_SAMPLE_BRANCH_*`.
    pub branch_sample_type: u64,
    /// User registers to dump on samples.
    pub sample_regs_user: u64,
    /// User stack bytes to dump on samples.
    pub sample_stack_user: u32,
    /// Clock for time stamps.
    pub clockid: i32,
    /// Interrupted registers to dump.
    pub sample_regs_intr: u64,
    /// AUX area wakeup watermark.
    pub aux_watermark: u32,
    /// Maximum frames in a callchain.
    pub sample_max_stack: u16,
    /// Reserved (zero).
    pub reserved2: u16,
    /// AUX sample size.
    pub aux_sample_size: u32,
    /// Reserved (zero).
    pub reserved3: u32,
    /// User data for `SIGTRAP`.
    pub sig_data: u64,
    /// `config3`.
    pub config3: u64,
}

impl PerfEventAttr {
    /// An attribute with `size` set and everything else zero.
    #[must_use]
    pub fn new(type_: u32, config: u64) -> Self {
        PerfEventAttr {
            type_,
            size: PERF_ATTR_SIZE_VER8,
            config,
            ..PerfEventAttr::default()
        }
    }
}

/// Bits of [`PerfEventAttr::flags`] (the C bit-field, least significant bit first).
pub mod attr_flags {
    /// Off by default; enable with `PERF_EVENT_IOC_ENABLE`.
    pub const DISABLED: u64 = 1 << 0;
    /// Children inherit it.
    pub const INHERIT: u64 = 1 << 1;
    /// Must always be on the PMU.
    pub const PINNED: u64 = 1 << 2;
    /// Only group on the PMU.
    pub const EXCLUSIVE: u64 = 1 << 3;
    /// Don't count user space.
    pub const EXCLUDE_USER: u64 = 1 << 4;
    /// Don't count the kernel.
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    /// Don't count the hypervisor.
    pub const EXCLUDE_HV: u64 = 1 << 6;
    /// `sample_period` is a frequency.
    pub const FREQ: u64 = 1 << 10;
    /// Enable on `exec`.
    pub const ENABLE_ON_EXEC: u64 = 1 << 12;
    /// `wakeup_events` counts bytes (`wakeup_watermark`).
    pub const WATERMARK: u64 = 1 << 14;
    /// `PERF_RECORD_MMAP` of executable mappings.
    pub const MMAP: u64 = 1 << 8;
    /// `PERF_RECORD_COMM` (a task's name set, by `exec` or `prctl`).
    pub const COMM: u64 = 1 << 9;
    /// `PERF_RECORD_FORK` and `PERF_RECORD_EXIT`.
    pub const TASK: u64 = 1 << 13;
    /// `sample_type` fields on non-sample records too.
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    /// Mappings as `PERF_RECORD_MMAP2` (device, inode, protection).
    pub const MMAP2: u64 = 1 << 23;
    /// Flag the `COMM` of an `exec` (`PERF_RECORD_MISC_COMM_EXEC`).
    pub const COMM_EXEC: u64 = 1 << 24;
}

/// `PERF_TYPE_*` values.
pub mod perf_type {
    /// `PERF_TYPE_HARDWARE`.
    pub const HARDWARE: u32 = 0;
    /// `PERF_TYPE_SOFTWARE`.
    pub const SOFTWARE: u32 = 1;
    /// `PERF_TYPE_TRACEPOINT`: `config` is a tracefs event id.
    pub const TRACEPOINT: u32 = 2;
}

/// `PERF_SAMPLE_RAW`: samples carry the raw record (what `bpf_perf_event_output` writes).
pub const PERF_SAMPLE_RAW: u64 = 1 << 10;
/// `PERF_COUNT_SW_BPF_OUTPUT`: the software event for `bpf_perf_event_output`.
pub const PERF_COUNT_SW_BPF_OUTPUT: u64 = 10;
/// `PERF_COUNT_SW_DUMMY`: a software event that never counts, for side-band records
/// (what perf's `dummy:u` tracking event is).
pub const PERF_COUNT_SW_DUMMY: u64 = 9;
/// `PERF_FLAG_FD_CLOEXEC`: open the event fd close-on-exec.
pub const PERF_FLAG_FD_CLOEXEC: u32 = 1 << 3;

// Layouts, from include/uapi/linux/bpf.h and perf_event.h (offsets the kernel reads).
const _: () = {
    assert!(size_of::<MapCreateAttr>() == 72);
    assert!(offset_of!(MapCreateAttr, map_name) == 28);
    assert!(offset_of!(MapCreateAttr, map_ifindex) == 44);
    assert!(offset_of!(MapCreateAttr, btf_vmlinux_value_type_id) == 60);
    assert!(offset_of!(MapCreateAttr, map_extra) == 64);

    assert!(size_of::<MapElemAttr>() == 32);
    assert!(offset_of!(MapElemAttr, key) == 8);
    assert!(offset_of!(MapElemAttr, value) == 16);
    assert!(offset_of!(MapElemAttr, flags) == 24);

    assert!(size_of::<ProgLoadAttr>() == 144);
    assert!(offset_of!(ProgLoadAttr, insns) == 8);
    assert!(offset_of!(ProgLoadAttr, license) == 16);
    assert!(offset_of!(ProgLoadAttr, log_level) == 24);
    assert!(offset_of!(ProgLoadAttr, log_buf) == 32);
    assert!(offset_of!(ProgLoadAttr, kern_version) == 40);
    assert!(offset_of!(ProgLoadAttr, prog_name) == 48);
    assert!(offset_of!(ProgLoadAttr, prog_ifindex) == 64);
    assert!(offset_of!(ProgLoadAttr, func_info) == 80);
    assert!(offset_of!(ProgLoadAttr, line_info) == 96);
    assert!(offset_of!(ProgLoadAttr, attach_prog_fd) == 112);
    assert!(offset_of!(ProgLoadAttr, fd_array) == 120);
    assert!(offset_of!(ProgLoadAttr, core_relos) == 128);
    assert!(offset_of!(ProgLoadAttr, core_relo_rec_size) == 136);
    assert!(offset_of!(ProgLoadAttr, log_true_size) == 140);

    assert!(size_of::<ObjInfoAttr>() == 16);
    assert!(size_of::<ObjPinAttr>() == 16);
    assert!(size_of::<MapInfoRaw>() == 40);
    assert!(size_of::<BtfLoadAttr>() == 32);
    assert!(offset_of!(BtfLoadAttr, btf_log_true_size) == 28);

    assert!(size_of::<LinkCreateAttr>() == 32);
    assert!(offset_of!(LinkCreateAttr, target_btf_id) == 16);
    assert!(offset_of!(LinkCreateAttr, cookie) == 24);
    assert!(size_of::<LinkCreateUprobeMultiAttr>() == 64);
    assert!(offset_of!(LinkCreateUprobeMultiAttr, path) == 16);
    assert!(offset_of!(LinkCreateUprobeMultiAttr, cookies) == 40);
    assert!(offset_of!(LinkCreateUprobeMultiAttr, cnt) == 48);
    assert!(offset_of!(LinkCreateUprobeMultiAttr, pid) == 56);
    assert!(size_of::<LinkCreateKprobeMultiAttr>() == 48);
    assert!(offset_of!(LinkCreateKprobeMultiAttr, multi_flags) == 16);
    assert!(offset_of!(LinkCreateKprobeMultiAttr, syms) == 24);
    assert!(offset_of!(LinkCreateKprobeMultiAttr, cookies) == 40);
    assert!(size_of::<RawTracepointOpenAttr>() == 16);
    assert!(size_of::<IdAttr>() == 16);
    assert!(size_of::<BtfInfoRaw>() == 32);
    assert!(offset_of!(BtfInfoRaw, name) == 16);
    assert!(offset_of!(BtfInfoRaw, kernel_btf) == 28);

    assert!(size_of::<ProgInfoRaw>() == 232);
    assert!(offset_of!(ProgInfoRaw, tag) == 8);
    assert!(offset_of!(ProgInfoRaw, xlated_prog_len) == 20);
    assert!(offset_of!(ProgInfoRaw, name) == 64);
    assert!(offset_of!(ProgInfoRaw, netns_dev) == 88);
    assert!(offset_of!(ProgInfoRaw, btf_id) == 128);
    assert!(offset_of!(ProgInfoRaw, prog_tags) == 184);
    assert!(offset_of!(ProgInfoRaw, verified_insns) == 216);

    assert!(size_of::<PerfEventAttr>() == PERF_ATTR_SIZE_VER8 as usize);
    assert!(offset_of!(PerfEventAttr, config) == 8);
    assert!(offset_of!(PerfEventAttr, flags) == 40);
    assert!(offset_of!(PerfEventAttr, wakeup_events) == 48);
    assert!(offset_of!(PerfEventAttr, config1) == 56);
    assert!(offset_of!(PerfEventAttr, config2) == 64); // PERF_ATTR_SIZE_VER0 = 64 ends here
    assert!(offset_of!(PerfEventAttr, branch_sample_type) == 72);
    assert!(offset_of!(PerfEventAttr, sample_regs_user) == 80);
    assert!(offset_of!(PerfEventAttr, sample_regs_intr) == 96);
    assert!(offset_of!(PerfEventAttr, aux_watermark) == 104);
    assert!(offset_of!(PerfEventAttr, aux_sample_size) == 112);
    assert!(offset_of!(PerfEventAttr, sig_data) == 120);
    assert!(offset_of!(PerfEventAttr, config3) == 128);
};

/// Copies `name` into a kernel object name: keeps `[A-Za-z0-9_.]`, turns every other byte
/// into `_` (the kernel refuses them), cuts at 15 bytes and NUL-terminates.
#[must_use]
pub fn object_name(name: &str) -> [u8; BPF_OBJ_NAME_LEN] {
    let mut out = [0u8; BPF_OBJ_NAME_LEN];
    for (dst, b) in out.iter_mut().take(BPF_OBJ_NAME_LEN - 1).zip(name.bytes()) {
        *dst = if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' {
            b
        } else {
            b'_'
        };
    }
    out
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

    #[test]
    fn object_names_are_sanitised_and_cut() {
        assert_eq!(&object_name("my_map")[..7], b"my_map\0");
        assert_eq!(&object_name("kprobe/sys_write")[..], b"kprobe_sys_writ\0");
        assert_eq!(object_name("")[0], 0);
        assert_eq!(&object_name("a.b-c")[..6], b"a.b_c\0");
    }

    #[test]
    fn perf_attr_new_sets_size() {
        let a = PerfEventAttr::new(perf_type::TRACEPOINT, 42);
        assert_eq!((a.type_, a.size, a.config, a.flags), (2, 136, 42, 0));
    }

    #[test]
    fn per_cpu_types() {
        assert!(map_type::is_per_cpu(map_type::PERCPU_ARRAY));
        assert!(!map_type::is_per_cpu(map_type::ARRAY));
        assert_eq!(map_type::min_kernel(map_type::RINGBUF), Some("5.8"));
        assert_eq!(prog_type::min_kernel(prog_type::TRACEPOINT), Some("4.7"));
        assert_eq!(prog_type::min_kernel(9999), None);
    }
}
