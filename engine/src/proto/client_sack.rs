//! Selective retransmission, client side: answers accepted out of order,
//! SACKs, and the decision that a hole is lost.
//!
//! Indices are the client's packet sequence of `client.rs` (request
//! packets, then RFRs). `num_rx` stays the first index not answered;
//! `sacked` marks indices past it whose answer came early, `lost` those to
//! resend. Accepting in order then skips every sacked index that follows,
//! except that it never passes the last request packet before Response(0)
//! is in: that packet's real answer carries the response, and a Sack of it
//! is only evidence for the holes below (its credit stays held, so a lost
//! Response(0) still times out).
//!
//! When a hole is taken as lost is the session's [`SackRule`]: IRN's at
//! the first Sack that shows it (the path keeps order, so a later packet
//! answered means the hole's packet is gone); or, on paths that reorder
//! (SRD's spraying), once [`DUP_THRESH`] packets sent after it were
//! answered (TCP's duplicate-ACK threshold) and it stayed a hole for a
//! reordering window (RACK's RTT/4: small requests-for-response overtake
//! each other easily, and the responses they ask for follow their order).
//! Either way it is resent at once and, should the copy be lost too, left
//! to the timeout. A loss no later packet reveals (the tail
//! of a window) waits for the timeout, short when few packets are in flight
//! (`EndpointConfig::rto_low`).

use super::client::{ClientReq, ClientSession};
use super::config::SackRule;
use super::frame::chunk;
use super::msgbuf::{MsgPool, PayloadCopy};
use super::sack::SACK_WINDOW;
use super::stats::Stats;
use crate::time::{Duration, Instant};

/// Answers to later packets that make an unanswered one lost.
pub(crate) const DUP_THRESH: u32 = 3;
/// Smallest reordering window (see `ClientSession::reorder_window`): the
/// RTT estimate follows the gaps between answers when many are in flight,
/// which can be far below the round trip, and 4 us holds back a repair by
/// a fraction of a datacenter round trip only.
pub(crate) const MIN_REORDER_WINDOW: Duration = Duration::from_micros(4);

impl ClientReq {
    /// Every index below `t` is answered: returns the credits that come
    /// back (of packets that were in flight) and moves `num_rx` to `t`.
    #[inline]
    pub fn ack_through(&mut self, t: u32) -> u32 {
        if t <= self.num_rx {
            return 0;
        }
        let n = t - self.num_rx;
        let mut returned = t.min(self.num_tx).saturating_sub(self.num_rx);
        if let Some(s) = self.sel.as_deref_mut() {
            returned -= s.sacked.count_below(n) + s.lost.count_below(n);
            s.sacked.shift(n);
            s.lost.shift(n);
            s.trimmed.shift(n);
        }
        self.num_rx = t;
        self.num_tx = self.num_tx.max(t);
        self.high_tx = self.high_tx.max(t);
        returned
    }

    /// `returned` credits coming home with an answer, and as many of
    /// those trims hold (`trim.rs`): while trims hold credits the window
    /// grows back by two per credit answered.
    #[inline]
    pub fn release_held(&mut self, returned: u32) -> u32 {
        let r = returned.min(self.trim_held);
        self.trim_held -= r;
        returned + r
    }

    /// Moves `num_rx` past the answers that came early, stopping at the
    /// last request packet while Response(0) is still missing.
    #[inline]
    pub fn skip_sacked(&mut self) {
        let Some(s) = self.sel.as_deref_mut() else {
            return;
        };
        let mut run = s.sacked.leading_run();
        if self.n_resp == 0 {
            run = run.min((self.n_req - 1).saturating_sub(self.num_rx));
        }
        s.sacked.shift(run);
        s.lost.shift(run);
        s.trimmed.shift(run);
        self.num_rx += run;
    }

    /// Whether index `idx` (past `num_rx`) was answered out of order.
    pub fn is_sacked(&self, idx: u32) -> bool {
        self.sel
            .as_deref()
            .is_some_and(|s| s.sacked.get(idx - self.num_rx))
    }

    /// Marks index `idx` (past `num_rx`, sent) answered out of order;
    /// returns the credit it gives back (0 if it was already taken as
    /// lost), or `None` if it was answered already (or not selective).
    pub fn sack(&mut self, idx: u32) -> Option<u32> {
        let s = self.sel.as_deref_mut()?;
        let b = idx - self.num_rx;
        if s.sacked.get(b) {
            return None;
        }
        s.sacked.set(b);
        if s.lost.get(b) {
            s.lost.clear(b);
            return Some(0);
        }
        Some(1)
    }

