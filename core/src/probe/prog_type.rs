//! The program type a section name asks for, the way libbpf's section table decides.

use super::grammar::parse;
use super::spec::{ProbeKind, Section};

/// `BPF_PROG_TYPE_*` values (`enum bpf_prog_type` in `include/uapi/linux/bpf.h`) the section
/// table below uses.
pub mod prog_types {
    /// Socket filter.
    #[doc(alias = "BPF_PROG_TYPE_SOCKET_FILTER")]
    pub const SOCKET_FILTER: u32 = 1;
    /// kprobe, kretprobe, uprobe, uretprobe, ksyscall, usdt.
    #[doc(alias = "BPF_PROG_TYPE_KPROBE")]
    pub const KPROBE: u32 = 2;
    /// tc classifier.
    #[doc(alias = "BPF_PROG_TYPE_SCHED_CLS")]
    pub const SCHED_CLS: u32 = 3;
    /// tc action.
    #[doc(alias = "BPF_PROG_TYPE_SCHED_ACT")]
    pub const SCHED_ACT: u32 = 4;
    /// Tracepoint.
    #[doc(alias = "BPF_PROG_TYPE_TRACEPOINT")]
    pub const TRACEPOINT: u32 = 5;
    /// XDP.
    #[doc(alias = "BPF_PROG_TYPE_XDP")]
    pub const XDP: u32 = 6;
    /// perf event (sampling).
    #[doc(alias = "BPF_PROG_TYPE_PERF_EVENT")]
    pub const PERF_EVENT: u32 = 7;
    /// cgroup skb.
    #[doc(alias = "BPF_PROG_TYPE_CGROUP_SKB")]
    pub const CGROUP_SKB: u32 = 8;
    /// cgroup sock.
    #[doc(alias = "BPF_PROG_TYPE_CGROUP_SOCK")]
    pub const CGROUP_SOCK: u32 = 9;
    /// Lightweight tunnel input.
    #[doc(alias = "BPF_PROG_TYPE_LWT_IN")]
    pub const LWT_IN: u32 = 10;
    /// Lightweight tunnel output.
    #[doc(alias = "BPF_PROG_TYPE_LWT_OUT")]
    pub const LWT_OUT: u32 = 11;
    /// Lightweight tunnel transmit.
    #[doc(alias = "BPF_PROG_TYPE_LWT_XMIT")]
    pub const LWT_XMIT: u32 = 12;
    /// Socket operations.
    #[doc(alias = "BPF_PROG_TYPE_SOCK_OPS")]
    pub const SOCK_OPS: u32 = 13;
    /// sk_skb.
    #[doc(alias = "BPF_PROG_TYPE_SK_SKB")]
    pub const SK_SKB: u32 = 14;
    /// cgroup device.
    #[doc(alias = "BPF_PROG_TYPE_CGROUP_DEVICE")]
    pub const CGROUP_DEVICE: u32 = 15;
    /// sk_msg.
    #[doc(alias = "BPF_PROG_TYPE_SK_MSG")]
    pub const SK_MSG: u32 = 16;
    /// Raw tracepoint.
    #[doc(alias = "BPF_PROG_TYPE_RAW_TRACEPOINT")]
    pub const RAW_TRACEPOINT: u32 = 17;
    /// cgroup sock_addr.
    #[doc(alias = "BPF_PROG_TYPE_CGROUP_SOCK_ADDR")]
    pub const CGROUP_SOCK_ADDR: u32 = 18;
    /// Lightweight tunnel seg6local.
    #[doc(alias = "BPF_PROG_TYPE_LWT_SEG6LOCAL")]
    pub const LWT_SEG6LOCAL: u32 = 19;
    /// LIRC mode2.
    #[doc(alias = "BPF_PROG_TYPE_LIRC_MODE2")]
    pub const LIRC_MODE2: u32 = 20;
    /// SO_REUSEPORT selection.
    #[doc(alias = "BPF_PROG_TYPE_SK_REUSEPORT")]
    pub const SK_REUSEPORT: u32 = 21;
    /// Flow dissector.
    #[doc(alias = "BPF_PROG_TYPE_FLOW_DISSECTOR")]
    pub const FLOW_DISSECTOR: u32 = 22;
    /// cgroup sysctl.
    #[doc(alias = "BPF_PROG_TYPE_CGROUP_SYSCTL")]
    pub const CGROUP_SYSCTL: u32 = 23;
    /// Writable raw tracepoint.
    #[doc(alias = "BPF_PROG_TYPE_RAW_TRACEPOINT_WRITABLE")]
    pub const RAW_TRACEPOINT_WRITABLE: u32 = 24;
    /// cgroup sockopt.
    #[doc(alias = "BPF_PROG_TYPE_CGROUP_SOCKOPT")]
    pub const CGROUP_SOCKOPT: u32 = 25;
    /// fentry, fexit, fmod_ret, tp_btf, iter.
    #[doc(alias = "BPF_PROG_TYPE_TRACING")]
    pub const TRACING: u32 = 26;
    /// struct_ops.
    #[doc(alias = "BPF_PROG_TYPE_STRUCT_OPS")]
    pub const STRUCT_OPS: u32 = 27;
    /// freplace.
    #[doc(alias = "BPF_PROG_TYPE_EXT")]
    pub const EXT: u32 = 28;
    /// LSM hooks.
    #[doc(alias = "BPF_PROG_TYPE_LSM")]
    pub const LSM: u32 = 29;
    /// sk_lookup.
    #[doc(alias = "BPF_PROG_TYPE_SK_LOOKUP")]
    pub const SK_LOOKUP: u32 = 30;
    /// Syscall programs.
    #[doc(alias = "BPF_PROG_TYPE_SYSCALL")]
    pub const SYSCALL: u32 = 31;
    /// Netfilter hooks.
    #[doc(alias = "BPF_PROG_TYPE_NETFILTER")]
    pub const NETFILTER: u32 = 32;
}

