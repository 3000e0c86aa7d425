//! Memory a hostile peer can make the server hold: reassembly buffers of
//! requests it never finishes (only first packets, kept alive by
//! keepalives), stored responses it never pulls, and what the message pool
//! keeps. Each is bounded by the endpoint's `MemBudget` and released by
//! `reassembly_timeout`, while a well-behaved client is still served.
//!
//! The heap is measured, not only the engine's own accounting: this test
//! binary counts the bytes live on each thread (every test runs on its own
//! thread, and a simulated run allocates and frees on it).

use crate::proto_common::*;
use engine::proto::{Admission, Delivery, Endpoint, Event, Policing};
use engine::proto::{
    EndpointAddr, EndpointConfig, ErrorCode, MemBudget, PeerAddr, RpcError, SessionState,
};
use engine::sim::{ChannelConfig, Sim};
use engine::time::{Duration, Instant};
use engine::wire::{self, PktType, RpcRepr, SmBody, SmRepr, SmStatus, SmType, SESSION_NONE};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::net::Ipv4Addr;

/// The system allocator, counting the bytes live per thread.
struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The most `LIVE` reached since `reset_peak`.
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    let _ = LIVE.try_with(|l| {
        l.set(l.get() + delta);
        let _ = PEAK.try_with(|p| p.set(p.get().max(l.get())));
    });
}

// SAFETY: every call goes to `System` unchanged; the counting only reads
// the layout.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count(l.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        count(l.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        count(-(l.size() as isize));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        count(new as isize - l.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Heap bytes live on this thread.
fn live() -> usize {
    LIVE.with(Cell::get).max(0) as usize
}

/// The most heap bytes live on this thread since `reset_peak`.
fn peak() -> usize {
    PEAK.with(Cell::get).max(0) as usize
}

/// Starts a new high-water mark of the heap from what is live now.
fn reset_peak() {
    PEAK.with(|p| p.set(LIVE.with(Cell::get)));
}

const MIB: usize = 1 << 20;
const DPP: usize = 1444;
/// The hostile host.
const EVIL: u8 = 3;

/// A peer that speaks the protocol by hand: its sessions on the server
/// (server session number, token).
struct Hostile {
    addr: EndpointAddr,
    server: EndpointAddr,
    sessions: Vec<(u16, u64)>,
}

impl Hostile {
    /// Opens `n` sessions on `server` (handling its frames directly and
    /// taking the ConnectResps off its transmit queue).
    fn connect(server: &mut Endpoint, now: Instant, n: u16) -> Hostile {
        let mut h = Hostile {
            addr: addr(EVIL),
            server: server.local_addr(),
            sessions: Vec::new(),
        };
        for i in 0..n {
            let token = 0xE000 + i as u64;
            let body = SmRepr::connect_req(i, 32, 1500, 8);
            server.handle_frame(now, &h.sm(SESSION_NONE, token, body));
            let mut buf = vec![0u8; server.min_tx_buf_len()];
            while let Some(len) = server.poll_transmit(now, &mut buf) {
                let p = wire::parse_frame(&buf[..len]).unwrap();
                if p.rpc.pkt_type != PktType::SessionMgmt {
                    continue;
                }
                let r = SmRepr::parse(&SmBody::new_checked(p.payload).unwrap()).unwrap();
                assert_eq!(r.status, SmStatus::Ok, "connect {i} refused");
                // The session's packets carry the token the server chose.
                h.sessions.push((r.server_session, r.server_token));
            }
        }
        assert_eq!(h.sessions.len(), n as usize);
        h
    }

    fn frame(&self, rpc: RpcRepr, payload: &[u8]) -> Vec<u8> {
        craft(src_of(self.addr), self.server, rpc, payload)
    }

    fn sm(&self, dest: u16, token: u64, body: SmRepr) -> Vec<u8> {
        sm_frame(src_of(self.addr), self.server, dest, token, body)
    }

    /// Packet `k` of request `req_num` of `len` bytes on session `s`.
    fn req(&self, s: usize, req_num: u64, k: usize, len: usize) -> Vec<u8> {
        let (dest, token) = self.sessions[s];
        let plen = len.min((k + 1) * DPP) - k * DPP;
        let rpc = RpcRepr {
            pkt_type: PktType::Request,
            req_type: 1,
            msg_size: len as u32,
            dest_session: dest,
            pkt_num: k as u16,
            grant: 0,
            req_num,
            token,
        };
        self.frame(rpc, &vec![0xAB; plen])
    }

