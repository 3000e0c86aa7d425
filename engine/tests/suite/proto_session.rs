//! Session-level behaviour on the in-memory link: window and backlog, slow
//! handlers, peer death and session reset, the lossless loss policies, the
//! connect/disconnect handshake (timeouts, refusals, MAC learning).

use crate::proto_common::*;
use engine::proto::{
    Endpoint, EndpointConfig, Event, FlowMode, LossPolicy, PeerAddr, RpcError, SessionState,
};
use engine::sim::{ChannelConfig, Sim};
use engine::time::{Duration, Instant};
use engine::wire::{self, MacAddr, PktType, SmStatus};
use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;

fn lossless(i: u8, on_loss: LossPolicy) -> EndpointConfig {
    EndpointConfig {
        mode: FlowMode::Lossless,
        on_loss,
        ..cfg(i)
    }
}

#[test]
fn window_of_8_with_backlog_of_12() {
    let mut p = Pair::new(20, ChannelConfig::default(), cfg(1), cfg(2));
    assert_eq!(p.sim.ep(CLIENT).config().req_window, 8);
    let dpp = p.sim.ep(CLIENT).max_data_per_pkt();
    for tag in 0..20 {
        p.app.send(&mut p.sim, CLIENT, p.session, tag, 2 * dpp + 5);
    }
    assert_eq!(
        p.sim.ep(CLIENT).session_pending_requests(p.session),
        Some(20)
    );
    p.run_idle(Duration::from_secs(5));
    p.check_clean();
    // Backlog is FIFO: requests reach the handler in enqueue order.
    let tags: Vec<u64> = p.app.handled_order.iter().map(|h| h.0).collect();
    assert_eq!(tags, (0..20).collect::<Vec<_>>());
    // The first window takes slots 0..8; each slot's req_nums grow by the window.
    let nums: Vec<u64> = p.app.handled_order.iter().map(|h| h.1).collect();
    assert_eq!(&nums[..8], &[0, 1, 2, 3, 4, 5, 6, 7]);
    let mut last = [None::<u64>; 8];
    for &n in &nums {
        let slot = (n % 8) as usize;
        assert!(
            last[slot].map_or(n < 8, |l| n == l + 8),
            "req_num {n} after {last:?}"
        );
        last[slot] = Some(n);
    }
}

#[test]
fn slow_handler_runs_once_despite_retransmissions() {
    let mut p = Pair::new(21, ChannelConfig::default(), cfg(1), cfg(2));
    p.app.hold = true;
    let dpp = p.sim.ep(CLIENT).max_data_per_pkt();
    p.app.send(&mut p.sim, CLIENT, p.session, 0, 3 * dpp);
    p.app.send(&mut p.sim, CLIENT, p.session, 1, 10);
    // Hold the responses for 30 ms (6 RTOs): the client keeps resending the
    // last request packet; the server has nothing to re-send yet.
    p.sim.run_for(&mut p.app, Duration::from_millis(30));
    assert_eq!(p.app.held.len(), 2);
    let s = p.sim.ep(SERVER).stats();
    assert!(s.drops.dup_request_no_response >= 4, "{s:?}");
    let now = p.sim.now();
    for (node, h, req) in std::mem::take(&mut p.app.held) {
        EchoApp::answer(p.sim.ep_mut(node), now, h, &req, None);
    }
    p.run_idle(Duration::from_secs(1));
    p.check_clean();
    assert_eq!(p.sim.ep(SERVER).stats().handler_invocations, 2);
}

