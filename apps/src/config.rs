//! The run configuration: one TOML file (every section and key optional, see
//! `docs/configs.md`), `dotted.key=value` overrides from the command line,
//! and one validation pass that rejects impossible combinations (credits the
//! receive ring cannot back, an MTU the mbufs cannot hold, cores the machine
//! does not have, ...) with a message naming the key and the limit.
//!
//! Contract: [`Config::load`] parses (unknown keys and wrong types are errors
//! naming the dotted key, for the file and the overrides alike); the caller
//! then calls [`Config::validate`] once; after that the mapping helpers
//! ([`Config::endpoint_config`], [`Config::port_config`], ...) produce
//! engine configurations that pass the engine's own checks.

use crate::link::{LinkArgs, LinkKind, Role};
use engine::dpdk::PortConfig;
use engine::fault::DropModel;
use engine::proto::{
    bdp_credits, EndpointAddr, EndpointConfig, FlowMode, LossPolicy, PeerAddr,
    DEFAULT_MAX_MSG_SIZE, MAX_MTU, MAX_PKTS_PER_MSG, MAX_REQ_WINDOW, MAX_SESSIONS, MIN_MTU,
    PKT_OVERHEAD,
};
use engine::time::Duration;
use engine::wire::MacAddr;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Ethernet header bytes added to the IP MTU to get the frame an mbuf holds
/// (no VLAN tag, no FCS: DPDK strips it).
pub const ETH_HEADER_LEN: usize = 14;
/// Descriptor ring bounds: DPDK PMDs accept power-of-two sizes in this range
/// (`u16` in `rte_eth_rx_queue_setup`; 32 is below every PMD's burst need).
pub const MIN_DESC: u32 = 32;
pub const MAX_DESC: u32 = 32768;
/// Largest mbuf data room: `rte_pktmbuf_pool_create` takes the data room plus
/// the 128-byte headroom as a `u16`.
pub const MAX_MBUF_DATA_ROOM: u32 = u16::MAX as u32 - 128;
/// Longest af_packet interface name: IFNAMSIZ is 16 with the NUL, and the
/// client side appends "p" (see scripts/veth.sh).
pub const MAX_IFACE_LEN: usize = 14;
/// Longest memif socket path: `sun_path` is 108 bytes with the NUL.
pub const MAX_SOCKET_PATH: usize = 107;
/// Session table floor per endpoint: room for reconnects after resets
/// without waiting for freed numbers.
const MIN_TABLE_SESSIONS: usize = 1024;

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
    #[error("cannot read config file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
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

    fn invalid(key: &str, msg: impl Into<String>) -> Self {
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

/// Lossless (credits backed by reserved ring entries) or lossy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Lossless,
    Lossy,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Lossless => "lossless",
            Mode::Lossy => "lossy",
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

/// Lossy-mode credits as a multiple of the BDP, or no limit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CreditMultiple {
    Factor(f64),
    Unbounded,
}

/// `[transport]`: credits, window, timers, flow mode.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TransportConfig {
    pub credits: Option<u16>,
    pub link_gbps: f64,
    pub rtt_us: f64,
    pub req_window: u32,
    pub rto_us: u64,
    pub scan_us: u64,
    pub session_timeout_ms: u64,
    pub connect_timeout_ms: u64,
    pub connect_retry_ms: u64,
    pub mode: Mode,
    pub lossy_credit_multiple: CreditMultiple,
    pub on_loss: OnLoss,
    pub max_msg_size: u64,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            credits: None,
            link_gbps: 10.0,
            rtt_us: 10.0,
            req_window: 8,
            rto_us: 5000,
            scan_us: 500,
            session_timeout_ms: 1000,
            connect_timeout_ms: 3000,
            connect_retry_ms: 20,
            mode: Mode::Lossless,
            lossy_credit_multiple: CreditMultiple::Factor(4.0),
            on_loss: OnLoss::Retransmit,
            max_msg_size: DEFAULT_MAX_MSG_SIZE as u64,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// `[faults]`: seeded drop injection.
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
        }
    }
}

/// What validation needs to know about the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidationEnv {
    /// Cores 0..online_cores exist.
    pub online_cores: usize,
}

impl ValidationEnv {
    /// This machine: the highest online CPU + 1 from
    /// /sys/devices/system/cpu/online, else `available_parallelism`.
    pub fn detect() -> Self {
        let from_sysfs = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|s| parse_cpu_list_end(s.trim()));
        let online_cores = from_sysfs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        });
        ValidationEnv { online_cores }
    }
}

/// "0-3,5" -> 6 (one past the highest listed CPU).
fn parse_cpu_list_end(s: &str) -> Option<usize> {
    s.split(',')
        .filter_map(|r| r.rsplit('-').next()?.trim().parse::<usize>().ok())
        .max()
        .map(|m| m + 1)
}

// ---------------------------------------------------------------------------
// Loading: file + overrides -> toml::Value -> Config.

impl Config {
    /// Parses a whole TOML document (no overrides).
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        let value = parse_document(text)?;
        from_value(value)
    }

    /// Reads `path` (or starts from all defaults when `None`), applies each
    /// `dotted.key=value` override onto the parsed document, then
    /// deserializes, so overrides get the same key and type checks.
    pub fn load(path: Option<&Path>, overrides: &[String]) -> Result<Config, ConfigError> {
        let mut value = match path {
            Some(p) => {
                let text = std::fs::read_to_string(p).map_err(|source| ConfigError::Io {
                    path: p.to_path_buf(),
                    source,
                })?;
                parse_document(&text).map_err(|e| match e {
                    ConfigError::Parse { msg } => ConfigError::Parse {
                        msg: format!("{}: {msg}", p.display()),
                    },
                    other => other,
                })?
            }
            None => toml::Table::new(),
        };
        for o in overrides {
            apply_override(&mut value, o)?;
        }
        from_value(value)
    }

    /// The configuration as TOML (every key, defaults filled in), for logs
    /// and for passing one resolved config to child processes.
    pub fn to_toml_string(&self) -> String {
        // Every field serializes (no maps with non-string keys), so this
        // cannot fail; fall back to a comment rather than panic.
        toml::to_string(self).unwrap_or_else(|e| format!("# unserializable config: {e}\n"))
    }
}