    /// An RFR for packet `k` of the response to `req_num` on session `s`.
    fn rfr(&self, s: usize, req_num: u64, k: u16) -> Vec<u8> {
        let (dest, token) = self.sessions[s];
        let rpc = RpcRepr {
            pkt_type: PktType::ReqForResp,
            req_type: 1,
            msg_size: 0,
            dest_session: dest,
            pkt_num: k,
            grant: 0,
            req_num,
            token,
        };
        self.frame(rpc, &[])
    }

    fn keepalive(&self, s: usize) -> Vec<u8> {
        let (dest, token) = self.sessions[s];
        let body = SmRepr {
            sm_type: SmType::KeepAlive,
            status: SmStatus::Ok,
            client_session: s as u16,
            server_session: dest,
            credits: 32,
            mtu: 1500,
            req_window: 8,
            server_token: 0,
        };
        self.sm(dest, token, body)
    }

    fn ip(&self) -> Ipv4Addr {
        self.addr.ip
    }
}

/// Every frame the server has queued, parsed as (type, pkt_num, payload).
fn sent(server: &mut Endpoint, now: Instant) -> Vec<(PktType, u16, Vec<u8>)> {
    let mut buf = vec![0u8; server.min_tx_buf_len()];
    let mut out = Vec::new();
    while let Some(len) = server.poll_transmit(now, &mut buf) {
        let p = wire::parse_frame(&buf[..len]).unwrap();
        out.push((p.rpc.pkt_type, p.rpc.pkt_num, p.payload.to_vec()));
    }
    out
}

fn error_answer(code: ErrorCode) -> (PktType, u16, Vec<u8>) {
    (PktType::ErrorResponse, 0, vec![u8::from(code)])
}

/// Keepalives from every hostile session every 100 ms for `d`, with the
/// server's timers run as time passes; returns the time reached.
fn keep_alive(server: &mut Endpoint, h: &Hostile, mut now: Instant, d: Duration) -> Instant {
    let end = now + d;
    while now < end {
        now += Duration::from_millis(100);
        for s in 0..h.sessions.len() {
            server.handle_frame(now, &h.keepalive(s));
        }
        server.handle_timeout(now);
        sent(server, now);
    }
    now
}

