//! Command-line configuration shared by the binaries: a TOML file, `--set
//! key=value` overrides, and shortcut flags that are just named overrides
//! (each spelled and valued as its key: `--link af_packet`, `--workload
//! open_loop`); then validation and the mapping to what `node` runs. A
//! binary takes only the shortcuts of what it does: rpc-server has no
//! client flags ([`ServerConfigArgs`]), the raw port tools only link ones
//! ([`PortArgs`]).

use super::units::{parse_seconds, parse_size_u32};
use crate::config::link::{LinkArgs, LinkKind, Role};
use crate::config::{Config, Direction, DropKind, FlowMode, ValidationEnv, WorkloadKind};
use crate::report::Report;
use crate::run::node::{CaptureSpec, ClientParams, NodeSpec, ServerParams};
use crate::run::workload::Loop;
use clap::Args;
use engine::runtime::FaultSide;
use engine::time::Duration;
use std::path::PathBuf;

/// The config file, `--set` overrides, and the shortcut flags every
/// binary that runs RPCs takes. `C` is the client's own shortcuts
/// ([`ClientShortcuts`]); rpc-server takes [`ServerConfigArgs`], where they
/// are absent, so clap refuses them as unexpected arguments.
#[derive(Args, Clone, Debug, Default)]
pub struct ConfigArgs<C: Shortcuts = ClientShortcuts> {
    /// TOML config file (see configs/ and docs/configs.md); defaults apply without one.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// Override any config key, e.g. --set transport.credits=16 (repeatable;
    /// sizes take suffixes: --set workload.req_size=4k).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Shortcut for --set link.kind=KIND.
    #[arg(long, value_name = "KIND", value_enum)]
    pub link: Option<LinkKind>,
    /// Shortcut for --set link.socket=PATH (memif).
    #[arg(long)]
    pub socket: Option<String>,
    /// Shortcut for --set link.iface=NAME (af_packet; the client uses NAME + "p").
    #[arg(long)]
    pub iface: Option<String>,
    /// Shortcut for --set workload.resp_size=N (bytes; 4k, 64KiB, 1M: k = 1024).
    /// A client's requests of 12 B or more ask for this size; the server
    /// answers shorter requests with its own.
    #[arg(long, value_name = "SIZE", value_parser = parse_size_u32)]
    pub resp_size: Option<u64>,
    /// Shortcut for --set workload.sessions_per_thread=N (the server sizes
    /// its session table for this many sessions per client thread).
    #[arg(long)]
    pub sessions: Option<u32>,
    /// Shortcut for --set transport.mode=MODE.
    #[arg(long, value_name = "MODE", value_parser = parse_flow_mode)]
    pub mode: Option<FlowMode>,
    /// Shortcut for --set transport.credits=C (otherwise the BDP).
    #[arg(long)]
    pub credits: Option<u16>,
    #[command(flatten)]
    pub client: C,
}

/// rpc-server's config flags: [`ConfigArgs`] without the client's shortcuts.
pub type ServerConfigArgs = ConfigArgs<NoShortcuts>;

/// Shortcut flags beyond the shared ones, as `dotted.key=value` overrides.
pub trait Shortcuts: Args + Clone + std::fmt::Debug + Default {
    fn overrides(&self) -> Vec<String>;
}

/// What only a client does: its workload, duration, window and rate.
#[derive(Args, Clone, Debug, Default)]
pub struct ClientShortcuts {
    /// Shortcut for --set workload.req_size=N (bytes; 4k, 64KiB, 1M: k = 1024).
    #[arg(long, value_name = "SIZE", value_parser = parse_size_u32)]
    pub msg_size: Option<u64>,
    /// Shortcut for --set workload.kind=KIND.
    #[arg(long, value_name = "KIND", value_enum)]
    pub workload: Option<WorkloadKind>,
    /// Shortcut for --set workload.seconds=S (measured seconds, after warm-up; above 0).
    #[arg(long, value_name = "S", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub seconds: Option<f64>,
    /// Shortcut for --set workload.window=W (outstanding requests per session).
    #[arg(long)]
    pub window: Option<u32>,
    /// Shortcut for --set workload.rate_rps=R (open loop, requests per second in total).
    #[arg(long)]
    pub rate: Option<f64>,
}

