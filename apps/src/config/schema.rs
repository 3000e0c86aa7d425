//! The configuration's shape: the serde structs of every TOML section
//! (`deny_unknown_fields`), their defaults, the error type, the limits
//! other modules check against, and the value types with their own text
//! forms (MACs, the lossy credit multiple).

pub use super::mac::Mac;
use crate::config::link::LinkKind;
use engine::proto::DEFAULT_MAX_MSG_SIZE;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// The largest descriptor ring DPDK takes (the engine's limit; the others
/// on `[link]` are `engine::runtime`'s too, checked by the engine).
pub use engine::runtime::MAX_DESC;
/// Pause mode's default headroom adds one receive burst: frames a poller may
/// already hold in its `rx_burst` when it decides to send XOFF.
pub const PAUSE_BURST_ENTRIES: u32 = engine::dpdk::BURST as u32;
/// Pause mode's default XOFF duration (PFC pauses for quanta of this order).
pub const DEFAULT_PAUSE_TIME_US: u64 = 200;
/// Selective retransmission's default short timeout (IRN's RTO_low).
pub const DEFAULT_RTO_LOW_US: u64 = 500;
/// Session table floor per endpoint: room for reconnects after resets
/// without waiting for freed numbers.
pub(super) const MIN_TABLE_SESSIONS: usize = 1024;

/// Why a configuration was rejected. Each variant prints as one line that
/// names the key; print it as is.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// TOML syntax error, or an override that is not `dotted.key=value`.
    #[error("config parse error: {msg}")]
    Parse { msg: String },
    /// A key no section has, in the file or in an override.
    #[error("unknown config key `{key}` ({expected})")]
    UnknownKey { key: String, expected: String },
    /// A value of the wrong type, out of range, or inconsistent with another
    /// key. `msg` names `key` and the limit.
    #[error("invalid config: {msg}")]
    Invalid { key: String, msg: String },
    /// The cause is in the message, not chained as a `source` (anyhow's
    /// `{:#}` would print it a second time).
    #[error("cannot read config file {}: {cause}", path.display())]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
}

impl ConfigError {
    /// The dotted key at fault, when there is one.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::UnknownKey { key, .. } | ConfigError::Invalid { key, .. } => Some(key),
            _ => None,
        }
    }

    pub(super) fn invalid(key: &str, msg: impl Into<String>) -> Self {
        ConfigError::Invalid {
            key: key.to_string(),
            msg: msg.into(),
        }
    }
}

/// One run, as the file and overrides describe it. See `docs/configs.md`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub link: LinkConfig,
    pub cores: CoresConfig,
    pub transport: TransportConfig,
    pub workload: WorkloadConfig,
    pub server: ServerConfig,
    pub faults: FaultsConfig,
}

/// `link.ipv4_checksum`: check the IPv4 header checksum on receive or
/// trust the link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ipv4Checksum {
    /// Trust the links that copy through shared memory and cannot corrupt a
    /// frame (memif, net_ring); verify on every other link.
    #[default]
    Auto,
    /// Always verify (a bad checksum is a `malformed` drop).
    Verify,
    /// Never verify: for a NIC known to drop frames with bad checksums.
    Trust,
}

