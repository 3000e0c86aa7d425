//! Per packet kind (Request, Response, CreditReturn, ReqForResp,
//! SessionMgmt): feed a past, an in-order, a duplicate and a future packet,
//! crafted with `wire::HeaderTemplate`, and check what must happen (delivered,
//! re-answered, or dropped with which counter). Plus malformed frames,
//! unknown sessions, bad tokens and frames not addressed to us: counted,
//! never a panic.

use crate::proto_common::*;
use engine::proto::{
    Delivery, Endpoint, EndpointConfig, ErrorCode, Event, FlowMode, Payload, PayloadCopy, PeerAddr,
    Policing, SessionId, SessionState,
};
use engine::rng::Rng;
use engine::time::{Duration, Instant};
use engine::wire::{
    self, MacAddr, PktType, RpcRepr, SmBody, SmRepr, SmStatus, SmType, HEADERS_LEN, SESSION_NONE,
};
use std::net::Ipv4Addr;

const T0: Instant = Instant::ZERO;

/// A connected client (`c`, addr 2) and server (`s`, addr 1), wired by hand.
struct Rig {
    s: Endpoint,
    c: Endpoint,
    /// Client's session and the server's session for it.
    cs: SessionId,
    ss: SessionId,
    token: u64,
    dpp: usize,
}

/// Drains an endpoint's transmit queue.
fn frames(ep: &mut Endpoint) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; ep.min_tx_buf_len()];
    let mut out = Vec::new();
    while let Some(n) = ep.poll_transmit(T0, &mut buf) {
        out.push(buf[..n].to_vec());
    }
    out
}

fn rpc_of(f: &[u8]) -> RpcRepr {
    wire::parse_frame(f).unwrap().rpc
}

fn payload_of(f: &[u8]) -> Vec<u8> {
    wire::parse_frame(f).unwrap().payload.to_vec()
}

fn sm_of(f: &[u8]) -> SmRepr {
    let p = wire::parse_frame(f).unwrap();
    SmRepr::parse(&SmBody::new_checked(p.payload).unwrap()).unwrap()
}

impl Rig {
    fn new() -> Rig {
        Rig::with_server(cfg(1))
    }

    fn with_server(server: EndpointConfig) -> Rig {
        Rig::with_both(server, cfg(2))
    }

    fn with_both(server: EndpointConfig, client: EndpointConfig) -> Rig {
        let mut s = Endpoint::new(server).unwrap();
        let mut c = Endpoint::new(client).unwrap();
        let cs = c.connect(T0, PeerAddr::from(addr(1))).unwrap();
        let req = frames(&mut c);
        assert_eq!(req.len(), 1);
        assert!(s.handle_frame(T0, &req[0]).is_none());
        let Some(Event::PeerSessionAccepted(ss)) = s.poll_event() else {
            panic!("not accepted")
        };
        let resp = frames(&mut s);
        // The session's packets carry the token the server chose.
        let token = sm_of(&resp[0]).server_token;
        assert_ne!(token, rpc_of(&req[0]).token);
        for f in resp {
            assert!(c.handle_frame(T0, &f).is_none());
        }
        assert_eq!(c.poll_event(), Some(Event::Connected(cs)));
        let dpp = c.max_data_per_pkt();
        Rig {
            s,
            c,
            cs,
            ss,
            token,
            dpp,
        }
    }

    /// Client -> server frame.
    fn to_server(&self, rpc: RpcRepr, payload: &[u8]) -> Vec<u8> {
        craft_from(addr(2), addr(1), rpc, payload)
    }

    /// Server -> client frame.
    fn to_client(&self, rpc: RpcRepr, payload: &[u8]) -> Vec<u8> {
        craft_from(addr(1), addr(2), rpc, payload)
    }

    fn rpc(
        &self,
        pkt_type: PktType,
        dest: SessionId,
        req_num: u64,
        pkt_num: u16,
        msg_size: usize,
    ) -> RpcRepr {
        RpcRepr {
            pkt_type,
            req_type: 1,
            msg_size: msg_size as u32,
            dest_session: dest.number(),
            pkt_num,
            grant: 0,
            req_num,
            token: self.token,
        }
    }

    /// Request packet `k` of request `req_num` (tag = req_num) of `len` bytes.
    fn req_pkt(&self, req_num: u64, k: usize, len: usize) -> Vec<u8> {
        let body: Vec<u8> = (0..len).map(|j| req_byte(req_num, j)).collect();
        let r = (k * self.dpp).min(len)..((k + 1) * self.dpp).min(len);
        self.to_server(
            self.rpc(PktType::Request, self.ss, req_num, k as u16, len),
            &body[r],
        )
    }
}

