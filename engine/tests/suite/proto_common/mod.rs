//! Shared helpers of the `proto_*` integration tests: addresses and configs,
//! deterministic request/response byte patterns, an echo-with-transform
//! server + checking client ([`EchoApp`]) for the in-memory link, and a
//! driver that runs one client/server scenario and checks the invariants
//! every scenario must keep (right bytes, handler at most once per
//! (session, req_num), no credit leak, nothing left pending).
#![allow(dead_code)]

use engine::proto::{
    Delivery, Endpoint, EndpointAddr, EndpointConfig, Event, MsgBuf, PeerAddr, ReqHandle, RpcError,
    SessionId, SessionState,
};
use engine::sim::{ChannelConfig, Sim, SimApp};
use engine::time::{Duration, Instant};
use engine::wire::{
    HeaderTemplate, MacAddr, PktType, RpcRepr, SmBody, SmRepr, HEADERS_LEN, SM_BODY_LEN,
};
use std::collections::HashMap;
use std::net::Ipv4Addr;

pub fn addr(i: u8) -> EndpointAddr {
    EndpointAddr {
        mac: MacAddr([0x02, 0, 0, 0, 0, i]),
        ip: Ipv4Addr::new(10, 0, 0, i),
        port: 31850,
    }
}

/// A frame crafted by hand from `src` (any MAC, address and port, spoofed
/// or not) to `dst`: the headers for `rpc`, then `payload`.
pub fn craft(
    src: (MacAddr, Ipv4Addr, u16),
    dst: EndpointAddr,
    rpc: RpcRepr,
    payload: &[u8],
) -> Vec<u8> {
    let t = HeaderTemplate::new(src, (dst.mac, dst.ip, dst.port));
    let mut buf = vec![0u8; HEADERS_LEN + payload.len()];
    let n = t.write(&mut buf, &rpc, payload.len());
    buf[n..].copy_from_slice(payload);
    buf
}

/// A session-management frame crafted by hand: `body` to session `dest`
/// of `dst`, with `token`.
pub fn sm_frame(
    src: (MacAddr, Ipv4Addr, u16),
    dst: EndpointAddr,
    dest: u16,
    token: u64,
    body: SmRepr,
) -> Vec<u8> {
    let rpc = RpcRepr {
        pkt_type: PktType::SessionMgmt,
        req_type: 0,
        msg_size: SM_BODY_LEN as u32,
        dest_session: dest,
        pkt_num: 0,
        grant: 0,
        req_num: 0,
        token,
    };
    let mut b = [0u8; SM_BODY_LEN];
    body.emit(&mut SmBody::new_unchecked(&mut b[..]));
    craft(src, dst, rpc, &b)
}

/// `a` as a frame source.
pub fn src_of(a: EndpointAddr) -> (MacAddr, Ipv4Addr, u16) {
    (a.mac, a.ip, a.port)
}

pub fn cfg(i: u8) -> EndpointConfig {
    EndpointConfig {
        local: addr(i),
        seed: 1000 + i as u64,
        ..Default::default()
    }
}

/// Byte `j` of the request with `tag`.
pub fn req_byte(tag: u64, j: usize) -> u8 {
    (tag.wrapping_mul(131) as usize ^ j.wrapping_mul(7) ^ (j >> 9)) as u8
}

/// Byte `j` of the response to a request whose bytes are `req`.
pub fn resp_byte(req: &[u8], j: usize) -> u8 {
    let b = if req.is_empty() {
        j as u8
    } else {
        req[j % req.len()]
    };
    (b ^ 0x5A).wrapping_add(3)
}

/// Response length for a request of `len` bytes (first 4 request bytes can
/// override it: see [`EchoApp::resp_len`]).
pub fn make_request(ep: &mut Endpoint, tag: u64, len: usize) -> MsgBuf {
    let mut m = ep.alloc_msg(len);
    for (j, b) in m.iter_mut().enumerate() {
        *b = req_byte(tag, j);
    }
    m
}

