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
//! Bytes out per packet in: every packet is answered with at most one
//! packet, except the request's last, whose grant brings up to `credits`
//! response packets after Response(0): once when the answer is stored,
//! and again for at most `regrants` copies of that packet per request
//! (the repair of a lost Response(0)); later copies bring Response(0)
//! alone (`drops.dup_request_regrant_spent`), so a peer that never reads
//! its responses pulls one packet per packet it sends, not 1 + credits.
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
//!
//! Memory: a multi-packet request's buffer is taken or grown
//! (`ServerSlot::grow`) only after the ledger accepted its charge; a packet
//! that would take the peer or the worker over its budget is dropped
//! (`drops.reassembly_budget`) with nothing allocated, and the client's
//! retransmission tries again later. An error answer in the slot (the
//! application's, or the engine's after giving the request or its
//! response up) answers every later packet and RFR of that request.

use super::budget::Ledger;
use super::event::{Delivery, Payload};
use super::frame::{chunk, pkts_of};
use super::ids::ReqHandle;
use super::msgbuf::PayloadCopy;
use super::sack::{Window, SACK_WINDOW};
use super::server::{granted_after_first, Answer, Phase, ServerSession};
use super::server::{Hold, ServerSlot};
use super::stats::Drops;
use super::txq::AnswerKind;
use crate::time::Instant;
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
    /// Selective mode: packet `k` stored out of order; answer with a Sack
    /// for it. `arm`: the request took its first buffer with it (in-order
    /// requests take theirs at packet 0): the session's expiry timer.
    Stored { k: u32, arm: bool },
    /// Go-back-N with NAKs: the first packet of a gap arrived; answer with
    /// a Nak naming the packet expected (counted as a `future` drop).
    Nak(u32),
    /// The request is complete: hand it to the application; `true`: queue
    /// a cumulative credit return too (a hole below stored packets filled,
    /// and those packets' answers are the CR, not Response(0) alone).
    Deliver(Delivery<'f>, bool),
}

/// How the server side repairs gaps: selective (store and Sack) or
/// go-back-N, with or without a Nak per gap; and how often a duplicate of
/// a request's last packet may bring back its grant again
/// (`Admission::regrants_per_request`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GapRule {
    pub selective: bool,
    pub nak: bool,
    pub regrants: u8,
}

