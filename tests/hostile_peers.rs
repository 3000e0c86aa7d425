//! Peers that speak the protocol to hurt, end to end over af_packet on a
//! veth pair (real rpc-server, rpc-client and `rpc-hostile --attack`): a
//! forged restart does not kill a live client's session, a ring hog from a
//! spoofed address does not keep a normal client out, and requests granting
//! 65,535 response packets from a spoofed source bring back no more than 3x
//! the bytes sent, and a connect flood from spoofed addresses does not keep
//! a normal client out (cookies), and a peer with real sessions cannot pin
//! more server memory than its budget (counting what it leaves in the
//! pool), copies of a request from a peer
//! with a real session bring back one packet each, not the session's
//! credits, and a peer answering for several addresses behind one MAC
//! cannot take the receive ring from a normal client, and a session that
//! ignores its credits is cut off before it costs a lossless client more
//! than one ring overflow. docs/reliability.md lists these promises.

use crate::common;
use crate::common::{run, u, unique, Server, Veth};
use std::time::Duration;

const CLIENT: &str = env!("CARGO_BIN_EXE_rpc-client");
const HOSTILE: &str = env!("CARGO_BIN_EXE_rpc-hostile");
const LIMIT: Duration = Duration::from_secs(60);

/// One veth pair (client end in a namespace) and the link flags of a
/// process with file prefix `prefix` on it.
struct Segment {
    name: String,
    ns: String,
    _veth: Veth,
}

impl Segment {
    fn new(tag: &str) -> Segment {
        let name = unique(tag);
        let ns = format!("{name}ns");
        let veth = Veth::up(&name, &["--netns", &ns]);
        Segment {
            name,
            ns,
            _veth: veth,
        }
    }

    fn link(&self, prefix: &str, extra: &[&str]) -> Vec<String> {
        let mut v = vec![
            "--link=af_packet".to_string(),
            format!("--iface={}", self.name),
            format!("--set=link.client_netns=\"{}\"", self.ns),
            format!("--set=link.file_prefix=\"{prefix}{}\"", self.name),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    }
}

/// Runs rpc-hostile with `args`; returns its report.
fn attack(args: &[String]) -> serde_json::Value {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let h = run(HOSTILE, &a, LIMIT);
    assert!(h.ok(), "rpc-hostile failed:\n{}\n{}", h.stdout, h.stderr);
    h.json()
}

/// A 4-second throughput client on `seg`, in a thread.
fn client(seg: &Segment) -> std::thread::JoinHandle<common::Run> {
    let args = seg.link(
        "c",
        &["--seconds=4", "--set=workload.warmup_seconds=0.0", "--json"],
    );
    std::thread::spawn(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        run(CLIENT, &a, LIMIT)
    })
}

fn assert_unharmed(c: &common::Run) {
    assert!(c.ok(), "rpc-client failed:\n{}\n{}", c.stdout, c.stderr);
    let v = c.json();
    assert!(u(&v, &["completed"]) > 1000, "{v}");
    assert_eq!(u(&v, &["failed"]), 0, "{v}");
    assert_eq!(u(&v, &["bad_responses"]), 0, "{v}");
}

#[test]
fn a_forged_restart_does_not_kill_a_live_session() {
    let seg = Segment::new("frst");
    let server = Server::start(&seg.link("s", &[]));
    let victim = client(&seg);
    std::thread::sleep(Duration::from_millis(800));
    // ConnectReqs with the victim's IP, port and session numbers 0..8 and
    // guessed tokens, from another MAC, for 2.5 s.
    let sent = attack(&seg.link(
        "h",
        &["--attack=forged-restart", "--duration=2.5", "--fps=400"],
    ));
    let c = victim.join().expect("client thread");
    let srv = server.stop();
    assert!(u(&sent, &["by_kind", "forged_restart"]) > 500, "{sent}");
    assert_unharmed(&c);
    // The victim's session was probed and answered (the forged requests
    // for it were refused). Forged requests for session numbers the victim
    // does not use made half-open sessions of their own, which the next
    // forged request for the same number may replace: those are the
    // attacker's, not the victim's.
    let st = &srv["stats"];
    assert!(u(st, &["restart_probes"]) > 0, "{srv}");
    assert!(u(st, &["drops", "restart_refused"]) > 0, "{srv}");
}

