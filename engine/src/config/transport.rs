//! The `[transport]` section as one serde type: every key a field of
//! [`TransportConfig`] (units in the names: `_us`, `_ms`, `_mib`, `_gbps`,
//! `_pct`), its default written once ([`Default`], from the engine's own
//! defaults in `proto::defaults`), unknown keys refused. The value types
//! with a text form of their own ([`BdpSource`], [`CreditMultiple`],
//! [`DcqcnSet`]) live here too; the flow mode, loss policy, retransmission
//! and congestion control are the protocol core's own enums.

use super::idle::{IdleMode, IdlePolicy, DEFAULT_IDLE_AFTER_US, DEFAULT_IDLE_SLEEP_US};
use crate::nic::ChecksumOffload;
use crate::proto::{
    defaults, Admission, CcKind, DcqcnParams, FlowMode, LossPolicy, MemBudget, Policing,
    Retransmit, DEFAULT_MAX_MSG_SIZE,
};
use crate::regimes::LOSSY_CREDIT_MULTIPLE;
use crate::time::Duration;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Where the default credits' bandwidth-delay product comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BdpSource {
    /// What the link measured, when a tool measured it (`rpc-bench`'s raw
    /// floor); the configured `link_gbps` (or `bdp_gbps`) and `rtt_us`
    /// where nothing was measured.
    #[default]
    Measured,
    /// Always the configured `bdp_gbps` (or `link_gbps`) x `rtt_us`.
    Config,
}

/// Credits of the flow modes that reserve nothing (lossy, pause) as a
/// multiple of the BDP, or no limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CreditMultiple {
    /// This many BDPs, rounded up.
    Factor(f64),
    /// `u16::MAX` credits.
    Unbounded,
}

/// `transport.dcqcn`: DCQCN's named parameter sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DcqcnSet {
    /// The paper's constants, tuned on 40 Gb/s ([`DcqcnParams::paper40g`]).
    Paper40g,
    /// The HPCC authors' DCQCN at 100 Gb/s ([`DcqcnParams::hpcc100g`]).
    Hpcc100g,
}

impl DcqcnSet {
    /// The set's name in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            DcqcnSet::Paper40g => "paper40g",
            DcqcnSet::Hpcc100g => "hpcc100g",
        }
    }

    /// The set's constants.
    pub fn params(self) -> DcqcnParams {
        match self {
            DcqcnSet::Paper40g => DcqcnParams::paper40g(),
            DcqcnSet::Hpcc100g => DcqcnParams::hpcc100g(),
        }
    }
}

