//! The tracefs files a perf.data file carries in its tracing data, as the kernel wrote
//! them: the ring-buffer page and event headers, the `ftrace` events' formats, the
//! formats of the events recorded, `printk_formats` and `saved_cmdlines`. Read while the
//! events exist (a dynamic probe's format goes with its probe).

use super::error::{io_err, Error};
use super::mount::Tracefs;

/// The raw tracefs texts for `HEADER_TRACING_DATA`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TracingTexts {
    /// `events/header_page`.
    pub header_page: Vec<u8>,
    /// `events/header_event`.
    pub header_event: Vec<u8>,
    /// `events/ftrace/*/format`, by event name.
    pub ftrace: Vec<Vec<u8>>,
    /// The systems of the events asked for, in first-seen order, each with the `format`
    /// of its events in the order asked.
    pub systems: Vec<(String, Vec<Vec<u8>>)>,
    /// `printk_formats` (empty when unreadable).
    pub printk: Vec<u8>,
    /// `saved_cmdlines` (empty when unreadable).
    pub cmdlines: Vec<u8>,
}

impl Tracefs {
    /// The format of event `group/event`, as text.
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be read.
    pub fn event_format_text(&self, group: &str, event: &str) -> Result<Vec<u8>, Error> {
        let path = self
            .root()
            .join("events")
            .join(group)
            .join(event)
            .join("format");
        std::fs::read(&path).map_err(io_err(&path, "read"))
    }

    /// The tracing texts for `events` (`(group, event)` pairs; repeats are read once).
    ///
    /// # Errors
    /// [`Error::Io`] when a header or an event's format cannot be read.
    pub fn tracing_texts(&self, events: &[(&str, &str)]) -> Result<TracingTexts, Error> {
        let read = |rel: &str| -> Result<Vec<u8>, Error> {
            let path = self.root().join(rel);
            std::fs::read(&path).map_err(io_err(&path, "read"))
        };
        let mut t = TracingTexts {
            header_page: read("events/header_page")?,
            header_event: read("events/header_event")?,
            printk: read("printk_formats").unwrap_or_default(),
            cmdlines: read("saved_cmdlines").unwrap_or_default(),
            ..TracingTexts::default()
        };
        let ftrace = self.root().join("events/ftrace");
        if let Ok(dir) = std::fs::read_dir(&ftrace) {
            let mut names: Vec<_> = dir
                .filter_map(|e| e.ok())
                .filter(|e| e.path().join("format").is_file())
                .map(|e| e.file_name())
                .collect();
            names.sort();
            for n in names {
                if let Ok(f) = std::fs::read(ftrace.join(n).join("format")) {
                    t.ftrace.push(f);
                }
            }
        }
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for &(group, event) in events {
            if seen.contains(&(group, event)) {
                continue;
            }
            seen.push((group, event));
            let text = self.event_format_text(group, event)?;
            match t.systems.iter_mut().find(|(g, _)| g == group) {
                Some((_, v)) => v.push(text),
                None => t.systems.push((group.to_owned(), vec![text])),
            }
        }
        Ok(t)
    }
}