#[test]
fn a_ring_hog_does_not_keep_a_normal_client_out() {
    let seg = Segment::new("hog");
    // Lossless, a 1024-entry ring: the hog asks for 1023 credits per
    // session, a fresh session every 5 ms.
    let server = Server::start(&seg.link("s", &["--set=link.rx_desc=1024"]));
    let hog_args = seg.link("h", &["--attack=ring-hog", "--duration=5", "--fps=200"]);
    let hog = std::thread::spawn(move || attack(&hog_args));
    std::thread::sleep(Duration::from_millis(1000));
    let normal = client(&seg).join().expect("client thread");
    let sent = hog.join().expect("hog thread");
    let srv = server.stop();
    assert!(u(&sent, &["by_kind", "ring_hog"]) > 500, "{sent}");
    assert_unharmed(&normal);
    // The hog's sessions were accepted half-open and reserved nothing; the
    // normal client was never refused.
    assert!(u(&srv, &["stats", "sessions_accepted"]) > 1, "{srv}");
    assert_eq!(u(&srv, &["stats", "drops", "no_ring_space"]), 0, "{srv}");
}

#[test]
fn grant_amplification_from_a_spoofed_source_stays_under_3x() {
    let seg = Segment::new("amp");
    // 1 MiB responses: each granted request could pull 700-odd frames.
    let server = Server::start(&seg.link(
        "s",
        &[
            "--set=workload.resp_size=1048576",
            "--set=workload.kind=\"large\"",
        ],
    ));
    std::thread::sleep(Duration::from_millis(300));
    let sent = attack(&seg.link(
        "h",
        &["--attack=grant-amplify", "--duration=2", "--fps=500"],
    ));
    let srv = server.stop();
    assert!(u(&sent, &["by_kind", "grant_amplify"]) > 500, "{sent}");
    let (rx, tx) = (
        u(&srv, &["stats", "rx_bytes"]),
        u(&srv, &["stats", "tx_bytes"]),
    );
    assert!(rx > 0, "{srv}");
    assert!(
        tx as f64 <= 3.0 * rx as f64,
        "the server sent {tx} B for {rx} B received: {srv}"
    );
    // The spoofed requests never reached a handler: the spoofer never saw a
    // server token.
    assert_eq!(u(&srv, &["handled"]), 0, "{srv}");
    assert!(u(&srv, &["stats", "drops", "bad_token"]) > 0, "{srv}");
}

#[test]
fn copies_of_a_request_from_a_sighted_peer_bring_back_one_packet_each() {
    let seg = Segment::new("dupamp");
    let server = Server::start(&seg.link(
        "s",
        &[
            "--set=workload.resp_size=1048576",
            "--set=workload.kind=\"large\"",
        ],
    ));
    std::thread::sleep(Duration::from_millis(300));
    // A real handshake from the attacker's own address, one 102-byte
    // request for 1 MiB granting 65,535 packets, then 2,000 copies of it a
    // second, never read.
    let sent = attack(&seg.link(
        "h",
        &[
            "--attack=dup-amplify",
            "--duration=2",
            "--fps=2000",
            "--victim-ip=127.77.3.2",
        ],
    ));
    let srv = server.stop();
    assert_eq!(u(&sent, &["connected"]), 1, "{sent}");
    let copies = u(&sent, &["by_kind", "dup_amplify"]);
    assert!(copies > 2000, "{sent}");
    let st = &srv["stats"];
    let (rx, tx) = (u(st, &["rx_bytes"]), u(st, &["tx_bytes"]));
    eprintln!(
        "dup-amplify: {copies} frames sent, server rx {rx} B, tx {tx} B: {:.1}x, {} copies answered with Response(0) alone",
        tx as f64 / rx as f64,
        u(st, &["drops", "dup_request_regrant_spent"])
    );
    // One request reached the handler; every copy after the first was
    // answered with Response(0) alone: 1,514 B per 102 B (14.8x) and the
    // two grants (2 x 43 x 1,514 B) on top. It was 43 x 1,514 / 102 = 638x.
    assert_eq!(u(&srv, &["handled"]), 1, "{srv}");
    assert!(
        u(st, &["drops", "dup_request_regrant_spent"]) > 2000,
        "{srv}"
    );
    assert!(
        (tx as f64) < 20.0 * rx as f64,
        "the server sent {tx} B for {rx} B received: {srv}"
    );
}