#[test]
fn first_packets_and_keepalives_cannot_pin_more_than_the_budget() {
    let budget = MemBudget::default();
    // The whole receive ring for the attacker's address (48 sessions x 33
    // entries is more than the default quarter), so memory is what stops
    // it here, not the ring shares or the newcomers' reserve.
    let server_cfg = EndpointConfig {
        admission: Admission {
            peer_ring_share_pct: 100,
            mac_ring_share_pct: 100,
            ring_reserve_pct: 0,
            ..Admission::default()
        },
        // Its frames come without waiting for credits, which credit
        // policing (`proto_police`) would cut off first: this test holds
        // the budget alone.
        police: Policing::OFF,
        ..cfg(1)
    };
    assert_eq!(server_cfg.mem, budget);
    let mut server = Endpoint::new(server_cfg).unwrap();
    let mut now = Instant::ZERO;
    // The reported attack: 48 sessions from one address, every slot
    // starting an 8 MiB request.
    let h = Hostile::connect(&mut server, now, 48);
    let base = live();
    let len = 8 * MIB;
    for s in 0..48 {
        for r in 0..8 {
            server.handle_frame(now, &h.req(s, r, 0, len));
        }
    }
    sent(&mut server, now);
    // One small step each (2 KiB), not 8 MiB each (3 GiB in all).
    let slots = 48 * 8;
    assert_eq!(server.held_bytes_of(h.ip()), slots * 2048);
    assert!(live() - base < 4 * MIB, "heap grew {} B", live() - base);
    // Now more bytes on every slot, past 128 KiB, where the buffer takes
    // its final 8 MiB (3 GiB in all): the per-peer budget stops it, the
    // excess counted.
    let d0 = server.stats().drops;
    let step = 128 * 1024;
    // Every slot to 128 KiB first, then past it.
    for ks in [1..=step / DPP - 1, step / DPP..=step / DPP + 1] {
        for s in 0..48 {
            for r in 0..8 {
                for k in ks.clone() {
                    server.handle_frame(now, &h.req(s, r, k, len));
                }
            }
        }
    }
    sent(&mut server, now);
    let grew = (budget.per_peer - slots * step) / (len - step);
    assert!(grew > 0 && grew < slots);
    let held = server.held_bytes_of(h.ip());
    assert_eq!(held, slots * step + grew * (len - step));
    assert!(held <= budget.per_peer);
    assert_eq!(server.held_bytes(), held);
    let drops = server.stats().drops;
    // Each slot that could not grow lost the packet past 128 KiB (the
    // packets after it are go-back-N drops of a gap).
    assert_eq!(
        drops.reassembly_budget - d0.reassembly_budget,
        (slots - grew) as u64
    );
    assert!(server.stats().rx_accounted());
    let heap = live() - base;
    assert!(
        heap <= budget.per_peer + 16 * MIB,
        "heap grew {heap} B, budget {}",
        budget.per_peer
    );

    // Keepalives keep the sessions, not the bytes: after the reassembly
    // timeout (plus one timer grain) every partial request is given up.
    let t0 = now;
    now = keep_alive(&mut server, &h, now, Duration::from_millis(900));
    assert_eq!(server.held_bytes(), held, "released early");
    now = keep_alive(&mut server, &h, now, Duration::from_millis(300));
    assert!(now.saturating_since(t0) >= budget.reassembly_timeout);
    assert_eq!(server.held_bytes(), 0);
    assert_eq!(server.stats().reassembly_timeouts, slots as u64);
    assert_eq!(server.sessions_by_state().connected, 48, "sessions kept");
    assert_eq!(server.msgs_outstanding(), 0, "every buffer went home");
    assert!(server.pool_free_bytes() <= budget.pool_keep);
    let heap = live() - base;
    assert!(
        heap <= budget.pool_keep + 16 * MIB,
        "heap {heap} B after expiry"
    );
    // The given-up request answers with the error that ends it at the client.
    server.handle_frame(now, &h.req(0, 0, 30, len));
    assert_eq!(
        sent(&mut server, now),
        vec![error_answer(ErrorCode::ReassemblyTimeout)]
    );
}

#[test]
fn what_a_peer_leaves_in_the_pool_counts_within_its_budget() {
    // The pinning that grew the server past its peer's budget: every slot
    // of 48 sessions first holds a 128 KiB step (90 packets of an 8 MiB
    // request), then, slot after slot, new requests get every packet but
    // the last, 50 ms apart (120,000 frames a second). The steps left
    // behind (given up after the reassembly timeout, or replaced) went to
    // the pool, which kept them (up to 64 MiB) beside the 128 MiB of 8 MiB
    // buffers charged: 176 MiB from one address. They now count beside
    // the charge, and the pool gives back what does not fit.
    let budget = MemBudget::default();
    // As in the test above: the whole ring for the attacker's address and
    // MAC, and no credit policing, so the budget alone stops it.
    let server_cfg = EndpointConfig {
        admission: Admission {
            peer_ring_share_pct: 100,
            mac_ring_share_pct: 100,
            ring_reserve_pct: 0,
            ..Admission::default()
        },
        police: Policing::OFF,
        ..cfg(1)
    };
    let mut server = Endpoint::new(server_cfg).unwrap();
    let mut now = Instant::ZERO;
    let h = Hostile::connect(&mut server, now, 48);
    let len = 8 * MIB;
    let pkts = len.div_ceil(DPP);
    let base = live();
    reset_peak();
    let mut worst = 0;
    for s in 0..48 {
        for r in 0..8 {
            for k in 0..90 {
                server.handle_frame(now, &h.req(s, r, k, len));
            }
        }
        sent(&mut server, now);
    }
    assert_eq!(server.held_bytes_of(h.ip()), 384 * 128 * 1024);
    // 60 slots of the second round: 3 s, past the budget and the expiry
    // of the first round's steps.
    for slot in 0..60 {
        let (s, r) = (slot / 8, 8 + slot as u64 % 8);
        for k in 0..pkts - 1 {
            server.handle_frame(now, &h.req(s, r, k, len));
        }
        sent(&mut server, now);
        let held = server.held_bytes_of(h.ip()) + server.pool_free_bytes();
        worst = worst.max(held);
        assert!(held <= budget.per_peer, "slot {slot}: {held} B held");
        now += Duration::from_millis(50);
        for s in 0..48 {
            server.handle_frame(now, &h.keepalive(s));
        }
        server.handle_timeout(now);
    }
    let st = server.stats();
    eprintln!(
        "held + pool at most {} KiB, heap peak +{} KiB, {} KiB trimmed, {} budget drops",
        worst >> 10,
        (peak() - base) >> 10,
        st.pool_trimmed >> 10,
        st.drops.reassembly_budget
    );
    assert!(st.drops.reassembly_budget > 0, "the budget was reached");
    assert!(st.reassembly_timeouts >= 300, "first-round steps expired");
    assert!(st.pool_trimmed > 0, "the pool gave buffers back");
    assert!(worst > budget.per_peer - 8 * MIB, "{worst}");
    // The heap (every allocation of this thread, the test's frames too)
    // never grew by more than the budget and a few packets.
    let grew = peak() - base;
    assert!(
        grew <= budget.per_peer + MIB,
        "heap peak grew {} KiB, budget {} KiB",
        grew >> 10,
        budget.per_peer >> 10
    );
    // The attack stops: one reassembly timeout later nothing is charged,
    // and the pool keeps at most its retention.
    now = keep_alive(&mut server, &h, now, Duration::from_millis(1200));
    assert_eq!(server.held_bytes(), 0);
    assert!(server.pool_free_bytes() <= budget.pool_keep);
    assert!(live() - base <= budget.pool_keep + MIB);
    assert!(peak() - base <= budget.per_peer + MIB);
    let _ = now;
}

