//! The section-name grammar: which probe a program wants and which arguments it fetches.
//!
//! An eBPF object names each program's section; the name says where to attach it. [`parse`]
//! reads one name, zero-copy (every name in the result is a slice of the input) and without
//! allocating (lists live in fixed-capacity [`heapless::Vec`]s; more than fits is an error).
//!
//! # Forms
//!
//! ```text
//! perf (the seed):  [[GROUP:]EVENT=]FUNC[+OFF|:LINE|%return] [ARG ...]
//!                   generic_perform_write=generic_perform_write+122 file->f_mapping->a_ops bytes offset
//!                   lock_page=lock_page        enter=sys_write $outdata:u64
//! libbpf style:     kprobe/FUNC[+OFF|:LINE][(ARG, ...)]        kretprobe/FUNC[(ARG, ...)]
//!                   uprobe/PATH:FUNC[+OFF|:LINE][(ARG, ...)]   uretprobe/PATH:FUNC[(ARG, ...)]
//!                   uprobe/PATH:ADDR (libbpf's raw offset, e.g. 0x1234)
//!                   tracepoint/CAT/NAME   tp/CAT/NAME
//! typed entry args: kprobe/vfs_read(struct file *, char *buf, size_t)
//! ARG:              [NAME=]BASE{.member|->member|[N]}[:TYPE]    BASE: var, %reg, $retval, $err, ...
//!                   [NAME=]{+|-OFF(}BASE{)}[:TYPE]    the kprobe tracer's memory reads, as
//!                   debug info resolves variables: a_ops=+144(+216(+8(%sp))):u64, @0xADDR, \IMM
//! ```
//!
//! `GROUP` may only be `sluice` or `perf_bpf_probe`. Numbers read like `strtoul(_, _, 0)`
//! (`0x` hex, leading `0` octal), as both perf and libbpf read them. An argument list is all
//! expressions or all C types. The first [`MAX_FETCHED_ARGS`] scalar values are passed to the
//! program (the prologue puts them in r2..r5, `$err` included); strings (`:string`,
//! `:ustring`, `$comm`) and the rest, up to [`MAX_RECORDED_ARGS`] arguments, are recorded by
//! the kernel's fetch-args beside the sample ([`Args::is_passed`]).
//!
//! # Titles
//!
//! Any other name is not an error but a [`Section::Title`]: libbpf's program kinds this
//! grammar does not describe (`xdp`, `socket`, `fentry/x`, `cgroup/skb`, `raw_tracepoint/z`,
//! bare `kprobe`), data sections (`license`, `maps`, `.text`), and a **bare identifier**
//! such as `generic_perform_write`. The seed's second series named programs that way and put
//! the probe itself in a separate `config` section; mapping a title to such a definition is
//! the object's business, not the grammar's. A name is read as the perf form only when it
//! does not start with a libbpf-style `prefix/` (`[A-Za-z0-9_.]+/`) and it has an argument
//! (a space) or one of `=`, `+`, `:`, `%` in its first word; from then on, and after a
//! `kprobe/`, `kretprobe/`, `uprobe/`, `uretprobe/`, `tracepoint/` or `tp/` prefix, a
//! malformed name is an error with a column.
//!
//! # Attach points
//!
//! libbpf's other tracing sections (`tp_btf/`, `fentry/`, `fexit/`, `fmod_ret/`, `lsm/`, their
//! `.s` forms, `raw_tp/`, `raw_tracepoint/`, `.w`, `ksyscall/`, `kretsyscall/`,
//! `kprobe.multi/`, `kretprobe.multi/`, `uprobe.multi/`) are titles to [`parse`]; [`attach_point`]
//! reads what they attach to, [`bare_multi`] the kind of a multi-probe prefix alone
//! (`SEC("uprobe.multi")`, loaded as one, attached by hand).
//!
//! # Canonical form
//!
//! [`ProbeSpec`]'s `Display` prints the libbpf-style form when it can say everything (so
//! `f+0 a b` prints as `kprobe/f+0(a, b)`) and the perf form when the spec has an event
//! name, a group or a line number. Either way [`parse`] reads the output back to an equal
//! spec.

mod arg;
mod attach;
mod ctype;
mod cursor;
mod error;
mod grammar;
mod prog_type;
mod spec;
#[cfg(test)]
mod tests;

pub use arg::{Arg, ArgBase, FetchType, Step, MAX_STEPS};
pub use attach::{
    attach_point, attach_types, bare_multi, AttachError, AttachKind, AttachPoint, BPF_F_SLEEPABLE,
};
pub use ctype::{CType, IntWidth, Signedness, TypedArg};
pub use error::ProbeError;
pub use grammar::{parse, validate};
pub use prog_type::{prog_types, program_type, program_type_parsed};
pub use spec::{
    Args, Place, ProbeKind, ProbeSpec, Section, Target, DEFAULT_GROUP, MAX_ARGS, MAX_FETCHED_ARGS,
    MAX_RECORDED_ARGS, PERF_GROUP,
};
