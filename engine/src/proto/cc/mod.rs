//! Congestion control for the client side of a session, as eRPC does it:
//! the client owns the rate of the requests it sends, and the server side
//! needs none (its responses are paced by the client's credits).
//!
//! Three parts, all pure state machines driven by the caller's clock:
//!
//! - [`RateControl`]: one session's rate computation, by Timely (RTT
//!   gradient, eRPC's choice), DCQCN (ECN-driven CNPs), NSCC (Ultra
//!   Ethernet's delay and ECN window, applied as a rate) or none;
//! - [`RateLimit`]: turns that rate into the earliest time the session may
//!   send its next frame;
//! - [`TimingWheel`]: holds the sessions that must wait until that time,
//!   as eRPC's Carousel wheel does, so the transmit path only looks at
//!   sessions that may send.

mod dcqcn;
mod nscc;
mod timely;
mod wheel;

pub use dcqcn::{Dcqcn, DcqcnParams};
pub use nscc::{Nscc, NsccParams};
pub use timely::{Timely, TimelyParams};
pub use wheel::TimingWheel;

use crate::time::{Duration, Instant};

/// Which congestion control a session runs (`transport.cc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CcKind {
    /// No rate control: send whenever credits allow.
    #[default]
    None,
    /// Timely, with eRPC's parameters.
    Timely,
    /// DCQCN's reaction point, with the paper's parameters.
    Dcqcn,
    /// NSCC, Ultra Ethernet's sender window on delay and ECN, with the
    /// constants uet-htsim derives from the link rate and base RTT.
    Nscc,
}

impl CcKind {
    /// The name in the config file and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            CcKind::None => "none",
            CcKind::Timely => "timely",
            CcKind::Dcqcn => "dcqcn",
            CcKind::Nscc => "nscc",
        }
    }
}

/// Per-session pacing: the earliest time the next frame may leave.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimit {
    /// When the session may send next.
    pub next_send_at: Instant,
    /// The sub-nanosecond part of the last gap, in units of 1/rate ns,
    /// carried into the next gap so that back-to-back frames average the
    /// exact rate (small frames at high rates are a few ns each, where
    /// rounding alone would be off by percents).
    carry: u64,
}

impl RateLimit {
    /// A limiter that lets the first frame go at `now`.
    pub fn new(now: Instant) -> Self {
        RateLimit {
            next_send_at: now,
            carry: 0,
        }
    }

    /// A frame of `frame_bytes` left at `now` at `rate_bps` (0 counts as
    /// 1 bit/s): the next one may leave one serialisation time later,
    /// counted from `next_send_at` while the session is at most `slack`
    /// behind its schedule, and from `now - slack` when it is further
    /// behind.
    ///
    /// The slack is what keeps the rate exact: a session that waits on a
    /// timing wheel is released up to one wheel grain after its time, and
    /// counting its next gap from the late release (as an earlier version
    /// did) loses that lateness on every frame, which capped a session at
    /// about one frame per grain (12 Gb/s at a 1 us grain). Counted from the
    /// schedule, the late frames go out back to back until the session is
    /// on time again. Idle time earns no burst beyond `slack`: a session
    /// that had nothing to send for longer restarts its schedule at most
    /// `slack` in the past.
    pub fn on_send(&mut self, now: Instant, frame_bytes: usize, rate_bps: u64, slack: Duration) {
        let rate = rate_bps.max(1);
        let earliest = Instant(now.as_nanos().saturating_sub(slack.as_nanos()));
        let from = if earliest > self.next_send_at {
            self.carry = 0;
            earliest
        } else {
            self.next_send_at
        };
        let num = frame_bytes as u128 * 8 * 1_000_000_000 + u128::from(self.carry);
        // A frame's bits times 1e9 fit 64 bits up to 2.3 MB frames: then
        // one 64-bit `div` gives quotient and remainder inline, where the
        // u128 division is a call into compiler-rt (`__udivti3`, a dozen
        // instructions and a call per paced packet). Same results.
        let (gap, carry) = match u64::try_from(num) {
            Ok(n) => (n / rate, n % rate),
            Err(_) => (
                u64::try_from(num / u128::from(rate)).unwrap_or(u64::MAX),
                (num % u128::from(rate)) as u64,
            ),
        };
        self.carry = carry;
        self.next_send_at = from + Duration::from_nanos(gap);
    }

