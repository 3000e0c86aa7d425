//! Dead and hostile peers on the in-memory link: a server reclaims the
//! sessions of a client that went silent within the configured bound
//! (returning its receive-ring reservation), a live idle client keeps its
//! sessions with keepalives, half-open handshakes of a connect flood
//! expire, and one address cannot take more than its per-peer share.

use crate::proto_common::*;
use engine::proto::{
    Endpoint, EndpointAddr, EndpointConfig, Event, FlowMode, LossPolicy, PeerAddr, RpcError,
    SessionState,
};
use engine::sim::{ChannelConfig, Sim};
use engine::time::{Duration, Instant};
use engine::wire::{
    HeaderTemplate, MacAddr, SmBody, SmRepr, SmStatus, SmType, HEADERS_LEN, SESSION_NONE,
    SM_BODY_LEN,
};
use std::net::Ipv4Addr;

fn lossless(i: u8) -> EndpointConfig {
    EndpointConfig {
        mode: FlowMode::Lossless,
        on_loss: LossPolicy::Retransmit,
        ..cfg(i)
    }
}

fn reclaimed(app: &EchoApp) -> Vec<Instant> {
    app.events
        .iter()
        .filter(|(n, _, e)| *n == SERVER && matches!(e, Event::PeerSessionReclaimed(_)))
        .map(|(_, t, _)| *t)
        .collect()
}

#[test]
fn dead_client_is_reclaimed_within_idle_timeout_and_its_ring_returns() {
    let mut p = Pair::new(40, ChannelConfig::default(), lossless(1), lossless(2));
    for tag in 0..10 {
        p.app.send(&mut p.sim, CLIENT, p.session, tag, 3000);
    }
    p.run_idle(Duration::from_secs(1));
    p.check_clean();
    let reserved = p.sim.ep(SERVER).ring_usage().0;
    assert!(reserved > 0);
    // The client dies: nothing it sends arrives any more.
    p.sim.set_filter(Box::new(|_, from, _, _| from == CLIENT));
    let death = p.sim.now();
    let idle = p.sim.ep(SERVER).config().idle_timeout;
    p.sim.advance(&mut p.app, idle + idle);
    let at = reclaimed(&p.app);
    assert_eq!(at.len(), 1, "one session, reclaimed once");
    // The bound: idle_timeout after the last packet, plus one scan period.
    let scan = Duration::from_nanos(p.sim.ep(SERVER).config().keepalive_interval.as_nanos() / 4);
    assert!(at[0] >= death + idle, "reclaimed early at {:?}", at[0]);
    assert!(
        at[0] <= death + idle + scan,
        "reclaimed late at {:?}",
        at[0]
    );
    let s = p.sim.ep(SERVER);
    assert_eq!(s.ring_usage().0, 0, "ring reservation returned");
    assert_eq!(s.stats().sessions_reclaimed, 1);
    assert_eq!(s.sessions_by_state().connected, 0);
}

#[test]
fn live_idle_client_keeps_its_session_with_keepalives() {
    let mut p = Pair::new(41, ChannelConfig::default(), lossless(1), lossless(2));
    let idle = p.sim.ep(SERVER).config().idle_timeout;
    // Three idle timeouts with nothing to send.
    p.sim.advance(&mut p.app, idle + idle + idle);
    assert!(
        reclaimed(&p.app).is_empty(),
        "a live client lost its session"
    );
    let c = p.sim.ep(CLIENT).stats();
    assert!(c.keepalives_sent >= 25, "{c:?}");
    assert_eq!(p.sim.ep(SERVER).stats().rx_accepted, c.keepalives_sent + 1);
    // And the session still serves requests.
    p.app.send(&mut p.sim, CLIENT, p.session, 1, 100);
    p.run_idle(Duration::from_secs(1));
    p.check_clean();
}

