//! The text of one scrape — OpenMetrics 1.0 for Prometheus, Prometheus text 0.0.4 for the
//! clients that do not ask for it — from sluice's own counters and the families of whatever
//! else is registered ([`Family`]: the objects' maps).
//!
//! The two formats differ in little, and it is all here: OpenMetrics names a counter family
//! without its `_total` (its samples carry it) and ends with `# EOF`; 0.0.4 names the family
//! by its samples' name. Label values escape `\`, `"` and newlines, help texts `\` and
//! newlines (and `"` in OpenMetrics). A histogram is buckets (cumulative, `+Inf` last) and
//! `_count`: a log2 map's slots cannot tell a `_sum`, and none is made up.

use std::fmt::Write as _;
use std::sync::Arc;

use super::Counters;

/// Metric families read at each scrape (a map's keys and values, say).
pub trait Family: std::fmt::Debug + Send + Sync + 'static {
    /// Writes this family's descriptors and samples.
    fn encode(&self, encoder: &mut Encoder<'_>);
}

/// What a family's samples are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only grows (`NAME_total`).
    Counter,
    /// Any value.
    Gauge,
    /// Buckets and a count (`NAME_bucket{le=...}`, `NAME_count`).
    Histogram,
}

/// Writes families into one scrape's text.
#[derive(Debug)]
pub struct Encoder<'a> {
    out: &'a mut String,
    format: Format,
    /// The family being written.
    name: String,
}

impl Encoder<'_> {
    /// Starts family `name` (already [`sanitize`]d) of `kind`, described by `help`.
    pub fn family(&mut self, name: &str, help: &str, kind: Kind) {
        self.name.clear();
        self.name.push_str(name);
        let total = kind == Kind::Counter && self.format == Format::Text;
        let suffix = if total { "_total" } else { "" };
        let _ = write!(self.out, "# HELP {name}{suffix} ");
        for c in help.chars() {
            match c {
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                '"' if self.format == Format::OpenMetrics => self.out.push_str("\\\""),
                c => self.out.push(c),
            }
        }
        let kind = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(self.out, "\n# TYPE {name}{suffix} {kind}");
    }

    /// A counter sample of the current family.
    pub fn counter<L: AsRef<str>>(&mut self, labels: &[(L, L)], value: u64) {
        self.sample("_total", labels, None, value);
    }

    /// A gauge sample of the current family.
    pub fn gauge<L: AsRef<str>>(&mut self, labels: &[(L, L)], value: u64) {
        self.sample("", labels, None, value);
    }

    /// A histogram of the current family: `slots` as (largest value of the slot, its
    /// count), in increasing order.
    pub fn histogram<L: AsRef<str>>(&mut self, labels: &[(L, L)], slots: &[(u64, u64)]) {
        let mut le = String::with_capacity(24);
        let mut total = 0u64;
        for &(hi, n) in slots {
            total = total.saturating_add(n);
            le.clear();
            let _ = write!(le, "{hi}");
            if self.format == Format::OpenMetrics {
                // Thresholds are floats there; written as Prometheus' own clients write them.
                le.push_str(".0");
            }
            self.sample("_bucket", labels, Some(&le), total);
        }
        self.sample("_bucket", labels, Some("+Inf"), total);
        self.sample("_count", labels, None, total);
    }

    fn sample<L: AsRef<str>>(&mut self, suffix: &str, labels: &[(L, L)], le: Option<&str>, v: u64) {
        self.out.push_str(&self.name);
        self.out.push_str(suffix);
        let pairs = labels.iter().map(|(k, v)| (k.as_ref(), v.as_ref()));
        let mut first = true;
        for (k, v) in pairs.chain(le.map(|le| ("le", le))) {
            self.out.push(if first { '{' } else { ',' });
            first = false;
            self.out.push_str(k);
            self.out.push_str("=\"");
            for c in v.chars() {
                match c {
                    '\\' => self.out.push_str("\\\\"),
                    '"' => self.out.push_str("\\\""),
                    '\n' => self.out.push_str("\\n"),
                    c => self.out.push(c),
                }
            }
            self.out.push('"');
        }
        if !first {
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {v}");
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

/// What a scrape encodes: the counters and the registered families.
#[derive(Debug)]
pub struct Exposition {
    counters: Arc<Counters>,
    families: Vec<Box<dyn Family>>,
}

impl Exposition {
    /// An exposition of `counters` and `families`.
    #[must_use]
    pub fn new(counters: Arc<Counters>, families: Vec<Box<dyn Family>>) -> Exposition {
        Exposition { counters, families }
    }

    /// The metrics of this moment in `format`.
    #[must_use]
    pub fn render(&self, format: Format) -> String {
        let mut out = String::with_capacity(4096);
        let mut e = Encoder {
            out: &mut out,
            format,
            name: String::new(),
        };
        let c = &self.counters;
        e.family(
            "sluice_samples",
            "Samples recorded, per event (a probe, tracepoint or bpf-output map).",
            Kind::Counter,
        );
        for (event, n) in c.samples() {
            e.counter(&[("event", event)], n);
        }
        e.family(
            "sluice_lost",
            "Records the kernel could not put in a full ring, per CPU.",
            Kind::Counter,
        );
        for (cpu, n) in c.lost_per_cpu() {
            let cpu = cpu.map_or_else(|| "unknown".to_owned(), |c| c.to_string());
            e.counter(&[("cpu", cpu.as_str())], n);
        }
        e.family(
            "sluice_programs_attached",
            "BPF programs attached.",
            Kind::Gauge,
        );
        e.gauge::<&str>(&[], c.attached());
        for f in &self.families {
            f.encode(&mut e);
        }
        if format == Format::OpenMetrics {
            out.push_str("# EOF\n");
        }
        out
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

    #[derive(Debug)]
    struct Lat;
    impl Family for Lat {
        fn encode(&self, e: &mut Encoder<'_>) {
            e.family("obj_lat", "A \\ \"help\"\nline.", Kind::Histogram);
            e.histogram(&[("key", "0")], &[(1, 2), (3, 0), (7, 5)]);
        }
    }

    #[test]
    fn histograms_have_buckets_and_a_count_but_no_sum() {
        let c = Arc::new(Counters::new(Vec::new(), 0));
        let e = Exposition::new(c, vec![Box::new(Lat)]);
        let plain = e.render(Format::Text);
        let want = "# HELP obj_lat A \\\\ \"help\"\\nline.\n\
                    # TYPE obj_lat histogram\n\
                    obj_lat_bucket{key=\"0\",le=\"1\"} 2\n\
                    obj_lat_bucket{key=\"0\",le=\"3\"} 2\n\
                    obj_lat_bucket{key=\"0\",le=\"7\"} 7\n\
                    obj_lat_bucket{key=\"0\",le=\"+Inf\"} 7\n\
                    obj_lat_count{key=\"0\"} 7\n";
        assert!(plain.ends_with(want), "{plain}");
        let om = e.render(Format::OpenMetrics);
        assert!(
            om.contains("# HELP obj_lat A \\\\ \\\"help\\\"\\nline.\n"),
            "{om}"
        );
        assert!(
            om.contains("obj_lat_bucket{key=\"0\",le=\"3.0\"} 2\n"),
            "{om}"
        );
        assert!(om.ends_with("obj_lat_count{key=\"0\"} 7\n# EOF\n"), "{om}");
        assert!(!om.contains("_sum"), "{om}");
    }
}
