//! Credit policing at the server: a session's request packets beyond what
//! its credits allow are dropped at the first look, and a session that
//! keeps sending them is closed and its source refused new sessions for a
//! while.
//!
//! The rule rests on one fact about a client that honours its credits C:
//! every packet it sends (request or RFR) holds a credit until an answer
//! from the server returns it, and the server only answers in
//! `poll_transmit`. So the request packets of one session that the server
//! reads between two frames it writes (one *epoch*: in the run loop, at
//! least one receive burst) were all sent on credits the client already
//! had before the first of them was read: at most C of them. A lossless
//! client may add one credit-free probe per request slot, so a session is
//! allowed `credits + req_window` packets per epoch (its *allowance*). An
//! epoch ends with every frame the endpoint writes (`Stats::tx_pkts`), so
//! no caller marks bursts, and at the latest after half the shorter
//! retransmission timeout: a timeout also gives a client its credits back
//! (a rollback), without any answer, and its copies go out a timeout after
//! the packets they copy, in a later epoch (a server that answers nothing
//! for a while, e.g. go-back-N dropping the packets behind a loss, would
//! otherwise see both in one).
//!
//! What a compliant client can still do: after a server stall of more than
//! half a timeout, its rolled-back copies of the same packets can pile up
//! in the ring and exceed the allowance in one epoch. The excess is then
//! copies of packets read earlier in the epoch, so dropping it loses
//! nothing; one stall makes a few violating epochs, not `strikes` of them.
//!
//! What the rule cannot see: a session whose allowance is at least the
//! receive burst (32 frames: credits + window >= 32) never exceeds it in
//! one burst, and a flood spread over several sessions each under its
//! allowance is not caught either; those are bounded only by the ring
//! shares and session limits of admission (`admission.rs`).
//!
//! A violating epoch is a *strike*; `strikes` of them within `window`
//! close the session (as if its client had disconnected) and bar its
//! source, the pair (IP address, MAC address) its frames came from, from
//! session management for `cooloff`: its ConnectReqs, keepalives and
//! disconnects are dropped unanswered (`drops.policed_source`). Only
//! packets with the session's valid token count, so a blind spoofer
//! cannot get someone else's session closed, and a peer that answers for
//! another's IP address from its own MAC bars only that pair.

use super::error::EndpointConfigError;
use crate::time::{Duration, Instant};
use crate::wire::MacAddr;
use std::net::Ipv4Addr;

/// The policing rule (`EndpointConfig::police`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policing {
    /// Violating epochs within `window` that close a session; 0: no
    /// policing at all (nothing dropped, nothing closed).
    pub strikes: u16,
    /// The window the strikes are counted in.
    pub window: Duration,
    /// How long a closed session's source stays barred.
    pub cooloff: Duration,
}

impl Default for Policing {
    /// 64 strikes in 1 s, a 10 s cool-off. A flood that overruns the ring
    /// strikes at every receive burst (64 strikes: about 2,000 frames, ms
    /// at the rates that hurt); a compliant client strikes only after a
    /// stall of several retransmission timeouts, once per burst its piled
    /// copies fill, a handful per stall, and this VM stalls a few times a
    /// minute, not 64 times a second.
    fn default() -> Self {
        Policing {
            strikes: 64,
            window: Duration::from_secs(1),
            cooloff: Duration::from_secs(10),
        }
    }
}

impl Policing {
    /// No policing (a simulated fabric whose hosts are all genuine).
    pub const OFF: Policing = Policing {
        strikes: 0,
        window: Duration::from_secs(1),
        cooloff: Duration::ZERO,
    };

    /// A window above zero when policing is on.
    pub fn validate(&self) -> Result<(), EndpointConfigError> {
        if self.strikes > 0 && self.window == Duration::ZERO {
            return Err(EndpointConfigError::new(
                "police.window",
                0,
                "must be above zero",
            ));
        }
        Ok(())
    }
}

/// One server session's count of request packets in the current epoch and
/// its strikes (`ServerSession::meter`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Meter {
    /// The epoch `pkts` counts in (the low bits of `Stats::tx_pkts`).
    epoch: u32,
    /// Request packets read in it.
    pkts: u16,
    /// The most a compliant client can bring in one epoch.
    allowance: u16,
    strikes: u16,
    /// When the current window of strikes began.
    strikes_since: Instant,
    /// Packets dropped over the allowance, over the session's life.
    pub excess: u64,
}

impl Meter {
    /// A meter for a session with `credits` and a window of `req_window`.
    pub fn new(credits: u16, req_window: usize) -> Meter {
        Meter {
            allowance: credits.saturating_add(req_window.min(u16::MAX as usize) as u16),
            ..Meter::default()
        }
    }

    /// Counts one request packet read in `epoch`; whether it is within
    /// the allowance. Two compares and an add on the hot path.
    #[inline]
    pub fn within(&mut self, epoch: u32) -> bool {
        if self.epoch != epoch {
            self.epoch = epoch;
            self.pkts = 0;
        }
        self.pkts = self.pkts.saturating_add(1);
        self.pkts <= self.allowance
    }

    /// A packet over the allowance at `now`: counted; the first of its
    /// epoch is a strike. Whether the strikes now close the session.
    pub fn over(&mut self, now: Instant, rule: &Policing) -> bool {
        self.excess += 1;
        if self.pkts != self.allowance.saturating_add(1) {
            return false;
        }
        if self.strikes == 0 || now.saturating_since(self.strikes_since) > rule.window {
            self.strikes_since = now;
            self.strikes = 0;
        }
        self.strikes += 1;
        self.strikes >= rule.strikes
    }
}