/// `[transport]`: credits, window, timers, flow mode, loss repair, rate
/// control, and what a server lets its peers hold. See `docs/configs.md`
/// for each key; [`TransportConfig::validate`] checks them and
/// [`resolve`](super::resolve) turns them into each endpoint's settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(missing_docs)] // each key is documented in docs/configs.md
pub struct TransportConfig {
    /// Session credits; `None`: from the BDP and the flow mode.
    pub credits: Option<u16>,
    /// Whether a measured BDP replaces the configured one.
    pub bdp: BdpSource,
    /// The line rate (congestion control's ceiling, the rate cap's limit).
    pub link_gbps: f64,
    /// The rate the BDP is computed from when it differs from the line
    /// rate; `None`: `link_gbps`.
    pub bdp_gbps: Option<f64>,
    /// The path's unloaded round trip.
    pub rtt_us: f64,
    pub req_window: u32,
    pub rto_us: u64,
    pub scan_us: u64,
    pub session_timeout_ms: u64,
    pub connect_timeout_ms: u64,
    pub connect_retry_ms: u64,
    /// Server: reclaim a session whose client was silent this long.
    pub idle_timeout_ms: u64,
    /// Server: reclaim a session that sent nothing after its ConnectReq.
    pub half_open_timeout_ms: u64,
    /// Client: send a keepalive after this long without sending.
    pub keepalive_ms: u64,
    /// Server: sessions one client address may hold.
    pub max_sessions_per_peer: u32,
    /// Server, lossless: the most of the receive ring one session may
    /// reserve, per cent; `None`: the engine's (rpc-bench: 100 for its
    /// own client).
    pub session_ring_share_pct: Option<u8>,
    /// Server, lossless: the most of the receive ring one client address
    /// may reserve, per cent; `None`: the engine's (rpc-bench: 100).
    pub peer_ring_share_pct: Option<u8>,
    /// Server, lossless: the same for all addresses behind one source MAC;
    /// `None`: the engine's, at least `peer_ring_share_pct`.
    pub mac_ring_share_pct: Option<u8>,
    /// Server, lossless: the last part of the ring, per cent, only
    /// newcomers may take; `None`: the engine's, at most
    /// `100 - peer_ring_share_pct` (so one address can still reach its
    /// share; rpc-bench's own pair: 0).
    pub ring_reserve_pct: Option<u8>,
    /// Server: sessions all addresses behind one source MAC may hold;
    /// `None`: the engine's, at least `max_sessions_per_peer`.
    pub max_sessions_per_mac: Option<u32>,
    /// Server: how long a live session's liveness probe may go unanswered
    /// before a ConnectReq with a new token replaces it.
    pub restart_probe_wait_ms: u64,
    /// Server: copies of a request's last packet whose grant is served
    /// again, per request.
    pub regrants_per_request: u8,
    /// Server: from this fill of the session table (per cent) a ConnectReq
    /// must bring the server's cookie.
    pub cookie_above_pct: u8,
    /// Server: wrong tokens one source address may send per second before
    /// the server withholds its replies to it.
    pub wrong_tokens_per_sec: u32,
    /// Server: epochs over a session's credits within
    /// `police_window_ms` that close it and bar its source; 0: no policing.
    pub police_strikes: u16,
    pub police_window_ms: u64,
    /// Server: how long a policed session's source may not open sessions.
    pub police_cooloff_ms: u64,
    /// Server: reassembly + stored-response bytes per worker / per client
    /// address, MiB.
    pub mem_per_worker_mib: u64,
    pub mem_per_peer_mib: u64,
    /// Server: an incomplete request is dropped after this long without
    /// progress.
    pub reassembly_timeout_ms: u64,
    /// Free message buffers a worker's pool keeps, MiB over all sizes.
    pub pool_keep_mib: u64,
    /// The flow mode: lossless, lossy or pause.
    pub mode: FlowMode,
    pub lossy_credit_multiple: CreditMultiple,
    /// Lossless mode: what a loss does.
    pub on_loss: LossPolicy,
    pub max_msg_size: u64,
    /// Pause mode: ring entries kept free above XOFF; `None`: 2 x the BDP
    /// in packets + one receive burst.
    pub pause_headroom: Option<u32>,
    /// Pause mode: occupancy that sends XOFF; `None`: the ring less the
    /// headroom.
    pub pause_xoff: Option<u32>,
    /// Pause mode: occupancy that sends XON; `None`: half of XOFF.
    pub pause_xon: Option<u32>,
    /// Pause mode: how long one XOFF stops a sender.
    pub pause_time_us: u64,
    pub retransmit: Retransmit,
    /// Selective mode's short timeout; `None`: the engine's, or `rto_us`
    /// when that is shorter.
    pub rto_low_us: Option<u64>,
    pub cc: CcKind,
    /// DCQCN's parameter set; `None`: the one that fits the line rate.
    pub dcqcn: Option<DcqcnSet>,
    /// Cap on every client session's rate, Gb/s; at most the line rate.
    pub rate_cap_gbps: Option<f64>,
    /// Go-back-N: the server NAKs the first gap (RoCE's rule).
    pub nak: bool,
    /// RCCC: the server returns request credits paced at its link rate.
    pub rccc: bool,
    /// What a worker does when its queues are quiet (`idle.rs`).
    pub idle: IdleMode,
    pub idle_after_us: u64,
    pub idle_sleep_us: u64,
    /// Which IPv4/UDP checksum offloads to take of what the device offers.
    pub checksum_offload: ChecksumOffload,
}

fn us(d: Duration) -> u64 {
    d.as_nanos() / 1_000
}

fn ms(d: Duration) -> u64 {
    d.as_nanos() / 1_000_000
}

fn mib(bytes: usize) -> u64 {
    (bytes >> 20) as u64
}

