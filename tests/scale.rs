//! Scale end to end: 20,000 sessions on one worker each side over memif,
//! lossy mode, window 1. Every session must connect (the client paces its
//! handshakes, the server's table and per-peer limit are raised to fit) and
//! every RPC must complete; a run of a few seconds bounds the test.

use crate::common;
use crate::common::{run, unique, Server};
use std::time::Duration;

const CLIENT: &str = env!("CARGO_BIN_EXE_rpc-client");
/// Connects (paced) plus the run plus start-up, with a wide margin for a
/// machine shared with builds.
const LIMIT: Duration = Duration::from_secs(120);
const SESSIONS: u64 = 20_000;

#[test]
fn twenty_thousand_sessions_lossy_window_1_all_connect_and_complete() {
    let sessions = format!("--sessions={SESSIONS}");
    let per_peer = format!("--set=transport.max_sessions_per_peer={SESSIONS}");
    let args: Vec<String> = vec![
        format!("--socket=/tmp/{}.sock", unique("rpcscale")),
        "--workload=throughput".into(),
        "--window=1".into(),
        "--mode=lossy".into(),
        sessions,
        per_peer,
        "--seconds=2".into(),
    ];
    let server = Server::start(&common::server_flags(&args));
    let mut client_args: Vec<&str> = args.iter().map(String::as_str).collect();
    client_args.push("--json");
    let r = run(CLIENT, &client_args, LIMIT);
    // The client's outcome first: when it fails, the server's complaint
    // (no peer on the link) says nothing about why.
    r.assert_ok("rpc-client");
    let srv = server.stop();
    let v = r.json();
    assert_eq!(v["failed"], 0, "{v}");
    assert_eq!(v["bad_responses"], 0, "{v}");
    assert_eq!(v["sessions_connected"], SESSIONS, "{v}");
    let completed = v["completed_total"].as_u64().unwrap();
    // Window 1: at least one RPC per session, all answered exactly once.
    assert!(completed >= SESSIONS, "{v}");
    assert_eq!(srv["handled"], completed, "{srv}");
    assert!(v["bytes_per_session"].as_u64().unwrap() > 0, "{v}");
}
