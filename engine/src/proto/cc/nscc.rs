//! NSCC, Ultra Ethernet's Network Signal-based Congestion Control (the
//! sender's window controller, from SMaRTT), as the UEC specification
//! authors' simulator runs it: uet-htsim (github ultraethernet/uet-htsim,
//! commit 40ccb05, Aug 2025), `htsim/sim/uec.cpp`, functions
//! `initNsccParams`, `initNscc`, `updateCwndOnAck_NSCC`,
//! `updateCwndOnNack_NSCC`, `quick_adapt`, `fair_increase`,
//! `proportional_increase`, `fast_increase`, `multiplicative_decrease`,
//! `fulfill_adjustment`, `update_base_rtt` and `update_delay`.
//!
//! Every acknowledgement falls in one of four quadrants of (queueing delay
//! above or below the target) x (ECN echoed or not):
//!
//! | | no ECN | ECN |
//! |---|---|---|
//! | delay >= target | fair increase | multiplicative decrease |
//! | delay < target | proportional (or fast) increase | nothing (the spec switches path) |
//!
//! Increases are accumulated and applied once per adjustment period
//! (`fulfill_adjustment`); quick adapt cuts the window to what was actually
//! delivered in the last period on a loss, a trim NACK or an extreme delay.
//!
//! **How the engine applies a window.** The engine paces each client
//! session at a rate (`RateLimit` on the timing wheel) and bounds its
//! packets in flight by receiver-granted credits. NSCC's window becomes the
//! rate `cwnd / base_rtt` (capped at the link rate): the rate at which a
//! window of `cwnd` bytes is sent once per base round trip. A byte count
//! of the session in flight, checked against the window on every send and
//! answer, would add a second in-flight gate beside the credits; the rate
//! reuses the pacer, so the hot path stays as it is for Timely and DCQCN
//! (one multiply-divide per update, no allocation, no scan). The window
//! starts at 1.5 BDP (`initNscc`), so an unmarked session is at link rate
//! and not paced at all.
//!
//! **One change from the reference** (docs/configs.md, "NSCC"): quick adapt
//! on delay alone (a sample above four targets) requires an ECN echo in the
//! same period. On a host the delay of a sample also holds the sender's
//! own burst and the hosts' processing (a stalled vCPU returns answers
//! tens of microseconds late); uet-htsim has neither, and an idle link
//! marks nothing, so without the ECN gate a host stall on an idle link
//! would cut the window to one period's delivery. Loss and trim NACKs
//! trigger it as in the reference.

use crate::time::{Duration, Instant};

/// The reference network the spec scales its constants from: 100 Gb/s
/// (`initNsccParams`, `_reference_network_linkspeed`).
const REFERENCE_LINK_BPS: f64 = 100e9;
/// ... and 12 us (`_reference_network_rtt`).
const REFERENCE_RTT_NS: f64 = 12_000.0;
/// Below this delay an acknowledgement counts towards fast increase
/// (`fast_increase`: `delay < timeFromUs(1u)`).
const FAST_INCREASE_DELAY_NS: f64 = 1_000.0;

/// `x.round() as u64`, without `f64::round`: that is a call into libm
/// (no `roundsd` before SSE4.1, which the build does not assume), and
/// this runs on every acknowledgement. Exact for every `x`: below 2^53 the
/// truncation and the fraction `x - t` are exact, so the half-way test is
/// `round`'s (ties away from zero); above, every `f64` is an integer;
/// negatives and NaN give 0 both ways, and beyond `u64::MAX` the maximum
/// (`as` saturates).
#[inline]
fn round_to_u64(x: f64) -> u64 {
    let t = x as u64;
    t.saturating_add(u64::from(x - t as f64 >= 0.5))
}