#[test]
fn a_connect_flood_from_spoofed_addresses_does_not_keep_a_client_out() {
    let seg = Segment::new("cflood");
    let server = Server::start(&seg.link("s", &[]));
    // ConnectReqs from a new spoofed address each, 3,000 a second for
    // 4 s: past half the 1024-session table within the half-open timeout,
    // from where the server answers with cookies and creates nothing.
    let flood_args = seg.link(
        "h",
        &["--attack=connect-flood", "--duration=4", "--fps=3000"],
    );
    let flood = std::thread::spawn(move || attack(&flood_args));
    std::thread::sleep(Duration::from_millis(1000));
    let normal = client(&seg).join().expect("client thread");
    let sent = flood.join().expect("flood thread");
    let srv = server.stop();
    assert!(u(&sent, &["by_kind", "connect_flood"]) > 5000, "{sent}");
    assert_unharmed(&normal);
    let st = &srv["stats"];
    assert!(u(st, &["cookies_sent"]) > 1000, "{srv}");
    // Half the table at most was ever given to the flood's half-open
    // sessions at once; those it got were reclaimed, so fewer sessions
    // were accepted in all than ConnectReqs were sent.
    let accepted = u(st, &["sessions_accepted"]);
    assert!(
        accepted < u(&sent, &["by_kind", "connect_flood"]) / 2,
        "{srv}"
    );
    assert_eq!(u(st, &["drops", "no_ring_space"]), 0, "{srv}");
    // The normal client paid a round trip for its cookie.
    assert!(
        u(&normal.json(), &["client_stats", "cookie_retries"]) >= 1,
        "{}",
        normal.stdout
    );
}

/// A /proc/PID/status field in KiB (VmRSS, VmHWM).
fn status_kib(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("server status");
    s.lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{field} not in /proc/{pid}/status"))
}

/// What rpc-server's memory grew by, from /proc: peak virtual size
/// (VmPeak) over the size before (VmSize), and peak resident set (VmHWM)
/// over the resident set before (VmRSS), in MiB.
fn growth_mib(pid: u32, before: (u64, u64)) -> (u64, u64) {
    let (peak, hwm) = (status_kib(pid, "VmPeak:"), status_kib(pid, "VmHWM:"));
    (
        peak.saturating_sub(before.0) / 1024,
        hwm.saturating_sub(before.1) / 1024,
    )
}

