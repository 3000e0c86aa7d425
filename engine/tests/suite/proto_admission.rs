//! Hostile peers that speak the protocol, against the server's admission
//! rules (`engine/src/proto/admission.rs`): a forged restart cannot kill a
//! live session, a genuinely restarted client reconnects within one probe
//! wait, credits are the server's to grant and fit the ring shares, and a
//! request's grant cannot pull more response packets than the session's
//! credits, a connect flood from spoofed addresses takes no table slot
//! (cookies), and a source's wrong tokens draw a bounded number of replies
//! and are reported. Frames are crafted and carried by hand, so every step
//! is seen.

use crate::proto_common::{addr, cfg, sm_frame};
use engine::proto::{
    Admission, Delivery, Endpoint, EndpointConfig, Event, PeerAddr, SessionId, SessionState,
};
use engine::time::{Duration, Instant};
use engine::wire::{self, MacAddr, RpcRepr, SmBody, SmRepr, SmStatus};
use engine::wire::{SmType, HEADERS_LEN, SESSION_NONE};
use std::net::Ipv4Addr;

const MS: u64 = 1_000_000;

fn ms(n: u64) -> Instant {
    Instant(n * MS)
}

/// Everything `ep` has to send at `now`.
fn drain(ep: &mut Endpoint, now: Instant) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; ep.min_tx_buf_len()];
    std::iter::from_fn(|| ep.poll_transmit(now, &mut buf).map(|n| buf[..n].to_vec())).collect()
}

/// Hands every frame to `to` at `now`, ignoring deliveries.
fn carry(frames: &[Vec<u8>], to: &mut Endpoint, now: Instant) {
    for f in frames {
        let _ = to.handle_frame(now, f);
    }
}

fn sm_of(f: &[u8]) -> (RpcRepr, SmRepr) {
    let p = wire::parse_frame(f).unwrap();
    (
        p.rpc,
        SmRepr::parse(&SmBody::new_checked(p.payload).unwrap()).unwrap(),
    )
}

/// A ConnectReq from `src` (any MAC) for client session `num` with `token`,
/// asking for `credits`.
fn connect_req(src: (MacAddr, u8), num: u16, token: u64, credits: u16) -> Vec<u8> {
    let a = addr(src.1);
    let body = SmRepr::connect_req(num, credits, 1500, 8);
    to_server((src.0, a.ip, a.port), SESSION_NONE, token, body)
}

/// A session-management frame from `src` to the server (addr 1).
fn to_server(src: (MacAddr, Ipv4Addr, u16), dest: u16, token: u64, body: SmRepr) -> Vec<u8> {
    sm_frame(src, addr(1), dest, token, body)
}

/// Server (addr 1) and a client (addr 2) with one connected session.
fn pair(server: EndpointConfig, client: EndpointConfig) -> (Endpoint, Endpoint, SessionId) {
    let (mut s, mut c) = (
        Endpoint::new(server).unwrap(),
        Endpoint::new(client).unwrap(),
    );
    let cs = c.connect(ms(0), PeerAddr::from(addr(1))).unwrap();
    let req = drain(&mut c, ms(0));
    carry(&req, &mut s, ms(0));
    let resp = drain(&mut s, ms(0));
    carry(&resp, &mut c, ms(0));
    assert_eq!(c.poll_event(), Some(Event::Connected(cs)));
    (s, c, cs)
}

fn accepted_sessions(s: &mut Endpoint) -> usize {
    std::iter::from_fn(|| s.poll_event())
        .filter(|e| matches!(e, Event::PeerSessionAccepted(_)))
        .count()
}