fn parse_document(text: &str) -> Result<toml::Table, ConfigError> {
    text.parse::<toml::Table>().map_err(|e| ConfigError::Parse {
        msg: e.to_string().trim_end().to_string(),
    })
}

fn from_value(table: toml::Table) -> Result<Config, ConfigError> {
    let value = toml::Value::Table(table);
    serde_path_to_error::deserialize::<_, Config>(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        let msg = e.into_inner().to_string();
        classify_serde_error(&path, msg)
    })
}

/// Turns a serde message at `path` into `UnknownKey` or `Invalid`.
fn classify_serde_error(path: &str, msg: String) -> ConfigError {
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        if let Some((field, expected)) = rest.split_once('`') {
            // serde_path_to_error may or may not have pushed the field itself.
            let key = if path.is_empty() {
                field.to_string()
            } else if path == field || path.ends_with(&format!(".{field}")) {
                path.to_string()
            } else {
                format!("{path}.{field}")
            };
            let expected = expected.trim_start_matches(',').trim().to_string();
            return ConfigError::UnknownKey { key, expected };
        }
    }
    let key = if path.is_empty() { "<top level>" } else { path };
    ConfigError::invalid(key, format!("{key}: {msg}"))
}

/// Applies one `dotted.key=value` onto the document. The value is parsed as
/// a TOML value (`16`, `true`, `[1, 2]`, `"x"`), else taken as a string
/// (`throughput`, `/tmp/a.sock`, `10.0.0.1`).
fn apply_override(doc: &mut toml::Table, item: &str) -> Result<(), ConfigError> {
    let Some((key, raw)) = item.split_once('=') else {
        return Err(ConfigError::Parse {
            msg: format!("override `{item}` is not dotted.key=value"),
        });
    };
    let key = key.trim();
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(ConfigError::Parse {
            msg: format!("override `{item}`: empty key segment in `{key}`"),
        });
    }
    let value = parse_override_value(raw.trim());
    let (last, sections) = parts.split_last().ok_or_else(|| ConfigError::Parse {
        msg: format!("override `{item}` has no key"),
    })?;
    let mut table = doc;
    for (i, part) in sections.iter().enumerate() {
        let entry = table
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        table = match entry {
            toml::Value::Table(t) => t,
            _ => {
                let prefix = parts[..=i].join(".");
                return Err(ConfigError::invalid(
                    &prefix,
                    format!("{prefix} is a value, not a section (override `{item}`)"),
                ));
            }
        };
    }
    table.insert(last.to_string(), value);
    Ok(())
}

fn parse_override_value(raw: &str) -> toml::Value {
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.into())),
        Err(_) => toml::Value::String(raw.into()),
    }
}

// ---------------------------------------------------------------------------
// Derived values.

impl Config {
    /// Outstanding requests per session: `workload.window`, else 1 for the
    /// latency workload and 8 for the others.
    pub fn window(&self) -> u32 {
        self.workload.window.unwrap_or(match self.workload.kind {
            // One 8 MiB request at a time: several in flight on one session
            // queue their handlers behind each other past the RTO.
            WorkloadKind::Latency | WorkloadKind::Large => 1,
            _ => 8,
        })
    }

    /// The bandwidth-delay product in packets for `transport.link_gbps`,
    /// `transport.rtt_us` and `link.mtu`: `ceil(rate x RTT / MTU)`.
    pub fn bdp_credits(&self) -> u16 {
        let t = &self.transport;
        let bps = (t.link_gbps.max(0.0) * 1e9).min(u64::MAX as f64) as u64;
        let rtt_ns = (t.rtt_us.max(0.0) * 1e3).round().min(u64::MAX as f64) as u64;
        bdp_credits(bps, Duration::from_nanos(rtt_ns), self.link.mtu as usize)
    }

    /// Session credits: `transport.credits` when set; else the BDP in
    /// lossless mode, and `lossy_credit_multiple` x BDP (or `u16::MAX` when
    /// unbounded) in lossy mode.
    pub fn effective_credits(&self) -> u16 {
        if let Some(c) = self.transport.credits {
            return c;
        }
        let bdp = self.bdp_credits();
        match (self.transport.mode, self.transport.lossy_credit_multiple) {
            (Mode::Lossless, _) => bdp,
            (Mode::Lossy, CreditMultiple::Unbounded) => u16::MAX,
            (Mode::Lossy, CreditMultiple::Factor(f)) => {
                (bdp as f64 * f).ceil().clamp(1.0, u16::MAX as f64) as u16
            }
        }
    }

    /// The server worker that client worker `client_worker`'s session number
    /// `session` connects to: worker 0 for incast, else sessions spread
    /// round-robin over the server workers.
    pub fn target_server_worker(&self, client_worker: usize, session: usize) -> usize {
        let servers = self.cores.server.len().max(1);
        match self.workload.kind {
            WorkloadKind::Incast => 0,
            _ => (client_worker * self.workload.sessions_per_thread as usize + session) % servers,
        }
    }