impl ServerSession {
    /// A request packet addressed to this (connected, token-checked)
    /// session, arriving at `now`; reassembly buffers come from and are
    /// charged to `ledger`, and `C` moves the payload bytes into them.
    #[allow(clippy::too_many_arguments)]
    pub fn rx_request<'f, C: PayloadCopy>(
        &mut self,
        p: &Parsed<'f>,
        dpp: usize,
        max_msg: usize,
        gaps: GapRule,
        ledger: &mut Ledger,
        now: Instant,
        d: &mut Drops,
    ) -> RequestRx<'f> {
        let GapRule {
            selective,
            nak,
            regrants,
        } = gaps;
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
        let acct = self.acct;
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
                        let dc = (dpp, self.credits);
                        return store_out_of_order::<C>(slot, p, dc, ledger, now, acct, d);
                    }
                    d.future += 1;
                    d.future_request += 1;
                    return nak_once(slot, nak, r, slot.num_rx);
                }
                if k < slot.num_rx {
                    d.duplicate += 1;
                    d.dup_request += 1;
                    if let Some(Answer::Error(_)) = slot.answer {
                        // Answered with an error (or given up): every
                        // packet of it gets the error, which ends it.
                        let kind = AnswerKind::Error;
                        return RequestRx::Reanswer {
                            kind,
                            first: 0,
                            count: 1,
                        };
                    }
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
                    slot.set_grant(rpc.grant, self.credits);
                    let Some(answer) = slot.answer.as_ref() else {
                        d.dup_request_no_response += 1;
                        slot.dup_in_handler = true;
                        return RequestRx::Dropped;
                    };
                    // The client still wants the stored response.
                    slot.touched_at = now;
                    let kind = match answer {
                        Answer::Response(_) => AnswerKind::Response,
                        Answer::Error(_) => AnswerKind::Error,
                    };
                    let mut extra = granted_after_first(answer, slot.grant, dpp);
                    if extra > 0 {
                        // A lost Response(0) is repaired with its grant
                        // `regrants` times per request; after that a copy
                        // brings Response(0) alone (the client asks for
                        // the rest with RFRs, one packet each).
                        if slot.regrants < regrants {
                            slot.regrants += 1;
                        } else {
                            d.dup_request_regrant_spent += 1;
                            extra = 0;
                        }
                    }
                    let count = 1 + extra;
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
                // Dropping the previous request's buffers returns them to
                // the pool, and their charge to the ledger.
                slot.release(ledger, acct);
                slot.req_buf = None;
                slot.answer = None;
                slot.req_num = Some(r);
                slot.req_type = rpc.req_type;
                slot.req_len = len;
                slot.n_req = n;
                slot.num_rx = 0;
                slot.phase = Phase::Receiving;
                // (A one-packet request leaves the mask alone: its slot's
                // bit was cleared when the last request there completed or
                // expired, and a bit left over from one given up mid-way
                // only costs the grant a look at a slot with nothing owed.)
                if n > 1 {
                    self.receiving |= 1 << i;
                }
                slot.dup_in_handler = false;
                slot.grant = 0;
                slot.regrants = 0;
                slot.cr_pending = false;
                slot.granted = 0;
                if let Some(w) = slot.ooo.as_deref_mut() {
                    *w = Window::default();
                }
                if k != 0 {
                    let dc = (dpp, self.credits);
                    return store_out_of_order::<C>(slot, p, dc, ledger, now, acct, d);
                }
            }
        }
        // In order: k == num_rx. A one-packet request is delivered from
        // the frame (no buffer, nothing charged).
        if n == 1 {
            slot.num_rx = 1;
            slot.set_grant(rpc.grant, self.credits);
            slot.phase = Phase::InHandler;
            let req = Delivery::Request {
                handle: ReqHandle {
                    session: sid,
                    req_num: r,
                },
                req_type: rpc.req_type,
                payload: Payload::Borrowed(p.payload),
            };
            return RequestRx::Deliver(req, false);
        }
        // A multi-packet one needs room for the packet first: a step of
        // its buffer within the budget, or a drop. (The buffer's capacity
        // is what is charged for it.)
        let range = chunk(len, k, dpp);
        if range.end > slot.charged {
            match slot.grow::<C>(range.end, ledger, acct) {
                Hold::Took { .. } => {}
                Hold::Over => {
                    d.reassembly_budget += 1;
                    return RequestRx::Dropped;
                }
            }
        }
        slot.touched_at = now;
        // Packets stored past it follow.
        slot.num_rx += 1;
        let mut run = 0;
        if let Some(w) = slot.ooo.as_deref_mut().filter(|w| !w.is_empty()) {
            w.shift(1);
            run = w.leading_run();
            slot.num_rx += run;
            w.shift(run);
        }
        if k + 1 == n {
            slot.set_grant(rpc.grant, self.credits);
        }
        // A hole filled below stored packets up to the last: the CR answers
        // the non-last ones (Response(0) answers only the last).
        let cr_too = run > 0 && k + 1 < n;
        if let Some(buf) = slot.req_buf.as_mut() {
            buf.fill::<C>(range, p.payload);
        }
        if slot.num_rx < n {
            let cr = !std::mem::replace(&mut slot.cr_pending, true);
            return RequestRx::Accepted(cr);
        }
        if cr_too {
            slot.cr_pending = true;
        }
        slot.phase = Phase::InHandler;
        self.receiving &= !(1 << i);
        // The buffer goes to the application: no longer ours to hold.
        slot.release(ledger, acct);
        match slot.req_buf.take() {
            Some(msg) => {
                let req = Delivery::Request {
                    handle: ReqHandle {
                        session: self.common.id(),
                        req_num: r,
                    },
                    req_type: rpc.req_type,
                    payload: Payload::Owned(msg),
                };
                RequestRx::Deliver(req, cr_too)
            }
            None => RequestRx::Dropped,
        }
    }

    /// A request-for-response: the answer packet to send (a response
    /// packet, or the error that replaced the response), if any, and
    /// whether the RFR was new (a duplicate is counted as a drop).
    pub fn rx_rfr(
        &mut self,
        p: &Parsed<'_>,
        dpp: usize,
        now: Instant,
        d: &mut Drops,
    ) -> Option<(AnswerKind, u32, bool)> {
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
        let resp = match slot.answer.as_ref() {
            Some(Answer::Response(resp)) => resp,
            // The response was given up (expired): the error ends the request.
            Some(Answer::Error(_)) => return Some((AnswerKind::Error, 0, true)),
            None => {
                // RFRs follow Response(0), so a response must be stored.
                d.future += 1;
                d.future_rfr += 1;
                return None;
            }
        };
        if k == 0 || k >= pkts_of(resp.len(), dpp) {
            d.malformed += 1;
            return None;
        }
        slot.touched_at = now;
        let new = k >= slot.rfr_next;
        if new {
            slot.rfr_next = k + 1;
        } else {
            d.duplicate += 1;
            d.dup_rfr += 1;
        }
        Some((AnswerKind::Response, k, new))
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
/// window, not stored yet) of the slot's current request, if the budget
/// has room for it.
fn store_out_of_order<'f, C: PayloadCopy>(
    slot: &mut ServerSlot,
    p: &Parsed<'f>,
    (dpp, credits): (usize, u16),
    ledger: &mut Ledger,
    now: Instant,
    acct: u32,
    d: &mut Drops,
) -> RequestRx<'f> {
    let (k, len) = (p.rpc.pkt_num as u32, p.rpc.msg_size as usize);
    let range = chunk(len, k, dpp);
    let mut arm = false;
    if range.end > slot.charged {
        match slot.grow::<C>(range.end, ledger, acct) {
            Hold::Took { first } => arm = first,
            Hold::Over => {
                d.reassembly_budget += 1;
                return RequestRx::Dropped;
            }
        }
    }
    slot.touched_at = now;
    if let Some(buf) = slot.req_buf.as_mut() {
        buf.fill::<C>(range, p.payload);
    }
    let w = slot.ooo.get_or_insert_with(Box::default);
    w.set(k - slot.num_rx);
    if k + 1 == slot.n_req {
        slot.set_grant(p.rpc.grant, credits);
    }
    RequestRx::Stored { k, arm }
}