use prog_types as t;

/// How a table entry matches a section name.
#[derive(Clone, Copy)]
enum Match {
    /// The name is exactly this.
    Exact,
    /// The name is this, or this followed by `/` and anything (libbpf's `"name+"`).
    Plus,
}

/// libbpf's section table (`section_defs` in `libbpf.c`), in its order: the first match wins.
const TABLE: &[(&str, Match, u32)] = {
    use Match::{Exact as E, Plus as P};
    &[
        ("socket", E, t::SOCKET_FILTER),
        ("sk_reuseport/migrate", E, t::SK_REUSEPORT),
        ("sk_reuseport", E, t::SK_REUSEPORT),
        ("kprobe", P, t::KPROBE),
        ("uprobe", P, t::KPROBE),
        ("uprobe.s", P, t::KPROBE),
        ("kretprobe", P, t::KPROBE),
        ("uretprobe", P, t::KPROBE),
        ("uretprobe.s", P, t::KPROBE),
        ("kprobe.multi", P, t::KPROBE),
        ("kretprobe.multi", P, t::KPROBE),
        ("kprobe.session", P, t::KPROBE),
        ("uprobe.multi", P, t::KPROBE),
        ("uretprobe.multi", P, t::KPROBE),
        ("uprobe.session", P, t::KPROBE),
        ("uprobe.multi.s", P, t::KPROBE),
        ("uretprobe.multi.s", P, t::KPROBE),
        ("uprobe.session.s", P, t::KPROBE),
        ("ksyscall", P, t::KPROBE),
        ("kretsyscall", P, t::KPROBE),
        ("usdt", P, t::KPROBE),
        ("usdt.s", P, t::KPROBE),
        ("tc/ingress", E, t::SCHED_CLS),
        ("tc/egress", E, t::SCHED_CLS),
        ("tcx/ingress", E, t::SCHED_CLS),
        ("tcx/egress", E, t::SCHED_CLS),
        ("tc", E, t::SCHED_CLS),
        ("classifier", E, t::SCHED_CLS),
        ("action", E, t::SCHED_ACT),
        ("netkit/primary", E, t::SCHED_CLS),
        ("netkit/peer", E, t::SCHED_CLS),
        ("tracepoint", P, t::TRACEPOINT),
        ("tp", P, t::TRACEPOINT),
        ("tracepoint.s", P, t::TRACEPOINT),
        ("tp.s", P, t::TRACEPOINT),
        ("raw_tracepoint", P, t::RAW_TRACEPOINT),
        ("raw_tp", P, t::RAW_TRACEPOINT),
        ("raw_tracepoint.s", P, t::RAW_TRACEPOINT),
        ("raw_tp.s", P, t::RAW_TRACEPOINT),
        ("raw_tracepoint.w", P, t::RAW_TRACEPOINT_WRITABLE),
        ("raw_tp.w", P, t::RAW_TRACEPOINT_WRITABLE),
        ("tp_btf", P, t::TRACING),
        ("tp_btf.s", P, t::TRACING),
        ("fentry", P, t::TRACING),
        ("fmod_ret", P, t::TRACING),
        ("fexit", P, t::TRACING),
        ("fentry.s", P, t::TRACING),
        ("fmod_ret.s", P, t::TRACING),
        ("fexit.s", P, t::TRACING),
        ("fsession", P, t::TRACING),
        ("fsession.s", P, t::TRACING),
        ("fentry.multi", P, t::TRACING),
        ("fexit.multi", P, t::TRACING),
        ("fentry.multi.s", P, t::TRACING),
        ("fexit.multi.s", P, t::TRACING),
        ("freplace", P, t::EXT),
        ("lsm", P, t::LSM),
        ("lsm.s", P, t::LSM),
        ("lsm_cgroup", P, t::LSM),
        ("iter", P, t::TRACING),
        ("iter.s", P, t::TRACING),
        ("syscall", E, t::SYSCALL),
        ("xdp.frags/devmap", E, t::XDP),
        ("xdp/devmap", E, t::XDP),
        ("xdp.frags/cpumap", E, t::XDP),
        ("xdp/cpumap", E, t::XDP),
        ("xdp.frags", E, t::XDP),
        ("xdp", E, t::XDP),
        ("perf_event", E, t::PERF_EVENT),
        ("lwt_in", E, t::LWT_IN),
        ("lwt_out", E, t::LWT_OUT),
        ("lwt_xmit", E, t::LWT_XMIT),
        ("lwt_seg6local", E, t::LWT_SEG6LOCAL),
        ("sockops", E, t::SOCK_OPS),
        ("sk_skb/stream_parser", E, t::SK_SKB),
        ("sk_skb/stream_verdict", E, t::SK_SKB),
        ("sk_skb/verdict", E, t::SK_SKB),
        ("sk_skb", E, t::SK_SKB),
        ("sk_msg", E, t::SK_MSG),
        ("lirc_mode2", E, t::LIRC_MODE2),
        ("flow_dissector", E, t::FLOW_DISSECTOR),
        ("cgroup_skb/ingress", E, t::CGROUP_SKB),
        ("cgroup_skb/egress", E, t::CGROUP_SKB),
        ("cgroup/skb", E, t::CGROUP_SKB),
        ("cgroup/sock_create", E, t::CGROUP_SOCK),
        ("cgroup/sock_release", E, t::CGROUP_SOCK),
        ("cgroup/sock", E, t::CGROUP_SOCK),
        ("cgroup/post_bind4", E, t::CGROUP_SOCK),
        ("cgroup/post_bind6", E, t::CGROUP_SOCK),
        ("cgroup/bind4", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/bind6", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/connect4", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/connect6", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/connect_unix", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/sendmsg4", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/sendmsg6", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/sendmsg_unix", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/recvmsg4", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/recvmsg6", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/recvmsg_unix", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/getpeername4", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/getpeername6", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/getpeername_unix", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/getsockname4", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/getsockname6", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/getsockname_unix", E, t::CGROUP_SOCK_ADDR),
        ("cgroup/sysctl", E, t::CGROUP_SYSCTL),
        ("cgroup/getsockopt", E, t::CGROUP_SOCKOPT),
        ("cgroup/setsockopt", E, t::CGROUP_SOCKOPT),
        ("cgroup/dev", E, t::CGROUP_DEVICE),
        ("struct_ops", P, t::STRUCT_OPS),
        ("struct_ops.s", P, t::STRUCT_OPS),
        ("sk_lookup", E, t::SK_LOOKUP),
        ("netfilter", E, t::NETFILTER),
    ]
};