#[test]
fn memory_pinning_from_real_sessions_stays_within_the_peer_budget() {
    let seg = Segment::new("pin");
    // The pinning peer sends its 150 packets per slot without waiting for
    // credits, which credit policing would cut off first (see the
    // credit-flood test): off here, so the memory budget alone holds it.
    let server = Server::start(&seg.link("s", &["--set=transport.police_strikes=0"]));
    std::thread::sleep(Duration::from_millis(500));
    let pid = server.pid();
    let before = (status_kib(pid, "VmSize:"), status_kib(pid, "VmRSS:"));
    // 48 real sessions from the attacker's own address; a first round
    // leaves a 128 KiB step on each of their 384 slots, then every packet
    // but the last of new 8 MiB requests, slot after slot, 120,000 frames
    // a second: 3 GiB pinned if each buffer took its announced size, and
    // the steps outgrown left in the pool beside the budget before (the
    // server grew 167 MiB).
    let pin_args = seg.link(
        "h",
        &[
            "--attack=mem-pin",
            "--pin-packets=all-but-last",
            "--duration=6",
            "--fps=120000",
            "--victim-ip=127.77.3.1",
        ],
    );
    let pin = std::thread::spawn(move || attack(&pin_args));
    std::thread::sleep(Duration::from_millis(800));
    let normal = client(&seg).join().expect("client thread");
    let sent = pin.join().expect("attacker thread");
    let during = growth_mib(pid, before);
    // And a reassembly timeout (1 s) later: the peaks stay where they were.
    std::thread::sleep(Duration::from_millis(1500));
    let after = growth_mib(pid, before);
    let srv = server.stop();
    assert_eq!(u(&sent, &["connected"]), 48, "{sent}");
    // All 48 kept their sessions (their ring entries fit the address's
    // share): the attacker's packets carried live tokens.
    assert_eq!(u(&srv, &["stats", "drops", "no_ring_space"]), 0, "{srv}");
    assert!(u(&sent, &["by_kind", "mem_pin"]) > 300_000, "{sent}");
    assert_unharmed(&normal);
    let st = &srv["stats"];
    eprintln!(
        "mem-pin: {} frames; server grew VmPeak {} MiB, VmHWM {} MiB by the attack's end, {} / {} MiB 1.5 s later; {} budget drops, {} given up, {} MiB trimmed from the pool",
        u(&sent, &["sent"]),
        during.0,
        during.1,
        after.0,
        after.1,
        u(st, &["drops", "reassembly_budget"]),
        u(st, &["reassembly_timeouts"]),
        u(st, &["pool_trimmed"]) >> 20,
    );
    // The steps given up made room in the pool the budget now counts.
    assert!(u(st, &["reassembly_timeouts"]) > 300, "{srv}");
    // The per-peer budget: docs/reliability.md, "Memory bounds" (128 MiB
    // charged or left in the pool, and 4 MiB of one-packet responses, which
    // this peer does not use). Both the address space (VmPeak: what a
    // buffer takes whole, touched or not; exact, the binding one) and the
    // resident set (VmHWM: every byte of these buffers is written, but the
    // kernel updates it lazily, so it may read low) are held at their peak,
    // during and after the attack.
    for (what, mib) in [("VmPeak", after.0), ("VmHWM", after.1)] {
        assert!(
            mib <= PEER_BUDGET_MIB,
            "the server's {what} grew {mib} MiB (budget {PEER_BUDGET_MIB}): {srv}"
        );
    }
}

#[test]
fn a_peer_with_several_addresses_does_not_lock_a_client_out() {
    let seg = Segment::new("madr");
    // Lossless (the default mode on both ends), a 1024-entry ring: one
    // port (one MAC) answering for 127.77.4.1..5 asks for 1023 credits on
    // 64 sessions from each address (the server grants its own 9: 10
    // entries each), completes every handshake it is allowed, holds what
    // it got with a request every 100 ms and asks again for the rest. Per
    // address alone (25 %), four addresses held the whole ring and the
    // normal client was refused NoRingSpace.
    let server = Server::start(&seg.link("s", &["--set=link.rx_desc=1024"]));
    let hog_args = seg.link(
        "h",
        &[
            "--attack=multi-addr-hog",
            "--duration=6",
            "--fps=5000",
            "--victim-ip=127.77.4.1",
            "--addresses=5",
        ],
    );
    let hog = std::thread::spawn(move || attack(&hog_args));
    std::thread::sleep(Duration::from_millis(1500));
    let normal = client(&seg).join().expect("client thread");
    let sent = hog.join().expect("hog thread");
    let srv = server.stop();
    eprintln!(
        "multi-addr-hog: {} frames, {} sessions holding {} ring entries at the end, {} refusals; server refused_mac_limit {}, refused_ring_reserve {}, no_ring_space {}",
        u(&sent, &["sent"]),
        u(&sent, &["connected"]),
        u(&sent, &["ring_entries"]),
        u(&sent, &["refused"]),
        u(&srv, &["stats", "refused_mac_limit"]),
        u(&srv, &["stats", "refused_ring_reserve"]),
        u(&srv, &["stats", "drops", "no_ring_space"]),
    );
    assert_unharmed(&normal);
    // The attacker held its MAC's quarter (256 entries: 25 sessions of 9
    // credits) and no more, and was told so.
    assert!(u(&sent, &["connected"]) >= 1, "{sent}");
    assert!(u(&sent, &["ring_entries"]) <= 256, "{sent}");
    assert!(u(&sent, &["refused"]) > 0, "{sent}");
    assert!(u(&srv, &["stats", "refused_mac_limit"]) > 0, "{srv}");
    // Its requests were well-formed (the ring, not the bytes, is the attack).
    assert_eq!(u(&srv, &["bad_requests"]), 0, "{srv}");
    // The normal client got every credit it asked for.
    assert_eq!(
        u(&normal.json(), &["client_stats", "credits_lowered"]),
        0,
        "{}",
        normal.stdout
    );
}
/// What one address may grow a worker's memory by with the defaults
/// (docs/reliability.md, "Memory bounds": 128 + 4 MiB).
const PEER_BUDGET_MIB: u64 = 132;

