//! Many sessions on one server endpoint in lossless mode: 1,000 sessions
//! (from four client endpoints) connect and run one RPC each; the ring
//! reservation then refuses the next connect cleanly, both locally
//! (`RpcError::NoRingSpace`) and from the server (`SmStatus::NoRingSpace`).

mod proto_common;

use engine::proto::{Endpoint, EndpointConfig, Event, PeerAddr, RpcError, SessionState};
use engine::sim::{LinkConfig, Sim};
use engine::time::{Duration, Instant};
use engine::wire::SmStatus;
use proto_common::*;

const CLIENTS: usize = 4;
const PER_CLIENT: usize = 250;
const CREDITS: u16 = 4;

#[test]
fn thousand_sessions_then_ring_full() {
    let server_cfg = EndpointConfig {
        session_credits: CREDITS,
        rx_ring_entries: CLIENTS * PER_CLIENT * CREDITS as usize,
        max_sessions: 2048,
        ..cfg(1)
    };
    let mut sim = Sim::new(40, LinkConfig::default());
    let server = sim.add(Endpoint::new(server_cfg).unwrap());
    let clients: Vec<usize> = (0..CLIENTS)
        .map(|i| {
            let c = EndpointConfig {
                session_credits: CREDITS,
                // Room for PER_CLIENT sessions, plus one more on client 0.
                rx_ring_entries: (PER_CLIENT + usize::from(i == 0)) * CREDITS as usize,
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
            needed: CREDITS as usize,
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
    assert_eq!(srv.ring_usage(), (4000, 4000));

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
    assert_eq!(
        sim.ep(clients[0]).ring_usage().0,
        PER_CLIENT * CREDITS as usize
    );
    assert!(sessions
        .iter()
        .all(|&(c, s)| sim.ep(c).session_state(s) == Some(SessionState::Connected)));
}
