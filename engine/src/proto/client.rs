//! Client side of a session: request slots, the backlog, session credits,
//! requests-for-response and the in-order (go-back-N) acceptance of answers.
//!
//! Per request, the client's i-th transmitted packet (i in 0..N+M-1, N
//! request packets, M response packets) is answered by exactly one server
//! packet: i < N-1 by CreditReturn(i), i == N-1 by Response(0), i >= N by
//! Response(i-N+1) (packet i >= N is ReqForResp(i-N+1)). So `num_tx` and
//! `num_rx` count packets sent and answers accepted, an answer's index is
//! its position in that sequence, and the answer accepted is always the one
//! with index `num_rx`. Each packet in flight holds one session credit,
//! returned by its answer; a rollback (`timers.rs`) reclaims the credits of
//! everything in flight and rewinds `num_tx` to `num_rx`.
//!
//! Invariant: `credits == credits_total - sum over slots (num_tx - num_rx)`.

use super::msgbuf::MsgBuf;
use super::session::Role;
use super::{chunk, lookup, pkts_of, tx::write_frame, Delivery, Endpoint, Event, Payload};
use super::{RpcError, SessionId, SessionState};
use crate::time::Instant;
use crate::wire::{Parsed, PktType, RpcRepr};
use std::collections::VecDeque;

/// Backlog entries pre-sized per client session: one window's worth.
const BACKLOG_PRESIZE: usize = 8;

/// Client half of a session.
#[derive(Debug)]
pub(crate) struct ClientSession {
    pub slots: Vec<ClientSlot>,
    /// Requests waiting for a free slot, FIFO.
    pub backlog: VecDeque<Pending>,
    /// Credits not held by packets in flight.
    pub credits: u16,
    pub credits_total: u16,
    /// Present in `Endpoint::tx_client`.
    pub tx_queued: bool,
    /// Parked for lack of credits (one `credit_stalls` per episode).
    pub stalled: bool,
    /// Round-robin position among slots for the next packet.
    pub cursor: usize,
    /// Slots holding a request.
    pub active: usize,
}

#[derive(Debug)]
pub(crate) struct ClientSlot {
    /// req_num the next request in this slot gets (slot index + k * window).
    pub next_req_num: u64,
    pub req: Option<ClientReq>,
}

/// A request waiting in the backlog.
#[derive(Debug)]
pub(crate) struct Pending {
    pub req_type: u8,
    pub msg: MsgBuf,
    pub tag: u64,
}

/// A request in a slot.
#[derive(Debug)]
pub(crate) struct ClientReq {
    pub req_num: u64,
    pub req_type: u8,
    pub tag: u64,
    pub msg: MsgBuf,
    /// Request packets (N).
    pub n_req: u32,
    /// Response packets (M); 0 until Response(0) is accepted.
    pub n_resp: u32,
    /// Response being assembled (M > 1).
    pub resp: Option<MsgBuf>,
    pub num_tx: u32,
    pub num_rx: u32,
    /// Highest `num_tx` ever reached: packets below it are retransmissions.
    pub high_tx: u32,
    /// RTO reference: last progress, first transmission, or last rollback.
    pub armed_at: Instant,
    /// Session-timeout reference: last progress (or start of transmission).
    pub progress_at: Instant,
    /// Rolled back since the last progress.
    pub rolled_back: bool,
}

impl ClientReq {
    /// Packets the client may send given what it has received so far: the
    /// request packets, plus the RFRs once Response(0) gave M.
    fn sendable_total(&self) -> u32 {
        if self.num_rx >= self.n_req {
            self.n_req + self.n_resp - 1
        } else {
            self.n_req
        }
    }

    pub fn has_work(&self) -> bool {
        self.num_tx < self.sendable_total()
    }

    pub fn in_flight(&self) -> u32 {
        self.num_tx - self.num_rx
    }
}

impl ClientSession {
    pub fn new(window: usize, credits: u16) -> Self {
        ClientSession {
            slots: (0..window)
                .map(|i| ClientSlot {
                    next_req_num: i as u64,
                    req: None,
                })
                .collect(),
            backlog: VecDeque::with_capacity(BACKLOG_PRESIZE),
            credits,
            credits_total: credits,
            tx_queued: false,
            stalled: false,
            cursor: 0,
            active: 0,
        }
    }

