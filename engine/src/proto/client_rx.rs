//! Client reception: acceptance of CreditReturn, Response and ErrorResponse
//! packets in order (go-back-N: only the answer with index `num_rx` is
//! accepted), assembly of multi-packet responses, and the verdict the
//! endpoint acts on (progress, a completed request, a failed one).
//!
//! A CreditReturn is cumulative: CR(k) says request packets 0..=k arrived,
//! so it is accepted whenever k >= `num_rx` (and k was sent) and answers
//! every packet up to k at once; a lost CR is repaired by the next one.
//!
//! An ErrorResponse ends its request wherever the request is: in order it
//! stands for Response(0); out of order it is the server giving the
//! request or its response up (`ErrorCode::ReassemblyTimeout`,
//! `ResponseExpired`), so the request fails at once instead of retrying
//! until `session_timeout`.

use super::client::{sample_rtt, ClientSession, TX_TS_RING};
use super::error::RpcError;
use super::event::Payload;
use super::frame::{chunk, pkts_of};
use super::msgbuf::{MsgPool, PayloadCopy};
use super::sack::SACK_WINDOW;
use super::stats::{Drops, Stats};
use crate::time::Instant;
use crate::wire::{ErrorCode, Parsed, PktType};

/// What an answer packet did to a client session.
#[derive(Debug)]
pub(crate) enum AnswerRx<'f> {
    /// Dropped; the reason is counted.
    Dropped,
    /// Dropped as a duplicate or stale answer (counted), and it is the
    /// second answer to a packet resent on a timeout: that timeout was
    /// spurious (the slot's suspect is cleared).
    Spurious,
    /// Accepted; the session may have more to send.
    Progress,
    /// Dropped as a `future` answer (counted) that showed a gap: the
    /// request rolled back at once (`nak.rs`); schedule transmission.
    GapRollback,
    /// Dropped as a trimmed frame or a `TrimNak` (counted) that took a
    /// packet as lost (`trim.rs`); schedule transmission.
    Resend,
    /// The request in `slot` is complete with this response.
    Completed { slot: usize, payload: Payload<'f> },
    /// The request in `slot` failed: the server answered with an error.
    Failed { slot: usize, error: RpcError },
    /// The request in `slot` fails: its response is larger than we accept
    /// (the packet is counted as a drop).
    Rejected { slot: usize, error: RpcError },
}

/// Per-kind refinement of a drop counter.
fn refine(
    d: &mut Drops,
    kind: PktType,
    resp: fn(&mut Drops) -> &mut u64,
    cr: fn(&mut Drops) -> &mut u64,
) {
    *if kind == PktType::CreditReturn {
        cr(d)
    } else {
        resp(d)
    } += 1;
}

impl ClientSession {
    /// A duplicate or stale answer: if it is the second answer to the
    /// packet resent on slot `i`'s timeout, that timeout was spurious.
    fn evidence<'f>(&mut self, i: usize, req_num: u64, kind: PktType, pkt: u16) -> AnswerRx<'f> {
        let is_cr = matches!(kind, PktType::CreditReturn | PktType::Sack);
        // A cumulative CR covering the resent packet answers it too.
        let hit = self.slots[i].suspect.is_some_and(|s| {
            s.req_num == req_num
                && s.answer_is_cr == is_cr
                && (s.answer_pkt == pkt || (is_cr && s.answer_pkt < pkt))
        });
        if hit {
            self.take_suspect(i);
            AnswerRx::Spurious
        } else {
            AnswerRx::Dropped
        }
    }

