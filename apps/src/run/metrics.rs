//! `rpc-server --metrics ADDR`: the server's live counters as OpenMetrics
//! text at `GET /metrics`, for Prometheus or `curl`.
//!
//! The address is parsed and bound before the server opens its port
//! ([`MetricsArgs::listen`]), so a typo or a port in use fails at once,
//! naming the flag. While the server runs, one thread ([`serve`]) answers
//! scrapes: it reads the workers' published slots ([`Board::sum`]), never
//! the workers themselves, builds a fresh `prometheus-client` registry from
//! that one snapshot and encodes it. Scrapes cost the workers nothing
//! beyond the publishing they do anyway (see `run::live`).
//!
//! The server keeps no latency histogram (latency is measured by the
//! client, from its send to its completion), so no latency metric is
//! exported; docs/metrics.md lists every metric.

use crate::run::live::{Board, Snapshot, DROP_REASONS};
use anyhow::Context;
use clap::Args;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The `Content-Type` OpenMetrics 1.0 asks for.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The metric family names [`render`] emits, before any `_total` suffix.
pub const METRIC_NAMES: [&str; 13] = [
    "rpc_server_rpcs_served",
    "rpc_server_bad_requests",
    "rpc_server_rx_packets",
    "rpc_server_tx_packets",
    "rpc_server_rx_bytes",
    "rpc_server_tx_bytes",
    "rpc_server_drops",
    "rpc_server_retransmissions",
    "rpc_server_credit_stalls",
    "rpc_server_sessions_open",
    "rpc_server_sessions_accepted",
    "rpc_server_workers",
    "rpc_server_uptime_seconds",
];

/// rpc-server's `--metrics` flag.
#[derive(Args, Clone, Debug, Default)]
pub struct MetricsArgs {
    /// Serve live counters as OpenMetrics text at http://ADDR/metrics
    /// (e.g. 127.0.0.1:9464; see docs/metrics.md).
    #[arg(long, value_name = "ADDR")]
    pub metrics: Option<String>,
}

/// A bound, not yet serving, metrics socket.
pub struct MetricsListener {
    server: tiny_http::Server,
    addr: SocketAddr,
}

impl std::fmt::Debug for MetricsListener {
    // tiny_http's server has no Debug; its address is what tells one apart.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsListener")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl MetricsArgs {
    /// Resolves and binds `--metrics` (None without the flag). Errors
    /// name the flag and the address.
    pub fn listen(&self) -> anyhow::Result<Option<MetricsListener>> {
        let Some(text) = &self.metrics else {
            return Ok(None);
        };
        let addr = text
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .with_context(|| {
                format!(
                    "--metrics {text}: not an address (expected HOST:PORT, e.g. 127.0.0.1:9464)"
                )
            })?;
        let listener = TcpListener::bind(addr)
            .with_context(|| format!("--metrics {text}: cannot listen on {addr}"))?;
        let addr = listener.local_addr().unwrap_or(addr);
        let server = tiny_http::Server::from_listener(listener, None)
            .map_err(|e| anyhow::anyhow!("--metrics {text}: {e}"))?;
        Ok(Some(MetricsListener { server, addr }))
    }
}

impl MetricsListener {
    /// Where it listens (the bound port when ADDR said port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sets `stop` and wakes [`serve`] so it returns.
    pub fn stop(&self, stop: &AtomicBool) {
        stop.store(true, Ordering::Relaxed);
        self.server.unblock();
    }
}

/// Answers scrapes from `board` until [`MetricsListener::stop`]; run it on
/// its own thread. It blocks between scrapes rather than polling: it
/// inherits the main thread's core, which a poll-mode worker busies, so it
/// must wake only when asked.
pub fn serve(l: &MetricsListener, board: &Board, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let req = match l.server.recv() {
            Ok(r) => r,
            // unblock() from `stop`, or the listener failed.
            Err(_) if stop.load(Ordering::Relaxed) => return,
            Err(e) => {
                eprintln!("rpc-server: --metrics: {e}; no more scrapes served");
                return;
            }
        };
        let path = req.url().split('?').next().unwrap_or("");
        let resp = if req.method() == &tiny_http::Method::Get && path == "/metrics" {
            let text = render(&board.sum(), board.workers(), board.started.elapsed());
            let ct = tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE)
                .expect("a constant, valid header");
            tiny_http::Response::from_string(text).with_header(ct)
        } else {
            tiny_http::Response::from_string("not found: try GET /metrics\n").with_status_code(404)
        };
        // A scraper that hung up early is its own problem.
        let _ = req.respond(resp);
    }
}

