//! The DCQCN reaction point (Zhu et al., "Congestion Control for
//! Large-Scale RDMA Deployments", SIGCOMM'15, §3.1 and Fig. 6): the sender
//! side that cuts its rate on a congestion notification packet (CNP) and
//! recovers through fast recovery, additive and hyper increase, driven by a
//! timer and a byte counter.
//!
//! Sans-IO: the timers are deadlines checked by [`Dcqcn::advance`], which
//! applies every period that elapsed since the last call at once, so the
//! caller only needs to call it when it is about to use the rate.
//!
//! Like QCN's reaction point, the state is only live while the flow is rate
//! limited: it starts at line rate with alpha = 1 (as HPCC's simulator does
//! on the first CNP, `rdma-hw.cc`), and once the rate has recovered to the
//! link rate the limiter is released and alpha is reset, so the first CNP of
//! a new congestion episode halves the rate again instead of being softened
//! by an alpha that decayed during the uncongested stretch.

use crate::time::{Duration, Instant};

/// The paper's CNP interval: at most one CNP per flow per 50 us (§3.1,
/// N = 50 us; also `CNPInterval` in the authors' simulator,
/// bobzhuyb/ns3-rdma `qbb-net-device.cc`); [`DcqcnParams::cnp_interval`] of
/// the paper's set. With the paper's alpha timer (55 us) above it, alpha
/// does not decay between two CNPs of one congestion episode; HPCC's set
/// decays alpha every 1 us without a CNP and sends one per 4 us, as its
/// Mellanox model updates alpha per period with or without a CNP.
pub const CNP_INTERVAL: Duration = Duration::from_micros(50);

/// Increase events applied one at a time per call; any further ones are
/// applied in closed form, so a long idle gap costs O(1).
const MAX_STEPS: u64 = 64;

/// DCQCN's reaction-point constants, with two named sets:
/// [`DcqcnParams::paper40g`] (the paper's, tuned at 40 Gb/s) and
/// [`DcqcnParams::hpcc100g`] (what the HPCC authors' ns-3 simulator runs
/// at 100 Gb/s, Mellanox's variant). [`DcqcnParams::for_link`] picks the set
/// that fits a link speed; `Default` is the paper's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DcqcnParams {
    /// EWMA gain of alpha: 1/256 in both sets (paper §5.3 / Fig. 12;
    /// `EWMA_GAIN` in alibaba-edu/High-Precision-Congestion-Control
    /// `simulation/run.py`).
    pub g: f64,
    /// K, the period without a CNP after which alpha decays (paper §3.1:
    /// 55 us; HPCC's `dcqcn`: `ALPHA_RESUME_INTERVAL` 1 us).
    pub alpha_timer: Duration,
    /// T, the rate-increase timer (paper §5.3: 55 us; HPCC's `dcqcn`:
    /// `RP_TIMER` 300 us).
    pub increase_timer: Duration,
    /// B, bytes sent per byte-counter increase event (paper §5.3: 10 MB).
    /// 0 turns the byte counter off: the timer alone drives the increase
    /// stages, as in Mellanox's variant (HPCC's `RateIncEventTimerMlx`):
    /// at most F events of fast recovery, one of additive increase, then
    /// hyper increase by R_HAI per event.
    pub byte_counter: u64,
    /// F, increase events of one counter spent in fast recovery (paper
    /// Table 2: 5; HPCC's `FAST_RECOVERY_TIMES` 1).
    pub fast_recovery_steps: u32,
    /// R_AI, the additive-increase step (paper §5.3 at 40G: 40 Mbit/s;
    /// HPCC's `RATE_AI` 5 Mb/s x bw/25G: 20 Mbit/s at 100G).
    pub rai_bps: u64,
    /// R_HAI, the hyper-increase step (200 Mbit/s in both: bobzhuyb/ns3-rdma
    /// `RATE_HAI`; HPCC's 50 Mb/s x bw/25G at 100G).
    pub rhai_bps: u64,
    /// Floor of the rate (bobzhuyb/ns3-rdma `MinRate` 100 Mbit/s; HPCC's
    /// `MIN_RATE` 1000 Mb/s).
    pub min_rate_bps: u64,
    /// How often the notification point may send a CNP for one session
    /// (paper §3.1: N = 50 us; HPCC's Mellanox variant cuts at most once
    /// per `RATE_DECREASE_INTERVAL`, 4 us, which a CNP per 4 us models).
    pub cnp_interval: Duration,
    /// Whether every CNP sets the target rate R_T to the current rate
    /// before cutting (the paper). Without it (HPCC's `CLAMP_TARGET_RATE
    /// 0`) a CNP that comes before any timer increase since the last cut
    /// keeps the old target, so a flow cut twice in a row recovers towards
    /// where it was, not towards the first cut.
    pub clamp_target: bool,
}

