//! Bytes out per byte in for a session whose peer sees its replies but
//! never reads them (issue 32, point 4): a copy of a request's last packet
//! brings back its grant (up to the session's credits of response packets
//! after Response(0)) only `Admission::regrants_per_request` times per
//! request, then Response(0) alone, so such a peer pulls one packet per
//! packet it sends; and a client repairing a lost Response(0) still gets
//! the whole grant back in one round trip. Frames are crafted and carried
//! by hand, so every byte is counted.

use crate::proto_common::{addr, cfg, craft, src_of};
use engine::proto::{
    Admission, Delivery, Endpoint, EndpointConfig, Event, FlowMode, PeerAddr, SessionId,
};
use engine::time::{Duration, Instant};
use engine::wire::{self, PktType, RpcRepr, HEADERS_LEN};

const MS: u64 = 1_000_000;
/// The server's credits in these runs: the 42 the attack saw.
const CREDITS: u16 = 42;

fn ms(n: u64) -> Instant {
    Instant(n * MS)
}

/// Everything `ep` has to send at `now`.
fn drain(ep: &mut Endpoint, now: Instant) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; ep.min_tx_buf_len()];
    std::iter::from_fn(|| ep.poll_transmit(now, &mut buf).map(|n| buf[..n].to_vec())).collect()
}

fn with_regrants(base: EndpointConfig, regrants: u8) -> EndpointConfig {
    EndpointConfig {
        session_credits: CREDITS,
        admission: Admission {
            regrants_per_request: regrants,
            ..base.admission
        },
        ..base
    }
}

/// Server (addr 1) and a client (addr 2) with one connected session.
fn pair(server: EndpointConfig, client: EndpointConfig) -> (Endpoint, Endpoint, SessionId) {
    let (mut s, mut c) = (
        Endpoint::new(server).unwrap(),
        Endpoint::new(client).unwrap(),
    );
    let cs = c.connect(ms(0), PeerAddr::from(addr(1))).unwrap();
    for f in drain(&mut c, ms(0)) {
        let _ = s.handle_frame(ms(0), &f);
    }
    for f in drain(&mut s, ms(0)) {
        let _ = c.handle_frame(ms(0), &f);
    }
    assert_eq!(c.poll_event(), Some(Event::Connected(cs)));
    (s, c, cs)
}

/// What the server sent for what it received, from one point on.
#[derive(Debug, Default)]
struct Tally {
    pkts_in: usize,
    bytes_in: usize,
    pkts_out: usize,
    bytes_out: usize,
}

impl Tally {
    fn exchange(&mut self, s: &mut Endpoint, f: &[u8], now: Instant) {
        let _ = s.handle_frame(now, f);
        self.pkts_in += 1;
        self.bytes_in += f.len();
        for out in drain(s, now) {
            self.pkts_out += 1;
            self.bytes_out += out.len();
        }
    }

    fn ratio(&self) -> f64 {
        self.bytes_out as f64 / self.bytes_in as f64
    }
}

/// A peer with a real session sends one 32-byte request granting the most
/// a u16 says, the server answers it with 1 MiB (727 packets); the peer
/// keeps the request's last packet as it was sent. Returns the server, the
/// packet, and the client's address of the session.
fn one_big_answer(regrants: u8) -> (Endpoint, Vec<u8>) {
    let (mut s, mut c, cs) = pair(with_regrants(cfg(1), regrants), with_regrants(cfg(2), 1));
    let msg = c.alloc_msg(32);
    c.enqueue_request(ms(1), cs, 1, msg, 1).unwrap();
    let mut req = drain(&mut c, ms(1)).remove(0);
    // The grant: bytes 12..14 of the RPC header.
    let grant_at = HEADERS_LEN - wire::RPC_HEADER_LEN + 12;
    req[grant_at..grant_at + 2].copy_from_slice(&u16::MAX.to_be_bytes());
    assert_eq!(req.len(), 102, "the issue's 102-byte request");
    let Some(Delivery::Request { handle, .. }) = s.handle_frame(ms(1), &req) else {
        panic!("not delivered")
    };
    let resp = s.alloc_msg(1 << 20);
    s.respond(ms(1), handle, resp).unwrap();
    let first = drain(&mut s, ms(1));
    assert_eq!(first.len(), 1 + usize::from(CREDITS), "the first answer");
    assert!(first.iter().all(|f| f.len() == 1514));
    (s, req)
}