/// The `BPF_PROG_TYPE_*` value (see [`prog_types`]) to load the program in `section` as.
///
/// libbpf's section table decides first (`"kprobe/..."`, `"xdp"`, `"cgroup/skb"`, ... with
/// its matching rules: `kprobe` matches `kprobe` and `kprobe/...` but not `kprobex`; `xdp`
/// matches only `xdp`). A name libbpf does not know but [`parse`] reads as a probe (the
/// seed's perf form, `generic_perform_write=generic_perform_write+122 ...`) is a kprobe, as
/// perf loaded every such program. Anything else (`license`, `maps`, `.text`, a bare
/// identifier) is `None`; so is a perf-form name that does not parse.
#[must_use]
pub fn program_type(section: &str) -> Option<u32> {
    program_type_parsed(section, || match parse(section) {
        Ok(Section::Probe(p)) => Some(p.kind()),
        _ => None,
    })
}

/// [`program_type`] for a caller that has parsed `section` already: `kind` gives the kind
/// of the probe it parses to (`None`: it is no probe spec), asked only when libbpf's table
/// has no entry.
#[must_use]
pub fn program_type_parsed(section: &str, kind: impl FnOnce() -> Option<ProbeKind>) -> Option<u32> {
    for &(name, how, ty) in TABLE {
        let hit = match how {
            Match::Exact => section == name,
            Match::Plus => section
                .strip_prefix(name)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/')),
        };
        if hit {
            return Some(ty);
        }
    }
    match kind() {
        Some(ProbeKind::Tracepoint) => Some(t::TRACEPOINT),
        Some(_) => Some(t::KPROBE),
        None => None,
    }
}
