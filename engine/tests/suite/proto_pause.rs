//! Reactive pause on the in-memory link: a slow receiver (a receive ring
//! drained slower than the link fills it) with more credits in flight than
//! its ring holds. Lossy mode overflows the ring; pause mode with headroom
//! for the round trip does not; pause mode whose headroom is smaller than
//! the round trip overflows anyway: the headroom rule, shown. And a paused
//! sender stops all traffic to that receiver, not just one session.

use crate::proto_common::*;
use engine::proto::{bdp_credits, EndpointConfig, FlowMode, PauseConfig, SessionId};
use engine::sim::ChannelConfig;
use engine::time::Duration;
use engine::wire::{parse_frame, PktType};
use std::cell::RefCell;
use std::rc::Rc;

const RING: usize = 64;
const LINK_BPS: u64 = 10_000_000_000;
const ONE_WAY: Duration = Duration::from_micros(5);
const PAUSE_TIME: Duration = Duration::from_micros(200);

/// Pause mode with `pause`'s thresholds, or lossy mode with `None`.
fn cfg_with(i: u8, pause: Option<PauseConfig>) -> EndpointConfig {
    EndpointConfig {
        mode: pause.map_or(FlowMode::Lossy, |_| FlowMode::Pause),
        pause: pause.unwrap_or_default(),
        session_credits: 32,
        rx_ring_entries: RING,
        ..cfg(i)
    }
}

fn pause(headroom: usize) -> Option<PauseConfig> {
    Some(PauseConfig::for_ring(RING, headroom, PAUSE_TIME))
}

struct Outcome {
    /// Client data frames sent while an XOFF was in force at the client.
    sent_while_paused: u32,
    ring_drops: u64,
    peak: usize,
    pause_frames: u64,
    paused_ns: u64,
}

/// Four sessions x 32 credits (128 packets may be in flight) of 40 kB
/// requests to a server whose 64-entry ring drains one frame per 2 us
/// while the link delivers one per 1.2 us.
fn slow_receiver(mode: Option<PauseConfig>) -> Outcome {
    let link = ChannelConfig {
        delay: ONE_WAY,
        ..Default::default()
    };
    let mut p = Pair::new(21, link, cfg_with(1, mode), cfg_with(2, mode));
    p.sim.set_tx_rate(CLIENT, LINK_BPS);
    p.sim.set_tx_rate(SERVER, LINK_BPS);
    p.sim.set_rx_ring(SERVER, RING, Duration::from_micros(2));
    let peer = engine::proto::PeerAddr::from(addr(1));
    let now = p.sim.now();
    let mut sessions: Vec<SessionId> = vec![p.session];
    for _ in 0..3 {
        sessions.push(p.sim.ep_mut(CLIENT).connect(now, peer).unwrap());
    }
    p.sim.run_for(&mut p.app, Duration::from_millis(5));
    p.app.resp_len = Some(|_| 32);
    // Watch the wire: pause frames from the server (in force at the client
    // one way later, until XON lands or the pause time runs out), data
    // frames from the client.
    let log = Rc::new(RefCell::new((Vec::new(), Vec::new())));
    let l = log.clone();
    p.sim.set_filter(Box::new(move |now, from, _, frame| {
        if let Ok(f) = parse_frame(frame) {
            let mut l = l.borrow_mut();
            match f.rpc.pkt_type {
                PktType::Pause if from == SERVER => l.0.push((now + ONE_WAY, f.rpc.msg_size)),
                PktType::Request | PktType::ReqForResp if from == CLIENT => l.1.push(now),
                _ => {}
            }
        }
        false
    }));
    let mut tag = 0;
    for _ in 0..6 {
        for &s in &sessions {
            p.app.send(&mut p.sim, CLIENT, s, tag, 40_000);
            tag += 1;
        }
    }
    p.run_idle(Duration::from_secs(30));
    assert!(p.app.bad.is_empty() && p.app.failed.is_empty());
    assert_eq!(p.app.completed.len(), 24, "not every RPC completed");
    let (c, s) = (p.sim.ep(CLIENT).stats(), p.sim.ep(SERVER).stats());
    assert!(c.rx_accounted() && s.rx_accounted());
    let (pauses, data) = &*log.borrow();
    let mut windows = Vec::new();
    for (k, &(at, us)) in pauses.iter().enumerate() {
        if us > 0 {
            let until = at + Duration::from_micros(us as u64);
            let xon = pauses[k + 1..].iter().find(|x| x.1 == 0).map(|x| x.0);
            windows.push((at, xon.map_or(until, |x| x.min(until))));
        }
    }
    let sent_while_paused = data
        .iter()
        .filter(|&&t| windows.iter().any(|&(a, b)| t > a && t < b))
        .count() as u32;
    Outcome {
        sent_while_paused,
        ring_drops: p.sim.link_stats(CLIENT, SERVER).dropped_ring,
        peak: p.sim.rx_ring_peak(SERVER),
        pause_frames: s.pause_frames_sent,
        paused_ns: c.paused_ns,
    }
}