/// The keys that describe the link rather than the transport: a tool that
/// knows its links (the fabric lab) sets them itself.
pub const LINK_KEYS: [&str; 5] = [
    "transport.link_gbps",
    "transport.bdp",
    "transport.bdp_gbps",
    "transport.rtt_us",
    "transport.dcqcn",
];

/// The keys that make a regime what it is (flow mode, loss repair, rate
/// control, pause mode's thresholds): a named regime sets them.
pub const REGIME_KEYS: [&str; 9] = [
    "transport.mode",
    "transport.on_loss",
    "transport.retransmit",
    "transport.cc",
    "transport.lossy_credit_multiple",
    "transport.pause_headroom",
    "transport.pause_xoff",
    "transport.pause_xon",
    "transport.pause_time_us",
];

/// The keys of a server's defences against its peers (session and ring
/// shares, cookies, the wrong-token limit, credit policing): what a tool whose every host is
/// its own (the fabric lab) leaves open.
pub const ADMISSION_KEYS: [&str; 13] = [
    "transport.max_sessions_per_peer",
    "transport.session_ring_share_pct",
    "transport.peer_ring_share_pct",
    "transport.mac_ring_share_pct",
    "transport.ring_reserve_pct",
    "transport.max_sessions_per_mac",
    "transport.restart_probe_wait_ms",
    "transport.regrants_per_request",
    "transport.cookie_above_pct",
    "transport.wrong_tokens_per_sec",
    "transport.police_strikes",
    "transport.police_window_ms",
    "transport.police_cooloff_ms",
];

impl TransportConfig {
    /// The adaptive idle mode's settings, or `None` in spin mode.
    pub fn idle_policy(&self) -> Option<IdlePolicy> {
        match self.idle {
            IdleMode::Spin => None,
            IdleMode::Adaptive => Some(IdlePolicy {
                after: Duration::from_micros(self.idle_after_us),
                sleep: Duration::from_micros(self.idle_sleep_us),
            }),
        }
    }

    /// The retransmission timeout.
    pub fn rto(&self) -> Duration {
        Duration::from_micros(self.rto_us)
    }

    /// Selective mode's short timeout: the key, else the engine's, at most
    /// the RTO (what [`resolve`](super::resolve) derives).
    pub fn rto_low(&self) -> Duration {
        match self.rto_low_us {
            Some(us) => Duration::from_micros(us),
            None => Duration::from_nanos(defaults::RTO_LOW.as_nanos().min(self.rto().as_nanos())),
        }
    }

    /// Sets both timeouts (a regime that fixes them, as IRN's).
    pub fn set_timers(&mut self, rto: Duration, rto_low: Duration) {
        self.rto_us = us(rto);
        self.rto_low_us = Some(us(rto_low));
    }

    /// What a server lets its peers hold: the ring shares and the
    /// newcomers' reserve (the engine's where unset), sessions per MAC, the
    /// restart probe's wait, the re-grants, the cookie threshold and the
    /// wrong-token rate.
    pub fn admission(&self) -> Admission {
        let d = Admission::default();
        let peer = self.peer_ring_share_pct.unwrap_or(d.peer_ring_share_pct);
        Admission {
            session_ring_share_pct: self
                .session_ring_share_pct
                .unwrap_or(d.session_ring_share_pct),
            peer_ring_share_pct: peer,
            // Unset, the MAC's limits are at least one address's and the
            // reserve leaves one address its share: raising the address's
            // limits (one trusted client, `slow-receiver.toml`) raises them.
            mac_ring_share_pct: self
                .mac_ring_share_pct
                .unwrap_or(d.mac_ring_share_pct.max(peer)),
            ring_reserve_pct: self
                .ring_reserve_pct
                .unwrap_or(d.ring_reserve_pct.min(100 - peer)),
            max_sessions_per_mac: self.max_sessions_per_mac.map_or(
                d.max_sessions_per_mac
                    .max(self.max_sessions_per_peer as usize),
                |n| n as usize,
            ),
            restart_probe_wait: Duration::from_millis(self.restart_probe_wait_ms),
            regrants_per_request: self.regrants_per_request,
            cookie_above_pct: self.cookie_above_pct,
            wrong_tokens_per_sec: self.wrong_tokens_per_sec,
        }
    }