    /// Sessions the busiest server worker accepts, per [`Self::target_server_worker`].
    pub fn max_sessions_per_server_worker(&self) -> usize {
        let mut per = vec![0usize; self.cores.server.len().max(1)];
        for c in 0..self.cores.client.len() {
            for s in 0..self.workload.sessions_per_thread as usize {
                per[self.target_server_worker(c, s)] += 1;
            }
        }
        per.into_iter().max().unwrap_or(0)
    }

    /// Server worker `i`'s address, as a client's connect target.
    pub fn server_peer(&self, server_worker: usize) -> PeerAddr {
        PeerAddr {
            mac: self.link.server_mac.map(|m| m.0),
            ip: self.link.server_ip,
            port: self.worker_port(server_worker),
        }
    }

    /// UDP port of worker `i` (both roles): `link.udp_port + i`, which is
    /// what per-queue flow steering on a real NIC matches on.
    pub fn worker_port(&self, worker_index: usize) -> u16 {
        self.link.udp_port.saturating_add(worker_index as u16)
    }

    /// The configured MAC of `role`'s port, if any (else the port's own).
    pub fn mac(&self, role: Role) -> Option<MacAddr> {
        match role {
            Role::Server => self.link.server_mac.map(|m| m.0),
            Role::Client => self.link.client_mac.map(|m| m.0),
        }
    }

    pub fn cores(&self, role: Role) -> &[u32] {
        match role {
            Role::Server => &self.cores.server,
            Role::Client => &self.cores.client,
        }
    }

    /// The engine configuration of worker `worker_index` of `role`, whose
    /// port has MAC `mac`. Valid for the engine once `validate` passed.
    pub fn endpoint_config(&self, role: Role, worker_index: usize, mac: MacAddr) -> EndpointConfig {
        let t = &self.transport;
        let ip = match role {
            Role::Server => self.link.server_ip,
            Role::Client => self.link.client_ip,
        };
        let sessions = match role {
            Role::Server => self.max_sessions_per_server_worker(),
            Role::Client => self.workload.sessions_per_thread as usize,
        };
        let mode = match t.mode {
            Mode::Lossy => FlowMode::Lossy,
            Mode::Lossless => FlowMode::Lossless {
                on_loss: match t.on_loss {
                    OnLoss::Retransmit => LossPolicy::Retransmit,
                    OnLoss::Reset => LossPolicy::ResetSession,
                },
            },
        };
        EndpointConfig {
            local: EndpointAddr {
                mac,
                ip,
                port: self.worker_port(worker_index),
            },
            mtu: self.link.mtu as usize,
            session_credits: self.effective_credits(),
            req_window: t.req_window as usize,
            rx_ring_entries: self.link.rx_desc as usize,
            max_sessions: sessions.clamp(MIN_TABLE_SESSIONS, MAX_SESSIONS),
            max_msg_size: t.max_msg_size as usize,
            rto: Duration::from_micros(t.rto_us),
            scan_interval: Duration::from_micros(t.scan_us),
            session_timeout: Duration::from_millis(t.session_timeout_ms),
            connect_retry: Duration::from_millis(t.connect_retry_ms),
            connect_timeout: Duration::from_millis(t.connect_timeout_ms),
            mode,
            seed: token_seed(role, worker_index),
        }
    }

    /// Port setup for `role`: one queue pair per worker core, the ring sizes
    /// and MTU of `[link]`; promiscuous on virtual devices (peer MACs are
    /// learned late), off on a real NIC.
    pub fn port_config(&self, role: Role) -> PortConfig {
        PortConfig {
            queues: self.cores(role).len() as u16,
            rx_desc: self.link.rx_desc as u16,
            tx_desc: self.link.tx_desc as u16,
            mtu: Some(self.link.mtu as u16),
            promiscuous: self.link.kind != LinkKind::Pci,
            ..PortConfig::default()
        }
    }

    /// The `[link]` section as the binaries' shared link flags.
    pub fn link_args(&self) -> LinkArgs {
        let l = &self.link;
        LinkArgs {
            link: l.kind,
            socket: l.socket.clone(),
            iface: l.iface.clone(),
            pci: l.pci.clone(),
            vdev: l.vdev.clone(),
            file_prefix: l.file_prefix.clone(),
            huge: l.huge,
            mem_mb: l.mem_mb,
            log_level: 4,
            eal_args: l.eal_args.clone(),
            client_netns: l.client_netns.clone(),
            link_timeout_ms: 10_000,
            qdisc_bypass: l.qdisc_bypass,
        }
    }

    /// The injected-drop model of `[faults]`.
    pub fn drop_model(&self) -> DropModel {
        let f = &self.faults;
        match f.drop {
            DropKind::None => DropModel::None,
            DropKind::Uniform => DropModel::Uniform {
                p: f.p.unwrap_or(0.0),
            },
            DropKind::GilbertElliott => DropModel::GilbertElliott {
                p_good_to_bad: f.ge_p_good_to_bad.unwrap_or(0.0),
                p_bad_to_good: f.ge_p_bad_to_good.unwrap_or(1.0),
                loss_good: f.ge_loss_good.unwrap_or(0.0),
                loss_bad: f.ge_loss_bad.unwrap_or(1.0),
            },
        }
    }
}

/// Session-token seed: random per process (a restarted server must not hand
/// out the tokens of its previous run, or stale packets would be accepted).
fn token_seed(role: Role, worker_index: usize) -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one((
        role.as_str(),
        worker_index,
        std::process::id(),
    ))
}

// ---------------------------------------------------------------------------
// Validation.

impl Config {
    /// Checks every value once, both roles' cores included. See
    /// `docs/configs.md` for each key's limit.
    pub fn validate(&self, env: &ValidationEnv) -> Result<(), ConfigError> {
        self.validate_inner(env, None)
    }