/// `[link]`: the device, addresses, ring and mbuf geometry, EAL memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkConfig {
    pub kind: LinkKind,
    pub socket: String,
    pub iface: String,
    /// Network namespace of the client process (af_packet with the veth
    /// peer in a namespace: scripts/veth.sh up IFACE --netns NS).
    pub client_netns: Option<String>,
    /// af_packet: bypass the interface's qdisc (DPDK's default). Set false
    /// for a `tbf` rate limit on the interface to take effect.
    pub qdisc_bypass: bool,
    /// Whether the engine checks the IPv4 header checksum of received
    /// frames (see [`Ipv4Checksum`]).
    pub ipv4_checksum: Ipv4Checksum,
    pub pci: Option<String>,
    pub vdev: Option<String>,
    pub server_mac: Option<Mac>,
    pub client_mac: Option<Mac>,
    pub server_ip: Ipv4Addr,
    pub client_ip: Ipv4Addr,
    pub udp_port: u16,
    pub mtu: u32,
    pub rx_desc: u32,
    pub tx_desc: u32,
    pub mbuf_data_room: u32,
    pub mem_mb: u32,
    pub huge: bool,
    pub file_prefix: Option<String>,
    pub eal_args: Vec<String>,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            kind: LinkKind::Memif,
            socket: "/tmp/rpc-engine.sock".into(),
            iface: "rpcveth0".into(),
            client_netns: None,
            qdisc_bypass: true,
            ipv4_checksum: Ipv4Checksum::Auto,
            pci: None,
            vdev: None,
            server_mac: None,
            client_mac: None,
            server_ip: Ipv4Addr::new(127, 77, 0, 2),
            client_ip: Ipv4Addr::new(127, 77, 0, 1),
            udp_port: 31851,
            mtu: 1500,
            rx_desc: 1024,
            tx_desc: 1024,
            mbuf_data_room: 2048,
            mem_mb: 512,
            huge: false,
            file_prefix: None,
            eal_args: Vec::new(),
        }
    }
}

/// `[cores]`: one endpoint (worker thread, queue pair) per listed core.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CoresConfig {
    pub server: Vec<u32>,
    pub client: Vec<u32>,
}

impl Default for CoresConfig {
    fn default() -> Self {
        CoresConfig {
            server: vec![1],
            client: vec![0],
        }
    }
}

/// Lossless (credits backed by reserved ring entries), lossy, or pause
/// (nothing reserved; the receiver pauses its senders when its ring fills).
/// Also `--mode`'s values (clap), spelled as in the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Lossless,
    Lossy,
    Pause,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Lossless => "lossless",
            Mode::Lossy => "lossy",
            Mode::Pause => "pause",
        }
    }
}

/// `transport.retransmit`: how a sender repairs loss.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetransmitKind {
    /// Resend everything from the first unanswered packet (eRPC).
    #[default]
    GoBackN,
    /// Resend only what the receiver reports missing (IRN).
    Selective,
}

impl RetransmitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RetransmitKind::GoBackN => "go_back_n",
            RetransmitKind::Selective => "selective",
        }
    }
}

/// `transport.cc`: the client sessions' rate control.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CongestionControl {
    /// Credits alone.
    #[default]
    None,
    /// RTT gradient (eRPC's Timely).
    Timely,
    /// ECN marks and congestion notifications (DCQCN).
    Dcqcn,
}

impl CongestionControl {
    pub fn as_str(self) -> &'static str {
        match self {
            CongestionControl::None => "none",
            CongestionControl::Timely => "timely",
            CongestionControl::Dcqcn => "dcqcn",
        }
    }
}

/// `transport.dcqcn`: DCQCN's named parameter sets (see
/// `engine::proto::DcqcnParams`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DcqcnPreset {
    /// The paper's constants, tuned on 40 Gb/s.
    Paper40g,
    /// The HPCC authors' DCQCN at 100 Gb/s (Mellanox's variant).
    Hpcc100g,
}

impl DcqcnPreset {
    pub fn as_str(self) -> &'static str {
        match self {
            DcqcnPreset::Paper40g => "paper40g",
            DcqcnPreset::Hpcc100g => "hpcc100g",
        }
    }
}

/// What a loss does in lossless mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnLoss {
    #[default]
    Retransmit,
    Reset,
}

/// Where the default credits' bandwidth-delay product comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BdpSource {
    /// `rpc-bench run` measures the link with the raw floor first (MTU
    /// streaming rate x the round trip of a 32-frame burst) and uses that;
    /// where no floor runs (rpc-client alone, `--no-floor`, net_ring), the
    /// configured `link_gbps` and `rtt_us`.
    #[default]
    Measured,
    /// Always `transport.bdp_gbps` (or `link_gbps`) x `transport.rtt_us`.
    Config,
}