#[test]
fn a_request_answered_in_time_fires_no_timer() {
    let mut p = Pair::new(42, ChannelConfig::default(), lossless(1), lossless(2));
    let before = *p.sim.ep(CLIENT).stats();
    // One request, answered well within the RTO; then more than an RTO of
    // quiet, less than a keepalive interval.
    p.app.send(&mut p.sim, CLIENT, p.session, 1, 100);
    p.run_idle(Duration::from_millis(1));
    let (rto, keepalive) = {
        let c = p.sim.ep(CLIENT).config();
        (c.rto, c.keepalive_interval)
    };
    assert!(rto + rto < keepalive);
    p.sim.advance(&mut p.app, rto + rto);
    let c = p.sim.ep(CLIENT).stats();
    // The RTO armed for the request moved out to the keepalive when the
    // answer came: nothing fired for nothing (before the exact re-arm on
    // completion, this was one idle firing per request).
    assert_eq!(c.timers_idle, before.timers_idle, "{c:?}");
    assert_eq!(c.timers_fired, before.timers_fired, "{c:?}");
    assert_eq!(c.retransmissions, 0, "{c:?}");
    // And the keepalive still comes.
    p.sim.advance(&mut p.app, keepalive);
    let c = p.sim.ep(CLIENT).stats();
    assert!(c.keepalives_sent > before.keepalives_sent, "{c:?}");
    assert!(c.timers_fired > before.timers_fired, "{c:?}");
    p.check_clean();
}

#[test]
fn a_client_waiting_on_a_slow_handler_is_not_reclaimed() {
    // The client waits up to a minute for progress; nothing it sends gets
    // through once its request is in the handler, so only the handler's
    // hold keeps the server session.
    let client = EndpointConfig {
        session_timeout: Duration::from_secs(60),
        ..lossless(2)
    };
    let mut p = Pair::new(42, ChannelConfig::default(), lossless(1), client);
    p.app.hold = true;
    p.app.send(&mut p.sim, CLIENT, p.session, 1, 100);
    p.sim.run_for(&mut p.app, Duration::from_millis(1));
    assert_eq!(p.app.held.len(), 1);
    p.sim.set_filter(Box::new(|_, from, _, _| from == CLIENT));
    let idle = p.sim.ep(SERVER).config().idle_timeout;
    p.sim.advance(&mut p.app, idle + idle);
    assert!(reclaimed(&p.app).is_empty());
    let (_, h, req) = p.app.held.pop().unwrap();
    let now = p.sim.now();
    EchoApp::answer(p.sim.ep_mut(SERVER), now, h, &req, None);
    p.run_idle(Duration::from_secs(1));
    assert_eq!(p.app.completed.len(), 1);
}

/// A ConnectReq as a flooding host would send it.
fn connect_req(from: EndpointAddr, to: EndpointAddr, client_session: u16, token: u64) -> Vec<u8> {
    let t = HeaderTemplate::new((from.mac, from.ip, from.port), (to.mac, to.ip, to.port));
    let body = SmRepr {
        sm_type: SmType::ConnectReq,
        status: SmStatus::Ok,
        client_session,
        server_session: SESSION_NONE,
        credits: 32,
        mtu: 1500,
        req_window: 8,
        server_token: 0,
    };
    let mut f = vec![0u8; HEADERS_LEN + SM_BODY_LEN];
    let n = t.write_sm(&mut f, SESSION_NONE, token, &body);
    f.truncate(n);
    f
}

#[test]
fn connect_flood_half_open_sessions_reserve_nothing_and_expire() {
    let mut server = Endpoint::new(lossless(1)).unwrap();
    let cfg = server.config().clone();
    let mut t = Instant::ZERO;
    let mut buf = vec![0u8; server.min_tx_buf_len()];
    let (mut accepted, mut refused) = (0usize, 0usize);
    // Spoofed sources: a new address for every ConnectReq; none of them
    // receives its ConnectResp, so none ever sends with the server token.
    for i in 0..400u32 {
        let from = EndpointAddr {
            mac: MacAddr([0x02, 9, 0, 0, (i >> 8) as u8, i as u8]),
            ip: Ipv4Addr::new(10, 9, (i >> 8) as u8, i as u8),
            port: 40000,
        };
        let _ = server.handle_frame(t, &connect_req(from, cfg.local, 0, u64::from(i)));
        while let Some(n) = server.poll_transmit(t, &mut buf) {
            let p = engine::wire::parse_frame(&buf[..n]).unwrap();
            let resp = SmRepr::parse(&SmBody::new_checked(p.payload).unwrap()).unwrap();
            accepted += (resp.status == SmStatus::Ok) as usize;
            refused += (resp.status != SmStatus::Ok) as usize;
        }
    }
    // Half-open sessions reserve no receive-ring entries: the flood takes
    // table slots (bounded by max_sessions, then refused), never the ring.
    assert_eq!(
        server.ring_usage().0,
        0,
        "half-open sessions reserve nothing"
    );
    assert_eq!(accepted + refused, 400);
    assert!(accepted > 0);
    // A real client still connects and reserves its credits at its first
    // packet.
    let mut client = Endpoint::new(lossless(2)).unwrap();
    let cs = client.connect(t, PeerAddr::from(cfg.local)).unwrap();
    let mut pump = |from: &mut Endpoint, to: &mut Endpoint| {
        while let Some(n) = from.poll_transmit(t, &mut buf) {
            let _ = to.handle_frame(t, &buf[..n]);
        }
    };
    pump(&mut client, &mut server);
    pump(&mut server, &mut client);
    let connected = client.session_state(cs) == Some(SessionState::Connected);
    if accepted < cfg.max_sessions {
        assert!(connected, "a real client connects during the flood");
        let msg = client.alloc_msg(32);
        client.enqueue_request(t, cs, 1, msg, 1).unwrap();
        pump(&mut client, &mut server);
        assert_eq!(
            server.ring_usage().0,
            32 + 1,
            "reserved at its first packet"
        );
    }
    // Nobody follows up: every half-open session expires.
    let end = t + cfg.half_open_timeout + cfg.keepalive_interval;
    while t < end {
        t += Duration::from_millis(10);
        server.handle_timeout(t);
    }
    assert!(server.stats().sessions_reclaimed as usize >= accepted);
    assert!(server.stats().rx_accounted());
}