    /// As [`Self::validate`], but checks only `role`'s cores against this
    /// machine (for two machines, each running one role).
    pub fn validate_for(&self, env: &ValidationEnv, role: Role) -> Result<(), ConfigError> {
        self.validate_inner(env, Some(role))
    }

    fn validate_inner(&self, env: &ValidationEnv, role: Option<Role>) -> Result<(), ConfigError> {
        self.validate_link()?;
        for r in [Role::Server, Role::Client] {
            let on_this_machine = role.is_none() || role == Some(r);
            self.validate_cores(r, on_this_machine.then_some(env))?;
        }
        self.validate_transport()?;
        self.validate_workload()?;
        self.validate_credits()?;
        self.validate_faults()
    }

    fn validate_link(&self) -> Result<(), ConfigError> {
        let l = &self.link;
        range("link.mtu", l.mtu as u64, MIN_MTU as u64, MAX_MTU as u64)?;
        for (key, n) in [("link.rx_desc", l.rx_desc), ("link.tx_desc", l.tx_desc)] {
            range(key, n as u64, MIN_DESC as u64, MAX_DESC as u64)?;
            if !n.is_power_of_two() {
                return Err(ConfigError::invalid(
                    key,
                    format!("{key} = {n} must be a power of two"),
                ));
            }
        }
        range(
            "link.mbuf_data_room",
            l.mbuf_data_room as u64,
            1,
            MAX_MBUF_DATA_ROOM as u64,
        )?;
        let frame = l.mtu as usize + ETH_HEADER_LEN;
        if frame > l.mbuf_data_room as usize {
            return Err(ConfigError::invalid(
                "link.mtu",
                format!(
                    "link.mtu = {} needs {frame}-byte frames but link.mbuf_data_room = {}",
                    l.mtu, l.mbuf_data_room
                ),
            ));
        }
        if l.mem_mb == 0 {
            return Err(ConfigError::invalid(
                "link.mem_mb",
                "link.mem_mb must be > 0",
            ));
        }
        if l.udp_port == 0 {
            return Err(ConfigError::invalid(
                "link.udp_port",
                "link.udp_port must be > 0",
            ));
        }
        for (key, mac) in [
            ("link.server_mac", l.server_mac),
            ("link.client_mac", l.client_mac),
        ] {
            if let Some(m) = mac.filter(|m| !m.0.is_unicast()) {
                return Err(ConfigError::invalid(
                    key,
                    format!("{key} = {} must be a unicast MAC", m.0),
                ));
            }
        }
        if l.server_ip == l.client_ip {
            return Err(ConfigError::invalid(
                "link.client_ip",
                format!(
                    "link.client_ip = {} must differ from link.server_ip",
                    l.client_ip
                ),
            ));
        }
        self.validate_device()
    }

    fn validate_device(&self) -> Result<(), ConfigError> {
        let l = &self.link;
        if l.vdev.is_some() {
            return Ok(()); // a raw spec overrides everything derived from kind
        }
        match l.kind {
            LinkKind::Memif if l.socket.is_empty() || l.socket.len() > MAX_SOCKET_PATH => {
                Err(ConfigError::invalid(
                    "link.socket",
                    format!("link.socket must be 1..={MAX_SOCKET_PATH} bytes (sun_path)"),
                ))
            }
            LinkKind::AfPacket if l.iface.is_empty() || l.iface.len() > MAX_IFACE_LEN => {
                Err(ConfigError::invalid(
                    "link.iface",
                    format!(
                        "link.iface = {:?} must be 1..={MAX_IFACE_LEN} characters (the client side appends \"p\")",
                        l.iface
                    ),
                ))
            }
            LinkKind::Pci if l.pci.is_none() => Err(ConfigError::invalid(
                "link.pci",
                "link.kind = pci needs link.pci (e.g. \"0000:01:00.0\")",
            )),
            LinkKind::Pci if !l.huge => Err(ConfigError::invalid(
                "link.huge",
                "link.kind = pci needs link.huge = true (NIC DMA needs hugepage memory)",
            )),
            _ => Ok(()),
        }
    }

    fn validate_cores(&self, role: Role, env: Option<&ValidationEnv>) -> Result<(), ConfigError> {
        let key = format!("cores.{}", role.as_str());
        let list = self.cores(role);
        if list.is_empty() {
            return Err(ConfigError::invalid(
                &key,
                format!("{key} is empty (one core per worker)"),
            ));
        }
        let mut seen = BTreeSet::new();
        for &c in list {
            if !seen.insert(c) {
                return Err(ConfigError::invalid(
                    &key,
                    format!("{key} lists core {c} twice"),
                ));
            }
            if let Some(env) = env {
                if c as usize >= env.online_cores {
                    return Err(ConfigError::invalid(
                        &key,
                        format!(
                            "{key} contains core {c} but this machine has {} online cores (0-{})",
                            env.online_cores,
                            env.online_cores.saturating_sub(1)
                        ),
                    ));
                }
            }
        }
        let last_port = self.link.udp_port as usize + list.len() - 1;
        if last_port > u16::MAX as usize {
            return Err(ConfigError::invalid(
                "link.udp_port",
                format!(
                    "link.udp_port = {} + {} workers runs past port 65535",
                    self.link.udp_port,
                    list.len()
                ),
            ));
        }
        Ok(())
    }