    /// Handles an answer addressed to this (connected, token-checked)
    /// session; `C` moves a multi-packet response's payload bytes.
    pub fn rx_answer<'f, C: PayloadCopy>(
        &mut self,
        now: Instant,
        p: &Parsed<'f>,
        dpp: usize,
        max_msg: usize,
        pool: &MsgPool,
        stats: &mut Stats,
    ) -> AnswerRx<'f> {
        let rx = self.take_answer::<C>(now, p, dpp, max_msg, pool, stats);
        // Whatever the answer did to its slot's request, `work` follows.
        let slot = (p.rpc.req_num % self.slots.len() as u64) as usize;
        self.refresh_work(slot);
        rx
    }

    /// `rx_answer` before the `work` bits are refreshed.
    fn take_answer<'f, C: PayloadCopy>(
        &mut self,
        now: Instant,
        p: &Parsed<'f>,
        dpp: usize,
        max_msg: usize,
        pool: &MsgPool,
        stats: &mut Stats,
    ) -> AnswerRx<'f> {
        let rpc = &p.rpc;
        let kind = rpc.pkt_type;
        let slot_idx = (rpc.req_num % self.slots.len() as u64) as usize;
        let slot = &mut self.slots[slot_idx];
        let Some(req) = slot.req.as_mut().filter(|r| r.req_num == rpc.req_num) else {
            // Not the slot's current request: older ones are stale, anything
            // else is from the future (a peer bug or a forged packet).
            let cur = slot.req.as_ref().map_or(slot.next_req_num, |r| r.req_num);
            if rpc.req_num < cur {
                let d = &mut stats.drops;
                d.stale += 1;
                refine(d, kind, |d| &mut d.stale_response, |d| &mut d.stale_cr);
                return self.evidence(slot_idx, rpc.req_num, kind, rpc.pkt_num);
            } else {
                let d = &mut stats.drops;
                d.future += 1;
                refine(d, kind, |d| &mut d.future_response, |d| &mut d.future_cr);
            }
            return AnswerRx::Dropped;
        };
        if p.trimmed || kind == PktType::TrimNak {
            return self.rx_trim(now, slot_idx, p, stats);
        }
        let k = rpc.pkt_num as u32;
        if kind == PktType::CreditReturn {
            // RCCC: what the server keeps back as of this CR, whether or
            // not the CR acknowledges anything new (`rccc.rs`).
            self.withheld = rpc.grant;
            self.withheld_at = now;
        }
        if kind == PktType::Nak {
            return self.rx_nak(now, slot_idx, k, p.payload.len(), stats);
        }
        let malformed = match kind {
            // CRs exist only for non-last request packets.
            PktType::CreditReturn => k + 1 >= req.n_req || !p.payload.is_empty(),
            PktType::Sack => !p.payload.is_empty(),
            // An error answer stands for Response(0) and carries one code byte.
            PktType::ErrorResponse => k != 0 || p.payload.len() != 1,
            _ => false,
        };
        if malformed {
            stats.drops.malformed += 1;
            return AnswerRx::Dropped;
        }
        if kind == PktType::Sack {
            req.armed_at = now;
            req.progress_at = now;
            let ack = u32::from(rpc.grant);
            return match self.rx_sack(now, slot_idx, k, ack, dpp, stats) {
                true => AnswerRx::Progress,
                false => AnswerRx::Dropped,
            };
        }
        let idx = if kind == PktType::CreditReturn {
            k
        } else {
            req.n_req - 1 + k
        };
        // A cumulative CR may answer packets beyond `num_rx`, but never one
        // the client has not sent (a peer bug or forged packet).
        let cumulative = kind == PktType::CreditReturn && idx > req.num_rx && idx < req.high_tx;
        // Selective: Response(0) (or its error stand-in) says every request
        // packet arrived, so it answers those below it too; a later
        // response packet is kept out of order.
        let early = req.sel.is_some()
            && kind != PktType::CreditReturn
            && idx > req.num_rx
            && idx < req.high_tx
            && idx - req.num_rx < SACK_WINDOW
            && rpc.msg_size as usize <= max_msg;
        if early && k == 0 {
            let returned = req.ack_through(idx);
            self.credits += req.release_held(returned) as u16;
            return self.take_answer::<C>(now, p, dpp, max_msg, pool, stats);
        }
        if early {
            req.armed_at = now;
            req.progress_at = now;
            let len = rpc.msg_size as usize;
            return match self
                .rx_response_early::<C>(now, slot_idx, k, len, p.payload, dpp, pool, stats)
            {
                true => AnswerRx::Progress,
                false => AnswerRx::Dropped,
            };
        }
        if idx != req.num_rx && !cumulative {
            if kind == PktType::ErrorResponse {
                // An error ends the request whatever was answered before
                // it: a server that gave the request up midway (reassembly
                // timeout) or its stored response (expired) sends it for
                // any packet. (In order it is handled below.)
                let error = RpcError::Remote(ErrorCode::from(p.payload[0]));
                return AnswerRx::Failed {
                    slot: slot_idx,
                    error,
                };
            }
            if idx < req.num_rx {
                let d = &mut stats.drops;
                d.duplicate += 1;
                refine(d, kind, |d| &mut d.dup_response, |d| &mut d.dup_cr);
                return self.evidence(slot_idx, rpc.req_num, kind, rpc.pkt_num);
            } else {
                let d = &mut stats.drops;
                d.future += 1;
                refine(d, kind, |d| &mut d.future_response, |d| &mut d.future_cr);
                // A response packet past a hole: the hole's packet is lost
                // (the path keeps order), go back now if NAKs are on.
                let gap = self.nak && kind != PktType::CreditReturn && idx < req.high_tx;
                if gap && self.roll_back_gap(slot_idx, now, stats) {
                    return AnswerRx::GapRollback;
                }
            }
            return AnswerRx::Dropped;
        }
        let len = rpc.msg_size as usize;
        if kind == PktType::Response {
            if k == 0 && len > max_msg {
                stats.drops.too_large += 1;
                let error = RpcError::ResponseTooLarge { len, max: max_msg };
                return AnswerRx::Rejected {
                    slot: slot_idx,
                    error,
                };
            }
            let known = k == 0 || req.resp.as_ref().is_some_and(|m| m.len() == len);
            if !known || p.payload.len() != chunk(len, k, dpp).len() {
                stats.drops.malformed += 1;
                return AnswerRx::Dropped;
            }
        }
        // In order: accept. With no rollback and no timeout pending on the
        // slot, the time since the last progress is an RTT sample (Karn:
        // never from a resent packet; pipelined packets give smaller
        // samples, which the decaying maximum ignores).
        let clean = !req.rolled_back;
        let sample = now.saturating_since(req.armed_at);
        // Timely and NSCC: the answered packet's own round trip, if it was
        // sent once.
        // The send time read here, not through `CcState::rtt_of` (client_sack's):
        // as a call it cost every RPC 13 instructions with no congestion
        // control at all (scripts/cost.sh, rpc_32b_w1 2,918.7 -> 2,932.8).
        let cc_rtt = self.cc.as_ref().and_then(|cc| {
            let sent = cc
                .tx_ts
                .as_ref()
                .map_or(Instant::ZERO, |ts| ts[slot_idx][idx as usize % TX_TS_RING]);
            let fresh = req.num_tx.saturating_sub(idx) as usize <= TX_TS_RING;
            (sent != Instant::ZERO && fresh).then(|| now.saturating_since(sent))
        });
        // Answers for packets 'num_rx..=idx': those still in flight return
        // their credits (after a rollback some are not in flight), then
        // the answers that came early are passed over (selective).
        let returned = req.ack_through(idx + 1);
        if let Some(cc) = self.cc.as_mut() {
            let before = cc.rate.rate_bps();
            cc.rate.on_ack(now, cc_rtt, returned as usize * dpp);
            stats.cc_rate_cuts += u64::from(cc.rate.rate_bps() < before);
        }
        self.credits += req.release_held(returned) as u16;
        req.skip_sacked();
        req.armed_at = now;
        req.progress_at = now;
        req.rolled_back = false;
        if clean && slot.suspect.is_none() {
            sample_rtt(&mut self.rtt, sample);
        }
        match kind {
            PktType::CreditReturn => return AnswerRx::Progress,
            PktType::ErrorResponse => {
                let error = RpcError::Remote(ErrorCode::from(p.payload[0]));
                return AnswerRx::Failed {
                    slot: slot_idx,
                    error,
                };
            }
            _ => {}
        }
        if k == 0 {
            req.n_resp = pkts_of(len, dpp);
            // Credits granted for response packets beyond the response's
            // end come home: the virtual RFRs past it were never needed
            // (those taken as lost hold none).
            let total = req.n_req + req.n_resp - 1;
            if req.num_tx > total {
                let cut = total - req.num_rx;
                let lost = req.sel.as_deref_mut().map_or(0, |s| {
                    let n = s.lost.count_from(cut);
                    s.lost.clear_from(cut);
                    n
                });
                self.credits += (req.num_tx - total - lost) as u16;
                req.num_tx = total;
                req.high_tx = req.high_tx.min(total);
            }
            if req.n_resp == 1 {
                let payload = Payload::Borrowed(p.payload);
                return AnswerRx::Completed {
                    slot: slot_idx,
                    payload,
                };
            }
            if req.resp.is_none() {
                req.resp = Some(pool.alloc(len));
            }
            // Response packets kept out of order follow it now.
            req.skip_sacked();
        }
        let Some(resp) = req.resp.as_mut() else {
            // Allocated when Response(0) was accepted; `known` checked it.
            return AnswerRx::Dropped;
        };
        resp.fill::<C>(chunk(len, k, dpp), p.payload);
        if req.num_rx < req.n_req + req.n_resp - 1 {
            return AnswerRx::Progress;
        }
        match req.resp.take() {
            Some(m) => AnswerRx::Completed {
                slot: slot_idx,
                payload: Payload::Owned(m),
            },
            None => AnswerRx::Dropped,
        }
    }
}
