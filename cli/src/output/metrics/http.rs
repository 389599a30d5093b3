//! The `/metrics` endpoint: HTTP/1.1 on a thread of its own, one `poll(2)` loop over the
//! listener and at most [`Limits::connections`] clients, each with a byte and a time budget.
//!
//! A client that never sends its request, sends a header larger than
//! [`Limits::request_bytes`], or never reads its answer is closed when its budget runs out;
//! when every slot is taken, the client that has waited longest without a complete request
//! makes room for the new one, so idle connections cannot lock a scraper out. Memory is at
//! most `connections × (request_bytes + one exposition)`. One request per connection
//! (`Connection: close`), as Prometheus is served by simple exporters.

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};

use super::exposition::{Exposition, Format};

/// What one client may cost.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Clients served at once.
    pub connections: usize,
    /// The request line and headers, in bytes.
    pub request_bytes: usize,
    /// From accept to the end of the request.
    pub request_time: Duration,
    /// From the end of the request to the last byte of the answer.
    pub answer_time: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connections: 64,
            request_bytes: 8192,
            request_time: Duration::from_secs(10),
            answer_time: Duration::from_secs(10),
        }
    }
}

/// What the server has done, for sluice's summary and tests.
#[derive(Debug, Default)]
pub struct Stats {
    /// Requests answered with the metrics.
    pub scrapes: AtomicU64,
    /// Clients closed for running out of a budget or making room.
    pub dropped: AtomicU64,
}

/// A running `/metrics` server; dropping it stops the thread and closes every client.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    stats: Arc<Stats>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` and serves `exposition` from a new thread.
    ///
    /// # Errors
    /// The bind's (address in use, not permitted) or the thread's.
    pub fn start(
        addr: SocketAddr,
        exposition: Exposition,
        limits: Limits,
    ) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Stats::default());
        let (s, st) = (Arc::clone(&stop), Arc::clone(&stats));
        let thread = std::thread::Builder::new()
            .name("sluice-metrics".into())
            .spawn(move || serve(&listener, &exposition, limits, &s, &st))?;
        Ok(Server {
            addr,
            stop,
            stats,
            thread: Some(thread),
        })
    }

    /// The address it listens on (the port chosen when 0 was asked).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// What it has done.
    #[must_use]
    pub fn stats(&self) -> &Stats {
        &self.stats
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One client.
struct Client {
    stream: TcpStream,
    /// When its current budget (request, then answer) runs out.
    deadline: Instant,
    state: State,
}

enum State {
    /// Reading the request into the buffer.
    Reading(Vec<u8>),
    /// Writing `answer` from `at`.
    Writing { answer: Vec<u8>, at: usize },
}

/// How often the loop looks at the stop flag and the budgets when nothing happens.
const TICK: Duration = Duration::from_millis(100);

fn serve(
    listener: &TcpListener,
    exposition: &Exposition,
    limits: Limits,
    stop: &AtomicBool,
    stats: &Stats,
) {
    let mut clients: Vec<Client> = Vec::with_capacity(limits.connections);
    while !stop.load(Ordering::Relaxed) {
        let ready = {
            let mut fds = Vec::with_capacity(clients.len() + 1);
            fds.push(PollFd::new(listener, PollFlags::IN));
            for c in &clients {
                let flags = match c.state {
                    State::Reading(_) => PollFlags::IN,
                    State::Writing { .. } => PollFlags::OUT,
                };
                fds.push(PollFd::new(&c.stream, flags));
            }
            let tick = rustix::time::Timespec {
                tv_sec: 0,
                tv_nsec: i64::from(u32::try_from(TICK.as_nanos()).unwrap_or(100_000_000)),
            };
            match rustix::event::poll(&mut fds, Some(&tick)) {
                Ok(_) => fds
                    .iter()
                    .map(|f| !f.revents().is_empty())
                    .collect::<Vec<_>>(),
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return,
            }
        };
        let now = Instant::now();
        // Clients first (their indices are those of this poll), then new ones.
        let mut ready_of = ready.iter().skip(1);
        clients.retain_mut(|c| {
            let is_ready = ready_of.next().copied().unwrap_or(false);
            let keep = if is_ready {
                step(c, exposition, limits, stats)
            } else {
                true
            };
            if keep && now > c.deadline {
                stats.dropped.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            keep
        });
        if ready.first().copied().unwrap_or(false) {
            accept(listener, &mut clients, limits, stats);
        }
    }
}

fn accept(listener: &TcpListener, clients: &mut Vec<Client>, limits: Limits, stats: &Stats) {
    // At most one slot's worth of new clients per round, so a flood cannot spin here.
    for _ in 0..limits.connections.max(1) {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(_) => return,
        };
        if stream.set_nonblocking(true).is_err() {
            continue;
        }
        if clients.len() >= limits.connections {
            // Room is made by the client waiting longest without a complete request; with
            // none (all are being answered), the new one is turned away.
            let oldest = clients
                .iter()
                .enumerate()
                .filter(|(_, c)| matches!(c.state, State::Reading(_)))
                .min_by_key(|(_, c)| c.deadline)
                .map(|(i, _)| i);
            stats.dropped.fetch_add(1, Ordering::Relaxed);
            match oldest {
                Some(i) => {
                    clients.swap_remove(i);
                }
                None => continue,
            }
        }
        clients.push(Client {
            stream,
            deadline: Instant::now() + limits.request_time,
            state: State::Reading(Vec::with_capacity(1024)),
        });
    }
}

/// Moves one client on; `false` when it is done (answered, gone or over budget).
fn step(c: &mut Client, exposition: &Exposition, limits: Limits, stats: &Stats) -> bool {
    match &mut c.state {
        State::Reading(buf) => {
            let mut chunk = [0u8; 2048];
            let n = match c.stream.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => n,
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted =>
                {
                    return true
                }
                Err(_) => return false,
            };
            let room = limits.request_bytes.saturating_sub(buf.len());
            buf.extend_from_slice(chunk.get(..n.min(room)).unwrap_or_default());
            let answer = match head_end(buf) {
                Some(end) => answer(buf.get(..end).unwrap_or_default(), exposition, stats),
                None if n > room || buf.len() >= limits.request_bytes => status(
                    431,
                    "Request Header Fields Too Large",
                    "request header too large\n",
                ),
                None => return true,
            };
            let _ = c.stream.shutdown(std::net::Shutdown::Read);
            c.state = State::Writing { answer, at: 0 };
            c.deadline = Instant::now() + limits.answer_time;
            write_some(c)
        }
        State::Writing { .. } => write_some(c),
    }
}

