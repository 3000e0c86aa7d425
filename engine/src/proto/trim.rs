//! Packet trimming, the endpoints' side: what a receiver does with a data
//! frame a switch cut to its headers (`wire::mark_trimmed`, IPv4 DSCP
//! `wire::DSCP_TRIMMED`), and what the sender does with the news. The
//! point of trimming (UEC 1.0; uet-htsim's `UecSink` NACKs a header-only
//! packet, `UecSrc::processNack` queues exactly that packet for resend) is
//! that a packet the fabric could not keep costs one round trip, not a
//! retransmission timeout, and only that packet is resent.
//!
//! - Server, a trimmed request packet `k` of request `r`: selective mode
//!   answers with `TrimNak(r, k)` at once; go-back-N with NAKs answers with
//!   the gap's `Nak` (once per gap, as for a packet behind a gap), which
//!   sends the client back to the first missing packet.
//! - Client, `TrimNak(r, k)` or a trimmed response packet: the client's
//!   packet whose answer it is (request packet `k`; for response packet
//!   `k`, the RFR `k`, or the last request packet for Response(0)) is taken
//!   as lost now and resent first (`ClientReq::take_lost`), alone.
//!
//! Bounds (a trimmed frame may be forged: it passes the same session and
//! token checks as any other): every trimmed frame or TrimNak received is
//! a counted drop (`drops.trimmed`; its payload never arrived), and it
//! causes at most one frame back: a TrimNak, or one resend of a packet that
//! is in flight (sent, not answered, not already taken as lost) and inside
//! the selective window. A resent packet is in flight again, so a trim of
//! the resend is answered once more, one for one, never more than the
//! packets the client has in flight. A packet resent for a trim is marked
//! (`SackState::trimmed`) so that SACKs showing its hole before the resend
//! lands do not resend it a second time.
//!
//! The window: a trim takes the trimmed packet's credit off the window,
//! and every credit an answer of the request brings home later brings one
//! of those with it (`ClientReq::release_held`; the rest come home when
//! the request ends). This is NSCC's reaction in credits (uet-htsim
//! `UecSrc::processNack` takes the packet out of flight and
//! `updateCwndOnNack_NSCC` takes its bytes off the window, `_cwnd -=
//! nacked_bytes`), and it is what keeps a sender with no congestion
//! control (irn, srd) from turning a trimming bottleneck into a loop of
//! headers and resends at line rate: resends are clocked by the answers
//! that free credits, not by the trims. A trim never takes the last
//! credit of a request with nothing else in flight (nothing would bring
//! it home), nor the credit of the last request packet.

use super::client::ClientSession;
use super::client_rx::AnswerRx;
use super::frame::pkts_of;
use super::sack::SACK_WINDOW;
use super::server::ServerSession;
use super::server_rx::GapRule;
use super::stats::{Drops, Stats};
use super::txq::AnswerKind;
use crate::time::Instant;
use crate::wire::{Parsed, PktType};

impl ServerSession {
    /// A trimmed request packet addressed to this (connected, token-checked)
    /// session: the answer to queue (a `TrimNak` for it, or go-back-N's
    /// `Nak` for the gap), if any. Always counted as a drop: its payload
    /// is gone. The slot is not changed but for go-back-N's once-per-gap
    /// mark: a trimmed packet starts nothing.
    #[cold]
    pub(crate) fn rx_trimmed(
        &mut self,
        p: &Parsed<'_>,
        dpp: usize,
        max_msg: usize,
        gaps: GapRule,
        d: &mut Drops,
    ) -> Option<(AnswerKind, u32)> {
        let rpc = &p.rpc;
        let (r, k, len) = (rpc.req_num, rpc.pkt_num as u32, rpc.msg_size as usize);
        if len > max_msg || k >= pkts_of(len, dpp) || !p.payload.is_empty() {
            d.malformed += 1;
            return None;
        }
        d.trimmed += 1;
        let i = self.slot_of(r);
        let slot = &mut self.slots[i];
        let expected = match slot.req_num {
            Some(cur) if r < cur => return None,
            Some(cur) if r == cur => {
                let stored =
                    k > slot.num_rx && slot.ooo.as_ref().is_some_and(|w| w.get(k - slot.num_rx));
                if len != slot.req_len || k < slot.num_rx || stored {
                    // A copy of a packet that did arrive: nothing to ask.
                    return None;
                }
                slot.num_rx
            }
            // A newer request than the slot's (its first packets trimmed).
            _ => 0,
        };
        if gaps.selective {
            return (k - expected < SACK_WINDOW).then_some((AnswerKind::TrimNak, k));
        }
        if !gaps.nak || slot.nak_sent == Some((r, expected)) {
            return None;
        }
        slot.nak_sent = Some((r, expected));
        Some((AnswerKind::Nak, expected))
    }
}