/// NSCC's constants, derived from the link rate, the network's unloaded
/// RTT and the packet size as `initNsccParams` derives them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NsccParams {
    /// The network's maximum unloaded RTT (`_network_rtt`; `main_uec.cpp`
    /// passes `network_max_unloaded_rtt`), in ns.
    pub network_rtt_ns: f64,
    /// Target queueing delay: the network RTT, or 0.75 of it when the
    /// fabric trims (`initNsccParams`, `target_Qdelay` 0 on the command
    /// line, main_uec.cpp's default), in ns.
    pub target_ns: f64,
    /// Quick adapt fires on delay above this: 4 targets (`_qa_threshold`).
    pub qa_threshold_ns: f64,
    /// Quick adapt fires only if the period delivered less than
    /// `maxwnd >> qa_gate`: 3 (`_qa_gate` default when the flag is unset).
    pub qa_gate: u32,
    /// Proportional-increase gain: `4 mss a b / target`
    /// (`_alpha`, bytes per ns here, per ps in htsim).
    pub alpha: f64,
    /// Fair-increase gain: `5 mss a` (`_fi`).
    pub fi: f64,
    /// Fast-increase fraction of acked bytes: `0.25 a` (`_fi_scale`).
    pub fi_scale: f64,
    /// Additive step once per adjustment period: `0.15 mss a` (`_eta`).
    pub eta: f64,
    /// Multiplicative-decrease gain: 0.8 (`_gamma`); one cut never below
    /// half the window.
    pub gamma: f64,
    /// EWMA weight of a delay sample: 0.0125 (`_delay_alpha`).
    pub delay_alpha: f64,
    /// Increases are applied at least this often: the network RTT
    /// (`_adjust_period_threshold`), in ns.
    pub adjust_period_ns: f64,
    /// ... or once this many bytes were acknowledged: 8 MTU
    /// (`_adjust_bytes_threshold`).
    pub adjust_bytes: f64,
    /// The window's floor: one MTU (`_min_cwnd`).
    pub min_cwnd: f64,
    /// Payload bytes of a full packet (`_mss`): what one NACK takes off.
    pub mss: f64,
    /// Quick adapt on delay alone needs an ECN echo in the same period
    /// (this engine's change, see the module doc).
    pub qa_delay_needs_ecn: bool,
}

impl NsccParams {
    /// The constants for a `link_bps` link whose unloaded RTT is
    /// `network_rtt`, with `mtu`-byte frames carrying `mss` bytes of payload,
    /// on a fabric that trims (`trimming`) or not.
    pub fn derive(
        link_bps: u64,
        network_rtt: Duration,
        mtu: usize,
        mss: usize,
        trimming: bool,
    ) -> Self {
        let rtt = network_rtt.as_nanos().max(1_000) as f64;
        let link = link_bps.max(1) as f64;
        let target = if trimming { 0.75 * rtt } else { rtt };
        // a: this network's BDP over the reference's (100 Gb/s x 12 us);
        // b: the target over the reference RTT.
        let a = (link * rtt) / (REFERENCE_LINK_BPS * REFERENCE_RTT_NS);
        let b = target / REFERENCE_RTT_NS;
        let mss = mss.max(1) as f64;
        NsccParams {
            network_rtt_ns: rtt,
            target_ns: target,
            qa_threshold_ns: 4.0 * target,
            qa_gate: 3,
            alpha: 4.0 * mss * a * b / target,
            fi: 5.0 * mss * a,
            fi_scale: 0.25 * a,
            eta: 0.15 * mss * a,
            gamma: 0.8,
            delay_alpha: 0.0125,
            adjust_period_ns: rtt,
            adjust_bytes: 8.0 * mtu as f64,
            min_cwnd: mtu.max(1) as f64,
            mss,
            qa_delay_needs_ecn: true,
        }
    }
}

