//! A client's tally of answered RPCs: which latencies count (a request
//! started inside the measured window and answered before its end), the
//! warm-up's kept aside for a run that ends inside it, and how long the
//! measured window really was. Both clients keep one (the DPDK worker's
//! `workload::ClientApp` and the kernel link's loop in `kernel`), so their
//! reports are made the same way.

use crate::measure::hist::LatencyHist;
use engine::time::{Duration, Instant};

/// Completions and their latencies, split at the measured window.
#[derive(Debug)]
pub struct Tally {
    /// Latencies of requests started and answered inside the window.
    pub hist: LatencyHist,
    /// Latencies of requests started during warm-up (used only when the
    /// whole run ended inside the warm-up, e.g. a small `max_requests`).
    pub hist_warm: LatencyHist,
    /// Every good answer, window or not.
    pub completed: u64,
    /// The answers in `hist`.
    pub completed_measured: u64,
    pub measure_from: Instant,
    pub measure_until: Instant,
    run_start: Instant,
    last_completion: Instant,
}

impl Tally {
    /// A tally whose run starts at `now`: `warmup` not measured, then
    /// `run` measured.
    pub fn new(now: Instant, warmup: Duration, run: Duration) -> Tally {
        Tally {
            hist: LatencyHist::new(),
            hist_warm: LatencyHist::new(),
            completed: 0,
            completed_measured: 0,
            measure_from: now + warmup,
            measure_until: now + warmup + run,
            run_start: now,
            last_completion: now,
        }
    }

    /// A good answer at `now` to a request started at `start`.
    pub fn record(&mut self, start: Instant, now: Instant) {
        self.completed += 1;
        let ns = (now - start).as_nanos();
        if start >= self.measure_from && now <= self.measure_until {
            self.hist.record_ns(ns);
            self.completed_measured += 1;
        } else if start < self.measure_from {
            self.hist_warm.record_ns(ns);
        }
        self.last_completion = now;
    }

    /// The measured window's latencies, completions and length in seconds.
    /// A run that ended inside its warm-up is measured whole instead.
    pub fn measurement(&self) -> (LatencyHist, u64, f64) {
        if self.completed_measured == 0 && self.completed > 0 {
            let mut h = self.hist_warm.clone();
            h.merge(&self.hist);
            let secs = (self.last_completion - self.run_start).as_secs_f64();
            return (h, self.completed, secs);
        }
        let end = self.last_completion.min(self.measure_until);
        let secs = (end - self.measure_from).as_secs_f64();
        (self.hist.clone(), self.completed_measured, secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(us: u64) -> Instant {
        Instant::ZERO + Duration::from_micros(us)
    }

    #[test]
    fn only_requests_started_and_answered_inside_the_window_are_measured() {
        // Warm-up 0..100 us, window 100..200 us.
        let mut t = Tally::new(
            at(0),
            Duration::from_micros(100),
            Duration::from_micros(100),
        );
        t.record(at(50), at(60)); // warm-up
        t.record(at(90), at(110)); // started in warm-up, answered inside
        t.record(at(120), at(130)); // measured
        t.record(at(150), at(170)); // measured
        t.record(at(190), at(210)); // answered after the window
        assert_eq!(t.completed, 5);
        assert_eq!(t.completed_measured, 2);
        let (h, n, secs) = t.measurement();
        assert_eq!(n, 2);
        assert_eq!(h.raw().len(), 2);
        // The window ends at its end even though answers came later.
        assert!((secs - 100e-6).abs() < 1e-9, "{secs}");
        assert_eq!(t.hist_warm.raw().len(), 2);
    }

    #[test]
    fn a_run_that_ends_inside_its_warm_up_is_measured_whole() {
        let mut t = Tally::new(
            at(0),
            Duration::from_micros(1000),
            Duration::from_micros(100),
        );
        t.record(at(10), at(30));
        t.record(at(40), at(70));
        let (h, n, secs) = t.measurement();
        assert_eq!((n, h.raw().len()), (2, 2));
        assert!((secs - 70e-6).abs() < 1e-9, "{secs}");
    }
}