#[test]
fn a_normal_client_is_served_while_a_neighbour_is_over_its_budget() {
    let mem = MemBudget {
        per_peer: 16 * MIB,
        per_worker: 64 * MIB,
        ..MemBudget::default()
    };
    // The neighbour's packets come without waiting for credits: no
    // credit policing (`proto_police`), so the budget alone stops it.
    let server_cfg = EndpointConfig {
        mem,
        police: Policing::OFF,
        ..cfg(1)
    };
    let mut sim = Sim::new(50, ChannelConfig::default());
    sim.add(Endpoint::new(server_cfg.clone()).unwrap());
    sim.add(Endpoint::new(cfg(2)).unwrap());
    let now = sim.now();
    let h = Hostile::connect(sim.ep_mut(SERVER), now, 48);
    let session = sim
        .ep_mut(CLIENT)
        .connect(now, PeerAddr::from(server_cfg.local))
        .unwrap();
    let mut app = EchoApp::default();
    sim.run_for(&mut app, Duration::from_millis(5));
    assert!(app.connected(session));
    // The attack wants 48 x 8 x 8 MiB = 3 GiB, 48 times the worker's
    // budget; its own share stops it at 16 MiB.
    let attack = |sim: &mut Sim| {
        let now = sim.now();
        let server = sim.ep_mut(SERVER);
        for s in 0..48 {
            for r in 0..8 {
                for k in 0..92 {
                    server.handle_frame(now, &h.req(s, r, k, 8 * MIB));
                }
            }
        }
    };
    attack(&mut sim);
    assert!(sim.ep(SERVER).stats().drops.reassembly_budget > 0);
    // The client's 2 MiB requests (and their 2 MiB answers) complete while
    // the attacker keeps pushing.
    for tag in 0..4 {
        app.send(&mut sim, CLIENT, session, tag, 2 * MIB);
    }
    for _ in 0..10 {
        attack(&mut sim);
        sim.run_for(&mut app, Duration::from_millis(5));
    }
    let deadline = sim.now() + Duration::from_millis(500);
    assert!(
        sim.run_until(&mut app, deadline),
        "not idle: {:?}",
        app.failed
    );
    assert_eq!(app.completed.len(), 4, "failed: {:?}", app.failed);
    assert!(app.failed.is_empty() && app.bad.is_empty());
    let s = sim.ep(SERVER);
    let evil = s.held_bytes_of(h.ip());
    assert!(
        evil > 15 * MIB && evil <= mem.per_peer,
        "attacker holds {evil}"
    );
    assert!(s.held_bytes() <= mem.per_worker);
    // The attack stops; its bytes expire; the client is served as before.
    sim.advance(&mut app, Duration::from_millis(1500));
    assert_eq!(sim.ep(SERVER).held_bytes_of(h.ip()), 0);
    for tag in 10..14 {
        app.send(&mut sim, CLIENT, session, tag, 2 * MIB);
    }
    let deadline = sim.now() + Duration::from_millis(500);
    assert!(sim.run_until(&mut app, deadline));
    assert_eq!(app.completed.len(), 8, "failed: {:?}", app.failed);
    assert_eq!(
        sim.ep(CLIENT).session_state(session),
        Some(SessionState::Connected)
    );
}