impl Default for DcqcnParams {
    fn default() -> Self {
        Self::paper40g()
    }
}

/// Link speed from which [`DcqcnParams::for_link`] picks the 100G set.
const HPCC_SET_FROM_BPS: u64 = 50_000_000_000;

impl DcqcnParams {
    /// The paper's constants (Zhu et al., SIGCOMM'15, tuned on 40 Gb/s).
    pub fn paper40g() -> Self {
        DcqcnParams {
            g: 1.0 / 256.0,
            alpha_timer: Duration::from_micros(55),
            increase_timer: Duration::from_micros(55),
            byte_counter: 10_000_000,
            fast_recovery_steps: 5,
            rai_bps: 40_000_000,
            rhai_bps: 200_000_000,
            min_rate_bps: 100_000_000,
            cnp_interval: CNP_INTERVAL,
            clamp_target: true,
        }
    }

    /// The HPCC authors' DCQCN at 100 Gb/s (`run.py --cc dcqcn --bw 100`):
    /// Mellanox's timer-only variant, no target clamp, 1 Gb/s floor.
    pub fn hpcc100g() -> Self {
        DcqcnParams {
            g: 1.0 / 256.0,
            alpha_timer: Duration::from_micros(1),
            increase_timer: Duration::from_micros(300),
            byte_counter: 0,
            fast_recovery_steps: 1,
            rai_bps: 20_000_000,
            rhai_bps: 200_000_000,
            min_rate_bps: 1_000_000_000,
            cnp_interval: Duration::from_micros(4),
            clamp_target: false,
        }
    }

    /// The set that fits a `link_bps` link: the paper's up to 40G-class
    /// links, HPCC's from 50 Gb/s up (the paper's 5 KB..200 KB marking and
    /// 40 Mb/s steps were tuned for 40G and keep a 100-400G flow far below
    /// line rate).
    pub fn for_link(link_bps: u64) -> Self {
        if link_bps >= HPCC_SET_FROM_BPS {
            Self::hpcc100g()
        } else {
            Self::paper40g()
        }
    }
}

/// Which counter produced an increase event.
#[derive(Clone, Copy)]
enum Counter {
    Byte,
    Time,
}

/// The DCQCN reaction point of one session.
#[derive(Clone, Debug)]
pub struct Dcqcn {
    params: DcqcnParams,
    link: f64,
    min: f64,
    /// Whether a CNP has limited the rate and it has not recovered yet.
    limited: bool,
    /// R_C, the current rate.
    rc: f64,
    /// R_T, the target rate fast recovery converges to.
    rt: f64,
    alpha: f64,
    /// Bytes sent since the last byte-counter event.
    bytes: u64,
    byte_stage: u64,
    time_stage: u64,
    next_alpha_at: Instant,
    next_increase_at: Instant,
}

impl Dcqcn {
    /// A reaction point for a flow on a `link_bps` link, at line rate.
    pub fn new(params: DcqcnParams, link_bps: u64, now: Instant) -> Self {
        let link = link_bps.max(1) as f64;
        Dcqcn {
            params,
            link,
            min: (params.min_rate_bps as f64).min(link),
            limited: false,
            rc: link,
            rt: link,
            alpha: 1.0,
            bytes: 0,
            byte_stage: 0,
            time_stage: 0,
            next_alpha_at: now,
            next_increase_at: now,
        }
    }

    /// The current rate R_C in bits per second.
    pub fn rate_bps(&self) -> u64 {
        self.rc.round() as u64
    }

    /// The target rate R_T in bits per second.
    #[cfg(test)]
    pub fn target_rate_bps(&self) -> u64 {
        self.rt.round() as u64
    }

