//! Multi-packet messages on the in-memory link: response credits granted
//! with the request (the granted response packets need no RFR), cumulative
//! credit returns (one CR per burst; a lost one is repaired), and the
//! credit discipline under seeded loss and reordering: never more packets
//! in flight between the two ends than the client reserved.

use crate::proto_common::*;
use engine::fault::DropModel;
use engine::proto::{EndpointConfig, FlowMode};
use engine::sim::ChannelConfig;
use engine::time::Duration;
use engine::wire::{self, PktType};
use std::cell::RefCell;
use std::rc::Rc;

/// Frames per packet type seen on the wire (sent, before any loss).
#[derive(Debug, Default, Clone, Copy)]
struct Seen {
    requests: u64,
    rfrs: u64,
    crs: u64,
    responses: u64,
}

/// Taps the wire into a shared `Seen`; drops the CRs whose ordinal (1-based,
/// among CRs) is in `drop_crs`.
fn tap(p: &mut Pair, drop_crs: &'static [u64]) -> Rc<RefCell<Seen>> {
    let seen = Rc::new(RefCell::new(Seen::default()));
    let s = seen.clone();
    p.sim.set_filter(Box::new(move |_, _, _, f| {
        let Ok(parsed) = wire::parse_frame(f) else {
            return false;
        };
        let mut s = s.borrow_mut();
        match parsed.rpc.pkt_type {
            PktType::Request => s.requests += 1,
            PktType::ReqForResp => s.rfrs += 1,
            PktType::Response => s.responses += 1,
            PktType::CreditReturn => {
                s.crs += 1;
                return drop_crs.contains(&s.crs);
            }
            _ => {}
        }
        false
    }));
    seen
}

fn lossless() -> FlowMode {
    FlowMode::Lossless
}

fn with_credits(i: u8, credits: u16, mode: FlowMode) -> EndpointConfig {
    EndpointConfig {
        session_credits: credits,
        mode,
        ..cfg(i)
    }
}

#[test]
fn response_within_grant_needs_no_rfr() {
    // 32 credits; a one-packet request answered by a 10-packet response:
    // the request grants 31, so the server sends all 10 unasked.
    let mut p = Pair::new(1, ChannelConfig::default(), cfg(1), cfg(2));
    let dpp = p.sim.ep(CLIENT).max_data_per_pkt();
    let seen = tap(&mut p, &[]);
    p.app.resp_len = Some(|_| 10 * 1444 - 5);
    assert_eq!(dpp, 1444);
    p.app.send(&mut p.sim, CLIENT, p.session, 0, 100);
    p.run_idle(Duration::from_secs(1));
    p.check_clean();
    let s = *seen.borrow();
    assert_eq!((s.requests, s.rfrs, s.responses), (1, 0, 10), "{s:?}");
}

#[test]
fn response_beyond_grant_pulls_the_rest_with_rfrs() {
    // 8 credits: the request grants 7, so a 20-packet response needs
    // exactly 20 - 1 - 7 = 12 RFRs.
    let c = |i| with_credits(i, 8, lossless());
    let mut p = Pair::new(2, ChannelConfig::default(), c(1), c(2));
    let seen = tap(&mut p, &[]);
    p.app.resp_len = Some(|_| 20 * 1444);
    p.app.send(&mut p.sim, CLIENT, p.session, 0, 100);
    p.run_idle(Duration::from_secs(1));
    p.check_clean();
    let s = *seen.borrow();
    assert_eq!((s.rfrs, s.responses), (12, 20), "{s:?}");
}

#[test]
fn small_requests_still_pipeline_with_grants() {
    // A window of 8 one-packet requests with 9 credits: grants leave one
    // credit per other busy slot, so all 8 go out in the first burst.
    let c = |i| with_credits(i, 9, lossless());
    let mut p = Pair::new(3, ChannelConfig::default(), c(1), c(2));
    for tag in 0..8 {
        p.app.send(&mut p.sim, CLIENT, p.session, tag, 32);
    }
    let t0 = p.sim.now();
    p.run_idle(Duration::from_secs(1));
    p.check_clean();
    // One round trip (2 x 5 us), not eight.
    let last = p.app.completed.iter().map(|c| c.1).max().unwrap();
    assert!(last.saturating_since(t0) < Duration::from_micros(20));
    assert_eq!(p.sim.ep(CLIENT).stats().credit_stalls, 0);
}

#[test]
fn one_cumulative_cr_per_burst() {
    // 40 request packets, 32 credits: the first 32 arrive together and get
    // one CR, the next 7 non-last packets another; Response(0) answers the
    // last. Per-packet CRs would have been 39.
    let mut p = Pair::new(4, ChannelConfig::default(), cfg(1), cfg(2));
    let seen = tap(&mut p, &[]);
    p.app.resp_len = Some(|_| 8);
    p.app.send(&mut p.sim, CLIENT, p.session, 0, 40 * 1444);
    p.run_idle(Duration::from_secs(1));
    p.check_clean();
    let s = *seen.borrow();
    assert_eq!((s.requests, s.crs, s.responses), (40, 2, 1), "{s:?}");
}

#[test]
fn lost_cumulative_cr_is_repaired_by_the_next() {
    // Request packets arrive spaced by a 10 Gb/s bottleneck, so CRs go out
    // one by one; losing the third costs nothing: the fourth covers it.
    let link = ChannelConfig {
        rate_bps: Some(10_000_000_000),
        ..Default::default()
    };
    let mut p = Pair::new(5, link, cfg(1), cfg(2));
    let seen = tap(&mut p, &[3]);
    p.app.resp_len = Some(|_| 8);
    p.app.send(&mut p.sim, CLIENT, p.session, 0, 60 * 1444);
    p.run_idle(Duration::from_secs(1));
    p.check_clean();
    let c = p.sim.ep(CLIENT).stats();
    assert!(seen.borrow().crs > 3);
    assert_eq!((c.rollbacks, c.retransmissions), (0, 0), "{c:?}");
}

