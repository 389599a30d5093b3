//! The `.kconfig` map's value: each extern of the object from the kernel configuration.

use crate::error::{Error, KconfigProblem, Result};
use crate::kernel::version::running_kernel_version;
use sluice_core::object::{KconfigExtern, KconfigKind};

/// The `.kconfig` map's value: each extern from `config` (`CONFIG_X=y|m|n|"str"|number`)
/// or, for `LINUX_KERNEL_VERSION`, the running kernel's version, `LINUX_HAS_BPF_COOKIE`
/// `bpf_cookie` ([`crate::load::LoadOptions::bpf_cookie`]); `size` bytes.
///
/// # Errors
/// [`Error::Kconfig`] naming the extern when a non-weak one is missing, has a value its
/// type cannot hold, or is no Kconfig name libbpf knows.
pub fn kconfig_value(
    externs: &[KconfigExtern<'_>],
    size: u32,
    config: &str,
    bpf_cookie: bool,
) -> Result<Vec<u8>> {
    let mut out = vec![0u8; size as usize];
    for e in externs {
        let bad = |problem| Error::Kconfig {
            name: e.name.to_owned(),
            problem,
        };
        let value: Option<String> = if e.name == "LINUX_KERNEL_VERSION" {
            running_kernel_version().map(|v| v.to_string())
        } else if e.name == "LINUX_HAS_BPF_COOKIE" {
            Some(if bpf_cookie { "y" } else { "n" }.into())
        } else if e.name == "LINUX_HAS_SYSCALL_WRAPPER" {
            // Every kernel sluice runs on (5.15 and later on x86_64/arm64) has it.
            Some("y".into())
        } else if e.name.starts_with("CONFIG_") {
            config.lines().find_map(|l| {
                l.strip_prefix(e.name)
                    .and_then(|r| r.strip_prefix('='))
                    .map(str::to_owned)
            })
        } else {
            return Err(bad(KconfigProblem::Unknown));
        };
        let Some(value) = value else {
            if e.weak {
                continue;
            }
            return Err(bad(KconfigProblem::NotSet));
        };
        let at = e.offset as usize;
        let slot = out
            .get_mut(at..at + e.size as usize)
            .ok_or_else(|| bad(KconfigProblem::OutsideMap))?;
        write_kconfig(slot, e.kind, &value).map_err(|why| {
            bad(KconfigProblem::BadValue {
                value: value.clone(),
                why,
            })
        })?;
    }
    Ok(out)
}

fn write_kconfig(
    slot: &mut [u8],
    kind: KconfigKind,
    value: &str,
) -> std::result::Result<(), &'static str> {
    let tri = match value {
        "y" => Some(b'y'),
        "m" => Some(b'm'),
        "n" => Some(b'n'),
        _ => None,
    };
    match (kind, tri) {
        (KconfigKind::Bool, Some(b'm')) => return Err("m for a bool"),
        (KconfigKind::Bool, Some(c)) => slot.fill(u8::from(c == b'y')),
        (KconfigKind::Tristate, Some(c)) => {
            let v: u32 = match c {
                b'y' => 1,
                b'm' => 2,
                _ => 0,
            };
            let b = v.to_ne_bytes();
            let n = slot.len().min(4);
            if let (Some(d), Some(s)) = (slot.get_mut(..n), b.get(..n)) {
                d.copy_from_slice(s);
            }
        }
        (KconfigKind::Char, Some(c)) => slot.fill(c),
        (KconfigKind::CharArray, _) => {
            let s = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .ok_or("not a string")?;
            let n = s.len().min(slot.len().saturating_sub(1));
            if let (Some(d), Some(src)) = (slot.get_mut(..n), s.as_bytes().get(..n)) {
                d.copy_from_slice(src);
            }
        }
        (KconfigKind::Int { .. } | KconfigKind::Char, None) => {
            let signed = matches!(kind, KconfigKind::Int { signed: true });
            let v: i128 = if let Some(h) = value.strip_prefix("0x") {
                i128::from_str_radix(h, 16).map_err(|_| "not a number")?
            } else {
                value.parse::<i128>().map_err(|_| "not a number")?
            };
            let bits = slot.len() * 8;
            let fits = if signed {
                v >= -(1i128 << (bits - 1)) && v < (1i128 << (bits - 1))
            } else {
                v >= 0 && v < (1i128 << bits)
            };
            if !fits {
                return Err("does not fit the extern's type");
            }
            let b = (v as u64).to_ne_bytes();
            let n = slot.len();
            #[cfg(target_endian = "little")]
            let src = b.get(..n);
            #[cfg(target_endian = "big")]
            let src = b.get(8 - n..);
            if let Some(src) = src {
                slot.copy_from_slice(src);
            }
        }
        _ => return Err("the extern's type cannot hold it"),
    }
    Ok(())
}