fn write_some(c: &mut Client) -> bool {
    let State::Writing { answer, at } = &mut c.state else {
        return true;
    };
    loop {
        let Some(rest) = answer.get(*at..).filter(|r| !r.is_empty()) else {
            return false;
        };
        match c.stream.write(rest) {
            Ok(0) => return false,
            Ok(n) => *at += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// Where the header ends (after its blank line).
fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

/// The answer to a complete request head.
fn answer(head: &[u8], exposition: &Exposition, stats: &Stats) -> Vec<u8> {
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let mut parts = line.split(|&b| b == b' ');
    let (method, target) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let path = target.split(|&b| b == b'?').next().unwrap_or_default();
    match (method, path) {
        (b"GET" | b"HEAD", b"/metrics") => {
            stats.scrapes.fetch_add(1, Ordering::Relaxed);
            let format = Format::of_accept(header(head, b"accept").unwrap_or_default());
            let body = exposition.render(format);
            let mut out = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                format.content_type(),
                body.len()
            )
            .into_bytes();
            if method == b"GET" {
                out.extend_from_slice(body.as_bytes());
            }
            out
        }
        (b"GET" | b"HEAD", b"/") => status(200, "OK", "sluice: metrics at /metrics\n"),
        (b"GET" | b"HEAD", _) => status(404, "Not Found", "not found: metrics are at /metrics\n"),
        _ => status(405, "Method Not Allowed", "only GET\n"),
    }
}

/// The value of header `name` (lower case) in a request head.
fn header<'h>(head: &'h [u8], name: &[u8]) -> Option<&'h [u8]> {
    head.split(|&b| b == b'\n').skip(1).find_map(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&b| b == b':')?;
        let (key, value) = line.split_at(colon);
        key.eq_ignore_ascii_case(name)
            .then(|| value.get(1..).unwrap_or_default().trim_ascii())
    })
}

fn status(code: u16, reason: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::Counters;
    use super::*;

    fn server(limits: Limits) -> Server {
        let c = Arc::new(Counters::new(vec!["e".into()], 1));
        c.sample(0);
        let addr = "127.0.0.1:0".parse().unwrap();
        Server::start(addr, Exposition::new(c, Vec::new()), limits).unwrap()
    }

    fn get(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(request).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn answers_metrics_and_refuses_the_rest() {
        let s = server(Limits::default());
        let a = s.local_addr();
        let ok = get(
            a,
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nACCEPT: application/openmetrics-text\r\n\r\n",
        );
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("sluice_samples_total{event=\"e\"} 1\n"), "{ok}");
        assert!(ok.ends_with("# EOF\n"), "{ok}");
        assert!(get(a, b"GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(a, b"POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        let plain = get(a, b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(
            plain.contains("Content-Type: text/plain; version=0.0.4"),
            "{plain}"
        );
        assert_eq!(s.stats().scrapes.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn a_huge_header_is_refused_and_idle_clients_make_room() {
        let limits = Limits {
            connections: 4,
            request_bytes: 1024,
            request_time: Duration::from_secs(30),
            answer_time: Duration::from_secs(30),
        };
        let s = server(limits);
        let a = s.local_addr();
        let mut big = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        big.resize(64 * 1024, b'a');
        let mut st = TcpStream::connect(a).unwrap();
        st.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = st.write_all(&big);
        let mut out = String::new();
        let _ = st.read_to_string(&mut out);
        assert!(out.starts_with("HTTP/1.1 431"), "{out}");
        // Twenty clients that never send anything, then a scraper: served.
        let idle: Vec<_> = (0..20).map(|_| TcpStream::connect(a).unwrap()).collect();
        std::thread::sleep(Duration::from_millis(300));
        let ok = get(a, b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        drop(idle);
    }
}