/// One session's NSCC window (client side: acknowledgements are the
/// answers to its request packets).
#[derive(Clone, Debug)]
pub struct Nscc {
    p: NsccParams,
    link_bps: f64,
    /// The smallest RTT seen (`_base_rtt`, `update_base_rtt`), in ns.
    base_rtt_ns: f64,
    /// 1.5 BDP at the base RTT (`_maxwnd`).
    maxwnd: f64,
    cwnd: f64,
    /// EWMA of queueing delay (`_avg_delay`), in ns.
    avg_delay_ns: f64,
    /// Increase accumulated until the next adjustment (`_inc_bytes`, bytes^2).
    inc_bytes: f64,
    /// Bytes acknowledged since the last adjustment (`_received_bytes`).
    received_bytes: f64,
    /// Bytes acknowledged in this quick-adapt period (`_achieved_bytes`).
    achieved_bytes: f64,
    /// Fast increase: bytes acknowledged at near-zero delay in a row.
    fi_count: f64,
    increasing: bool,
    /// End of the quick-adapt period; `None` until the first ack.
    qa_end: Option<Instant>,
    /// A NACK asked for quick adapt (`_trigger_qa`).
    trigger_qa: bool,
    /// Bytes to skip after a quick adapt (`_bytes_to_ignore`,
    /// `_bytes_ignored`): the window's worth already in flight.
    bytes_to_ignore: f64,
    bytes_ignored: f64,
    last_dec: Option<Instant>,
    last_adjust: Option<Instant>,
    /// Acknowledgements up to this time count as ECN-echoed (see
    /// [`Nscc::on_ecn`]).
    ecn_until: Option<Instant>,
    /// An ECN echo arrived in this quick-adapt period.
    ecn_in_period: bool,
    /// [`Nscc::rate_bps`], kept: the pacer reads it on every packet sent
    /// (twice) and every answer (twice), but it moves only with the window
    /// or the base RTT, that is on an ACK or a NACK. Computed there (a
    /// float division and a `round`, a libm call) instead of per read.
    rate_bps: u64,
}

/// What an acknowledgement did to the window (for tests and counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NsccStep {
    /// Quick adapt cut the window, or its aftermath skipped the ack.
    QuickAdapt,
    /// No ECN, delay at or above target.
    FairIncrease,
    /// No ECN, delay below target.
    ProportionalIncrease,
    /// ECN, delay at or above target.
    MultiplicativeDecrease,
    /// ECN, delay below target: no change.
    Hold,
}

impl Nscc {
    /// A window for a session on a `link_bps` link whose base RTT is
    /// `base_rtt`, starting at its maximum, 1.5 BDP (`initNscc` with
    /// `cwnd` 0).
    pub fn new(p: NsccParams, link_bps: u64, base_rtt: Duration) -> Self {
        let base = base_rtt.as_nanos().max(1_000) as f64;
        let link = link_bps.max(1) as f64;
        let maxwnd = (1.5 * link * base / 8e9).max(p.min_cwnd);
        let mut n = Nscc {
            p,
            link_bps: link,
            base_rtt_ns: base,
            maxwnd,
            cwnd: maxwnd,
            avg_delay_ns: 0.0,
            inc_bytes: 0.0,
            received_bytes: 0.0,
            achieved_bytes: 0.0,
            fi_count: 0.0,
            increasing: false,
            qa_end: None,
            trigger_qa: false,
            bytes_to_ignore: 0.0,
            bytes_ignored: 0.0,
            last_dec: None,
            last_adjust: None,
            ecn_until: None,
            ecn_in_period: false,
            rate_bps: 0,
        };
        n.rate_bps = n.window_rate();
        n
    }

    /// The window in bytes.
    #[cfg(test)]
    pub fn cwnd(&self) -> u64 {
        self.cwnd as u64
    }

    /// The window's ceiling in bytes (1.5 BDP at the base RTT).
    #[cfg(test)]
    pub fn max_cwnd(&self) -> u64 {
        self.maxwnd as u64
    }

    /// The rate the window allows: `cwnd / base_rtt`, at most the link.
    #[inline]
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// [`Nscc::rate_bps`] computed from the window, as each change of the
    /// window or the base RTT stores it.
    fn window_rate(&self) -> u64 {
        round_to_u64((self.cwnd * 8e9 / self.base_rtt_ns).min(self.link_bps))
    }