    fn validate_transport(&self) -> Result<(), ConfigError> {
        let t = &self.transport;
        positive("transport.link_gbps", t.link_gbps)?;
        positive("transport.rtt_us", t.rtt_us)?;
        if t.credits == Some(0) {
            return Err(ConfigError::invalid(
                "transport.credits",
                "transport.credits = 0 must be at least 1",
            ));
        }
        range(
            "transport.req_window",
            t.req_window as u64,
            1,
            MAX_REQ_WINDOW as u64,
        )?;
        range("transport.scan_us", t.scan_us, 1, u64::MAX / 1000)?;
        range("transport.rto_us", t.rto_us, t.scan_us, u64::MAX / 1000)
            .map_err(|_| limit_err("transport.rto_us", t.rto_us, "transport.scan_us", t.scan_us))?;
        let rto_ms_ceil = t.rto_us.div_ceil(1000);
        range(
            "transport.session_timeout_ms",
            t.session_timeout_ms,
            rto_ms_ceil,
            u64::MAX / 1_000_000,
        )
        .map_err(|_| {
            limit_err(
                "transport.session_timeout_ms",
                t.session_timeout_ms,
                "transport.rto_us / 1000",
                rto_ms_ceil,
            )
        })?;
        range(
            "transport.connect_retry_ms",
            t.connect_retry_ms,
            1,
            u64::MAX / 1_000_000,
        )?;
        range(
            "transport.connect_timeout_ms",
            t.connect_timeout_ms,
            t.connect_retry_ms,
            u64::MAX / 1_000_000,
        )
        .map_err(|_| {
            limit_err(
                "transport.connect_timeout_ms",
                t.connect_timeout_ms,
                "transport.connect_retry_ms",
                t.connect_retry_ms,
            )
        })?;
        if let CreditMultiple::Factor(f) = t.lossy_credit_multiple {
            positive("transport.lossy_credit_multiple", f)?;
        }
        if t.mode == Mode::Lossy && t.on_loss == OnLoss::Reset {
            return Err(ConfigError::invalid(
                "transport.on_loss",
                "transport.on_loss = reset only applies in lossless mode (transport.mode = lossy)",
            ));
        }
        let per_pkt = self.link.mtu as u64 - PKT_OVERHEAD as u64;
        let max_msg = (MAX_PKTS_PER_MSG as u64 * per_pkt).min(u32::MAX as u64);
        range("transport.max_msg_size", t.max_msg_size, 1, max_msg).map_err(|_| {
            ConfigError::invalid(
                "transport.max_msg_size",
                format!(
                    "transport.max_msg_size = {} must be in 1..={max_msg} ({MAX_PKTS_PER_MSG} packets of {per_pkt} bytes at link.mtu = {})",
                    t.max_msg_size, self.link.mtu
                ),
            )
        })
    }

    fn validate_workload(&self) -> Result<(), ConfigError> {
        let w = &self.workload;
        let max = self.transport.max_msg_size;
        for (key, n) in [
            ("workload.req_size", w.req_size),
            ("workload.resp_size", w.resp_size),
        ] {
            if n > max {
                return Err(ConfigError::invalid(
                    key,
                    format!("{key} = {n} exceeds transport.max_msg_size = {max}"),
                ));
            }
        }
        range(
            "workload.window",
            self.window() as u64,
            1,
            MAX_REQ_WINDOW as u64,
        )?;
        let total = self.cores.client.len() as u64 * w.sessions_per_thread as u64;
        range(
            "workload.sessions_per_thread",
            w.sessions_per_thread as u64,
            1,
            MAX_SESSIONS as u64,
        )?;
        if total > MAX_SESSIONS as u64 {
            return Err(ConfigError::invalid(
                "workload.sessions_per_thread",
                format!(
                    "workload.sessions_per_thread = {} x {} client cores = {total} sessions exceeds {MAX_SESSIONS}",
                    w.sessions_per_thread,
                    self.cores.client.len()
                ),
            ));
        }
        match w.rate_rps {
            None if w.kind == WorkloadKind::OpenLoop => {
                return Err(ConfigError::invalid(
                    "workload.rate_rps",
                    "workload.kind = open_loop needs workload.rate_rps (requests per second)",
                ));
            }
            Some(r) => positive("workload.rate_rps", r)?,
            None => {}
        }
        positive("workload.seconds", w.seconds)?;
        if !(w.warmup_seconds >= 0.0 && w.warmup_seconds.is_finite()) {
            return Err(ConfigError::invalid(
                "workload.warmup_seconds",
                format!(
                    "workload.warmup_seconds = {} must be >= 0",
                    w.warmup_seconds
                ),
            ));
        }
        if w.max_requests == Some(0) {
            return Err(ConfigError::invalid(
                "workload.max_requests",
                "workload.max_requests = 0 must be at least 1 (omit it for no bound)",
            ));
        }
        Ok(())
    }

    /// Lossless mode reserves `credits` receive-ring entries per session on
    /// both ends: all sessions of one endpoint must fit its ring.
    fn validate_credits(&self) -> Result<(), ConfigError> {
        if self.transport.mode != Mode::Lossless {
            return Ok(());
        }
        let credits = self.effective_credits() as u64;
        let rx = self.link.rx_desc as u64;
        let origin = match self.transport.credits {
            Some(_) => String::new(),
            None => format!(
                " (the BDP of transport.link_gbps = {} x transport.rtt_us = {} at link.mtu = {})",
                self.transport.link_gbps, self.transport.rtt_us, self.link.mtu
            ),
        };
        let client_sessions = self.workload.sessions_per_thread as u64;
        if credits * client_sessions > rx {
            return Err(ConfigError::invalid(
                "transport.credits",
                format!(
                    "transport.credits = {credits}{origin} exceeds what link.rx_desc = {rx} can back for {client_sessions} session(s) in lossless mode (credits x sessions_per_thread must be <= rx_desc)"
                ),
            ));
        }
        let server_sessions = self.max_sessions_per_server_worker() as u64;
        if credits * server_sessions > rx {
            return Err(ConfigError::invalid(
                "transport.credits",
                format!(
                    "transport.credits = {credits}{origin} exceeds what link.rx_desc = {rx} can back on a server worker accepting {server_sessions} session(s) in lossless mode (credits x sessions per server worker must be <= rx_desc)"
                ),
            ));
        }
        Ok(())
    }