/// Lossy-mode credits as a multiple of the BDP, or no limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CreditMultiple {
    Factor(f64),
    Unbounded,
}

/// `[transport]`: credits, window, timers, flow mode, loss repair, rate
/// control.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TransportConfig {
    pub credits: Option<u16>,
    /// Measured BDP (when a floor runs first) or the configured one.
    pub bdp: BdpSource,
    pub link_gbps: f64,
    /// The rate the BDP is computed from when it differs from the line
    /// rate: `rpc-bench run` sets it to the floor's round-trip train rate
    /// (`bdp.rs`); `None`: `link_gbps`.
    pub bdp_gbps: Option<f64>,
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
    /// reserve, per cent; `None`: the engine's 25 (rpc-bench: 100 for its
    /// own client).
    pub session_ring_share_pct: Option<u8>,
    /// Server, lossless: the most of the receive ring one client address
    /// may reserve, per cent; `None`: the engine's 25 (rpc-bench: 100).
    pub peer_ring_share_pct: Option<u8>,
    /// Server: how long a live session's liveness probe may go unanswered
    /// before a ConnectReq with a new token replaces it.
    pub restart_probe_wait_ms: u64,
    /// Server: from this fill of the session table (per cent of
    /// max_sessions) a ConnectReq must bring the server's cookie (one
    /// extra round trip); 0: always, 100: only when full.
    pub cookie_above_pct: u8,
    /// Server: wrong tokens one source address may send per second before
    /// the server withholds its replies to it and reports it.
    pub wrong_tokens_per_sec: u32,
    /// Server: reassembly + stored-response bytes per worker / per client
    /// address, MiB (`engine::proto::MemBudget`).
    pub mem_per_worker_mib: u64,
    pub mem_per_peer_mib: u64,
    /// Server: an incomplete request (or unpulled response) is dropped
    /// after this long without progress.
    pub reassembly_timeout_ms: u64,
    /// Free message buffers a worker's pool keeps, MiB over all sizes.
    pub pool_keep_mib: u64,
    pub mode: Mode,
    pub lossy_credit_multiple: CreditMultiple,
    pub on_loss: OnLoss,
    pub max_msg_size: u64,
    /// Pause mode: ring entries kept free above XOFF; `None`: 2 x the BDP
    /// in packets + one receive burst (see [`Config::pause_headroom`]).
    pub pause_headroom: Option<u32>,
    /// Pause mode: occupancy that sends XOFF; `None`: `rx_desc - headroom`.
    pub pause_xoff: Option<u32>,
    /// Pause mode: occupancy that sends XON; `None`: half of XOFF.
    pub pause_xon: Option<u32>,
    /// Pause mode: how long one XOFF stops a sender.
    pub pause_time_us: u64,
    pub retransmit: RetransmitKind,
    /// Selective mode's short timeout (at most 3 packets in flight);
    /// `None`: 500 us, or `rto_us` when that is shorter.
    pub rto_low_us: Option<u64>,
    pub cc: CongestionControl,
    /// DCQCN's parameter set; `None`: the one that fits `link_gbps`
    /// (`paper40g` below 50 Gb/s, `hpcc100g` from 50 Gb/s).
    pub dcqcn: Option<DcqcnPreset>,
    /// Cap on every client session's rate, Gb/s (paced, with or without
    /// `cc`); at most `link_gbps`.
    pub rate_cap_gbps: Option<f64>,
    /// Go-back-N: the server NAKs the first gap and the client goes back
    /// at once (RoCE's rule); off: only the timeout recovers (eRPC's).
    pub nak: bool,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            credits: None,
            bdp: BdpSource::Measured,
            link_gbps: 10.0,
            bdp_gbps: None,
            rtt_us: 10.0,
            req_window: 8,
            rto_us: 5000,
            scan_us: 500,
            session_timeout_ms: 1000,
            connect_timeout_ms: 3000,
            connect_retry_ms: 20,
            idle_timeout_ms: 10_000,
            half_open_timeout_ms: 3_000,
            keepalive_ms: 1_000,
            max_sessions_per_peer: 256,
            session_ring_share_pct: None,
            peer_ring_share_pct: None,
            restart_probe_wait_ms: 100,
            cookie_above_pct: 50,
            wrong_tokens_per_sec: 64,
            mem_per_worker_mib: 512,
            mem_per_peer_mib: 128,
            reassembly_timeout_ms: 1_000,
            pool_keep_mib: 64,
            mode: Mode::Lossless,
            lossy_credit_multiple: CreditMultiple::Factor(4.0),
            on_loss: OnLoss::Retransmit,
            max_msg_size: DEFAULT_MAX_MSG_SIZE as u64,
            pause_headroom: None,
            pause_xoff: None,
            pause_xon: None,
            pause_time_us: DEFAULT_PAUSE_TIME_US,
            retransmit: RetransmitKind::GoBackN,
            rto_low_us: None,
            cc: CongestionControl::None,
            dcqcn: None,
            rate_cap_gbps: None,
            nak: false,
        }
    }
}

