//! Go-back-N with NAKs, client side (`EndpointConfig::nak`): a Nak from the
//! server, or a gap in the response packets the client pulls, rolls the
//! request back at once instead of after the retransmission timeout, as a
//! RoCE or InfiniBand requester does on a sequence-error NAK. Each gap rolls
//! back once (`ClientSession::nak_gap`): the packets that were in flight
//! behind it arrive out of order too, and must not restart the resend each
//! time. The server side (a Nak per gap) is in `server_rx.rs`.

use super::client::ClientSession;
use super::client_rx::AnswerRx;
use super::stats::Stats;
use crate::time::Instant;

impl ClientSession {
    /// A Nak for slot `i`'s current request: request packet `k` is the first
    /// the server misses, every one below it arrived.
    pub(crate) fn rx_nak<'f>(
        &mut self,
        now: Instant,
        i: usize,
        k: u32,
        payload_len: usize,
        stats: &mut Stats,
    ) -> AnswerRx<'f> {
        let nak = self.nak;
        let Some(req) = self.slots[i].req.as_mut() else {
            return AnswerRx::Dropped;
        };
        if !nak || req.sel.is_some() || payload_len != 0 || k >= req.n_req || k >= req.high_tx {
            // Not a mode that NAKs, or names a packet never sent.
            stats.drops.malformed += 1;
            return AnswerRx::Dropped;
        }
        if k < req.num_rx {
            // Progress went past the gap since (the resent packet's answer).
            stats.drops.stale += 1;
            stats.drops.stale_cr += 1;
            return AnswerRx::Dropped;
        }
        // Everything below the gap arrived: those credits come home, as a
        // cumulative credit return for packet k - 1 would bring them.
        let returned = req.ack_through(k);
        self.credits += returned as u16;
        req.progress_at = now;
        if !self.roll_back_gap(i, now, stats) {
            stats.drops.duplicate += 1;
            stats.drops.dup_cr += 1;
            return AnswerRx::Dropped;
        }
        // NSCC: a loss the receiver named (one packet; a trimmed one's NACK
        // will come the same way).
        if let Some(cc) = self.cc.as_mut() {
            cc.feed(&mut stats.cc_rate_cuts, |r| r.on_nack(now, 1));
        }
        AnswerRx::Progress
    }

    /// Rolls slot `i`'s request back to its first unanswered packet for the
    /// gap there, unless this gap was rolled back for already; returns
    /// whether it rolled back.
    pub(crate) fn roll_back_gap(&mut self, i: usize, now: Instant, stats: &mut Stats) -> bool {
        let Some(req) = self.slots[i].req.as_ref() else {
            return false;
        };
        let gap = (req.req_num, req.num_rx);
        if self.nak_gap == Some(gap) {
            return false;
        }
        self.nak_gap = Some(gap);
        self.roll_back(i, now);
        stats.rollbacks += 1;
        stats.nak_rollbacks += 1;
        true
    }
}