/// `craft` and `sm_frame` of `proto_common`, from an endpoint address.
fn craft_from(
    src: engine::proto::EndpointAddr,
    dst: engine::proto::EndpointAddr,
    rpc: RpcRepr,
    payload: &[u8],
) -> Vec<u8> {
    craft(src_of(src), dst, rpc, payload)
}

fn sm_from(
    src: engine::proto::EndpointAddr,
    dst: engine::proto::EndpointAddr,
    dest: u16,
    token: u64,
    body: SmRepr,
) -> Vec<u8> {
    sm_frame(src_of(src), dst, dest, token, body)
}

#[test]
fn request_packets_past_inorder_duplicate_future() {
    let mut r = Rig::new();
    let len = 2 * r.dpp + 10; // 3 packets
    let d0 = r.s.stats().drops;

    // Future (pkt 1 before pkt 0 of a new request): dropped, nothing sent.
    assert!(r.s.handle_frame(T0, &r.req_pkt(0, 1, len)).is_none());
    assert_eq!(r.s.stats().drops.future_request, d0.future_request + 1);
    assert!(frames(&mut r.s).is_empty());

    // In order: pkt 0 -> CR(0).
    assert!(r.s.handle_frame(T0, &r.req_pkt(0, 0, len)).is_none());
    let f = frames(&mut r.s);
    assert_eq!(f.len(), 1);
    let a = rpc_of(&f[0]);
    assert_eq!(
        (a.pkt_type, a.pkt_num, a.req_num),
        (PktType::CreditReturn, 0, 0)
    );
    assert_eq!((a.dest_session, a.token), (r.cs.number(), r.token));

    // Duplicate pkt 0: dropped, CR(0) re-sent.
    assert!(r.s.handle_frame(T0, &r.req_pkt(0, 0, len)).is_none());
    assert_eq!(r.s.stats().drops.dup_request, d0.dup_request + 1);
    let f = frames(&mut r.s);
    assert_eq!(f.len(), 1);
    assert_eq!(rpc_of(&f[0]).pkt_type, PktType::CreditReturn);

    // Future pkt 2 (pkt 1 missing).
    assert!(r.s.handle_frame(T0, &r.req_pkt(0, 2, len)).is_none());
    assert_eq!(r.s.stats().drops.future_request, d0.future_request + 2);
    assert!(frames(&mut r.s).is_empty());

    // pkt 1 -> CR(1); pkt 2 -> the handler runs, with the whole message.
    assert!(r.s.handle_frame(T0, &r.req_pkt(0, 1, len)).is_none());
    assert_eq!(rpc_of(&frames(&mut r.s)[0]).pkt_num, 1);
    let last = r.req_pkt(0, 2, len);
    let Some(Delivery::Request {
        handle,
        req_type,
        payload,
    }) = r.s.handle_frame(T0, &last)
    else {
        panic!("request not delivered")
    };
    assert_eq!(req_type, 1);
    assert_eq!((handle.session(), handle.req_num()), (r.ss, 0));
    let Payload::Owned(m) = payload else {
        panic!("multi-packet must be Owned")
    };
    assert!(m.iter().enumerate().all(|(j, &b)| b == req_byte(0, j)) && m.len() == len);
    drop(m);
    assert_eq!(
        r.s.msgs_outstanding(),
        0,
        "the request buffer went home on drop"
    );
    assert!(frames(&mut r.s).is_empty());

    // Duplicate last packet before the handler responded: nothing to re-send.
    assert!(r.s.handle_frame(T0, &last).is_none());
    assert_eq!(r.s.stats().drops.dup_request_no_response, 1);
    assert!(frames(&mut r.s).is_empty());

    // Respond (3-packet response): Response(0) goes out unasked, twice:
    // the second copy answers the duplicate that arrived meanwhile, so the
    // client can tell its timeout was spurious.
    let rlen = 2 * r.dpp + 1;
    let mut resp = r.s.alloc_msg(rlen);
    resp.iter_mut().enumerate().for_each(|(j, b)| *b = j as u8);
    r.s.respond(T0, handle, resp).unwrap();
    let f = frames(&mut r.s);
    assert_eq!(f.len(), 2);
    assert_eq!(f[0], f[1]);
    let a = rpc_of(&f[0]);
    assert_eq!(
        (a.pkt_type, a.pkt_num, a.msg_size as usize),
        (PktType::Response, 0, rlen)
    );

    // Duplicate last packet now: Response(0) re-sent; duplicate pkt 1: CR(1).
    assert!(r.s.handle_frame(T0, &last).is_none());
    assert!(r.s.handle_frame(T0, &r.req_pkt(0, 1, len)).is_none());
    let f = frames(&mut r.s);
    let kinds: Vec<_> = f
        .iter()
        .map(|f| (rpc_of(f).pkt_type, rpc_of(f).pkt_num))
        .collect();
    assert_eq!(kinds, [(PktType::Response, 0), (PktType::CreditReturn, 1)]);

    // Past: a newer request on the slot (req_num 8), then an old packet.
    let f8 = r.req_pkt(8, 0, 5);
    let Some(Delivery::Request {
        handle: h8,
        payload,
        ..
    }) = r.s.handle_frame(T0, &f8)
    else {
        panic!("new request not delivered")
    };
    assert!(matches!(payload, Payload::Borrowed(b) if b.len() == 5));
    assert_eq!(h8.req_num(), 8);
    assert!(r.s.handle_frame(T0, &r.req_pkt(0, 0, len)).is_none());
    assert_eq!(r.s.stats().drops.stale_request, 1);
    assert!(frames(&mut r.s).is_empty());
    assert_eq!(r.s.stats().handler_invocations, 2);
}

