//! Timely (Mittal et al., "TIMELY: RTT-based Congestion Control for the
//! Datacenter", SIGCOMM'15) as eRPC (Kalia et al., NSDI'19) runs it: the
//! paper's gradient algorithm with eRPC's constants and eRPC's changes to it
//! (`src/cc/timely.h` and `src/cc/timely_sweep_params.h` in erpc-io/eRPC,
//! snapshot de83dab, May 2024):
//!
//! - every step is scaled by `delta = min(time since the last update /
//!   min_rtt, 1)`, so a burst of samples that arrives in less than one
//!   minimum RTT moves the rate no more than one sample per RTT would;
//! - one update never cuts the rate below half of what it was;
//! - an uncongested session (at link rate, RTT at or below `t_low`) skips
//!   the update entirely (eRPC's `kCcOptTimelyBypass`, on by default), which
//!   also leaves the RTT history untouched;
//! - samples below `min_rtt` count as `min_rtt` (eRPC drops them, as its
//!   2 us constant lies below every real RTT; here `min_rtt` is the path's
//!   measured base RTT, which for a burst includes its serialisation, and a
//!   lone packet on an idle path returns faster than that: dropping those
//!   samples left a cut session with no sample to grow on).
//!
//! Two rules are this engine's own, both so that a host that stops running
//! is not taken for a queue (a descheduled vCPU or run loop holds every
//! answer in flight, then hands them over at once):
//!
//! - a silence of the answer stream longer than `t_high` is the host's,
//!   and is taken off the samples of the packets it held
//!   ([`Timely::on_answer`]);
//! - a sample above `t_low` counts only once the delay has stood for a
//!   round trip (a packet sent after the first late sample arrived comes
//!   back late too), which catches the shorter stalls ([`Timely::on_rtt`]).
//!
//! Rates are f64 bits per second inside, u64 at the API. RTTs are handled in
//! nanoseconds; the algorithm only uses ratios of times, so the unit does not
//! matter.

use crate::time::{Duration, Instant};

/// Timely's constants. `Default` is eRPC's configuration; eRPC states rates
/// in bytes per second, converted here to bits per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimelyParams {
    /// EWMA weight of a new RTT difference: 0.46 (eRPC
    /// `timely_sweep_params.h`, `kEwmaAlpha`; the paper uses 0.875 at 10G).
    pub ewma_alpha: f64,
    /// Multiplicative-decrease factor: 0.26 (eRPC `timely_sweep_params.h`,
    /// `kBeta`; the paper's §6 uses 0.8, older eRPC `kTimelyDecreaseFactor`).
    pub beta: f64,
    /// The minimum RTT that normalises the gradient and the time scale of
    /// `delta`: 2 us (eRPC `timely.h`, `kMinRTT`).
    pub min_rtt: Duration,
    /// Below this RTT, always additive increase: 50 us (eRPC `kTLow`, same
    /// as the paper's §6).
    pub t_low: Duration,
    /// Above this RTT, decrease on the sample itself rather than the
    /// gradient: 1000 us (eRPC `kTHigh`; the paper's §6 uses 500 us).
    pub t_high: Duration,
    /// Floor of the rate: 120 Mbit/s (eRPC `kMinRate` = 15 MB/s).
    pub min_rate_bps: u64,
    /// Additive-increase step per update: 40 Mbit/s (eRPC `kAddRate` =
    /// 5 MB/s; the paper's §6 uses 10 Mbit/s at 10G).
    pub add_rate_bps: u64,
    /// Consecutive negative RTT differences before hyperactive increase: 5
    /// (eRPC `kHaiThresh`; the paper's §4.3 uses N = 5 as well).
    pub hai_thresh: u32,
    /// Multiplier of `add_rate_bps` in hyperactive increase: 5 (eRPC's
    /// `update_rate`, `n = 5`; the paper's N).
    pub hai_factor: u32,
}