#[test]
fn lossy_overflows_the_slow_receivers_ring() {
    let o = slow_receiver(None);
    assert!(o.ring_drops > 0, "no overflow: the scenario tests nothing");
    assert_eq!(o.peak, RING);
}

#[test]
fn pause_with_headroom_for_the_round_trip_keeps_the_ring_from_overflowing() {
    // PFC's rule: headroom for what arrives while the XOFF travels and the
    // last frames sent before it land, twice the one-way bandwidth-delay
    // product, here 2 x 9 frames.
    let rtt = Duration::from_nanos(2 * ONE_WAY.as_nanos());
    let headroom = 2 * bdp_credits(LINK_BPS, rtt, 1500) as usize;
    assert_eq!(headroom, 18);
    let o = slow_receiver(pause(headroom));
    assert_eq!(o.ring_drops, 0, "dropped despite pause");
    assert!(o.pause_frames > 0 && o.paused_ns > 0, "never paused");
    assert!(o.peak > RING - headroom && o.peak < RING, "peak {}", o.peak);
    // Every session stopped, not only the one that filled the ring.
    assert_eq!(o.sent_while_paused, 0, "data sent to a paused receiver");
}

#[test]
fn pause_with_too_little_headroom_overflows() {
    let o = slow_receiver(pause(2));
    assert!(o.pause_frames > 0);
    assert!(
        o.ring_drops > 0,
        "headroom of 2 held: the rule shows nothing"
    );
}

#[test]
fn headroom_rule_is_checked_at_config_time() {
    let bad = PauseConfig {
        xoff: 60,
        xon: 30,
        pause_time: PAUSE_TIME,
        headroom: 18,
    };
    let e = cfg_with(1, Some(bad)).validate().unwrap_err();
    assert_eq!(e.field, "pause.xoff");
    let ok = PauseConfig { xoff: 46, ..bad };
    cfg_with(1, Some(ok)).validate().unwrap();
    let inverted = PauseConfig { xon: 46, ..ok };
    assert_eq!(
        cfg_with(1, Some(inverted)).validate().unwrap_err().field,
        "pause.xon"
    );
}

#[test]
fn a_pause_from_a_stranger_is_dropped() {
    use engine::wire::{HeaderTemplate, PktType, RpcRepr, SESSION_NONE};
    let mut p = Pair::new(
        3,
        ChannelConfig::default(),
        cfg_with(1, pause(18)),
        cfg_with(2, pause(18)),
    );
    let stranger = addr(9);
    let me = addr(2);
    let t = HeaderTemplate::new(
        (stranger.mac, stranger.ip, stranger.port),
        (me.mac, me.ip, me.port),
    );
    let rpc = RpcRepr {
        pkt_type: PktType::Pause,
        req_type: 0,
        msg_size: 1000,
        dest_session: SESSION_NONE,
        pkt_num: 0,
        grant: 0,
        req_num: 0,
        token: 0,
    };
    let mut frame = vec![0u8; 128];
    let n = t.write(&mut frame, &rpc, 0);
    let now = p.sim.now();
    let ep = p.sim.ep_mut(CLIENT);
    let before = ep.stats().drops.unknown_session;
    assert!(ep.handle_frame(now, &frame[..n]).is_none());
    assert_eq!(ep.stats().drops.unknown_session, before + 1);
    assert_eq!(ep.stats().pause_frames_received, 0);
    // The session still sends.
    p.app.send(&mut p.sim, CLIENT, p.session, 1, 100);
    p.run_idle(Duration::from_secs(1));
    p.check_clean();
}
