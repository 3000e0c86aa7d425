//! How a run repaired loss and throttled its senders, from both endpoints'
//! typed engine counters: the six figures every compare, sweep and incast
//! run reports next to its drops (JSON keys `retransmitted_pkts`,
//! `spurious_timeouts`, `pause_frames`, `paused_us`, `ecn_marks`, `cnps`).

use apps::report::Report;
use engine::proto::Stats;

/// How a run repaired loss and throttled its senders: both endpoints'
/// engine counters summed, from the report's typed stats (`client_stats`,
/// `server_stats`; a side that did not report counts 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryCounters {
    /// Packets sent again (`retransmissions`).
    pub retransmitted_pkts: u64,
    /// Timeouts proved spurious by a duplicate answer.
    pub spurious_timeouts: u64,
    /// XOFF and XON frames sent (`pause_frames_sent`).
    pub pause_frames: u64,
    /// Time traffic to a paused peer was held, in us (`paused_ns` / 1000).
    pub paused_us: u64,
    /// Frames received with ECN Congestion Experienced.
    pub ecn_marks: u64,
    /// Congestion notifications sent (`cnps_sent`).
    pub cnps: u64,
}

impl RecoveryCounters {
    pub fn from_stats(sides: &[&Stats]) -> RecoveryCounters {
        let sum = |f: fn(&Stats) -> u64| sides.iter().map(|s| f(s)).sum::<u64>();
        RecoveryCounters {
            retransmitted_pkts: sum(|s| s.retransmissions),
            spurious_timeouts: sum(|s| s.spurious_timeouts),
            pause_frames: sum(|s| s.pause_frames_sent),
            paused_us: sum(|s| s.paused_ns) / 1000,
            ecn_marks: sum(|s| s.ecn_marks),
            cnps: sum(|s| s.cnps_sent),
        }
    }

    pub fn from_report(r: &Report) -> RecoveryCounters {
        let sides: Vec<&Stats> = r.client_stats.iter().chain(&r.server_stats).collect();
        RecoveryCounters::from_stats(&sides)
    }

    /// Retransmitted packets per completed RPC (0 with none completed).
    pub fn per_rpc(&self, completed: u64) -> f64 {
        if completed == 0 {
            0.0
        } else {
            self.retransmitted_pkts as f64 / completed as f64
        }
    }

    /// (JSON key, table row, value), in table order.
    pub fn fields(&self) -> [(&'static str, &'static str, u64); 6] {
        [
            (
                "retransmitted_pkts",
                "retransmitted packets",
                self.retransmitted_pkts,
            ),
            (
                "spurious_timeouts",
                "spurious timeouts",
                self.spurious_timeouts,
            ),
            ("pause_frames", "pause frames sent", self.pause_frames),
            ("paused_us", "paused (us)", self.paused_us),
            ("ecn_marks", "ECN marks", self.ecn_marks),
            ("cnps", "CNPs sent", self.cnps),
        ]
    }
}
