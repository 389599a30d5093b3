//! Kernel features probed at run time: the BTF kinds the running kernel accepts.

use crate::sys::bpf as sys;
use sluice_core::btf::HEADER_LEN;
use std::sync::OnceLock;

/// BTF kinds the running kernel knows, probed by loading a tiny BTF for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)]
pub struct Features {
    /// VAR and DATASEC (5.2).
    pub datasec: bool,
    /// FUNC and FUNC_PROTO (5.0).
    pub func: bool,
    /// FUNC with global linkage (5.6).
    pub func_global: bool,
    /// FLOAT (5.13).
    pub float: bool,
    /// DECL_TAG (5.16).
    pub decl_tag: bool,
    /// TYPE_TAG (5.17).
    pub type_tag: bool,
    /// ENUM64 (6.0).
    pub enum64: bool,
}

impl Features {
    /// Everything: nothing to sanitise.
    pub const ALL: Features = Features {
        datasec: true,
        func: true,
        func_global: true,
        float: true,
        decl_tag: true,
        type_tag: true,
        enum64: true,
    };
    /// Nothing past 4.18's BTF: every replacement applies.
    pub const NONE: Features = Features {
        datasec: false,
        func: false,
        func_global: false,
        float: false,
        decl_tag: false,
        type_tag: false,
        enum64: false,
    };

    /// What the running kernel accepts (probed once per process).
    #[must_use]
    pub fn probe() -> Features {
        static F: OnceLock<Features> = OnceLock::new();
        *F.get_or_init(|| {
            let ok = |types: &[u32], strings: &[u8]| {
                let blob = tiny_btf(types, strings);
                sys::btf_load(&blob, None).0.is_ok()
            };
            let int = [0, enc(1, 0, 0), 4, 0x20]; // int, 32 bits
            let strs = b"\0a\0.d\0f\0";
            Features {
                datasec: ok(
                    &[
                        &int[..],
                        &[1, enc(14, 0, 0), 1, 1],
                        &[3, enc(15, 1, 0), 4, 2, 0, 4],
                    ]
                    .concat(),
                    strs,
                ),
                func: ok(
                    &[&int[..], &[0, enc(13, 0, 0), 1], &[6, enc(12, 0, 0), 2]].concat(),
                    strs,
                ),
                func_global: ok(
                    &[&int[..], &[0, enc(13, 0, 0), 1], &[6, enc(12, 1, 0), 2]].concat(),
                    strs,
                ),
                float: ok(&[1, enc(16, 0, 0), 4], strs),
                decl_tag: ok(
                    &[
                        &int[..],
                        &[1, enc(14, 0, 0), 1, 1],
                        &[6, enc(17, 0, 0), 2, u32::MAX],
                    ]
                    .concat(),
                    strs,
                ),
                type_tag: ok(
                    &[&int[..], &[6, enc(18, 0, 0), 1], &[0, enc(2, 0, 0), 2]].concat(),
                    strs,
                ),
                enum64: ok(&[1, enc(19, 1, 0), 8, 6, 1, 0], strs),
            }
        })
    }
}

/// `info` of a type record: kind, vlen, kind_flag 0.
pub(crate) const fn enc(kind: u32, vlen: u32, flag: u32) -> u32 {
    (flag << 31) | (kind << 24) | vlen
}

/// A BTF blob from type words and a string section.
fn tiny_btf(types: &[u32], strings: &[u8]) -> Vec<u8> {
    let type_len = (types.len() * 4) as u32;
    let mut b = Vec::new();
    b.extend_from_slice(&0xeb9f_u16.to_ne_bytes());
    b.extend_from_slice(&[1, 0]);
    for w in [HEADER_LEN, 0, type_len, type_len, strings.len() as u32] {
        b.extend_from_slice(&w.to_ne_bytes());
    }
    for w in types {
        b.extend_from_slice(&w.to_ne_bytes());
    }
    b.extend_from_slice(strings);
    b
}
