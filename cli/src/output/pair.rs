//! Side by side: the bpf-output record a program sent and the probe sample of the same hit.
//!
//! A program attached to a trace event that calls `bpf_perf_event_output` and returns 1
//! makes two records per hit: first its output (written while it runs), then the event's
//! own sample (submitted by the kernel after the program accepted it). The record output
//! prints them together.
//!
//! # The pairing rule
//! A bpf-output sample O and a trace sample T are one hit when all hold:
//! - O's map and T's event come from the same object;
//! - same thread id;
//! - T comes after O with no other sample of that thread in between;
//! - `0 <= T.time - O.time <= WINDOW_NS` (1 ms; a hit takes microseconds);
//! - O's payload reads as words (below); an output the object's BTF decodes
//!   ([`super::records`]) is never held: it prints with its field names; nor is one that
//!   `--decode MAP=raw` keeps as hex.
//!
//! An output that may still pair is held back until its thread's next sample, or until a
//! sample more than [`WINDOW_NS`] younger arrives, or the end of the run: then it prints
//! alone, as it would without pairing. Outputs of an object without trace events, and
//! trace samples of an object without outputs, are never held.
//!
//! # Reading the payload
//! The bpf part is printed as 64-bit words (host byte order) when the payload is whole
//! words (perf pads RAW data to 8 bytes with the 4-byte size: the padding must be zero):
//! word `i` is printed like the sample's `i`-th field (signed, unsigned or hex; the
//! kernel's own `__probe_ip` left out), words past the fields as unsigned. A program that
//! sends its prologue's r2..r5 in order so prints the same text as the kernel's fetch-args.
//! Any other payload prints as `data=HEX`.

use sluice_runtime::ring::{SampleEvent, SampleView};
use sluice_runtime::session::{Source, SourceKind};

use super::Value;

/// Longest time from a program's output to its event's sample, in ns.
pub const WINDOW_NS: u64 = 1_000_000;

/// Most outputs held at once (one per thread in flight); past it the oldest prints alone.
pub const MAX_HELD: usize = 4096;

/// What a source can take part in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// A bpf-output of object `n` (which has trace events).
    Output(usize),
    /// A trace event of object `n` (which has outputs).
    Trace(usize),
    /// Never paired.
    Plain,
}

/// A sample and the index of its source in [`Session::sources`](sluice_runtime::session::Session::sources).
pub type Sourced = (usize, SampleEvent);

