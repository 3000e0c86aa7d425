//! Credit policing (`engine/src/proto/police.rs`) on a server with a
//! receive ring and a CPU: a peer with a real session that sends requests
//! as fast as it can, ignoring its 8 credits, next to a well-behaved
//! lossless client. The rig is the run loop's shape: the server reads a
//! burst of up to 32 frames from a 1,024-entry ring, handles each (a
//! served request costs 2 us, a frame dropped at the first look 0.1 us),
//! then writes its answers; frames that find the ring full are lost.
//! Unpoliced, the flood keeps the ring full and the good client's packets
//! are lost (lossless violations) for as long as it lasts; policed, the
//! flood's session is closed within about 64 bursts and its source's
//! ConnectReqs are refused, and the good client sees no violation after.

use crate::proto_common::{addr, cfg, craft, sm_frame, src_of};
use engine::proto::{
    Delivery, Endpoint, EndpointConfig, Event, FlowMode, PeerAddr, Policing, SessionId,
};
use engine::time::Instant;
use engine::wire::{self, PktType, RpcRepr, SmBody, SmRepr, SmStatus, SmType, SESSION_NONE};
use std::collections::VecDeque;

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
/// The server's receive ring, in frames.
const RING: usize = 1024;
/// Frames one receive burst takes at most (`dpdk::BURST`).
const BURST: usize = 32;
/// The server's time for a request it serves (handler and answer) and
/// for a frame it drops at the first look.
const SERVE_NS: u64 = 2 * US;
const DROP_NS: u64 = 100;
/// The flood: one frame per this many ns (1 M frames/s, twice what the
/// server can serve), from 10 ms to `END`.
const FLOOD_GAP_NS: u64 = 1_000;
const FLOOD_FROM: u64 = 10 * MS;
const END: u64 = 200 * MS;
/// The flood asks for a new session this often (as an attacker whose
/// session was closed would).
const RECONNECT: u64 = 25 * MS;
/// The good client's requests in flight (its window).
const WINDOW: usize = 8;

const SERVER: u8 = 1;
const GOOD: u8 = 2;
const FLOOD: u8 = 3;

/// One run of the rig.
#[derive(Clone, Copy)]
struct Rig {
    police: Policing,
    /// The time from which the good client's violations are counted apart.
    late_from: u64,
    flood: bool,
    /// Lossy mode at both ends (go-back-N rollbacks) instead of lossless.
    lossy: bool,
    /// The server reads nothing during (from, for) ns: a vCPU stall.
    stall: Option<(u64, u64)>,
}

impl Rig {
    fn new(police: Policing) -> Rig {
        Rig {
            police,
            late_from: END,
            flood: true,
            lossy: false,
            stall: None,
        }
    }
}

/// What one run saw.
#[derive(Debug, Default)]
struct Outcome {
    good_completed: u64,
    good_violations: u64,
    /// Of those, judged after `late_from`.
    late_violations: u64,
    good_lost_at_ring: u64,
    flood_served: u64,
    flood_sessions: u64,
    policed_at: Option<u64>,
    over_credit: u64,
    sessions_policed: u64,
}

/// The flood's attacker: crafted frames from addr(3) on a real session.
struct Flooder {
    session: Option<(u16, u64)>,
    asking: u16,
    req_num: u64,
    next_at: u64,
    asked_at: Option<u64>,
}

impl Flooder {
    fn token(c: u16) -> u64 {
        0xf100_0000 | u64::from(c)
    }