    pub fn has_work(&self) -> bool {
        self.slots
            .iter()
            .any(|s| s.req.as_ref().is_some_and(ClientReq::has_work))
    }

    /// Puts `p` into slot `i` (which must be free) as a new request.
    fn start(&mut self, i: usize, p: Pending, now: Instant, dpp: usize, window: usize) {
        let slot = &mut self.slots[i];
        let req_num = slot.next_req_num;
        slot.next_req_num += window as u64;
        slot.req = Some(ClientReq {
            req_num,
            req_type: p.req_type,
            tag: p.tag,
            n_req: pkts_of(p.msg.len(), dpp),
            msg: p.msg,
            n_resp: 0,
            resp: None,
            num_tx: 0,
            num_rx: 0,
            high_tx: 0,
            armed_at: now,
            progress_at: now,
            rolled_back: false,
        });
        self.active += 1;
    }
}

impl Endpoint {
    /// Queues a request of type `req_type` on client session `s`. The
    /// endpoint owns `msg` until the request completes (then it goes back to
    /// the pool); `tag` comes back with the response or failure. Allowed in
    /// Connecting (sent once connected) and Connected. On error `msg` is
    /// handed back.
    pub fn enqueue_request(
        &mut self,
        now: Instant,
        s: SessionId,
        req_type: u8,
        msg: MsgBuf,
        tag: u64,
    ) -> Result<(), (RpcError, MsgBuf)> {
        if msg.len() > self.cfg.max_msg_size {
            let max = self.cfg.max_msg_size;
            return Err((
                RpcError::MsgTooLarge {
                    len: msg.len(),
                    max,
                },
                msg,
            ));
        }
        let (dpp, window) = (self.dpp, self.cfg.req_window);
        let Some(sess) = self.session_mut(s) else {
            return Err((RpcError::UnknownSession, msg));
        };
        let state = sess.state;
        if !matches!(state, SessionState::Connecting | SessionState::Connected) {
            return Err((RpcError::InvalidState { state }, msg));
        }
        let Role::Client(c) = &mut sess.role else {
            return Err((RpcError::WrongRole, msg));
        };
        let p = Pending { req_type, msg, tag };
        match c.slots.iter().position(|x| x.req.is_none()) {
            Some(i) if c.backlog.is_empty() => {
                c.start(i, p, now, dpp, window);
                self.active_client_reqs += 1;
                if state == SessionState::Connected {
                    self.schedule_client(s.num);
                }
            }
            _ => c.backlog.push_back(p),
        }
        Ok(())
    }

    /// Queues client session `num` for transmission if it has sendable
    /// packets and credits and is not queued yet.
    pub(crate) fn schedule_client(&mut self, num: u16) {
        let Some(Some(sess)) = self.sessions.get_mut(num as usize) else {
            return;
        };
        let gen = sess.gen;
        if sess.state != SessionState::Connected {
            return;
        }
        let Role::Client(c) = &mut sess.role else {
            return;
        };
        if c.tx_queued || c.credits == 0 || !c.has_work() {
            return;
        }
        c.tx_queued = true;
        self.tx_client.push_back((num, gen));
    }

