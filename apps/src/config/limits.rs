//! What a server lets its peers hold, validated: the ring shares, the
//! restart probe's wait, the cookie threshold and the wrong-token limit
//! (`engine::proto::Admission`) and the memory bounds
//! (`engine::proto::MemBudget`), each error naming its key.

use super::schema::{Config, ConfigError};
use super::validate::{limit_err, range};

impl Config {
    /// Ring shares within 1..=100 per cent (when set), a probe wait of
    /// 1 ms to 1 min, a cookie threshold within 0..=100 per cent, 1 to a
    /// million wrong tokens per source per second.
    pub(super) fn validate_admission(&self) -> Result<(), ConfigError> {
        let t = &self.transport;
        let shares = [
            ("transport.session_ring_share_pct", t.session_ring_share_pct),
            ("transport.peer_ring_share_pct", t.peer_ring_share_pct),
        ];
        for (key, pct) in shares {
            if let Some(p) = pct {
                range(key, u64::from(p), 1, 100)?;
            }
        }
        range(
            "transport.restart_probe_wait_ms",
            t.restart_probe_wait_ms,
            1,
            60_000,
        )?;
        range(
            "transport.cookie_above_pct",
            u64::from(t.cookie_above_pct),
            0,
            100,
        )?;
        range(
            "transport.wrong_tokens_per_sec",
            u64::from(t.wrong_tokens_per_sec),
            1,
            1_000_000,
        )
    }

    /// The memory bounds: a peer's budget holds one `max_msg_size` message
    /// (its power-of-two buffer), the worker's at least a peer's.
    pub(super) fn validate_mem(&self) -> Result<(), ConfigError> {
        let t = &self.transport;
        // MiB values that still fit a usize in bytes.
        const MAX_MIB: u64 = 1 << 40;
        let one = t.max_msg_size.max(1).next_power_of_two();
        let one_mib = one.div_ceil(1 << 20);
        range("transport.mem_per_peer_mib", t.mem_per_peer_mib, 1, MAX_MIB)?;
        if t.mem_per_peer_mib << 20 < one {
            return Err(ConfigError::invalid(
                "transport.mem_per_peer_mib",
                format!(
                    "transport.mem_per_peer_mib = {} must be >= {one_mib}: one transport.max_msg_size = {} message takes a {one}-byte buffer",
                    t.mem_per_peer_mib, t.max_msg_size
                ),
            ));
        }
        range(
            "transport.mem_per_worker_mib",
            t.mem_per_worker_mib,
            t.mem_per_peer_mib,
            MAX_MIB,
        )
        .map_err(|_| {
            limit_err(
                "transport.mem_per_worker_mib",
                t.mem_per_worker_mib,
                "transport.mem_per_peer_mib",
                t.mem_per_peer_mib,
            )
        })?;
        range(
            "transport.reassembly_timeout_ms",
            t.reassembly_timeout_ms,
            1,
            u64::MAX / 1_000_000,
        )?;
        range("transport.pool_keep_mib", t.pool_keep_mib, 0, MAX_MIB)
    }
}