    /// The frames it sends up to `now`: a ConnectReq every `RECONNECT`,
    /// requests one per `FLOOD_GAP_NS` while it has a session.
    fn frames(&mut self, now: u64) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        if now < FLOOD_FROM {
            return out;
        }
        if self.asked_at.is_none_or(|t| now >= t + RECONNECT) {
            self.asked_at = Some(now);
            let body = SmRepr::connect_req(self.asking, 8, 1500, 8);
            let src = src_of(addr(FLOOD));
            out.push(sm_frame(
                src,
                addr(SERVER),
                SESSION_NONE,
                Self::token(self.asking),
                body,
            ));
        }
        let Some((num, token)) = self.session else {
            self.next_at = now;
            return out;
        };
        while self.next_at <= now {
            self.next_at += FLOOD_GAP_NS;
            let rpc = RpcRepr {
                pkt_type: PktType::Request,
                req_type: 1,
                msg_size: 32,
                dest_session: num,
                pkt_num: 0,
                grant: 0,
                req_num: self.req_num,
                token,
            };
            self.req_num += 1;
            out.push(craft(src_of(addr(FLOOD)), addr(SERVER), rpc, &[0xCF; 32]));
        }
        out
    }

    /// A frame the server sent it: a ConnectResp(Ok) gives it a session.
    fn read(&mut self, f: &[u8]) -> bool {
        let p = wire::parse_frame(f).unwrap();
        if p.rpc.pkt_type != PktType::SessionMgmt {
            return false;
        }
        let sm = SmRepr::parse(&SmBody::new_checked(p.payload).unwrap()).unwrap();
        if sm.sm_type == SmType::ConnectResp
            && sm.status == SmStatus::Ok
            && sm.client_session == self.asking
        {
            self.session = Some((sm.server_session, sm.server_token));
            self.asking += 1;
            self.req_num = 0;
            return true;
        }
        false
    }
}

fn mode(lossy: bool) -> FlowMode {
    match lossy {
        true => FlowMode::Lossy,
        false => FlowMode::Lossless,
    }
}

fn server_cfg(rig: Rig) -> EndpointConfig {
    EndpointConfig {
        rx_ring_entries: RING,
        police: rig.police,
        mode: mode(rig.lossy),
        ..cfg(SERVER)
    }
}

fn good_cfg(rig: Rig) -> EndpointConfig {
    EndpointConfig {
        session_credits: 8,
        mode: mode(rig.lossy),
        ..cfg(GOOD)
    }
}

fn enqueue(c: &mut Endpoint, now: Instant, s: SessionId, tag: u64) {
    let mut m = c.alloc_msg(32);
    m.as_mut_slice().fill(tag as u8);
    c.enqueue_request(now, s, 1, m, tag)
        .map_err(|(e, _)| e)
        .unwrap();
}

/// Runs the rig for `END`.
fn run(rig: Rig) -> Outcome {
    let late_from = rig.late_from;
    let mut server = Endpoint::new(server_cfg(rig)).unwrap();
    let mut good = Endpoint::new(good_cfg(rig)).unwrap();
    let mut flood = Flooder {
        session: None,
        asking: 0,
        req_num: 0,
        next_at: 0,
        asked_at: None,
    };
    let mut out = Outcome::default();
    let mut ring: VecDeque<(u8, Vec<u8>)> = VecDeque::new();
    let mut buf = vec![0u8; server.min_tx_buf_len()];
    let mut now = 0u64;
    let gs = good
        .connect(Instant(0), PeerAddr::from(addr(SERVER)))
        .unwrap();
    let mut tag = 0u64;
    let mut started = false;
    let push = |ring: &mut VecDeque<(u8, Vec<u8>)>, who: u8, f: Vec<u8>| -> bool {
        if ring.len() < RING {
            ring.push_back((who, f));
            true
        } else {
            false
        }
    };
    while now < END {
        let t = Instant(now);
        // The flood's frames of the last iteration came before what the good
        // client sends now, at the end of it.
        if rig.flood {
            for f in flood.frames(now) {
                push(&mut ring, FLOOD, f);
            }
        }
        // The good client: its timers, then what it sends, into the ring.
        if good.poll_timeout().is_some_and(|d| d <= t) {
            let before = good.stats().lossless_violations;
            good.handle_timeout(t);
            if now >= late_from {
                out.late_violations += good.stats().lossless_violations - before;
            }
        }
        while let Some(n) = good.poll_transmit(t, &mut buf) {
            if !push(&mut ring, GOOD, buf[..n].to_vec()) {
                out.good_lost_at_ring += 1;
            }
        }
        while let Some(ev) = good.poll_event() {
            if ev == Event::Connected(gs) && !started {
                started = true;
                for _ in 0..WINDOW {
                    tag += 1;
                    enqueue(&mut good, t, gs, tag);
                }
            }
        }
        if let Some((from, len)) = rig.stall.filter(|&(f, l)| now >= f && now < f + l) {
            // The server does nothing; its ring fills meanwhile.
            now = (now + 100 * US).min(from + len);
            continue;
        }
        // The server: one burst, then its answers.
        let mut cost = 0;
        for _ in 0..BURST.min(ring.len()) {
            let (who, f) = ring.pop_front().unwrap();
            let before = server.stats().drops.total();
            match server.handle_frame(t, &f) {
                Some(Delivery::Request { handle, .. }) => {
                    cost += SERVE_NS;
                    out.flood_served += (who == FLOOD) as u64;
                    let m = server.alloc_msg(16);
                    server.respond(t, handle, m).unwrap();
                }
                _ if server.stats().drops.total() > before => cost += DROP_NS,
                _ => cost += SERVE_NS / 4,
            }
        }
        while let Some(n) = server.poll_transmit(t, &mut buf) {
            let f = &buf[..n];
            if f[0..6] == addr(GOOD).mac.0 {
                if let Some(Delivery::Response { .. }) = good.handle_frame(t, f) {
                    out.good_completed += 1;
                    tag += 1;
                    enqueue(&mut good, t, gs, tag);
                }
            } else if flood.read(f) {
                out.flood_sessions += 1;
            }
        }
        while let Some(ev) = server.poll_event() {
            if let Event::CreditViolator(r) = ev {
                assert_eq!(r.ip, addr(FLOOD).ip, "{r:?}");
                out.policed_at.get_or_insert(now);
            }
        }
        now += cost.max(US);
    }
    out.good_violations = good.stats().lossless_violations;
    let s = server.stats();
    out.over_credit = s.drops.over_credit;
    out.sessions_policed = s.sessions_policed;
    assert!(s.rx_accounted(), "{s:?}");
    out
}