#[test]
fn one_address_cannot_take_more_than_its_share() {
    let server = EndpointConfig {
        max_sessions_per_peer: 3,
        ..cfg(1)
    };
    let peer = PeerAddr::from(server.local);
    let mut sim = Sim::new(43, ChannelConfig::default());
    sim.add(Endpoint::new(server).unwrap());
    sim.add(Endpoint::new(cfg(2)).unwrap());
    sim.add(Endpoint::new(cfg(3)).unwrap());
    let now = sim.now();
    let mine: Vec<_> = (0..4)
        .map(|_| sim.ep_mut(1).connect(now, peer).unwrap())
        .collect();
    let other = sim.ep_mut(2).connect(now, peer).unwrap();
    let mut app = EchoApp::default();
    sim.run_for(&mut app, Duration::from_millis(10));
    let state = |node: usize, s| sim.ep(node).session_state(s);
    let connected = mine
        .iter()
        .filter(|&&s| state(1, s) == Some(SessionState::Connected))
        .count();
    assert_eq!(connected, 3);
    let refusals: Vec<_> = app
        .events
        .iter()
        .filter_map(|(_, _, e)| match e {
            Event::ConnectFailed { reason, .. } => Some(*reason),
            _ => None,
        })
        .collect();
    assert_eq!(refusals, vec![RpcError::Refused(SmStatus::PeerLimit)]);
    assert_eq!(
        state(2, other),
        Some(SessionState::Connected),
        "others unaffected"
    );
}

#[test]
fn limits_give_typed_errors_and_counted_drops() {
    // A message one byte over max_msg_size, on either side.
    let small = |i| EndpointConfig {
        max_msg_size: 4000,
        max_backlog: 2,
        ..cfg(i)
    };
    let mut p = Pair::new(44, ChannelConfig::default(), small(1), small(2));
    let now = p.sim.now();
    let ep = p.sim.ep_mut(CLIENT);
    let m = ep.alloc_msg(4001);
    let err = ep
        .enqueue_request(now, p.session, 1, m, 0)
        .map_err(|(e, _)| e);
    assert_eq!(
        err,
        Err(RpcError::MsgTooLarge {
            len: 4001,
            max: 4000
        })
    );
    // Exactly the limit is fine.
    p.app.send(&mut p.sim, CLIENT, p.session, 1, 4000);
    p.run_idle(Duration::from_secs(1));
    p.check_clean();

    // The backlog: the window (8) plus max_backlog (2), then BacklogFull.
    p.app.hold = true;
    let now = p.sim.now();
    for tag in 10..20 {
        p.app.send(&mut p.sim, CLIENT, p.session, tag, 10);
    }
    let ep = p.sim.ep_mut(CLIENT);
    let m = ep.alloc_msg(10);
    let err = ep
        .enqueue_request(now, p.session, 1, m, 99)
        .map_err(|(e, _)| e);
    assert_eq!(err, Err(RpcError::BacklogFull { limit: 2 }));
    assert_eq!(ep.stats().backlog_full, 1);
    assert_eq!(ep.msgs_outstanding(), 10, "the refused buffer went home");
}

