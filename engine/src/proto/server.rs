//! Server side of a session: request slots, in-order assembly of request
//! packets, credit returns, handler invocation (at most once per
//! (session, req_num)), stored responses and answers to RFRs. The server is
//! passive: it sends exactly one packet per client packet it accepts or
//! re-answers, and never anything unsolicited except Response(0) when the
//! application responds.
//!
//! Per slot (`req_num % req_window`) the server holds the current request:
//! a packet of an older req_num is stale (dropped), a newer req_num starts a
//! new request and frees the stored response of the previous one. Within
//! the current request, packet k is accepted only if k == `num_rx`; an
//! earlier k is re-answered (its CR, or Response(0) once it exists), a later
//! k is dropped (the client will go back to it).

use super::msgbuf::MsgBuf;
use super::session::Role;
use super::tx::{AnswerKind, TxDesc};
use super::{chunk, lookup, pkts_of, Delivery, Endpoint, Payload, ReqHandle, RpcError};
use super::{SessionId, SessionState};
use crate::time::Instant;
use crate::wire::Parsed;

/// Server half of a session.
#[derive(Debug)]
pub(crate) struct ServerSession {
    pub slots: Vec<ServerSlot>,
}

/// Where a slot's current request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Request packets arriving.
    Receiving,
    /// Delivered to the application; no response yet.
    InHandler,
    /// Response stored (kept until the slot's next request arrives).
    Responded,
}

#[derive(Debug)]
pub(crate) struct ServerSlot {
    /// The current request; `None` before the first.
    pub req_num: Option<u64>,
    pub req_type: u8,
    pub req_len: usize,
    /// Request packets (N).
    pub n_req: u32,
    /// Request packets accepted in order.
    pub num_rx: u32,
    /// Request being assembled (N > 1).
    pub req_buf: Option<MsgBuf>,
    pub phase: Phase,
    pub resp: Option<MsgBuf>,
    /// Next RFR number expected (for duplicate accounting only).
    pub rfr_next: u32,
}

impl ServerSession {
    pub fn new(window: usize) -> Self {
        ServerSession {
            slots: (0..window)
                .map(|_| ServerSlot {
                    req_num: None,
                    req_type: 0,
                    req_len: 0,
                    n_req: 0,
                    num_rx: 0,
                    req_buf: None,
                    phase: Phase::Receiving,
                    resp: None,
                    rfr_next: 1,
                })
                .collect(),
        }
    }

    /// Every buffer held by the slots (for returning them to the pool).
    pub fn drain_buffers(&mut self) -> impl Iterator<Item = MsgBuf> + '_ {
        self.slots
            .iter_mut()
            .flat_map(|s| [s.req_buf.take(), s.resp.take()])
            .flatten()
    }
}

impl Endpoint {
    /// Answers the request behind `h` with `msg` (ownership passes to the
    /// endpoint: it is kept to answer duplicates and RFRs, and returned to
    /// the pool when the slot's next request arrives or the session closes).
    /// Response packet 0 goes out unasked; the client pulls the rest.
    /// On error `msg` is returned to the pool.
    pub fn respond(&mut self, _now: Instant, h: ReqHandle, msg: MsgBuf) -> Result<(), RpcError> {
        if msg.len() > self.cfg.max_msg_size {
            let err = RpcError::MsgTooLarge {
                len: msg.len(),
                max: self.cfg.max_msg_size,
            };
            self.pool.free(msg);
            return Err(err);
        }
        let slot_idx = self.slot_of(h.req_num);
        let s = h.session;
        let slot = self
            .session_mut(s)
            .filter(|x| x.state == SessionState::Connected)
            .and_then(|x| x.server_mut())
            .map(|srv| &mut srv.slots[slot_idx])
            .filter(|sl| sl.req_num == Some(h.req_num) && sl.phase == Phase::InHandler);
        let Some(slot) = slot else {
            self.pool.free(msg);
            return Err(RpcError::StaleHandle);
        };
        slot.resp = Some(msg);
        slot.phase = Phase::Responded;
        slot.rfr_next = 1;
        self.queue_answer(s, h.req_num, AnswerKind::Response, 0);
        Ok(())
    }

    fn queue_answer(&mut self, s: SessionId, req_num: u64, kind: AnswerKind, pkt: u32) {
        self.tx_ctrl.push_back(TxDesc::Answer {
            num: s.num,
            gen: s.gen,
            req_num,
            kind,
            pkt: pkt as u16,
        });
    }