/// `workload.kind`, also `--workload`'s values (clap), spelled as in the
/// file; the command-line habit `open-loop` is an alias.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// Closed loop, one request in flight per session: latency.
    #[default]
    Latency,
    /// Closed loop with a window: request rate.
    Throughput,
    /// Multi-packet messages: the memcpy path and goodput.
    Large,
    /// Every client session targets server worker 0.
    Incast,
    /// Requests at a fixed rate regardless of completions.
    #[serde(alias = "open-loop")]
    #[value(alias = "open-loop")]
    OpenLoop,
}

impl WorkloadKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Latency => "latency",
            WorkloadKind::Throughput => "throughput",
            WorkloadKind::Large => "large",
            WorkloadKind::Incast => "incast",
            WorkloadKind::OpenLoop => "open_loop",
        }
    }
}

/// `[workload]`: what the client does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkloadConfig {
    pub kind: WorkloadKind,
    pub req_size: u64,
    pub resp_size: u64,
    /// `None`: 1 for latency, 8 otherwise; see [`Config::window`].
    pub window: Option<u32>,
    pub sessions_per_thread: u32,
    pub rate_rps: Option<f64>,
    pub seconds: f64,
    pub warmup_seconds: f64,
    pub max_requests: Option<u64>,
    /// Check every byte of every request (server) and response (client).
    /// `false` measures the transport alone: bodies are not filled or read.
    pub verify: bool,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            kind: WorkloadKind::Latency,
            req_size: 32,
            resp_size: 32,
            window: None,
            sessions_per_thread: 1,
            rate_rps: None,
            seconds: 3.0,
            warmup_seconds: 0.5,
            max_requests: None,
            verify: true,
        }
    }
}

/// `[server]`: how the request handler behaves.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    pub work_ns: u64,
    pub background: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropKind {
    #[default]
    None,
    Uniform,
    GilbertElliott,
}

/// Which way injected drops apply, at each endpoint's port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    #[default]
    Rx,
    Tx,
}

/// `[faults]`: seeded drop injection and ECN marking.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultsConfig {
    pub drop: DropKind,
    pub p: Option<f64>,
    pub ge_p_good_to_bad: Option<f64>,
    pub ge_p_bad_to_good: Option<f64>,
    pub ge_loss_good: Option<f64>,
    pub ge_loss_bad: Option<f64>,
    pub direction: Direction,
    pub seed: u64,
    /// Probability that the injected marker sets ECN CE on a received
    /// ECN-capable frame (same seed and direction as the drops); `None`:
    /// no marking. See [`Config::ecn_mark_p`].
    pub ecn_p: Option<f64>,
}

impl Default for FaultsConfig {
    fn default() -> Self {
        FaultsConfig {
            drop: DropKind::None,
            p: None,
            ge_p_good_to_bad: None,
            ge_p_bad_to_good: None,
            ge_loss_good: None,
            ge_loss_bad: None,
            direction: Direction::Rx,
            seed: 1,
            ecn_p: None,
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
