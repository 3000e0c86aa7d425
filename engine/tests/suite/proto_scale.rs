//! Many sessions on one server endpoint in lossless mode: 1,000 sessions
//! (from four client endpoints) connect and run one RPC each; the ring
//! reservation then refuses the next connect cleanly, both locally
//! (`RpcError::NoRingSpace`) and from the server (`SmStatus::NoRingSpace`).
//! And 3,000 lossy sessions between two endpoints over a lossy link: every
//! session's own deadlines (handshake retries, RTOs, keepalives) fire.

use crate::proto_common::*;
use engine::fault::DropModel;
use engine::proto::{
    Admission, Endpoint, EndpointConfig, Event, FlowMode, PeerAddr, RpcError, SessionState,
};
use engine::sim::{ChannelConfig, Sim};
use engine::time::{Duration, Instant};
use engine::wire::SmStatus;

const CLIENTS: usize = 4;
const PER_CLIENT: usize = 250;
const CREDITS: u16 = 4;
/// Ring entries a lossless session reserves: its credits and the probe's.
const PER_SESSION: usize = CREDITS as usize + 1;

#[test]
fn thousand_sessions_then_ring_full() {
    let server_cfg = EndpointConfig {
        session_credits: CREDITS,
        rx_ring_entries: CLIENTS * PER_CLIENT * PER_SESSION,
        max_sessions: 2048,
        // Filled to the last entry by clients that all hold entries: no
        // newcomers' reserve.
        admission: Admission {
            ring_reserve_pct: 0,
            ..Admission::default()
        },
        ..cfg(1)
    };
    let mut sim = Sim::new(40, ChannelConfig::default());
    let server = sim.add(Endpoint::new(server_cfg).unwrap());
    let clients: Vec<usize> = (0..CLIENTS)
        .map(|i| {
            let c = EndpointConfig {
                session_credits: CREDITS,
                // Room for PER_CLIENT sessions, plus one more on client 0.
                rx_ring_entries: (PER_CLIENT + usize::from(i == 0)) * PER_SESSION,
                max_sessions: 1024,
                ..cfg(10 + i as u8)
            };
            sim.add(Endpoint::new(c).unwrap())
        })
        .collect();
    let peer = PeerAddr::from(addr(1));
    let mut sessions = Vec::new();
    for &c in &clients {
        for _ in 0..PER_CLIENT {
            sessions.push((c, sim.ep_mut(c).connect(Instant::ZERO, peer).unwrap()));
        }
    }
    // Client 1's ring is full: the next connect is refused locally.
    assert_eq!(
        sim.ep_mut(clients[1]).connect(Instant::ZERO, peer),
        Err(RpcError::NoRingSpace {
            needed: PER_SESSION,
            available: 0
        })
    );
    let mut app = EchoApp::default();
    assert!(sim.run_for(&mut app, Duration::from_secs(1)));
    let connected = app
        .events
        .iter()
        .filter(|(_, _, e)| matches!(e, Event::Connected(_)))
        .count();
    assert_eq!(connected, CLIENTS * PER_CLIENT);
    let srv = sim.ep(server);
    assert_eq!(srv.sessions_by_state().connected, CLIENTS * PER_CLIENT);
    // Connected but not yet heard: the server reserves each session's
    // entries at its first packet.
    assert_eq!(srv.ring_usage(), (0, 5000));

    // One RPC per session, sizes from 0 B to a few packets.
    let dpp = srv.max_data_per_pkt();
    for (tag, &(c, s)) in sessions.iter().enumerate() {
        app.send(&mut sim, c, s, tag as u64, (tag * 37) % (3 * dpp));
    }
    assert!(sim.run_for(&mut app, Duration::from_secs(5)));
    assert!(app.bad.is_empty() && app.failed.is_empty());
    assert_eq!(app.completed.len(), sessions.len());
    assert_eq!(app.handler_reruns(), 0);
    assert_eq!(
        sim.ep(server).stats().handler_invocations,
        sessions.len() as u64
    );
    for &(c, s) in &sessions {
        assert_eq!(sim.ep(c).session_credits_available(s), Some(CREDITS));
    }
    assert_eq!(sim.ep(server).ring_usage(), (5000, 5000));

    // One connect beyond the server's ring: refused with NoRingSpace.
    let now = sim.now();
    let extra = sim.ep_mut(clients[0]).connect(now, peer).unwrap();
    assert!(sim.run_for(&mut app, Duration::from_secs(1)));
    assert!(app.events.iter().any(|(_, _, e)| *e
        == Event::ConnectFailed {
            session: extra,
            reason: RpcError::Refused(SmStatus::NoRingSpace)
        }));
    assert_eq!(sim.ep(clients[0]).session_state(extra), None);
    let srv = sim.ep(server);
    assert_eq!(srv.stats().connects_refused, 1);
    assert_eq!(srv.sessions_by_state().connected, CLIENTS * PER_CLIENT);
    // The refused client released its local reservation.
    assert_eq!(sim.ep(clients[0]).ring_usage().0, PER_CLIENT * PER_SESSION);
    assert!(sessions
        .iter()
        .all(|&(c, s)| sim.ep(c).session_state(s) == Some(SessionState::Connected)));
}