#[test]
fn rfr_packets_past_inorder_duplicate_future() {
    let mut r = Rig::new();
    let Some(Delivery::Request { handle, .. }) = r.s.handle_frame(T0, &r.req_pkt(0, 0, 10)) else {
        panic!()
    };
    // Duplicate of the (single-packet) request before the response: the
    // handler does not run again and nothing is sent.
    assert!(r.s.handle_frame(T0, &r.req_pkt(0, 0, 10)).is_none());
    assert_eq!(r.s.stats().drops.dup_request_no_response, 1);
    assert!(frames(&mut r.s).is_empty());
    let rlen = 2 * r.dpp + 7;
    let mut resp = r.s.alloc_msg(rlen);
    resp.iter_mut()
        .enumerate()
        .for_each(|(j, b)| *b = (j % 251) as u8);
    // Future: an RFR before the response exists.
    let rfr = |r: &Rig, req, k| r.to_server(r.rpc(PktType::ReqForResp, r.ss, req, k, 0), &[]);
    assert!(r.s.handle_frame(T0, &rfr(&r, 0, 1)).is_none());
    assert_eq!(r.s.stats().drops.future_rfr, 1);
    r.s.respond(T0, handle, resp).unwrap();
    // Response(0), twice: once more for the duplicate seen in the handler.
    assert_eq!(frames(&mut r.s).len(), 2);

    // In order RFR(1) -> Response(1) with the right bytes.
    assert!(r.s.handle_frame(T0, &rfr(&r, 0, 1)).is_none());
    let f = frames(&mut r.s);
    assert_eq!(f.len(), 1);
    assert_eq!(
        (rpc_of(&f[0]).pkt_type, rpc_of(&f[0]).pkt_num),
        (PktType::Response, 1)
    );
    let want: Vec<u8> = (r.dpp..2 * r.dpp).map(|j| (j % 251) as u8).collect();
    assert_eq!(payload_of(&f[0]), want);

    // Duplicate RFR(1): answered again, counted.
    assert!(r.s.handle_frame(T0, &rfr(&r, 0, 1)).is_none());
    assert_eq!(rpc_of(&frames(&mut r.s)[0]).pkt_num, 1);
    assert_eq!(r.s.stats().drops.dup_rfr, 1);

    // RFR(2): the 7-byte tail. RFR(3) is beyond the response: malformed.
    assert!(r.s.handle_frame(T0, &rfr(&r, 0, 2)).is_none());
    assert_eq!(payload_of(&frames(&mut r.s)[0]).len(), 7);
    let m0 = r.s.stats().drops.malformed;
    assert!(r.s.handle_frame(T0, &rfr(&r, 0, 3)).is_none());
    assert_eq!(r.s.stats().drops.malformed, m0 + 1);

    // Future: RFR for a request the slot has not seen (req_num 8).
    assert!(r.s.handle_frame(T0, &rfr(&r, 8, 1)).is_none());
    assert_eq!(r.s.stats().drops.future_rfr, 2);
    // Past: once req 8 started, RFRs of req 0 are stale and get nothing.
    assert!(r.s.handle_frame(T0, &r.req_pkt(8, 0, 1)).is_some());
    assert!(r.s.handle_frame(T0, &rfr(&r, 0, 1)).is_none());
    assert_eq!(r.s.stats().drops.stale_rfr, 1);
    assert!(frames(&mut r.s).is_empty());
}