/// How many barred sources the endpoint remembers; past it a new one
/// replaces the one whose cool-off ends first. Fixed memory.
const BARRED: usize = 64;

/// The endpoint's epoch clock and the sources barred after one of their
/// sessions was closed for violating its credits.
#[derive(Debug, Default)]
pub(crate) struct Police {
    /// Epochs ended by time (see `epoch`), and when the next one ends.
    ticks: u32,
    tick_at: Instant,
    /// The longest an epoch lasts: half the shorter retransmission
    /// timeout (`span_for`).
    span: Duration,
    barred: Vec<(Ipv4Addr, MacAddr, Instant)>,
    /// The latest end of any cool-off: before it nobody is barred, which
    /// is all a session-management packet pays for then.
    until: Instant,
}

impl Police {
    /// A police whose epochs last at most `span`.
    pub fn new(span: Duration) -> Police {
        Police {
            span,
            ..Police::default()
        }
    }

    /// The longest epoch for timeouts `rto` and `rto_low`: half the
    /// shorter. A client's rolled-back copies go out a timeout after the
    /// packets they copy, so unless the ring held them for more than half
    /// a timeout (a stall), the two never share an epoch.
    pub fn span_for(rto: Duration, rto_low: Duration) -> Duration {
        Duration::from_nanos(rto.as_nanos().min(rto_low.as_nanos()) / 2)
    }

    /// The epoch a request packet read at `now` counts in, given the
    /// frames written so far (`tx_frames`): a new one after every frame
    /// written and at least every `span`. One compare on the hot path.
    #[inline]
    pub fn epoch(&mut self, now: Instant, tx_frames: u64) -> u32 {
        if now >= self.tick_at {
            self.ticks = self.ticks.wrapping_add(1);
            self.tick_at = now + self.span;
        }
        // Both counts only grow: their sum changes whenever either does.
        (tx_frames as u32).wrapping_add(self.ticks)
    }

    /// Bars `(ip, mac)` until `until`.
    pub fn bar(&mut self, ip: Ipv4Addr, mac: MacAddr, until: Instant) {
        self.until = self.until.max(until);
        if let Some(e) = self.barred.iter_mut().find(|e| e.0 == ip && e.1 == mac) {
            e.2 = e.2.max(until);
        } else if self.barred.len() < BARRED {
            self.barred.push((ip, mac, until));
        } else if let Some(e) = self.barred.iter_mut().min_by_key(|e| e.2) {
            *e = (ip, mac, until);
        }
    }

    /// Whether `(ip, mac)` is barred at `now`.
    #[inline]
    pub fn bars(&self, now: Instant, ip: Ipv4Addr, mac: MacAddr) -> bool {
        now < self.until
            && self
                .barred
                .iter()
                .any(|e| e.0 == ip && e.1 == mac && now < e.2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meter_allows_credits_plus_window_per_epoch_and_strikes_once_per_epoch() {
        let rule = Policing {
            strikes: 3,
            ..Policing::default()
        };
        let mut m = Meter::new(8, 8);
        let now = Instant::ZERO;
        for epoch in 0..2 {
            for _ in 0..16 {
                assert!(m.within(epoch));
            }
            assert!(!m.within(epoch));
            assert!(!m.over(now, &rule), "one strike");
            assert!(!m.within(epoch));
            assert!(!m.over(now, &rule), "the same epoch: no second strike");
        }
        assert_eq!(m.excess, 4);
        assert!(m.within(2), "a new epoch starts from zero");
        for _ in 0..15 {
            m.within(2);
        }
        assert!(!m.within(2));
        assert!(m.over(now, &rule), "the third strike closes");
    }

    #[test]
    fn strikes_outside_the_window_start_a_new_count() {
        let rule = Policing {
            strikes: 2,
            window: Duration::from_millis(10),
            ..Policing::default()
        };
        let mut m = Meter::new(1, 0);
        let strike = |m: &mut Meter, epoch: u32, at: u64| {
            m.within(epoch);
            m.within(epoch);
            m.over(Instant(at), &rule)
        };
        assert!(!strike(&mut m, 1, 0));
        assert!(!strike(&mut m, 2, 11_000_000), "11 ms later: a new window");
        assert!(strike(&mut m, 3, 12_000_000));
    }

    #[test]
    fn a_barred_source_is_the_ip_and_mac_pair_until_its_cooloff_ends() {
        let mut p = Police::default();
        let (ip, mac) = (Ipv4Addr::new(10, 0, 0, 9), MacAddr([2, 0, 0, 0, 0, 9]));
        let other = MacAddr([2, 0, 0, 0, 0, 8]);
        assert!(!p.bars(Instant::ZERO, ip, mac));
        p.bar(ip, mac, Instant(1_000));
        assert!(p.bars(Instant(999), ip, mac));
        assert!(!p.bars(Instant(999), ip, other), "another MAC with the IP");
        assert!(!p.bars(Instant(1_000), ip, mac), "cooled off");
        for i in 0..2 * BARRED as u8 {
            p.bar(Ipv4Addr::new(10, 1, 0, i), mac, Instant(2_000 + i as u64));
        }
        assert_eq!(p.barred.len(), BARRED, "fixed memory");
        let last = Ipv4Addr::new(10, 1, 0, 2 * BARRED as u8 - 1);
        assert!(p.bars(Instant(1_500), last, mac), "the newest is kept");
    }
}