/// 3,000 sessions, window 1, lossy mode, 2 % loss each way: handshakes are
/// retried on their own deadlines, every RPC completes (rollbacks repair
/// the losses), and once idle every session sends its keepalive on time
/// and none is reclaimed.
#[test]
fn three_thousand_lossy_sessions_each_on_its_own_deadlines() {
    const N: usize = 3000;
    let lossy = |i: u8| EndpointConfig {
        mode: FlowMode::Lossy,
        req_window: 1,
        max_sessions: 4096,
        max_sessions_per_peer: 4096,
        admission: Admission {
            max_sessions_per_mac: 4096,
            ..Admission::default()
        },
        ..cfg(i)
    };
    let link = ChannelConfig {
        drop: DropModel::Uniform { p: 0.02 },
        ..Default::default()
    };
    let mut sim = Sim::new(41, link);
    let server = sim.add(Endpoint::new(lossy(1)).unwrap());
    let client = sim.add(Endpoint::new(lossy(2)).unwrap());
    let peer = PeerAddr::from(addr(1));
    let sessions: Vec<_> = (0..N)
        .map(|_| sim.ep_mut(client).connect(Instant::ZERO, peer).unwrap())
        .collect();
    let mut app = EchoApp::default();
    sim.run_for(&mut app, Duration::from_millis(500));
    assert_eq!(sim.ep(client).sessions_by_state().connected, N);
    assert_eq!(sim.ep(server).sessions_by_state().connected, N);
    assert_eq!(sim.ep(client).stats().sessions_connected, N as u64);

    for (tag, &s) in sessions.iter().enumerate() {
        app.send(&mut sim, client, s, tag as u64, 32);
    }
    sim.run_for(&mut app, Duration::from_secs(2));
    assert!(app.bad.is_empty() && app.failed.is_empty());
    assert_eq!(app.completed.len(), N);
    let c = sim.ep(client).stats();
    assert!(c.rollbacks > 0 && c.retransmissions > 0, "{c:?}");
    assert_eq!(c.session_resets, 0);

    // Idle: each session's keepalive deadline comes (1 s after its last
    // send); the server reclaims nothing (its idle limit is 10 s).
    let before = sim.ep(client).stats().keepalives_sent;
    sim.advance(&mut app, Duration::from_millis(1500));
    let sent = sim.ep(client).stats().keepalives_sent - before;
    assert!(sent >= N as u64, "{sent} keepalives for {N} idle sessions");
    assert_eq!(sim.ep(server).sessions_by_state().connected, N);
    assert_eq!(sim.ep(server).stats().sessions_reclaimed, 0);
    // The per-session memory figure counts the slots: twice the request
    // window, more bytes per session.
    let per = sim.ep(client).bytes_per_session();
    let wide = Endpoint::new(EndpointConfig {
        req_window: 2 * sim.ep(client).config().req_window,
        ..lossy(3)
    })
    .unwrap();
    assert!(
        wide.bytes_per_session() > per,
        "{per} vs {}",
        wide.bytes_per_session()
    );
}