impl Default for TimelyParams {
    fn default() -> Self {
        TimelyParams {
            ewma_alpha: 0.46,
            beta: 0.26,
            min_rtt: Duration::from_micros(2),
            t_low: Duration::from_micros(50),
            t_high: Duration::from_micros(1000),
            min_rate_bps: 120_000_000,
            add_rate_bps: 40_000_000,
            hai_thresh: 5,
            hai_factor: 5,
        }
    }
}

impl TimelyParams {
    /// eRPC's constants with `min_rtt` set to the path's unloaded round
    /// trip. eRPC's 2 us constant fits its own testbed; below a path's real
    /// base RTT it inflates the gradient (a 1 us rise reads as 0.5 instead
    /// of 1 us / 4.3 us = 0.23 on the fabric), so the engine passes the
    /// base RTT it measured or was configured with. At least 1 us.
    pub fn with_min_rtt(min_rtt: Duration) -> Self {
        TimelyParams {
            min_rtt: Duration::from_nanos(min_rtt.as_nanos().max(1_000)),
            ..TimelyParams::default()
        }
    }
}

/// The Timely rate computation of one session (client side: the RTT is
/// measured from a request packet to its credit return or response).
#[derive(Clone, Debug)]
pub struct Timely {
    params: TimelyParams,
    /// The rate ceiling: the link rate. A session starts here, as in eRPC.
    link_bps: f64,
    /// The rate floor, never above the link rate.
    min_bps: f64,
    rate_bps: f64,
    /// The previous sample in ns; eRPC starts it at `min_rtt`.
    prev_rtt_ns: f64,
    /// EWMA of successive RTT differences, in ns.
    avg_rtt_diff_ns: f64,
    /// Consecutive negative RTT differences (for hyperactive increase).
    neg_gradient_count: u32,
    /// When the current run of samples above `t_low` began (its first
    /// sample's arrival); `None` when the last sample was at or below
    /// `t_low`. See [`Timely::on_rtt`].
    high_since: Option<Instant>,
    /// The current run above `t_low` stood for a round trip: react.
    high_confirmed: bool,
    /// Whether silences of the answers are taken for host stalls
    /// ([`Timely::on_answer`]); off until [`Timely::set_host_stalls`].
    host_stalls: bool,
    /// When the session's latest answer arrived (sampled or not); `None`
    /// before the first. See [`Timely::on_answer`].
    last_answer: Option<Instant>,
    /// The latest silence of the answer stream taken for a host's stall:
    /// from the answer before it to the answer that ended it.
    silence: (Instant, Instant),
    /// When the rate last changed; `None` until the first update, which
    /// then counts as a full `min_rtt` apart (eRPC stamps construction time
    /// instead, which a `new` without a clock cannot).
    last_update: Option<Instant>,
}

impl Timely {
    /// A controller for a session on a `link_bps` link, starting at link
    /// rate.
    pub fn new(params: TimelyParams, link_bps: u64) -> Self {
        let link = link_bps.max(1) as f64;
        Timely {
            params,
            link_bps: link,
            min_bps: (params.min_rate_bps as f64).min(link),
            rate_bps: link,
            prev_rtt_ns: params.min_rtt.as_nanos() as f64,
            avg_rtt_diff_ns: 0.0,
            neg_gradient_count: 0,
            high_since: None,
            high_confirmed: false,
            host_stalls: false,
            last_answer: None,
            silence: (Instant::ZERO, Instant::ZERO),
            last_update: None,
        }
    }

    /// Takes silences of the answers longer than `t_high` for host stalls
    /// (real hosts) or not (a simulated fabric, whose hosts never stall).
    pub fn set_host_stalls(&mut self, on: bool) {
        self.host_stalls = on;
    }