    /// Whether the session may send at `now`.
    #[inline]
    pub fn ready(&self, now: Instant) -> bool {
        now >= self.next_send_at
    }
}

/// One session's rate computation.
#[derive(Clone, Debug)]
pub enum RateControl {
    /// Unlimited.
    None,
    /// Timely, fed with RTT samples.
    Timely(Timely),
    /// DCQCN, fed with CNPs, sent bytes and the passing of time.
    Dcqcn(Dcqcn),
    /// NSCC, fed with acknowledged bytes, their RTTs and ECN echoes.
    Nscc(Nscc),
}

impl RateControl {
    /// A controller of `kind` for a `link_bps` link, starting at link rate:
    /// Timely with eRPC's constants and `base_rtt` as its minimum RTT (the
    /// gradient's normaliser), DCQCN with `dcqcn`, NSCC with the constants
    /// derived from the link, `base_rtt` and `mtu`-byte frames of `mss`
    /// bytes of payload (no trimming: the target is the base RTT).
    pub fn new(
        kind: CcKind,
        link_bps: u64,
        now: Instant,
        base_rtt: Duration,
        dcqcn: DcqcnParams,
        (mtu, mss): (usize, usize),
    ) -> Self {
        match kind {
            CcKind::None => RateControl::None,
            CcKind::Timely => {
                let p = TimelyParams::with_min_rtt(base_rtt);
                RateControl::Timely(Timely::new(p, link_bps))
            }
            CcKind::Dcqcn => RateControl::Dcqcn(Dcqcn::new(dcqcn, link_bps, now)),
            CcKind::Nscc => {
                let p = NsccParams::derive(link_bps, base_rtt, mtu, mss, false);
                RateControl::Nscc(Nscc::new(p, link_bps, base_rtt))
            }
        }
    }

    /// Timely: whether silences of the answers longer than `t_high` are
    /// taken for host stalls ([`Timely::on_answer`]); the others have no
    /// such rule.
    pub fn with_host_stalls(mut self, on: bool) -> Self {
        if let RateControl::Timely(t) = &mut self {
            t.set_host_stalls(on);
        }
        self
    }

    /// The rate in bits per second, or `None` without congestion control
    /// (no limit).
    #[inline]
    pub fn rate_bps(&self) -> Option<u64> {
        match self {
            RateControl::None => None,
            RateControl::Timely(t) => Some(t.rate_bps()),
            RateControl::Dcqcn(d) => Some(d.rate_bps()),
            RateControl::Nscc(n) => Some(n.rate_bps()),
        }
    }

    /// An RTT sample taken at `now` (Timely only; the endpoint feeds
    /// [`RateControl::on_ack`]).
    #[cfg(test)]
    pub fn on_rtt(&mut self, now: Instant, rtt: Duration) {
        if let RateControl::Timely(t) = self {
            t.on_rtt(now, rtt);
        }
    }

    /// An answer at `now` acknowledged `bytes` newly delivered bytes, with
    /// the RTT of the packet it answers when that was sent once: Timely
    /// takes the RTT, NSCC both.
    pub fn on_ack(&mut self, now: Instant, rtt: Option<Duration>, bytes: usize) {
        match self {
            RateControl::Timely(t) => t.on_answer(now, rtt),
            RateControl::Nscc(n) => {
                n.on_ack(now, rtt, bytes);
            }
            RateControl::None | RateControl::Dcqcn(_) => {}
        }
    }

    /// A Sack of `bytes` delivered out of order, with the RTT of the
    /// packet it answers if it was sent once: NSCC's, as any answer
    /// (uet-htsim's SACKs count as ACKs); the others keep to in-order
    /// answers, as before.
    pub fn on_sack(&mut self, now: Instant, rtt: Option<Duration>, bytes: usize) {
        if let RateControl::Nscc(n) = self {
            n.on_ack(now, rtt, bytes);
        }
    }