#[test]
fn a_peer_announcing_an_oversized_message_is_dropped_and_counted() {
    let server = EndpointConfig {
        max_msg_size: 4000,
        ..cfg(1)
    };
    let mut p = Pair::new(45, ChannelConfig::default(), server, cfg(2));
    // The client allows 8 MiB, the server 4000 bytes: the server drops it.
    p.app.send(&mut p.sim, CLIENT, p.session, 1, 4001);
    p.sim.run_for(&mut p.app, Duration::from_millis(20));
    let s = p.sim.ep(SERVER).stats();
    assert!(s.drops.too_large > 0, "{s:?}");
    assert_eq!(s.handler_invocations, 0);
    assert!(s.rx_accounted());
}

#[test]
fn session_table_full_is_a_typed_error_on_both_sides() {
    // The client's own table: max_sessions, then TooManySessions locally.
    let client = EndpointConfig {
        max_sessions: 2,
        ..cfg(2)
    };
    let server = EndpointConfig {
        max_sessions: 1,
        ..cfg(1)
    };
    let peer = PeerAddr::from(server.local);
    let mut sim = Sim::new(46, ChannelConfig::default());
    sim.add(Endpoint::new(server).unwrap());
    sim.add(Endpoint::new(client).unwrap());
    let now = sim.now();
    let a = sim.ep_mut(CLIENT).connect(now, peer).unwrap();
    let b = sim.ep_mut(CLIENT).connect(now, peer).unwrap();
    assert_eq!(
        sim.ep_mut(CLIENT).connect(now, peer),
        Err(RpcError::TooManySessions)
    );
    // The server's table holds one: the second connect is refused.
    let mut app = EchoApp::default();
    sim.run_for(&mut app, Duration::from_millis(10));
    let states = [a, b].map(|s| sim.ep(CLIENT).session_state(s));
    assert_eq!(
        states
            .iter()
            .filter(|s| **s == Some(SessionState::Connected))
            .count(),
        1
    );
    assert!(app.events.iter().any(|(_, _, e)| matches!(
        e,
        Event::ConnectFailed {
            reason: RpcError::Refused(SmStatus::TooManySessions),
            ..
        }
    )));
}

#[test]
fn disconnect_while_connecting_is_refused_and_the_connect_completes() {
    let server = cfg(1);
    let peer = PeerAddr::from(server.local);
    let mut sim = Sim::new(47, ChannelConfig::default());
    sim.add(Endpoint::new(server).unwrap());
    sim.add(Endpoint::new(cfg(2)).unwrap());
    let now = sim.now();
    let s = sim.ep_mut(CLIENT).connect(now, peer).unwrap();
    assert_eq!(
        sim.ep_mut(CLIENT).disconnect(now, s),
        Err(RpcError::InvalidState {
            state: SessionState::Connecting
        })
    );
    let mut app = EchoApp::default();
    sim.run_for(&mut app, Duration::from_millis(10));
    assert_eq!(
        sim.ep(CLIENT).session_state(s),
        Some(SessionState::Connected)
    );
    assert_eq!(sim.ep(CLIENT).stats().invalid_transitions, 0);
}

/// In a child process (see the test below): the token of the first
/// ConnectReq an endpoint with the default configuration sends.
fn default_token() -> u64 {
    let mut ep = Endpoint::new(EndpointConfig::default()).unwrap();
    let peer = PeerAddr::from(cfg(9).local);
    ep.connect(Instant::ZERO, peer).unwrap();
    let mut buf = vec![0u8; ep.min_tx_buf_len()];
    let n = ep.poll_transmit(Instant::ZERO, &mut buf).unwrap();
    engine::wire::parse_frame(&buf[..n]).unwrap().rpc.token
}

#[test]
fn default_tokens_differ_between_processes() {
    const CHILD: &str = "PROTO_RECLAIM_PRINT_TOKEN";
    if std::env::var_os(CHILD).is_some() {
        println!("token={}", default_token());
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let tokens: std::collections::HashSet<String> = (0..4)
        .map(|_| {
            let out = std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "proto_reclaim::default_tokens_differ_between_processes",
                    "--nocapture",
                ])
                .env(CHILD, "1")
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.lines()
                .find(|l| l.starts_with("token="))
                .unwrap_or_else(|| panic!("no token from the child: {text}"))
                .to_string()
        })
        .collect();
    assert_eq!(
        tokens.len(),
        4,
        "two processes drew the same token: {tokens:?}"
    );
}
