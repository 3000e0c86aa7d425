//! What a server lets its peers hold: the ring shares and the restart
//! probe's wait (`engine::proto::Admission`) and the memory bounds
//! (`engine::proto::MemBudget`). The engine checks their rules (shares in
//! 1..=100 per cent, a peer's budget holding one message, the worker's a
//! peer's); here only that the values convert to the engine's units, and
//! the probe wait's upper bound (a minute), each error naming its key.

use super::schema::{Config, ConfigError};
use super::validate::at_most;

/// MiB values whose bytes still fit a usize.
const MAX_MIB: u64 = 1 << 40;

impl Config {
    /// A restart probe waits at most a minute; at most a million wrong
    /// tokens per source per second (the engine checks the lower bounds
    /// and the cookie threshold's per cent).
    pub(super) fn validate_admission(&self) -> Result<(), ConfigError> {
        let t = &self.transport;
        at_most(
            "transport.restart_probe_wait_ms",
            t.restart_probe_wait_ms,
            60_000,
        )?;
        at_most(
            "transport.wrong_tokens_per_sec",
            u64::from(t.wrong_tokens_per_sec),
            1_000_000,
        )
    }

    /// The memory bounds in MiB and the reassembly timeout convert to bytes
    /// and nanoseconds.
    pub(super) fn validate_mem(&self) -> Result<(), ConfigError> {
        let t = &self.transport;
        for (key, mib) in [
            ("transport.mem_per_peer_mib", t.mem_per_peer_mib),
            ("transport.mem_per_worker_mib", t.mem_per_worker_mib),
            ("transport.pool_keep_mib", t.pool_keep_mib),
        ] {
            at_most(key, mib, MAX_MIB)?;
        }
        at_most(
            "transport.reassembly_timeout_ms",
            t.reassembly_timeout_ms,
            u64::MAX / 1_000_000,
        )
    }
}