    /// A congestion notification packet arrived: DCQCN cuts, NSCC takes
    /// it as the ECN echo of its next acknowledgement.
    pub fn on_cnp(&mut self, now: Instant) {
        match self {
            RateControl::Dcqcn(d) => d.on_cnp(now),
            RateControl::Nscc(n) => n.on_ecn(now),
            RateControl::None | RateControl::Timely(_) => {}
        }
    }

    /// `packets` were NACKed at `now`: trimmed or lost (NSCC only).
    pub fn on_nack(&mut self, now: Instant, packets: usize) {
        if let RateControl::Nscc(n) = self {
            n.on_nack(now, packets);
        }
    }

    /// `bytes` were sent at `now` (DCQCN's byte counter).
    #[inline]
    pub fn on_sent(&mut self, now: Instant, bytes: usize) {
        if let RateControl::Dcqcn(d) = self {
            d.on_sent(now, bytes);
        }
    }

    /// Runs time-driven state up to `now` (DCQCN's alpha and increase
    /// timers); call it before reading the rate to send a packet, or when
    /// the wheel releases the session. O(1) however long since the last
    /// call.
    #[inline]
    pub fn advance(&mut self, now: Instant) {
        if let RateControl::Dcqcn(d) = self {
            d.advance(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::dcqcn::CNP_INTERVAL;
    use super::*;

    const TEN_G: u64 = 10_000_000_000;
    const NO_SLACK: Duration = Duration::from_nanos(0);
    const RTT: Duration = Duration::from_micros(2);
    const FRAME: (usize, usize) = (1500, 1458);

    #[test]
    fn rate_limit_spaces_line_rate_frames_one_us_apart() {
        let t0 = Instant::from_nanos(5_000);
        let mut rl = RateLimit::new(t0);
        assert!(rl.ready(t0));
        rl.on_send(t0, 1250, TEN_G, NO_SLACK);
        assert_eq!(rl.next_send_at, t0 + Duration::from_micros(1));
        assert!(!rl.ready(t0 + Duration::from_nanos(999)));
        assert!(rl.ready(t0 + Duration::from_micros(1)));
        // Back to back, sent exactly on time: 1 us apart each.
        for i in 1..=10 {
            let now = rl.next_send_at;
            rl.on_send(now, 1250, TEN_G, NO_SLACK);
            assert_eq!(rl.next_send_at, t0 + Duration::from_micros(i + 1));
        }
    }

    #[test]
    fn rate_limit_counts_from_schedule_when_behind_and_from_now_when_idle() {
        let t0 = Instant::ZERO;
        let mut rl = RateLimit::new(t0);
        rl.on_send(t0, 1250, TEN_G, NO_SLACK);
        // Sent early (the caller ignored ready()): still spaced by schedule.
        rl.on_send(t0, 1250, TEN_G, NO_SLACK);
        assert_eq!(rl.next_send_at, t0 + Duration::from_micros(2));
        // Idle for a while: no credit for the idle time.
        let later = t0 + Duration::from_millis(1);
        rl.on_send(later, 1250, TEN_G, NO_SLACK);
        assert_eq!(rl.next_send_at, later + Duration::from_micros(1));
    }

    #[test]
    fn rate_limit_keeps_its_schedule_within_the_slack_and_bounds_the_burst() {
        let slack = Duration::from_micros(1);
        let hundred_g = 10 * TEN_G; // 1250 B every 100 ns
        let mut rl = RateLimit::new(Instant::ZERO);
        rl.on_send(Instant::ZERO, 1250, hundred_g, slack);
        // Released 700 ns after its time (within a wheel grain): the gaps
        // count from the schedule, not from the late send, so the session
        // may send back to back until it is on time again.
        let late = Instant::from_nanos(800);
        for k in 2..=8 {
            assert!(rl.ready(late), "behind schedule: may send at once");
            rl.on_send(late, 1250, hundred_g, slack);
            assert_eq!(rl.next_send_at, Instant::from_nanos(100 * k));
        }
        assert!(rl.ready(late) && !rl.ready(Instant::from_nanos(799)));
        rl.on_send(late, 1250, hundred_g, slack);
        assert!(!rl.ready(late), "on time again at 900 ns");
        // Idle for 1 ms: the schedule restarts `slack` before now, so the
        // idle time buys at most one slack's worth of back-to-back frames.
        let later = Instant::from_nanos(1_000_000);
        let mut burst = 0;
        while rl.ready(later) {
            rl.on_send(later, 1250, hundred_g, slack);
            burst += 1;
        }
        assert_eq!(
            burst, 11,
            "1 us of slack at 100 ns a frame, plus the one due now"
        );
    }

    /// Drives one always-backlogged session through a wheel of `grain`
    /// (released late by up to a grain, as the endpoint does) behind a NIC
    /// of `nic_bps`, and returns the rate it achieved over `frames` frames.
    fn paced_rate(rate_bps: u64, nic_bps: u64, grain: Duration, frames: u64) -> f64 {
        let frame = 1514;
        let mut wheel = TimingWheel::new(grain, 4096, Instant::ZERO);
        let mut rl = RateLimit::new(Instant::ZERO);
        let mut now = Instant::ZERO;
        let mut sent = 0;
        let mut last_send = Instant::ZERO;
        while sent < frames {
            if !rl.ready(now) {
                wheel.insert(rl.next_send_at, 0u8);
                now = wheel.next_due().expect("parked");
                assert_eq!(wheel.pop_due(now), Some(0));
                assert!(rl.ready(now), "the wheel never releases early");
            }
            rl.on_send(now, frame, rate_bps, grain);
            last_send = now;
            sent += 1;
            // The NIC serialises the frame before it can take the next.
            now += Duration::from_nanos(frame as u64 * 8 * 1_000_000_000 / nic_bps);
        }
        // Frames 0..frames-1 left by the last one's start.
        let bits = ((frames - 1) * frame as u64 * 8) as f64;
        bits / (last_send.as_nanos() as f64 / 1e9)
    }

    #[test]
    fn paced_sessions_keep_their_rate_through_a_coarse_wheel() {
        // The rates the pacing must hold, each on a NIC somewhat faster
        // than the cap, through the engine's 1 us wheel grain (an older
        // version restarted the schedule at each late release and topped
        // out near one frame per grain: 12 Gb/s).
        let grain = Duration::from_micros(1);
        for (gbps, nic) in [(1, 10), (10, 25), (50, 100), (99, 100), (390, 400)] {
            let r = paced_rate(gbps * 1_000_000_000, nic * 1_000_000_000, grain, 20_000);
            let ratio = r / (gbps as f64 * 1e9);
            assert!(
                (0.98..=1.0001).contains(&ratio),
                "{gbps} Gb/s: paced at {:.3} Gb/s ({ratio:.4}x)",
                r / 1e9
            );
        }
    }

    #[test]
    fn rate_limit_carries_sub_nanosecond_remainders() {
        // 64 B at 100 Gbit/s is 5.12 ns: 100 frames must take 512 ns.
        let mut rl = RateLimit::new(Instant::ZERO);
        for _ in 0..100 {
            let now = rl.next_send_at;
            rl.on_send(now, 64, 100_000_000_000, NO_SLACK);
        }
        assert_eq!(rl.next_send_at, Instant::from_nanos(512));
    }

    #[test]
    fn rate_limit_treats_zero_rate_as_one_bit_per_second() {
        let mut rl = RateLimit::new(Instant::ZERO);
        rl.on_send(Instant::ZERO, 1, 0, NO_SLACK);
        assert_eq!(rl.next_send_at, Instant::from_nanos(8_000_000_000));
        rl.on_send(Instant::ZERO, usize::MAX, 0, NO_SLACK);
        assert_eq!(rl.next_send_at, Instant(u64::MAX), "saturates");
    }

    #[test]
    fn rate_control_dispatches_by_kind() {
        let now = Instant::ZERO;
        let mut none = RateControl::new(
            CcKind::default(),
            TEN_G,
            now,
            RTT,
            DcqcnParams::paper40g(),
            FRAME,
        );
        none.on_cnp(now);
        none.on_rtt(now, Duration::from_millis(5));
        assert_eq!(none.rate_bps(), None);

        let mut timely = RateControl::new(
            CcKind::Timely,
            TEN_G,
            now,
            RTT,
            DcqcnParams::paper40g(),
            FRAME,
        );
        assert_eq!(timely.rate_bps(), Some(TEN_G));
        timely.on_cnp(now);
        assert_eq!(timely.rate_bps(), Some(TEN_G), "CNPs are DCQCN's");
        timely.on_rtt(now, Duration::from_millis(5));
        assert_eq!(
            timely.rate_bps(),
            Some(TEN_G),
            "one late sample starts a run"
        );
        let ms5 = Duration::from_millis(5);
        timely.on_rtt(now + ms5, ms5); // sent after the run began: confirmed
        assert!(timely.rate_bps().unwrap() < TEN_G);

        let mut dcqcn = RateControl::new(
            CcKind::Dcqcn,
            TEN_G,
            now,
            RTT,
            DcqcnParams::paper40g(),
            FRAME,
        );
        dcqcn.on_rtt(now, Duration::from_millis(5));
        assert_eq!(dcqcn.rate_bps(), Some(TEN_G), "RTTs are Timely's");
        dcqcn.on_cnp(now);
        assert_eq!(dcqcn.rate_bps(), Some(TEN_G / 2));
        dcqcn.on_sent(now, 10_000_000); // one byte-counter event: fast recovery
        assert_eq!(dcqcn.rate_bps(), Some(TEN_G / 4 * 3));
        dcqcn.advance(now + Duration::from_secs(1));
        assert_eq!(dcqcn.rate_bps(), Some(TEN_G));
        dcqcn.on_cnp(now + Duration::from_secs(1) + CNP_INTERVAL);
        assert_eq!(
            dcqcn.rate_bps(),
            Some(TEN_G / 2),
            "recovered: alpha is 1 again"
        );

        let rtt = Duration::from_micros(10);
        let mut nscc = RateControl::new(
            CcKind::Nscc,
            TEN_G,
            now,
            rtt,
            DcqcnParams::paper40g(),
            FRAME,
        );
        assert_eq!(nscc.rate_bps(), Some(TEN_G), "1.5 BDP: link rate");
        nscc.on_rtt(now, Duration::from_millis(5));
        nscc.on_ack(now, None, 1458);
        assert_eq!(nscc.rate_bps(), Some(TEN_G), "no ECN: no cut");
        nscc.on_nack(now, 6); // 18,750 B window - 6 x 1458, below 1 BDP
        assert_eq!(nscc.rate_bps(), Some((18_750 - 6 * 1458) * 8 * 100_000));
        timely.on_ack(now, None, 1458);
        dcqcn.on_nack(now, 2);
        assert_eq!(dcqcn.rate_bps(), Some(TEN_G / 2), "NACKs are NSCC's");
    }

    #[test]
    fn paced_sessions_wait_in_the_wheel_until_their_send_time() {
        // Two sessions sending 1250 B frames at 10 and 5 Gbit/s, parked in
        // the wheel between sends, as the transmit path will run them.
        let mut wheel = TimingWheel::new(Duration::from_nanos(100), 256, Instant::ZERO);
        let rates = [TEN_G, TEN_G / 2];
        let mut limits = [RateLimit::new(Instant::ZERO); 2];
        let mut sent = [Vec::new(), Vec::new()];
        wheel.insert(Instant::ZERO, 0usize);
        wheel.insert(Instant::ZERO, 1usize);
        let mut now = Instant::ZERO;
        while now < Instant::from_nanos(10_000) {
            while let Some(s) = wheel.pop_due(now) {
                assert!(limits[s].ready(now));
                limits[s].on_send(now, 1250, rates[s], NO_SLACK);
                sent[s].push(now.as_nanos() / 1_000);
                wheel.insert(limits[s].next_send_at, s);
            }
            now += Duration::from_nanos(50);
        }
        assert_eq!(sent[0], (0..10).collect::<Vec<_>>());
        assert_eq!(sent[1], [0, 2, 4, 6, 8]);
    }
}