#[test]
fn credit_return_and_response_packets_past_inorder_duplicate_future() {
    let mut r = Rig::new();
    let len = 2 * r.dpp + 1; // 3 request packets
    let m = make_request(&mut r.c, 7, len);
    r.c.enqueue_request(T0, r.cs, 1, m, 7).unwrap();
    let sent = frames(&mut r.c);
    assert_eq!(sent.len(), 3);
    assert!(sent
        .iter()
        .all(|f| rpc_of(f).pkt_type == PktType::Request && rpc_of(f).req_num == 0));
    let credits = |r: &Rig| r.c.session_credits_available(r.cs).unwrap();
    // The last request packet grants the server every credit left (29)
    // for response packets after Response(0).
    let grants: Vec<u16> = sent.iter().map(|f| rpc_of(f).grant).collect();
    assert_eq!(grants, [0, 0, 29]);
    assert_eq!(credits(&r), 0);
    let cr = |r: &Rig, req, k| r.to_client(r.rpc(PktType::CreditReturn, r.cs, req, k, len), &[]);
    let rlen = 2 * r.dpp + 3; // 3 response packets
    let body: Vec<u8> = (0..rlen).map(|j| (j * 3) as u8).collect();
    let resp = |r: &Rig, req, k: usize| {
        let rg = k * r.dpp..((k + 1) * r.dpp).min(rlen);
        r.to_client(
            r.rpc(PktType::Response, r.cs, req, k as u16, rlen),
            &body[rg],
        )
    };
    let d = |r: &Rig| r.c.stats().drops;

    // Response(0) while the CRs are missing: future.
    assert!(r.c.handle_frame(T0, &resp(&r, 0, 0)).is_none());
    assert_eq!(d(&r).future_response, 1);
    // CR(1) before CR(0): cumulative, it answers packets 0 and 1 at once.
    assert!(r.c.handle_frame(T0, &cr(&r, 0, 1)).is_none());
    assert_eq!(credits(&r), 2);
    // Duplicates: CR(0) and CR(1) again.
    assert!(r.c.handle_frame(T0, &cr(&r, 0, 0)).is_none());
    assert!(r.c.handle_frame(T0, &cr(&r, 0, 1)).is_none());
    assert_eq!((d(&r).dup_cr, credits(&r)), (2, 2));
    // CR for the last request packet does not exist: malformed.
    assert!(r.c.handle_frame(T0, &cr(&r, 0, 2)).is_none());
    assert_eq!(d(&r).malformed, 1);
    // Response(1) before Response(0): future.
    assert!(r.c.handle_frame(T0, &resp(&r, 0, 1)).is_none());
    assert_eq!(d(&r).future_response, 2);
    // In order Response(0): the grant covers Response(1) and (2), so no
    // RFR is sent; the 27 credits granted beyond the response come home.
    assert!(r.c.handle_frame(T0, &resp(&r, 0, 0)).is_none());
    assert!(frames(&mut r.c).is_empty());
    assert_eq!(credits(&r), 30);
    // Duplicate Response(0); future Response(2).
    assert!(r.c.handle_frame(T0, &resp(&r, 0, 0)).is_none());
    assert_eq!(d(&r).dup_response, 1);
    assert!(r.c.handle_frame(T0, &resp(&r, 0, 2)).is_none());
    assert_eq!(d(&r).future_response, 3);
    // Response(1), Response(2): delivered, assembled, all credits home.
    assert!(r.c.handle_frame(T0, &resp(&r, 0, 1)).is_none());
    let last = resp(&r, 0, 2);
    let Some(Delivery::Response {
        session,
        tag,
        payload,
    }) = r.c.handle_frame(T0, &last)
    else {
        panic!("response not delivered")
    };
    assert_eq!((session, tag), (r.cs, 7));
    assert_eq!(payload.as_slice(), &body[..]);
    assert!(matches!(payload, Payload::Owned(_)));
    assert_eq!(credits(&r), 32);
    assert_eq!(r.c.stats().requests_completed, 1);
    // Past: answers for the completed request are stale.
    assert!(r.c.handle_frame(T0, &resp(&r, 0, 2)).is_none());
    assert!(r.c.handle_frame(T0, &cr(&r, 0, 0)).is_none());
    assert_eq!((d(&r).stale_response, d(&r).stale_cr), (1, 1));
    assert_eq!(credits(&r), 32);
    assert!(frames(&mut r.c).is_empty());
}

#[test]
fn single_packet_response_is_zero_copy() {
    let mut r = Rig::new();
    let m = make_request(&mut r.c, 1, 3);
    r.c.enqueue_request(T0, r.cs, 1, m, 1).unwrap();
    assert_eq!(frames(&mut r.c).len(), 1);
    let f = r.to_client(r.rpc(PktType::Response, r.cs, 0, 0, 4), b"abcd");
    let Some(Delivery::Response {
        payload: Payload::Borrowed(b),
        ..
    }) = r.c.handle_frame(T0, &f)
    else {
        panic!("not borrowed")
    };
    // The payload points into the frame itself.
    assert_eq!(b, b"abcd");
    assert_eq!(b.as_ptr(), f[HEADERS_LEN..].as_ptr());
}

