//! Live counters end to end: a real rpc-server with `--metrics` over memif,
//! a 2 s rpc-client with `--json-stream` against it; the client's stdout
//! carries interval lines then its summary, the server's `/metrics` (read
//! with a plain TCP socket) counts what the client completed, and the
//! server still stops cleanly on SIGTERM. A bad `--metrics` address fails
//! at once, naming the flag.

use crate::common;
use crate::common::{run, unique, Server};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(60);

/// A binary of this build, or of `RPC_BIN_DIR` when set (as scripts/test.sh does).
fn bin(name: &str, built: &str) -> String {
    match std::env::var("RPC_BIN_DIR") {
        Ok(d) => PathBuf::from(d).join(name).display().to_string(),
        Err(_) => built.to_string(),
    }
}

fn server_bin() -> String {
    bin("rpc-server", env!("CARGO_BIN_EXE_rpc-server"))
}

fn client_bin() -> String {
    bin("rpc-client", env!("CARGO_BIN_EXE_rpc-client"))
}

/// A port nobody listens on right now.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    l.local_addr().expect("local address").port()
}

/// `GET path` over a plain socket: (status line, headers, body).
fn http_get(addr: &str, path: &str) -> (String, String, String) {
    let start = Instant::now();
    let mut c = loop {
        match TcpStream::connect(addr) {
            Ok(c) => break c,
            Err(e) if start.elapsed() > Duration::from_secs(10) => panic!("connect {addr}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut s = String::new();
    c.read_to_string(&mut s).expect("read the answer");
    let (head, body) = s.split_once("\r\n\r\n").expect("headers end");
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (status.to_string(), headers.to_lowercase(), body.to_string())
}

/// The value of the unlabelled sample `name` in OpenMetrics text.
fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no sample {name} in\n{text}"))
}

#[test]
fn json_stream_intervals_and_server_metrics_over_memif() {
    let sock = format!("--socket=/tmp/{}.sock", unique("rpclive"));
    let addr = format!("127.0.0.1:{}", free_port());
    let server = Server::start(&[sock.clone(), format!("--metrics={addr}")]);
    let client = client_bin();
    let r = run(&client, &[&sock, "--seconds=2", "--json-stream"], LIMIT);
    // Read the metrics before stopping the server (its last publish is
    // at most a millisecond old once its sessions are gone).
    let (status, headers, body) = http_get(&addr, "/metrics");
    let (missing, _, _) = http_get(&addr, "/other");
    // SIGTERM by PID; it must exit 0 with its summary.
    let summary_srv = server.stop_after(&r);
    r.assert_ok("rpc-client --json-stream");

    // (a) Interval lines, then the summary as the last line.
    let lines: Vec<&str> = r.stdout.lines().filter(|l| !l.trim().is_empty()).collect();
    let (last, before) = lines.split_last().expect("some output");
    let intervals: Vec<&str> = before
        .iter()
        .copied()
        .filter(|l| l.starts_with('{'))
        .collect();
    assert!(!intervals.is_empty(), "no interval line:\n{}", r.stdout);
    let mut t = 0.0;
    let mut rpcs = 0;
    for l in &intervals {
        let v: serde_json::Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        assert_eq!(v["event"], "interval", "{l}");
        assert_eq!(v["workers"], 1, "{l}");
        let ts = v["t_s"].as_f64().unwrap();
        assert!(ts > t, "t_s grows: {l}");
        t = ts;
        rpcs += v["rpcs"].as_u64().unwrap();
        for k in [
            "interval_s",
            "mrps",
            "wire_gbps",
            "retransmissions",
            "drops",
        ] {
            assert!(v[k].is_number(), "{k} in {l}");
        }
    }
    let summary: serde_json::Value = serde_json::from_str(last).expect("the summary is JSON");
    assert!(
        summary.get("event").is_none(),
        "last line is the summary: {last}"
    );
    // Intervals count the warm-up too: compare with every completion.
    let completed = summary["completed_total"]
        .as_u64()
        .expect("completed_total");
    // The last, partial interval is printed too (unless under a tenth of
    // a second): the lines add up to (nearly) the whole run.
    assert!(
        completed > 0 && rpcs <= completed && rpcs * 10 >= completed * 7,
        "intervals {rpcs} vs completed {completed}"
    );
    assert!(
        r.stderr.contains("worker(s):"),
        "progress line on stderr:\n{}",
        r.stderr
    );

    // (b) The server's counters: OpenMetrics, and what the client completed.
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert!(
        headers.contains("content-type: application/openmetrics-text; version=1.0.0"),
        "{headers}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    let served = sample(&body, "rpc_server_rpcs_served_total") as u64;
    let c = completed as f64;
    assert!(
        (served as f64 - c).abs() <= c * 0.01 + 8.0,
        "served {served} vs client completed {completed}"
    );
    assert!(sample(&body, "rpc_server_rx_bytes_total") > 0.0, "{body}");
    assert!(sample(&body, "rpc_server_uptime_seconds") > 1.0, "{body}");
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
    // The exit summary counts at least what was scraped and what the
    // client saw completed.
    let handled = summary_srv["handled"].as_u64().expect("handled");
    assert!(
        served <= handled && completed <= handled,
        "served {served}, completed {completed}, handled {handled}"
    );
}

#[test]
fn metrics_with_a_bad_address_fails_fast_naming_the_flag() {
    let sock = format!("--socket=/tmp/{}.sock", unique("rpclive"));
    let r = run(
        &server_bin(),
        &[&sock, "--metrics=not-an-addr", "--max-seconds=5"],
        LIMIT,
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.contains("--metrics not-an-addr"), "{}", r.stderr);
    assert!(r.elapsed < Duration::from_secs(3), "took {:?}", r.elapsed);
}

/// `rpc-bench run --json-stream`, raw floor included: stdout is JSON lines
/// only (the floor's and the run's text reports go to stderr), the
/// client's interval lines pass through as they come, the stamped summary
/// is last.
#[test]
fn rpc_bench_json_stream_keeps_stdout_to_json_lines() {
    let sock = format!("--socket=/tmp/{}.sock", unique("rpclivb"));
    let r = run(
        common::bench_bin(),
        &[
            "run",
            &sock,
            "--seconds=1",
            "--floor-pings=1000",
            "--json-stream",
        ],
        LIMIT,
    );
    r.assert_ok("rpc-bench run --json-stream");
    let lines: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let (last, intervals) = lines.split_last().expect("some output");
    assert!(
        !intervals.is_empty() && intervals.iter().all(|v| v["event"] == "interval"),
        "{}",
        r.stdout
    );
    assert!(
        last.get("event").is_none() && last["commit"].is_string(),
        "{last}"
    );
    assert!(last["floor_p50_us"].is_number(), "the floor ran: {last}");
    assert!(r.stderr.contains("raw floor over memif"), "{}", r.stderr);
    assert!(r.stderr.contains("latency (us)"), "{}", r.stderr);
}