/// Server: answers every request with `resp_byte` of its bytes, at most once
/// per (session, req_num) or the test fails. Client: checks every byte of
/// every response against the request it sent.
#[derive(Debug, Default)]
pub struct EchoApp {
    /// Response length as a function of the request length (default: same).
    pub resp_len: Option<fn(usize) -> usize>,
    /// Do not answer; keep the handles in `held` (to test slow handlers).
    pub hold: bool,
    pub held: Vec<(usize, ReqHandle, Vec<u8>)>,
    /// (server node, session, req_num) -> handler runs.
    pub handled: HashMap<(usize, SessionId, u64), u32>,
    /// Tags in the order their requests reached a handler, with req_num.
    pub handled_order: Vec<(u64, u64)>,
    /// tag -> (request len) of requests sent.
    pub expected: HashMap<u64, usize>,
    /// tag -> completion time, in completion order.
    pub completed: Vec<(u64, Instant)>,
    pub failed: Vec<(SessionId, u64, RpcError)>,
    pub events: Vec<(usize, Instant, Event)>,
    /// Responses whose bytes or length were wrong.
    pub bad: Vec<u64>,
}

impl EchoApp {
    pub fn send(&mut self, sim: &mut Sim, node: usize, s: SessionId, tag: u64, len: usize) {
        let now = sim.now();
        let ep = sim.ep_mut(node);
        let m = make_request(ep, tag, len);
        ep.enqueue_request(now, s, 1, m, tag)
            .map_err(|(e, _)| e)
            .unwrap();
        assert!(self.expected.insert(tag, len).is_none(), "tag reused");
    }

    pub fn answer(
        ep: &mut Endpoint,
        now: Instant,
        h: ReqHandle,
        req: &[u8],
        f: Option<fn(usize) -> usize>,
    ) {
        let len = f.map_or(req.len(), |f| f(req.len()));
        let mut m = ep.alloc_msg(len);
        for (j, b) in m.iter_mut().enumerate() {
            *b = resp_byte(req, j);
        }
        ep.respond(now, h, m).unwrap();
    }

    /// Number of handler runs above one for any (session, req_num).
    pub fn handler_reruns(&self) -> u32 {
        self.handled.values().map(|&n| n.saturating_sub(1)).sum()
    }

    pub fn connected(&self, s: SessionId) -> bool {
        self.events
            .iter()
            .any(|(_, _, e)| *e == Event::Connected(s))
    }
}

impl SimApp for EchoApp {
    fn on_delivery(&mut self, node: usize, now: Instant, ep: &mut Endpoint, d: Delivery<'_>) {
        match d {
            Delivery::Request {
                handle, payload, ..
            } => {
                let bytes = payload.as_slice();
                let key = (node, handle.session(), handle.req_num());
                *self.handled.entry(key).or_default() += 1;
                // The tag is not on the wire; recover it from the pattern.
                let tag = self
                    .expected
                    .iter()
                    .find(|(t, l)| {
                        **l == bytes.len()
                            && (0..bytes.len().min(64)).all(|j| bytes[j] == req_byte(**t, j))
                    })
                    .map_or(u64::MAX, |(t, _)| *t);
                self.handled_order.push((tag, handle.req_num()));
                if self.hold {
                    self.held.push((node, handle, bytes.to_vec()));
                } else {
                    Self::answer(ep, now, handle, bytes, self.resp_len);
                }
            }
            Delivery::Response { tag, payload, .. } => {
                let ok = match self.expected.get(&tag) {
                    Some(&len) => {
                        let req: Vec<u8> = (0..len).map(|j| req_byte(tag, j)).collect();
                        let want = self.resp_len.map_or(len, |f| f(len));
                        let got = payload.as_slice();
                        got.len() == want
                            && got
                                .iter()
                                .enumerate()
                                .all(|(j, &b)| b == resp_byte(&req, j))
                    }
                    None => false,
                };
                if !ok {
                    self.bad.push(tag);
                }
                self.completed.push((tag, now));
            }
        }
    }

