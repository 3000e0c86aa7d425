//! Packet trimming on the in-memory link (`proto/trim.rs`): a request
//! packet or a response packet a switch cut to its headers costs one
//! NACK (a TrimNak from the server; the client's own re-request for a
//! response) and one selective resend of exactly that packet, at once:
//! no retransmission timeout, no go-back-N. Forged trims are counted
//! drops that cause at most one frame each.

use crate::proto_common::*;
use engine::proto::{EndpointConfig, FlowMode, Retransmit};
use engine::sim::ChannelConfig;
use engine::time::{Duration, Instant};
use engine::wire::{self, parse_frame, PktType};
use std::cell::Cell;
use std::rc::Rc;

fn selective(i: u8) -> EndpointConfig {
    EndpointConfig {
        mode: FlowMode::Lossy,
        retransmit: Retransmit::Selective,
        session_credits: 32,
        ..cfg(i)
    }
}

/// A 10 Gb/s link with 5 us one way (a round trip of about 10 us plus
/// serialisation, against the 5 ms RTO).
fn fast_link() -> ChannelConfig {
    ChannelConfig {
        delay: Duration::from_micros(5),
        rate_bps: Some(10_000_000_000),
        ..Default::default()
    }
}

/// Trims the first copy of packet `kind`/`pkt_num` going `from`; counts
/// every frame of `kind`/`pkt_num` sent from `from` in the second cell.
fn trim_once(
    p: &mut Pair,
    from: usize,
    kind: PktType,
    pkt_num: u16,
) -> (Rc<Cell<u32>>, Rc<Cell<u32>>) {
    let (trimmed, copies) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
    let (t, c) = (trimmed.clone(), copies.clone());
    p.sim.set_trimmer(Box::new(move |_, f, _, frame| {
        let hit = f == from
            && parse_frame(frame).is_ok_and(|x| x.rpc.pkt_type == kind && x.rpc.pkt_num == pkt_num);
        if hit {
            c.set(c.get() + 1);
        }
        let trim = hit && t.get() == 0;
        if trim {
            t.set(1);
        }
        trim
    }));
    (trimmed, copies)
}

/// One request of `req` bytes with a `resp`-byte response (32 or 40,000),
/// trimming packet `kind`/`pkt` once; returns the time it took and the
/// pair.
fn one_trim(kind: PktType, pkt: u16, req: usize, resp: usize) -> (Duration, Pair) {
    let mut p = Pair::new(7, fast_link(), selective(1), selective(2));
    let from = if kind == PktType::Request {
        CLIENT
    } else {
        SERVER
    };
    let (trimmed, copies) = trim_once(&mut p, from, kind, pkt);
    p.app.resp_len = Some(if resp == 32 { |_| 32 } else { |_| 40_000 });
    assert!(resp == 32 || resp == 40_000);
    let start: Instant = p.sim.now();
    p.app.send(&mut p.sim, CLIENT, p.session, 1, req);
    p.run_idle(Duration::from_secs(2));
    p.check_clean();
    assert_eq!(trimmed.get(), 1, "the trimmer trimmed nothing");
    assert_eq!(
        copies.get(),
        2,
        "the trimmed packet was not sent exactly twice"
    );
    assert_eq!(p.sim.link_stats(from, 1 - from).trimmed, 1);
    let done = p.app.completed[0].1;
    (done.saturating_since(start), p)
}

#[test]
fn a_trimmed_request_packet_costs_one_trim_nak_and_one_resend() {
    // 40 kB: 28 request packets, all in flight at once with 32 credits.
    let (t, p) = one_trim(PktType::Request, 5, 40_000, 32);
    let (c, s) = (p.sim.ep(CLIENT).stats(), p.sim.ep(SERVER).stats());
    assert_eq!(s.trim_naks_sent, 1, "{s:?}");
    assert_eq!(s.drops.trimmed, 1, "{s:?}");
    assert_eq!(c.trim_resends, 1, "{c:?}");
    assert_eq!(
        c.retransmissions, 1,
        "resent more than the trimmed packet: {c:?}"
    );
    // The SACKs that show the hole before the resend lands resend nothing.
    assert_eq!(c.fast_retransmits, 0, "{c:?}");
    assert_eq!(c.rollbacks, 0, "waited for a timeout: {c:?}");
    assert_eq!(c.drops.trimmed, 1, "the TrimNak: {c:?}");
    // No loss takes ~45 us here; the repair adds about a round trip.
    assert!(t < Duration::from_micros(120), "took {t:?}");
}

