//! Command-line configuration shared by the binaries: a TOML file, `--set
//! key=value` overrides, and shortcut flags that are just named overrides; then
//! validation and the mapping to what `node` runs.

use super::units::{parse_seconds, parse_size_u32};
use crate::config::link::Role;
use crate::config::{Config, Direction, DropKind, ValidationEnv, WorkloadKind};
use crate::report::Report;
use crate::run::node::{CaptureSpec, ClientParams, NodeSpec, ServerParams};
use crate::run::workload::Mode;
use clap::Args;
use engine::runtime::FaultSide;
use engine::time::Duration;
use std::path::PathBuf;

#[derive(Args, Clone, Debug, Default)]
pub struct ConfigArgs {
    /// TOML config file (see configs/ and docs/configs.md); defaults apply without one.
    #[arg(long, short = 'c')]
    pub config: Option<PathBuf>,
    /// Override any config key, e.g. --set transport.credits=16 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Shortcut for --set link.kind=KIND (memif, af_packet, ring, null, pcap, pci).
    #[arg(long, value_name = "KIND")]
    pub link: Option<String>,
    /// Shortcut for --set link.socket=PATH (memif).
    #[arg(long)]
    pub socket: Option<String>,
    /// Shortcut for --set link.iface=NAME (af_packet; the client uses NAME + "p").
    #[arg(long)]
    pub iface: Option<String>,
    /// Shortcut for --set workload.kind=KIND (latency, throughput, large, incast, open_loop).
    #[arg(long, value_name = "KIND")]
    pub workload: Option<String>,
    /// Shortcut for --set workload.req_size=N (bytes; 4k, 64KiB, 1M: k = 1024).
    #[arg(long, value_name = "SIZE", value_parser = parse_size_u32)]
    pub msg_size: Option<u64>,
    /// Shortcut for --set workload.resp_size=N (bytes; 4k, 64KiB, 1M: k = 1024).
    #[arg(long, value_name = "SIZE", value_parser = parse_size_u32)]
    pub resp_size: Option<u64>,
    /// Shortcut for --set workload.seconds=S (measured seconds, after warm-up; above 0).
    #[arg(long, value_name = "S", value_parser = parse_seconds, allow_negative_numbers = true)]
    pub seconds: Option<f64>,
    /// Shortcut for --set workload.window=W (outstanding requests per session).
    #[arg(long)]
    pub window: Option<u32>,
    /// Shortcut for --set workload.sessions_per_thread=N.
    #[arg(long)]
    pub sessions: Option<u32>,
    /// Shortcut for --set workload.rate_rps=R (open loop, requests per second in total).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Shortcut for --set transport.mode=MODE (lossless, lossy or pause).
    #[arg(long)]
    pub mode: Option<String>,
    /// Shortcut for --set transport.credits=C (otherwise the BDP).
    #[arg(long)]
    pub credits: Option<u16>,
}

impl ConfigArgs {
    /// The overrides in application order: shortcuts first, then --set (which wins).
    pub fn overrides(&self) -> Vec<String> {
        let mut o = Vec::new();
        let mut push = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                o.push(format!("{k}={v}"));
            }
        };
        let quoted = |s: &Option<String>| s.as_ref().map(|v| format!("{v:?}"));
        push("link.kind", quoted(&self.link));
        push("link.socket", quoted(&self.socket));
        push("link.iface", quoted(&self.iface));
        push("workload.kind", quoted(&self.workload));
        push("workload.req_size", self.msg_size.map(|v| v.to_string()));
        push("workload.resp_size", self.resp_size.map(|v| v.to_string()));
        push("workload.seconds", self.seconds.map(|v| format!("{v:?}")));
        push("workload.window", self.window.map(|v| v.to_string()));
        push(
            "workload.sessions_per_thread",
            self.sessions.map(|v| v.to_string()),
        );
        push("workload.rate_rps", self.rate.map(|v| format!("{v:?}")));
        push("transport.mode", quoted(&self.mode));
        push("transport.credits", self.credits.map(|v| v.to_string()));
        o.extend(self.set.iter().cloned());
        o
    }

    /// Loads, applies overrides, validates for `role` (None: both roles,
    /// rpc-bench's own server and client: its server trusts its client).
    pub fn load(&self, role: Option<Role>) -> anyhow::Result<Config> {
        let mut cfg = Config::load(self.config.as_deref(), &self.overrides())?;
        let env = ValidationEnv::detect();
        match role {
            Some(r) => cfg.validate_for(&env, r)?,
            None => {
                cfg.trust_own_client();
                let mut fit = cfg
                    .fit_ring()
                    .map_err(|e| anyhow::anyhow!("invalid config: {e}"))?;
                cfg.fit_rto(&mut fit);
                if let Some(line) = fit.describe(&cfg) {
                    eprintln!("rpc-bench: {line}");
                }
                cfg.validate(&env)?
            }
        }
        Ok(cfg)
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
            anyhow::bail!("--capture-limit must be a positive number of MiB, got {mib}");
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
    let mode = match (w.kind, w.rate_rps) {
        (WorkloadKind::OpenLoop, Some(rate)) if rate > 0.0 => Mode::Open {
            interval: Duration::from_nanos((workers * 1e9 / rate).max(1.0) as u64),
        },
        _ => Mode::Closed,
    };
    let secs = |s: f64| Duration::from_nanos((s.max(0.0) * 1e9) as u64);
    ClientParams {
        mode,
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

/// The flow mode's name for reports.
pub fn mode_name(cfg: &Config) -> &'static str {
    cfg.transport.mode.as_str()
}

/// The client's report from its merged results.
pub fn client_report(cfg: &Config, r: &crate::run::node::ClientResult) -> Report {
    let mut rep = Report::from_config(cfg);
    rep.completed = r.completed;
    rep.measured = Some(r.completed_measured);
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
    rep.extra
        .insert("credits".into(), cfg.effective_credits().into());
    rep.extra
        .insert("bdp_credits".into(), cfg.bdp_credits().into());
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
