//! Server reception: in-order assembly of request packets, credit returns,
//! handler delivery (at most once per (session, req_num)) and answers to
//! requests-for-response.
//!
//! Per slot (`req_num % req_window`) the server holds the current request:
//! a packet of an older req_num is stale (dropped), a newer req_num starts a
//! new request and frees the stored answer of the previous one. Within the
//! current request, packet k is accepted only if k == `num_rx`; an earlier
//! k is re-answered (a cumulative CR, or the stored answer once it exists,
//! with the response packets the duplicate grants), a later k is dropped
//! (the client will go back to it).
//!
//! Credit returns are cumulative (`docs/wire.md`): an accepted non-last
//! packet queues a CR only if none is queued for the slot yet, a duplicate
//! always queues one; the CR written later names the highest packet
//! received in order by then.
//!
//! Go-back-N with NAKs (`EndpointConfig::nak`): the first later k of a gap
//! (or a newer request that does not start at packet 0) is answered with
//! a Nak naming the packet expected, once per gap (`ServerSlot::nak_sent`);
//! further packets behind the same gap are dropped silently, as RoCE's
//! receiver does until the expected packet arrives.
//!
//! Selective mode differs in two places: a later k (up to `SACK_WINDOW`
//! past `num_rx`) is stored and answered with a Sack naming it, and a newer
//! req_num may start with any packet, not only packet 0. When the hole
//! below stored packets fills, `num_rx` jumps past them.

use super::event::{Delivery, Payload};
use super::frame::{chunk, pkts_of};
use super::ids::ReqHandle;
use super::msgbuf::MsgPool;
use super::sack::{Window, SACK_WINDOW};
use super::server::ServerSlot;
use super::server::{granted_after_first, Answer, Phase, ServerSession};
use super::stats::Drops;
use super::txq::AnswerKind;
use crate::wire::Parsed;

/// What a request packet did to a server session.
#[derive(Debug)]
pub(crate) enum RequestRx<'f> {
    /// Dropped (or a duplicate with nothing to re-send); counted.
    Dropped,
    /// Accepted in order (a non-last packet); `true`: queue a cumulative
    /// credit return (none is queued for the slot yet).
    Accepted(bool),
    /// A duplicate (counted as a drop) that is answered again: `count`
    /// answer packets of `kind` from packet `first` on.
    Reanswer {
        kind: AnswerKind,
        first: u32,
        count: u32,
    },
    /// Selective mode: stored out of order; answer with a Sack for it.
    Stored(u32),
    /// Go-back-N with NAKs: the first packet of a gap arrived; answer with
    /// a Nak naming the packet expected (counted as a `future` drop).
    Nak(u32),
    /// The request is complete: hand it to the application; `true`: queue
    /// a cumulative credit return too (a hole below stored packets filled,
    /// and those packets' answers are the CR, not Response(0) alone).
    Deliver(Delivery<'f>, bool),
}

/// How the server side repairs gaps: selective (store and Sack) or
/// go-back-N, with or without a Nak per gap.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GapRule {
    pub selective: bool,
    pub nak: bool,
}