    /// A request packet for one of our server sessions.
    pub(crate) fn server_rx_request<'f>(&mut self, p: &Parsed<'f>) -> Option<Delivery<'f>> {
        let rpc = &p.rpc;
        let (dpp, max_msg, window) = (self.dpp, self.cfg.max_msg_size, self.cfg.req_window);
        let d = &mut self.stats.drops;
        let sess = lookup(&mut self.sessions, d, rpc, true)?;
        let sid = sess.id(rpc.dest_session);
        let Role::Server(srv) = &mut sess.role else {
            return None; // unreachable: lookup checked the role
        };
        let (r, k, len) = (rpc.req_num, rpc.pkt_num as u32, rpc.msg_size as usize);
        if len > max_msg {
            d.too_large += 1;
            return None;
        }
        let n = pkts_of(len, dpp);
        if k >= n || p.payload.len() != chunk(len, k, dpp).len() {
            d.malformed += 1;
            return None;
        }
        let slot = &mut srv.slots[(r % window as u64) as usize];
        match slot.req_num {
            Some(cur) if r < cur => {
                d.stale += 1;
                d.stale_request += 1;
                return None;
            }
            Some(cur) if r == cur => {
                if len != slot.req_len {
                    d.malformed += 1;
                    return None;
                }
                if k > slot.num_rx {
                    d.future += 1;
                    d.future_request += 1;
                    return None;
                }
                if k < slot.num_rx {
                    d.duplicate += 1;
                    d.dup_request += 1;
                    if k + 1 < n {
                        self.queue_answer(sid, r, AnswerKind::CreditReturn, k);
                    } else if slot.resp.is_some() {
                        self.queue_answer(sid, r, AnswerKind::Response, 0);
                    } else {
                        d.dup_request_no_response += 1;
                    }
                    return None;
                }
            }
            _ => {
                // A newer request (or the first) for this slot.
                if k != 0 {
                    d.future += 1;
                    d.future_request += 1;
                    return None;
                }
                for m in [slot.req_buf.take(), slot.resp.take()]
                    .into_iter()
                    .flatten()
                {
                    self.pool.free(m);
                }
                slot.req_num = Some(r);
                slot.req_type = rpc.req_type;
                slot.req_len = len;
                slot.n_req = n;
                slot.num_rx = 0;
                slot.phase = Phase::Receiving;
            }
        }
        // In order: k == num_rx.
        slot.num_rx += 1;
        let handle = ReqHandle {
            session: sid,
            req_num: r,
        };
        let req_type = slot.req_type;
        if n == 1 {
            slot.phase = Phase::InHandler;
            self.stats.handler_invocations += 1;
            return Some(Delivery::Request {
                handle,
                req_type,
                payload: Payload::Borrowed(p.payload),
            });
        }
        if k == 0 {
            slot.req_buf = Some(self.pool.alloc(len));
        }
        if let Some(buf) = slot.req_buf.as_mut() {
            buf[chunk(len, k, dpp)].copy_from_slice(p.payload);
        }
        if k + 1 < n {
            self.queue_answer(sid, r, AnswerKind::CreditReturn, k);
            return None;
        }
        slot.phase = Phase::InHandler;
        let msg = slot.req_buf.take()?; // always Some: allocated at k == 0
        self.stats.handler_invocations += 1;
        Some(Delivery::Request {
            handle,
            req_type,
            payload: Payload::Owned(msg),
        })
    }

    /// A request-for-response: answer with response packet k if it exists.
    pub(crate) fn server_rx_rfr(&mut self, p: &Parsed<'_>) {
        let rpc = &p.rpc;
        let window = self.cfg.req_window;
        let d = &mut self.stats.drops;
        let Some(sess) = lookup(&mut self.sessions, d, rpc, true) else {
            return;
        };
        let sid = sess.id(rpc.dest_session);
        let Role::Server(srv) = &mut sess.role else {
            return; // unreachable: lookup checked the role
        };
        let (r, k) = (rpc.req_num, rpc.pkt_num as u32);
        let slot = &mut srv.slots[(r % window as u64) as usize];
        match slot.req_num {
            Some(cur) if r < cur => {
                d.stale += 1;
                d.stale_rfr += 1;
                return;
            }
            Some(cur) if r == cur => {}
            _ => {
                d.future += 1;
                d.future_rfr += 1;
                return;
            }
        }
        let Some(resp) = slot.resp.as_ref() else {
            // RFRs follow Response(0), so the response must exist.
            d.future += 1;
            d.future_rfr += 1;
            return;
        };
        if k == 0 || k >= pkts_of(resp.len(), self.dpp) {
            d.malformed += 1;
            return;
        }
        if k < slot.rfr_next {
            d.duplicate += 1;
            d.dup_rfr += 1;
        } else {
            slot.rfr_next = k + 1;
        }
        self.queue_answer(sid, r, AnswerKind::Response, k);
    }
}