    /// A congestion notification at `now`: the acknowledgements of the
    /// next base RTT count as ECN-echoed. The engine has no ECN-echo bit
    /// per answer: the receiver sends one CNP per `cnp_interval` for the
    /// marks it sees (`proto/congestion.rs`), and the packets that crossed
    /// the marking queue with the marked one come back within a round trip.
    pub fn on_ecn(&mut self, now: Instant) {
        self.ecn_until = Some(now + Duration::from_nanos(self.base_rtt_ns as u64));
    }

    /// An acknowledgement at `now` of `acked` newly delivered bytes, with
    /// the RTT of the packet it answers if it has one (not resent).
    pub fn on_ack(&mut self, now: Instant, rtt: Option<Duration>, acked: usize) -> NsccStep {
        let step = self.ack(now, rtt, acked);
        self.rate_bps = self.window_rate();
        step
    }

    /// [`Nscc::on_ack`] but for the rate it leaves.
    fn ack(&mut self, now: Instant, rtt: Option<Duration>, acked: usize) -> NsccStep {
        let acked = acked as f64;
        let skip = self.ecn_until.is_some_and(|until| now <= until);
        self.ecn_in_period |= skip;
        self.achieved_bytes += acked;
        self.received_bytes += acked;
        if skip {
            self.bytes_ignored += acked;
        }
        // processAck: the base RTT is the smallest sample; the delay is
        // the sample above it, or the average when there is no sample.
        let delay = match rtt {
            Some(rtt) => {
                let raw = rtt.as_nanos() as f64;
                self.update_base_rtt(raw);
                let d = raw - self.base_rtt_ns;
                self.update_delay(d, skip);
                d
            }
            None => self.avg_delay_ns,
        };
        if self.quick_adapt(now, false, skip, delay) {
            return NsccStep::QuickAdapt;
        }
        let target = self.p.target_ns;
        let step = match (skip, delay >= target) {
            (false, true) => {
                self.inc_bytes += self.p.fi * acked;
                NsccStep::FairIncrease
            }
            (false, false) => {
                if !self.fast_increase(acked, delay) {
                    self.inc_bytes += self.p.alpha * acked * (target - delay);
                }
                NsccStep::ProportionalIncrease
            }
            (true, true) => {
                self.multiplicative_decrease(now);
                NsccStep::MultiplicativeDecrease
            }
            (true, false) => NsccStep::Hold,
        };
        self.bound();
        let period_over = self
            .last_adjust
            .is_none_or(|t| now.saturating_since(t).as_nanos() as f64 > self.p.adjust_period_ns);
        if self.received_bytes > self.p.adjust_bytes || period_over {
            self.fulfill_adjustment(now);
        }
        self.bound();
        step
    }

    /// A NACK at `now` for `packets` full packets (trimmed or lost):
    /// counts as a delay of one network RTT with ECN, asks for quick adapt
    /// and, unless it fires, takes their bytes off the window
    /// (`updateCwndOnNack_NSCC`).
    pub fn on_nack(&mut self, now: Instant, packets: usize) {
        let nacked = packets as f64 * self.p.mss;
        self.bytes_ignored += nacked;
        self.update_delay(self.p.network_rtt_ns, true);
        self.trigger_qa = true;
        if !self.quick_adapt(now, true, true, 0.0) {
            self.cwnd -= nacked;
            self.bound();
        }
        self.rate_bps = self.window_rate();
    }

    fn bound(&mut self) {
        self.cwnd = self.cwnd.clamp(self.p.min_cwnd, self.maxwnd);
    }

    fn update_base_rtt(&mut self, raw_ns: f64) {
        if raw_ns >= 1.0 && raw_ns < self.base_rtt_ns {
            self.base_rtt_ns = raw_ns;
            self.maxwnd = (1.5 * self.link_bps * raw_ns / 8e9).max(self.p.min_cwnd);
        }
    }

    /// `update_delay`: an unmarked sample above target pulls the average
    /// towards a quarter base RTT (a queue that marks nothing is not ours
    /// to fight); others enter the EWMA.
    fn update_delay(&mut self, delay_ns: f64, skip: bool) {
        let a = self.p.delay_alpha;
        let sample = if !skip && delay_ns > self.p.target_ns {
            0.25 * self.base_rtt_ns
        } else {
            delay_ns
        };
        self.avg_delay_ns = a * sample + (1.0 - a) * self.avg_delay_ns;
    }