#[test]
fn a_session_that_ignores_its_credits_is_closed_and_its_source_barred() {
    let seg = Segment::new("cfl");
    // Lossless, a 1024-entry ring, and a server that spends 20 us per
    // request (at most 50,000 a second): a flood of 60,000 requests a
    // second keeps it behind unless it is cut off, while the frames alone
    // are few enough for it to read and drop.
    let server = Server::start(&seg.link(
        "s",
        &["--set=link.rx_desc=1024", "--set=server.work_ns=20000"],
    ));
    std::thread::sleep(Duration::from_millis(300));
    // One real session from the attacker's own address asking 8 credits,
    // then one-packet requests at 60,000 a second, never waiting for an
    // answer; a new session asked for every 250 ms.
    let flood_args = seg.link(
        "h",
        &[
            "--attack=credit-flood",
            "--duration=5.5",
            "--fps=60000",
            "--victim-ip=127.77.3.2",
        ],
    );
    let flood = std::thread::spawn(move || attack(&flood_args));
    std::thread::sleep(Duration::from_millis(800));
    let normal = client(&seg).join().expect("client thread");
    let sent = flood.join().expect("attacker thread");
    let srv = server.stop();
    assert!(u(&sent, &["by_kind", "credit_flood"]) > 100_000, "{sent}");
    let st = &srv["stats"];
    // Its session was closed, its excess dropped at the first look, and
    // its ConnectReqs for new sessions refused for the 10 s cool-off (it
    // was granted one session; unpoliced: one every 250 ms).
    assert!(u(st, &["sessions_policed"]) >= 1, "{srv}");
    assert!(u(st, &["drops", "over_credit"]) > 0, "{srv}");
    assert!(u(st, &["drops", "policed_source"]) > 0, "{srv}");
    assert_eq!(u(&sent, &["connected"]), 1, "{sent}");
    // Its requests served before it was cut off: 64 bursts of at most its
    // allowance (8 credits + 8 slots), about one ring's worth (measured:
    // 1,035; unpoliced: 98,000, all the server could do).
    assert!(
        normal.ok(),
        "rpc-client failed:\n{}\n{}",
        normal.stdout,
        normal.stderr
    );
    let c = normal.json();
    let flood_served = u(st, &["handler_invocations"]).saturating_sub(u(&c, &["completed"]));
    eprintln!(
        "credit-flood: {} frames, {flood_served} served, {} over credit; client completed {}, violations {}, retransmissions {}, max {} us",
        u(&sent, &["sent"]),
        u(st, &["drops", "over_credit"]),
        u(&c, &["completed"]),
        u(&c, &["violations"]),
        u(&c, &["retransmissions"]),
        c["max_us"]
    );
    assert!(flood_served < 5_000, "{flood_served} served: {srv}");
    // The normal client is served (measured: 38,294 in 4 s; unpoliced: 21,
    // with a 591 ms maximum latency). What it still loses comes from the
    // frame rate, not the credits: a blind flood of garbage frames at the
    // same rate costs it as much (docs/reliability.md).
    assert_eq!(u(&c, &["failed"]), 0, "{c}");
    assert!(u(&c, &["completed"]) > 5_000, "{c}");
}