#[test]
fn a_forged_restart_cannot_kill_a_live_session() {
    let (mut s, mut c, cs) = pair(cfg(1), cfg(2));
    assert_eq!(accepted_sessions(&mut s), 1);
    let attacker = MacAddr([0x02, 0xee, 0, 0, 0, 9]);
    // The victim's address and session number, a guessed token, from
    // another MAC; repeated past the probe wait, as a blind attacker would.
    for (round, t) in [10u64, 40, 150, 300].into_iter().enumerate() {
        let forged = connect_req((attacker, 2), cs.number(), 0xbad0_0000 + round as u64, 32);
        carry(&[forged], &mut s, ms(t));
        let out = drain(&mut s, ms(t));
        // Nothing goes to the attacker; a probe (if any) goes to the
        // victim's MAC with the victim's token.
        for f in &out {
            let (rpc, sm) = sm_of(f);
            assert_eq!(sm.sm_type, SmType::KeepAlive, "only probes: {sm:?}");
            assert_eq!(&f[0..6], &addr(2).mac.0, "to the victim's MAC");
            assert_ne!(rpc.token & 0xffff_0000, 0xbad0_0000);
        }
        // The victim answers its probe: it is alive.
        carry(&out, &mut c, ms(t));
        let answer = drain(&mut c, ms(t));
        assert_eq!(answer.len(), out.len(), "a keepalive per probe");
        carry(&answer, &mut s, ms(t));
    }
    let st = s.stats();
    assert_eq!(st.sessions_replaced, 0);
    // Probes at 10, 150 and 300 ms; at 40 ms the live session had
    // answered and the wait was not over: refused without a probe.
    assert_eq!(
        st.restart_probes, 3,
        "one probe per wait (100 ms), not per request"
    );
    assert_eq!(st.drops.restart_refused, 1);
    assert_eq!(st.drops.restart_pending + st.drops.restart_refused, 4);
    assert!(st.rx_accounted());
    assert_eq!(c.stats().probes_answered, 3);
    assert!(
        std::iter::from_fn(|| s.poll_event()).all(|e| !matches!(e, Event::PeerSessionClosed(_)))
    );
    assert_eq!(c.session_state(cs), Some(SessionState::Connected));
    assert_eq!(s.sessions_by_state().connected, 1);
    // And the victim's session still carries requests.
    let msg = c.alloc_msg(32);
    c.enqueue_request(ms(301), cs, 1, msg, 7).unwrap();
    let req = drain(&mut c, ms(301));
    assert!(matches!(
        s.handle_frame(ms(301), &req[0]),
        Some(Delivery::Request { .. })
    ));
}

#[test]
fn a_restarted_client_reconnects_after_one_unanswered_probe() {
    let (mut s, _old, cs) = pair(cfg(1), cfg(2));
    assert_eq!(accepted_sessions(&mut s), 1);
    // The client process restarts: same address, same first session
    // number, a new token; the old process is gone.
    let mut c = Endpoint::new(EndpointConfig { seed: 77, ..cfg(2) }).unwrap();
    let t0 = ms(500);
    let cs2 = c.connect(t0, PeerAddr::from(addr(1))).unwrap();
    assert_eq!(cs2.number(), cs.number());
    let mut now = t0;
    let connected_at = loop {
        carry(&drain(&mut c, now), &mut s, now);
        // The server's probe reaches the new process, which cannot answer
        // it (wrong token); a ConnectResp connects it.
        carry(&drain(&mut s, now), &mut c, now);
        if let Some(Event::Connected(id)) = c.poll_event() {
            assert_eq!(id, cs2);
            break now;
        }
        assert!(
            now < t0 + Duration::from_secs(1),
            "not reconnected within 1 s"
        );
        now = c
            .poll_timeout()
            .unwrap()
            .max(now + Duration::from_micros(1));
        c.handle_timeout(now);
    };
    // One probe wait (100 ms) plus at most one connect retry (20 ms).
    let took = connected_at.saturating_since(t0);
    assert!(took >= Duration::from_millis(100), "{took:?}");
    assert!(took <= Duration::from_millis(120), "{took:?}");
    let st = s.stats();
    assert_eq!((st.restart_probes, st.sessions_replaced), (1, 1));
    assert_eq!(s.sessions_by_state().connected, 1);
}