#[test]
fn the_last_request_packet_trimmed_is_resent_at_once_not_after_the_timeout() {
    // Dropped, the last packet waits out rto_low (nothing after it reveals
    // the loss: `proto_selective.rs`); trimmed, it is asked for at once.
    let (t, p) = one_trim(PktType::Request, 27, 40_000, 32);
    let c = p.sim.ep(CLIENT).stats();
    assert_eq!(p.sim.ep(SERVER).stats().trim_naks_sent, 1);
    assert_eq!(
        (c.trim_resends, c.retransmissions, c.rollbacks),
        (1, 1, 0),
        "{c:?}"
    );
    assert!(t < Duration::from_micros(120), "took {t:?}");
}

#[test]
fn a_trimmed_response_packet_is_asked_for_again_once() {
    // A 40 kB response the server pushes on the client's grant; Response(6)
    // arrives trimmed and the client asks for it with one RFR at once.
    let (t, p) = one_trim(PktType::Response, 6, 32, 40_000);
    let (c, s) = (p.sim.ep(CLIENT).stats(), p.sim.ep(SERVER).stats());
    assert_eq!(c.trim_resends, 1, "{c:?}");
    assert_eq!(c.retransmissions, 1, "{c:?}");
    assert_eq!((c.fast_retransmits, c.rollbacks), (0, 0), "{c:?}");
    assert_eq!(c.drops.trimmed, 1, "{c:?}");
    assert_eq!(s.trim_naks_sent, 0, "{s:?}");
    assert!(t < Duration::from_micros(150), "took {t:?}");
}

#[test]
fn a_trimmed_first_response_packet_resends_the_last_request_packet() {
    let (t, p) = one_trim(PktType::Response, 0, 32, 32);
    let c = p.sim.ep(CLIENT).stats();
    assert_eq!(
        (c.trim_resends, c.retransmissions, c.rollbacks),
        (1, 1, 0),
        "{c:?}"
    );
    assert!(t < Duration::from_micros(100), "took {t:?}");
}

#[test]
fn go_back_n_with_naks_takes_a_trim_as_the_gap_it_is() {
    let gbn = |i| EndpointConfig {
        retransmit: Retransmit::GoBackN,
        nak: true,
        ..selective(i)
    };
    let mut p = Pair::new(7, fast_link(), gbn(1), gbn(2));
    let (trimmed, _) = trim_once(&mut p, CLIENT, PktType::Request, 5);
    p.app.resp_len = Some(|_| 32);
    let start = p.sim.now();
    p.app.send(&mut p.sim, CLIENT, p.session, 1, 40_000);
    p.run_idle(Duration::from_secs(2));
    p.check_clean();
    assert_eq!(trimmed.get(), 1);
    let (c, s) = (p.sim.ep(CLIENT).stats(), p.sim.ep(SERVER).stats());
    assert_eq!((s.naks_sent, s.trim_naks_sent), (1, 0), "{s:?}");
    assert_eq!((c.nak_rollbacks, c.rollbacks), (1, 1), "{c:?}");
    let t = p.app.completed[0].1.saturating_since(start);
    assert!(t < Duration::from_micros(200), "took {t:?}");
}

/// Runs one 40 kB request on `p` and returns the headers of its request
/// packet 0 (client to server) and of its first credit return (server to
/// client), to forge frames from.
fn headers_seen(p: &mut Pair) -> (Vec<u8>, Vec<u8>) {
    type Seen = Rc<Cell<Option<[u8; wire::HEADERS_LEN]>>>;
    let (req, cr): (Seen, Seen) = Default::default();
    let (r2, c2) = (req.clone(), cr.clone());
    p.sim.set_trimmer(Box::new(move |_, f, _, fr| {
        let kind = parse_frame(fr).map(|x| (x.rpc.pkt_type, x.rpc.pkt_num));
        let mut b = [0u8; wire::HEADERS_LEN];
        b.copy_from_slice(&fr[..wire::HEADERS_LEN]);
        match kind {
            Ok((PktType::Request, 0)) if f == CLIENT => r2.set(Some(b)),
            Ok((PktType::CreditReturn, _)) if c2.get().is_none() => c2.set(Some(b)),
            _ => {}
        }
        false
    }));
    p.app.resp_len = Some(|_| 32);
    p.app.send(&mut p.sim, CLIENT, p.session, 1, 40_000);
    p.run_idle(Duration::from_secs(2));
    let (r, c) = (req.get().expect("no request"), cr.get().expect("no CR"));
    (r.to_vec(), c.to_vec())
}

