//! The running kernel's version: `KERNEL_VERSION(a, b, c)` from its release string.

/// `KERNEL_VERSION(a, b, c)` from a release string such as `6.18.44-fc-v657`, with `c`
/// capped at 255 as the kernel's own macro does since 4.9.256 (`None` if no `a.b` prefix).
#[must_use]
pub fn parse_kernel_release(release: &str) -> Option<u32> {
    let mut nums = release.split(['.', '-', '+', '_']).map(|p| {
        let digits: &str = p.split(|c: char| !c.is_ascii_digit()).next().unwrap_or("");
        digits.parse::<u32>().ok()
    });
    let a = nums.next()??;
    let b = nums.next()??;
    let c = nums.next().flatten().unwrap_or(0);
    (a <= 255 && b <= 255).then(|| (a << 16) | (b << 8) | c.min(255))
}

/// The running kernel's `KERNEL_VERSION` from `uname -r`.
///
/// In the crate's unit tests, a release set on the calling thread with the syscall fake's
/// `set_kernel_release` is used instead of `uname(2)`'s.
#[must_use]
pub fn running_kernel_version() -> Option<u32> {
    #[cfg(test)]
    if let Some(release) = crate::sys::fake::kernel_release() {
        return parse_kernel_release(&release);
    }
    let u = rustix::system::uname();
    parse_kernel_release(&u.release().to_string_lossy())
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
    fn kernel_releases() {
        let rows = [
            ("6.18.44-fc-v657", Some(0x06122c)),
            ("4.9.337", Some(0x0409ff)),
            ("5.15.0-91-generic", Some(0x050f00)),
            ("6.1", Some(0x060100)),
            ("3.10.0-1160.el7.x86_64", Some(0x030a00)),
            ("6.8.0-rc3", Some(0x060800)),
            ("garbage", None),
            ("", None),
            ("6", None),
        ];
        for (r, v) in rows {
            assert_eq!(parse_kernel_release(r), v, "{r}");
        }
    }

    #[test]
    fn running_kernel_parses() {
        assert!(running_kernel_version().unwrap() >= 0x030000);
    }

    /// The fake's release stands in for `uname(2)` on this thread until its guard drops.
    #[test]
    fn a_fake_release_stands_in_for_uname() {
        let real = running_kernel_version();
        {
            let _release = crate::sys::fake::set_kernel_release("4.4.0-210-generic");
            assert_eq!(running_kernel_version(), Some(0x040400));
        }
        assert_eq!(running_kernel_version(), real);
        let _release = crate::sys::fake::set_kernel_release("garbage");
        assert_eq!(running_kernel_version(), None);
    }
}