/// Sends one 32 B request on `cs` from `c` to `s` at `now`.
fn one_request(c: &mut Endpoint, s: &mut Endpoint, cs: SessionId, now: Instant) {
    let msg = c.alloc_msg(32);
    c.enqueue_request(now, cs, 1, msg, 1).unwrap();
    carry(&drain(c, now), s, now);
}

#[test]
fn credits_are_the_servers_to_grant_and_fit_the_ring_shares() {
    // The server's own limit: 16 credits whatever the client asks.
    let server = EndpointConfig {
        session_credits: 16,
        ..cfg(1)
    };
    let client = EndpointConfig {
        session_credits: 1000,
        ..cfg(2)
    };
    let (mut s, mut c, cs) = pair(server, client);
    assert_eq!(c.session_credits_available(cs), Some(16));
    assert_eq!(c.stats().credits_lowered, 1);
    assert_eq!(
        c.ring_usage().0,
        16 + 1,
        "the client gave back what it reserved beyond the grant"
    );
    // The server reserves at the client's first packet, not before.
    assert_eq!(s.ring_usage().0, 0);
    one_request(&mut c, &mut s, cs, ms(1));
    assert_eq!(s.ring_usage().0, 16 + 1);

    // A hog: 1023 credits asked from a spoofed address, renewed with fresh
    // session numbers. Lossless, ring of 1024. It never receives the
    // ConnectResps, so it never completes a handshake: nothing reserved.
    let big = |i| EndpointConfig {
        session_credits: 1023,
        rx_ring_entries: 1024,
        ..cfg(i)
    };
    let mut s = Endpoint::new(big(1)).unwrap();
    let spoofed = MacAddr([0x02, 0xee, 0, 0, 0, 9]);
    for num in 0..4u16 {
        let hog = connect_req((spoofed, 9), num, 100 + num as u64, 1023);
        carry(&[hog], &mut s, ms(1));
        let (_, resp) = sm_of(&drain(&mut s, ms(1))[0]);
        // Granted at most a quarter of the ring (256 entries: 255 credits).
        assert_eq!((resp.status, resp.credits), (SmStatus::Ok, 255));
    }
    assert_eq!(s.ring_usage().0, 0, "half-open sessions reserve nothing");

    // One real address: its first session takes its quarter at its first
    // packet; a second session from it finds the share used up.
    let mut c = Endpoint::new(EndpointConfig {
        session_credits: 1023,
        ..cfg(3)
    })
    .unwrap();
    let first = c.connect(ms(2), PeerAddr::from(addr(1))).unwrap();
    carry(&drain(&mut c, ms(2)), &mut s, ms(2));
    carry(&drain(&mut s, ms(2)), &mut c, ms(2));
    assert_eq!(c.session_credits_available(first), Some(255));
    one_request(&mut c, &mut s, first, ms(3));
    assert_eq!(s.ring_usage().0, 256);
    let second = c.connect(ms(4), PeerAddr::from(addr(1))).unwrap();
    carry(&drain(&mut c, ms(4)), &mut s, ms(4));
    let (_, resp) = sm_of(&drain(&mut s, ms(4))[0]);
    assert_eq!(resp.status, SmStatus::NoRingSpace);
    assert_ne!(c.session_state(second), None);
    // Another address still connects, with all it asks.
    carry(&[connect_req((addr(4).mac, 4), 0, 5, 64)], &mut s, ms(5));
    let (_, resp) = sm_of(&drain(&mut s, ms(5))[0]);
    assert_eq!((resp.status, resp.credits), (SmStatus::Ok, 64));
}