/// An RFR for response packet `k` of the request whose last packet is `req`.
fn rfr(req: &[u8], k: u16) -> Vec<u8> {
    let rpc = RpcRepr {
        pkt_type: PktType::ReqForResp,
        msg_size: 0,
        pkt_num: k,
        grant: 0,
        ..wire::parse_frame(req).unwrap().rpc
    };
    craft(src_of(addr(2)), addr(1), rpc, &[])
}

#[test]
fn a_peer_that_never_reads_pulls_one_packet_per_copy_of_its_last_packet() {
    let (mut s, req) = one_big_answer(1);
    let mut t = Tally::default();
    for i in 0..1000u64 {
        t.exchange(&mut s, &req, ms(2) + Duration::from_micros(10 * i));
    }
    // The first copy is the repair of a lost Response(0): its grant again
    // (1 + 42 packets); every later copy brings Response(0) alone.
    let grant = usize::from(CREDITS);
    assert_eq!(t.pkts_out, t.pkts_in + grant, "{t:?}");
    assert_eq!(s.stats().drops.dup_request_regrant_spent, 999);
    // 1514-byte response packets for 102-byte copies: 15.5 B out per byte
    // in here, tending to 1514 / 102 = 14.8 (it was 43 x 1514 / 102 = 638).
    eprintln!(
        "copies of the last packet: {} B in, {} B out ({} / {} packets): {:.1}x",
        t.bytes_in,
        t.bytes_out,
        t.pkts_in,
        t.pkts_out,
        t.ratio()
    );
    assert!(t.ratio() < 16.0, "{:.1}x: {t:?}", t.ratio());
    assert!(s.stats().rx_accounted());
}

#[test]
fn rfrs_and_copies_mixed_bring_one_packet_each() {
    let (mut s, req) = one_big_answer(1);
    let mut t = Tally::default();
    // New RFRs past the grant, RFRs again, and copies of the last packet,
    // interleaved: whatever the mix, one packet out per packet in, plus
    // the one re-grant.
    for i in 0..600u16 {
        let now = ms(2) + Duration::from_micros(10 * u64::from(i));
        let k = CREDITS + 1 + i;
        t.exchange(&mut s, &rfr(&req, k), now);
        t.exchange(&mut s, &rfr(&req, k.div_ceil(2)), now);
        t.exchange(&mut s, &req, now);
    }
    assert_eq!(t.pkts_out, t.pkts_in + usize::from(CREDITS), "{t:?}");
    // The RFRs are 70-byte frames: 1514 / 70 = 21.6 B out per byte in at
    // most, 18.5 with the 102-byte copies mixed in.
    assert!(t.ratio() < 22.0, "{:.1}x: {t:?}", t.ratio());
    assert!(s.stats().rx_accounted());
}