impl Shortcuts for ClientShortcuts {
    fn overrides(&self) -> Vec<String> {
        let mut o = Vec::new();
        push(
            &mut o,
            "workload.req_size",
            self.msg_size.map(|v| v.to_string()),
        );
        push(
            &mut o,
            "workload.kind",
            self.workload.map(|k| quoted(k.as_str())),
        );
        push(
            &mut o,
            "workload.seconds",
            self.seconds.map(|v| format!("{v:?}")),
        );
        push(
            &mut o,
            "workload.window",
            self.window.map(|v| v.to_string()),
        );
        push(
            &mut o,
            "workload.rate_rps",
            self.rate.map(|v| format!("{v:?}")),
        );
        o
    }
}

/// No shortcuts of its own (rpc-server).
#[derive(Args, Clone, Debug, Default)]
pub struct NoShortcuts {}

impl Shortcuts for NoShortcuts {
    fn overrides(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Appends `key=value` when there is a value.
fn push(o: &mut Vec<String>, key: &str, value: Option<String>) {
    if let Some(v) = value {
        o.push(format!("{key}={v}"));
    }
}

/// `s` as a TOML string, so an override keeps it verbatim.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

impl<C: Shortcuts> ConfigArgs<C> {
    /// The overrides in application order: shortcuts first, then --set (which wins).
    pub fn overrides(&self) -> Vec<String> {
        let mut o = Vec::new();
        push(&mut o, "link.kind", self.link.map(|k| quoted(k.as_str())));
        push(&mut o, "link.socket", self.socket.as_deref().map(quoted));
        push(&mut o, "link.iface", self.iface.as_deref().map(quoted));
        push(
            &mut o,
            "workload.resp_size",
            self.resp_size.map(|v| v.to_string()),
        );
        push(
            &mut o,
            "workload.sessions_per_thread",
            self.sessions.map(|v| v.to_string()),
        );
        push(
            &mut o,
            "transport.mode",
            self.mode.map(|m| quoted(m.as_str())),
        );
        push(
            &mut o,
            "transport.credits",
            self.credits.map(|v| v.to_string()),
        );
        o.extend(self.client.overrides());
        o.extend(self.set.iter().cloned());
        o
    }

    /// Loads, applies overrides, validates for `role`. (rpc-bench, which
    /// starts both roles itself, loads with `bench::load_pair`.)
    pub fn load(&self, role: Role) -> anyhow::Result<Config> {
        let cfg = Config::load(self.config.as_deref(), &self.overrides())?;
        cfg.validate_for(&ValidationEnv::detect(), role)?;
        Ok(cfg)
    }
}

/// The config flags of the raw tools that open a port with no RPC layer
/// (`rpc-bench floor`, `port-check`): `-c` and `--set` as everywhere, and
/// shortcuts for every `[link]` key the old link-only flags named. Only
/// `[link]` (and `[cores]` for the floor) is used, so the file is parsed
/// and type-checked but not validated as a run.
#[derive(Args, Clone, Debug, Default)]
pub struct PortArgs {
    /// TOML config file (see configs/ and docs/configs.md); its [link] section is used.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// Override any config key, e.g. --set link.mtu=9000 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Shortcut for --set link.kind=KIND.
    #[arg(long, value_name = "KIND", value_enum)]
    pub link: Option<LinkKind>,
    /// Shortcut for --set link.socket=PATH (memif; both processes must use the same one).
    #[arg(long)]
    pub socket: Option<String>,
    /// Shortcut for --set link.iface=NAME (af_packet: the server side; the
    /// client uses NAME + "p", as created by `scripts/veth.sh up NAME`).
    #[arg(long)]
    pub iface: Option<String>,
    /// Shortcut for --set link.pci=ADDR (the NIC for --link pci).
    #[arg(long)]
    pub pci: Option<String>,
    /// Shortcut for --set link.vdev=SPEC (a raw vdev spec, overriding the one --link derives).
    #[arg(long)]
    pub vdev: Option<String>,
    /// Shortcut for --set link.file_prefix=P (EAL file prefix; default --no-shconf).
    #[arg(long)]
    pub file_prefix: Option<String>,
    /// Shortcut for --set link.huge=true (hugepages instead of --no-huge).
    #[arg(long)]
    pub huge: bool,
    /// Shortcut for --set link.mem_mb=MIB (memory for --no-huge mode).
    #[arg(long, value_name = "MIB")]
    pub mem_mb: Option<u32>,
    /// Shortcut for --set link.eal_args=[...] (repeatable), e.g. --eal-arg=--iova-mode=va.
    #[arg(long = "eal-arg", allow_hyphen_values = true)]
    pub eal_args: Vec<String>,
    /// Shortcut for --set link.client_netns=NS (af_packet: the veth peer's namespace).
    #[arg(long)]
    pub client_netns: Option<String>,
    /// Shortcut for --set link.qdisc_bypass=BOOL (af_packet; false lets a tbf on the interface apply).
    #[arg(long, action = clap::ArgAction::Set)]
    pub qdisc_bypass: Option<bool>,
    /// EAL log level (1 critical .. 8 debug).
    #[arg(long, default_value_t = 4)]
    pub log_level: u32,
    /// How long to wait for link-up, in milliseconds [default: 30000].
    #[arg(long, value_name = "MS")]
    pub link_timeout_ms: Option<u64>,
}

impl PortArgs {
    /// The overrides in application order: shortcuts first, then --set (which wins).
    pub fn overrides(&self) -> Vec<String> {
        let mut o = Vec::new();
        push(&mut o, "link.kind", self.link.map(|k| quoted(k.as_str())));
        for (key, v) in [
            ("link.socket", &self.socket),
            ("link.iface", &self.iface),
            ("link.pci", &self.pci),
            ("link.vdev", &self.vdev),
            ("link.file_prefix", &self.file_prefix),
            ("link.client_netns", &self.client_netns),
        ] {
            push(&mut o, key, v.as_deref().map(quoted));
        }
        push(&mut o, "link.huge", self.huge.then(|| "true".to_string()));
        push(&mut o, "link.mem_mb", self.mem_mb.map(|v| v.to_string()));
        if !self.eal_args.is_empty() {
            let a = self.eal_args.iter().cloned().map(toml::Value::String);
            push(
                &mut o,
                "link.eal_args",
                Some(toml::Value::Array(a.collect()).to_string()),
            );
        }
        push(
            &mut o,
            "link.qdisc_bypass",
            self.qdisc_bypass.map(|b| b.to_string()),
        );
        o.extend(self.set.iter().cloned());
        o
    }

    /// The file and overrides, parsed and type-checked.
    pub fn load(&self) -> anyhow::Result<Config> {
        Ok(Config::load(self.config.as_deref(), &self.overrides())?)
    }

    /// `cfg`'s link with this process's EAL log level and link-up timeout.
    pub fn link_args(&self, cfg: &Config) -> LinkArgs {
        let mut l = cfg.link_args();
        l.log_level = self.log_level;
        if let Some(ms) = self.link_timeout_ms {
            l.link_timeout_ms = ms;
        }
        l
    }
}

/// Packet capture flags shared by rpc-server and rpc-client.
#[derive(Args, Clone, Debug, Default)]
pub struct CaptureArgs {
    /// Record every frame received and sent, as the run loop sees them, into
    /// a pcap file (worker N > 0 writes FILE.wN.pcap). Read it with tshark or
    /// Wireshark and scripts/wireshark/erpc.lua (docs/wire.md).
    #[arg(long, value_name = "FILE.pcap")]
    pub capture: Option<PathBuf>,
    /// Largest capture file in MiB (per worker); past it frames are only counted.
    #[arg(long, value_name = "MIB", default_value_t = (engine::runtime::DEFAULT_CAPTURE_LIMIT >> 20) as f64)]
    pub capture_limit: f64,
}

impl CaptureArgs {
    /// What `NodeSpec::capture` should be.
    pub fn spec(&self) -> anyhow::Result<Option<CaptureSpec>> {
        let Some(path) = &self.capture else {
            return Ok(None);
        };
        let mib = self.capture_limit;
        if !(mib.is_finite() && mib > 0.0) {
            return Err(crate::exit::usage(format!(
                "--capture-limit must be a positive number of MiB, got {mib}"
            )));
        }
        crate::report::output::check_writable("--capture", path)?;
        Ok(Some(CaptureSpec {
            path: path.clone(),
            limit: (mib * (1u64 << 20) as f64) as u64,
        }))
    }
}

/// What one process of `role` runs on.
pub fn node_spec(cfg: &Config, role: Role) -> NodeSpec {
    let fault = (cfg.faults.drop != DropKind::None).then(|| {
        let side = match cfg.faults.direction {
            Direction::Rx => FaultSide::Rx,
            Direction::Tx => FaultSide::Tx,
        };
        // Different streams per side so both directions do not drop in lockstep.
        let seed = cfg
            .faults
            .seed
            .wrapping_mul(2)
            .wrapping_add(matches!(role, Role::Client) as u64);
        (side, cfg.drop_model(), seed)
    });
    // Its own stream, apart from the drops'.
    let ecn_marker = (cfg.ecn_mark_p() > 0.0).then(|| {
        let seed = cfg
            .faults
            .seed
            .wrapping_mul(2)
            .wrapping_add(0xEC0 + matches!(role, Role::Client) as u64);
        (cfg.ecn_mark_p(), seed)
    });
    NodeSpec {
        config: cfg.clone(),
        role,
        fault,
        ecn_marker,
        capture: None,
        wait: None,
    }
}

pub fn server_params(cfg: &Config, max_secs: f64) -> ServerParams {
    ServerParams {
        resp_size: cfg.workload.resp_size as usize,
        // Requests name their response size; the server checks and answers
        // any size up to its largest message.
        max_msg: cfg.transport.max_msg_size as usize,
        work_ns: cfg.server.work_ns,
        background: cfg.server.background,
        verify: cfg.workload.verify,
        max_secs,
    }
}

pub fn client_params(cfg: &Config, live: bool) -> ClientParams {
    let w = &cfg.workload;
    let workers = cfg.cores(Role::Client).len().max(1) as f64;
    let pace = match (w.kind, w.rate_rps) {
        (WorkloadKind::OpenLoop, Some(rate)) if rate > 0.0 => Loop::Open {
            interval: Duration::from_nanos((workers * 1e9 / rate).max(1.0) as u64),
        },
        _ => Loop::Closed,
    };
    let secs = |s: f64| Duration::from_nanos((s.max(0.0) * 1e9) as u64);
    ClientParams {
        pace,
        req_size: w.req_size as usize,
        resp_size: w.resp_size as usize,
        window: cfg.window() as usize,
        sessions: w.sessions_per_thread as usize,
        warmup: secs(w.warmup_seconds),
        run: secs(w.seconds),
        max_requests: w.max_requests,
        verify: w.verify,
        live_every: (live && w.seconds > 3.0).then(|| Duration::from_secs(1)),
    }
}

/// `--mode`'s values, spelled as `transport.mode` is in the file.
fn parse_flow_mode(s: &str) -> Result<FlowMode, String> {
    match s {
        "lossless" => Ok(FlowMode::Lossless),
        "lossy" => Ok(FlowMode::Lossy),
        "pause" => Ok(FlowMode::Pause),
        _ => Err(format!(
            "{s:?} is not a flow mode: lossless, lossy or pause"
        )),
    }
}

/// The flow mode's name for reports.
pub fn mode_name(cfg: &Config) -> &'static str {
    cfg.transport.mode.as_str()
}

/// The client's report from its merged results.
pub fn client_report(cfg: &Config, r: &crate::run::node::ClientResult) -> Report {
    let mut rep = Report::from_config(cfg);
    // The headline counts the measured window only, as the rates do; the
    // warm-up's and the drain's completions are in `completed_total`.
    rep.completed = r.completed_measured;
    rep.measured = Some(r.completed_measured);
    rep.extra
        .insert("completed_total".into(), r.completed.into());
    rep.failed = r.failed;
    rep.seconds = r.seconds;
    rep.latency = r.hist.clone();
    rep.add_engine_stats(&r.stats);
    if r.injected_drops > 0 {
        rep.add_drops("injected", r.injected_drops);
    }
    if let Some(missed) = r.port["rx_missed"].as_u64().filter(|&m| m > 0) {
        rep.add_drops("rx_ring_overflow", missed);
    }
    if let Ok(r) = cfg.resolved() {
        rep.extra.insert("credits".into(), r.credits().into());
        rep.extra.insert("bdp_credits".into(), r.bdp.packets.into());
    }
    rep.extra.insert("client_workers".into(), r.workers.into());
    rep.extra
        .insert("mbufs_in_use_start".into(), r.mbufs_in_use_start.into());
    rep.extra
        .insert("mbufs_in_use_end".into(), r.mbufs_in_use_end.into());
    rep.extra
        .insert("bytes_per_session".into(), r.bytes_per_session.into());
    rep.extra.insert(
        "sessions_connected".into(),
        r.stats.sessions_connected.into(),
    );
    rep.extra
        .insert("bad_responses".into(), r.bad_responses.into());
    rep.extra
        .insert("completed_measured".into(), r.completed_measured.into());
    rep.extra.insert("client_port".into(), r.port.clone());
    // Every engine counter of the client side (the server's are under
    // `server.stats`), so a new counter reaches the report with no edit.
    rep.client_stats = Some(r.stats);
    if !r.errors.is_empty() {
        rep.extra.insert("errors".into(), r.errors.clone().into());
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Port {
        #[command(flatten)]
        port: PortArgs,
    }

    #[derive(Parser, Debug)]
    struct Server {
        #[command(flatten)]
        cfg: ServerConfigArgs,
    }

    #[derive(Parser, Debug)]
    struct Client {
        #[command(flatten)]
        cfg: ConfigArgs,
    }

    #[test]
    fn a_resolved_link_survives_the_trip_to_a_peer_process() {
        // What a floor passes to its two sides: every [link] setting.
        let p = Port::parse_from([
            "t",
            "--link=af-packet",
            "--iface=v0",
            "--eal-arg=--iova-mode=va",
            "--eal-arg=--log-level=lib.eal:debug",
            "--file-prefix=a b\"c",
            "--mem-mb=256",
            "--huge",
            "--qdisc-bypass=false",
            "--client-netns=ns1",
            "--link-timeout-ms=500",
            "--log-level=7",
        ]);
        let link = p.port.link_args(&p.port.load().unwrap());
        assert_eq!(link.link, LinkKind::AfPacket);
        assert_eq!(
            link.eal_args,
            ["--iova-mode=va", "--log-level=lib.eal:debug"]
        );
        assert_eq!(link.file_prefix.as_deref(), Some("a b\"c"));
        assert!(link.huge && !link.qdisc_bypass);
        assert_eq!(
            (link.mem_mb, link.log_level, link.link_timeout_ms),
            (256, 7, 500)
        );
        let mut argv = vec!["t".to_string()];
        argv.extend(link.to_args());
        let again = Port::parse_from(argv);
        let back = again.port.link_args(&again.port.load().unwrap());
        assert_eq!(format!("{back:?}"), format!("{link:?}"));
    }

    #[test]
    fn set_wins_over_shortcuts_and_the_file_gives_the_rest() {
        let p = Port::parse_from(["t", "--link=memif", "--set=link.kind=null"]);
        assert_eq!(p.port.load().unwrap().link.kind, LinkKind::Null);
        let c = Client::parse_from(["t", "--workload=open-loop", "--mode=pause", "--msg-size=4k"]);
        assert_eq!(
            c.cfg.overrides(),
            [
                "transport.mode=\"pause\"",
                "workload.req_size=4096",
                "workload.kind=\"open_loop\""
            ]
        );
    }

    #[test]
    fn the_server_has_no_client_shortcuts() {
        for flag in [
            "--seconds=1",
            "--workload=latency",
            "--window=2",
            "--rate=10",
            "--msg-size=1k",
        ] {
            let e = Server::try_parse_from(["t", flag]).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::UnknownArgument, "{flag}");
            Client::try_parse_from(["t", flag]).unwrap();
        }
        let s = Server::parse_from(["t", "--resp-size=1k", "--sessions=2", "--credits=4"]);
        assert_eq!(
            s.cfg.overrides(),
            [
                "workload.resp_size=1024",
                "workload.sessions_per_thread=2",
                "transport.credits=4"
            ]
        );
    }
}