#[test]
fn a_grant_never_pulls_more_than_the_sessions_credits() {
    let server = EndpointConfig {
        session_credits: 8,
        ..cfg(1)
    };
    let (mut s, mut c, cs) = pair(server, cfg(2));
    let _ = accepted_sessions(&mut s);
    let msg = c.alloc_msg(32);
    c.enqueue_request(ms(1), cs, 1, msg, 1).unwrap();
    let mut req = drain(&mut c, ms(1)).remove(0);
    // Rewrite the grant to the most a u16 says (bytes 12..14 of the RPC
    // header, after Ethernet, IPv4 and UDP).
    let grant_at = HEADERS_LEN - wire::RPC_HEADER_LEN + 12;
    req[grant_at..grant_at + 2].copy_from_slice(&u16::MAX.to_be_bytes());
    assert_eq!(wire::parse_frame(&req).unwrap().rpc.grant, u16::MAX);
    let Some(Delivery::Request { handle, .. }) = s.handle_frame(ms(1), &req) else {
        panic!("not delivered")
    };
    // A 1 MiB response: 700-odd packets, of which the client may pull 1 + 8.
    let resp = s.alloc_msg(1 << 20);
    s.respond(ms(1), handle, resp).unwrap();
    assert_eq!(drain(&mut s, ms(1)).len(), 1 + 8);
    // Each duplicate of the request brings back no more.
    for t in 2..5 {
        let _ = s.handle_frame(ms(t), &req);
        assert!(drain(&mut s, ms(t)).len() <= 1 + 8);
    }
}

/// Spoofed source `i` of a flood: its own MAC, address and port.
fn spoofed(i: u32) -> (MacAddr, Ipv4Addr, u16) {
    let b = i.to_be_bytes();
    let mac = MacAddr([0x02, 0xee, b[0], b[1], b[2], b[3]]);
    (
        mac,
        Ipv4Addr::new(10, 200 + b[1], b[2], b[3]),
        40000 + (i % 1000) as u16,
    )
}

/// `n` ConnectReqs from spoofed sources (no cookie); what the server sent
/// back, and the bytes it received and sent.
fn flood(s: &mut Endpoint, n: u32, now: Instant) -> (Vec<Vec<u8>>, usize, usize) {
    let (mut bytes_in, mut out) = (0, Vec::new());
    for i in 0..n {
        let f = to_server(
            spoofed(i),
            SESSION_NONE,
            0x5eed + u64::from(i),
            SmRepr::connect_req(0, 32, 1500, 8),
        );
        bytes_in += f.len();
        carry(&[f], s, now);
        out.extend(drain(s, now));
    }
    let bytes_out = out.iter().map(Vec::len).sum();
    (out, bytes_in, bytes_out)
}

/// Connects `c` to `s` through whatever handshake `s` asks for (cookies
/// included); the session once Connected.
fn handshake(c: &mut Endpoint, s: &mut Endpoint, now: Instant) -> SessionId {
    let cs = c.connect(now, PeerAddr::from(addr(1))).unwrap();
    for _ in 0..3 {
        carry(&drain(c, now), s, now);
        carry(&drain(s, now), c, now);
    }
    assert_eq!(c.session_state(cs), Some(SessionState::Connected));
    cs
}

#[test]
fn a_connect_flood_from_spoofed_addresses_takes_no_table_slot() {
    // Cookies always: nothing is created for a ConnectReq without one.
    let server = EndpointConfig {
        max_sessions: 64,
        admission: Admission {
            cookie_above_pct: 0,
            ..Admission::default()
        },
        ..cfg(1)
    };
    let mut s = Endpoint::new(server).unwrap();
    let (out, bytes_in, bytes_out) = flood(&mut s, 5000, ms(1));
    assert_eq!(out.len(), 5000, "one reply per ConnectReq");
    for f in &out {
        let (_, sm) = sm_of(f);
        assert_eq!(
            (sm.sm_type, sm.status),
            (SmType::ConnectResp, SmStatus::Retry)
        );
        assert_ne!(sm.server_token, 0, "the cookie");
    }
    assert_eq!(bytes_out, bytes_in, "no amplification: a same-sized reply");
    assert_eq!(s.sessions_by_state().connected, 0);
    assert_eq!(s.stats().sessions_accepted, 0);
    assert_eq!(s.stats().cookies_sent, 5000);
    assert!(s.stats().rx_accounted());
    // A real client pays one round trip for its cookie and is served.
    let mut c = Endpoint::new(cfg(2)).unwrap();
    let before = s.stats().rx_accepted;
    let cs = handshake(&mut c, &mut s, ms(2));
    assert_eq!(c.stats().cookie_retries, 1);
    assert_eq!(s.sessions_by_state().connected, 1);
    one_request(&mut c, &mut s, cs, ms(3));
    let handled = s.stats().rx_accepted - before;
    assert_eq!(handled, 2 + 1, "two ConnectReqs, one request");
}

