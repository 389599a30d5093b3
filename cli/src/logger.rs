//! `-v` / `-vv`: the runtime's `log` records on stderr (warnings and info with `-v`,
//! debug with `-vv`), the levels of the seed's `libbpf_set_print`.

use log::{Level, LevelFilter, Log, Metadata, Record};

struct Stderr;

impl Log for Stderr {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= log::max_level()
    }
    fn log(&self, r: &Record<'_>) {
        if self.enabled(r.metadata()) {
            let tag = match r.level() {
                Level::Error => "error",
                Level::Warn => "warning",
                Level::Info => "info",
                Level::Debug | Level::Trace => "debug",
            };
            crate::console::say!("sluice: {tag}: {}", r.args());
        }
    }
    fn flush(&self) {}
}

static LOGGER: Stderr = Stderr;

/// Installs the logger for `verbose` repetitions of `-v`.
pub fn init(verbose: u8) {
    let level = match verbose {
        // Failures reach the user as the command's error (with the verifier log in full);
        // repeating the runtime's warnings by default would print everything twice.
        0 => LevelFilter::Error,
        1 => LevelFilter::Info,
        _ => LevelFilter::Debug,
    };
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level);
    }
}
