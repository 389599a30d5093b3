//! The encoders against the ring-record parser (a sample written is the sample read) and
//! the layouts perf reads at fixed offsets.

use super::features;
use super::header::{self, FileHeader, Section, ATTR_SIZE, FILE_HEADER_SIZE};
use super::records::{self, IdLayout, SampleId};
use super::{CountSink, Sink, SliceSink};
use crate::error::Error;
use crate::perf::abi::PerfEventAttr;
use crate::perf::record::{Record, SampleFields, SampleFormat, SampleType};

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
}

#[test]
fn a_sample_written_parses_back_the_same() {
    let t = SampleType::IDENTIFIER
        | SampleType::IP
        | SampleType::TID
        | SampleType::TIME
        | SampleType::CPU
        | SampleType::PERIOD
        | SampleType::RAW;
    let f = SampleFields {
        misc: 2,
        identifier: Some(77),
        ip: Some(0x5555_0000_1139),
        pid: Some(10),
        tid: Some(11),
        time: Some(123_456_789),
        cpu: Some(1),
        period: Some(1),
        ..SampleFields::default()
    };
    for raw_len in [0usize, 1, 3, 4, 5, 12, 20, 68, 200] {
        let raw: std::vec::Vec<u8> = (0..raw_len as u8).collect();
        let mut buf = [0u8; 512];
        let mut out = SliceSink::new(&mut buf);
        records::sample(&mut out, t, &f, &raw).unwrap();
        let bytes = out.written();
        assert_eq!(bytes.len() % 8, 0);
        let (rec, size) = Record::parse(bytes, &SampleFormat::new(t), 0).unwrap();
        assert_eq!(size, bytes.len());
        let Record::Sample(s) = rec else {
            panic!("{rec:?}")
        };
        assert_eq!(s.fields, f);
        // RAW keeps its bytes; the padding to 8 is zeros counted in the size, as the
        // kernel pads.
        let got = s.raw.unwrap();
        assert_eq!(&got[..raw_len], &raw[..]);
        assert!(got[raw_len..].iter().all(|&b| b == 0));
        assert_eq!((4 + got.len()) % 8, 0);
    }
}

#[test]
fn what_cannot_be_encoded_is_an_error_not_a_truncation() {
    let mut buf = [0u8; 1 << 17];
    let mut out = SliceSink::new(&mut buf);
    let f = SampleFields::default();
    let big = [0u8; 70_000];
    assert!(matches!(
        records::sample(&mut out, SampleType::RAW, &f, &big),
        Err(Error::Capacity { .. })
    ));
    assert!(matches!(
        records::sample(&mut out, SampleType::READ, &f, &[]),
        Err(Error::Usage { .. })
    ));
    assert!(out.is_empty(), "nothing written on refusal");
    let mut small = [0u8; 12];
    let mut out = SliceSink::new(&mut small);
    assert!(matches!(
        records::finished_round(&mut out).and_then(|()| records::finished_round(&mut out)),
        Err(Error::Capacity { .. })
    ));
    assert!(records::verbatim(&mut CountSink::default(), 3, 0, &[0; 7]).is_err());
}

#[test]
fn side_band_records_end_with_their_sample_id() {
    let layout = IdLayout {
        sample_type: SampleType::IDENTIFIER | SampleType::TID | SampleType::TIME | SampleType::CPU,
        sample_id_all: true,
    };
    let id = SampleId {
        pid: 5,
        tid: 6,
        time: 99,
        id: 1234,
        cpu: 3,
    };
    let mut buf = [0u8; 256];
    let mut out = SliceSink::new(&mut buf);
    records::comm(&mut out, layout, (5, 6), b"worker", true, &id).unwrap();
    let b = out.written();
    // header, pid, tid, "worker\0" padded to 8, then TID TIME CPU IDENTIFIER.
    assert_eq!(b.len(), 8 + 8 + 8 + 32);
    assert_eq!(u16::from_ne_bytes([b[6], b[7]]) as usize, b.len());
    assert_eq!(u16::from_ne_bytes([b[4], b[5]]), records::MISC_COMM_EXEC);
    assert_eq!(&b[16..23], b"worker\0");
    assert_eq!(u64_at(b, b.len() - 8), 1234, "IDENTIFIER last");
    assert_eq!(u64_at(b, b.len() - 24), 99, "TIME");
    assert_eq!(records::sample_id_size(layout.sample_type, true), 32);
    assert_eq!(records::sample_id_size(layout.sample_type, false), 0);
}

#[test]
fn the_file_header_and_attrs_sit_where_perf_reads_them() {
    let mut h = FileHeader {
        attrs: Section {
            offset: 120,
            size: 144,
        },
        data: Section {
            offset: 264,
            size: 4000,
        },
        ..FileHeader::default()
    };
    h.features.set(features::TRACING_DATA);
    h.features.set(features::EVENT_DESC);
    h.features.set(300);
    let mut buf = [0u8; 104];
    let mut out = SliceSink::new(&mut buf);
    h.write(&mut out).unwrap();
    let b = out.written();
    assert_eq!(b.len() as u64, FILE_HEADER_SIZE);
    assert_eq!(&b[..8], b"PERFILE2");
    assert_eq!((u64_at(b, 8), u64_at(b, 16)), (104, 144));
    assert_eq!(
        (u64_at(b, 24), u64_at(b, 40), u64_at(b, 48)),
        (120, 264, 4000)
    );
    assert_eq!(u64_at(b, 72), (1 << 1) | (1 << 12));
    assert_eq!(h.features.iter().collect::<std::vec::Vec<_>>(), [1, 12]);

    let mut a = PerfEventAttr::new(2, 291);
    a.sample_type = 0x1_0586;
    a.flags = 1 | (1 << 18);
    a.wakeup_events = 7;
    let bytes = header::attr_bytes(&a).unwrap();
    assert_eq!(
        u32::from_ne_bytes(bytes[4..8].try_into().unwrap()),
        ATTR_SIZE
    );
    assert_eq!(u64_at(&bytes, 8), 291);
    assert_eq!(u64_at(&bytes, 24), 0x1_0586);
    assert_eq!(u64_at(&bytes, 40), 1 | (1 << 18));
    a.config3 = 1;
    assert!(header::attr_bytes(&a).is_err());
}

#[test]
fn header_strings_and_build_ids_are_padded_as_perf_pads_them() {
    let mut buf = [0u8; 512];
    let mut out = SliceSink::new(&mut buf);
    features::string(&mut out, b"x86_64").unwrap();
    let b = out.written();
    assert_eq!(b.len(), 4 + 64);
    assert_eq!(u32::from_ne_bytes(b[..4].try_into().unwrap()), 64);
    let mut out = SliceSink::new(&mut buf);
    features::build_id(&mut out, 67, false, &[0xab; 20], b"/usr/bin/true").unwrap();
    let b = out.written();
    assert_eq!(b.len(), features::build_id_size(13));
    assert_eq!(b.len(), 36 + 64);
    assert_eq!(b[12 + 20], 20, "the size byte after the id");
    assert_eq!(&b[36..49], b"/usr/bin/true");
    assert!(features::build_id(&mut out, 67, false, &[0; 21], b"x").is_err());
    let mut c = CountSink::default();
    header::header_tracing_data(&mut c, 13).unwrap();
    assert_eq!((c.len, header::tracing_padding(13)), (12, 3));
    let mut c = CountSink::default();
    c.zeros(130).unwrap();
    assert_eq!(c.len, 130);
}
