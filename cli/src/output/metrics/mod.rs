//! `--metrics [ADDR:]PORT`: the recording served as OpenMetrics for Prometheus to scrape,
//! as an exporter on every device in the same binary.
//!
//! ```text
//! record loop ──counts──► Counters (atomics) ◄──read at each scrape── exposition ──► http
//!                                                        maps (their fds) ──┘
//! ```
//!
//! The server has a thread of its own ([`http`]), so a scrape never waits for the ring
//! drain and the drain never waits for a scrape; what it reads is either atomic counters
//! ([`counters`]) or the kernel's maps. Every client costs bounded memory and time.

pub mod counters;
pub mod exposition;
pub mod http;
pub mod maps;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

pub use counters::Counters;
pub use http::{Limits, Server};

/// `PORT` (loopback), `ADDR:PORT` or `[V6ADDR]:PORT` as a socket address.
///
/// # Errors
/// What is wrong with it, for the usage message.
pub fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    text.parse::<SocketAddr>().map_err(|_| {
        format!("--metrics {text}: want PORT, ADDR:PORT or [ADDR]:PORT (e.g. 9435, 0.0.0.0:9435)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(
            parse_addr("9435").map(|a| a.to_string()),
            Ok("127.0.0.1:9435".into())
        );
        assert_eq!(
            parse_addr("0.0.0.0:80").map(|a| a.to_string()),
            Ok("0.0.0.0:80".into())
        );
        assert_eq!(
            parse_addr("[::1]:9").map(|a| a.to_string()),
            Ok("[::1]:9".into())
        );
        assert!(parse_addr("localhost").is_err());
        assert!(parse_addr("70000").is_err());
    }
}