/// The OpenMetrics text of one summed snapshot (ends with `# EOF`).
pub fn render(s: &Snapshot, workers: usize, uptime: std::time::Duration) -> String {
    let mut reg = Registry::with_prefix("rpc_server");
    let counter = |reg: &mut Registry, name: &str, help: &str, v: u64| {
        let c = Counter::<u64>::default();
        c.inc_by(v);
        reg.register(name, help, c);
    };
    let gauge = |reg: &mut Registry, name: &str, help: &str, v: u64| {
        let g = Gauge::<i64>::default();
        g.set(v.min(i64::MAX as u64) as i64);
        reg.register(name, help, g);
    };
    counter(
        &mut reg,
        "rpcs_served",
        "Requests handed to the handler",
        s.rpcs,
    );
    counter(
        &mut reg,
        "bad_requests",
        "Requests whose bytes were not the expected pattern (--verify)",
        s.failed,
    );
    counter(
        &mut reg,
        "rx_packets",
        "Frames received by the endpoints",
        s.rx_pkts,
    );
    counter(
        &mut reg,
        "tx_packets",
        "Frames sent by the endpoints",
        s.tx_pkts,
    );
    let bytes = |reg: &mut Registry, name: &str, help: &str, v: u64| {
        let c = Counter::<u64>::default();
        c.inc_by(v);
        reg.register_with_unit(name, help, Unit::Bytes, c);
    };
    bytes(&mut reg, "rx", "Bytes of the frames received", s.rx_bytes);
    bytes(&mut reg, "tx", "Bytes of the frames sent", s.tx_bytes);
    let drops = Family::<[(&'static str, &'static str); 1], Counter<u64>>::default();
    for (name, v) in DROP_REASONS.iter().zip(s.drops) {
        drops.get_or_create(&[("reason", name)]).inc_by(v);
    }
    reg.register("drops", "Received frames dropped, by reason", drops);
    counter(
        &mut reg,
        "retransmissions",
        "Packets sent again after a rollback",
        s.retransmissions,
    );
    counter(
        &mut reg,
        "credit_stalls",
        "Times a session had packets to send and no credits",
        s.credit_stalls,
    );
    gauge(
        &mut reg,
        "sessions_open",
        "Sessions connected now",
        s.sessions_open,
    );
    counter(
        &mut reg,
        "sessions_accepted",
        "Sessions accepted from clients",
        s.sessions_accepted,
    );
    gauge(
        &mut reg,
        "workers",
        "Worker threads (one endpoint each)",
        workers as u64,
    );
    let up = Gauge::<f64, AtomicU64>::default();
    up.set(uptime.as_secs_f64());
    reg.register_with_unit("uptime", "Time since the server started", Unit::Seconds, up);
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut out, &reg);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// One sample line: name, label text (inside the braces), value.
    type Sample = (String, String, f64);

    /// Parses OpenMetrics text: `# TYPE` per family, samples by name.
    fn parse(text: &str) -> (HashMap<String, String>, Vec<Sample>) {
        let mut types = HashMap::new();
        let mut samples = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (n, t) = rest.split_once(' ').expect("# TYPE name type");
                types.insert(n.to_string(), t.to_string());
            } else if line.starts_with('#') {
                continue;
            } else {
                let (head, value) = line.rsplit_once(' ').expect("name value");
                let (name, labels) = match head.split_once('{') {
                    Some((n, l)) => (n, l.trim_end_matches('}')),
                    None => (head, ""),
                };
                samples.push((name.into(), labels.into(), value.parse().expect("a number")));
            }
        }
        (types, samples)
    }

    #[test]
    fn every_sample_is_known_counters_end_in_total_and_eof_closes() {
        let mut s = Snapshot {
            rpcs: 12_345,
            rx_bytes: 1 << 40,
            sessions_open: 3,
            ..Snapshot::default()
        };
        s.drops[8] = 7; // duplicate
        let text = render(&s, 2, std::time::Duration::from_millis(1500));
        assert!(text.ends_with("# EOF\n"), "{text}");
        let (types, samples) = parse(&text);
        assert_eq!(types.len(), METRIC_NAMES.len(), "{types:?}");
        for n in METRIC_NAMES {
            assert!(types.contains_key(n), "{n} has no # TYPE in\n{text}");
        }
        for (name, labels, _) in &samples {
            let family = name.strip_suffix("_total").unwrap_or(name);
            let t = types
                .get(family)
                .unwrap_or_else(|| panic!("unknown sample {name}"));
            assert_eq!(t == "counter", name.ends_with("_total"), "{name} is a {t}");
            assert!(
                labels.is_empty() || family == "rpc_server_drops",
                "{name}{{{labels}}}"
            );
        }
        let get = |n: &str, l: &str| {
            samples
                .iter()
                .find(|(a, b, _)| a == n && b == l)
                .map(|x| x.2)
        };
        assert_eq!(get("rpc_server_rpcs_served_total", ""), Some(12_345.0));
        assert_eq!(
            get("rpc_server_rx_bytes_total", ""),
            Some((1u64 << 40) as f64)
        );
        assert_eq!(get("rpc_server_sessions_open", ""), Some(3.0));
        assert_eq!(get("rpc_server_workers", ""), Some(2.0));
        assert_eq!(get("rpc_server_uptime_seconds", ""), Some(1.5));
        assert_eq!(
            get("rpc_server_drops_total", "reason=\"duplicate\""),
            Some(7.0)
        );
        let reasons = samples
            .iter()
            .filter(|x| x.0 == "rpc_server_drops_total")
            .count();
        assert_eq!(reasons, DROP_REASONS.len(), "every reason, zeros included");
    }

    #[test]
    fn a_bad_address_or_a_busy_port_names_the_flag() {
        let bad = MetricsArgs {
            metrics: Some("not-an-addr".into()),
        };
        let e = format!("{:#}", bad.listen().unwrap_err());
        assert!(
            e.contains("--metrics not-an-addr") && e.contains("not an address"),
            "{e}"
        );
        let busy = TcpListener::bind("127.0.0.1:0").unwrap();
        let taken = MetricsArgs {
            metrics: Some(busy.local_addr().unwrap().to_string()),
        };
        let e = format!("{:#}", taken.listen().unwrap_err());
        assert!(
            e.contains("--metrics") && e.contains("cannot listen"),
            "{e}"
        );
        assert!(MetricsArgs::default().listen().unwrap().is_none());
    }

    #[test]
    fn scrapes_are_answered_from_the_board_and_other_paths_are_404() {
        use std::io::{Read, Write};
        let l = MetricsArgs {
            metrics: Some("127.0.0.1:0".into()),
        }
        .listen()
        .unwrap()
        .unwrap();
        let board = Board::new(1, None);
        let mut p = board.publisher(0).unwrap();
        let snap = Snapshot {
            rpcs: 42,
            ..Snapshot::default()
        };
        p.publish(engine::time::Instant::ZERO, &snap, &[]);
        let stop = AtomicBool::new(false);
        let get = |path: &str| {
            let mut c = std::net::TcpStream::connect(l.addr()).unwrap();
            write!(
                c,
                "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut s = String::new();
            c.read_to_string(&mut s).unwrap();
            s
        };
        std::thread::scope(|s| {
            s.spawn(|| serve(&l, &board, &stop));
            let ok = get("/metrics");
            assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
            assert!(ok.contains(CONTENT_TYPE), "{ok}");
            assert!(ok.contains("rpc_server_rpcs_served_total 42"), "{ok}");
            let missing = get("/");
            assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
            l.stop(&stop);
        });
    }
}
