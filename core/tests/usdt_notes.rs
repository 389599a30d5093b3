//! The `.note.stapsdt` reader on a real `sys/sdt.h` binary (`tests/usdt/usdt_demo.c`, built
//! here with `cc`): its probes and sites as `readelf -n` lists them, and every truncation
//! and every flipped byte of the note section an error or a note, never a panic.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::Path;
use std::process::Command;

use sluice_core::elf::Elf;
use sluice_core::usdt::{self, Notes};

fn build() -> Option<Vec<u8>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/usdt");
    let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join("usdt_demo_core");
    let ok = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(src.join("usdt_demo.c"))
        .arg(src.join("usdt_args.c"))
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        let required = std::env::var_os("SLUICE_REQUIRE_KERNEL").is_some_and(|v| v == "1");
        assert!(!required, "cc cannot build usdt_demo (systemtap-sdt-dev?)");
        eprintln!("SKIPPED: cc cannot build usdt_demo (systemtap-sdt-dev?)");
        return None;
    }
    Some(std::fs::read(bin).unwrap())
}

#[test]
fn real_notes_and_hostile_note_bytes() {
    let Some(bytes) = build() else { return };
    let elf = Elf::parse(&bytes).unwrap();
    let notes: Vec<_> = Notes::of(&elf).unwrap().map(Result::unwrap).collect();
    let names: Vec<_> = notes.iter().map(|n| (n.provider, n.name)).collect();
    assert_eq!(
        names,
        [
            ("sluice", "guarded"),
            ("sluice", "args"),
            ("sluice", "args")
        ]
    );
    let args: Vec<_> = usdt::sites(&elf, "sluice", "args")
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(args.len(), 2);
    assert!(args.iter().all(|s| s.semaphore_offset.is_none()));
    let guarded: Vec<_> = usdt::sites(&elf, "sluice", "guarded")
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(guarded.len(), 1);
    assert!(guarded[0].semaphore_offset.is_some());
    assert_eq!(usdt::sites(&elf, "sluice", "none").unwrap().count(), 0);

    // The note section's bytes, cut and flipped.
    let (_, sh) = elf
        .sections()
        .find(|(_, sh)| elf.section_name(sh) == usdt::NOTE_SECTION)
        .unwrap();
    let data = elf.section_data(&sh).to_vec();
    for n in 0..data.len() {
        let cut: Vec<_> = Notes::new(&data[..n], true, 8).collect();
        assert!(cut.len() <= notes.len());
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = data.clone();
            bad[n] ^= flip;
            for note in Notes::new(&bad, true, 8).flatten() {
                assert!(!note.provider.is_empty());
            }
        }
    }
    // The same through the whole file: a flipped byte anywhere in the section.
    let at = sh.offset as usize;
    for n in 0..data.len() {
        let mut file = bytes.clone();
        file[at + n] ^= 0xff;
        if let Ok(elf) = Elf::parse(&file) {
            if let Ok(sites) = usdt::sites(&elf, "sluice", "args") {
                let _ = sites.count();
            }
        }
    }
    // Not a USDT binary: a clear error.
    let plain = std::fs::read("/proc/self/exe").unwrap();
    if let Ok(elf) = Elf::parse(&plain) {
        assert!(matches!(Notes::of(&elf), Err(usdt::Error::NoNotes)));
    }
}
