//! The ring's ABI numbers against the kernel's own header: a C program compiled at test
//! time prints `offsetof(struct perf_event_mmap_page, ...)` and the `PERF_RECORD_*` /
//! `PERF_SAMPLE_*` / `PERF_FORMAT_*` values from `<linux/perf_event.h>`, and each must equal
//! ours. Skips loudly when no C compiler or kernel headers are installed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::HashMap;
use std::process::Command;

use sluice_core::perf::record::{self, read_format, SampleType};
use sluice_runtime::ring;

const PROGRAM: &str = r#"
#include <stddef.h>
#include <stdio.h>
#include <linux/perf_event.h>
#define OFF(f) printf(#f " %zu\n", offsetof(struct perf_event_mmap_page, f))
#define VAL(v) printf(#v " %llu\n", (unsigned long long)(v))
int main(void) {
    OFF(data_head); OFF(data_tail); OFF(data_offset); OFF(data_size);
    VAL(sizeof(struct perf_event_header));
    VAL(PERF_RECORD_LOST); VAL(PERF_RECORD_THROTTLE); VAL(PERF_RECORD_UNTHROTTLE);
    VAL(PERF_RECORD_SAMPLE); VAL(PERF_RECORD_LOST_SAMPLES);
    VAL(PERF_SAMPLE_IP); VAL(PERF_SAMPLE_TID); VAL(PERF_SAMPLE_TIME); VAL(PERF_SAMPLE_ADDR);
    VAL(PERF_SAMPLE_READ); VAL(PERF_SAMPLE_CALLCHAIN); VAL(PERF_SAMPLE_ID);
    VAL(PERF_SAMPLE_CPU); VAL(PERF_SAMPLE_PERIOD); VAL(PERF_SAMPLE_STREAM_ID);
    VAL(PERF_SAMPLE_RAW); VAL(PERF_SAMPLE_IDENTIFIER);
    VAL(PERF_FORMAT_TOTAL_TIME_ENABLED); VAL(PERF_FORMAT_TOTAL_TIME_RUNNING);
    VAL(PERF_FORMAT_ID); VAL(PERF_FORMAT_GROUP);
    return 0;
}
"#;

fn header_values() -> Option<HashMap<String, u64>> {
    let dir = std::env::temp_dir().join(format!("sluice-ring-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("layout.c");
    let bin = dir.join("layout");
    std::fs::write(&src, PROGRAM).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc).arg("-o").arg(&bin).arg(&src).output();
    let out = match built {
        Ok(o) if o.status.success() => Command::new(&bin).output().unwrap(),
        Ok(o) => {
            eprintln!(
                "SKIPPED ring_layout: {cc} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            return None;
        }
        Err(e) => {
            eprintln!("SKIPPED ring_layout: no C compiler ({cc}: {e})");
            return None;
        }
    };
    std::fs::remove_dir_all(&dir).unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    Some(
        text.lines()
            .map(|l| {
                let (k, v) = l.rsplit_once(' ').unwrap();
                (k.to_owned(), v.parse().unwrap())
            })
            .collect(),
    )
}

#[test]
fn ring_abi_matches_linux_perf_event_h() {
    let Some(h) = header_values() else { return };
    let ours: &[(&str, u64)] = &[
        ("data_head", ring::DATA_HEAD_OFFSET as u64),
        ("data_tail", ring::DATA_TAIL_OFFSET as u64),
        ("data_offset", ring::DATA_OFFSET_OFFSET as u64),
        ("data_size", ring::DATA_SIZE_OFFSET as u64),
        (
            "sizeof(struct perf_event_header)",
            record::HEADER_SIZE as u64,
        ),
        ("PERF_RECORD_LOST", record::RECORD_LOST.into()),
        ("PERF_RECORD_THROTTLE", record::RECORD_THROTTLE.into()),
        ("PERF_RECORD_UNTHROTTLE", record::RECORD_UNTHROTTLE.into()),
        ("PERF_RECORD_SAMPLE", record::RECORD_SAMPLE.into()),
        (
            "PERF_RECORD_LOST_SAMPLES",
            record::RECORD_LOST_SAMPLES.into(),
        ),
        ("PERF_SAMPLE_IP", SampleType::IP.0),
        ("PERF_SAMPLE_TID", SampleType::TID.0),
        ("PERF_SAMPLE_TIME", SampleType::TIME.0),
        ("PERF_SAMPLE_ADDR", SampleType::ADDR.0),
        ("PERF_SAMPLE_READ", SampleType::READ.0),
        ("PERF_SAMPLE_CALLCHAIN", SampleType::CALLCHAIN.0),
        ("PERF_SAMPLE_ID", SampleType::ID.0),
        ("PERF_SAMPLE_CPU", SampleType::CPU.0),
        ("PERF_SAMPLE_PERIOD", SampleType::PERIOD.0),
        ("PERF_SAMPLE_STREAM_ID", SampleType::STREAM_ID.0),
        ("PERF_SAMPLE_RAW", SampleType::RAW.0),
        ("PERF_SAMPLE_IDENTIFIER", SampleType::IDENTIFIER.0),
        (
            "PERF_FORMAT_TOTAL_TIME_ENABLED",
            read_format::TOTAL_TIME_ENABLED,
        ),
        (
            "PERF_FORMAT_TOTAL_TIME_RUNNING",
            read_format::TOTAL_TIME_RUNNING,
        ),
        ("PERF_FORMAT_ID", read_format::ID),
        ("PERF_FORMAT_GROUP", read_format::GROUP),
    ];
    for (name, value) in ours {
        assert_eq!(h.get(*name), Some(value), "{name}");
    }
    assert_eq!(h.len(), ours.len());
}
