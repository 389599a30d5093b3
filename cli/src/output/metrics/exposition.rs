//! The OpenMetrics text of one scrape, encoded by the Prometheus project's
//! `prometheus-client` (escaping, `_total`, `# EOF`), from sluice's own counters and the
//! families of whatever else is registered ([`Family`]: the objects' maps).

use std::fmt::Write as _;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use super::Counters;

/// Metric families read at each scrape (a map's keys and values, say).
pub trait Family: std::fmt::Debug + Send + Sync + 'static {
    /// Encodes this family's descriptors and samples.
    ///
    /// # Errors
    /// The encoder's.
    fn encode(&self, encoder: &mut DescriptorEncoder<'_>) -> std::fmt::Result;

    /// The name of a histogram of this family whose `_sum` cannot be known (the encoder
    /// writes one; the exposition leaves it out).
    fn without_sum(&self) -> Option<&str> {
        None
    }
}

/// A metric or label name as the format allows it: `[a-zA-Z_][a-zA-Z0-9_]*`, anything
/// else `_` (`:` is kept out: it is for recording rules).
#[must_use]
pub fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    for (i, c) in name.chars().enumerate() {
        match c {
            'a'..='z' | 'A'..='Z' | '_' => out.push(c),
            '0'..='9' if i > 0 => out.push(c),
            '0'..='9' => {
                out.push('_');
                out.push(c);
            }
            _ => out.push('_'),
        }
    }
    if out.is_empty() {
        out.push('_');
    }
    out
}

#[derive(Debug)]
struct Own(Arc<Counters>);

impl Collector for Own {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> std::fmt::Result {
        let c = &self.0;
        let mut e = encoder.encode_descriptor(
            "sluice_samples",
            "Samples recorded, per event (a probe, tracepoint or bpf-output map).",
            None,
            prometheus_client::metrics::MetricType::Counter,
        )?;
        for (event, n) in c.samples() {
            let labels = [("event", event)];
            ConstCounter::new(n).encode(e.encode_family(&labels)?)?;
        }
        let mut e = encoder.encode_descriptor(
            "sluice_lost",
            "Records the kernel could not put in a full ring, per CPU.",
            None,
            prometheus_client::metrics::MetricType::Counter,
        )?;
        for (cpu, n) in c.lost_per_cpu() {
            let cpu = cpu.map_or_else(|| "unknown".to_owned(), |c| c.to_string());
            let labels = [("cpu", cpu.as_str())];
            ConstCounter::new(n).encode(e.encode_family(&labels)?)?;
        }
        let attached = ConstGauge::new(i64::try_from(c.attached()).unwrap_or(i64::MAX));
        attached.encode(encoder.encode_descriptor(
            "sluice_programs_attached",
            "BPF programs attached.",
            None,
            attached.metric_type(),
        )?)?;
        Ok(())
    }
}

#[derive(Debug)]
struct Families(Vec<Box<dyn Family>>);

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|f| f.encode(&mut encoder))
    }
}

/// What a scrape encodes: the counters and the registered families.
#[derive(Debug)]
pub struct Exposition {
    registry: Registry,
    /// `NAME_sum` of histograms whose sum is not known: left out of the text.
    no_sum: Vec<String>,
}

impl Exposition {
    /// An exposition of `counters` and `families`.
    #[must_use]
    pub fn new(counters: Arc<Counters>, families: Vec<Box<dyn Family>>) -> Exposition {
        let mut registry = Registry::default();
        let no_sum = families
            .iter()
            .filter_map(|f| f.without_sum())
            .map(|n| format!("{n}_sum"))
            .collect();
        registry.register_collector(Box::new(Own(counters)));
        registry.register_collector(Box::new(Families(families)));
        Exposition { registry, no_sum }
    }

    /// The metrics of this moment in `format`.
    #[must_use]
    pub fn render(&self, format: Format) -> String {
        let mut out = String::with_capacity(4096);
        match format {
            Format::OpenMetrics => {
                if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
                    // A family that failed mid-way: what was encoded is kept, the end marked.
                    let _ = writeln!(out, "# EOF");
                }
            }
            Format::Text => {
                let _ =
                    prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
            }
        }
        if self.no_sum.is_empty() {
            return out;
        }
        let mut kept = String::with_capacity(out.len());
        for line in out.split_inclusive('\n') {
            let sum = self.no_sum.iter().any(|n| {
                line.strip_prefix(n.as_str())
                    .is_some_and(|rest| rest.starts_with([' ', '{']))
            });
            if !sum {
                kept.push_str(line);
            }
        }
        kept
    }
}

/// The two exposition formats a scraper may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text (`application/openmetrics-text`), what Prometheus asks for.
    OpenMetrics,
    /// Prometheus text 0.0.4 (`text/plain`), for clients that do not ask (curl, promtool).
    Text,
}

impl Format {
    /// The format an `Accept` header value asks for: OpenMetrics when it is named.
    #[must_use]
    pub fn of_accept(accept: &[u8]) -> Format {
        if accept
            .windows(b"application/openmetrics-text".len())
            .any(|w| w.eq_ignore_ascii_case(b"application/openmetrics-text"))
        {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }

    /// Its `Content-Type`.
    #[must_use]
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers() {
        let prom = b"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::of_accept(prom), Format::OpenMetrics);
        assert_eq!(Format::of_accept(b"*/*"), Format::Text);
        assert_eq!(Format::of_accept(b""), Format::Text);
    }

    #[test]
    fn names_are_sanitised() {
        assert_eq!(sanitize("execsnoop.bpf.o"), "execsnoop_bpf_o");
        assert_eq!(sanitize("9lives"), "_9lives");
        assert_eq!(sanitize("a:b-c"), "a_b_c");
        assert_eq!(sanitize(""), "_");
    }

    #[test]
    fn counters_render_as_openmetrics() {
        let c = Arc::new(Counters::new(
            vec!["sluice:p_1_0_f".into(), "bpf-output:\"q\"\n".into()],
            2,
        ));
        c.sample(0);
        c.sample(0);
        c.sample(1);
        c.sample(7);
        c.lost(Some(1), 5);
        c.lost(None, 1);
        let e = Exposition::new(c, Vec::new());
        let plain = e.render(Format::Text);
        assert!(
            plain.contains("# TYPE sluice_samples_total counter\n"),
            "{plain}"
        );
        assert!(!plain.contains("# EOF"), "{plain}");
        let text = e.render(Format::OpenMetrics);
        assert!(text.contains("# TYPE sluice_samples counter\n"), "{text}");
        assert!(
            text.contains("sluice_samples_total{event=\"sluice:p_1_0_f\"} 2\n"),
            "{text}"
        );
        // Label values escaped as the format says.
        assert!(
            text.contains("sluice_samples_total{event=\"bpf-output:\\\"q\\\"\\n\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("sluice_lost_total{cpu=\"1\"} 5\n"), "{text}");
        assert!(
            text.contains("sluice_lost_total{cpu=\"unknown\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("sluice_programs_attached 2\n"), "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