    /// Takes as lost every hole with at least `dup_thresh` answered
    /// packets above it, once holes have qualified for `reo_wnd` (answers
    /// overtaken by a little reordering fill their hole within it); returns
    /// how many were marked (each gives its credit back).
    pub fn detect_losses(&mut self, now: Instant, reo_wnd: Duration, dup_thresh: u32) -> u32 {
        if dup_thresh == u32::MAX {
            return 0; // `SackRule::NackOnly`
        }
        let qualifying = self.scan_holes(false, dup_thresh);
        let Some(s) = self.sel.as_deref_mut() else {
            return 0;
        };
        if qualifying == 0 {
            s.reo_since = None;
            return 0;
        }
        let since = *s.reo_since.get_or_insert(now);
        if now.saturating_since(since) < reo_wnd {
            return 0;
        }
        s.reo_since = None;
        self.scan_holes(true, dup_thresh)
    }

    /// Counts (and with `mark`, marks lost) the holes at or above
    /// `recovered_upto` with `dup_thresh` answered packets above them.
    /// Holes past the last request packet while Response(0) is missing are
    /// skipped: they are virtual RFRs, answered once it comes.
    fn scan_holes(&mut self, mark: bool, dup_thresh: u32) -> u32 {
        let (num_rx, num_tx, n_req, n_resp) = (self.num_rx, self.num_tx, self.n_req, self.n_resp);
        let Some(s) = self.sel.as_deref_mut() else {
            return 0;
        };
        let Some(top) = s.sacked.last() else {
            return 0;
        };
        let mut end = top.min(num_tx - num_rx);
        if n_resp == 0 {
            end = end.min(n_req.saturating_sub(num_rx));
        }
        let start = s.recovered_upto.saturating_sub(num_rx);
        let mut above = s.sacked.count_from(start + 1);
        let mut found = 0;
        for b in start..end {
            let hole = !s.sacked.get(b) && !s.lost.get(b) && !s.trimmed.get(b);
            if hole && above >= dup_thresh {
                found += 1;
                if mark {
                    s.lost.set(b);
                    s.recovered_upto = num_rx + b + 1;
                }
            }
            if s.sacked.get(b + 1) {
                above -= 1;
            }
        }
        found
    }

    /// Packets in flight that a timeout should count: virtual RFRs past the
    /// last request packet are left out while Response(0) is missing (they
    /// stand or fall with that packet).
    pub fn in_flight_real(&self) -> u32 {
        let Some(s) = self.sel.as_deref() else {
            return self.in_flight();
        };
        if self.n_resp > 0 || self.num_tx <= self.n_req || self.num_rx >= self.n_req {
            return self.in_flight();
        }
        let cut = self.n_req - self.num_rx;
        cut - s.sacked.count_below(cut) - s.lost.count_below(cut)
    }

    /// Whether a packet taken as lost waits to be resent.
    pub fn has_lost(&self) -> bool {
        self.sel.as_deref().is_some_and(|s| !s.lost.is_empty())
    }

    /// The first packet taken as lost, cleared from the set.
    #[inline]
    pub fn take_lost(&mut self) -> Option<u32> {
        let s = self.sel.as_deref_mut()?;
        let b = s.lost.first()?;
        s.lost.clear(b);
        Some(self.num_rx + b)
    }
}

impl ClientSession {
    /// The session's loss rule as (reordering window, answers above a hole):
    /// IRN's first NACK takes a hole at once; the reordering rule waits a
    /// quarter of the RTT estimate (RACK's window, at least
    /// [`MIN_REORDER_WINDOW`]) for [`DUP_THRESH`] answers above it.
    fn loss_rule(&self) -> (Duration, u32) {
        match self.sack_rule {
            SackRule::FirstNack => (Duration::from_nanos(0), 1),
            SackRule::NackOnly => (Duration::from_nanos(u64::MAX), u32::MAX),
            SackRule::Reordering => {
                let rack = (self.rtt.as_nanos() / 4).max(MIN_REORDER_WINDOW.as_nanos());
                (Duration::from_nanos(rack), DUP_THRESH)
            }
        }
    }