#[test]
fn session_mgmt_past_inorder_duplicate_future() {
    let mut r = Rig::new();
    let third = addr(3);
    let req = SmRepr {
        sm_type: SmType::ConnectReq,
        status: SmStatus::Ok,
        client_session: 5,
        server_session: SESSION_NONE,
        credits: 8,
        mtu: 1500,
        req_window: 8,
        server_token: 0,
    };
    let connect = sm_from(third, addr(1), SESSION_NONE, 0xABCD, req);
    // In order: accepted, ConnectResp Ok with a session number.
    assert!(r.s.handle_frame(T0, &connect).is_none());
    let f = frames(&mut r.s);
    assert_eq!(f.len(), 1);
    let resp = sm_of(&f[0]);
    assert_eq!(
        (resp.sm_type, resp.status, resp.client_session),
        (SmType::ConnectResp, SmStatus::Ok, 5)
    );
    assert_eq!(wire::parse_frame(&f[0]).unwrap().dst_mac, third.mac);
    let Some(Event::PeerSessionAccepted(new)) = r.s.poll_event() else {
        panic!()
    };
    assert_eq!(new.number(), resp.server_session);
    assert_eq!(r.s.sessions_by_state().connected, 2);
    // Duplicate: the same answer, no second session.
    assert!(r.s.handle_frame(T0, &connect).is_none());
    assert_eq!(sm_of(&frames(&mut r.s)[0]), resp);
    assert_eq!(r.s.sessions_by_state().connected, 2);
    assert_eq!(r.s.stats().drops.dup_sm, 1);
    assert_eq!(r.s.poll_event(), None);
    // Refusals: zero credits, wrong MTU.
    for (credits, mtu, status) in [(0, 1500, SmStatus::BadCredits), (8, 9000, SmStatus::BadMtu)] {
        let bad = SmRepr {
            client_session: 6,
            credits,
            mtu,
            req_window: 8,
            server_token: 0,
            ..req
        };
        assert!(r
            .s
            .handle_frame(T0, &sm_from(third, addr(1), SESSION_NONE, 1, bad))
            .is_none());
        let a = sm_of(&frames(&mut r.s)[0]);
        assert_eq!((a.status, a.server_session), (status, SESSION_NONE));
    }
    // Client side, duplicate ConnectResp of an already connected session.
    let dup_resp = SmRepr {
        sm_type: SmType::ConnectResp,
        client_session: r.cs.number(),
        server_session: r.ss.number(),
        credits: 32,
        ..req
    };
    assert!(r
        .c
        .handle_frame(
            T0,
            &sm_from(addr(1), addr(2), r.cs.number(), r.token, dup_resp)
        )
        .is_none());
    assert_eq!(r.c.stats().drops.dup_sm, 1);
    // Future: a ConnectResp for a client session that does not exist yet.
    let f = sm_from(
        addr(1),
        addr(2),
        40,
        r.token,
        SmRepr {
            client_session: 40,
            ..dup_resp
        },
    );
    assert!(r.c.handle_frame(T0, &f).is_none());
    assert_eq!(r.c.stats().drops.unknown_session, 1);
    assert_eq!(r.c.session_state(r.cs), Some(SessionState::Connected));

    // DisconnectReq for the new session: freed, answered Ok.
    let disc = SmRepr {
        sm_type: SmType::DisconnectReq,
        server_session: new.number(),
        ..req
    };
    // It carries the server's token; the client's own is no longer the
    // session's.
    let stale = sm_from(third, addr(1), new.number(), 0xABCD, disc);
    assert!(r.s.handle_frame(T0, &stale).is_none());
    let a = sm_of(&frames(&mut r.s)[0]);
    assert_eq!(a.status, SmStatus::UnknownSession);
    assert_eq!(r.s.session_state(new), Some(SessionState::Connected));
    let df = sm_from(third, addr(1), new.number(), resp.server_token, disc);
    assert!(r.s.handle_frame(T0, &df).is_none());
    let a = sm_of(&frames(&mut r.s)[0]);
    assert_eq!(
        (a.sm_type, a.status),
        (SmType::DisconnectResp, SmStatus::Ok)
    );
    assert_eq!(r.s.poll_event(), Some(Event::PeerSessionClosed(new)));
    assert_eq!(r.s.session_state(new), None);
    // Past: the same DisconnectReq again -> UnknownSession, nothing freed.
    assert!(r.s.handle_frame(T0, &df).is_none());
    assert_eq!(sm_of(&frames(&mut r.s)[0]).status, SmStatus::UnknownSession);
    assert_eq!(r.s.stats().drops.unknown_session, 1);
    assert_eq!(r.s.session_state(r.ss), Some(SessionState::Connected));
}