#[test]
fn regrants_per_request_bounds_the_copies_served_and_zero_serves_none() {
    for regrants in [0u8, 3] {
        let (mut s, req) = one_big_answer(regrants);
        let mut t = Tally::default();
        for i in 0..100u64 {
            t.exchange(&mut s, &req, ms(2) + Duration::from_micros(10 * i));
        }
        let extra = usize::from(regrants) * usize::from(CREDITS);
        assert_eq!(t.pkts_out, t.pkts_in + extra, "regrants {regrants}: {t:?}");
        let spent = 100 - u64::from(regrants);
        assert_eq!(s.stats().drops.dup_request_regrant_spent, spent);
    }
    // The slot's next request (req_num + the window of 8) has its own.
    let (mut s, req) = one_big_answer(1);
    let p = wire::parse_frame(&req).unwrap();
    let rpc = RpcRepr {
        req_num: p.rpc.req_num + 8,
        ..p.rpc
    };
    let next = craft(src_of(addr(2)), addr(1), rpc, p.payload);
    let mut t = Tally::default();
    t.exchange(&mut s, &req, ms(2));
    let Some(Delivery::Request { handle, .. }) = s.handle_frame(ms(3), &next) else {
        panic!("not delivered")
    };
    let resp = s.alloc_msg(1 << 20);
    s.respond(ms(3), handle, resp).unwrap();
    assert_eq!(drain(&mut s, ms(3)).len(), 1 + usize::from(CREDITS));
    t.exchange(&mut s, &next, ms(4));
    t.exchange(&mut s, &next, ms(5));
    assert_eq!(t.pkts_out, 3 + 2 * usize::from(CREDITS), "{t:?}");
}

/// Lossy mode, go-back-N: a client fetches a 64 KiB response (46 packets)
/// while the first `lose` copies of Response(0) are lost on the way.
/// Returns when the response arrived, the client's rollbacks, and the
/// server's copies answered with Response(0) alone.
fn fetch(regrants: u8, lose: u32) -> (Duration, u64, u64) {
    let lossy = |i| EndpointConfig {
        mode: FlowMode::Lossy,
        ..cfg(i)
    };
    let (mut s, mut c, cs) = pair(
        with_regrants(lossy(1), regrants),
        with_regrants(lossy(2), 1),
    );
    let t0 = ms(1);
    let msg = c.alloc_msg(32);
    c.enqueue_request(t0, cs, 1, msg, 7).unwrap();
    let (mut now, mut lost) = (t0, 0);
    loop {
        let mut moved = false;
        for f in drain(&mut c, now) {
            moved = true;
            if let Some(Delivery::Request { handle, .. }) = s.handle_frame(now, &f) {
                let resp = s.alloc_msg(64 << 10);
                s.respond(now, handle, resp).unwrap();
            }
        }
        for f in drain(&mut s, now) {
            moved = true;
            let p = wire::parse_frame(&f).unwrap();
            if p.rpc.pkt_type == PktType::Response && p.rpc.pkt_num == 0 && lost < lose {
                lost += 1;
                continue;
            }
            if let Some(Delivery::Response { tag, .. }) = c.handle_frame(now, &f) {
                assert_eq!(tag, 7);
                let spent = s.stats().drops.dup_request_regrant_spent;
                return (now.saturating_since(t0), c.stats().rollbacks, spent);
            }
        }
        if !moved {
            now = c.poll_timeout().expect("the client's timer").max(now);
            c.handle_timeout(now);
            s.handle_timeout(now);
        }
        assert!(now < t0 + Duration::from_secs(1), "no response in 1 s");
    }
}

#[test]
fn a_lost_response_zero_is_repaired_with_its_grant_in_one_timeout() {
    let rto = EndpointConfig::default().rto;
    // No loss, one loss: the same with one re-grant as with unbounded ones.
    assert_eq!(fetch(1, 0), fetch(u8::MAX, 0));
    assert_eq!(fetch(1, 0).1, 0);
    let (after, rollbacks, spent) = fetch(1, 1);
    assert_eq!((rollbacks, spent), (1, 0));
    assert!(after < rto + rto, "one timeout: {after:?}");
    assert_eq!(fetch(1, 1), fetch(u8::MAX, 1));
    // The same request's Response(0) lost twice: the third copy of the last
    // packet brings Response(0) alone and the rest comes with RFRs after one
    // more timeout (the price of the bound, paid only on a double loss).
    let (twice, rollbacks, spent) = fetch(1, 2);
    assert_eq!((rollbacks, spent), (3, 1));
    let (unbounded, rollbacks, _) = fetch(u8::MAX, 2);
    assert_eq!(rollbacks, 2);
    assert!(
        twice > unbounded && twice < unbounded + rto + rto,
        "{twice:?} vs {unbounded:?}"
    );
}