#[test]
fn responses_nobody_pulls_are_bounded_and_expire() {
    let mem = MemBudget {
        per_peer: 8 * MIB,
        per_worker: 32 * MIB,
        ..MemBudget::default()
    };
    let server_cfg = EndpointConfig {
        mem,
        max_msg_size: MIB,
        ..cfg(1)
    };
    let mut server = Endpoint::new(server_cfg).unwrap();
    let mut now = Instant::ZERO;
    let h = Hostile::connect(&mut server, now, 4);
    let base = live();
    // 32 one-packet requests asking for 1 MiB answers, grant 0: only
    // Response(0) goes out, and the hostile client never pulls the rest.
    for s in 0..4 {
        for r in 0..8 {
            let f = h.req(s, r, 0, 10);
            let handle = match server.handle_frame(now, &f) {
                Some(Delivery::Request { handle, .. }) => handle,
                _ => panic!("not delivered"),
            };
            let m = server.alloc_msg(MIB);
            server.respond(now, handle, m).unwrap();
        }
    }
    let out = sent(&mut server, now);
    let stored = out.iter().filter(|f| f.0 == PktType::Response).count();
    let refused = out
        .iter()
        .filter(|f| *f == &error_answer(ErrorCode::OverBudget))
        .count();
    assert_eq!((stored, refused), (8, 24), "8 x 1 MiB fit the peer's 8 MiB");
    assert_eq!(server.stats().responses_over_budget, 24);
    assert_eq!(server.held_bytes_of(h.ip()), 8 * MIB);
    assert!(live() - base <= 8 * MIB + 2 * MIB, "heap {}", live() - base);
    // Asked for within the timeout, a stored response is served (and its
    // expiry moves); the others expire after the timeout, keepalives or not.
    now = keep_alive(&mut server, &h, now, Duration::from_millis(500));
    server.handle_frame(now, &h.rfr(0, 0, 1));
    let f = sent(&mut server, now);
    assert_eq!((f[0].0, f[0].1, f[0].2.len()), (PktType::Response, 1, DPP));
    now = keep_alive(&mut server, &h, now, Duration::from_millis(600));
    assert_eq!(server.stats().responses_expired, 7);
    assert_eq!(server.held_bytes_of(h.ip()), MIB, "the pulled one stays");
    now = keep_alive(&mut server, &h, now, Duration::from_millis(600));
    assert_eq!(server.stats().responses_expired, 8);
    assert_eq!(server.held_bytes(), 0);
    assert_eq!(server.msgs_outstanding(), 0);
    // A late RFR for a freed response gets the error that ends the request.
    server.handle_frame(now, &h.rfr(0, 1, 1));
    assert_eq!(
        sent(&mut server, now),
        vec![error_answer(ErrorCode::ResponseExpired)]
    );
    assert!(server.stats().rx_accounted());
}

#[test]
fn a_client_that_pulls_gets_its_responses_and_sees_the_budget_as_an_error() {
    // Per peer: one 1 MiB response stored at a time.
    let mem = MemBudget {
        per_peer: MIB,
        per_worker: 4 * MIB,
        ..MemBudget::default()
    };
    let server = EndpointConfig {
        mem,
        max_msg_size: MIB,
        ..cfg(1)
    };
    let client = EndpointConfig {
        max_msg_size: MIB,
        ..cfg(2)
    };
    let mut p = Pair::new(51, ChannelConfig::default(), server, client);
    p.app.resp_len = Some(|_| MIB);
    // One after the other: each takes the lowest free slot, 0, and frees
    // the stored response of the request before it there.
    p.app.send(&mut p.sim, CLIENT, p.session, 1, 100);
    p.run_idle(Duration::from_millis(200));
    for tag in 2..9 {
        p.app.send(&mut p.sim, CLIENT, p.session, tag, 100);
        p.run_idle(Duration::from_millis(200));
    }
    assert_eq!(p.app.completed.len(), 8);
    assert!(p.app.failed.is_empty(), "{:?}", p.app.failed);
    assert_eq!(p.sim.ep(SERVER).stats().responses_over_budget, 0);
    // Two at once: the second response does not fit beside the first
    // (still stored for its slot), and its request fails with a clear
    // error instead of hanging.
    p.app.send(&mut p.sim, CLIENT, p.session, 20, 100);
    p.app.send(&mut p.sim, CLIENT, p.session, 21, 100);
    p.run_idle(Duration::from_millis(200));
    let failed: Vec<_> = p.app.failed.iter().map(|f| (f.1, f.2)).collect();
    assert_eq!(
        failed,
        vec![(21, RpcError::Remote(ErrorCode::OverBudget))],
        "completed {:?}",
        p.app.completed
    );
    assert_eq!(p.sim.ep(SERVER).stats().responses_over_budget, 1);
    assert!(p.app.bad.is_empty());
    assert_eq!(p.app.completed.len(), 9, "tag 20 completed");
}

