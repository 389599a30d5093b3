//! sluice's own counters, counted by the record loop and read by scrapes: lock-free, so
//! counting costs the drain an atomic add.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// What a recording has counted so far. Every value only grows (Prometheus counters).
#[derive(Debug, Default)]
pub struct Counters {
    /// The event of each session source, by source index.
    events: Vec<String>,
    /// Samples per source.
    samples: Vec<AtomicU64>,
    /// Lost records per CPU (`None`: a record without its CPU); rare, so a lock.
    lost: Mutex<BTreeMap<Option<u32>, u64>>,
    /// Probes (perf events' programs) attached.
    attached: AtomicU64,
}

impl Counters {
    /// Counters for the sources named `events` (in session source order), with `attached`
    /// programs attached.
    #[must_use]
    pub fn new(events: Vec<String>, attached: u64) -> Counters {
        let samples = events.iter().map(|_| AtomicU64::new(0)).collect();
        Counters {
            events,
            samples,
            attached: AtomicU64::new(attached),
            ..Counters::default()
        }
    }

    /// One sample of source `source`.
    pub fn sample(&self, source: usize) {
        if let Some(c) = self.samples.get(source) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `n` records lost on `cpu`.
    pub fn lost(&self, cpu: Option<u32>, n: u64) {
        let mut lost = self
            .lost
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let at = lost.entry(cpu).or_insert(0);
        *at = at.saturating_add(n);
    }

    /// `(event, samples)` per source.
    pub fn samples(&self) -> impl Iterator<Item = (&str, u64)> {
        self.events
            .iter()
            .zip(&self.samples)
            .map(|(e, c)| (e.as_str(), c.load(Ordering::Relaxed)))
    }

    /// `(cpu, lost)`.
    #[must_use]
    pub fn lost_per_cpu(&self) -> Vec<(Option<u32>, u64)> {
        let lost = self
            .lost
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        lost.iter().map(|(c, n)| (*c, *n)).collect()
    }

    /// Programs attached.
    #[must_use]
    pub fn attached(&self) -> u64 {
        self.attached.load(Ordering::Relaxed)
    }
}
