//! What the header features say about the recording machine and run, read from `/proc`
//! and `/sys`: host name, kernel release, architecture, CPUs, CPU model, command line,
//! and the build ids of the binaries probed.

use sluice_core::elf::Elf;

/// A `/proc` or `/sys` text, trimmed (empty when unreadable).
pub fn text(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// The CPU model (`model name` on x86, else the first of the other names perf looks at).
pub fn cpu_desc() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    for key in ["model name", "Processor", "cpu model", "cpu"] {
        if let Some(v) = info.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_owned())
        }) {
            return v;
        }
    }
    // arm64 prints no model: implementer and part, as perf's cpuid does.
    let field = |key: &str| {
        info.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_owned())
        })
    };
    match (field("CPU implementer"), field("CPU part")) {
        (Some(i), Some(p)) => format!("{} implementer {i} part {p}", std::env::consts::ARCH),
        _ => std::env::consts::ARCH.to_owned(),
    }
}

/// CPUs available (highest present + 1) and online.
pub fn nr_cpus() -> (u32, u32) {
    let online = sluice_runtime::kernel::cpus::online().unwrap_or_default();
    let present =
        sluice_runtime::kernel::cpus::read("/sys/devices/system/cpu/present").unwrap_or_default();
    let avail = present
        .iter()
        .chain(&online)
        .max()
        .map_or(online.len() as u32, |m| m + 1);
    (avail, online.len() as u32)
}

/// The GNU build id of the ELF file at `path`, if it has one.
pub fn build_id(path: &str) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let elf = Elf::parse(&bytes).ok()?;
    elf.build_id().map(<[u8]>::to_vec)
}

/// The running kernel's build id (`/sys/kernel/notes`: its notes, raw).
pub fn kernel_build_id() -> Option<Vec<u8>> {
    let notes = std::fs::read("/sys/kernel/notes").ok()?;
    sluice_core::elf::build_id_in_notes(&notes, cfg!(target_endian = "little")).map(<[u8]>::to_vec)
}

/// The binary of a uprobe definition line of `uprobe_events`
/// (`p:GROUP/EVENT /path/to/bin:0x1139 args`).
pub fn uprobe_binary(definition: &str) -> Option<&str> {
    let place = definition.split_whitespace().nth(1)?;
    let (path, _) = place.rsplit_once(':')?;
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uprobe_definitions_name_their_binary() {
        assert_eq!(
            uprobe_binary("p:sluice/p_1_0_f /usr/bin/true:0x0000000000001139 a=%di:u64"),
            Some("/usr/bin/true")
        );
        assert_eq!(uprobe_binary("p:x"), None);
    }
}