    /// `quick_adapt`: once per period (base RTT + target), if the period
    /// saw a loss, a NACK or an extreme delay and delivered less than
    /// `maxwnd >> qa_gate`, the window becomes what was delivered; the
    /// acknowledgements of what was already in flight are then ignored.
    fn quick_adapt(&mut self, now: Instant, loss: bool, skip: bool, delay: f64) -> bool {
        let mut done = false;
        if self.bytes_ignored < self.bytes_to_ignore && skip {
            done = true;
        } else if self.qa_end.is_none_or(|end| now > end) {
            let extreme = delay > self.p.qa_threshold_ns
                && (self.ecn_in_period || !self.p.qa_delay_needs_ecn);
            let gate = self.maxwnd / f64::from(1u32 << self.p.qa_gate.min(31));
            if self.qa_end.is_some()
                && (self.trigger_qa || loss || extreme)
                && self.achieved_bytes < gate
            {
                // What is in flight now was sent at the old window: skip
                // its acknowledgements. The engine has no byte count in
                // flight; the window is its bound.
                self.bytes_to_ignore = self.cwnd;
                self.bytes_ignored = 0.0;
                self.cwnd = self.achieved_bytes.max(self.p.min_cwnd);
                self.trigger_qa = false;
                done = true;
            }
            self.achieved_bytes = 0.0;
            self.ecn_in_period = false;
            let period = self.base_rtt_ns + self.p.target_ns;
            self.qa_end = Some(now + Duration::from_nanos(period as u64));
        }
        if done {
            self.inc_bytes = 0.0;
            self.received_bytes = 0.0;
        }
        done
    }

    /// `fast_increase`: after a window's worth of acknowledgements at
    /// under 1 us of delay, the window grows by a fraction of every acked
    /// byte until the delay rises. Returns whether it applied.
    fn fast_increase(&mut self, acked: f64, delay: f64) -> bool {
        if delay < FAST_INCREASE_DELAY_NS {
            self.fi_count += acked;
            if self.fi_count > self.cwnd || self.increasing {
                self.cwnd += acked * self.p.fi_scale;
                self.increasing = true;
                return true;
            }
        } else {
            self.fi_count = 0.0;
        }
        self.increasing = false;
        false
    }

    /// `multiplicative_decrease`: at most once per base RTT, by
    /// `gamma * (avg - target) / avg` of the window, at most half.
    fn multiplicative_decrease(&mut self, now: Instant) {
        self.increasing = false;
        self.fi_count = 0.0;
        let avg = self.avg_delay_ns;
        if avg > self.p.target_ns {
            let due = self
                .last_dec
                .is_none_or(|t| now.saturating_since(t).as_nanos() as f64 > self.base_rtt_ns);
            if due {
                let f = (1.0 - self.p.gamma * (avg - self.p.target_ns) / avg).max(0.5);
                self.cwnd = (self.cwnd * f).max(self.p.min_cwnd);
                self.last_dec = Some(now);
            }
        }
    }

    /// `fulfill_adjustment`: the accumulated increase, divided by the
    /// window (so a window grows by about `fi` or `alpha * (target - delay)`
    /// bytes per window acknowledged), plus `eta` once per period.
    fn fulfill_adjustment(&mut self, now: Instant) {
        self.cwnd += self.inc_bytes / self.cwnd.max(1.0);
        let period_over = self
            .last_adjust
            .is_none_or(|t| now.saturating_since(t).as_nanos() as f64 >= self.p.adjust_period_ns);
        if period_over {
            self.cwnd += self.p.eta;
            self.last_adjust = Some(now);
        }
        self.inc_bytes = 0.0;
        self.received_bytes = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINK: u64 = 100_000_000_000;
    const MTU: usize = 4150;
    const MSS: usize = 4096;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    fn at_us(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000)
    }