    fn validate_faults(&self) -> Result<(), ConfigError> {
        let f = &self.faults;
        let probs = [
            ("faults.p", f.p),
            ("faults.ge_p_good_to_bad", f.ge_p_good_to_bad),
            ("faults.ge_p_bad_to_good", f.ge_p_bad_to_good),
            ("faults.ge_loss_good", f.ge_loss_good),
            ("faults.ge_loss_bad", f.ge_loss_bad),
        ];
        for (key, p) in probs {
            if let Some(p) = p.filter(|p| !(0.0..=1.0).contains(p)) {
                return Err(ConfigError::invalid(
                    key,
                    format!("{key} = {p} must be a probability in [0, 1]"),
                ));
            }
        }
        let need = |key: &str, v: Option<f64>| match v {
            Some(_) => Ok(()),
            None => Err(ConfigError::invalid(
                key,
                format!("faults.drop = {} needs {key}", drop_name(f.drop)),
            )),
        };
        match f.drop {
            DropKind::None => Ok(()),
            DropKind::Uniform => need("faults.p", f.p),
            DropKind::GilbertElliott => {
                need("faults.ge_p_good_to_bad", f.ge_p_good_to_bad)?;
                need("faults.ge_p_bad_to_good", f.ge_p_bad_to_good)
            }
        }
    }
}

fn drop_name(d: DropKind) -> &'static str {
    match d {
        DropKind::None => "none",
        DropKind::Uniform => "uniform",
        DropKind::GilbertElliott => "gilbert_elliott",
    }
}

fn range(key: &str, v: u64, lo: u64, hi: u64) -> Result<(), ConfigError> {
    if (lo..=hi).contains(&v) {
        return Ok(());
    }
    let msg = if hi >= u64::MAX / 1_000_000 {
        format!("{key} = {v} must be at least {lo}")
    } else {
        format!("{key} = {v} must be in {lo}..={hi}")
    };
    Err(ConfigError::invalid(key, msg))
}

fn limit_err(key: &str, v: u64, other: &str, limit: u64) -> ConfigError {
    ConfigError::invalid(key, format!("{key} = {v} must be >= {other} = {limit}"))
}

fn positive(key: &str, v: f64) -> Result<(), ConfigError> {
    if v > 0.0 && v.is_finite() {
        return Ok(());
    }
    Err(ConfigError::invalid(
        key,
        format!("{key} = {v} must be a finite number > 0"),
    ))
}

// ---------------------------------------------------------------------------
// Value types with their own text forms.

/// A MAC address written `aa:bb:cc:dd:ee:ff` in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mac(pub MacAddr);

impl Serialize for Mac {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Mac {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        MacAddr::from_str(&s)
            .map(Mac)
            .map_err(|e| serde::de::Error::custom(format!("{s:?}: {e}")))
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

#[cfg(test)]
mod tests {
    use super::*;

    const ENV: ValidationEnv = ValidationEnv { online_cores: 2 };
    const PRESETS: &[&str] = &[
        "memif",
        "af_packet",
        "ring",
        "null",
        "real-nic",
        "lossy",
        "tbf-veth",
        "slow-receiver",
    ];

    fn preset_path(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../configs")
            .join(format!("{name}.toml"))
    }

    fn with(overrides: &[&str]) -> Result<Config, ConfigError> {
        let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        Config::load(None, &o)
    }

    /// Loads with overrides, validates on a 2-core machine, returns the
    /// error's key.
    fn rejected_key(overrides: &[&str]) -> String {
        let c = with(overrides).expect("parses");
        let e = c.validate(&ENV).expect_err("must be rejected");
        let key = e.key().expect("error names a key").to_string();
        assert!(e.to_string().contains(&key), "{e} does not name {key}");
        key
    }

    #[test]
    fn every_preset_parses_and_validates() {
        for name in PRESETS {
            let c = Config::load(Some(&preset_path(name)), &[])
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            // real-nic names cores for bigger machines: check its own role lists
            // against a large machine, the others against this 2-core one.
            let env = if *name == "real-nic" {
                ValidationEnv { online_cores: 64 }
            } else {
                ENV
            };
            c.validate(&env).unwrap_or_else(|e| panic!("{name}: {e}"));
            let mac = MacAddr([2, 0, 0, 0, 0, 9]);
            for role in [Role::Server, Role::Client] {
                for w in 0..c.cores(role).len() {
                    c.endpoint_config(role, w, mac)
                        .validate()
                        .unwrap_or_else(|e| panic!("{name} {role:?} {w}: {e}"));
                }
            }
        }
    }

    #[test]
    fn defaults() {
        let c = Config::from_toml_str("").unwrap();
        assert_eq!(c, Config::default());
        c.validate(&ENV).unwrap();
        assert_eq!(c.window(), 1);
        // 10 Gb/s x 10 us / (8 x 1500 B) = 8.3 -> 9
        assert_eq!(c.effective_credits(), 9);
        let t = with(&["workload.kind=throughput"]).unwrap();
        assert_eq!(t.window(), 8);
    }

    #[test]
    fn credits_by_mode() {
        let c = with(&["transport.mode=lossy"]).unwrap();
        assert_eq!(c.effective_credits(), 36);
        let c = with(&[
            "transport.mode=lossy",
            "transport.lossy_credit_multiple=unbounded",
        ])
        .unwrap();
        assert_eq!(c.effective_credits(), u16::MAX);
        let c = with(&["transport.mode=lossy", "transport.credits=5"]).unwrap();
        assert_eq!(c.effective_credits(), 5);
        let e = with(&["transport.lossy_credit_multiple=lots"]).unwrap_err();
        assert_eq!(e.key(), Some("transport.lossy_credit_multiple"), "{e}");
    }

