//! RCCC, receiver credit control (`EndpointConfig::rccc`): the server's
//! pacer of credit returns (what one grant gives a server session is
//! `rccc_grant.rs`).
//!
//! UEC 1.0's receiver-based congestion control (after EQDS) has the
//! receiver hand out credits at its own link rate, so that however many
//! senders converge on it, together they never send faster than its last
//! hop drains: the queue moves from the switch to the receiver, where it
//! costs nothing. uet-htsim (`htsim/sim/uec.cpp`, `UecPullPacer`) keeps
//! one pacer per receiver NIC, runs it at 0.99 of the link rate
//! (`main_uec.cpp`: `UecPullPacer(linkspeed, 0.99, ...)`), serves the
//! connections that want credit round robin (`_active_senders`, a FIFO)
//! and grants `UecSink::_mtus_per_pull` = 4 MTUs per pull; a new sender
//! starts with an unsolicited window (`UecSrc::initRccc`: 1.5 BDP of
//! credit before any pull).
//!
//! Here credits are the engine's own, granted in the handshake (the
//! unsolicited window: a BDP under the fabric's BDP regimes) and returned
//! by cumulative credit returns (CRs), which are also the acks. Acks stay
//! immediate (a held ack would fire the sender's timeout: with 16 senders
//! the first windows alone take 16 round trips to drain); what RCCC holds
//! back is the credit. Every accepted request packet joins its session to
//! this pacer's FIFO (once; `ServerSession::rccc_queued`) and counts as
//! received and not released (`ServerSlot::granted` trails `num_rx`); a CR
//! carries that count in its `grant` field and the client keeps as many
//! of its credits back (`ClientSession::withheld`). The pacer, when due,
//! takes the session at the front, releases up to [`PULL_PKTS`] of its
//! packets, queues a CR to say so, and puts the session back at the tail
//! while it has more; the next grant is due after the time the released
//! packets take on the link at 0.99 of its rate. A session whose sender
//! already holds or has in flight its share of 1.5 windows (1.5 x its
//! credits / the sessions waiting, at least one packet; uet-htsim's RCCC
//! window is 1.5 BDP, `UecSrc::initRccc`) is passed over and leaves the
//! FIFO until its next packet arrives, so all senders together keep about
//! 1.5 windows in the network: with N senders of window W, the N x W -
//! 1.5 x W that a plain fabric queues at the last hop wait here as credits
//! not yet released, and the first windows drain at the link's full rate.
//! Credits stay conserved per session (no new credit is made, as EQDS's
//! pulls make it).
//!
//! Simplified: a Sack (selective mode) still returns its packet's credit
//! at once; a request's completion (Response(0)) and a timeout give back
//! every credit kept (a lost last CR cannot strand a sender); one credit
//! is one packet, not UEC's 256-byte quanta; no pull target from the
//! sender (a session waits while it has packets received and not
//! released, its demand as the receiver sees it).

use super::config::EndpointConfig;
use super::ids::SessionId;
use crate::time::Instant;
use std::collections::VecDeque;

/// Credits (packets) one grant releases at most: uet-htsim's
/// `UecSink::_mtus_per_pull`.
pub(crate) const PULL_PKTS: u32 = 4;

/// The window all senders together may keep in the network, in quarters
/// of one session's credits: 1.5 windows, uet-htsim's RCCC window
/// (`UecSrc::initRccc`: `setMaxWnd(1.5*_bdp)`). With exactly one window
/// the credit's round trip through the pacer left the link 20 % idle in
/// a 16-to-1 incast of 2 MB flows (76 Gb/s of 94.5 in the lab).
pub(crate) const WINDOW_QUARTERS: u32 = 6;

/// The pacer's rate as a fraction of the link's, in thousandths: 0.99,
/// uet-htsim's `pull_rate_modifier` (`main_uec.cpp`), just under the link
/// so the queue forms here and not at the last hop.
const RATE_PERMILLE: u128 = 990;

/// Ethernet header bytes a frame adds to the MTU on the link.
const ETH_HEADER: u128 = 14;

/// Where a server session is in the credit pacer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Waiting {
    /// Nothing to release.
    Idle,
    /// In the FIFO.
    Queued,
    /// Packets to release, but its sender holds or has in flight its
    /// share already: out of the FIFO until its next packet arrives, and
    /// counted among the senders the window is shared by.
    Parked,
}