#[test]
fn from_half_full_the_table_asks_for_cookies_and_real_clients_still_connect() {
    let server = EndpointConfig {
        max_sessions: 16,
        ..cfg(1)
    };
    let mut s = Endpoint::new(server).unwrap();
    // Default: cookies from 50 % of the table. The flood takes 8 slots
    // (half-open, reclaimed later), then only cookies.
    let (out, _, _) = flood(&mut s, 1000, ms(1));
    assert_eq!(s.stats().sessions_accepted, 8);
    assert_eq!(s.stats().cookies_sent, 992);
    assert_eq!(out.len(), 1000);
    // Real clients connect during the flood, each through a cookie.
    let mut clients: Vec<Endpoint> = (2..6).map(|i| Endpoint::new(cfg(i)).unwrap()).collect();
    for c in &mut clients {
        let cs = handshake(c, &mut s, ms(2));
        assert_eq!(c.stats().cookie_retries, 1);
        one_request(c, &mut s, cs, ms(3));
    }
    assert_eq!(s.stats().sessions_accepted, 8 + 4);
}

#[test]
fn a_client_forgets_its_cookie_once_connected() {
    // docs/wire.md: the SM body's server_token carries the cookie in the
    // Retry and in the ConnectReqs after it, and 0 in every other body,
    // KeepAlive and DisconnectReq included.
    let server = EndpointConfig {
        admission: Admission {
            cookie_above_pct: 0,
            ..Admission::default()
        },
        ..cfg(1)
    };
    let mut s = Endpoint::new(server).unwrap();
    let mut c = Endpoint::new(cfg(2)).unwrap();
    let cs = handshake(&mut c, &mut s, ms(1));
    assert_eq!(c.stats().cookie_retries, 1, "connected through a cookie");
    // Idle past keepalive_interval (1 s): the client sends a keepalive.
    let (t, keepalive) = (2..3000)
        .find_map(|t| {
            c.handle_timeout(ms(t));
            let out = drain(&mut c, ms(t));
            out.into_iter()
                .find(|f| sm_of(f).1.sm_type == SmType::KeepAlive)
                .map(|f| (t, f))
        })
        .expect("an idle session sends a keepalive");
    assert_eq!(sm_of(&keepalive).1.server_token, 0, "the keepalive's body");
    carry(&[keepalive], &mut s, ms(t));
    c.disconnect(ms(t), cs).unwrap();
    let out = drain(&mut c, ms(t));
    let (_, req) = sm_of(&out[0]);
    assert_eq!((req.sm_type, req.server_token), (SmType::DisconnectReq, 0));
    carry(&out, &mut s, ms(t));
    let (_, resp) = sm_of(&drain(&mut s, ms(t))[0]);
    assert_eq!(
        (resp.sm_type, resp.status, resp.server_token),
        (SmType::DisconnectResp, SmStatus::Ok, 0)
    );
}

