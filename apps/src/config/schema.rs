//! The configuration's shape: the serde structs of the sections the tools
//! own (`[link]`, `[cores]`, `[workload]`, `[server]`, `[faults]`;
//! `deny_unknown_fields`) and their defaults, with `[transport]` the
//! engine's own type (`engine::config::TransportConfig`), and the error
//! type.

pub use super::mac::Mac;
use crate::config::link::LinkKind;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// `[transport]` is the engine's: one type, one default per key, one
/// validation, one resolution (`engine::config`).
pub use engine::config::{
    BdpSource, CreditMultiple, DcqcnSet, KeyError, Origins, Source, TransportConfig,
};
pub use engine::proto::{CcKind, FlowMode, LossPolicy, Retransmit};
/// The largest descriptor ring DPDK takes (the engine's limit; the others
/// on `[link]` are `engine::runtime`'s too, checked by the engine).
pub use engine::runtime::MAX_DESC;

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

impl From<KeyError> for ConfigError {
    fn from(e: KeyError) -> Self {
        ConfigError::Invalid {
            key: e.key,
            msg: e.msg,
        }
    }
}

/// The engine's builder names the `[link]` / `[cores]` key and says the
/// value and the limit itself: taken as it is.
impl From<engine::runtime::BuilderError> for ConfigError {
    fn from(e: engine::runtime::BuilderError) -> Self {
        ConfigError::invalid(e.key(), e.to_string())
    }
}

/// One run, as the file and overrides describe it. See `docs/configs.md`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub link: LinkConfig,
    pub cores: CoresConfig,
    pub transport: TransportConfig,
    pub workload: WorkloadConfig,
    pub server: ServerConfig,
    pub faults: FaultsConfig,
    /// Which keys the file and the flags set (`Config::load` records
    /// them): what resolution keeps and `--print-config` labels.
    #[serde(skip)]
    pub origins: Origins,
}

/// Two configs are equal when their values are, wherever they came from.
impl PartialEq for Config {
    fn eq(&self, o: &Self) -> bool {
        (&self.link, &self.cores, &self.transport) == (&o.link, &o.cores, &o.transport)
            && (&self.workload, &self.server, &self.faults) == (&o.workload, &o.server, &o.faults)
    }
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

/// `link.client_port`: the UDP port each client worker sends from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientPort {
    /// `rss` on a real NIC (`kind = "pci"`, whose server may steer by
    /// RSS), `fixed` on every other link.
    #[default]
    Auto,
    /// Client worker `i` sends from `udp_port + i`.
    Fixed,
    /// Client worker `i` sends from the first `udp_port + i + k x
    /// workers` whose hash carries its sessions to their server workers'
    /// queues under the server's RSS (and their answers to its own queue):
    /// `engine::nic::RssPorts`.
    Rss,
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
    /// How a client worker's UDP port is chosen (see [`ClientPort`]).
    pub client_port: ClientPort,
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
            client_port: ClientPort::Auto,
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
    /// Lets a server and a client one tool starts on this machine share a
    /// core (refused otherwise: two poll-mode loops time-slice it).
    pub allow_shared: bool,
}

impl Default for CoresConfig {
    fn default() -> Self {
        CoresConfig {
            server: vec![1],
            client: vec![0],
            allow_shared: false,
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