/// The server's pacer of credit returns: the sessions waiting for credit,
/// in the order they will get it, and when the next grant is due.
#[derive(Debug)]
pub(crate) struct CreditPacer {
    waiting: VecDeque<SessionId>,
    /// Sessions `Waiting::Parked`.
    pub parked: u32,
    /// The next grant's time (the pacer may start a grant at once when it
    /// has been idle: no credit is banked while nobody waits).
    next_at: Instant,
    /// Link time of one full frame at the pacer's rate, picoseconds.
    ps_per_credit: u128,
    /// Sub-nanosecond remainder of the schedule, carried.
    rem_ps: u128,
}

impl CreditPacer {
    pub fn new(cfg: &EndpointConfig) -> Self {
        let bits = (cfg.mtu as u128 + ETH_HEADER) * 8;
        let rate = u128::from(cfg.link_bps.max(1)) * RATE_PERMILLE;
        CreditPacer {
            // A session waits in it at most once: presized for every
            // session the endpoint may hold, it never grows.
            waiting: VecDeque::with_capacity(if cfg.rccc { cfg.max_sessions } else { 0 }),
            parked: 0,
            next_at: Instant::ZERO,
            ps_per_credit: (bits * 1_000_000_000_000_000).div_ceil(rate),
            rem_ps: 0,
        }
    }

    /// The waiting sessions, next first (for the prefetch hints).
    pub fn waiting(&self) -> &VecDeque<SessionId> {
        &self.waiting
    }

    /// Session `s` wants credit (the caller keeps it from joining twice).
    pub fn join(&mut self, s: SessionId) {
        self.waiting.push_back(s);
    }

    /// The session at the front, if a grant is due at `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<SessionId> {
        if self.next_at > now {
            return None;
        }
        self.waiting.pop_front()
    }

    /// `credits` were released at `now`: the next grant waits until they
    /// have crossed the link at the pacer's rate.
    pub fn charge(&mut self, now: Instant, credits: u32) {
        self.charge_ps(now, u128::from(credits) * self.ps_per_credit);
    }

    fn charge_ps(&mut self, now: Instant, ps: u128) {
        let start = self.next_at.max(now);
        let ps = ps + self.rem_ps;
        self.rem_ps = ps % 1000;
        self.next_at = start + crate::time::Duration::from_nanos((ps / 1000) as u64);
    }

    /// The senders the window is shared by: those waiting, parked, and
    /// the one just taken from the front.
    pub fn sharing(&self) -> u32 {
        self.waiting.len() as u32 + self.parked + 1
    }

    /// When the next grant is due, if a session waits.
    pub fn next_due(&self) -> Option<Instant> {
        (!self.waiting.is_empty()).then_some(self.next_at)
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

/// What one grant did to a server session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Grant {
    /// The request whose packets were released, and how many (0: the
    /// session had nothing to release any more).
    pub req_num: u64,
    pub credits: u32,
    /// A CR must be queued for it (none is queued for the slot yet).
    pub queue_cr: bool,
    /// The session has more to release: back to the tail.
    pub more: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    #[test]
    fn grants_are_paced_at_the_links_rate_and_fifo() {
        let cfg = EndpointConfig {
            mtu: 4096 - 14,
            link_bps: 100_000_000_000,
            rccc: true,
            ..EndpointConfig::default()
        };
        let mut p = CreditPacer::new(&cfg);
        let a = SessionId { num: 1, gen: 0 };
        let b = SessionId { num: 2, gen: 0 };
        assert_eq!(p.next_due(), None);
        p.join(a);
        p.join(b);
        let t0 = Instant::ZERO + Duration::from_micros(10);
        assert_eq!(p.pop_due(t0), Some(a));
        p.charge(t0, 4);
        // 4 frames of 4096 bytes at 99 Gb/s: 1323.96 ns.
        let due = p.next_due().unwrap();
        assert_eq!(due.saturating_since(t0).as_nanos(), 1323);
        assert_eq!(p.pop_due(Instant(due.0 - 1)), None);
        assert_eq!(p.pop_due(due), Some(b));
        p.charge(due, 4);
        // The remainder is carried: 8 frames take 2647.92 ns in all.
        assert_eq!(p.next_at.saturating_since(t0).as_nanos(), 2647);
        assert!(p.is_empty());
        // Idle: no credit banked, the next grant starts when asked.
        let later = t0 + Duration::from_millis(1);
        p.join(a);
        assert_eq!(p.pop_due(later), Some(a));
        p.charge(later, 1);
        assert!(p.next_at > later);
    }
}