    /// The congestion estimate alpha, in [0, 1].
    #[cfg(test)]
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Whether the flow is rate limited (a CNP came and the rate has not
    /// recovered to the link rate since).
    #[cfg(test)]
    pub fn is_limited(&self) -> bool {
        self.limited
    }

    /// A CNP arrived: remember the rate as the target, cut by alpha/2, raise
    /// alpha, and restart both counters and timers (paper §3.1).
    pub fn on_cnp(&mut self, now: Instant) {
        self.advance(now);
        // Unclamped: a cut before any timer increase keeps the old target.
        if self.params.clamp_target || !self.limited || self.time_stage > 0 {
            self.rt = self.rc;
        }
        self.limited = true;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(self.min);
        self.alpha = (1.0 - self.params.g) * self.alpha + self.params.g;
        self.bytes = 0;
        self.byte_stage = 0;
        self.time_stage = 0;
        self.next_alpha_at = now + self.params.alpha_timer;
        self.next_increase_at = now + self.params.increase_timer;
    }

    /// `bytes` were sent at `now`: runs the byte counter (after any timer
    /// periods that ended by `now`, to keep events in time order).
    pub fn on_sent(&mut self, now: Instant, bytes: usize) {
        self.advance(now);
        if !self.limited || self.params.byte_counter == 0 {
            return;
        }
        let b = self.params.byte_counter;
        self.bytes = self.bytes.saturating_add(bytes as u64);
        let events = self.bytes / b;
        self.bytes %= b;
        self.increase(events, Counter::Byte);
    }

    /// Runs the timers up to `now`: alpha decays once per alpha period that
    /// passed, and every increase period is an increase event. O(1) whatever
    /// the gap (at most `MAX_STEPS` single steps, then closed form).
    pub fn advance(&mut self, now: Instant) {
        if !self.limited {
            return;
        }
        let k = self.params.alpha_timer.as_nanos().max(1);
        if now >= self.next_alpha_at {
            let n = 1 + (now - self.next_alpha_at).as_nanos() / k;
            let n_i32 = i32::try_from(n).unwrap_or(i32::MAX);
            self.alpha *= (1.0 - self.params.g).powi(n_i32);
            self.next_alpha_at += Duration(n.saturating_mul(k));
        }
        let t = self.params.increase_timer.as_nanos().max(1);
        if now >= self.next_increase_at {
            let n = 1 + (now - self.next_increase_at).as_nanos() / t;
            self.next_increase_at += Duration(n.saturating_mul(t));
            self.increase(n, Counter::Time);
        }
    }

    /// Applies `n` increase events of `counter`.
    fn increase(&mut self, n: u64, counter: Counter) {
        let steps = n.min(MAX_STEPS);
        for _ in 0..steps {
            if !self.limited {
                return;
            }
            let own = self.stage_mut(counter);
            *own += 1;
            let inc = self.step_increment(self.byte_stage, self.time_stage);
            self.rt = (self.rt + inc).min(self.link);
            self.rc = ((self.rt + self.rc) / 2.0).min(self.link);
            self.release_at_link();
        }
        if self.limited && n > steps {
            self.jump(n - steps, counter);
        }
    }

    /// R_T's increase for an event leaving the counters at (`b`, `t`):
    /// none in fast recovery (while neither counter has passed F), R_HAI
    /// times how far the lesser counter is past F once both are (hyper
    /// increase, as in the authors' simulator), R_AI otherwise.
    fn step_increment(&self, b: u64, t: u64) -> f64 {
        let f = self.fast_recovery();
        if self.params.byte_counter == 0 {
            // Timer only (Mellanox): F events of fast recovery, one of
            // additive increase, then R_HAI each.
            let t = b.max(t); // the byte stage stays 0
            return match t {
                _ if t <= f => 0.0,
                _ if t == f + 1 => self.params.rai_bps as f64,
                _ => self.params.rhai_bps as f64,
            };
        }
        if b.max(t) <= f {
            0.0
        } else if b.min(t) > f {
            self.params.rhai_bps as f64 * (b.min(t) - f) as f64
        } else {
            self.params.rai_bps as f64
        }
    }

    /// Applies `n` more events of `counter` in closed form. This counter is
    /// past F by now (F < [`MAX_STEPS`]), so an event at stage s adds R_AI
    /// while the other counter is not past F, else R_HAI * (min(s, other) -
    /// F): a ramp up to the other counter's stage, then a plateau. R_C trails
    /// R_T by the lag a halving average keeps behind a ramp (exact for a
    /// constant step, within one step otherwise). If R_T reaches the link
    /// rate, the flow is released at once, a few periods early.
    fn jump(&mut self, n: u64, counter: Counter) {
        let f = self.fast_recovery();
        let own = *self.stage_mut(counter);
        let end = own.saturating_add(n);
        *self.stage_mut(counter) = end;
        let other = match counter {
            Counter::Byte => self.time_stage,
            Counter::Time => self.byte_stage,
        };
        let rhai = self.params.rhai_bps as f64;
        let total = if self.params.byte_counter == 0 {
            // Timer only: at most one additive step (stage F + 1), then R_HAI.
            let ai = u64::from(own <= f && f < end);
            let hai = end - own.max(f + 1);
            self.params.rai_bps as f64 * ai as f64 + rhai * hai as f64
        } else if other <= f {
            self.params.rai_bps as f64 * n as f64
        } else {
            let hi = end.min(other); // the ramp: stages own+1 ..= hi
            let ramp = if hi > own {
                let (a, b) = ((own + 1 - f) as f64, (hi - f) as f64);
                (a + b) * (b - a + 1.0) / 2.0
            } else {
                0.0
            };
            let plateau = (end - hi.max(own)) as f64 * (other - f) as f64;
            rhai * (ramp + plateau)
        };
        let last = self.step_increment(end, other);
        let lag0 = self.rt - self.rc;
        self.rt += total;
        if self.rt >= self.link {
            self.rc = self.link;
            self.release_at_link();
            return;
        }
        let decay = 0.5f64.powi(i32::try_from(n).unwrap_or(i32::MAX));
        self.rc = self.rt - (last * (1.0 - decay) + lag0 * decay);
    }

    /// F, capped below [`MAX_STEPS`] so that [`Dcqcn::jump`] never starts
    /// inside fast recovery.
    fn fast_recovery(&self) -> u64 {
        u64::from(self.params.fast_recovery_steps).min(MAX_STEPS - 1)
    }

    fn stage_mut(&mut self, counter: Counter) -> &mut u64 {
        match counter {
            Counter::Byte => &mut self.byte_stage,
            Counter::Time => &mut self.time_stage,
        }
    }

    /// Once R_C is within 1 bit/s of the link rate the flow is back at line
    /// rate: release the limiter and forget this congestion episode.
    fn release_at_link(&mut self) {
        if self.link - self.rc < 1.0 {
            *self = Dcqcn::new(self.params, self.link as u64, self.next_increase_at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINK: u64 = 40_000_000_000;
    const G: u64 = 1_000_000_000;
    const M: u64 = 1_000_000;

    fn at_us(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000)
    }

    /// Two CNPs 50 us apart: R_T = 20G (the rate after the first), R_C = 10G.
    fn twice_cut(p: DcqcnParams) -> Dcqcn {
        let mut d = Dcqcn::new(p, LINK, at_us(0));
        d.on_cnp(at_us(0));
        d.on_cnp(at_us(50));
        assert_eq!((d.rate_bps(), d.target_rate_bps()), (10 * G, 20 * G));
        d
    }

    #[test]
    fn cnps_cut_by_half_alpha_and_raise_alpha_toward_one() {
        let p = DcqcnParams::default();
        let mut d = Dcqcn::new(p, LINK, at_us(0));
        assert!(!d.is_limited());
        d.on_cnp(at_us(0));
        let first = (d.rate_bps(), d.target_rate_bps(), d.alpha());
        assert_eq!(first, (LINK / 2, LINK, 1.0), "alpha = 1 halves the rate");
        // Without CNPs alpha decays once per full 55 us period.
        d.advance(at_us(54));
        assert_eq!(d.alpha(), 1.0);
        d.advance(at_us(55));
        assert_eq!(d.alpha(), 1.0 - p.g);
        d.advance(at_us(55 * 20 + 3));
        assert!((d.alpha() - (1.0 - p.g).powi(20)).abs() < 1e-12);
        let mut now = 55 * 20 + 3;
        for _ in 0..100 {
            let (rate, alpha) = (d.rate_bps() as f64, d.alpha());
            d.on_cnp(at_us(now));
            let want = (rate * (1.0 - alpha / 2.0)).max(p.min_rate_bps as f64);
            assert!((d.rate_bps() as f64 - want).abs() <= 1.0);
            assert!((d.alpha() - ((1.0 - p.g) * alpha + p.g)).abs() < 1e-12);
            assert!(d.alpha() > alpha && d.alpha() < 1.0);
            now += CNP_INTERVAL.as_nanos() / 1_000;
        }
        assert_eq!(d.rate_bps(), p.min_rate_bps, "never below the floor");
    }

    #[test]
    fn timer_recovers_to_target_then_beyond_up_to_link() {
        let mut d = twice_cut(DcqcnParams::default());
        let mut now = 50;
        for k in 1..=5 {
            // Fast recovery: R_C halves its distance to R_T, R_T stays.
            now += 55;
            d.advance(at_us(now));
            assert_eq!(d.target_rate_bps(), 20 * G);
            assert_eq!(d.rate_bps(), 20 * G - ((10 * G) >> k));
        }
        let mut prev = d.rate_bps();
        for k in 1.. {
            // Additive increase carries R_T past the old target, to the link.
            now += 55;
            d.advance(at_us(now));
            if k <= 10 {
                assert_eq!(d.target_rate_bps(), 20 * G + k * 40 * M);
            }
            assert!(d.rate_bps() > prev || d.rate_bps() == LINK);
            prev = d.rate_bps();
            if !d.is_limited() {
                break;
            }
            assert!(k < 2_000, "never recovered");
        }
        assert_eq!((d.rate_bps(), d.alpha()), (LINK, 1.0), "released");
        d.on_cnp(at_us(now));
        assert_eq!(d.rate_bps(), LINK / 2, "a new episode starts afresh");
    }

    #[test]
    fn byte_counter_drives_increases_and_both_counters_hyper_increase() {
        let b = DcqcnParams::default().byte_counter as usize;
        let mut d = twice_cut(DcqcnParams::default());
        let now = at_us(50);
        d.on_sent(now, b / 2);
        assert_eq!(d.rate_bps(), 10 * G, "half a byte counter is no event");
        d.on_sent(now, b / 2);
        assert_eq!(d.rate_bps(), 15 * G, "fast recovery");
        for _ in 2..=5 {
            d.on_sent(now, b);
        }
        assert_eq!(d.target_rate_bps(), 20 * G);
        d.on_sent(now, b); // stages (6, 0): additive
        assert_eq!(d.target_rate_bps(), 20 * G + 40 * M);
        d.advance(at_us(50 + 55 * 5)); // (6, 1..=5): additive
        assert_eq!(d.target_rate_bps(), 20 * G + 6 * 40 * M);
        d.advance(at_us(50 + 55 * 7)); // (6, 6..=7): R_HAI * (6 - F)
        assert_eq!(d.target_rate_bps(), 20 * G + 6 * 40 * M + 2 * 200 * M);
        d.on_sent(at_us(50 + 55 * 7), b); // (7, 7): R_HAI * (7 - F)
        assert_eq!(d.target_rate_bps(), 20 * G + 6 * 40 * M + 4 * 200 * M);
    }

    #[test]
    fn a_long_gap_jumps_like_stepping() {
        // Timer only (additive), then with the byte counter far ahead (a
        // hyper ramp; a small R_HAI keeps R_T below the link rate).
        let hyper = DcqcnParams {
            rhai_bps: M,
            ..DcqcnParams::default()
        };
        let cases = [(DcqcnParams::default(), 0, 300, 20 * G + 295 * 40 * M)];
        let ramp = 20 * G + 100 * 40 * M + (75 * 76 / 2) * M;
        for (p, sends, periods, want) in cases.into_iter().chain([(hyper, 100, 80, ramp)]) {
            let mut stepped = twice_cut(p);
            for _ in 0..sends {
                stepped.on_sent(at_us(50), p.byte_counter as usize);
            }
            let mut jumped = stepped.clone();
            for k in 1..=periods {
                stepped.advance(at_us(50 + 55 * k));
            }
            jumped.advance(at_us(50 + 55 * periods));
            assert_eq!(stepped.target_rate_bps(), want);
            assert_eq!(jumped.target_rate_bps(), want);
            assert!(stepped.rate_bps().abs_diff(jumped.rate_bps()) <= 2 * M);
            assert!((stepped.alpha() - jumped.alpha()).abs() < 1e-9);
        }
    }

    #[test]
    fn a_huge_gap_lands_at_link_rate_in_o1() {
        let mut d = twice_cut(DcqcnParams::default());
        // 11 days of 55 us periods: a per-period loop would not finish.
        d.advance(Instant::from_nanos(1_000_000_000_000_000));
        assert!(!d.is_limited());
        assert_eq!(d.rate_bps(), LINK);
        let mut d = twice_cut(DcqcnParams::default());
        d.on_sent(at_us(60), usize::MAX);
        assert_eq!(d.rate_bps(), LINK);
    }
}
