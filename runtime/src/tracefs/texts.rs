//! The tracefs files a perf.data file carries in its tracing data, as the kernel wrote
//! them: the ring-buffer page and event headers, the formats of the events recorded, `printk_formats` and `saved_cmdlines`. Read while the
//! events exist (a dynamic probe's format goes with its probe).

use std::io::Read as _;
use std::path::Path;

use super::error::{io_err, Error};
use super::mount::Tracefs;

/// Reads a tracefs file whole, with reads of at least 64 KiB: some files (`header_page`,
/// `header_event`) are generated at each `read(2)` and end after the first, so a small
/// first read (`std::fs::read` probes with 32 bytes when the size is unknown) truncates
/// them.
fn read_whole(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 64 << 10];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = f.read(buf.get_mut(len..).unwrap_or_default())?;
        if n == 0 {
            break;
        }
        len += n;
    }
    buf.truncate(len);
    Ok(buf)
}

/// The raw tracefs texts for `HEADER_TRACING_DATA`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TracingTexts {
    /// `events/header_page`.
    pub header_page: Vec<u8>,
    /// `events/header_event`.
    pub header_event: Vec<u8>,
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
        read_whole(&path).map_err(io_err(&path, "read"))
    }

    /// The tracing texts for `events` (`(group, event)` pairs; repeats are read once).
    ///
    /// # Errors
    /// [`Error::Io`] when a header or an event's format cannot be read.
    pub fn tracing_texts(&self, events: &[(&str, &str)]) -> Result<TracingTexts, Error> {
        let read = |rel: &str| -> Result<Vec<u8>, Error> {
            let path = self.root().join(rel);
            read_whole(&path).map_err(io_err(&path, "read"))
        };
        let mut t = TracingTexts {
            header_page: read("events/header_page")?,
            header_event: read("events/header_event")?,
            printk: read("printk_formats").unwrap_or_default(),
            cmdlines: read("saved_cmdlines").unwrap_or_default(),
            ..TracingTexts::default()
        };
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
