//! [`TransportConfig::validate`]: every rule on the `[transport]` keys that
//! needs nothing but the section itself, each refusal a [`KeyError`] naming
//! the key, its value and the limit in the key's own units
//! (`transport.rto_us = 100 must be >= transport.scan_us = 500`). The rules
//! that need the link (the MTU bounds a message, the ring backs lossless
//! credits and pause thresholds) are [`resolve`](super::resolve)'s.

use super::idle::{MAX_IDLE_AFTER_US, MAX_IDLE_SLEEP_US, MIN_IDLE_SLEEP_US};
use super::transport::{CreditMultiple, TransportConfig};
use crate::proto::{FlowMode, LossPolicy, MemBudget, Retransmit, MAX_REQ_WINDOW, MAX_SESSIONS};

/// A refused value: the dotted key at fault and one line saying why, with
/// the value and the limit. Prints as `invalid config: {msg}`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid config: {msg}")]
pub struct KeyError {
    /// The dotted key, e.g. `transport.rto_us`.
    pub key: String,
    /// The whole sentence; it names `key`.
    pub msg: String,
}

impl KeyError {
    /// A refusal of `key` for the reason `msg` (which must name the key).
    pub fn new(key: &str, msg: impl Into<String>) -> Self {
        KeyError {
            key: key.to_string(),
            msg: msg.into(),
        }
    }
}

/// `v` in `lo..=hi`; a huge `hi` reads as "at least `lo`".
pub fn range(key: &str, v: u64, lo: u64, hi: u64) -> Result<(), KeyError> {
    if (lo..=hi).contains(&v) {
        return Ok(());
    }
    let msg = if hi >= u64::MAX / 1_000_000 {
        format!("{key} = {v} must be at least {lo}")
    } else {
        format!("{key} = {v} must be in {lo}..={hi}")
    };
    Err(KeyError::new(key, msg))
}

/// `v` at most `max`: a value that must convert to the engine's units.
pub fn at_most(key: &str, v: u64, max: u64) -> Result<(), KeyError> {
    if v <= max {
        return Ok(());
    }
    Err(KeyError::new(
        key,
        format!("{key} = {v} must be at most {max}"),
    ))
}

/// A finite number above zero.
pub fn positive(key: &str, v: f64) -> Result<(), KeyError> {
    if v > 0.0 && v.is_finite() {
        return Ok(());
    }
    Err(KeyError::new(
        key,
        format!("{key} = {v} must be a finite number > 0"),
    ))
}

/// `a >= b`, both keys named with their values.
fn at_least_key(key: &str, a: u64, other: &str, b: u64) -> Result<(), KeyError> {
    if a >= b {
        return Ok(());
    }
    Err(KeyError::new(
        key,
        format!("{key} = {a} must be >= {other} = {b}"),
    ))
}

/// Microseconds and milliseconds whose nanoseconds fit 64 bits.
const MAX_US: u64 = u64::MAX / 1_000;
const MAX_MS: u64 = u64::MAX / 1_000_000;
/// MiB values whose bytes still fit a usize.
const MAX_MIB: u64 = 1 << 40;

impl TransportConfig {
    /// Checks every key on its own and every combination of keys; see
    /// `docs/configs.md` for the limits.
    pub fn validate(&self) -> Result<(), KeyError> {
        self.check_rates()?;
        self.check_timers()?;
        self.check_flow()?;
        self.check_server()?;
        self.check_idle()?;
        Ok(())
    }

    /// The idle keys (checked in spin mode too: a value that would be
    /// refused is refused before someone switches the mode).
    fn check_idle(&self) -> Result<(), KeyError> {
        let after = "transport.idle_after_us";
        range(after, self.idle_after_us, 0, MAX_IDLE_AFTER_US)?;
        let sleep = "transport.idle_sleep_us";
        range(
            sleep,
            self.idle_sleep_us,
            MIN_IDLE_SLEEP_US,
            MAX_IDLE_SLEEP_US,
        )
    }

