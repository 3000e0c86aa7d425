//! RCCC, receiver credit control (`EndpointConfig::rccc`, `proto/rccc.rs`),
//! in the in-memory simulator: 16 senders, each with one 256 KiB request,
//! into one receiver whose receive ring drains at its link rate (the ring
//! is its last hop's queue: one frame per frame time at 10 Gb/s). With
//! RCCC the receiver returns credits paced at its link rate and keeps
//! about one window in the network, so once the first windows have
//! drained the queue stays a few frames; without it every sender's window
//! stays queued in front of the receiver (today's behaviour). Both
//! complete every message at about the link rate. And with credit returns
//! lost, every message still completes.

use crate::proto_common::*;
use engine::proto::{Endpoint, EndpointConfig, FlowMode, PeerAddr};
use engine::sim::{ChannelConfig, Sim};
use engine::time::{Duration, Instant};
use engine::wire::{self, PktType};

const SENDERS: usize = 16;
const LEN: usize = 256 << 10;
const LINK_BPS: u64 = 10_000_000_000;
const CREDITS: u16 = 32;

/// What one incast did: (time the last message completed, the most frames
/// queued at the receiver after the first windows drained, its mean then,
/// messages completed). The queue is sampled every 5 us from 800 us on
/// while fewer than half the messages are done (all 16 still sending).
fn incast(rccc: bool) -> (Duration, usize, f64, usize) {
    incast_losing_crs(rccc, 0)
}

/// `incast`, the receiver's every `nth` credit return lost (0: none).
fn incast_losing_crs(rccc: bool, nth: u64) -> (Duration, usize, f64, usize) {
    let link = ChannelConfig {
        delay: Duration::from_micros(2),
        ..ChannelConfig::default()
    };
    let mut sim = Sim::new(7, link);
    if nth > 0 {
        let mut crs = 0u64;
        sim.set_filter(Box::new(move |_, _, _, f| {
            let cr = wire::parse_frame(f).is_ok_and(|p| p.rpc.pkt_type == PktType::CreditReturn);
            crs += u64::from(cr);
            cr && crs.is_multiple_of(nth)
        }));
    }
    let ep = |i: u8| EndpointConfig {
        mode: FlowMode::Lossy,
        session_credits: CREDITS,
        link_bps: LINK_BPS,
        rccc,
        ..cfg(i)
    };
    let server = sim.add(Endpoint::new(ep(1)).unwrap());
    // The receiver's last hop: a 1514-byte frame takes 1211.2 ns at 10
    // Gb/s; the ring is large enough that nothing is dropped either way.
    sim.set_rx_ring(server, 8192, Duration::from_nanos(1212));
    let peer = PeerAddr::from(addr(1));
    let mut sessions = Vec::new();
    for i in 0..SENDERS {
        let c = sim.add(Endpoint::new(ep(10 + i as u8)).unwrap());
        sim.set_tx_rate(c, LINK_BPS);
        sessions.push((c, sim.ep_mut(c).connect(Instant::ZERO, peer).unwrap()));
    }
    let mut app = EchoApp {
        resp_len: Some(|_| 8),
        ..EchoApp::default()
    };
    assert!(sim.run_for(&mut app, Duration::from_millis(1)));
    let start = sim.now();
    for (tag, &(c, s)) in sessions.iter().enumerate() {
        app.send(&mut sim, c, s, tag as u64, LEN);
    }
    // 16 windows of 32 frames take 620 us to drain at the link rate.
    let settle = start + Duration::from_micros(800);
    let (mut peak, mut sum, mut samples) = (0, 0usize, 0usize);
    while app.completed.len() < SENDERS && sim.now() < start + Duration::from_millis(200) {
        sim.advance(&mut app, Duration::from_micros(5));
        if sim.now() > settle && app.completed.len() < SENDERS / 2 {
            let q = sim.rx_ring_len(server);
            peak = peak.max(q);
            sum += q;
            samples += 1;
        }
    }
    assert!(
        app.bad.is_empty() && app.failed.is_empty(),
        "{:?}",
        app.failed
    );
    let last = app.completed.iter().map(|&(_, t)| t).max().unwrap_or(start);
    let mean = sum as f64 / samples.max(1) as f64;
    // Acks are never held back, credits are: no sender times out.
    for &(c, _) in &sessions {
        let st = sim.ep(c).stats();
        if nth == 0 {
            assert_eq!((st.retransmissions, st.rollbacks), (0, 0), "rccc {rccc}");
        }
    }
    (
        last.saturating_since(start),
        peak,
        mean,
        app.completed.len(),
    )
}

#[test]
fn rccc_keeps_the_incast_queue_at_the_receiver_not_in_front_of_it() {
    let (t_off, peak_off, mean_off, done_off) = incast(false);
    let (t_on, peak_on, mean_on, done_on) = incast(true);
    eprintln!(
        "off: {t_off:?} peak {peak_off} mean {mean_off:.1}; on: {t_on:?} peak {peak_on} mean {mean_on:.1}"
    );
    assert_eq!((done_off, done_on), (SENDERS, SENDERS));
    // Off: every window queued at the last hop (16 x 32 frames, less the
    // few in flight).
    assert!(mean_off > 300.0, "off: mean queue {mean_off}");
    // On: about one window (32 frames) in the network, most of it on the
    // wires: the queue stays a small fraction of the windows' sum.
    assert!(peak_on <= 64, "on: peak queue {peak_on}");
    // Both at about the link rate: 16 x 256 KiB in 182 frames each at
    // 1211.2 ns is 3.53 ms; RCCC's pacer runs at 0.99 of it.
    let ideal = Duration::from_nanos(16 * 182 * 1212);
    for t in [t_off, t_on] {
        assert!(t >= ideal, "{t:?} < {ideal:?}");
        assert!(
            t.as_nanos() < ideal.as_nanos() * 110 / 100,
            "{t:?} vs {ideal:?}"
        );
    }
}

/// A lost credit return can strand no sender: the next CR says again what
/// the receiver keeps back, and a sender kept back with nothing left in
/// flight to draw one takes its credits back after an RTO (5 ms here, the
/// engine's default, which is also what the lost CRs cost without RCCC).
#[test]
fn lost_credit_returns_strand_no_sender() {
    for nth in [3, 7] {
        let (t_off, _, _, done_off) = incast_losing_crs(false, nth);
        let (t_on, _, _, done_on) = incast_losing_crs(true, nth);
        eprintln!("every {nth}th CR lost: off {t_off:?}, on {t_on:?}");
        assert_eq!(
            (done_off, done_on),
            (SENDERS, SENDERS),
            "every {nth}th CR lost"
        );
        assert!(
            t_on.as_nanos() < 3 * t_off.as_nanos(),
            "{t_on:?} vs {t_off:?}"
        );
    }
}