impl ClientSession {
    /// A `TrimNak`, or a trimmed frame of another kind (only a response
    /// packet means something), for slot `i`'s current request. Counted as
    /// a drop (`drops.trimmed`) unless it is malformed; `Resend` if a
    /// packet was taken as lost for resending (`GapRollback` if, under
    /// go-back-N with NAKs, the request went back to its first missing
    /// packet).
    #[cold]
    pub(crate) fn rx_trim<'f>(
        &mut self,
        now: Instant,
        i: usize,
        p: &Parsed<'_>,
        stats: &mut Stats,
    ) -> AnswerRx<'f> {
        let Some(req) = self.slots[i].req.as_mut() else {
            return AnswerRx::Dropped;
        };
        let k = p.rpc.pkt_num as u32;
        let idx = match p.rpc.pkt_type {
            PktType::TrimNak if p.payload.is_empty() && k < req.n_req => k,
            PktType::Response if p.trimmed && p.payload.is_empty() => req.n_req - 1 + k,
            _ => {
                stats.drops.malformed += 1;
                return AnswerRx::Dropped;
            }
        };
        stats.drops.trimmed += 1;
        // In flight: sent (below `num_tx`, which counts granted response
        // packets as sent), not answered; selective: within the window and
        // neither answered early nor already taken as lost.
        if idx < req.num_rx || idx >= req.num_tx {
            return AnswerRx::Dropped;
        }
        let b = idx - req.num_rx;
        let Some(s) = req.sel.as_deref_mut() else {
            // Go-back-N: the trim shows a gap; with NAKs, go back now.
            if self.nak && self.roll_back_gap(i, now, stats) {
                return AnswerRx::GapRollback;
            }
            return AnswerRx::Dropped;
        };
        if b >= SACK_WINDOW || s.sacked.get(b) || s.lost.get(b) {
            return AnswerRx::Dropped;
        }
        s.lost.set(b);
        s.trimmed.set(b);
        // Its credit stays off the window until an answer brings it home
        // (see the module docs), unless it is the last request packet
        // (Response(0), its answer, releases the granted response
        // packets) or nothing else of the request is in flight to bring a
        // credit home for the resend.
        // Credits an RCCC server keeps back cannot send the resend: only
        // usable ones count, or a session held back by both would wait
        // for an answer that nothing in flight can bring.
        let usable = self.credits.saturating_sub(self.withheld);
        let hold = idx + 1 != req.n_req && (usable > 0 || req.in_flight_real() > 0);
        if hold {
            req.trim_held += 1;
        } else {
            self.credits += 1;
        }
        // NSCC hears the NACK (uet-htsim `UecSrc::processNack`: quick
        // adapt, a delay sample of a full RTT) once this request holds
        // several trims: one or two trims are a sprayed path's hiccup, which
        // the held credit answers, and NSCC's reaction to them held a
        // 1,024-node permutation's last flows back (tail 374 against 226
        // us); many are a last hop overrun, and without NSCC's reaction a
        // 1,023-to-1 incast kept trimming (tail 136 ms against 13 ms).
        if req.trim_held >= TRIMS_FOR_QUICK_ADAPT {
            if let Some(cc) = self.cc.as_mut() {
                cc.feed(&mut stats.cc_rate_cuts, |r| r.on_nack(now, 1));
            }
        }
        // (Not progress: the session's timeout keeps its reference.)
        stats.trim_resends += 1;
        AnswerRx::Resend
    }
}

/// Trims a request must hold before they reach its congestion control as
/// NACKs (see `rx_trim`).
const TRIMS_FOR_QUICK_ADAPT: u32 = 4;
