//! The running kernel's build configuration (`.config`, plain or gzipped).

use crate::error::{Error, Result};
use std::path::PathBuf;

/// The running kernel's configuration: `path`, else `/proc/config.gz`, else
/// `/boot/config-$(uname -r)`; gzip is recognised by its magic.
///
/// # Errors
/// [`Error::Io`] naming every place looked at when none can be read.
pub fn read_kernel_config(path: Option<&std::path::Path>) -> Result<String> {
    let release = rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned();
    let candidates: Vec<PathBuf> = match path {
        Some(p) => vec![p.to_path_buf()],
        None => vec![
            PathBuf::from("/proc/config.gz"),
            PathBuf::from(format!("/boot/config-{release}")),
        ],
    };
    let mut last = None;
    for c in &candidates {
        match std::fs::read(c) {
            Ok(bytes) => return Ok(String::from_utf8_lossy(&gunzip(&bytes, c)?).into_owned()),
            Err(e) => last = Some((c.clone(), e)),
        }
    }
    let (p, source) = last.unwrap_or_else(|| (PathBuf::new(), std::io::ErrorKind::NotFound.into()));
    Err(Error::Io {
        path: format!(
            "kernel configuration for .kconfig externs (tried {})",
            candidates
                .iter()
                .map(|c| c.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ) + &format!("; last: {}", p.display()),
        source,
    })
}

/// `bytes` decompressed if gzip (RFC 1952), else as is.
fn gunzip(bytes: &[u8], path: &std::path::Path) -> Result<Vec<u8>> {
    if bytes.get(..2) != Some(&[0x1f, 0x8b][..]) {
        return Ok(bytes.to_vec());
    }
    let bad = |what: &str| Error::Io {
        path: path.display().to_string(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned()),
    };
    let flags = *bytes.get(3).ok_or_else(|| bad("truncated gzip header"))?;
    let mut at = 10usize;
    if flags & 4 != 0 {
        let xlen = bytes
            .get(at..at + 2)
            .and_then(|b| <[u8; 2]>::try_from(b).ok())
            .map(|b| usize::from(u16::from_le_bytes(b)))
            .ok_or_else(|| bad("truncated gzip extra field"))?;
        at += 2 + xlen;
    }
    for flag in [8u8, 16] {
        if flags & flag != 0 {
            let rest = bytes
                .get(at..)
                .ok_or_else(|| bad("truncated gzip header"))?;
            at += rest
                .iter()
                .position(|&b| b == 0)
                .ok_or_else(|| bad("unterminated gzip name"))?
                + 1;
        }
    }
    if flags & 2 != 0 {
        at += 2;
    }
    let body = bytes
        .get(at..)
        .ok_or_else(|| bad("truncated gzip stream"))?;
    miniz_oxide::inflate::decompress_to_vec(body).map_err(|_| bad("corrupt gzip stream"))
}