    #[test]
    fn overrides_apply_and_are_typed() {
        let c = with(&[
            "transport.credits=16",
            "workload.kind=throughput",
            "cores.server=[1]",
            "link.socket=/tmp/x=y.sock",
            "link.server_ip=10.0.0.2",
            "link.server_mac=02:00:00:00:00:02",
            "workload.seconds=2",
        ])
        .unwrap();
        assert_eq!(c.transport.credits, Some(16));
        assert_eq!(c.workload.kind, WorkloadKind::Throughput);
        assert_eq!(c.cores.server, vec![1]);
        assert_eq!(c.link.socket, "/tmp/x=y.sock");
        assert_eq!(c.link.server_ip, Ipv4Addr::new(10, 0, 0, 2));
        assert_eq!(c.workload.seconds, 2.0);
        assert_eq!(c.server_peer(1).port, 31852);
        // Overrides win over the file.
        let path = preset_path("memif");
        let c = Config::load(Some(&path), &["link.mtu=1400".into()]).unwrap();
        assert_eq!(c.link.mtu, 1400);

        for (o, key) in [
            ("transport.credits=many", "transport.credits"),
            ("transport.credits=70000", "transport.credits"),
            ("link.rx_desc=-1", "link.rx_desc"),
            ("cores.server=1", "cores.server"),
            ("workload.kind=fast", "workload.kind"),
            ("link.server_mac=02:00", "link.server_mac"),
            ("link.client_ip=nowhere", "link.client_ip"),
            ("link.huge=yes", "link.huge"),
        ] {
            let e = with(&[o]).expect_err(o);
            assert!(matches!(e, ConfigError::Invalid { .. }), "{o}: {e}");
            assert_eq!(e.key(), Some(key), "{o}: {e}");
            assert!(e.to_string().contains(key), "{o}: {e}");
        }
        assert!(matches!(with(&["credits"]), Err(ConfigError::Parse { .. })));
        assert!(matches!(
            with(&["transport..x=1"]),
            Err(ConfigError::Parse { .. })
        ));
        let e = with(&["link.mtu=1500", "link.mtu.x=1"]).unwrap_err();
        assert_eq!(e.key(), Some("link.mtu"), "{e}");
    }

    #[test]
    fn unknown_keys_rejected() {
        let e = Config::from_toml_str("[transport]\ncredit = 3\n").unwrap_err();
        assert!(
            matches!(&e, ConfigError::UnknownKey { key, .. } if key == "transport.credit"),
            "{e}"
        );
        assert!(
            e.to_string().contains("credits"),
            "lists the valid keys: {e}"
        );
        let e = Config::from_toml_str("[transprot]\ncredits = 3\n").unwrap_err();
        assert!(
            matches!(&e, ConfigError::UnknownKey { key, .. } if key == "transprot"),
            "{e}"
        );
        let e = with(&["workload.sizes=3"]).unwrap_err();
        assert!(
            matches!(&e, ConfigError::UnknownKey { key, .. } if key == "workload.sizes"),
            "{e}"
        );
        let e = with(&["seconds=3"]).unwrap_err();
        assert!(
            matches!(&e, ConfigError::UnknownKey { key, .. } if key == "seconds"),
            "{e}"
        );
        let e = Config::from_toml_str("[link\n").unwrap_err();
        assert!(matches!(e, ConfigError::Parse { .. }), "{e}");
        let e = Config::load(Some(Path::new("/nonexistent/x.toml")), &[]).unwrap_err();
        assert!(matches!(e, ConfigError::Io { .. }), "{e}");
    }

    #[test]
    fn credits_beyond_ring_rejected() {
        let c = with(&["transport.credits=4096"]).unwrap();
        let e = c.validate(&ENV).unwrap_err().to_string();
        assert!(
            e.contains("transport.credits = 4096 exceeds what link.rx_desc = 1024 can back for 1 session(s) in lossless mode"),
            "{e}"
        );
        assert_eq!(
            rejected_key(&["transport.credits=300", "workload.sessions_per_thread=4"]),
            "transport.credits"
        );
        // Computed from the BDP: 400 Gb/s x 100 us is 3334 packets.
        let e = with(&["transport.link_gbps=400", "transport.rtt_us=100"])
            .unwrap()
            .validate(&ENV)
            .unwrap_err();
        assert!(e.to_string().contains("BDP"), "{e}");
        // Server side: incast puts all sessions of both client cores on worker 0.
        assert_eq!(
            rejected_key(&[
                "transport.credits=600",
                "cores.client=[0,1]",
                "cores.server=[1]",
                "workload.kind=incast"
            ]),
            "transport.credits"
        );
        // Lossy reserves nothing.
        with(&["transport.credits=4096", "transport.mode=lossy"])
            .unwrap()
            .validate(&ENV)
            .unwrap();
    }

    #[test]
    fn mtu_vs_mbuf_room() {
        let e = with(&["link.mtu=9000"])
            .unwrap()
            .validate(&ENV)
            .unwrap_err();
        assert_eq!(e.key(), Some("link.mtu"));
        assert!(
            e.to_string()
                .contains("link.mtu = 9000 needs 9014-byte frames but link.mbuf_data_room = 2048"),
            "{e}"
        );
        with(&["link.mtu=9000", "link.mbuf_data_room=9216"])
            .unwrap()
            .validate(&ENV)
            .unwrap();
    }