#[test]
fn a_cookie_is_only_good_for_its_own_source() {
    let server = EndpointConfig {
        admission: Admission {
            cookie_above_pct: 0,
            ..Admission::default()
        },
        ..cfg(1)
    };
    let mut s = Endpoint::new(server).unwrap();
    let (out, _, _) = flood(&mut s, 2, ms(1));
    let cookie = sm_of(&out[0]).1.server_token;
    // Source 0's cookie, replayed from source 1, and a guessed one: both
    // refused (answered with a fresh Retry), nothing created.
    let with = |cookie| SmRepr {
        server_token: cookie,
        ..SmRepr::connect_req(0, 32, 1500, 8)
    };
    for (src, c) in [(spoofed(1), cookie), (spoofed(0), 0x1234_5678_9abc_def0)] {
        carry(
            &[to_server(src, SESSION_NONE, 0x5eed + 1, with(c))],
            &mut s,
            ms(1),
        );
    }
    let replies = drain(&mut s, ms(1));
    assert!(replies.iter().all(|f| sm_of(f).1.status == SmStatus::Retry));
    assert_eq!(s.stats().cookies_bad, 2);
    assert_eq!(s.stats().sessions_accepted, 0);
    // The right source with its own cookie (and its own token) gets in.
    carry(
        &[to_server(spoofed(0), SESSION_NONE, 0x5eed, with(cookie))],
        &mut s,
        ms(1),
    );
    let ok = drain(&mut s, ms(1));
    assert_eq!(sm_of(&ok[0]).1.status, SmStatus::Ok);
    assert_eq!(s.stats().sessions_accepted, 1);
}

#[test]
fn wrong_tokens_draw_bounded_replies_and_their_source_is_reported() {
    let (mut s, mut c, cs) = pair(cfg(1), cfg(2));
    let _ = accepted_sessions(&mut s);
    // The victim's own address, spoofed from another MAC: its valid
    // packets must still pass while the wrong ones are held back.
    let stranger = (spoofed(7).0, addr(2).ip, addr(2).port);
    let limit = Admission::default().wrong_tokens_per_sec as usize;
    // 1000 DisconnectReqs for the live session with guessed tokens, in one
    // second: only `limit` are answered (UnknownSession), and the source
    // is reported once.
    let body = SmRepr {
        sm_type: SmType::DisconnectReq,
        server_session: 0,
        ..SmRepr::connect_req(cs.number(), 32, 1500, 8)
    };
    let mut answered = 0;
    for i in 0..1000u64 {
        carry(
            &[to_server(stranger, 0, 0xdead_0000 + i, body)],
            &mut s,
            ms(10),
        );
        answered += drain(&mut s, ms(10)).len();
    }
    assert_eq!(answered, limit);
    let st = s.stats();
    assert_eq!(st.drops.bad_token, 1000);
    assert_eq!(st.replies_withheld, 1000 - limit as u64);
    assert!(st.rx_accounted());
    let reports: Vec<Event> = std::iter::from_fn(|| s.poll_event()).collect();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let Event::WrongTokens(r) = reports[0] else {
        panic!("{reports:?}")
    };
    assert_eq!(
        (r.ip, r.port, r.count as usize),
        (stranger.1, stranger.2, limit + 1)
    );
    // A forged restart of the victim's session from the same source, now
    // over its limit: no probe, a counted refusal.
    let forged = SmRepr::connect_req(cs.number(), 32, 1500, 8);
    carry(
        &[to_server(stranger, SESSION_NONE, 0xbad, forged)],
        &mut s,
        ms(10),
    );
    assert!(drain(&mut s, ms(10)).is_empty(), "no probe");
    assert_eq!(s.stats().drops.restart_refused, 1);
    assert!(s.stats().rx_accounted());
    // The victim's session is untouched and serves requests.
    assert_eq!(c.session_state(cs), Some(SessionState::Connected));
    let before = s.stats().rx_accepted;
    one_request(&mut c, &mut s, cs, ms(20));
    assert_eq!(s.stats().rx_accepted, before + 1);
    // The next second, the source is answered again.
    carry(
        &[to_server(stranger, 0, 0xdead_beef, body)],
        &mut s,
        ms(1010),
    );
    assert_eq!(drain(&mut s, ms(1010)).len(), 1);
}

