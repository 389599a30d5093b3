//! The text and JSON output paths allocate nothing per record once warm: a per-thread
//! counting global allocator (`sluice_runtime::sys::alloc_count`) watches the lines a
//! record run makes — bpf-output samples held for pairing and printed raw, records decoded
//! by the object's BTF (perf event array and ring buffer), a pair's words — built in one
//! reused buffer and written through a `BufWriter`, as `record`'s `Lines` writes them.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::io::Write as _;

use sluice_core::perf::record::SampleFields;
use sluice_runtime::ring::SampleEvent;
use sluice_runtime::session::{ObjectSource, Source, SourceKind};
use sluice_runtime::sys::alloc_count::Counting;
use sluice_runtime::tracefs::EventFormat;

use super::pair::{Item, Pairer};
use super::{json, records, text, Comms, Head, Value};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn sources() -> Vec<Source> {
    let format = EventFormat::parse("name: sys_enter_getppid\nID: 1\nformat:\n").unwrap();
    let source = |name: &str, object: &str, kind| Source {
        name: name.into(),
        object: object.into(),
        kind,
    };
    vec![
        // bench_drain.o: a record without a BTF type (hex), paired with the trace event.
        source(
            "bpf-output:pb",
            "bench_drain.o",
            SourceKind::Output { map: "pb".into() },
        ),
        source(
            "syscalls:sys_enter_getppid",
            "bench_drain.o",
            SourceKind::Trace {
                format,
                program: "tp_perf".into(),
            },
        ),
        // bench_ringbuf.o: `struct rec` in its BTF, decoded into fields.
        source(
            "bpf-output:rb",
            "bench_ringbuf.o",
            SourceKind::Output { map: "rb".into() },
        ),
        source(
            "ringbuf:rb",
            "bench_ringbuf.o",
            SourceKind::RingBuf { map: "rb".into() },
        ),
    ]
}

/// One record's line in `buf`, as `record`'s `Lines::item` builds it.
fn line(
    buf: &mut String,
    recs: &mut records::Records<'_>,
    comms: &mut Comms,
    sources: &[Source],
    json_mode: bool,
    item: Item<'_>,
) {
    let Item::One(source, sample) = item else {
        return;
    };
    let src = &sources[source];
    let mut decode = |o: &mut String| recs.fields(o, source, sample.raw, json_mode);
    match &src.kind {
        SourceKind::RingBuf { map } if json_mode => {
            json::record_line(buf, &src.name, map, sample.raw, &mut decode);
        }
        SourceKind::RingBuf { map } => {
            text::record_line(buf, &src.name, map, sample.raw, &mut decode);
        }
        SourceKind::Output { map } => {
            let h = Head {
                comm: comms.get(sample.fields.pid, sample.fields.tid),
                pid: sample.fields.pid,
                tid: sample.fields.tid,
                cpu: sample.fields.cpu,
                time: sample.fields.time,
                event: &src.name,
            };
            if json_mode {
                json::output_line(buf, &h, map, sample.raw, &mut decode);
            } else {
                text::output_line(buf, &h, map, sample.raw, &mut decode);
            }
        }
        SourceKind::Trace { .. } | SourceKind::Hook { .. } => {}
    }
}

#[test]
fn text_and_json_lines_allocate_nothing_per_record() {
    let objects = [
        ObjectSource {
            name: "bench_drain.o".into(),
            bytes: include_bytes!("../../../tests/bpf/bench_drain.o").to_vec(),
        },
        ObjectSource {
            name: "bench_ringbuf.o".into(),
            bytes: include_bytes!("../../../tests/bpf/bench_ringbuf.o").to_vec(),
        },
    ];
    let sources = sources();
    let mut indices = records::Indices::new(&objects);
    let mut recs = records::Records::new(&objects, &mut indices, &sources, &[]).unwrap();
    let mut pairer = Pairer::new(&sources);
    let mut comms = Comms::default();
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::sink());
    let mut buf = String::with_capacity(512);
    let pid = std::process::id();
    let rec = |seq: u64, len: usize| {
        let mut raw: Vec<u8> = [pid, 1].iter().flat_map(|v| v.to_ne_bytes()).collect();
        for v in [seq, 1_000_000 * seq, 0] {
            raw.extend_from_slice(&v.to_ne_bytes());
        }
        raw.resize(len, 0);
        raw
    };
    let sample = |seq: u64, len: usize| SampleEvent {
        ring: 0,
        fields: SampleFields {
            pid: Some(pid),
            tid: Some(pid),
            cpu: Some(1),
            time: Some(1_000 * seq),
            ..SampleFields::default()
        },
        raw: rec(seq, len),
    };
    // The samples as the rings hand them over (perf pads RAW to 36 bytes here).
    let samples: Vec<(usize, SampleEvent)> = (0..256)
        .map(|i| match i % 3 {
            0 => (0, sample(i, 36)),
            1 => (2, sample(i, 36)),
            _ => (3, sample(i, 32)),
        })
        .collect();
    let fields = [("a", Value::Int(-3)), ("b", Value::Hex(16))];
    let mut pass = |json_mode: bool| {
        let before = Counting::allocations();
        for (source, s) in &samples {
            let mut emit = |item: Item<'_>| {
                line(&mut buf, &mut recs, &mut comms, &sources, json_mode, item);
                buf.push('\n');
                out.write_all(buf.as_bytes()).unwrap();
                buf.clear();
            };
            if *source == 0 {
                pairer.push(*source, s.view(), &mut emit);
            } else {
                emit(Item::One(*source, s.view()));
            }
            // A pair's line: the trace sample's fields and the output's words.
            let h = Head {
                comm: "gen",
                pid: Some(pid),
                tid: Some(pid),
                cpu: Some(0),
                time: Some(5),
                event: "sluice:p",
            };
            if json_mode {
                json::pair_line(&mut buf, (&h, Some(1)), &fields, (&h, "pb"), &s.raw);
            } else {
                text::pair_line(&mut buf, (&h, Some(1)), &fields, "pb", &s.raw);
            }
            out.write_all(buf.as_bytes()).unwrap();
            buf.clear();
        }
        Counting::allocations() - before
    };
    // Warm: the first lines size the buffers, learn the process name and decide each
    // record length's type once.
    pass(false);
    pass(true);
    for round in 0..3 {
        assert_eq!(pass(false), 0, "text, round {round}");
        assert_eq!(pass(true), 0, "json, round {round}");
    }
    // The lines are the ones the record output prints (decoded, hex, paired words).
    let mut check = String::new();
    let (_, s) = &samples[1];
    line(
        &mut check,
        &mut recs,
        &mut comms,
        &sources,
        false,
        Item::One(2, s.view()),
    );
    let want = format!(": bpf-output:rb: pid={pid} cpu=1 seq=1 ts=1000000 pad=0");
    assert!(check.ends_with(&want), "{check}");
}