    fn on_event(&mut self, node: usize, now: Instant, _ep: &mut Endpoint, ev: Event) {
        if let Event::RequestFailed {
            session,
            tag,
            error,
        } = ev
        {
            self.failed.push((session, tag, error));
        }
        self.events.push((node, now, ev));
    }
}

/// A client (node 1) connected to a server (node 0) over `link`.
pub struct Pair {
    pub sim: Sim,
    pub app: EchoApp,
    pub session: SessionId,
}

pub const SERVER: usize = 0;
pub const CLIENT: usize = 1;

impl Pair {
    pub fn new(
        seed: u64,
        link: ChannelConfig,
        server: EndpointConfig,
        client: EndpointConfig,
    ) -> Pair {
        let mut sim = Sim::new(seed, link);
        let peer = PeerAddr::from(server.local);
        assert_eq!(sim.add(Endpoint::new(server).unwrap()), SERVER);
        assert_eq!(sim.add(Endpoint::new(client).unwrap()), CLIENT);
        let now = sim.now();
        let session = sim.ep_mut(CLIENT).connect(now, peer).unwrap();
        let mut app = EchoApp::default();
        let deadline = sim.now() + Duration::from_secs(5);
        while !app.connected(session) {
            assert!(sim.now() < deadline, "connect did not finish");
            sim.run_for(&mut app, Duration::from_millis(1));
        }
        Pair { sim, app, session }
    }

    /// Runs until idle or `limit` of virtual time; panics on timeout.
    pub fn run_idle(&mut self, limit: Duration) {
        let deadline = self.sim.now() + limit;
        assert!(
            self.sim.run_until(&mut self.app, deadline),
            "not idle after {limit:?}: {} of {} completed, failed {:?}, client {:?}",
            self.app.completed.len(),
            self.app.expected.len(),
            self.app.failed,
            self.sim.ep(CLIENT).stats()
        );
    }

    /// The invariants every successful scenario keeps.
    pub fn check_clean(&self) {
        let app = &self.app;
        assert!(
            app.bad.is_empty(),
            "wrong response bytes for tags {:?}",
            app.bad
        );
        assert!(app.failed.is_empty(), "failed: {:?}", app.failed);
        assert_eq!(app.handler_reruns(), 0, "a handler ran twice");
        assert_eq!(app.completed.len(), app.expected.len(), "not all completed");
        let mut tags: Vec<u64> = app.completed.iter().map(|c| c.0).collect();
        tags.sort_unstable();
        tags.dedup();
        assert_eq!(
            tags.len(),
            app.expected.len(),
            "a response was delivered twice"
        );
        let c = self.sim.ep(CLIENT);
        assert_eq!(c.session_state(self.session), Some(SessionState::Connected));
        assert_eq!(
            c.session_credits_available(self.session),
            Some(c.config().session_credits),
            "credit leak"
        );
        assert_eq!(c.session_pending_requests(self.session), Some(0));
        assert_eq!(c.stats().requests_completed, app.expected.len() as u64);
        assert_eq!(
            self.sim.ep(SERVER).stats().handler_invocations,
            app.handled.len() as u64
        );
        for n in [CLIENT, SERVER] {
            let st = self.sim.ep(n).stats();
            check_drop_identities(&st.drops);
            assert!(
                st.rx_accounted(),
                "node {n}: a frame unaccounted for: {st:?}"
            );
            assert_eq!(st.invalid_transitions, 0);
        }
    }
}

/// The per-kind drop counters add up to the aggregates.
pub fn check_drop_identities(d: &engine::proto::Drops) {
    assert_eq!(
        d.duplicate,
        d.dup_request + d.dup_response + d.dup_cr + d.dup_rfr + d.dup_sm,
        "{d:?}"
    );
    assert_eq!(
        d.future,
        d.future_request + d.future_response + d.future_cr + d.future_rfr,
        "{d:?}"
    );
    assert_eq!(
        d.stale,
        d.stale_request + d.stale_response + d.stale_cr + d.stale_rfr,
        "{d:?}"
    );
    assert!(d.dup_request_no_response <= d.dup_request);
}