    /// A 100 Gb/s, 12 us network (the spec's reference: a = b = 1).
    fn reference() -> Nscc {
        Nscc::new(
            NsccParams::derive(LINK, us(12), MTU, MSS, false),
            LINK,
            us(12),
        )
    }

    #[test]
    fn constants_scale_from_the_reference_network() {
        let p = NsccParams::derive(LINK, us(12), MTU, MSS, false);
        assert_eq!(p.target_ns, 12_000.0, "no trimming: target = network RTT");
        assert_eq!(p.qa_threshold_ns, 48_000.0);
        assert_eq!(p.fi, 5.0 * MSS as f64);
        assert!((p.eta - 0.15 * MSS as f64).abs() < 1e-9);
        assert!((p.alpha - 4.0 * MSS as f64 / 12_000.0).abs() < 1e-9);
        assert_eq!(p.adjust_bytes, 8.0 * MTU as f64);
        let t = NsccParams::derive(LINK, us(12), MTU, MSS, true);
        assert_eq!(t.target_ns, 9_000.0, "trimming: 0.75 network RTT");
        // 400 Gb/s: a = 4, every gain four times the reference's.
        let f = NsccParams::derive(4 * LINK, us(12), MTU, MSS, false);
        assert!((f.fi / p.fi - 4.0).abs() < 1e-9 && (f.fi_scale - 1.0).abs() < 1e-9);
    }

    #[test]
    fn starts_at_one_and_a_half_bdp_and_link_rate() {
        let n = reference();
        assert_eq!(n.max_cwnd(), 225_000, "1.5 x 100 Gb/s x 12 us");
        assert_eq!(n.cwnd(), n.max_cwnd());
        assert_eq!(
            n.rate_bps(),
            LINK,
            "1.5 BDP per base RTT is capped at the link"
        );
    }

    /// A window cut to `bytes` below the maximum by a first NACK (which
    /// only opens the quick-adapt period).
    fn cut_by(n: &mut Nscc, now: Instant, bytes: usize) {
        n.on_nack(now, bytes / MSS);
    }

    #[test]
    fn fair_increase_without_ecn_above_target() {
        let mut n = reference();
        cut_by(&mut n, at_us(1), 100_000 / MSS * MSS);
        let w0 = n.cwnd;
        assert_eq!(w0, 225_000.0 - (100_000 / MSS * MSS) as f64);
        // Acks at 20 us of delay (above the 12 us target). The first
        // adjusts at once (no adjustment yet): fi * acked / cwnd plus eta
        // for the period; the next when more than 8 MTU were acked.
        for i in 0..10 {
            let step = n.on_ack(at_us(2 + i), Some(us(32)), MTU);
            assert_eq!(step, NsccStep::FairIncrease);
        }
        let m = MTU as f64;
        let w1 = w0 + n.p.fi * m / w0 + n.p.eta;
        let want = w1 + n.p.fi * 9.0 * m / w1;
        assert!((n.cwnd - want).abs() < 1.0, "{} vs {want}", n.cwnd);
        assert!(n.rate_bps() < LINK, "below 1 BDP: paced");
    }

    #[test]
    fn proportional_increase_grows_more_the_further_below_target() {
        let grow = |delay_us: u64| {
            let mut n = reference();
            cut_by(&mut n, at_us(1), 100_000 / MSS * MSS);
            let w0 = n.cwnd;
            for i in 0..9 {
                let s = n.on_ack(at_us(2 + i), Some(us(12 + delay_us)), MTU);
                assert_eq!(s, NsccStep::ProportionalIncrease);
            }
            n.cwnd - w0
        };
        let (near, far) = (grow(10), grow(2));
        assert!(far > near && near > 0.0, "2 us: +{far}, 10 us: +{near}");
    }

