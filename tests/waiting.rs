//! Waiting for the peer, end to end: a real rpc-server with no client (and
//! a real rpc-client with no server) waits without limit, says what it
//! waits for, and stops within 1 s of SIGINT (exit 130) or SIGTERM (exit
//! 143); `--wait 1` gives up after a second (exit 1) naming what it waited
//! for; `--metrics` answers while the server still waits; a second server
//! on a memif socket already listened on fails naming the socket in use.
//! memif only: nothing here kills a peer mid-burst.

use crate::common::{client_bin, run, server_bin, unique, Running};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// How long a process may take to answer a signal while it waits (the
/// engine polls every 10 ms; the rest is the port's and EAL's teardown).
const SIGNAL_ANSWER: Duration = Duration::from_secs(1);

/// Start-up bound (EAL init on a busy 2-core machine).
const START: Duration = Duration::from_secs(30);

/// How long a signalled process may take to exit before the test fails.
const STOP: Duration = Duration::from_secs(15);

/// Waits until some process listens on memif socket `sock` (DPDK's memif
/// server binds it when EAL probes the device: the server is then past EAL
/// init and in its wait for the link). /proc/net/unix shows the abstract
/// name with '@' for its NULs.
fn wait_listening(sock: &str) {
    let end = Instant::now() + START;
    while Instant::now() < end {
        let table = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
        if table.lines().any(|l| l.contains(sock)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nobody listens on {sock} after {START:?}");
}

/// A memif server waiting for a client on `sock`, in its wait for the link.
fn waiting_server(sock: &str, extra: &[&str]) -> Running {
    let socket = format!("--socket={sock}");
    let mut args = vec![socket.as_str()];
    args.extend_from_slice(extra);
    let s = Running::start(server_bin(), &args);
    let line = s.line_with("waiting for a client", START);
    assert_eq!(
        line,
        format!("rpc-server: waiting for a client on memif socket {sock}"),
        "said once, naming the socket"
    );
    wait_listening(sock);
    s
}

#[test]
fn sigint_and_sigterm_stop_a_server_waiting_for_its_client() {
    for (sig, code, name) in [("INT", 130, "SIGINT"), ("TERM", 143, "SIGTERM")] {
        let sock = format!("/tmp/{}.sock", unique("waitsig"));
        let s = waiting_server(&sock, &[]);
        // A few dozen polls into the wait.
        std::thread::sleep(Duration::from_millis(300));
        let (r, took) = s.signal_and_finish(sig, STOP);
        let (got, err) = (r.code, r.stderr);
        assert_eq!(got, Some(code), "SIG{sig}: {err}");
        assert!(
            took < SIGNAL_ANSWER,
            "SIG{sig} answered after {took:?}: {err}"
        );
        assert!(
            err.contains(&format!(
                "rpc-server: interrupted by {name} while waiting for a client on memif socket {sock}"
            )),
            "{err}"
        );
        assert_eq!(err.matches("waiting for a client").count(), 2, "{err}");
    }
}

#[test]
fn sigint_stops_a_client_waiting_for_a_server_that_never_comes() {
    let sock = format!("/tmp/{}.sock", unique("waitcli"));
    let socket = format!("--socket={sock}");
    let c = Running::start(client_bin(), &[&socket, "--seconds=1"]);
    // Printed by the engine's dial loop, past EAL init.
    let line = c.line_with("waiting for memif server", START);
    assert!(line.contains(&sock) && !line.contains("up to"), "{line}");
    std::thread::sleep(Duration::from_millis(500));
    let (r, took) = c.signal_and_finish("INT", STOP);
    let (got, err) = (r.code, r.stderr);
    assert_eq!(got, Some(130), "{err}");
    assert!(took < SIGNAL_ANSWER, "answered after {took:?}: {err}");
    assert!(
        err.contains(&format!(
            "rpc-client: interrupted by SIGINT while waiting for a server on memif socket {sock}"
        )),
        "{err}"
    );
}

#[test]
fn wait_bounds_the_wait_and_names_what_was_waited_for() {
    let sock = format!("/tmp/{}.sock", unique("waitone"));
    let r = run(
        server_bin(),
        &[&format!("--socket={sock}"), "--wait=1"],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("rpc-server: waiting for a client on memif socket")
            && r.stderr.contains("(up to 1 s: --wait)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!(
            "rpc-server: error: no client came on memif socket {sock} within --wait 1 s"
        )),
        "{}",
        r.stderr
    );
    // One second of waiting, plus EAL's start and stop.
    assert!(r.elapsed >= Duration::from_secs(1), "{:?}", r.elapsed);
    assert!(r.elapsed < Duration::from_secs(20), "{:?}", r.elapsed);
}

/// `GET /metrics` with a plain socket; the whole response.
fn scrape(addr: &str) -> String {
    let mut c = std::net::TcpStream::connect(addr).expect("connect to --metrics");
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        c,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut s = String::new();
    // A timeout leaves what arrived (nothing: the bug this test guards).
    let _ = c.read_to_string(&mut s);
    s
}

#[test]
fn metrics_answer_while_the_server_waits_for_its_client() {
    let sock = format!("/tmp/{}.sock", unique("waitmet"));
    let socket = format!("--socket={sock}");
    let s = Running::start(server_bin(), &[&socket, "--metrics=127.0.0.1:0"]);
    let line = s.line_with("metrics at http://", START);
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    s.line_with("waiting for a client", START);
    wait_listening(&sock);
    let text = scrape(&addr);
    assert!(text.starts_with("HTTP/1.1 200"), "{text:?}");
    assert!(text.contains("rpc_server_sessions_open 0"), "{text}");
    assert!(text.contains("rpc_server_rpcs_served_total 0"), "{text}");
    assert!(text.contains("rpc_server_uptime_seconds"), "{text}");
    let (r, took) = s.signal_and_finish("TERM", STOP);
    let (got, err) = (r.code, r.stderr);
    assert_eq!(got, Some(143), "{err}");
    assert!(took < SIGNAL_ANSWER, "answered after {took:?}: {err}");
}

#[test]
fn a_second_server_on_a_socket_in_use_says_so() {
    let sock = format!("/tmp/{}.sock", unique("waittwo"));
    let first = waiting_server(&sock, &[]);
    let second = run(
        server_bin(),
        &[&format!("--socket={sock}"), "--wait=5"],
        Duration::from_secs(60),
    );
    assert_eq!(second.code, Some(1), "{}", second.stderr);
    assert!(
        second.stderr.contains(&format!(
            "memif socket {sock} is in use by another process (a second server?)"
        )),
        "{}",
        second.stderr
    );
    // Refused before EAL: no DPDK port error, and at once.
    assert!(!second.stderr.contains("no DPDK port"), "{}", second.stderr);
    assert!(
        second.elapsed < Duration::from_secs(5),
        "{:?}",
        second.elapsed
    );
    // The first one still waits, and still answers a signal.
    let (r, _) = first.signal_and_finish("INT", STOP);
    let (got, err) = (r.code, r.stderr);
    assert_eq!(got, Some(130), "{err}");
}