    #[test]
    fn cores_checked() {
        let e = with(&["cores.server=[7]"])
            .unwrap()
            .validate(&ENV)
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("cores.server contains core 7 but this machine has 2 online cores (0-1)"),
            "{e}"
        );
        assert_eq!(rejected_key(&["cores.client=[]"]), "cores.client");
        assert_eq!(rejected_key(&["cores.server=[1, 1]"]), "cores.server");
        // Two machines: the client host checks only its own cores.
        let c = with(&["cores.server=[7]"]).unwrap();
        c.validate_for(&ENV, Role::Client).unwrap();
        assert!(c.validate_for(&ENV, Role::Server).is_err());
    }

    #[test]
    fn each_rejection_names_its_key() {
        let cases: &[(&[&str], &str)] = &[
            (&["link.mtu=0"], "link.mtu"),
            (&["link.rx_desc=0"], "link.rx_desc"),
            (&["link.tx_desc=1000"], "link.tx_desc"),
            (&["link.mbuf_data_room=0"], "link.mbuf_data_room"),
            (&["link.mem_mb=0"], "link.mem_mb"),
            (&["link.udp_port=0"], "link.udp_port"),
            (&["link.server_mac=ff:ff:ff:ff:ff:ff"], "link.server_mac"),
            (&["link.client_ip=127.77.0.2"], "link.client_ip"),
            (&["link.kind=pci"], "link.pci"),
            (&["link.kind=pci", "link.pci=0000:01:00.0"], "link.huge"),
            (
                &["link.kind=af_packet", "link.iface=averyverylongname"],
                "link.iface",
            ),
            (&["transport.credits=0"], "transport.credits"),
            (&["transport.link_gbps=0"], "transport.link_gbps"),
            (&["transport.rtt_us=-1"], "transport.rtt_us"),
            (&["transport.req_window=0"], "transport.req_window"),
            (&["transport.req_window=65"], "transport.req_window"),
            (&["transport.rto_us=100"], "transport.rto_us"),
            (&["transport.scan_us=0"], "transport.scan_us"),
            (
                &["transport.session_timeout_ms=1"],
                "transport.session_timeout_ms",
            ),
            (
                &["transport.connect_timeout_ms=0"],
                "transport.connect_timeout_ms",
            ),
            (&["transport.max_msg_size=0"], "transport.max_msg_size"),
            (
                &["transport.max_msg_size=200000000"],
                "transport.max_msg_size",
            ),
            (
                &["transport.lossy_credit_multiple=0"],
                "transport.lossy_credit_multiple",
            ),
            (
                &["transport.mode=lossy", "transport.on_loss=reset"],
                "transport.on_loss",
            ),
            (&["workload.req_size=9000000"], "workload.req_size"),
            (
                &["transport.max_msg_size=1024", "workload.resp_size=2048"],
                "workload.resp_size",
            ),
            (&["workload.window=0"], "workload.window"),
            (&["workload.window=65"], "workload.window"),
            (
                &["workload.sessions_per_thread=0"],
                "workload.sessions_per_thread",
            ),
            (&["workload.kind=open_loop"], "workload.rate_rps"),
            (
                &["workload.kind=open_loop", "workload.rate_rps=0"],
                "workload.rate_rps",
            ),
            (&["workload.seconds=0"], "workload.seconds"),
            (&["workload.seconds=-1"], "workload.seconds"),
            (&["workload.warmup_seconds=-1"], "workload.warmup_seconds"),
            (&["workload.max_requests=0"], "workload.max_requests"),
            (&["faults.p=1.5"], "faults.p"),
            (&["faults.p=-0.1"], "faults.p"),
            (&["faults.drop=uniform"], "faults.p"),
            (&["faults.drop=gilbert_elliott"], "faults.ge_p_good_to_bad"),
            (&["faults.ge_loss_bad=2"], "faults.ge_loss_bad"),
        ];
        for (overrides, key) in cases {
            assert_eq!(&rejected_key(overrides), key, "{overrides:?}");
        }
    }

    #[test]
    fn mapping_to_engine() {
        let c = with(&[
            "transport.mode=lossless",
            "transport.on_loss=reset",
            "transport.credits=12",
            "cores.server=[0, 1]",
            "faults.drop=gilbert_elliott",
            "faults.ge_p_good_to_bad=0.01",
            "faults.ge_p_bad_to_good=0.5",
        ])
        .unwrap();
        c.validate(&ENV).unwrap();
        let e = c.endpoint_config(Role::Server, 1, MacAddr([2, 0, 0, 0, 0, 2]));
        e.validate().unwrap();
        assert_eq!(e.local.port, 31852);
        assert_eq!(e.local.ip, Ipv4Addr::new(127, 77, 0, 2));
        assert_eq!(e.session_credits, 12);
        assert_eq!(e.rx_ring_entries, 1024);
        assert_eq!(
            e.mode,
            FlowMode::Lossless {
                on_loss: LossPolicy::ResetSession
            }
        );
        assert_eq!(e.rto, Duration::from_micros(5000));
        assert_eq!(c.port_config(Role::Server).queues, 2);
        assert!(
            matches!(c.drop_model(), DropModel::GilbertElliott { loss_bad, .. } if loss_bad == 1.0)
        );
        assert_eq!(c.link_args().link, LinkKind::Memif);
        // Round trip through TOML text (what a parent hands its children).
        let back = Config::from_toml_str(&c.to_toml_string()).unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn cpu_list() {
        assert_eq!(parse_cpu_list_end("0-1"), Some(2));
        assert_eq!(parse_cpu_list_end("0-3,8"), Some(9));
        assert_eq!(parse_cpu_list_end("0"), Some(1));
        assert!(ValidationEnv::detect().online_cores >= 1);
    }
}