#[test]
fn peer_death_fails_all_requests_within_session_timeout() {
    let mut p = Pair::new(22, ChannelConfig::default(), cfg(1), cfg(2));
    let dpp = p.sim.ep(CLIENT).max_data_per_pkt();
    let last_tx = Rc::new(RefCell::new(Instant::ZERO));
    let lt = last_tx.clone();
    p.sim.set_filter(Box::new(move |now, from, _, _| {
        if from == CLIENT {
            *lt.borrow_mut() = now;
        }
        false
    }));
    for tag in 0..30 {
        p.app.send(&mut p.sim, CLIENT, p.session, tag, 40 * dpp);
    }
    while p.app.completed.len() < 3 {
        p.sim.run_for(&mut p.app, Duration::from_micros(50));
    }
    let death = p.sim.now();
    p.sim.set_rx_enabled(SERVER, false);
    p.run_idle(Duration::from_secs(10));

    let cfg = p.sim.ep(CLIENT).config().clone();
    let deadline = death + ChannelConfig::default().delay + cfg.session_timeout + cfg.scan_interval;
    let resets: Vec<_> = p
        .app
        .events
        .iter()
        .filter_map(|(_, t, e)| match e {
            Event::SessionReset { session, reason } => Some((*t, *session, *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(resets.len(), 1);
    let (t_reset, s, reason) = resets[0];
    assert_eq!((s, reason), (p.session, RpcError::PeerTimeout));
    assert!(
        t_reset <= deadline,
        "reset at {t_reset:?}, deadline {deadline:?}"
    );
    assert!(t_reset + Duration::from_millis(1) >= death + cfg.session_timeout);
    // Every request completed or failed with SessionReset, none twice.
    assert_eq!(p.app.completed.len() + p.app.failed.len(), 30);
    assert!(p.app.failed.len() >= 22, "window + backlog must fail");
    assert!(p.app.failed.iter().all(|f| f.2 == RpcError::SessionReset));
    let failed: HashSet<u64> = p.app.failed.iter().map(|f| f.1).collect();
    assert_eq!(failed.len(), p.app.failed.len());
    assert!(p.app.completed.iter().all(|c| !failed.contains(&c.0)));
    assert!(p.app.failed.iter().all(|f| p
        .app
        .events
        .iter()
        .any(|(_, t, e)| *t <= deadline
            && matches!(e, Event::RequestFailed { tag, .. } if *tag == f.1))));
    // Nothing more on the wire for that session; credits are home.
    assert!(*last_tx.borrow() <= t_reset, "client sent after reset");
    let c = p.sim.ep(CLIENT);
    assert_eq!(c.session_state(p.session), Some(SessionState::Reset));
    assert_eq!(
        c.session_credits_available(p.session),
        Some(cfg.session_credits)
    );
    assert_eq!(c.stats().session_resets, 1);
    assert_eq!(c.stats().requests_failed as usize, p.app.failed.len());
    assert!(c.is_idle(), "nothing in progress after the reset");
    let tx = c.stats().tx_pkts;
    let now = p.sim.now();
    let m = p.sim.ep_mut(CLIENT).alloc_msg(4);
    let err = p
        .sim
        .ep_mut(CLIENT)
        .enqueue_request(now, p.session, 1, m, 99);
    assert!(matches!(
        err,
        Err((
            RpcError::InvalidState {
                state: SessionState::Reset
            },
            _
        ))
    ));
    p.sim.run_for(&mut p.app, Duration::from_secs(2));
    assert_eq!(p.sim.ep(CLIENT).stats().tx_pkts, tx);
    // A reset session is freed by disconnect.
    p.sim.ep_mut(CLIENT).disconnect(now, p.session).unwrap();
    assert_eq!(p.sim.ep(CLIENT).session_state(p.session), None);
    assert_eq!(p.sim.ep(CLIENT).ring_usage().0, 0);
}

/// Drops the `n`-th (0-based) client request packet.
fn drop_nth_request(n: usize) -> engine::sim::Filter {
    let mut seen = 0;
    Box::new(move |_, from, _, frame| {
        let is_req = wire::parse_frame(frame).is_ok_and(|p| p.rpc.pkt_type == PktType::Request);
        if from == CLIENT && is_req {
            seen += 1;
            return seen == n + 1;
        }
        false
    })
}

#[test]
fn lossless_reset_policy_resets_on_one_loss() {
    let mut p = Pair::new(
        23,
        ChannelConfig::default(),
        lossless(1, LossPolicy::ResetSession),
        lossless(2, LossPolicy::ResetSession),
    );
    let dpp = p.sim.ep(CLIENT).max_data_per_pkt();
    p.sim.set_filter(drop_nth_request(3));
    for tag in 0..3 {
        p.app.send(&mut p.sim, CLIENT, p.session, tag, 10 * dpp);
    }
    p.run_idle(Duration::from_secs(2));
    let c = p.sim.ep(CLIENT).stats();
    assert_eq!(c.lossless_violations, 1);
    assert_eq!(c.session_resets, 1);
    // The timeout sent one probe; no duplicate came back, so it was a loss.
    assert_eq!((c.probes_sent, c.retransmissions), (1, 1));
    // Packets go round-robin over the slots, so the 4th request packet is
    // request 0's second: requests 1 and 2 complete, request 0 fails.
    assert_eq!(p.app.failed, vec![(p.session, 0, RpcError::SessionReset)]);
    assert_eq!(p.app.completed.len(), 2);
    assert!(p.app.bad.is_empty());
    assert!(p.app.events.iter().any(|(_, _, e)| *e
        == Event::SessionReset {
            session: p.session,
            reason: RpcError::LosslessViolation
        }));
    assert_eq!(
        p.sim.ep(CLIENT).session_state(p.session),
        Some(SessionState::Reset)
    );
}

#[test]
fn lossless_retransmit_policy_counts_and_completes() {
    let mut p = Pair::new(
        24,
        ChannelConfig::default(),
        lossless(1, LossPolicy::Retransmit),
        lossless(2, LossPolicy::Retransmit),
    );
    let dpp = p.sim.ep(CLIENT).max_data_per_pkt();
    p.sim.set_filter(drop_nth_request(3));
    for tag in 0..3 {
        p.app.send(&mut p.sim, CLIENT, p.session, tag, 10 * dpp);
    }
    p.run_idle(Duration::from_secs(2));
    p.check_clean();
    let c = p.sim.ep(CLIENT).stats();
    assert_eq!(c.lossless_violations, 1);
    assert_eq!(c.rollbacks, 1);
    assert!(c.retransmissions >= 1);
    assert_eq!(c.session_resets, 0);
}

#[test]
fn connect_to_silent_peer_fails_after_connect_timeout() {
    let mut sim = Sim::new(25, ChannelConfig::default());
    let c = sim.add(Endpoint::new(cfg(2)).unwrap());
    let mut app = EchoApp::default();
    let ccfg = sim.ep(c).config().clone();
    let s = sim
        .ep_mut(c)
        .connect(Instant::ZERO, PeerAddr::from(addr(9)))
        .unwrap();
    assert_eq!(sim.ep(c).session_state(s), Some(SessionState::Connecting));
    // Requests may be queued while connecting; they fail with the connect.
    let m = make_request(sim.ep_mut(c), 5, 10);
    sim.ep_mut(c)
        .enqueue_request(Instant::ZERO, s, 1, m, 5)
        .unwrap();
    assert!(sim.run_until(&mut app, Instant::ZERO + Duration::from_secs(10)));
    let failed: Vec<_> = app
        .events
        .iter()
        .filter(|(_, _, e)| matches!(e, Event::ConnectFailed { .. }))
        .collect();
    assert_eq!(failed.len(), 1);
    let (_, t, e) = failed[0];
    assert_eq!(
        *e,
        Event::ConnectFailed {
            session: s,
            reason: RpcError::ConnectTimeout
        }
    );
    assert!(*t >= Instant::ZERO + ccfg.connect_timeout);
    assert!(*t <= Instant::ZERO + ccfg.connect_timeout + ccfg.scan_interval);
    assert_eq!(app.failed, vec![(s, 5, RpcError::SessionClosed)]);
    assert_eq!(sim.ep(c).session_state(s), None);
    assert_eq!(sim.ep(c).ring_usage().0, 0);
    // One ConnectReq per connect_retry.
    let retries = ccfg.connect_timeout.as_nanos() / ccfg.connect_retry.as_nanos();
    let tx = sim.ep(c).stats().tx_pkts;
    assert!(
        tx >= retries && tx <= retries + 1,
        "tx={tx} retries={retries}"
    );
}

#[test]
fn connect_with_unknown_mac_learns_it() {
    let mut sim = Sim::new(26, ChannelConfig::default());
    let srv = sim.add(Endpoint::new(cfg(1)).unwrap());
    let cli = sim.add(Endpoint::new(cfg(2)).unwrap());
    let other = sim.add(Endpoint::new(cfg(3)).unwrap());
    let dst_macs = Rc::new(RefCell::new(Vec::new()));
    let d = dst_macs.clone();
    sim.set_filter(Box::new(move |_, from, to, frame| {
        if from == cli && to == srv {
            d.borrow_mut().push(MacAddr(frame[..6].try_into().unwrap()));
        }
        false
    }));
    let peer = PeerAddr {
        mac: None,
        ..PeerAddr::from(addr(1))
    };
    let s = sim.ep_mut(cli).connect(Instant::ZERO, peer).unwrap();
    let mut app = EchoApp::default();
    sim.run_for(&mut app, Duration::from_millis(5));
    assert!(app.connected(s));
    app.send(&mut sim, cli, s, 1, 3000);
    assert!(sim.run_for(&mut app, Duration::from_secs(1)));
    assert_eq!(app.completed.len(), 1);
    assert!(app.bad.is_empty());
    let macs = dst_macs.borrow();
    assert_eq!(macs[0], MacAddr::BROADCAST);
    assert!(macs[1..].iter().all(|m| *m == addr(1).mac), "{macs:?}");
    // The bystander saw the broadcast ConnectReq and ignored it.
    assert_eq!(sim.ep(other).stats().drops.not_ours, 1);
    assert_eq!(sim.ep(other).sessions_by_state().connected, 0);
    let _ = srv;
}

#[test]
fn mtu_mismatch_is_refused() {
    let mut sim = Sim::new(27, ChannelConfig::default());
    sim.add(Endpoint::new(cfg(1)).unwrap());
    let c = sim.add(
        Endpoint::new(EndpointConfig {
            mtu: 1400,
            ..cfg(2)
        })
        .unwrap(),
    );
    let s = sim
        .ep_mut(c)
        .connect(Instant::ZERO, PeerAddr::from(addr(1)))
        .unwrap();
    let mut app = EchoApp::default();
    assert!(sim.run_for(&mut app, Duration::from_secs(1)));
    assert!(app.events.iter().any(|(_, _, e)| *e
        == Event::ConnectFailed {
            session: s,
            reason: RpcError::Refused(SmStatus::BadMtu)
        }));
    assert_eq!(sim.ep(0).stats().connects_refused, 1);
    assert_eq!(sim.ep(0).sessions_by_state().connected, 0);
}

#[test]
fn disconnect_frees_both_sides() {
    let mut p = Pair::new(28, ChannelConfig::default(), cfg(1), cfg(2));
    p.app.send(&mut p.sim, CLIENT, p.session, 0, 5000);
    p.run_idle(Duration::from_secs(1));
    p.check_clean();
    assert_eq!(p.sim.ep(SERVER).ring_usage().0, 32 + 1);
    let now = p.sim.now();
    p.sim.ep_mut(CLIENT).disconnect(now, p.session).unwrap();
    assert_eq!(
        p.sim.ep(CLIENT).session_state(p.session),
        Some(SessionState::Disconnecting)
    );
    p.run_idle(Duration::from_secs(1));
    assert!(p
        .app
        .events
        .iter()
        .any(|(n, _, e)| *n == CLIENT && *e == Event::Disconnected(p.session)));
    assert!(p
        .app
        .events
        .iter()
        .any(|(n, _, e)| *n == SERVER && matches!(e, Event::PeerSessionClosed(_))));
    for n in [CLIENT, SERVER] {
        let ep = p.sim.ep(n);
        assert_eq!(ep.sessions_by_state(), Default::default());
        assert_eq!(ep.ring_usage().0, 0);
    }
    // Stale handle after free.
    let now = p.sim.now();
    assert_eq!(
        p.sim.ep_mut(CLIENT).disconnect(now, p.session),
        Err(RpcError::UnknownSession)
    );
}

#[test]
fn disconnect_from_dead_server_completes_locally() {
    let mut p = Pair::new(29, ChannelConfig::default(), cfg(1), cfg(2));
    p.sim.set_rx_enabled(SERVER, false);
    let now = p.sim.now();
    p.sim.ep_mut(CLIENT).disconnect(now, p.session).unwrap();
    p.run_idle(Duration::from_secs(5));
    let t = p
        .app
        .events
        .iter()
        .find(|(_, _, e)| *e == Event::Disconnected(p.session))
        .map(|e| e.1)
        .expect("Disconnected");
    let c = p.sim.ep(CLIENT).config().connect_timeout;
    assert!(t >= now + c);
    assert_eq!(p.sim.ep(CLIENT).sessions_by_state(), Default::default());
}

#[test]
fn error_answer_fails_the_request_within_a_round_trip() {
    use engine::proto::ErrorCode;
    let mut p = Pair::new(27, ChannelConfig::default(), cfg(1), cfg(2));
    p.app.hold = true;
    let dpp = p.sim.ep(CLIENT).max_data_per_pkt();
    // A multi-packet request, so its answer replaces Response(0) after CRs.
    p.app.send(&mut p.sim, CLIENT, p.session, 1, 3 * dpp);
    p.sim.run_for(&mut p.app, Duration::from_millis(1));
    let (node, handle, _) = p.app.held.pop().expect("request not delivered");
    assert_eq!(node, SERVER);
    p.sim
        .ep_mut(SERVER)
        .respond_error(handle, ErrorCode::NoHandler)
        .unwrap();
    let sent = p.sim.now();
    p.sim.run_for(&mut p.app, Duration::from_millis(1));
    // Failed with the server's code within one round trip, not a timeout.
    assert_eq!(
        p.app.failed,
        vec![(p.session, 1, RpcError::Remote(ErrorCode::NoHandler))]
    );
    let failed_at = p
        .app
        .events
        .iter()
        .find_map(|(_, t, e)| matches!(e, Event::RequestFailed { .. }).then_some(*t));
    assert!(failed_at.unwrap() < sent + p.sim.ep(CLIENT).config().rto);
    let c = p.sim.ep(CLIENT);
    assert_eq!(c.session_state(p.session), Some(SessionState::Connected));
    assert_eq!(
        c.session_credits_available(p.session),
        Some(c.config().session_credits)
    );
    assert_eq!(c.stats().retransmissions, 0);
    assert_eq!(c.msgs_outstanding(), 0, "the request buffer went home");
    // The session still works afterwards.
    p.app.hold = false;
    p.app.failed.clear();
    p.app.expected.clear();
    p.app.send(&mut p.sim, CLIENT, p.session, 2, 10);
    p.run_idle(Duration::from_secs(1));
    assert_eq!(p.app.completed.iter().filter(|c| c.0 == 2).count(), 1);
}

#[test]
fn request_window_mismatch_is_refused_with_a_named_status() {
    let mut sim = Sim::new(28, ChannelConfig::default());
    let server = cfg(1);
    let peer = PeerAddr::from(server.local);
    sim.add(Endpoint::new(server).unwrap());
    let client = EndpointConfig {
        req_window: 4,
        ..cfg(2)
    };
    sim.add(Endpoint::new(client).unwrap());
    let now = sim.now();
    let s = sim.ep_mut(CLIENT).connect(now, peer).unwrap();
    let mut app = EchoApp::default();
    sim.run_for(&mut app, Duration::from_millis(5));
    let failed = app.events.iter().find_map(|(_, _, e)| match e {
        Event::ConnectFailed { session, reason } if *session == s => Some(*reason),
        _ => None,
    });
    let reason = failed.expect("connect did not fail");
    assert_eq!(reason, RpcError::Refused(SmStatus::BadWindow));
    assert!(reason.to_string().contains("req_window"), "{reason}");
    assert_eq!(sim.ep(SERVER).stats().connects_refused, 1);
    assert_eq!(sim.ep(SERVER).sessions_by_state().connected, 0);
    assert_eq!(sim.ep(SERVER).ring_usage().0, 0, "refusal reserved nothing");
}