    /// The credit-policing rule.
    pub fn police(&self) -> Policing {
        Policing {
            strikes: self.police_strikes,
            window: Duration::from_millis(self.police_window_ms),
            cooloff: Duration::from_millis(self.police_cooloff_ms),
        }
    }
}

impl Default for TransportConfig {
    fn default() -> Self {
        let adm = Admission::default();
        let mem = MemBudget::default();
        let police = Policing::default();
        TransportConfig {
            credits: None,
            bdp: BdpSource::Measured,
            link_gbps: defaults::LINK_BPS as f64 / 1e9,
            bdp_gbps: None,
            rtt_us: defaults::BASE_RTT.as_nanos() as f64 / 1e3,
            req_window: defaults::REQ_WINDOW as u32,
            rto_us: us(defaults::RTO),
            scan_us: us(defaults::SCAN_INTERVAL),
            session_timeout_ms: ms(defaults::SESSION_TIMEOUT),
            connect_timeout_ms: ms(defaults::CONNECT_TIMEOUT),
            connect_retry_ms: ms(defaults::CONNECT_RETRY),
            idle_timeout_ms: ms(defaults::IDLE_TIMEOUT),
            half_open_timeout_ms: ms(defaults::HALF_OPEN_TIMEOUT),
            keepalive_ms: ms(defaults::KEEPALIVE),
            max_sessions_per_peer: defaults::MAX_SESSIONS_PER_PEER as u32,
            session_ring_share_pct: None,
            peer_ring_share_pct: None,
            mac_ring_share_pct: None,
            ring_reserve_pct: None,
            max_sessions_per_mac: None,
            restart_probe_wait_ms: ms(adm.restart_probe_wait),
            regrants_per_request: adm.regrants_per_request,
            cookie_above_pct: adm.cookie_above_pct,
            wrong_tokens_per_sec: adm.wrong_tokens_per_sec,
            police_strikes: police.strikes,
            police_window_ms: ms(police.window),
            police_cooloff_ms: ms(police.cooloff),
            mem_per_worker_mib: mib(mem.per_worker),
            mem_per_peer_mib: mib(mem.per_peer),
            reassembly_timeout_ms: ms(mem.reassembly_timeout),
            pool_keep_mib: mib(mem.pool_keep),
            mode: FlowMode::Lossless,
            lossy_credit_multiple: CreditMultiple::Factor(LOSSY_CREDIT_MULTIPLE as f64),
            on_loss: LossPolicy::Retransmit,
            max_msg_size: DEFAULT_MAX_MSG_SIZE as u64,
            pause_headroom: None,
            pause_xoff: None,
            pause_xon: None,
            pause_time_us: us(defaults::PAUSE_TIME),
            retransmit: Retransmit::GoBackN,
            rto_low_us: None,
            cc: CcKind::None,
            dcqcn: None,
            rate_cap_gbps: None,
            nak: false,
            rccc: false,
            idle: IdleMode::Spin,
            idle_after_us: DEFAULT_IDLE_AFTER_US,
            idle_sleep_us: DEFAULT_IDLE_SLEEP_US,
            checksum_offload: ChecksumOffload::Auto,
        }
    }
}

impl Serialize for CreditMultiple {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            CreditMultiple::Factor(f) => s.serialize_f64(*f),
            CreditMultiple::Unbounded => s.serialize_str("unbounded"),
        }
    }
}

impl<'de> Deserialize<'de> for CreditMultiple {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CreditMultipleVisitor)
    }
}

struct CreditMultipleVisitor;

impl serde::de::Visitor<'_> for CreditMultipleVisitor {
    type Value = CreditMultiple;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a number (multiple of the BDP) or \"unbounded\"")
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<CreditMultiple, E> {
        Ok(CreditMultiple::Factor(v))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<CreditMultiple, E> {
        Ok(CreditMultiple::Factor(v as f64))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<CreditMultiple, E> {
        Ok(CreditMultiple::Factor(v as f64))
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CreditMultiple, E> {
        match v {
            "unbounded" => Ok(CreditMultiple::Unbounded),
            _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
        }
    }
}