    /// The current rate in bits per second, within [min rate, link rate].
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps.round() as u64
    }

    /// The EWMA of RTT differences normalised by `min_rtt` (the gradient).
    #[cfg(test)]
    pub fn gradient(&self) -> f64 {
        self.avg_rtt_diff_ns / self.params.min_rtt.as_nanos().max(1) as f64
    }

    /// An answer of the session arrived at `now`, with the RTT of the packet
    /// it answers when that packet was sent once: the sample goes to
    /// [`Timely::on_rtt`] less the part of a host's stall the packet spent
    /// in flight.
    ///
    /// A queue serves a session's packets at its share of the bottleneck,
    /// so its answers keep coming, each a little later; a host that does
    /// not run (this end's poll loop descheduled, or the peer's) stops them
    /// all, then hands them over at once. So a silence of the session's
    /// answer stream longer than `t_high` is taken for a stall, and a
    /// sample of a packet sent before it ended counts without the part of
    /// it the packet spent in flight. A queue whose answers keep coming is
    /// read in full. What this rule cannot tell from a stall is a session
    /// whose whole window waits, as one burst, behind more than `t_high` of
    /// other traffic in one FIFO with nothing of it served meanwhile (or a
    /// pause that long on a lossless link): 1 ms is 12.5 MB queued at 100
    /// Gb/s, more than a switch port holds, but a PFC pause can last that
    /// long; that delay then reaches Timely only once the session's packets
    /// are spread out.
    /// Swift (Kumar et al., SIGCOMM'20, §3.2) takes the hosts' delay off the
    /// fabric's with NIC timestamps; this does it for the stall from the
    /// answers' arrival times alone, which every link has.
    ///
    /// Measured: on this repository's AMD EPYC VM with other builds taking
    /// 60-70 % of both cores, Timely on an idle memif link (3 s runs) cut
    /// its rate 167-183 times with the round-trip rule alone, 90-95 % of
    /// them on samples of 2-8 ms: two stalls close together pass that rule.
    /// A first form of this one, which took a silence only for a packet in
    /// flight since before it began, still let 143-149 cuts through: in
    /// 60-80 % of the silences the late packet had left after the last
    /// answer before it (few packets in flight: the session was limited by
    /// the hosts, not its credits).
    pub fn on_answer(&mut self, now: Instant, rtt: Option<Duration>) {
        let prev = self.last_answer.replace(now);
        if let Some(prev) = prev.filter(|_| self.host_stalls) {
            if now.saturating_since(prev) > self.params.t_high {
                self.silence = (prev, now);
            }
        }
        let Some(rtt) = rtt else { return };
        let sent = Instant(now.as_nanos().saturating_sub(rtt.as_nanos()));
        let (from, to) = self.silence;
        let held = to.saturating_since(sent.max(from));
        let rtt = rtt.as_nanos().saturating_sub(held.as_nanos());
        self.on_rtt(now, Duration::from_nanos(rtt));
    }

    /// Feeds one RTT sample taken at `now`.
    ///
    /// A sample above `t_low` counts only once the delay has stood for a
    /// round trip: a packet sent after the first late sample arrived must
    /// come back late too (this engine's rule, not eRPC's). A queue at a
    /// bottleneck stands that long; a stalled host does not: a descheduled
    /// vCPU or run loop holds every answer in flight for the stall and
    /// then hands them over at once, late by up to the stall, while the
    /// packets sent after it return on time. On this repository's AMD EPYC
    /// VM, `transport.cc = "timely"` with 8 MiB requests on an idle memif
    /// link took about 1 % of its samples at 1 ms or more (most at 4-15 us),
    /// and each such burst cut the rate by up to half; it ran at 0.08-0.41x
    /// of `cc = "none"` (docs/lossy-vs-lossless.md, "Congestion control on
    /// these links"). Until confirmed, late samples are skipped like the
    /// bypass's (history untouched); a sample at or below `t_low` ends the
    /// run.
    pub fn on_rtt(&mut self, now: Instant, rtt: Duration) {
        let p = &self.params;
        if rtt <= p.t_low {
            self.high_since = None;
            self.high_confirmed = false;
            if self.rate_bps >= self.link_bps {
                return; // eRPC's bypass: uncongested, nothing to compute
            }
        } else if !self.high_confirmed {
            let Some(first) = self.high_since else {
                self.high_since = Some(now);
                return;
            };
            let sent = Instant(now.as_nanos().saturating_sub(rtt.as_nanos()));
            if sent < first {
                return; // in flight when the delay began: not confirmed yet
            }
            self.high_confirmed = true;
        }
        let min_rtt = p.min_rtt.as_nanos().max(1) as f64;
        let sample = (rtt.as_nanos() as f64).max(min_rtt);
        let diff = sample - self.prev_rtt_ns;
        self.neg_gradient_count = if diff < 0.0 {
            self.neg_gradient_count.saturating_add(1)
        } else {
            0
        };
        self.avg_rtt_diff_ns = (1.0 - p.ewma_alpha) * self.avg_rtt_diff_ns + p.ewma_alpha * diff;

        let delta = match self.last_update {
            Some(t) => (now.saturating_since(t).as_nanos() as f64 / min_rtt).min(1.0),
            None => 1.0,
        };
        let add = p.add_rate_bps as f64 * delta;
        let md = p.beta * delta;
        let rate = self.rate_bps;
        let new_rate = if rtt < p.t_low {
            rate + add
        } else if rtt > p.t_high {
            // Decrease on the sample, not the average: the queue is already
            // far too long to wait for the EWMA (paper §4.3).
            rate * (1.0 - md * (1.0 - p.t_high.as_nanos() as f64 / sample))
        } else {
            let gradient = self.avg_rtt_diff_ns / min_rtt;
            if gradient <= 0.0 {
                let n = if self.neg_gradient_count >= p.hai_thresh {
                    p.hai_factor
                } else {
                    1
                };
                rate + f64::from(n) * add
            } else {
                rate * (1.0 - md * gradient)
            }
        };
        self.rate_bps = new_rate
            .max(rate * 0.5)
            .min(self.link_bps)
            .max(self.min_bps);
        self.prev_rtt_ns = sample;
        self.last_update = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINK: u64 = 40_000_000_000;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    fn at_us(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000)
    }

    /// A controller whose run of late samples began at time zero, so that
    /// every later sample above `t_low` is confirmed (its packet left at or
    /// after zero).
    fn primed(p: TimelyParams, link: u64) -> Timely {
        let mut t = Timely::new(p, link);
        t.on_rtt(Instant::ZERO, us(51));
        assert_eq!(
            t.rate_bps(),
            link.max(1),
            "the first late sample only starts a run"
        );
        t
    }

    #[test]
    fn starts_at_link_rate_and_bypasses_low_rtts() {
        let mut t = Timely::new(TimelyParams::default(), LINK);
        assert_eq!(t.rate_bps(), LINK);
        t.on_rtt(at_us(10), us(10));
        assert_eq!(t.rate_bps(), LINK);
        assert_eq!(t.gradient(), 0.0, "the bypass leaves the history alone");
    }

    #[test]
    fn rising_rtts_in_band_lower_the_rate() {
        let mut t = primed(TimelyParams::default(), LINK);
        let mut prev = t.rate_bps();
        // Six halvings stay above the 120 Mbit/s floor.
        for i in 0..6 {
            t.on_rtt(at_us(10 * (i + 1)), us(60 + 20 * i));
            assert!(t.gradient() > 0.0);
            let r = t.rate_bps();
            assert!(r < prev, "step {i}: {r} not below {prev}");
            assert!(r >= prev / 2, "one update cuts at most by half");
            prev = r;
        }
    }

    #[test]
    fn rtt_above_t_high_cuts_on_the_sample() {
        let mut t = primed(TimelyParams::default(), LINK);
        t.on_rtt(at_us(10), us(2_000));
        // 1 - 0.26 * (1 - 1000/2000) = 0.87
        let want = LINK as f64 * 0.87;
        assert!((t.rate_bps() as f64 - want).abs() < 1.0, "{}", t.rate_bps());
    }

    #[test]
    fn low_rtts_recover_monotonically_to_link_rate() {
        let mut t = primed(TimelyParams::default(), LINK);
        t.on_rtt(at_us(10), us(2_000));
        t.on_rtt(at_us(20), us(3_000));
        let low = t.rate_bps();
        assert!(low < LINK);
        let mut prev = low;
        let mut now = 20;
        while t.rate_bps() < LINK {
            now += 10;
            t.on_rtt(at_us(now), us(10));
            let r = t.rate_bps();
            assert!(r > prev || r == LINK, "not monotone: {prev} -> {r}");
            assert!(r <= LINK);
            prev = r;
            assert!(now < 10 * 10_000, "never reached link rate");
        }
        // Additive: 40 Mbit/s per update, so the climb takes that many steps.
        let steps = (now - 20) / 10;
        assert_eq!(steps, (LINK - low).div_ceil(40_000_000));
    }

    #[test]
    fn hyperactive_increase_after_five_negative_gradients() {
        let mut t = primed(TimelyParams::default(), LINK);
        t.on_rtt(at_us(10), us(2_000));
        // A sharp drop makes the EWMA negative at once; then falling RTTs.
        let mut steps = Vec::new();
        let mut prev = t.rate_bps() as i64;
        for (i, rtt) in [900, 890, 880, 870, 860, 850].into_iter().enumerate() {
            t.on_rtt(at_us(20 + 10 * i as u64), us(rtt));
            assert!(t.gradient() <= 0.0);
            let r = t.rate_bps() as i64;
            steps.push(r - prev);
            prev = r;
        }
        let m = 40_000_000;
        for (got, want) in steps.iter().zip([m, m, m, m, 5 * m, 5 * m]) {
            assert!((got - want).abs() <= 1, "steps {steps:?}");
        }
    }

    #[test]
    fn samples_closer_than_min_rtt_move_the_rate_less() {
        let mut t = primed(TimelyParams::default(), LINK);
        t.on_rtt(at_us(10), us(2_000));
        let before = t.rate_bps();
        // 1 us after the last update = half of min_rtt: half a step.
        t.on_rtt(at_us(11), us(10));
        assert_eq!(t.rate_bps() - before, 20_000_000);
    }

    #[test]
    fn samples_below_min_rtt_raise_a_cut_rate() {
        // min_rtt is a burst's base RTT (15 us); a lone packet on the idle
        // path comes back in 3 us. A cut session must grow on such samples.
        let mut t = primed(TimelyParams::with_min_rtt(us(15)), LINK);
        t.on_rtt(at_us(10), us(2_000));
        let cut = t.rate_bps();
        assert!(cut < LINK);
        for i in 0..50 {
            t.on_rtt(at_us(100 + 15 * i), us(3));
        }
        assert!(
            t.rate_bps() > cut + 1_000_000_000,
            "{cut} -> {}",
            t.rate_bps()
        );
    }

    #[test]
    fn rate_stays_within_min_and_link() {
        let p = TimelyParams::default();
        let mut t = primed(p, LINK);
        for i in 0..200 {
            t.on_rtt(at_us(10 * (i + 1)), us(10_000 + i));
            assert!(t.rate_bps() >= p.min_rate_bps && t.rate_bps() <= LINK);
        }
        assert_eq!(
            t.rate_bps(),
            p.min_rate_bps,
            "sustained overload hits the floor"
        );
        // A pseudo-random walk of RTTs and gaps never leaves the bounds.
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut now = 10_000u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now += x % 20;
            t.on_rtt(at_us(now), us(1 + x % 3_000));
            let r = t.rate_bps();
            assert!((p.min_rate_bps..=LINK).contains(&r), "{r}");
        }
    }

    #[test]
    fn a_link_slower_than_min_rate_caps_the_floor() {
        let mut t = primed(TimelyParams::default(), 100_000_000);
        t.on_rtt(at_us(10), us(5_000));
        assert_eq!(t.rate_bps(), 100_000_000);
    }

    /// A host stall on an idle link: the answers of everything in flight
    /// come back at once, milliseconds late, then the packets sent after
    /// the stall return on time. No cut; the history is untouched.
    #[test]
    fn a_stall_burst_is_not_a_queue() {
        let mut t = Timely::new(TimelyParams::with_min_rtt(us(15)), LINK);
        let mut now = 1_000;
        for _ in 0..50 {
            // 64 answers handed over within 20 us, 2-4 ms late ...
            for k in 0..64u64 {
                t.on_rtt(
                    at_us(now) + Duration::from_nanos(300 * k),
                    us(4_000 - 30 * k),
                );
            }
            // ... then the packets sent after the stall, on time.
            for k in 0..64u64 {
                t.on_rtt(at_us(now + 30 + k), us(6));
            }
            now += 2_000;
        }
        assert_eq!(t.rate_bps(), LINK);
        assert_eq!(t.gradient(), 0.0);
    }

    /// A standing delay is confirmed once a packet sent after its first
    /// late sample comes back late too, one round trip in; then Timely
    /// reacts on every sample as before.
    #[test]
    fn a_delay_that_stands_for_a_round_trip_is_a_queue() {
        let mut t = Timely::new(TimelyParams::with_min_rtt(us(15)), LINK);
        // Late samples 1 us apart, 200 us each: the first at 1000 us.
        let mut now = 1_000;
        while now < 1_200 {
            t.on_rtt(at_us(now), us(200));
            assert_eq!(
                t.rate_bps(),
                LINK,
                "at {now} us: packet sent before the run began"
            );
            now += 1;
        }
        // Sent at 1000 us, back at 1200 us: confirmed, cut.
        t.on_rtt(at_us(1_200), us(200));
        t.on_rtt(at_us(1_215), us(230));
        assert!(t.rate_bps() < LINK);
        // A sample at or below t_low ends the run; the next late one starts
        // a new run that must be confirmed again.
        let cut = t.rate_bps();
        t.on_rtt(at_us(1_300), us(20));
        let grown = t.rate_bps();
        assert!(grown > cut);
        t.on_rtt(at_us(1_400), us(900));
        assert_eq!(t.rate_bps(), grown);
    }

    /// A host that runs 50 us out of every 2 ms: each short run window
    /// hands over the answers held through the stall and sends a window
    /// that the next stall catches. Fed as bare samples (the round-trip
    /// rule alone) that is a confirmed standing delay and Timely cuts; fed
    /// as answers, each silence is taken off the samples it held, so no
    /// cut.
    #[test]
    fn back_to_back_stalls_are_not_a_queue() {
        let feed = |answers: bool, stalls: bool| {
            let mut t = Timely::new(TimelyParams::with_min_rtt(us(15)), LINK);
            t.set_host_stalls(stalls);
            let mut sent = Vec::new(); // send times still in flight, in us
            for k in 0..100u64 {
                let run = 2_000 * k;
                // The stall ends at `run`: everything in flight answers at
                // once (0.1 us apart), then 8 packets leave, 5 us apart.
                for (i, s) in sent.drain(..).enumerate() {
                    let now = at_us(run) + Duration::from_nanos(100 * i as u64);
                    let rtt = now.saturating_since(at_us(s));
                    match answers {
                        true => t.on_answer(now, Some(rtt)),
                        false => t.on_rtt(now, rtt),
                    }
                }
                sent.extend((0..8).map(|i| run + 5 + 5 * i));
            }
            t.rate_bps()
        };
        assert!(feed(false, true) < LINK, "the round-trip rule alone cuts");
        assert!(feed(true, false) < LINK, "without host stalls: as before");
        assert_eq!(feed(true, true), LINK);
    }

    /// A queue keeps the answers coming: fed as answers, a delay that rises
    /// and stands is cut on exactly as before.
    #[test]
    fn a_queue_fed_as_answers_is_still_cut() {
        let mut t = Timely::new(TimelyParams::with_min_rtt(us(15)), LINK);
        t.set_host_stalls(true);
        // One answer per 2 us, each packet 100 us + 1 us per answer late.
        for k in 0..400u64 {
            t.on_answer(at_us(1_000 + 2 * k), Some(us(100 + k)));
        }
        assert!(t.rate_bps() < LINK / 2, "{}", t.rate_bps());
    }
}