    /// A Sack for request packet `k` of slot `i`'s request with
    /// cumulative ack `ack` (as of when the server wrote it, so it may have
    /// passed `k`): the packets below `ack` are answered, `k` is answered
    /// out of order, and holes may be lost. `false` if it told nothing new
    /// (counted as a duplicate) or is malformed (counted).
    pub fn rx_sack(
        &mut self,
        now: Instant,
        i: usize,
        k: u32,
        ack: u32,
        dpp: usize,
        stats: &mut Stats,
    ) -> bool {
        let (reo_wnd, dup_thresh) = self.loss_rule();
        let d = &mut stats.drops;
        let Some(req) = self.slots[i].req.as_mut() else {
            return false;
        };
        if req.sel.is_none() || k >= req.n_req || k >= req.high_tx || ack > req.n_req {
            d.malformed += 1;
            return false;
        }
        stats.sacks_received += 1;
        let before = req.num_rx;
        // The cumulative part, as a CR(ack - 1) would (never past the last
        // request packet: its answer is Response(0)).
        let mut returned = req.ack_through(ack.min(req.n_req - 1));
        let mut fresh = false;
        // The last request packet keeps its credit until Response(0), as
        // under go-back-N: released here, nothing might be left in flight
        // to time out if Response(0) is lost.
        if k + 1 < req.n_req && k >= req.num_rx && k - req.num_rx < SACK_WINDOW {
            if let Some(c) = req.sack(k) {
                returned += c;
                fresh = true;
            }
        }
        // Delivered, as this Sack tells: the cumulative part and `k`, and
        // `k`'s round trip if it is newly answered (for NSCC, below).
        let delivered = returned;
        let rtt = match fresh {
            true => self
                .cc
                .as_ref()
                .and_then(|cc| cc.rtt_of(now, i, k, req.num_tx)),
            false => None,
        };
        req.skip_sacked();
        let lost = req.detect_losses(now, reo_wnd, dup_thresh);
        returned += lost;
        stats.fast_retransmits += u64::from(lost);
        self.credits += req.release_held(returned) as u16;
        let useful = fresh || req.num_rx > before || lost > 0;
        // NSCC hears a Sack's delivered bytes and round trip as it hears an
        // in-order answer's: uet-htsim's every ACK, selective or not,
        // counts its newly received bytes towards the window's achieved
        // bytes and gives an RTT sample (`UecSrc::processAck`). Without it
        // a hole left by one trim starved quick adapt's count for a round
        // trip and it cut the window to nothing. Other controls keep to
        // in-order answers (`RateControl::on_sack`).
        if let Some(cc) = self.cc.as_mut().filter(|_| delivered > 0) {
            let bytes = delivered as usize * dpp;
            cc.feed(&mut stats.cc_rate_cuts, |r| r.on_sack(now, rtt, bytes));
        }
        if !useful {
            d.duplicate += 1;
            d.dup_cr += 1;
        }
        useful
    }

    /// A response packet `k >= 1` of slot `i`'s request that arrived before
    /// those below it: its data is kept and its index answered. `false` if
    /// it is a duplicate or does not fit (counted).
    #[allow(clippy::too_many_arguments)]
    pub fn rx_response_early<C: PayloadCopy>(
        &mut self,
        now: Instant,
        i: usize,
        k: u32,
        len: usize,
        payload: &[u8],
        dpp: usize,
        pool: &MsgPool,
        stats: &mut Stats,
    ) -> bool {
        let (reo_wnd, dup_thresh) = self.loss_rule();
        let Some(req) = self.slots[i].req.as_mut() else {
            return false;
        };
        let idx = req.n_req - 1 + k;
        let known = req.resp.as_ref().is_none_or(|m| m.len() == len);
        let dup = req.is_sacked(idx);
        if !known || payload.len() != chunk(len, k, dpp).len() || dup {
            let d = &mut stats.drops;
            if known && dup {
                d.duplicate += 1;
                d.dup_response += 1;
            } else {
                d.malformed += 1;
            }
            return false;
        }
        let resp = req.resp.get_or_insert_with(|| pool.alloc(len));
        resp.fill::<C>(chunk(len, k, dpp), payload);
        let mut returned = req.sack(idx).unwrap_or(0);
        let lost = req.detect_losses(now, reo_wnd, dup_thresh);
        returned += lost;
        stats.fast_retransmits += u64::from(lost);
        self.credits += req.release_held(returned) as u16;
        true
    }
}