#[test]
fn server_tokens_use_all_64_bits() {
    let mut s = Endpoint::new(cfg(1)).unwrap();
    let tokens: Vec<u64> = (2..10)
        .map(|i| {
            let mut c = Endpoint::new(cfg(i)).unwrap();
            let cs = handshake(&mut c, &mut s, ms(1));
            let msg = c.alloc_msg(8);
            c.enqueue_request(ms(1), cs, 1, msg, 1).unwrap();
            wire::parse_frame(&drain(&mut c, ms(1))[0])
                .unwrap()
                .rpc
                .token
        })
        .collect();
    // Eight 64-bit draws all below 2^32 would be a 1 in 2^256 event.
    assert!(
        tokens.iter().any(|&t| t > u64::from(u32::MAX)),
        "{tokens:x?}"
    );
    let mut distinct = tokens.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), tokens.len());
}

/// The source MAC of hostile host `m`.
fn hostile_mac(m: u8) -> MacAddr {
    MacAddr([0x02, 0xee, 0xad, 0xd7, 0, m])
}

/// A host behind MAC `hostile_mac(m)` that answers for `ips` addresses
/// (10.0.<100 + m>.1..): one real client endpoint per address, each with
/// the MAC, so every reply reaches it. Each opens `sessions` sessions
/// asking for 1023 credits, completes every handshake the server allows
/// and sends a request on each session it got, so the server reserves
/// their ring entries. Returns the endpoints.
fn multi_address_host(
    s: &mut Endpoint,
    m: u8,
    ips: u8,
    sessions: usize,
    now: Instant,
) -> Vec<Endpoint> {
    let mut eps: Vec<Endpoint> = (1..=ips)
        .map(|i| {
            // Lossy at its own end: it reserves nothing of its own ring
            // for what it asks (the server's mode is what matters).
            let mut c = EndpointConfig {
                session_credits: 1023,
                mode: engine::proto::FlowMode::Lossy,
                seed: u64::from(m) << 8 | u64::from(i),
                ..cfg(2)
            };
            c.local.mac = hostile_mac(m);
            c.local.ip = Ipv4Addr::new(10, 0, 100 + m, i);
            Endpoint::new(c).unwrap()
        })
        .collect();
    let mut ids = Vec::new();
    for (e, ep) in eps.iter_mut().enumerate() {
        for _ in 0..sessions {
            ids.push((e, ep.connect(now, PeerAddr::from(addr(1))).unwrap()));
        }
    }
    // Handshakes (cookie round trips included), the server's replies routed
    // to the address they name: all of them reach the one MAC.
    for _ in 0..4 {
        for ep in &mut eps {
            carry(&drain(ep, now), s, now);
        }
        for f in drain(s, now) {
            let dst = wire::parse_frame(&f).unwrap().dst_ip;
            if let Some(ep) = eps.iter_mut().find(|ep| ep.local_addr().ip == dst) {
                let _ = ep.handle_frame(now, &f);
            }
        }
    }
    for &(e, id) in &ids {
        if eps[e].session_state(id) == Some(SessionState::Connected) {
            one_request(&mut eps[e], s, id, now);
        }
    }
    eps
}

/// A normal client (its own MAC and address) connecting asking for 64
/// credits: what the server answered, and whether a request then reached
/// the server's application.
fn normal_client(s: &mut Endpoint, now: Instant) -> (SmStatus, u16, bool) {
    let mut c = Endpoint::new(EndpointConfig {
        session_credits: 64,
        ..cfg(3)
    })
    .unwrap();
    let cs = c.connect(now, PeerAddr::from(addr(1))).unwrap();
    let mut answer = (SmStatus::Ok, 0);
    for _ in 0..3 {
        carry(&drain(&mut c, now), s, now);
        for f in drain(s, now) {
            let (_, sm) = sm_of(&f);
            if sm.sm_type == SmType::ConnectResp && sm.status != SmStatus::Retry {
                answer = (sm.status, sm.credits);
            }
            let _ = c.handle_frame(now, &f);
        }
    }
    if c.session_state(cs) != Some(SessionState::Connected) {
        return (answer.0, answer.1, false);
    }
    let msg = c.alloc_msg(32);
    c.enqueue_request(now, cs, 1, msg, 1).unwrap();
    let served = drain(&mut c, now)
        .iter()
        .any(|f| matches!(s.handle_frame(now, f), Some(Delivery::Request { .. })));
    (answer.0, answer.1, served)
}

