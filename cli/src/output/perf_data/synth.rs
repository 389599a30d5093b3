//! The records perf synthesizes from `/proc` at the start of a recording, for tasks
//! that exist before the events do: a `COMM` per thread, a `FORK` per thread that is not
//! its process's leader, and an `MMAP2` per executable mapping of each process (what
//! `perf report` resolves sample addresses to symbols with). Their sample id is all
//! zeros, as perf writes them: a reader files them under the first event and sorts them
//! before every sample. A task that vanishes while it is read is skipped.

use sluice_core::perf::data::records::{self, IdLayout, Mapping, SampleId, Task, MISC_USER};

use super::Buf;

/// Synthesizes the records of process `pid` and its threads into `out`.
pub fn process(out: &mut Buf, layout: IdLayout, pid: u32) -> Result<(), sluice_core::Error> {
    let zero = SampleId::default();
    let mut tids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    if tids.is_empty() {
        return Ok(());
    }
    tids.sort_unstable();
    for &tid in &tids {
        let Ok(comm) = std::fs::read(format!("/proc/{pid}/task/{tid}/comm")) else {
            continue;
        };
        let comm = comm.strip_suffix(b"\n").unwrap_or(&comm);
        if tid != pid {
            let t = Task {
                pid,
                ppid: pid,
                tid,
                ptid: pid,
                time: 0,
            };
            records::task(out, layout, false, &t, &zero)?;
        }
        records::comm(out, layout, (pid, tid), comm, false, &zero)?;
    }
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return Ok(());
    };
    for line in maps.lines() {
        if let Some(m) = mapping(pid, line) {
            records::mmap2(out, layout, MISC_USER, &m, &zero)?;
        }
    }
    Ok(())
}

/// An executable mapping of a `/proc/PID/maps` line: `START-END PERMS OFFSET MAJ:MIN INODE
/// [PATH]` (an anonymous one is `//anon`, as perf names it).
fn mapping(pid: u32, line: &str) -> Option<Mapping<'_>> {
    let mut f = line.splitn(6, ' ');
    let (range, perms, off, dev, inode) = (f.next()?, f.next()?, f.next()?, f.next()?, f.next()?);
    let path = f.next().map(str::trim_start).unwrap_or("");
    let p = perms.as_bytes();
    if p.get(2) != Some(&b'x') {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let (start, end) = (
        u64::from_str_radix(start, 16).ok()?,
        u64::from_str_radix(end, 16).ok()?,
    );
    let (maj, min) = dev.split_once(':')?;
    let prot = [(0, 1u32), (1, 2), (2, 4)]
        .iter()
        .filter(|(i, _)| p.get(*i).is_some_and(|c| *c != b'-'))
        .fold(0, |a, (_, b)| a | b);
    Some(Mapping {
        pid,
        tid: pid,
        addr: start,
        len: end.checked_sub(start)?,
        pgoff: u64::from_str_radix(off, 16).ok()?,
        maj: u32::from_str_radix(maj, 16).ok()?,
        min: u32::from_str_radix(min, 16).ok()?,
        ino: inode.parse().ok()?,
        prot,
        // MAP_SHARED 1, MAP_PRIVATE 2.
        flags: if p.get(3) == Some(&b's') { 1 } else { 2 },
        filename: if path.is_empty() {
            b"//anon"
        } else {
            path.as_bytes()
        },
    })
}

/// The kernel's map, as perf synthesizes it: `[kernel.kallsyms]_text` from `_text` on
/// (`pgoff` = the address of `_text`, by which a reader relocates the kernel's symbols).
/// Nothing when `/proc/kallsyms` hides addresses.
pub fn kernel(out: &mut Buf, layout: IdLayout) -> Result<u64, sluice_core::Error> {
    let text = sluice_runtime::kernel::kallsyms::lookup(&["_text"])
        .ok()
        .and_then(|v| v.first().copied().flatten())
        .filter(|a| *a != 0);
    let Some(start) = text else {
        return Ok(0);
    };
    let m = Mapping {
        pid: u32::MAX,
        tid: 0,
        addr: start,
        len: u64::MAX - start,
        pgoff: start,
        filename: b"[kernel.kallsyms]_text",
        ..Mapping::default()
    };
    records::mmap(out, layout, records::MISC_KERNEL, &m, &SampleId::default())?;
    Ok(1)
}

/// Every process of the machine (system-wide recordings).
pub fn all_pids() -> Vec<u32> {
    let mut v: Vec<u32> = std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_become_mappings() {
        let m = mapping(
            7,
            "55d0c0a00000-55d0c0a21000 r-xp 00002000 fd:01 1234   /usr/bin/cat",
        );
        let m = m.unwrap_or_default();
        assert_eq!(
            (m.addr, m.len, m.pgoff),
            (0x55d0_c0a0_0000, 0x21000, 0x2000)
        );
        assert_eq!(
            (m.maj, m.min, m.ino, m.prot, m.flags),
            (0xfd, 1, 1234, 5, 2)
        );
        assert_eq!(m.filename, b"/usr/bin/cat");
        assert!(mapping(7, "7f00-7f10 rw-p 00000000 00:00 0").is_none());
        let anon = mapping(7, "7f00-7f10 r-xp 00000000 00:00 0 ");
        assert_eq!(anon.map(|m| m.filename), Some(&b"//anon"[..]));
        assert!(mapping(7, "garbage").is_none());
    }
}