#[test]
fn an_unpoliced_credit_flood_costs_a_lossless_client_its_packets() {
    // The rig's harm, without the rule: the flood's frames keep the ring
    // full and the good client's are lost at it.
    let o = run(Rig::new(Policing::OFF));
    eprintln!("unpoliced: {o:?}");
    assert!(o.good_lost_at_ring > 0, "{o:?}");
    assert!(o.good_violations > WINDOW as u64, "{o:?}");
    assert!(o.flood_served > 50_000, "{o:?}");
    assert!(
        o.flood_sessions > 1,
        "a new session whenever it asks: {o:?}"
    );
}

#[test]
fn a_credit_flood_is_closed_and_its_source_barred_and_the_good_client_recovers() {
    let o = run(Rig {
        late_from: 50 * MS,
        ..Rig::new(Policing::default())
    });
    eprintln!("policed: {o:?}");
    let at = o.policed_at.expect("the flood's session was closed");
    // 64 violating bursts of a flood at 1 M frames/s: a few ms.
    assert!(at < FLOOD_FROM + 10 * MS, "closed at {at} ns: {o:?}");
    // Its later ConnectReqs (every 25 ms) were dropped: one session only.
    assert_eq!(o.flood_sessions, 1, "{o:?}");
    // Until then it was served at most its allowance (16) per burst.
    assert!(o.flood_served < 64 * 16 + 16, "{o:?}");
    // The good client: at most one loss per request in flight, from the
    // one ring overflow the flood caused before it was cut off, and none
    // once it was.
    assert!(o.good_violations <= WINDOW as u64, "{o:?}");
    assert_eq!(o.late_violations, 0, "{o:?}");
    assert!(o.good_completed > 20_000, "{o:?}");
}

#[test]
fn a_compliant_client_is_not_closed_by_the_copies_a_stall_piles_up() {
    // Lossy go-back-N, 8 credits, a 5 ms RTO: the server stalls for 30 ms
    // and the client rolls back 6 times meanwhile, each time resending
    // its 8 packets, which pile up in the ring. Read after the stall, one
    // burst holds more than the allowance: copies, dropped, a strike or
    // two, never the 64 that close a session.
    let o = run(Rig {
        flood: false,
        lossy: true,
        stall: Some((50 * MS, 30 * MS)),
        ..Rig::new(Policing::default())
    });
    eprintln!("stalled: {o:?}");
    assert!(
        o.over_credit > 0,
        "the stall piled copies over the allowance: {o:?}"
    );
    assert_eq!(o.sessions_policed, 0, "{o:?}");
    assert!(o.good_completed > 20_000, "{o:?}");
    // Without a stall, nothing at all over the allowance.
    let o = run(Rig {
        flood: false,
        ..Rig::new(Policing::default())
    });
    assert_eq!(
        (o.over_credit, o.sessions_policed, o.good_violations),
        (0, 0, 0),
        "{o:?}"
    );
}