    fn check_rates(&self) -> Result<(), KeyError> {
        positive("transport.link_gbps", self.link_gbps)?;
        if let Some(g) = self.bdp_gbps {
            positive("transport.bdp_gbps", g)?;
        }
        positive("transport.rtt_us", self.rtt_us)?;
        if let Some(cap) = self.rate_cap_gbps {
            if !(cap > 0.0 && cap.is_finite()) {
                return Err(KeyError::new(
                    "transport.rate_cap_gbps",
                    format!("transport.rate_cap_gbps = {cap} must be a rate above 0 Gb/s"),
                ));
            }
        }
        if let CreditMultiple::Factor(f) = self.lossy_credit_multiple {
            positive("transport.lossy_credit_multiple", f)?;
        }
        if self.credits == Some(0) {
            return Err(KeyError::new(
                "transport.credits",
                "transport.credits = 0 must be at least 1",
            ));
        }
        range(
            "transport.req_window",
            self.req_window as u64,
            1,
            MAX_REQ_WINDOW as u64,
        )?;
        if self.max_msg_size == 0 {
            return Err(KeyError::new(
                "transport.max_msg_size",
                "transport.max_msg_size = 0 must be at least 1",
            ));
        }
        Ok(())
    }

    fn check_timers(&self) -> Result<(), KeyError> {
        range("transport.scan_us", self.scan_us, 1, MAX_US)?;
        at_most("transport.rto_us", self.rto_us, MAX_US)?;
        at_least_key(
            "transport.rto_us",
            self.rto_us,
            "transport.scan_us",
            self.scan_us,
        )?;
        at_most(
            "transport.session_timeout_ms",
            self.session_timeout_ms,
            MAX_MS,
        )?;
        if self.session_timeout_ms.saturating_mul(1_000) < self.rto_us {
            return Err(KeyError::new(
                "transport.session_timeout_ms",
                format!(
                    "transport.session_timeout_ms = {} must be >= transport.rto_us = {} us",
                    self.session_timeout_ms, self.rto_us
                ),
            ));
        }
        range(
            "transport.connect_retry_ms",
            self.connect_retry_ms,
            1,
            MAX_MS,
        )?;
        at_most(
            "transport.connect_timeout_ms",
            self.connect_timeout_ms,
            MAX_MS,
        )?;
        at_least_key(
            "transport.connect_timeout_ms",
            self.connect_timeout_ms,
            "transport.connect_retry_ms",
            self.connect_retry_ms,
        )?;
        range("transport.keepalive_ms", self.keepalive_ms, 1, MAX_MS / 2)?;
        at_most(
            "transport.half_open_timeout_ms",
            self.half_open_timeout_ms,
            MAX_MS,
        )?;
        if self.half_open_timeout_ms < 2 * self.keepalive_ms {
            return Err(KeyError::new(
                "transport.half_open_timeout_ms",
                format!(
                    "transport.half_open_timeout_ms = {} must be >= 2 x transport.keepalive_ms = {}: a live client that lost one keepalive must keep its session",
                    self.half_open_timeout_ms,
                    2 * self.keepalive_ms
                ),
            ));
        }
        at_most("transport.idle_timeout_ms", self.idle_timeout_ms, MAX_MS)?;
        at_least_key(
            "transport.idle_timeout_ms",
            self.idle_timeout_ms,
            "transport.half_open_timeout_ms",
            self.half_open_timeout_ms,
        )?;
        if let Some(low) = self.rto_low_us {
            if !(1..=self.rto_us).contains(&low) {
                return Err(KeyError::new(
                    "transport.rto_low_us",
                    format!(
                        "transport.rto_low_us = {low} must be in 1..=transport.rto_us = {}",
                        self.rto_us
                    ),
                ));
            }
        }
        range("transport.pause_time_us", self.pause_time_us, 1, MAX_US)
    }