/// What to print, in order: samples borrowed for the time of the call (only the outputs
/// held back for pairing are copied).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item<'s> {
    /// A sample on its own.
    One(usize, SampleView<'s>),
    /// An output and the trace sample of the same hit.
    Pair {
        /// The bpf-output sample.
        output: (usize, SampleView<'s>),
        /// The trace sample.
        trace: (usize, SampleView<'s>),
    },
}

impl<'s> Item<'s> {
    fn one(s: &'s Sourced) -> Self {
        Item::One(s.0, s.1.view())
    }
}

/// Pairs outputs with trace samples by the rule of the module docs.
#[derive(Debug)]
pub struct Pairer {
    roles: Vec<Role>,
    held: Vec<Sourced>,
    /// Copies printed already, kept for their RAW buffers (no allocation per output held).
    spare: Vec<SampleEvent>,
}

impl Pairer {
    /// A pairer for the sources of a session.
    pub fn new(sources: &[Source]) -> Self {
        let objects: Vec<&str> = {
            let mut v: Vec<&str> = sources.iter().map(|s| s.object.as_str()).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let has = |object: &str, output: bool| {
            sources.iter().any(|s| {
                s.object == object && matches!(s.kind, SourceKind::Output { .. }) == output
            })
        };
        let roles = sources
            .iter()
            .map(|s| {
                let n = objects.binary_search(&s.object.as_str()).unwrap_or(0);
                match s.kind {
                    SourceKind::Output { .. } if has(&s.object, false) => Role::Output(n),
                    SourceKind::Trace { .. } if has(&s.object, true) => Role::Trace(n),
                    _ => Role::Plain,
                }
            })
            .collect();
        Pairer {
            roles,
            held: Vec::new(),
            spare: Vec::new(),
        }
    }

    fn role(&self, source: usize) -> Role {
        self.roles.get(source).copied().unwrap_or(Role::Plain)
    }

    fn take_held(&mut self, tid: Option<u32>) -> Option<Sourced> {
        let at = self.held.iter().position(|(_, s)| s.fields.tid == tid)?;
        Some(self.held.remove(at))
    }

    /// Keeps a printed copy's buffer for the next output held.
    fn recycle(&mut self, s: Sourced) {
        if self.spare.len() < MAX_HELD {
            self.spare.push(s.1);
        }
    }

    /// Takes the next sample of source `source`; hands what can be printed now to `emit`.
    pub fn push(&mut self, source: usize, sample: SampleView<'_>, emit: &mut dyn FnMut(Item<'_>)) {
        // Outputs too old to pair with anything still to come print first, in order.
        if let Some(now) = sample.fields.time {
            while let Some(at) = self.held.iter().position(|(_, s)| {
                s.fields
                    .time
                    .is_none_or(|t| t.saturating_add(WINDOW_NS) < now)
            }) {
                let old = self.held.remove(at);
                emit(Item::one(&old));
                self.recycle(old);
            }
        }
        let earlier = self.take_held(sample.fields.tid);
        match (self.role(source), earlier) {
            (Role::Trace(g), Some(out)) if self.role(out.0) == Role::Output(g) => {
                let close = match (out.1.fields.time, sample.fields.time) {
                    (Some(o), Some(t)) => t.checked_sub(o).is_some_and(|d| d <= WINDOW_NS),
                    _ => false,
                };
                if close {
                    emit(Item::Pair {
                        output: (out.0, out.1.view()),
                        trace: (source, sample),
                    });
                } else {
                    emit(Item::one(&out));
                    emit(Item::One(source, sample));
                }
                self.recycle(out);
            }
            (role, earlier) => {
                if let Some(out) = earlier {
                    emit(Item::one(&out));
                    self.recycle(out);
                }
                if matches!(role, Role::Output(_))
                    && sample.fields.tid.is_some()
                    && pairable(sample.raw)
                {
                    if self.held.len() >= MAX_HELD && !self.held.is_empty() {
                        let old = self.held.remove(0);
                        emit(Item::one(&old));
                        self.recycle(old);
                    }
                    let mut copy = self.spare.pop().unwrap_or_default();
                    sample.copy_into(&mut copy);
                    self.held.push((source, copy));
                } else {
                    emit(Item::One(source, sample));
                }
            }
        }
    }

    /// Prints everything held (at the end of a run).
    pub fn flush(&mut self, emit: &mut dyn FnMut(Item<'_>)) {
        for h in self.held.drain(..) {
            emit(Item::one(&h));
        }
    }
}

/// Whether an output payload may be paired: whole words (module docs).
fn pairable(raw: &[u8]) -> bool {
    whole_words(raw).is_some()
}

/// The payload's words when it is whole words (module docs): not empty, any bytes past the
/// last word zero.
fn whole_words(raw: &[u8]) -> Option<&[u8]> {
    let (body, pad) = raw.split_at_checked(raw.len() / 8 * 8)?;
    (!body.is_empty() && pad.iter().all(|&b| b == 0)).then_some(body)
}

/// The payload as words typed by `fields` (module docs), or `None` when it is not whole
/// words; made one at a time (nothing allocated).
pub fn words<'a>(
    raw: &'a [u8],
    fields: &'a [(&str, Value)],
) -> Option<impl Iterator<Item = Value> + 'a> {
    let body = whole_words(raw)?;
    let mut typed = fields.iter().filter(|(n, _)| *n != "__probe_ip");
    Some(body.chunks_exact(8).map(move |c| {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        let w = u64::from_ne_bytes(b);
        match typed.next().map(|(_, v)| v) {
            Some(Value::Int(_)) => Value::Int(i64::from_ne_bytes(b)),
            Some(Value::Hex(_) | Value::Bytes(_) | Value::Str(_) | Value::List(_)) => Value::Hex(w),
            Some(Value::UInt(_) | Value::Missing) | None => Value::UInt(w),
        }
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use sluice_core::perf::record::SampleFields;
    use sluice_runtime::tracefs::EventFormat;

    fn sources() -> Vec<Source> {
        let format = EventFormat::parse("name: f\nID: 1\nformat:\n").unwrap();
        vec![
            Source {
                name: "bpf-output:out".into(),
                object: "a.o".into(),
                kind: SourceKind::Output { map: "out".into() },
            },
            Source {
                name: "sluice:f".into(),
                object: "a.o".into(),
                kind: SourceKind::Trace {
                    format: format.clone(),
                    program: "p".into(),
                },
            },
            Source {
                name: "sluice:g".into(),
                object: "b.o".into(),
                kind: SourceKind::Trace {
                    format,
                    program: "q".into(),
                },
            },
        ]
    }

    fn s(tid: u32, time: u64) -> SampleEvent {
        SampleEvent {
            fields: SampleFields {
                tid: Some(tid),
                time: Some(time),
                ..SampleFields::default()
            },
            raw: vec![1; 8],
            ..SampleEvent::default()
        }
    }

    /// (source, tid, time) in, then the printed items as strings.
    fn run(input: &[(usize, u32, u64)]) -> Vec<String> {
        let mut p = Pairer::new(&sources());
        let mut got = Vec::new();
        let mut emit = |i: Item<'_>| {
            got.push(match i {
                Item::One(src, s) => format!("{src}@{}", s.fields.time.unwrap()),
                Item::Pair { output, trace } => format!(
                    "{}@{}+{}@{}",
                    output.0,
                    output.1.fields.time.unwrap(),
                    trace.0,
                    trace.1.fields.time.unwrap()
                ),
            });
        };
        for &(src, tid, time) in input {
            p.push(src, s(tid, time).view(), &mut emit);
        }
        p.flush(&mut emit);
        got
    }

    /// (source, tid, time) in, items out.
    type Case<'a> = (&'a [(usize, u32, u64)], &'a [&'a str]);

    #[test]
    fn pairing_rule() {
        let cases: &[Case<'_>] = &[
            // output then its sample: one pair
            (&[(0, 1, 10), (1, 1, 12)], &["0@10+1@12"]),
            // another thread between them does not break the pair
            (
                &[(0, 1, 10), (1, 2, 11), (1, 1, 12)],
                &["1@11", "0@10+1@12"],
            ),
            // another sample of the same thread does
            (
                &[(0, 1, 10), (0, 1, 11), (1, 1, 12)],
                &["0@10", "0@11+1@12"],
            ),
            // a different object's event never pairs
            (&[(0, 1, 10), (2, 1, 12)], &["0@10", "2@12"]),
            // too far apart
            (
                &[(0, 1, 10), (1, 1, 10 + WINDOW_NS + 1)],
                &["0@10", &format!("1@{}", 10 + WINDOW_NS + 1)],
            ),
            // sample before output: not a hit in that order
            (&[(1, 1, 10), (0, 1, 12)], &["1@10", "0@12"]),
            // a stale output prints when something much younger arrives
            (
                &[(0, 1, 10), (1, 2, 10 + 2 * WINDOW_NS)],
                &["0@10", &format!("1@{}", 10 + 2 * WINDOW_NS)],
            ),
        ];
        for (input, want) in cases {
            assert_eq!(run(input), *want, "{input:?}");
        }
    }

    #[test]
    fn words_follow_the_fields() {
        let mut raw = Vec::new();
        for w in [-3i64, 250, 7, 2] {
            raw.extend_from_slice(&w.to_ne_bytes());
        }
        raw.extend_from_slice(&[0; 4]);
        let fields = vec![
            ("__probe_ip", Value::UInt(1)),
            ("a", Value::Int(-3)),
            ("b", Value::UInt(250)),
            ("p", Value::Hex(7)),
        ];
        assert_eq!(
            words(&raw, &fields).unwrap().collect::<Vec<_>>(),
            vec![
                Value::Int(-3),
                Value::UInt(250),
                Value::Hex(7),
                Value::UInt(2)
            ]
        );
        assert!(words(b"abc\0", &fields).is_none());
        assert_eq!(
            words(&[0; 9][..], &fields).unwrap().collect::<Vec<_>>(),
            vec![Value::Int(0)]
        );
        let mut bad = raw.clone();
        bad.push(1);
        assert!(words(&bad, &fields).is_none());
        assert!(pairable(&raw));
        // No text guessed from the bytes: whole words pair (an output the object's BTF
        // decodes is kept out of pairing by the caller, see records).
        assert!(pairable(b"/etc/passwd\0\0\0\0\0"));
        assert!(!pairable(b"abc"));
    }
}
