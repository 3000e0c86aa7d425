//! What a server process reports when it stops: every engine counter by
//! its own name, the run loop's and the port's counters, and the mbuf
//! accounting; `rpc-server` prints it (text, or one JSON line) and
//! `rpc-bench` reads it back.

use engine::proto::Stats;
use engine::runtime::RunCounters;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol counters of one side, every engine counter by its own
/// name, plus the drop total over all reasons.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct StatsSummary {
    #[serde(flatten)]
    pub counters: Stats,
    pub drops_total: u64,
}

impl StatsSummary {
    pub fn new(s: &Stats) -> Self {
        StatsSummary {
            counters: *s,
            drops_total: s.drops.total(),
        }
    }
}

/// What `rpc-server` prints as its last line and `rpc-bench` reads back.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ServerSummary {
    pub role: String,
    pub workers: u64,
    pub seconds: f64,
    pub handled: u64,
    pub bad_requests: u64,
    pub injected_drops: u64,
    pub stats: StatsSummary,
    /// The run loop's counters.
    #[serde(rename = "loop")]
    pub run: RunCounters,
    /// The port's counters (`rx_missed`, ...), or `{"error": ...}`.
    pub port: Value,
    /// Mbufs allocated from the pool once the port had started (its RX
    /// rings filled) and after every worker stopped: any difference is a
    /// leak.
    pub mbufs_in_use_start: u64,
    pub mbufs_in_use_end: u64,
}
