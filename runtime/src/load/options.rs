//! What [`super::load`] is asked to do: program types, log, prologues, specs, BTF, kconfig.

use super::program::DEFAULT_LOG_SIZE;
use sluice_core::perf::abi::prog_type;
use sluice_core::Insn;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// How to load an object.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct LoadOptions {
    /// Type for programs whose section name implies none (an opaque title): `KPROBE`, as
    /// the seed loaded everything.
    pub default_prog_type: u32,
    /// Force this type on every program, whatever the section says.
    pub prog_type: Option<u32>,
    /// `kern_version` to pass; `None`: the object's `version` section, else the running
    /// kernel's release.
    pub kern_version: Option<u32>,
    /// Verifier log level of the retry after a failure (1; 2 prints every instruction).
    pub log_level: u32,
    /// First log buffer size of the retry.
    pub log_size: usize,
    /// Instructions to put before each program, indexed like
    /// [`Object::programs`](sluice_core::Object::programs) (missing or empty: none).
    pub prologues: Vec<Vec<Insn>>,
    /// A file with DWARF for kernel probes whose arguments name variables (a `vmlinux`, or
    /// a module): `kprobe/generic_perform_write(file->f_mapping->a_ops, bytes)`. Uprobes
    /// look in the binary their spec names (and its build-id / debuglink debug files).
    pub debuginfo: Option<PathBuf>,
    /// Probe specs to use instead of section names, indexed like
    /// [`Object::programs`](sluice_core::Object::programs) (missing or empty: the section
    /// name; several: the program is loaded and attached once per spec). Section names are
    /// fixed when the object is compiled; this gives a program a uprobe path, offset or
    /// argument list known only at run time:
    /// `uprobe//opt/app/bin:process(file->f_mapping->a_ops, bytes)`.
    pub specs: Vec<Vec<String>>,
    /// The object's name, for the kernel names of its global data maps (libbpf's
    /// `<name>.rodata`, the name cut at its first `.`): usually the file name. `None`:
    /// the section name alone (`.rodata`).
    pub object_name: Option<String>,
    /// BTF to resolve CO-RE relocations against (`--btf FILE`); `None`: the running
    /// kernel's, [`crate::load::btf::VMLINUX_BTF`].
    pub target_btf: Option<PathBuf>,
    /// Kernel configuration for `.kconfig` externs (a `.config`, plain or gzipped);
    /// `None`: `/proc/config.gz`, else `/boot/config-$(uname -r)`.
    pub kconfig: Option<PathBuf>,
    /// The programs to load and attach, by function (or section) name (`--prog`); `None`:
    /// every program not written `SEC("?...")`. A name the object lacks is
    /// [`ConfigError::UnknownProgram`](crate::error::ConfigError::UnknownProgram).
    pub programs: Option<Vec<String>>,
    /// Global variables to set before load, `(name, value)` (`--set NAME=VALUE`): written
    /// into their `.rodata*`, `.data*` or `.bss*` map's initial value, checked against
    /// their BTF type ([`sluice_core::btf::encode_value`]).
    pub globals: Vec<(String, String)>,
    /// `max_entries` of maps by name (`--map-size NAME=N`), over the object's.
    pub map_sizes: BTreeMap<String, u32>,
    /// Where maps pinned by name (`LIBBPF_PIN_BY_NAME`) live; `None`: `/sys/fs/bpf`.
    pub pin_root: Option<PathBuf>,
    /// Samples a second of `perf_event` programs (`-F HZ`); `None`:
    /// [`DEFAULT_SAMPLE_FREQ`](crate::attach::DEFAULT_SAMPLE_FREQ).
    pub sample_freq: Option<u64>,
    /// Run as on a kernel without BPF cookies (before 5.15), as libbpf does there:
    /// `LINUX_HAS_BPF_COOKIE` false, so `usdt.bpf.h` finds a site's spec id by its address
    /// in `__bpf_usdt_ip_to_spec_id`, which the attach fills. Such kernels take this path
    /// whatever the option ([`LoadOptions::bpf_cookie`]); the tests take it on any kernel.
    pub without_bpf_cookie: bool,
}

impl LoadOptions {
    /// Whether programs get their BPF cookie: the kernel has them (Linux 5.15:
    /// `bpf_get_attach_cookie` for kprobes and uprobes, `BPF_PERF_EVENT` links) and
    /// [`LoadOptions::without_bpf_cookie`] is off.
    #[must_use]
    pub fn bpf_cookie(&self) -> bool {
        let min = crate::kernel::version::parse_kernel_release("5.15");
        let has = crate::kernel::version::running_kernel_version()
            .zip(min)
            .is_none_or(|(running, min)| running >= min);
        has && !self.without_bpf_cookie
    }
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            default_prog_type: prog_type::KPROBE,
            prog_type: None,
            kern_version: None,
            log_level: 1,
            log_size: DEFAULT_LOG_SIZE,
            prologues: Vec::new(),
            debuginfo: None,
            specs: Vec::new(),
            object_name: None,
            target_btf: None,
            kconfig: None,
            programs: None,
            globals: Vec::new(),
            map_sizes: BTreeMap::new(),
            pin_root: None,
            sample_freq: None,
            without_bpf_cookie: false,
        }
    }
}