/// `h` (headers of a request packet) as packet `k` of request `req_num`
/// carrying `payload` bytes (IPv4 and UDP lengths and checksum fixed).
fn forge(h: &[u8], k: u16, req_num: u64, payload: usize) -> Vec<u8> {
    let mut f = h.to_vec();
    let r = wire::HEADERS_LEN - wire::RPC_HEADER_LEN;
    f[r + 10..r + 12].copy_from_slice(&k.to_be_bytes());
    f[r + 14..r + 20].copy_from_slice(&req_num.to_be_bytes()[2..]);
    let ip_len = (wire::HEADERS_LEN - 14 + payload) as u16;
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f[38..40].copy_from_slice(&(ip_len - 20).to_be_bytes());
    f.resize(wire::HEADERS_LEN + payload, 0);
    wire::Ipv4Packet::new_unchecked(&mut f[14..34]).fill_checksum();
    f
}

#[test]
fn forged_trims_are_counted_drops_with_at_most_one_answer_each() {
    let mut p = Pair::new(7, fast_link(), selective(1), selective(2));
    // Request 0 (40 kB, 28 packets) completes first.
    let (req, cr) = headers_seen(&mut p);
    p.check_clean();
    let before = *p.sim.ep(SERVER).stats();
    let now = p.sim.now();
    let trimmed = |k, r| {
        let mut f = forge(&req, k, r, 1000);
        assert_eq!(wire::mark_trimmed(&mut f), Some(wire::HEADERS_LEN));
        f.truncate(wire::HEADERS_LEN);
        f
    };
    // A packet the server has (request 0 is done), many times over, and a
    // packet of a newer request outside the selective window: drops, and
    // no answer.
    let has = trimmed(3, 0);
    for _ in 0..5 {
        assert!(p.sim.ep_mut(SERVER).handle_frame(now, &has).is_none());
    }
    let mut far = trimmed(400, 2);
    let r = wire::HEADERS_LEN - wire::RPC_HEADER_LEN;
    far[r + 4..r + 8].copy_from_slice(&1_000_000u32.to_be_bytes());
    assert!(p.sim.ep_mut(SERVER).handle_frame(now, &far).is_none());
    let s = *p.sim.ep(SERVER).stats();
    assert_eq!(s.drops.trimmed - before.drops.trimmed, 6, "{s:?}");
    assert_eq!(s.trim_naks_sent, before.trim_naks_sent, "{s:?}");
    assert!(s.rx_accounted(), "{s:?}");
    // A frame marked trimmed that still carries payload is malformed.
    let mut fat = forge(&req, 2, 0, 8);
    fat[15] = wire::DSCP_TRIMMED << 2 | fat[15] & wire::ECN_MASK;
    wire::Ipv4Packet::new_unchecked(&mut fat[14..34]).fill_checksum();
    let m = s.drops.malformed;
    assert!(p.sim.ep_mut(SERVER).handle_frame(now, &fat).is_none());
    assert_eq!(p.sim.ep(SERVER).stats().drops.malformed, m + 1);
    // Nothing was queued for any of them.
    let tx = p.sim.ep(SERVER).stats().tx_pkts;
    p.run_idle(Duration::from_secs(1));
    assert_eq!(p.sim.ep(SERVER).stats().tx_pkts, tx);
    // One trimmed packet of a newer request: exactly one TrimNak.
    let newer = trimmed(1, 1);
    assert!(p.sim.ep_mut(SERVER).handle_frame(now, &newer).is_none());
    p.run_idle(Duration::from_secs(1));
    let s = p.sim.ep(SERVER).stats();
    assert_eq!(s.trim_naks_sent, before.trim_naks_sent + 1, "{s:?}");
    assert_eq!(s.tx_pkts, tx + 1, "{s:?}");
    // ...which the client, not sending that request, drops (counted),
    // as it does a TrimNak forged from a credit return for its finished
    // request: nothing is resent.
    let c = *p.sim.ep(CLIENT).stats();
    assert_eq!(c.retransmissions, 0, "{c:?}");
    let mut nak = cr.clone();
    nak[wire::HEADERS_LEN - wire::RPC_HEADER_LEN + 2] = u8::from(PktType::TrimNak);
    let now = p.sim.now();
    assert!(p.sim.ep_mut(CLIENT).handle_frame(now, &nak).is_none());
    p.run_idle(Duration::from_secs(1));
    let c2 = *p.sim.ep(CLIENT).stats();
    assert_eq!(c2.rx_pkts, c.rx_pkts + 1);
    assert_eq!((c2.retransmissions, c2.trim_resends), (0, 0), "{c2:?}");
    assert_eq!(c2.tx_pkts, c.tx_pkts, "{c2:?}");
    assert!(c2.rx_accounted(), "{c2:?}");
}