#[test]
fn reconnect_with_new_token_replaces_session() {
    let mut r = Rig::new();
    let req = SmRepr {
        sm_type: SmType::ConnectReq,
        status: SmStatus::Ok,
        client_session: r.cs.number(),
        server_session: SESSION_NONE,
        credits: 32,
        mtu: 1500,
        req_window: 8,
        server_token: 0,
    };
    let connect = sm_from(addr(2), addr(1), SESSION_NONE, 0x1234, req);
    // The live session is probed first; unanswered for the probe wait, the
    // next copy of the request replaces it (a restarted client).
    let at = |ms| T0 + engine::time::Duration::from_millis(ms);
    assert!(r.s.handle_frame(at(1), &connect).is_none());
    assert_eq!(r.s.poll_event(), None);
    let probe = frames(&mut r.s);
    assert_eq!(probe.len(), 1);
    assert_eq!(sm_of(&probe[0]).sm_type, SmType::KeepAlive);
    let later = at(101);
    assert!(r.s.handle_frame(later, &connect).is_none());
    assert_eq!(r.s.poll_event(), Some(Event::PeerSessionClosed(r.ss)));
    assert!(matches!(
        r.s.poll_event(),
        Some(Event::PeerSessionAccepted(_))
    ));
    assert_eq!(r.s.sessions_by_state().connected, 1);
    // The new session is half-open until its client's first packet: it
    // reserves nothing yet (the old one's entries went back).
    assert_eq!(r.s.ring_usage().0, 0, "half-open: nothing reserved");
}

#[test]
fn unknown_session_bad_token_bad_state() {
    let mut r = Rig::new();
    let d0 = r.s.stats().drops;
    let mut rpc = r.rpc(PktType::Request, r.ss, 0, 0, 1);
    rpc.dest_session = 77;
    assert!(r.s.handle_frame(T0, &r.to_server(rpc, b"x")).is_none());
    rpc.dest_session = r.ss.number();
    rpc.token ^= 1;
    assert!(r.s.handle_frame(T0, &r.to_server(rpc, b"x")).is_none());
    // A request addressed to the client's session number on the server
    // (wrong role) is unknown too.
    let mut rpc2 = r.rpc(PktType::CreditReturn, r.ss, 0, 0, 1);
    rpc2.dest_session = r.ss.number();
    assert!(r.s.handle_frame(T0, &r.to_server(rpc2, &[])).is_none());
    let d = r.s.stats().drops;
    assert_eq!(d.unknown_session, d0.unknown_session + 2);
    assert_eq!(d.bad_token, d0.bad_token + 1);
    assert_eq!(r.s.stats().handler_invocations, 0);
    assert!(frames(&mut r.s).is_empty());
}

#[test]
fn frames_not_ours_are_counted() {
    let mut r = Rig::new();
    let ok = r.req_pkt(0, 0, 1);
    let mut other_mac = addr(1);
    other_mac.mac = MacAddr([2, 9, 9, 9, 9, 9]);
    let mut other_ip = addr(1);
    other_ip.ip = Ipv4Addr::new(10, 9, 9, 9);
    let mut other_port = addr(1);
    other_port.port = 1;
    let rpc = rpc_of(&ok);
    for dst in [other_mac, other_ip, other_port] {
        assert!(r
            .s
            .handle_frame(T0, &craft_from(addr(2), dst, rpc, b"z"))
            .is_none());
    }
    assert_eq!(r.s.stats().drops.not_ours, 3);
    // Broadcast MAC with our IP and port is ours.
    let mut bcast = addr(1);
    bcast.mac = MacAddr::BROADCAST;
    assert!(r
        .s
        .handle_frame(T0, &craft_from(addr(2), bcast, rpc, b"z"))
        .is_some());
}

#[test]
fn ipv4_checksum_checked_unless_the_link_is_trusted() {
    let mut r = Rig::new();
    let mut f = r.req_pkt(0, 0, 100);
    f[24] ^= 0xFF; // IPv4 checksum
    assert!(r.s.handle_frame(T0, &f).is_none());
    assert_eq!(r.s.stats().drops.malformed, 1, "checked by default");
    // The same frame on an endpoint that trusts its link (shared memory):
    // delivered.
    let mut t = Rig::with_server(EndpointConfig {
        verify_ipv4_checksum: false,
        ..cfg(1)
    });
    let mut f = t.req_pkt(0, 0, 100);
    f[24] ^= 0xFF;
    assert!(t.s.handle_frame(T0, &f).is_some(), "{:?}", t.s.stats());
    assert_eq!(t.s.stats().drops.malformed, 0);
}