#[test]
fn lost_cumulative_cr_with_nothing_behind_it_is_repaired_by_go_back_n() {
    // The only CR of a burst that used every credit is lost: the client
    // times out, goes back, and the server's CR for the duplicate names
    // the highest packet it holds, so the request completes.
    let mut p = Pair::new(6, ChannelConfig::default(), lossy(1), lossy(2));
    let seen = tap(&mut p, &[1]);
    p.app.resp_len = Some(|_| 3 * 1444);
    p.app.send(&mut p.sim, CLIENT, p.session, 0, 40 * 1444);
    p.run_idle(Duration::from_secs(1));
    p.check_clean();
    let c = p.sim.ep(CLIENT).stats();
    let srv = p.sim.ep(SERVER).stats();
    assert!(c.rollbacks >= 1, "{c:?}");
    assert!(srv.drops.dup_request >= 1, "{srv:?}");
    assert!(seen.borrow().crs >= 2);
}

fn lossy(i: u8) -> EndpointConfig {
    EndpointConfig {
        mode: FlowMode::Lossy,
        ..cfg(i)
    }
}

/// Frames on the wire from `from` to `to` right now.
fn on_wire(p: &Pair, from: usize, to: usize) -> u64 {
    let l = p.sim.link_stats(from, to);
    l.sent + l.duplicated - l.delivered - l.dropped_loss - l.dropped_queue - l.dropped_blocked
}

/// Runs a mix of message sizes (multi-packet both ways, grants and
/// cumulative CRs in play) over a lossy link in steps, asserting at every
/// step that the client's free credits never exceed its total, that its
/// packets on the wire never exceed `bound`, and, without reordering, that
/// all frames on the wire (client packets plus server answers) never do:
/// every answer on the wire holds a credit the client reserved.
fn credit_discipline(seed: u64, mode: FlowMode, bound: u64, reorder: bool) {
    const C: u16 = 8;
    let link = ChannelConfig {
        drop: DropModel::Uniform { p: 0.01 },
        reorder_p: if reorder { 0.3 } else { 0.0 },
        reorder_max: Duration::from_micros(20),
        ..Default::default()
    };
    let c = |i| with_credits(i, C, mode);
    let mut p = Pair::new(seed, link, c(1), c(2));
    p.app.resp_len = Some(|n| (n * 3 / 2) % (9 * 1444) + 1);
    for tag in 0..40u64 {
        let len = (tag as usize * 1777) % (12 * 1444);
        p.app.send(&mut p.sim, CLIENT, p.session, tag, len);
    }
    let deadline = p.sim.now() + Duration::from_secs(30);
    while p.app.completed.len() < p.app.expected.len() {
        assert!(p.sim.now() < deadline, "seed {seed}: not done");
        p.sim.run_for(&mut p.app, Duration::from_micros(3));
        let up = on_wire(&p, CLIENT, SERVER);
        let down = on_wire(&p, SERVER, CLIENT);
        assert!(up <= bound, "seed {seed}: {up} client packets in flight");
        if !reorder {
            assert!(up + down <= bound, "seed {seed}: {up} + {down} in flight");
        }
        let free = p.sim.ep(CLIENT).session_credits_available(p.session);
        assert!(free.is_some_and(|f| f <= C), "seed {seed}: {free:?}");
    }
    p.run_idle(Duration::from_secs(5));
    p.check_clean();
    let lost = p.sim.link_stats(CLIENT, SERVER).dropped_loss
        + p.sim.link_stats(SERVER, CLIENT).dropped_loss;
    assert!(lost > 0, "seed {seed}: nothing lost");
}

#[test]
fn credits_bound_the_wire_under_loss_lossy() {
    for seed in [11, 12, 13, 14] {
        credit_discipline(seed, FlowMode::Lossy, 8, false);
        credit_discipline(seed, FlowMode::Lossy, 8, true);
    }
}

#[test]
fn credits_bound_the_wire_under_loss_lossless() {
    // Lossless mode may add one probe (into the ring entry each session
    // reserves for it) to the credits.
    for seed in [21, 22, 23, 24] {
        credit_discipline(seed, lossless(), 9, false);
        credit_discipline(seed, lossless(), 9, true);
    }
}

#[test]
fn late_answers_to_large_requests_with_many_credits_are_spurious() {
    // Lossless, RTT 8 ms > rto 5 ms, nothing lost, 128 credits: 64 KiB
    // requests (the last packet grants most credits) with 32 B responses.
    // Every timeout probes and each probe must be proven spurious.
    let link = ChannelConfig {
        delay: Duration::from_millis(4),
        ..Default::default()
    };
    let c = |i| EndpointConfig {
        req_window: 1,
        ..with_credits(i, 128, lossless())
    };
    let mut p = Pair::new(31, link, c(1), c(2));
    p.app.resp_len = Some(|_| 32);
    for tag in 0..6 {
        p.app.send(&mut p.sim, CLIENT, p.session, tag, 65536);
    }
    p.run_idle(Duration::from_secs(60));
    p.check_clean();
    let c = p.sim.ep(CLIENT).stats();
    assert!(c.probes_sent > 0, "{c:?}");
    assert_eq!(c.lossless_violations, 0, "{c:?}");
}