    #[test]
    fn fast_increase_after_a_window_at_near_zero_delay() {
        let mut n = reference();
        cut_by(&mut n, at_us(1), 200_000 / MSS * MSS);
        let w0 = n.cwnd;
        let mut t = 2;
        // A window's worth of acks at zero delay arms fast increase.
        let mut acks = 0;
        while !n.increasing {
            n.on_ack(at_us(t), Some(us(12)), MTU);
            t += 1;
            acks += 1;
        }
        assert!(
            acks as f64 * MTU as f64 > w0,
            "armed after a window: {acks} acks"
        );
        let before = n.cwnd;
        n.on_ack(at_us(t), Some(us(12)), MTU);
        assert!(
            n.cwnd - before >= MTU as f64 * n.p.fi_scale,
            "grows by 0.25 a per acked byte"
        );
        assert!(n.cwnd > w0);
        // A delay of 1 us or more stops it.
        n.on_ack(at_us(t + 1), Some(us(14)), MTU);
        assert!(!n.increasing && n.fi_count == 0.0);
    }

    /// Feeds ECN-marked acks at `delay_us` until the delay average
    /// exceeds the target.
    fn marked_until_avg_above_target(n: &mut Nscc, delay_us: u64) -> u64 {
        let mut t = 0;
        while n.avg_delay_ns <= n.p.target_ns {
            t += 1;
            n.on_ecn(at_us(t));
            n.on_ack(at_us(t), Some(us(12 + delay_us)), MTU);
            assert!(t < 10_000);
        }
        t
    }

    #[test]
    fn multiplicative_decrease_with_ecn_above_target_once_per_base_rtt() {
        let mut n = reference();
        // 30 us of delay: above target, below the quick-adapt threshold.
        let t = marked_until_avg_above_target(&mut n, 30);
        let avg = n.avg_delay_ns;
        let w0 = n.cwnd;
        let now = at_us(t + 13); // more than a base RTT after the last cut
        n.on_ecn(now);
        assert_eq!(
            n.on_ack(now, Some(us(42)), MTU),
            NsccStep::MultiplicativeDecrease
        );
        let avg1 = n.avg_delay_ns;
        assert!(avg1 > avg);
        let f = (1.0 - 0.8 * (avg1 - 12_000.0) / avg1).max(0.5);
        // (plus eta, if the ack closed an adjustment period)
        let d = n.cwnd - w0 * f;
        assert!(
            (-1.0..=n.p.eta + 1.0).contains(&d),
            "{} vs {}",
            n.cwnd,
            w0 * f
        );
        // Within the same base RTT: no second cut.
        let w1 = n.cwnd;
        n.on_ack(now + us(5), Some(us(42)), MTU);
        assert_eq!(n.cwnd, w1);
    }

    #[test]
    fn one_decrease_never_halves_more_than_once() {
        let mut n = reference();
        n.avg_delay_ns = 1e9; // a huge average: 1 - 0.8 * ~1 = 0.2, floored at 0.5
        let w0 = n.cwnd;
        n.multiplicative_decrease(at_us(100));
        assert_eq!(n.cwnd, w0 * 0.5);
    }

    #[test]
    fn ecn_below_target_holds_the_window() {
        let mut n = reference();
        cut_by(&mut n, at_us(1), 100_000 / MSS * MSS);
        let w0 = n.cwnd;
        n.on_ecn(at_us(2));
        assert_eq!(n.on_ack(at_us(2), Some(us(15)), MTU), NsccStep::Hold);
        // No increase or decrease of its own (the spec switches path); the
        // first adjustment period's eta is all that moves.
        assert!((n.cwnd - w0 - n.p.eta).abs() < 1e-6, "{} vs {w0}", n.cwnd);
    }

    #[test]
    fn quick_adapt_on_a_nack_sets_the_window_to_what_was_delivered() {
        let mut n = reference();
        n.on_ack(at_us(1), Some(us(12)), MTU); // opens the period (ends at 25 us)
        for i in 0..3 {
            n.on_ack(at_us(30 + i), Some(us(12)), MTU); // the first closes it
        }
        // The period from 30 to 54 us delivered 2 MTU < maxwnd / 8 (the
        // ack that closes a period counts in the one before, as in htsim).
        n.on_nack(at_us(60), 1);
        assert_eq!(n.cwnd, 2.0 * MTU as f64);
        // The window in flight before the cut is not acked into it again.
        let w = n.cwnd;
        n.on_ecn(at_us(61));
        assert_eq!(n.on_ack(at_us(61), Some(us(12)), MTU), NsccStep::QuickAdapt);
        assert_eq!(n.cwnd, w);
    }