#[test]
fn malformed_frames_are_counted_never_panic() {
    // 20,000 frames with the session's token and no transmit in between
    // would be a credit flood (`proto_police`): policing off, so the
    // mutations reach the paths behind the first look.
    let mut r = Rig::with_server(EndpointConfig {
        police: Policing::OFF,
        ..cfg(1)
    });
    let good = r.req_pkt(0, 0, 100);
    let mut bad: Vec<Vec<u8>> = vec![
        vec![],
        vec![0; 10],
        good[..40].to_vec(),
        good[..HEADERS_LEN - 1].to_vec(),
    ];
    let mut magic = good.clone();
    magic[42] = 0; // RPC magic
    bad.push(magic);
    let mut csum = good.clone();
    csum[24] ^= 0xFF; // IPv4 checksum
    bad.push(csum);
    // Payload shorter than the message needs for packet 0.
    bad.push(r.to_server(r.rpc(PktType::Request, r.ss, 0, 0, 100), b"short"));
    // Packet number beyond the message.
    bad.push(r.to_server(r.rpc(PktType::Request, r.ss, 0, 5, 100), &[0; 100]));
    // Unknown packet type; SM frame with a truncated body.
    bad.push(r.to_server(r.rpc(PktType::Unknown(11), r.ss, 0, 0, 0), &[]));
    bad.push(r.to_server(r.rpc(PktType::SessionMgmt, r.ss, 0, 0, 0), &[1, 2]));
    let n = bad.len() as u64;
    for f in &bad {
        assert!(r.s.handle_frame(T0, f).is_none());
    }
    assert_eq!(r.s.stats().drops.malformed, n);
    assert_eq!(r.s.stats().rx_pkts, n + 1); // + the ConnectReq

    // Random mutations of valid frames of every kind: no panic, and every
    // frame is accounted for on both endpoints: accepted (delivered or
    // advancing the protocol) or dropped under exactly one named reason.
    let mut rng = Rng::new(77);
    let seeds = [good.clone(), r.req_pkt(0, 0, 3 * r.dpp)];
    for i in 0..20_000 {
        let mut f = seeds[i % 2].clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(f.len() as u64) as usize;
            f[at] = rng.next_u32() as u8;
        }
        if rng.chance(0.1) {
            f.truncate(rng.below(f.len() as u64) as usize);
        }
        for ep in [&mut r.s, &mut r.c] {
            let before = *ep.stats();
            if let Some(Delivery::Request { handle, .. }) = ep.handle_frame(T0, &f) {
                let m = ep.alloc_msg(1);
                let _ = ep.respond(T0, handle, m);
            }
            let after = *ep.stats();
            let accepted = after.rx_accepted - before.rx_accepted;
            let dropped = after.drops.total() - before.drops.total();
            assert_eq!(after.rx_pkts - before.rx_pkts, 1);
            assert_eq!(
                accepted + dropped,
                1,
                "frame {i} counted {accepted}+{dropped}"
            );
            let _ = frames(ep);
        }
    }
    // On the server, whom the frames are for, the mutations hit both
    // outcomes, not only drops; the client drops them as not its own.
    let st = r.s.stats();
    assert!(st.rx_accepted > 10 && st.drops.total() > 1_000, "{st:?}");
    assert!(r.c.stats().rx_accounted() && r.c.stats().drops.not_ours > 10_000);
}