    /// Writes the next client packet (request or RFR) of the first queued
    /// session that can send, one packet per session per turn.
    pub(crate) fn client_next_frame(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let dpp = self.dpp;
        while let Some((num, gen)) = self.tx_client.pop_front() {
            let Some(Some(sess)) = self.sessions.get_mut(num as usize) else {
                continue;
            };
            if sess.gen != gen || sess.state != SessionState::Connected {
                continue;
            }
            let (template, remote, token) = (&sess.template, sess.remote, sess.token);
            let Role::Client(c) = &mut sess.role else {
                continue;
            };
            c.tx_queued = false;
            if c.credits == 0 {
                if !c.stalled && c.has_work() {
                    c.stalled = true;
                    self.stats.credit_stalls += 1;
                }
                continue;
            }
            let w = c.slots.len();
            let Some(i) = (0..w)
                .map(|k| (c.cursor + k) % w)
                .find(|&i| c.slots[i].req.as_ref().is_some_and(ClientReq::has_work))
            else {
                continue;
            };
            c.cursor = (i + 1) % w;
            let Some(req) = c.slots[i].req.as_mut() else {
                continue; // unreachable: `find` checked the slot holds a request
            };
            let k = req.num_tx;
            let rpc = RpcRepr {
                pkt_type: PktType::Request,
                req_type: req.req_type,
                msg_size: req.msg.len() as u32,
                dest_session: remote,
                pkt_num: k as u16,
                req_num: req.req_num,
                token,
            };
            let len = if k < req.n_req {
                write_frame(buf, template, &rpc, &req.msg[chunk(req.msg.len(), k, dpp)])
            } else {
                let rfr = RpcRepr {
                    pkt_type: PktType::ReqForResp,
                    msg_size: 0,
                    pkt_num: (k - req.n_req + 1) as u16,
                    ..rpc
                };
                write_frame(buf, template, &rfr, &[])
            };
            if req.num_tx == req.num_rx {
                req.armed_at = now;
                if !req.rolled_back {
                    req.progress_at = now;
                }
            }
            if k < req.high_tx {
                self.stats.retransmissions += 1;
            }
            req.num_tx += 1;
            req.high_tx = req.high_tx.max(req.num_tx);
            c.credits -= 1;
            c.stalled = false;
            if c.has_work() {
                if c.credits > 0 {
                    c.tx_queued = true;
                    self.tx_client.push_back((num, gen));
                } else {
                    c.stalled = true;
                    self.stats.credit_stalls += 1;
                }
            }
            return Some(len);
        }
        None
    }