fn lossless_server(admission: Admission) -> Endpoint {
    Endpoint::new(EndpointConfig {
        session_credits: 1023,
        rx_ring_entries: 1024,
        admission,
        ..cfg(1)
    })
    .unwrap()
}

#[test]
fn a_peer_with_five_addresses_behind_one_mac_cannot_lock_a_client_out() {
    // The old rule (no MAC share, no reserve): five addresses, eight
    // sessions each asking for the whole ring, take all 1,024 entries
    // (four addresses at their quarter) and a normal client is refused.
    let old = Admission {
        mac_ring_share_pct: 100,
        max_sessions_per_mac: usize::MAX,
        ring_reserve_pct: 0,
        ..Admission::default()
    };
    let mut s = lossless_server(old);
    let _host = multi_address_host(&mut s, 1, 5, 8, ms(1));
    assert_eq!(s.mac_usage(hostile_mac(1)).ring, 1024);
    assert_eq!(s.ring_usage(), (1024, 1024));
    let (status, _, served) = normal_client(&mut s, ms(2));
    assert_eq!((status, served), (SmStatus::NoRingSpace, false));

    // The defaults: the MAC holds its quarter whatever it speaks for, and
    // the client gets all it asks.
    let mut s = lossless_server(Admission::default());
    let _host = multi_address_host(&mut s, 1, 5, 8, ms(1));
    let held = s.mac_usage(hostile_mac(1));
    assert_eq!(held.ring, 256, "one session of 255 credits");
    assert!(held.sessions <= 8, "{held:?}");
    assert!(s.stats().refused_mac_limit >= 4 * 8, "{:?}", s.stats());
    assert_eq!(normal_client(&mut s, ms(2)), (SmStatus::Ok, 64, true));
    assert!(s.stats().rx_accounted());
}

#[test]
fn a_newcomer_still_gets_credits_against_six_hostile_macs() {
    // Six MACs of five addresses each: three take their quarter (768
    // entries, where holders stop), the next three a quarter of the
    // reserve each as newcomers; the last 64 entries are a newcomer's.
    let mut s = lossless_server(Admission::default());
    let _hosts: Vec<_> = (1..=6)
        .map(|m| multi_address_host(&mut s, m, 5, 4, ms(u64::from(m))))
        .collect();
    let held: Vec<usize> = (1..=6).map(|m| s.mac_usage(hostile_mac(m)).ring).collect();
    assert_eq!(held, [256, 256, 256, 64, 64, 64]);
    assert!(s.stats().refused_ring_reserve > 0, "{:?}", s.stats());
    // A second round: the MACs that hold entries ask again and get none.
    let _again: Vec<_> = (1..=6)
        .map(|m| multi_address_host(&mut s, m, 5, 4, ms(10)))
        .collect();
    assert_eq!(s.ring_usage().0, 960);
    // 64 entries left: 63 credits, all a normal client asks but one.
    assert_eq!(normal_client(&mut s, ms(11)), (SmStatus::Ok, 63, true));
}

#[test]
fn one_mac_holds_at_most_its_sessions_whatever_addresses_it_speaks_for() {
    // Lossy (no ring to share): five addresses behind one MAC open 100
    // sessions each; the MAC is held to 256 (max_sessions_per_mac), a
    // quarter of the table, and a normal client connects.
    let server = EndpointConfig {
        mode: engine::proto::FlowMode::Lossy,
        ..cfg(1)
    };
    let mut s = Endpoint::new(server).unwrap();
    let _host = multi_address_host(&mut s, 1, 5, 100, ms(1));
    assert_eq!(s.mac_usage(hostile_mac(1)).sessions, 256);
    assert_eq!(s.stats().refused_mac_limit, 500 - 256);
    let (status, _, served) = normal_client(&mut s, ms(2));
    assert_eq!((status, served), (SmStatus::Ok, true));
}