/// The regimes' receive paths under the same mutation fuzzing: both ends
/// selective, in pause mode and running DCQCN, the client with a
/// multi-packet request outstanding, the seeds covering Sack, Pause, Cnp
/// and early response packets. No panic, every frame accounted for once,
/// and time moving on (timers, pauses, pacing) in between.
#[test]
fn regime_frames_fuzzed_are_counted_never_panic() {
    use engine::proto::{CcKind, PauseConfig, Retransmit};
    let regimes = |i| EndpointConfig {
        mode: FlowMode::Pause,
        pause: PauseConfig::for_ring(4096, 64, Duration::from_micros(200)),
        retransmit: Retransmit::Selective,
        cc: CcKind::Dcqcn,
        ..cfg(i)
    };
    let mut r = Rig::with_both(regimes(1), regimes(2));
    let len = 5 * r.dpp;
    let m = r.c.alloc_msg(len);
    r.c.enqueue_request(T0, r.cs, 1, m, 0)
        .map_err(|(e, _)| e)
        .unwrap();
    let _ = frames(&mut r.c);
    let cs_rpc = |t: PktType, pkt: u16, grant: u16, size: usize| RpcRepr {
        grant,
        ..r.rpc(t, r.cs, 0, pkt, size)
    };
    let mut pause = cs_rpc(PktType::Pause, 0, 0, 200);
    pause.dest_session = SESSION_NONE;
    pause.token = 0;
    let seeds = [
        r.req_pkt(0, 2, len),
        r.req_pkt(0, 4, len),
        r.to_client(cs_rpc(PktType::Sack, 3, 1, len), &[]),
        r.to_client(pause, &[]),
        r.to_client(cs_rpc(PktType::Cnp, 0, 0, 0), &[]),
        r.to_client(cs_rpc(PktType::Response, 2, 0, 3 * r.dpp), &vec![7; r.dpp]),
    ];
    let mut rng = Rng::new(78);
    let mut now = T0;
    for i in 0..20_000 {
        let mut f = seeds[i % seeds.len()].clone();
        for _ in 0..rng.below(4) {
            let at = rng.below(f.len() as u64) as usize;
            f[at] = rng.next_u32() as u8;
        }
        if rng.chance(0.05) {
            f.truncate(rng.below(f.len() as u64) as usize);
        }
        for ep in [&mut r.s, &mut r.c] {
            let before = *ep.stats();
            if let Some(Delivery::Request { handle, .. }) = ep.handle_frame(now, &f) {
                let m = ep.alloc_msg(1);
                let _ = ep.respond(now, handle, m);
            }
            let after = *ep.stats();
            let accepted = after.rx_accepted - before.rx_accepted;
            let dropped = after.drops.total() - before.drops.total();
            assert_eq!(
                accepted + dropped,
                1,
                "frame {i} counted {accepted}+{dropped}"
            );
            ep.observe_rx_ring(now, rng.below(4096) as usize);
            let _ = frames(ep);
            if i % 100 == 0 {
                ep.handle_timeout(now);
            }
        }
        now += Duration::from_micros(rng.below(50));
    }
    for ep in [&r.s, &r.c] {
        assert!(ep.stats().rx_accounted() && ep.stats().invalid_transitions == 0);
    }
    let (s, c) = (r.s.stats(), r.c.stats());
    // Mutated req_nums start newer requests, after which the seeds are
    // stale: what matters is that every kind reached its handler.
    assert!(s.sacks_sent > 0 && s.pause_frames_sent > 0, "{s:?}");
    assert!(
        c.sacks_received > 0 && c.pause_frames_received > 0 && c.cnps_received > 0,
        "{c:?}"
    );
}

/// Moves no payload byte: what a caller that measures the transport, not
/// the data, brings (the fabric lab's `HeadersOnly`).
struct NoCopy;

impl PayloadCopy for NoCopy {
    fn copy(_: &mut [u8], _: &[u8]) {}
}

/// Drains an endpoint's transmit queue through `NoCopy`, each frame into a
/// buffer of `0xAA` bytes.
fn frames_no_copy(ep: &mut Endpoint) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let mut buf = vec![0xAAu8; ep.min_tx_buf_len()];
        let Some(n) = ep.poll_transmit_with::<NoCopy>(T0, &mut buf) else {
            return out;
        };
        out.push(buf[..n].to_vec());
    }
}

#[test]
fn a_payload_copy_that_moves_nothing_changes_no_header_or_length() {
    let len = 2 * Rig::new().dpp + 1; // 3 request packets
    let send = |r: &mut Rig| {
        let m = make_request(&mut r.c, 7, len);
        r.c.enqueue_request(T0, r.cs, 1, m, 7).unwrap();
    };
    let (mut copied, mut moved_none) = (Rig::new(), Rig::new());
    send(&mut copied);
    send(&mut moved_none);
    let want = frames(&mut copied.c);
    let sent = frames_no_copy(&mut moved_none.c);
    assert_eq!(sent.len(), 3);
    for (f, w) in sent.iter().zip(&want) {
        assert_eq!((f.len(), &f[..HEADERS_LEN]), (w.len(), &w[..HEADERS_LEN]));
        assert!(
            f[HEADERS_LEN..].iter().all(|&b| b == 0xAA),
            "a payload byte moved"
        );
    }
    // The server assembles the request's length, not its bytes (copied
    // frames, so the bytes were there to take).
    let r = &mut moved_none;
    let accepted = r.s.stats().rx_accepted;
    let mut delivered = None;
    for f in &want {
        if let Some(Delivery::Request {
            handle, payload, ..
        }) = r.s.handle_frame_with::<NoCopy>(T0, f)
        {
            let body: Vec<u8> = (0..len).map(|j| req_byte(0, j)).collect();
            assert_eq!(payload.len(), len);
            assert_ne!(payload.as_slice(), &body[..], "the payload was copied");
            delivered = Some(handle);
        }
    }
    let handle = delivered.expect("request not delivered");
    assert_eq!(r.s.stats().rx_accepted, accepted + 3);
    // An error answer's code is the one payload the endpoint reads itself:
    // it is written whatever the payload copy does.
    r.s.respond_error(handle, ErrorCode::OverBudget).unwrap();
    let answers = frames_no_copy(&mut r.s);
    let error = answers.last().unwrap();
    assert_eq!(rpc_of(error).pkt_type, PktType::ErrorResponse);
    assert_eq!(payload_of(error), [u8::from(ErrorCode::OverBudget)]);
}