    /// A CreditReturn or Response packet for one of our client sessions.
    pub(crate) fn client_rx_answer<'f>(
        &mut self,
        now: Instant,
        p: &Parsed<'f>,
    ) -> Option<Delivery<'f>> {
        let rpc = &p.rpc;
        let is_resp = rpc.pkt_type == PktType::Response;
        let (dpp, max_msg, window) = (self.dpp, self.cfg.max_msg_size, self.cfg.req_window);
        let d = &mut self.stats.drops;
        let sess = lookup(&mut self.sessions, d, rpc, false)?;
        let sid = sess.id(rpc.dest_session);
        let Role::Client(c) = &mut sess.role else {
            return None; // unreachable: lookup checked the role
        };
        let slot_idx = (rpc.req_num % window as u64) as usize;
        let slot = &mut c.slots[slot_idx];
        let Some(req) = slot.req.as_mut().filter(|r| r.req_num == rpc.req_num) else {
            // Not the slot's current request: older ones are stale, anything
            // else is from the future (a peer bug or a forged packet).
            let cur = slot.req.as_ref().map_or(slot.next_req_num, |r| r.req_num);
            if rpc.req_num < cur {
                d.stale += 1;
                *if is_resp {
                    &mut d.stale_response
                } else {
                    &mut d.stale_cr
                } += 1;
            } else {
                d.future += 1;
                *if is_resp {
                    &mut d.future_response
                } else {
                    &mut d.future_cr
                } += 1;
            }
            return None;
        };
        let k = rpc.pkt_num as u32;
        if !is_resp && (k + 1 >= req.n_req || !p.payload.is_empty()) {
            d.malformed += 1; // CRs exist only for non-last request packets
            return None;
        }
        let idx = if is_resp { req.n_req - 1 + k } else { k };
        if idx < req.num_rx {
            d.duplicate += 1;
            *if is_resp {
                &mut d.dup_response
            } else {
                &mut d.dup_cr
            } += 1;
            return None;
        }
        if idx > req.num_rx {
            d.future += 1;
            *if is_resp {
                &mut d.future_response
            } else {
                &mut d.future_cr
            } += 1;
            return None;
        }
        if is_resp {
            let len = rpc.msg_size as usize;
            if k == 0 {
                if len > max_msg {
                    d.too_large += 1;
                    let err = RpcError::ResponseTooLarge { len, max: max_msg };
                    self.fail_request(sid, slot_idx, err);
                    self.refill_slot(sid, slot_idx, now);
                    return None;
                }
            } else if len != req.resp.as_ref().map_or(usize::MAX, |m| m.len()) {
                d.malformed += 1;
                return None;
            }
            if p.payload.len() != chunk(len, k, dpp).len() {
                d.malformed += 1;
                return None;
            }
        }
        // In order: accept.
        if idx < req.num_tx {
            c.credits += 1;
        }
        req.num_rx += 1;
        req.num_tx = req.num_tx.max(req.num_rx);
        req.armed_at = now;
        req.progress_at = now;
        req.rolled_back = false;
        if !is_resp {
            self.schedule_client(sid.num);
            return None;
        }
        let len = rpc.msg_size as usize;
        if k == 0 {
            req.n_resp = pkts_of(len, dpp);
            if req.n_resp == 1 {
                let tag = req.tag;
                self.finish_request(sid, slot_idx, now);
                return Some(Delivery::Response {
                    session: sid,
                    tag,
                    payload: Payload::Borrowed(p.payload),
                });
            }
            req.resp = Some(self.pool.alloc(len));
        }
        let Some(resp) = req.resp.as_mut() else {
            return None; // unreachable: allocated when Response(0) was accepted
        };
        resp[chunk(len, k, dpp)].copy_from_slice(p.payload);
        if req.num_rx < req.n_req + req.n_resp - 1 {
            self.schedule_client(sid.num);
            return None;
        }
        let (tag, resp) = (req.tag, req.resp.take());
        self.finish_request(sid, slot_idx, now);
        resp.map(|m| Delivery::Response {
            session: sid,
            tag,
            payload: Payload::Owned(m),
        })
    }

    /// Request in `slot` completed: free it, count it, start the next one.
    fn finish_request(&mut self, s: SessionId, slot: usize, now: Instant) {
        if let Some(req) = self.take_request(s, slot) {
            self.stats.requests_completed += 1;
            self.pool.free(req.msg);
        }
        self.refill_slot(s, slot, now);
    }

    /// Removes the request in `slot`, releasing its credits and counters.
    fn take_request(&mut self, s: SessionId, slot: usize) -> Option<ClientReq> {
        let c = self.session_mut(s)?.client_mut()?;
        let req = c.slots[slot].req.take()?;
        c.credits += req.in_flight() as u16;
        c.active -= 1;
        self.active_client_reqs -= 1;
        Some(req)
    }

    /// Fails the request in `slot` with `error` (buffers back to the pool).
    pub(crate) fn fail_request(&mut self, s: SessionId, slot: usize, error: RpcError) {
        if let Some(req) = self.take_request(s, slot) {
            self.pool.free(req.msg);
            if let Some(m) = req.resp {
                self.pool.free(m);
            }
            self.stats.requests_failed += 1;
            self.events.push_back(Event::RequestFailed {
                session: s,
                tag: req.tag,
                error,
            });
        }
    }

    /// Moves the backlog head into free `slot` and schedules transmission.
    fn refill_slot(&mut self, s: SessionId, slot: usize, now: Instant) {
        let (dpp, window) = (self.dpp, self.cfg.req_window);
        let Some(c) = self.session_mut(s).and_then(|x| x.client_mut()) else {
            return;
        };
        if c.slots[slot].req.is_none() {
            if let Some(p) = c.backlog.pop_front() {
                c.start(slot, p, now, dpp, window);
                self.active_client_reqs += 1;
            }
        }
        self.schedule_client(s.num);
    }

    /// Fails every request of client session `s`, in slots and backlog.
    pub(crate) fn fail_all_requests(&mut self, s: SessionId, error: RpcError) {
        for slot in 0..self.cfg.req_window {
            self.fail_request(s, slot, error);
        }
        while let Some(p) = self
            .session_mut(s)
            .and_then(|x| x.client_mut())
            .and_then(|c| c.backlog.pop_front())
        {
            self.pool.free(p.msg);
            self.stats.requests_failed += 1;
            self.events.push_back(Event::RequestFailed {
                session: s,
                tag: p.tag,
                error,
            });
        }
    }
}