    /// The combinations of the flow mode, the loss policy, the
    /// retransmission and NAKs.
    fn check_flow(&self) -> Result<(), KeyError> {
        if self.mode != FlowMode::Lossless && self.on_loss == LossPolicy::ResetSession {
            return Err(KeyError::new(
                "transport.on_loss",
                format!(
                    "transport.on_loss = reset only applies in lossless mode (transport.mode = {})",
                    self.mode.as_str()
                ),
            ));
        }
        if self.nak && self.retransmit == Retransmit::Selective {
            return Err(KeyError::new(
                "transport.nak",
                "transport.nak = true is go-back-N's; transport.retransmit = selective repairs with its Sacks",
            ));
        }
        if self.nak && self.mode == FlowMode::Lossless {
            return Err(KeyError::new(
                "transport.nak",
                "transport.nak = true needs transport.mode = lossy or pause: lossless mode judges a loss by its timeout",
            ));
        }
        Ok(())
    }

    /// What a server lets its peers hold: sessions, ring shares, the
    /// restart probe, the cookie threshold, memory.
    fn check_server(&self) -> Result<(), KeyError> {
        range(
            "transport.max_sessions_per_peer",
            self.max_sessions_per_peer as u64,
            1,
            MAX_SESSIONS as u64,
        )?;
        for (key, pct) in [
            (
                "transport.session_ring_share_pct",
                self.session_ring_share_pct,
            ),
            ("transport.peer_ring_share_pct", self.peer_ring_share_pct),
            ("transport.mac_ring_share_pct", self.mac_ring_share_pct),
        ] {
            if let Some(p) = pct {
                range(key, p as u64, 1, 100)?;
            }
        }
        if let Some(p) = self.ring_reserve_pct {
            at_most("transport.ring_reserve_pct", p as u64, 99)?;
        }
        if let Some(n) = self.max_sessions_per_mac {
            range(
                "transport.max_sessions_per_mac",
                n as u64,
                1,
                MAX_SESSIONS as u64,
            )?;
        }
        range(
            "transport.restart_probe_wait_ms",
            self.restart_probe_wait_ms,
            1,
            60_000,
        )?;
        at_most(
            "transport.cookie_above_pct",
            self.cookie_above_pct as u64,
            100,
        )?;
        range(
            "transport.wrong_tokens_per_sec",
            self.wrong_tokens_per_sec as u64,
            1,
            1_000_000,
        )?;
        range(
            "transport.police_window_ms",
            self.police_window_ms,
            1,
            MAX_MS,
        )?;
        at_most(
            "transport.police_cooloff_ms",
            self.police_cooloff_ms,
            MAX_MS,
        )?;
        for (key, mib) in [
            ("transport.mem_per_peer_mib", self.mem_per_peer_mib),
            ("transport.mem_per_worker_mib", self.mem_per_worker_mib),
            ("transport.pool_keep_mib", self.pool_keep_mib),
        ] {
            at_most(key, mib, MAX_MIB)?;
        }
        let one = MemBudget::min_per_peer(self.max_msg_size.min(usize::MAX as u64) as usize);
        let one_mib = (one as u64).div_ceil(1 << 20);
        if self.mem_per_peer_mib << 20 < one as u64 {
            return Err(KeyError::new(
                "transport.mem_per_peer_mib",
                format!(
                    "transport.mem_per_peer_mib = {} must be >= {one_mib} (the buffer of one transport.max_msg_size = {} message)",
                    self.mem_per_peer_mib, self.max_msg_size
                ),
            ));
        }
        at_least_key(
            "transport.mem_per_worker_mib",
            self.mem_per_worker_mib,
            "transport.mem_per_peer_mib",
            self.mem_per_peer_mib,
        )?;
        range(
            "transport.reassembly_timeout_ms",
            self.reassembly_timeout_ms,
            1,
            MAX_MS,
        )
    }
}
