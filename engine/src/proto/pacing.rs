//! Pacing: the client sessions waiting for their pacing time (a timing
//! wheel, eRPC's Carousel) and the two decisions about it, each made here
//! only: whether this endpoint paces at all (congestion control or a rate
//! cap, fixed by the config) and whether a session at a given rate is
//! paced (below the link rate; at it, eRPC's wheel bypass). The rate
//! itself is the session's controller's (`cc/`); `congestion.rs` runs the
//! two together.

use super::cc::{CcKind, TimingWheel};
use super::config::EndpointConfig;
use super::ids::SessionId;
use crate::time::{Duration, Instant};

/// Pacing wheel: 1 us slots (a 1500-byte frame at 10 Gb/s), 4096 of them
/// (a 4 ms horizon: a gap at Timely's minimum rate fits many times).
pub(crate) const PACING_GRAIN: Duration = Duration::from_micros(1);
const PACING_SLOTS: usize = 4096;

/// How far behind its pacing schedule a session may fall and still catch
/// up: the wheel releases a session up to one grain after its time, and
/// the run loop may come round a little later still. Also the most that
/// idle time earns as a burst (see `RateLimit::on_send`).
pub(crate) const PACING_SLACK: Duration = Duration::from_nanos(2 * PACING_GRAIN.as_nanos());

/// The endpoint's pacer.
#[derive(Debug)]
pub(crate) struct Pacer {
    /// Client sessions waiting for their pacing time.
    wheel: TimingWheel<SessionId>,
    link_bps: u64,
    /// Whether any session may be paced (decided once from the config).
    on: bool,
}

impl Pacer {
    pub fn new(cfg: &EndpointConfig) -> Self {
        Pacer {
            wheel: TimingWheel::new(PACING_GRAIN, PACING_SLOTS, Instant::ZERO),
            link_bps: cfg.link_bps,
            on: cfg.cc != CcKind::None || cfg.rate_cap_bps.is_some(),
        }
    }

    /// Whether the endpoint's client sessions are paced at all: congestion
    /// control or a rate cap. Without either, the transmit path skips
    /// pacing entirely.
    #[inline]
    pub fn on(&self) -> bool {
        self.on
    }

    /// The rate a session is paced at, given the rate its controller
    /// allows: that rate when below the link rate, `None` (not paced) at
    /// or above it or without one.
    #[inline]
    pub fn paced_rate(&self, rate_bps: Option<u64>) -> Option<u64> {
        rate_bps.filter(|&r| r < self.link_bps)
    }

    /// Session `s` waits until `at`.
    pub fn wait(&mut self, at: Instant, s: SessionId) {
        self.wheel.insert(at, s);
    }

    /// A session whose pacing time has come by `now`.
    pub fn pop_due(&mut self, now: Instant) -> Option<SessionId> {
        self.wheel.pop_due(now)
    }

    /// When the next waiting session is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.wheel.next_due()
    }

    /// Whether no session is waiting.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.wheel.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paces_only_with_a_controller_or_a_cap_and_only_below_the_link() {
        let cfg = EndpointConfig::default();
        assert_eq!(cfg.cc, CcKind::None);
        assert!(!Pacer::new(&cfg).on());
        let capped = EndpointConfig {
            rate_cap_bps: Some(1_000_000_000),
            ..cfg.clone()
        };
        let p = Pacer::new(&capped);
        assert!(p.on());
        let link = capped.link_bps;
        assert_eq!(p.paced_rate(Some(link - 1)), Some(link - 1));
        assert_eq!(p.paced_rate(Some(link)), None, "at link rate: bypass");
        assert_eq!(p.paced_rate(None), None);
    }

    #[test]
    fn a_waiting_session_comes_back_at_its_time() {
        let mut p = Pacer::new(&EndpointConfig::default());
        let s = SessionId { num: 4, gen: 1 };
        p.wait(Instant::ZERO + Duration::from_micros(10), s);
        assert!(!p.is_empty());
        assert_eq!(p.pop_due(Instant::ZERO + Duration::from_micros(5)), None);
        assert_eq!(
            p.pop_due(Instant::ZERO + Duration::from_micros(11)),
            Some(s)
        );
        assert!(p.is_empty());
    }
}