    #[test]
    fn quick_adapt_on_delay_alone_needs_ecn() {
        // An idle link stalls (a descheduled host): one sample 100 us late,
        // nothing marked. The reference would cut to one period's delivery;
        // here the window stays.
        let run = |p: NsccParams, mark: bool| {
            let mut n = Nscc::new(p, LINK, us(12));
            n.on_ack(at_us(1), Some(us(12)), MTU); // opens a period to 25 us
            if mark {
                n.on_ecn(at_us(9)); // marks the ack at 10 us, not the one at 30
            }
            n.on_ack(at_us(10), Some(us(20)), MTU);
            n.on_ack(at_us(30), Some(us(112)), MTU); // 100 us late, closes it
            n
        };
        let p = NsccParams::derive(LINK, us(12), MTU, MSS, false);
        let n = run(p, false);
        assert_eq!(n.cwnd(), n.max_cwnd(), "no ECN: no cut on delay");
        assert_eq!(n.rate_bps(), LINK);
        // The same with a mark in the period: quick adapt.
        assert_eq!(
            run(p, true).cwnd,
            2.0 * MTU as f64,
            "cut to the 2 MTU delivered"
        );
        // The reference's rule, without the gate.
        let reference_rule = NsccParams {
            qa_delay_needs_ecn: false,
            ..p
        };
        assert_eq!(run(reference_rule, false).cwnd, 2.0 * MTU as f64);
    }

    #[test]
    fn an_idle_link_without_marks_stays_at_line_rate() {
        // Samples anywhere from the base RTT to 3x target above it, no ECN:
        // only increases, the window at its ceiling.
        let mut n = reference();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            n.on_ack(at_us(i), Some(us(12 + x % 36)), MTU);
            assert_eq!(n.rate_bps(), LINK, "sample {i}");
        }
    }

    #[test]
    fn rounding_matches_f64_round() {
        let cases = [
            0.0,
            0.49999999999999994,
            0.5,
            1.5,
            2.5,
            -0.7,
            f64::NAN,
            4_503_599_627_370_495.5, // 2^52 - 0.5
            9_007_199_254_740_993.0, // above 2^53
            1e20,
            123_456_789.499_999_99,
            99_999_999_999.5,
        ];
        for x in cases {
            assert_eq!(round_to_u64(x), x.round() as u64, "{x}");
        }
        let mut v: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..100_000 {
            v ^= v << 13;
            v ^= v >> 7;
            v ^= v << 17;
            let x = (v >> 11) as f64 / (1u64 << 53) as f64 * 4e11;
            assert_eq!(round_to_u64(x), x.round() as u64, "{x}");
        }
    }

    #[test]
    fn window_stays_within_its_bounds() {
        let mut n = reference();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut now = 0;
        for _ in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now += x % 7;
            match x % 5 {
                0 => n.on_nack(at_us(now), (x % 3) as usize),
                1 => n.on_ecn(at_us(now)),
                _ => {
                    let rtt = (!x.is_multiple_of(4)).then(|| us(5 + x % 200));
                    n.on_ack(at_us(now), rtt, MTU);
                }
            }
            assert!(n.cwnd >= MTU as f64 && n.cwnd <= n.maxwnd, "{}", n.cwnd);
            assert!(n.rate_bps() <= LINK && n.rate_bps() > 0);
            // The kept rate is the window's, whatever moved it.
            assert_eq!(n.rate_bps(), n.window_rate());
        }
        // A smaller RTT sample lowers the base RTT and the ceiling with it.
        let mut n = reference();
        n.on_ack(at_us(1), Some(us(8)), MTU);
        assert_eq!(n.max_cwnd(), 150_000);
        assert!(n.cwnd() <= 150_000);
    }
}