#[test]
fn the_pool_keeps_at_most_its_retention() {
    let mem = MemBudget {
        pool_keep: 4 * MIB,
        ..MemBudget::default()
    };
    let mut ep = Endpoint::new(EndpointConfig { mem, ..cfg(1) }).unwrap();
    let base = live();
    // Buffers of every size class, 8 of each: 8 x (64 B + ... + 8 MiB).
    let bufs: Vec<_> = (6..=23)
        .flat_map(|shift| (0..8).map(move |_| 1usize << shift))
        .map(|n| ep.alloc_msg(n))
        .collect::<Vec<_>>();
    let total: usize = bufs.iter().map(|b| b.capacity()).sum();
    assert!(total > 100 * MIB);
    drop(bufs);
    assert!(ep.pool_free_bytes() <= 4 * MIB, "{}", ep.pool_free_bytes());
    assert!(
        ep.pool_free_bytes() > 3 * MIB,
        "it does keep up to the limit"
    );
    assert!(ep.pool_stats().released > 0);
    let heap = live().saturating_sub(base);
    assert!(heap <= 4 * MIB + MIB, "heap {heap} B");
    // The default keeps 64 MiB in all, not 64 MiB per class.
    let mut ep = Endpoint::new(cfg(2)).unwrap();
    let bufs: Vec<_> = (6..=23)
        .flat_map(|shift| (0..16).map(move |_| 1usize << shift))
        .map(|n| ep.alloc_msg(n))
        .collect::<Vec<_>>();
    drop(bufs);
    assert!(ep.pool_free_bytes() <= MemBudget::default().pool_keep);
}

#[test]
fn a_failed_event_reaches_the_client_for_a_given_up_request() {
    // The client stalls mid-request (its packets stop arriving); the
    // server gives the request up after its reassembly timeout, and the
    // client's retransmission then learns of it at once.
    let server = EndpointConfig {
        mem: MemBudget {
            reassembly_timeout: Duration::from_millis(200),
            ..MemBudget::default()
        },
        ..cfg(1)
    };
    let client = EndpointConfig {
        session_timeout: Duration::from_secs(5),
        ..cfg(2)
    };
    let mut p = Pair::new(52, ChannelConfig::default(), server, client);
    p.app.send(&mut p.sim, CLIENT, p.session, 1, 200 * DPP);
    p.sim.run_for(&mut p.app, Duration::from_micros(30));
    let held = p.sim.ep(SERVER).held_bytes();
    assert!(held > 0, "the request is being reassembled");
    // The client's packets are lost for longer than the server waits.
    p.sim.set_filter(Box::new(|_, from, _, _| from == CLIENT));
    p.sim.advance(&mut p.app, Duration::from_millis(300));
    assert_eq!(p.sim.ep(SERVER).stats().reassembly_timeouts, 1);
    assert_eq!(p.sim.ep(SERVER).held_bytes(), 0);
    p.sim.clear_filter();
    p.sim.advance(&mut p.app, Duration::from_millis(50));
    let failed: Vec<_> = p.app.failed.iter().map(|f| f.2).collect();
    assert_eq!(failed, vec![RpcError::Remote(ErrorCode::ReassemblyTimeout)]);
    assert!(p
        .app
        .events
        .iter()
        .all(|(_, _, e)| !matches!(e, Event::SessionReset { .. })));
    // And the session goes on.
    p.app.send(&mut p.sim, CLIENT, p.session, 2, 200 * DPP);
    p.run_idle(Duration::from_millis(100));
    assert_eq!(p.app.completed.len(), 1);
}