impl ServerSession {
    /// A request packet addressed to this (connected, token-checked) session.
    pub fn rx_request<'f>(
        &mut self,
        p: &Parsed<'f>,
        dpp: usize,
        max_msg: usize,
        gaps: GapRule,
        pool: &MsgPool,
        d: &mut Drops,
    ) -> RequestRx<'f> {
        let GapRule { selective, nak } = gaps;
        let rpc = &p.rpc;
        let (r, k, len) = (rpc.req_num, rpc.pkt_num as u32, rpc.msg_size as usize);
        if len > max_msg {
            d.too_large += 1;
            return RequestRx::Dropped;
        }
        let n = pkts_of(len, dpp);
        if k >= n || p.payload.len() != chunk(len, k, dpp).len() {
            d.malformed += 1;
            return RequestRx::Dropped;
        }
        let sid = self.common.id();
        let i = self.slot_of(r);
        let slot = &mut self.slots[i];
        match slot.req_num {
            Some(cur) if r < cur => {
                d.stale += 1;
                d.stale_request += 1;
                return RequestRx::Dropped;
            }
            Some(cur) if r == cur => {
                if len != slot.req_len {
                    d.malformed += 1;
                    return RequestRx::Dropped;
                }
                if k > slot.num_rx {
                    if selective && k - slot.num_rx < SACK_WINDOW {
                        if slot.ooo.as_ref().is_some_and(|w| w.get(k - slot.num_rx)) {
                            // A copy of a stored packet: its Sack was lost.
                            d.duplicate += 1;
                            d.dup_request += 1;
                            let kind = AnswerKind::Sack;
                            return RequestRx::Reanswer {
                                kind,
                                first: k,
                                count: 1,
                            };
                        }
                        return store_out_of_order(slot, p, (dpp, self.credits), pool);
                    }
                    d.future += 1;
                    d.future_request += 1;
                    return nak_once(slot, nak, r, slot.num_rx);
                }
                if k < slot.num_rx {
                    d.duplicate += 1;
                    d.dup_request += 1;
                    if k + 1 < n {
                        // The client went back (or probed): a cumulative CR
                        // tells it everything that did arrive. Never merged
                        // with a queued CR: the second answer is the
                        // client's evidence that its timeout was spurious.
                        slot.cr_pending = true;
                        let kind = AnswerKind::CreditReturn;
                        return RequestRx::Reanswer {
                            kind,
                            first: k,
                            count: 1,
                        };
                    }
                    // The resent last packet carries the client's new grant.
                    slot.grant = u32::from(rpc.grant.min(self.credits));
                    let Some(answer) = slot.answer.as_ref() else {
                        d.dup_request_no_response += 1;
                        slot.dup_in_handler = true;
                        return RequestRx::Dropped;
                    };
                    let kind = match answer {
                        Answer::Response(_) => AnswerKind::Response,
                        Answer::Error(_) => AnswerKind::Error,
                    };
                    let count = 1 + granted_after_first(answer, slot.grant, dpp);
                    return RequestRx::Reanswer {
                        kind,
                        first: 0,
                        count,
                    };
                }
            }
            _ => {
                // A newer request (or the first) for this slot. Go-back-N
                // starts it only with packet 0; selective with any packet (a
                // newer req_num means the client finished the slot's last one).
                if k != 0 && !(selective && k < SACK_WINDOW) {
                    d.future += 1;
                    d.future_request += 1;
                    return nak_once(slot, nak, r, 0);
                }
                // Dropping the previous request's buffers returns them to the pool.
                slot.req_buf = None;
                slot.answer = None;
                slot.req_num = Some(r);
                slot.req_type = rpc.req_type;
                slot.req_len = len;
                slot.n_req = n;
                slot.num_rx = 0;
                slot.phase = Phase::Receiving;
                slot.dup_in_handler = false;
                slot.grant = 0;
                slot.cr_pending = false;
                if let Some(w) = slot.ooo.as_deref_mut() {
                    *w = Window::default();
                }
                if k != 0 {
                    return store_out_of_order(slot, p, (dpp, self.credits), pool);
                }
            }
        }
        // In order: k == num_rx; packets stored past it follow.
        slot.num_rx += 1;
        let mut run = 0;
        if let Some(w) = slot.ooo.as_deref_mut().filter(|w| !w.is_empty()) {
            w.shift(1);
            run = w.leading_run();
            slot.num_rx += run;
            w.shift(run);
        }
        if k + 1 == n {
            // The server's grant bounds the client's: a response never
            // goes out beyond the credits the session was given, whatever
            // a request (or each duplicate of it) asks for.
            slot.grant = u32::from(rpc.grant.min(self.credits));
        }
        // A hole filled below stored packets up to the last: the CR answers
        // the non-last ones (Response(0) answers only the last).
        let cr_too = run > 0 && k + 1 < n;
        let deliver = |payload| {
            RequestRx::Deliver(
                Delivery::Request {
                    handle: ReqHandle {
                        session: sid,
                        req_num: r,
                    },
                    req_type: rpc.req_type,
                    payload,
                },
                cr_too,
            )
        };
        if n == 1 {
            slot.phase = Phase::InHandler;
            return deliver(Payload::Borrowed(p.payload));
        }
        let buf = slot.req_buf.get_or_insert_with(|| pool.alloc(len));
        buf.fill(chunk(len, k, dpp), p.payload);
        if slot.num_rx < n {
            return RequestRx::Accepted(!std::mem::replace(&mut slot.cr_pending, true));
        }
        if cr_too {
            slot.cr_pending = true;
        }
        slot.phase = Phase::InHandler;
        match slot.req_buf.take() {
            Some(msg) => deliver(Payload::Owned(msg)),
            None => RequestRx::Dropped,
        }
    }

    /// A request-for-response: the response packet to send, if it exists,
    /// and whether the RFR was new (a duplicate is counted as a drop).
    pub fn rx_rfr(&mut self, p: &Parsed<'_>, dpp: usize, d: &mut Drops) -> Option<(u32, bool)> {
        let (r, k) = (p.rpc.req_num, p.rpc.pkt_num as u32);
        let i = self.slot_of(r);
        let slot = &mut self.slots[i];
        match slot.req_num {
            Some(cur) if r < cur => {
                d.stale += 1;
                d.stale_rfr += 1;
                return None;
            }
            Some(cur) if r == cur => {}
            _ => {
                d.future += 1;
                d.future_rfr += 1;
                return None;
            }
        }
        let Some(Answer::Response(resp)) = slot.answer.as_ref() else {
            // RFRs follow Response(0), so a response must be stored.
            d.future += 1;
            d.future_rfr += 1;
            return None;
        };
        if k == 0 || k >= pkts_of(resp.len(), dpp) {
            d.malformed += 1;
            return None;
        }
        let new = k >= slot.rfr_next;
        if new {
            slot.rfr_next = k + 1;
        } else {
            d.duplicate += 1;
            d.dup_rfr += 1;
        }
        Some((k, new))
    }
}

/// Go-back-N with NAKs: a Nak for packet `expected` of request `r`, unless
/// one went out for this gap already (then the packet is only dropped).
fn nak_once<'f>(slot: &mut ServerSlot, nak: bool, r: u64, expected: u32) -> RequestRx<'f> {
    if !nak || slot.nak_sent == Some((r, expected)) {
        return RequestRx::Dropped;
    }
    slot.nak_sent = Some((r, expected));
    RequestRx::Nak(expected)
}

/// Selective mode: keeps request packet `k` (past `num_rx`, within the
/// window, not stored yet) of the slot's current request.
fn store_out_of_order<'f>(
    slot: &mut ServerSlot,
    p: &Parsed<'f>,
    (dpp, credits): (usize, u16),
    pool: &MsgPool,
) -> RequestRx<'f> {
    let (k, len) = (p.rpc.pkt_num as u32, p.rpc.msg_size as usize);
    let buf = slot.req_buf.get_or_insert_with(|| pool.alloc(len));
    buf.fill(chunk(len, k, dpp), p.payload);
    let w = slot.ooo.get_or_insert_with(Box::default);
    w.set(k - slot.num_rx);
    if k + 1 == slot.n_req {
        slot.grant = u32::from(p.rpc.grant.min(credits));
    }
    RequestRx::Stored(k)
}
