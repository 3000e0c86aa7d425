//! The lossless-vs-lossy comparison mode of `rpc-bench`: one workload run in
//! both flow modes on the same link (`compare`), one run per credit value
//! (`sweep`), and N sessions of one client thread converging on one server
//! thread (`incast`).
//!
//! Every run is an ordinary `rpc-bench run` pair ([`bench::run_pair`]); this
//! module only derives the per-mode configurations, reads the kernel qdisc
//! counters around each run, and sorts the drops by source:
//!
//! - injected: the seeded fault injectors of the client and the server;
//! - rx ring overflow: the driver's `rx_missed` of either side (af_packet:
//!   the kernel's count of frames its receive ring had no room for);
//! - qdisc: drops of a `tbf` (or any root qdisc) on the path, read with
//!   `tc -s qdisc` before and after the run. On a *switch port* (the middle
//!   hop of `scripts/veth.sh up NAME --switch`) a dropped frame is lost. On
//!   the *sender's own egress* (a qdisc on the interface af_packet sends on,
//!   `scripts/veth.sh --rate` without `--switch`) the kernel refuses the
//!   frame and af_packet leaves it in its TX ring to be sent again: the
//!   sender stalls, nothing is lost. Both are counted, separately;
//! - protocol discards: frames that arrived and were dropped by the
//!   protocol (duplicates of retransmissions, stale answers, ...).
//!
//! "Lost" is injected + rx ring overflow + switch-port qdisc drops: frames
//! that left a sender and never arrived. Loss rate = lost / frames sent by
//! both endpoints.

use crate::bench;
use crate::cli::ConfigArgs;
use crate::config::{Config, Direction, DropKind, Mode, OnLoss, ValidationEnv, MAX_DESC};
use crate::link::LinkKind;
use crate::report::{render_side_by_side, Report};
use anyhow::{bail, Context};
use clap::Args;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

// ------------------------------------------------------------ tc -s qdisc

/// One qdisc as `tc -s qdisc show dev DEV` prints it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QdiscStats {
    /// `tbf`, `noqueue`, `fq_codel`, ...
    pub kind: String,
    /// `8001:`
    pub handle: String,
    /// Attached at the root of the device (its counters cover the device).
    pub root: bool,
    pub sent_bytes: u64,
    pub sent_pkts: u64,
    pub dropped: u64,
    pub overlimits: u64,
    pub requeues: u64,
    pub backlog_bytes: u64,
    pub backlog_pkts: u64,
}

/// Parses the output of `tc -s qdisc show [dev DEV]`:
///
/// ```text
/// qdisc tbf 8001: root refcnt 3 rate 1Gbit burst 4000b lat 99us
///  Sent 65917038 bytes 43771 pkt (dropped 594, overlimits 42497 requeues 0)
///  backlog 0b 0p requeues 0
/// ```
pub fn parse_tc_qdisc(text: &str) -> Vec<QdiscStats> {
    let mut out: Vec<QdiscStats> = Vec::new();
    for line in text.lines() {
        let toks: Vec<&str> = line.split_whitespace().collect();
        match toks.first().copied() {
            Some("qdisc") => out.push(QdiscStats {
                kind: toks.get(1).unwrap_or(&"").to_string(),
                handle: toks.get(2).unwrap_or(&"").to_string(),
                root: toks.contains(&"root"),
                ..Default::default()
            }),
            Some("Sent") => {
                if let Some(q) = out.last_mut() {
                    q.sent_bytes = num_after(&toks, "Sent");
                    q.sent_pkts = num_after(&toks, "bytes");
                    q.dropped = num_after(&toks, "(dropped");
                    q.overlimits = num_after(&toks, "overlimits");
                    q.requeues = num_after(&toks, "requeues");
                }
            }
            Some("backlog") => {
                if let Some(q) = out.last_mut() {
                    q.backlog_bytes = toks.get(1).map_or(0, |s| parse_size(s));
                    q.backlog_pkts = toks
                        .get(2)
                        .and_then(|s| s.trim_end_matches('p').parse().ok())
                        .unwrap_or(0);
                }
            }
            _ => {}
        }
    }
    out
}

/// The number after token `key` ("594," and "0)" parse as 594 and 0).
fn num_after(toks: &[&str], key: &str) -> u64 {
    toks.iter()
        .position(|t| *t == key)
        .and_then(|i| toks.get(i + 1))
        .and_then(|v| v.trim_end_matches([',', ')']).parse().ok())
        .unwrap_or(0)
}

/// tc's sizes: "0b", "3028b", "15Kb", "2Mb" (binary multiples).
fn parse_size(s: &str) -> u64 {
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = digits.parse().unwrap_or(0);
    n * match unit {
        "Kb" | "K" => 1 << 10,
        "Mb" | "M" => 1 << 20,
        "Gb" | "G" => 1 << 30,
        _ => 1,
    }
}

/// A device whose qdisc counters a run reads, optionally in a namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QdiscProbe {
    pub dev: String,
    pub netns: Option<String>,
    /// The interface an af_packet endpoint itself sends on: a refused frame
    /// stays in the sender's TX ring (not lost).
    pub own_egress: bool,
}

impl QdiscProbe {
    /// `DEV` or `DEV@NETNS`, classified against the run's link.
    pub fn parse(spec: &str, cfg: &Config) -> QdiscProbe {
        let (dev, netns) = match spec.split_once('@') {
            Some((d, ns)) => (d.to_string(), Some(ns.to_string())),
            None => (spec.to_string(), None),
        };
        let l = &cfg.link;
        let server_end = dev == l.iface && netns.is_none();
        let client_end = dev == format!("{}p", l.iface) && netns == l.client_netns;
        QdiscProbe {
            own_egress: l.kind == LinkKind::AfPacket && (server_end || client_end),
            dev,
            netns,
        }
    }

    pub fn label(&self) -> String {
        match &self.netns {
            Some(ns) => format!("{}@{ns}", self.dev),
            None => self.dev.clone(),
        }
    }

    /// The device's qdiscs, or `None` when the device, the namespace or
    /// `tc` is missing (counted as no drops).
    pub fn read(&self) -> Option<Vec<QdiscStats>> {
        let tc = ["tc", "-s", "qdisc", "show", "dev", &self.dev];
        let mut cmd = match &self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).args(tc);
                c
            }
            None => {
                let mut c = Command::new(tc[0]);
                c.args(&tc[1..]);
                c
            }
        };
        let out = cmd
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| parse_tc_qdisc(&String::from_utf8_lossy(&out.stdout)))
    }
}

/// Where to read qdisc drops when the user names nothing: on af_packet, the
/// server's interface, and the switch port toward the client when
/// `scripts/veth.sh up IFACE --switch` built one (`IFACEq` in netns `IFACEsw`).
pub fn default_probes(cfg: &Config) -> Vec<QdiscProbe> {
    if cfg.link.kind != LinkKind::AfPacket {
        return Vec::new();
    }
    let iface = &cfg.link.iface;
    let mut v = vec![QdiscProbe::parse(iface, cfg)];
    let sw = format!("{iface}sw");
    if Path::new("/var/run/netns").join(&sw).exists() {
        v.push(QdiscProbe::parse(&format!("{iface}q@{sw}"), cfg));
    }
    v
}

fn probes_for(cfg: &Config, specs: &[String]) -> Vec<QdiscProbe> {
    if specs.is_empty() {
        default_probes(cfg)
    } else {
        specs.iter().map(|s| QdiscProbe::parse(s, cfg)).collect()
    }
}

fn root_sum(v: &[QdiscStats], f: impl Fn(&QdiscStats) -> u64) -> u64 {
    v.iter().filter(|q| q.root).map(f).sum()
}

/// Warns when a shaper sits on the af_packet sender's own egress but the
/// PMD bypasses qdiscs (DPDK's default): the shaper would see no traffic.
fn warn_bypassed(cfg: &Config, probes: &[QdiscProbe]) {
    if cfg.link.kind != LinkKind::AfPacket || !cfg.link.qdisc_bypass {
        return;
    }
    for p in probes.iter().filter(|p| p.own_egress) {
        if let Some(q) = p.read() {
            if let Some(s) = q.iter().find(|q| q.root && q.kind != "noqueue") {
                eprintln!(
                    "rpc-bench: warning: {} has a {} qdisc but af_packet bypasses qdiscs (link.qdisc_bypass = true): it will see no traffic; add --set link.qdisc_bypass=false",
                    p.label(),
                    s.kind
                );
            }
        }
    }
}

// ------------------------------------------------------------ drop sources

/// A run's drops sorted by where they happened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropSources {
    pub injected_client: u64,
    pub injected_server: u64,
    pub rx_missed_client: u64,
    pub rx_missed_server: u64,
    /// Dropped by a qdisc on a switch port: lost.
    pub qdisc_switch: u64,
    /// Refused by a qdisc on the sender's own egress: re-sent, not lost.
    pub qdisc_sender: u64,
    pub proto_client: u64,
    pub proto_server: u64,
}

/// Report keys of the qdisc drops.
pub const QDISC_SWITCH: &str = "qdisc_switch";
pub const QDISC_SENDER: &str = "qdisc_sender_egress";

impl DropSources {
    /// From a report's `drops_by_reason` (client keys as `client_report`
    /// writes them, `server_*` as `bench::run_pair` adds them).
    pub fn from_report(r: &Report) -> DropSources {
        let get = |k: &str| r.drops_by_reason.get(k).copied().unwrap_or(0);
        let sum = |prefix: &str| {
            r.drops_by_reason
                .iter()
                .filter(|(k, _)| k.starts_with(prefix))
                .map(|(_, n)| n)
                .sum()
        };
        DropSources {
            injected_client: get("injected"),
            injected_server: get("server_injected"),
            rx_missed_client: get("rx_ring_overflow"),
            rx_missed_server: get("server_rx_ring_overflow"),
            qdisc_switch: get(QDISC_SWITCH),
            qdisc_sender: get(QDISC_SENDER),
            proto_client: sum("proto."),
            proto_server: sum("server_proto."),
        }
    }

    /// Frames that left a sender and never arrived.
    pub fn lost(&self) -> u64 {
        self.injected_client
            + self.injected_server
            + self.rx_missed_client
            + self.rx_missed_server
            + self.qdisc_switch
    }

    pub fn to_json(&self) -> Value {
        json!({
            "injected_client": self.injected_client, "injected_server": self.injected_server,
            "rx_missed_client": self.rx_missed_client, "rx_missed_server": self.rx_missed_server,
            "qdisc_switch": self.qdisc_switch, "qdisc_sender_egress": self.qdisc_sender,
            "proto_client": self.proto_client, "proto_server": self.proto_server,
            "lost": self.lost(),
        })
    }
}

/// Frames both endpoints transmitted: the ports' `tx_packets`, plus frames
/// the TX fault injector dropped before the driver saw them.
pub fn packets_sent(cfg: &Config, r: &Report) -> u64 {
    let client = r
        .extra
        .get("client_port")
        .and_then(|p| p["tx_packets"].as_u64())
        .unwrap_or(0);
    let server = r
        .server
        .as_ref()
        .and_then(|s| s["port"]["tx_packets"].as_u64())
        .unwrap_or(0);
    let injected_tx = if cfg.faults.drop != DropKind::None && cfg.faults.direction == Direction::Tx
    {
        let d = DropSources::from_report(r);
        d.injected_client + d.injected_server
    } else {
        0
    };
    client + server + injected_tx
}

/// Adds the drop-source summary to the report's JSON (`extra`).
fn annotate(cfg: &Config, r: &mut Report) {
    let d = DropSources::from_report(r);
    let sent = packets_sent(cfg, r);
    let rate = if sent > 0 {
        d.lost() as f64 / sent as f64
    } else {
        0.0
    };
    r.extra.insert("drop_sources".into(), d.to_json());
    r.extra.insert("lost".into(), json!(d.lost()));
    r.extra.insert("pkts_sent".into(), json!(sent));
    r.extra.insert("loss_rate".into(), json!(rate));
    r.extra.insert("rx_desc".into(), json!(cfg.link.rx_desc));
    r.extra.insert(
        "sessions_per_thread".into(),
        json!(cfg.workload.sessions_per_thread),
    );
}

fn steal(r: &Report) -> Option<f64> {
    r.extra.get("cpu_steal_pct").and_then(Value::as_f64)
}

fn steal_text(r: &Report) -> String {
    steal(r).map_or("-".into(), |p| format!("{p:.0}%"))
}

fn loss_rate(r: &Report) -> f64 {
    r.extra
        .get("loss_rate")
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}

// ------------------------------------------------------------ one run

/// The base configuration in `mode`; `credits` None = the mode's default
/// (BDP, or `lossy_credit_multiple` x BDP).
pub fn for_mode(base: &Config, mode: Mode, credits: Option<u16>) -> Config {
    let mut c = base.clone();
    c.transport.mode = mode;
    c.transport.credits = credits;
    if mode == Mode::Lossy {
        // `reset` is a lossless policy; validation rejects it in lossy mode.
        c.transport.on_loss = OnLoss::Retransmit;
    }
    c
}

/// Lossless mode needs credits x sessions <= rx_desc. Raises `rx_desc` to
/// the next power of two that backs the credits; returns the new size, or
/// why it cannot (past the largest ring).
pub fn fit_ring(cfg: &mut Config) -> Result<Option<u32>, String> {
    if cfg.transport.mode != Mode::Lossless {
        return Ok(None);
    }
    let sessions = (cfg.workload.sessions_per_thread as u64)
        .max(cfg.max_sessions_per_server_worker() as u64)
        .max(1);
    let need = cfg.effective_credits() as u64 * sessions;
    if need <= cfg.link.rx_desc as u64 {
        return Ok(None);
    }
    let ring = need.next_power_of_two();
    if ring > MAX_DESC as u64 {
        return Err(format!(
            "lossless with {} credits x {sessions} session(s) needs a {need}-entry receive ring, more than the largest ({MAX_DESC})",
            cfg.effective_credits()
        ));
    }
    cfg.link.rx_desc = ring as u32;
    Ok(Some(ring as u32))
}

/// (steal, total) jiffies of all CPUs from /proc/stat: time the hypervisor
/// ran something else while this VM's vCPUs wanted to run.
pub fn cpu_steal() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_steal(&text)
}

/// The `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal ...
pub fn parse_cpu_steal(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|t| t.parse().ok())
        .collect();
    (v.len() == 8).then(|| (v[7], v.iter().sum()))
}

/// Runs one server+client pair on `cfg` (validated here) and returns its
/// report with the qdisc drops of `probes` and the drop-source summary.
pub fn measure(cfg: &Config, probes: &[QdiscProbe]) -> anyhow::Result<Report> {
    cfg.validate(&ValidationEnv::detect())?;
    let mut cfg = cfg.clone();
    bench::isolate(&mut cfg);
    let before: Vec<_> = probes.iter().map(QdiscProbe::read).collect();
    let steal0 = cpu_steal();
    let result = bench::run_pair(&cfg);
    let steal1 = cpu_steal();
    let after: Vec<_> = probes.iter().map(QdiscProbe::read).collect();
    let mut rep = result?;
    if let (Some((s0, t0)), Some((s1, t1))) = (steal0, steal1) {
        if t1 > t0 {
            let pct = 100.0 * s1.saturating_sub(s0) as f64 / (t1 - t0) as f64;
            rep.extra.insert("cpu_steal_pct".into(), json!(pct));
        }
    }
    let mut seen = Vec::new();
    for ((p, b), a) in probes.iter().zip(before).zip(after) {
        let (Some(b), Some(a)) = (b, a) else {
            continue;
        };
        let delta = |f: fn(&QdiscStats) -> u64| root_sum(&a, f).saturating_sub(root_sum(&b, f));
        let dropped = delta(|q| q.dropped);
        rep.add_drops(
            if p.own_egress {
                QDISC_SENDER
            } else {
                QDISC_SWITCH
            },
            dropped,
        );
        let kinds: Vec<&str> = a
            .iter()
            .filter(|q| q.root)
            .map(|q| q.kind.as_str())
            .collect();
        seen.push(json!({
            "dev": p.label(), "qdisc": kinds.join(","), "own_egress": p.own_egress,
            "dropped": dropped, "sent_pkts": delta(|q| q.sent_pkts),
            "overlimits": delta(|q| q.overlimits),
        }));
    }
    if !seen.is_empty() {
        rep.extra.insert("qdisc".into(), Value::Array(seen));
    }
    annotate(&cfg, &mut rep);
    Ok(rep)
}

/// True when the run completed everything it started, with the right bytes.
fn clean(r: &Report) -> bool {
    r.failed == 0
        && r.extra
            .get("bad_responses")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            == 0
        && !r.extra.contains_key("errors")
        && !r.extra.contains_key("server_error")
}

fn json_without_hist(r: &Report) -> Value {
    let mut v = r.to_json();
    if let Some(o) = v.as_object_mut() {
        o.remove("hist");
    }
    v
}

/// "af_packet", "memif", ... as the config spells it.
fn link_name(cfg: &Config) -> String {
    serde_json::to_value(cfg.link.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The workload in one line (no flow mode: the commands run both).
fn describe(cfg: &Config) -> String {
    let w = &cfg.workload;
    let sessions = if w.kind == crate::config::WorkloadKind::Incast {
        String::new()
    } else {
        format!(", {} session(s)", w.sessions_per_thread)
    };
    format!(
        "{} over {}, {} B requests, {} B responses, window {} per session{sessions}, {} s (+{} s warm-up){}",
        w.kind.as_str(),
        link_name(cfg),
        w.req_size,
        w.resp_size,
        cfg.window(),
        w.seconds,
        w.warmup_seconds,
        w.max_requests
            .map(|m| format!(", at most {m} requests"))
            .unwrap_or_default()
    )
}

fn bdp_line(cfg: &Config) -> String {
    let t = &cfg.transport;
    format!(
        "BDP = {} credits (transport.link_gbps {} x rtt_us {} / mtu {})",
        cfg.bdp_credits(),
        t.link_gbps,
        t.rtt_us,
        cfg.link.mtu
    )
}

fn multiple(credits: u16, bdp: u16) -> f64 {
    credits as f64 / bdp.max(1) as f64
}

// ------------------------------------------------------------ compare

#[derive(Args, Clone, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    pub cfg: ConfigArgs,
    #[command(flatten)]
    pub modes: ModeOverrides,
    /// Lossy credits as a multiple of the BDP, or "unbounded" (shortcut for
    /// --set transport.lossy_credit_multiple=X).
    #[arg(long, value_name = "X")]
    pub multiple: Option<String>,
    /// Read drops of this device's qdisc, DEV or DEV@NETNS (repeatable).
    /// Default on af_packet: the server's interface, and the switch port of
    /// `scripts/veth.sh up IFACE --switch` when there is one.
    #[arg(long = "qdisc", value_name = "DEV[@NETNS]")]
    pub qdisc: Vec<String>,
    /// Print one JSON object {"lossless": {...}, "lossy": {...}} as the last line.
    #[arg(long)]
    pub json: bool,
    /// Draw both latency distributions on one SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// Overrides for one flow mode only, applied after `--set`.
#[derive(Args, Clone, Debug, Default)]
pub struct ModeOverrides {
    /// Override a config key in the lossless runs only (repeatable), e.g.
    /// --lossless-set transport.rto_us=100000.
    #[arg(long = "lossless-set", value_name = "KEY=VALUE")]
    pub lossless_set: Vec<String>,
    /// Override a config key in the lossy runs only (repeatable).
    #[arg(long = "lossy-set", value_name = "KEY=VALUE")]
    pub lossy_set: Vec<String>,
}

/// The run configuration as loaded (`common`), and per flow mode with
/// that mode's overrides.
#[derive(Clone, Debug)]
pub struct Bases {
    pub common: Config,
    pub lossless: Config,
    pub lossy: Config,
}

impl Bases {
    pub fn get(&self, mode: Mode) -> &Config {
        match mode {
            Mode::Lossless => &self.lossless,
            Mode::Lossy => &self.lossy,
        }
    }

    /// Applies `f` to every configuration.
    fn each(&mut self, f: impl Fn(&mut Config)) {
        for c in [&mut self.common, &mut self.lossless, &mut self.lossy] {
            f(c);
        }
    }

    /// Drops an explicit `transport.credits` (the modes choose credits);
    /// true when there was one.
    fn clear_credits(&mut self) -> bool {
        let had = [&self.common, &self.lossless, &self.lossy]
            .iter()
            .any(|c| c.transport.credits.is_some());
        self.each(|c| c.transport.credits = None);
        had
    }
}

fn load_bases(
    cfg: &ConfigArgs,
    multiple: Option<&str>,
    sets: &ModeOverrides,
) -> anyhow::Result<Bases> {
    let mut args = cfg.clone();
    if let Some(m) = multiple {
        // First among the --set overrides, so an explicit --set still wins.
        args.set
            .insert(0, format!("transport.lossy_credit_multiple={m}"));
    }
    let overrides = args.overrides();
    let load = |extra: &[String]| {
        Config::load(
            args.config.as_deref(),
            &[overrides.clone(), extra.to_vec()].concat(),
        )
    };
    let bases = Bases {
        common: load(&[])?,
        lossless: load(&sets.lossless_set).context("--lossless-set")?,
        lossy: load(&sets.lossy_set).context("--lossy-set")?,
    };
    // Each run's configuration is validated before it runs; check the
    // parts common to all now (a lossless check of the user's credits
    // would reject what the lossy runs are for).
    let c = &bases.common;
    for_mode(c, Mode::Lossy, c.transport.credits).validate(&ValidationEnv::detect())?;
    bench::preflight(c)?;
    if c.workload.warmup_seconds > c.workload.seconds {
        eprintln!("rpc-bench: note: the warm-up is longer than the measured interval");
    }
    Ok(bases)
}

/// `rpc-bench compare`: the same workload lossless then lossy.
pub fn compare_cmd(a: &CompareArgs) -> anyhow::Result<()> {
    crate::child::install_signal_handlers();
    let mut bases = load_bases(&a.cfg, a.multiple.as_deref(), &a.modes)?;
    if bases.clear_credits() {
        eprintln!(
            "rpc-bench compare: ignoring transport.credits: lossless runs at the BDP, lossy at lossy_credit_multiple x BDP (use `rpc-bench sweep --credits` for explicit values)"
        );
    }
    let base = bases.common.clone();
    let lossless = for_mode(&bases.lossless, Mode::Lossless, None);
    let lossy = for_mode(&bases.lossy, Mode::Lossy, None);
    // Both before either runs: a lossless BDP the ring cannot back fails here.
    let env = ValidationEnv::detect();
    lossless.validate(&env).context("lossless configuration")?;
    lossy.validate(&env).context("lossy configuration")?;
    let probes = probes_for(&base, &a.qdisc);
    warn_bypassed(&base, &probes);
    let bdp = base.bdp_credits();
    eprintln!("rpc-bench compare: {}", describe(&lossless));
    eprintln!(
        "  {}; lossless {} credits (reserving {} of {} receive-ring entries per session); lossy {} credits ({:.2} x BDP), nothing reserved",
        bdp_line(&base),
        lossless.effective_credits(),
        lossless.effective_credits(),
        lossless.link.rx_desc,
        lossy.effective_credits(),
        multiple(lossy.effective_credits(), bdp)
    );
    if !probes.is_empty() {
        let names: Vec<String> = probes.iter().map(QdiscProbe::label).collect();
        eprintln!("  qdisc drops read on: {}", names.join(", "));
    }
    let mut reports = Vec::new();
    for cfg in [&lossless, &lossy] {
        eprintln!(
            "rpc-bench compare: {} run, {} credits",
            cfg.transport.mode.as_str(),
            cfg.effective_credits()
        );
        let rep = measure(cfg, &probes)
            .with_context(|| format!("{} run", cfg.transport.mode.as_str()))?;
        reports.push(rep);
    }
    let (ll, ly) = (&reports[0], &reports[1]);
    println!();
    print!("{}", render_side_by_side(ll, ly));
    print!("{}", render_drop_sources(ll, ly));
    if let Some(p) = &a.plot {
        crate::plot::plot_latency_percentiles(
            p,
            &format!(
                "{} over {}: lossless ({} credits) vs lossy ({} credits)",
                ll.workload,
                ll.link,
                lossless.effective_credits(),
                lossy.effective_credits()
            ),
            &[
                (
                    &format!("lossless, {} credits", lossless.effective_credits()),
                    &ll.latency,
                ),
                (
                    &format!("lossy, {} credits", lossy.effective_credits()),
                    &ly.latency,
                ),
            ],
        )?;
        println!("latency plot: {}", p.display());
    }
    if a.json {
        println!(
            "{}",
            json!({"lossless": json_without_hist(ll), "lossy": json_without_hist(ly)})
        );
    }
    let bad: Vec<String> = reports
        .iter()
        .filter(|r| !clean(r))
        .map(|r| format!("{}: {} failed", r.mode, r.failed))
        .collect();
    if !bad.is_empty() {
        bail!("runs with failures: {}", bad.join("; "));
    }
    Ok(())
}

/// The drop-source rows under the side-by-side table.
pub fn render_drop_sources(a: &Report, b: &Report) -> String {
    let (da, db) = (DropSources::from_report(a), DropSources::from_report(b));
    let pair = |x: u64, y: u64| format!("{x} / {y}");
    let sent = |r: &Report| {
        r.extra
            .get("pkts_sent")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let rows: Vec<(&str, String, String)> = vec![
        (
            "injected (client / server)",
            pair(da.injected_client, da.injected_server),
            pair(db.injected_client, db.injected_server),
        ),
        (
            "rx ring overflow (client / server)",
            pair(da.rx_missed_client, da.rx_missed_server),
            pair(db.rx_missed_client, db.rx_missed_server),
        ),
        (
            "qdisc at a switch port (lost)",
            da.qdisc_switch.to_string(),
            db.qdisc_switch.to_string(),
        ),
        (
            "qdisc at sender egress (re-sent)",
            da.qdisc_sender.to_string(),
            db.qdisc_sender.to_string(),
        ),
        (
            "protocol discards (client / server)",
            pair(da.proto_client, da.proto_server),
            pair(db.proto_client, db.proto_server),
        ),
        (
            "lost in the network",
            da.lost().to_string(),
            db.lost().to_string(),
        ),
        ("frames sent", sent(a).to_string(), sent(b).to_string()),
        (
            "loss rate",
            format!("{:.3e}", loss_rate(a)),
            format!("{:.3e}", loss_rate(b)),
        ),
        ("vCPU steal during the run", steal_text(a), steal_text(b)),
    ];
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    let w1 = rows.iter().map(|r| r.1.len()).max().unwrap_or(0).max(8);
    let w2 = rows.iter().map(|r| r.2.len()).max().unwrap_or(0).max(8);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "drops by source{:>w$}  {:>w1$}  {:>w2$}",
        "",
        a.mode,
        b.mode,
        w = w0.saturating_sub(15)
    );
    for (name, x, y) in rows {
        let _ = writeln!(o, "{name:<w0$}  {x:>w1$}  {y:>w2$}");
    }
    o
}

// ------------------------------------------------------------ sweep

/// One entry of `--credits`: a multiple of the BDP ("4x") or a count ("16").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CreditSpec {
    Multiple(f64),
    Absolute(u16),
}

impl CreditSpec {
    /// Credits for a BDP of `bdp` packets (multiples round up, at least 1).
    pub fn resolve(self, bdp: u16) -> u16 {
        match self {
            CreditSpec::Absolute(n) => n,
            CreditSpec::Multiple(f) => (bdp as f64 * f).ceil().clamp(1.0, u16::MAX as f64) as u16,
        }
    }
}

/// "0.5x,1x,2x,16,64" -> specs; errors name the bad entry.
pub fn parse_credit_list(s: &str) -> anyhow::Result<Vec<CreditSpec>> {
    let mut v = Vec::new();
    for item in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let spec = if let Some(m) = item.strip_suffix(['x', 'X']) {
            match m.trim().parse::<f64>() {
                Ok(f) if f.is_finite() && f > 0.0 => CreditSpec::Multiple(f),
                _ => bail!(
                    "--credits: {item:?} is not a positive multiple of the BDP (e.g. 0.5x, 4x)"
                ),
            }
        } else {
            match item.parse::<u16>() {
                Ok(n) if n > 0 => CreditSpec::Absolute(n),
                _ => bail!("--credits: {item:?} is neither a multiple of the BDP (4x) nor a credit count in 1..=65535"),
            }
        };
        v.push(spec);
    }
    if v.is_empty() {
        bail!("--credits needs at least one value, e.g. 0.5x,1x,2x,4x,8x,16x");
    }
    Ok(v)
}

fn parse_modes(list: &[String]) -> anyhow::Result<Vec<Mode>> {
    let mut v = Vec::new();
    for m in list {
        let mode = match m.trim() {
            "lossless" => Mode::Lossless,
            "lossy" => Mode::Lossy,
            other => bail!("--modes: unknown mode {other:?} (lossless, lossy)"),
        };
        if !v.contains(&mode) {
            v.push(mode);
        }
    }
    if v.is_empty() {
        bail!("--modes needs lossless and/or lossy");
    }
    Ok(v)
}

#[derive(Args, Clone, Debug)]
#[command(mut_arg("credits", |a| a.long("fixed-credits").hide(true)))]
pub struct SweepArgs {
    #[command(flatten)]
    pub cfg: ConfigArgs,
    #[command(flatten)]
    pub mode_sets: ModeOverrides,
    /// Credit values, comma-separated: multiples of the BDP ("0.5x,1x,4x")
    /// or absolute counts ("2,8,32").
    #[arg(
        long = "credits",
        value_name = "LIST",
        default_value = "0.5x,1x,2x,4x,8x,16x"
    )]
    pub credit_list: String,
    /// Flow modes to sweep, comma-separated. Lossless credits above
    /// rx_desc / sessions raise link.rx_desc (to at most 32768).
    #[arg(long, value_delimiter = ',', default_value = "lossy")]
    pub modes: Vec<String>,
    /// Read drops of this device's qdisc, DEV or DEV@NETNS (repeatable).
    #[arg(long = "qdisc", value_name = "DEV[@NETNS]")]
    pub qdisc: Vec<String>,
    /// Print a JSON array (one object per run) as the last line.
    #[arg(long)]
    pub json: bool,
    /// Goodput against credits as SVG; p99 and loss rate go to FILE-p99.svg
    /// and FILE-loss.svg.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// One run of a sweep (or why it did not run).
#[derive(Clone, Debug)]
pub struct Point {
    pub mode: Mode,
    pub credits: u16,
    pub bdp: u16,
    pub sessions: u32,
    pub rx_desc: u32,
    pub note: Option<String>,
    pub result: Result<Report, String>,
}

impl Point {
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "mode": self.mode.as_str(), "credits": self.credits, "bdp_credits": self.bdp,
            "credits_x_bdp": multiple(self.credits, self.bdp),
            "sessions": self.sessions, "rx_desc": self.rx_desc,
        });
        if let Some(n) = &self.note {
            v["note"] = json!(n);
        }
        match &self.result {
            Ok(r) => {
                let d = DropSources::from_report(r);
                let fields = json!({
                    "gbps": r.gbps(), "mrps": r.mrps(),
                    "p50_us": r.latency.percentile_us(50.0), "p99_us": r.latency.percentile_us(99.0),
                    "p999_us": r.latency.percentile_us(99.9), "max_us": r.latency.max_us(),
                    "completed": r.completed, "failed": r.failed,
                    "retransmissions": r.retransmissions, "violations": r.violations, "resets": r.resets,
                    "lost": d.lost(), "loss_rate": loss_rate(r),
                    "pkts_sent": r.extra.get("pkts_sent").cloned().unwrap_or(json!(0)),
                    "drop_sources": d.to_json(), "cpu_steal_pct": steal(r),
                });
                if let (Some(o), Some(f)) = (v.as_object_mut(), fields.as_object()) {
                    o.extend(f.clone());
                }
            }
            Err(e) => v["error"] = json!(e),
        }
        v
    }
}

/// Runs `cfg` (already in its mode, with its credits) as one point.
fn run_point(mut cfg: Config, probes: &[QdiscProbe], label: &str) -> Point {
    let bdp = cfg.bdp_credits();
    let mut note = None;
    let fit = fit_ring(&mut cfg);
    let mut point = Point {
        mode: cfg.transport.mode,
        credits: cfg.effective_credits(),
        bdp,
        sessions: cfg.workload.sessions_per_thread,
        rx_desc: cfg.link.rx_desc,
        note: None,
        result: Err(String::new()),
    };
    match fit {
        Err(why) => {
            eprintln!("rpc-bench: {label}: skipped: {why}");
            point.result = Err(format!("skipped: {why}"));
            return point;
        }
        Ok(Some(ring)) => {
            let n = format!("link.rx_desc raised to {ring} to back the credits");
            eprintln!("rpc-bench: {label}: {n}");
            note = Some(n);
        }
        Ok(None) => {}
    }
    point.rx_desc = cfg.link.rx_desc;
    point.note = note;
    eprintln!(
        "rpc-bench: {label}: {} credits ({:.2} x BDP), rx_desc {}",
        point.credits,
        multiple(point.credits, bdp),
        point.rx_desc
    );
    point.result = measure(&cfg, probes).map_err(|e| format!("{e:#}"));
    if let Err(e) = &point.result {
        eprintln!("rpc-bench: {label}: failed: {e}");
    }
    point
}

/// `rpc-bench sweep`: one run per credit value (and mode).
pub fn sweep_cmd(a: &SweepArgs) -> anyhow::Result<()> {
    crate::child::install_signal_handlers();
    let specs = parse_credit_list(&a.credit_list)?;
    let modes = parse_modes(&a.modes)?;
    let bases = load_bases(&a.cfg, None, &a.mode_sets)?;
    let base = bases.common.clone();
    let probes = probes_for(&base, &a.qdisc);
    warn_bypassed(&base, &probes);
    eprintln!("rpc-bench sweep: {}", describe(&base));
    eprintln!("  {}", bdp_line(&base));
    let total = modes.len() * specs.len();
    let mut points = Vec::new();
    for mode in &modes {
        for spec in &specs {
            if crate::child::interrupted() {
                bail!("interrupted");
            }
            let mode_base = bases.get(*mode);
            let credits = spec.resolve(mode_base.bdp_credits());
            let cfg = for_mode(mode_base, *mode, Some(credits));
            let label = format!("[{}/{total}] {}", points.len() + 1, mode.as_str());
            points.push(run_point(cfg, &probes, &label));
        }
    }
    println!();
    println!(
        "credit sweep: {}",
        describe(&base).replacen(" (lossless)", "", 1)
    );
    println!("{}", bdp_line(&base));
    print!("{}", render_points(&points, false));
    if let Some(p) = &a.plot {
        let context = format!(
            "{} over {}, BDP {}",
            base.workload.kind.as_str(),
            link_name(&base),
            base.bdp_credits()
        );
        plot_points(
            p,
            &points,
            &context,
            "credits",
            |pt| pt.credits as f64,
            true,
        )?;
    }
    if a.json {
        println!(
            "{}",
            Value::Array(points.iter().map(Point::to_json).collect())
        );
    }
    finish(&points)
}

fn finish(points: &[Point]) -> anyhow::Result<()> {
    let bad: Vec<String> = points
        .iter()
        .filter_map(|p| match &p.result {
            Ok(r) if clean(r) => None,
            Ok(r) => Some(format!(
                "{} {} credits: {} failed",
                p.mode.as_str(),
                p.credits,
                r.failed
            )),
            Err(e) if e.starts_with("skipped") => None,
            Err(e) => Some(format!("{} {} credits: {e}", p.mode.as_str(), p.credits)),
        })
        .collect();
    if !bad.is_empty() {
        bail!("runs with failures: {}", bad.join("; "));
    }
    Ok(())
}

/// The sweep/incast table, one row per point.
pub fn render_points(points: &[Point], by_sessions: bool) -> String {
    let head = [
        if by_sessions { "sessions" } else { "mode" },
        if by_sessions { "mode" } else { "credits" },
        if by_sessions { "credits" } else { "x BDP" },
        "rx_desc",
        "Gbps",
        "Mrps",
        "p50 us",
        "p99 us",
        "p99.9 us",
        "lost",
        "loss rate",
        "refused",
        "retx",
        "discards",
        "failed",
        "steal",
    ];
    let mut rows: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    let mut notes = Vec::new();
    for p in points {
        let mut r = if by_sessions {
            vec![
                p.sessions.to_string(),
                p.mode.as_str().to_string(),
                p.credits.to_string(),
            ]
        } else {
            vec![
                p.mode.as_str().to_string(),
                p.credits.to_string(),
                format!("{:.2}", multiple(p.credits, p.bdp)),
            ]
        };
        r.push(p.rx_desc.to_string());
        match &p.result {
            Ok(rep) => {
                let d = DropSources::from_report(rep);
                r.extend([
                    format!("{:.3}", rep.gbps()),
                    format!("{:.4}", rep.mrps()),
                    format!("{:.1}", rep.latency.percentile_us(50.0)),
                    format!("{:.1}", rep.latency.percentile_us(99.0)),
                    format!("{:.1}", rep.latency.percentile_us(99.9)),
                    d.lost().to_string(),
                    format!("{:.2e}", loss_rate(rep)),
                    d.qdisc_sender.to_string(),
                    rep.retransmissions.to_string(),
                    (d.proto_client + d.proto_server).to_string(),
                    rep.failed.to_string(),
                    steal_text(rep),
                ]);
            }
            Err(e) => {
                r.extend(std::iter::repeat_n("-".to_string(), 12));
                notes.push(format!("  {} {} credits: {e}", p.mode.as_str(), p.credits));
            }
        }
        if let Some(n) = &p.note {
            notes.push(format!("  {} {} credits: {n}", p.mode.as_str(), p.credits));
        }
        rows.push(r);
    }
    let widths: Vec<usize> = (0..head.len())
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut o = String::new();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i == 0 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        let _ = writeln!(o, "{}", cells.join("  "));
    }
    for n in notes {
        let _ = writeln!(o, "{n}");
    }
    o
}

/// Goodput (FILE), p99 (FILE-p99.svg) and loss rate (FILE-loss.svg)
/// against `x`, one line per mode.
fn plot_points(
    path: &Path,
    points: &[Point],
    context: &str,
    x_label: &str,
    x: impl Fn(&Point) -> f64,
    log_x: bool,
) -> anyhow::Result<()> {
    let series = |y: &dyn Fn(&Report) -> f64| -> Vec<(String, Vec<(f64, f64)>)> {
        [Mode::Lossless, Mode::Lossy]
            .iter()
            .filter_map(|m| {
                let pts: Vec<(f64, f64)> = points
                    .iter()
                    .filter(|p| p.mode == *m)
                    .filter_map(|p| p.result.as_ref().ok().map(|r| (x(p), y(r))))
                    .collect();
                (!pts.is_empty()).then(|| (m.as_str().to_string(), pts))
            })
            .collect()
    };
    let sibling = |suffix: &str| {
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("sweep");
        path.with_file_name(format!("{stem}-{suffix}.svg"))
    };
    type Metric<'a> = &'a dyn Fn(&Report) -> f64;
    let plots: [(PathBuf, &str, &str, Metric); 3] = [
        (path.to_path_buf(), "goodput", "goodput (Gbps)", &|r| {
            r.gbps()
        }),
        (sibling("p99"), "p99 latency", "p99 latency (us)", &|r| {
            r.latency.percentile_us(99.0)
        }),
        (
            sibling("loss"),
            "loss rate",
            "lost / frames sent",
            &loss_rate,
        ),
    ];
    for (file, what, y_label, y) in plots {
        let s = series(y);
        if s.is_empty() {
            bail!("nothing to plot: no run succeeded");
        }
        let refs: Vec<(&str, Vec<(f64, f64)>)> =
            s.iter().map(|(n, p)| (n.as_str(), p.clone())).collect();
        let title = format!("{what} against {x_label}: {context}");
        crate::plot::plot_xy(&file, &title, x_label, y_label, &refs, log_x)?;
        println!("plot: {}", file.display());
    }
    Ok(())
}

// ------------------------------------------------------------ incast

#[derive(Args, Clone, Debug)]
pub struct IncastArgs {
    #[command(flatten)]
    pub cfg: ConfigArgs,
    /// Fan-in values: sessions converging on server worker 0, all
    /// multiplexed by one client thread (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 2, 4, 8, 16])]
    pub fan_in: Vec<u32>,
    /// Flow modes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "lossless,lossy")]
    pub modes: Vec<String>,
    #[command(flatten)]
    pub mode_sets: ModeOverrides,
    /// Lossy credits as a multiple of the BDP, or "unbounded".
    #[arg(long, value_name = "X")]
    pub multiple: Option<String>,
    /// Read drops of this device's qdisc, DEV or DEV@NETNS (repeatable).
    #[arg(long = "qdisc", value_name = "DEV[@NETNS]")]
    pub qdisc: Vec<String>,
    /// Print a JSON array (one object per run) as the last line.
    #[arg(long)]
    pub json: bool,
    /// Goodput against fan-in as SVG (and FILE-p99.svg, FILE-loss.svg).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// Per-session credits of an incast run: lossless shares the server's
/// receive ring, min(BDP, rx_desc / sessions) (None: not even one credit
/// each); lossy takes `lossy_credit_multiple` x BDP per session.
pub fn incast_credits(base: &Config, mode: Mode, sessions: u32) -> Option<u16> {
    let probe = for_mode(base, mode, None);
    let c = probe.effective_credits();
    match mode {
        Mode::Lossy => Some(c),
        Mode::Lossless => {
            let share = (base.link.rx_desc / sessions.max(1)).min(u16::MAX as u32) as u16;
            (share >= 1).then(|| c.min(share))
        }
    }
}

/// `rpc-bench incast`: fan-in sessions to one server worker, both modes.
pub fn incast_cmd(a: &IncastArgs) -> anyhow::Result<()> {
    crate::child::install_signal_handlers();
    let modes = parse_modes(&a.modes)?;
    let mut bases = load_bases(&a.cfg, a.multiple.as_deref(), &a.mode_sets)?;
    bases.each(|c| c.workload.kind = crate::config::WorkloadKind::Incast);
    if bases.clear_credits() {
        eprintln!("rpc-bench incast: ignoring transport.credits (lossless shares rx_desc among the sessions, lossy uses lossy_credit_multiple x BDP)");
    }
    let base = bases.common.clone();
    let probes = probes_for(&base, &a.qdisc);
    warn_bypassed(&base, &probes);
    eprintln!(
        "rpc-bench incast: {} ; {} -> server worker 0 on core {}",
        describe(&base),
        a.fan_in
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(","),
        base.cores.server[0]
    );
    eprintln!("  {}", bdp_line(&base));
    let total = a.fan_in.len() * modes.len();
    let mut points = Vec::new();
    for &n in &a.fan_in {
        for mode in &modes {
            if crate::child::interrupted() {
                bail!("interrupted");
            }
            let label = format!("[{}/{total}] {} x {n}", points.len() + 1, mode.as_str());
            let mut cfg = bases.get(*mode).clone();
            cfg.workload.sessions_per_thread = n.max(1);
            let Some(credits) = incast_credits(&cfg, *mode, n) else {
                let why = format!(
                    "skipped: link.rx_desc = {} cannot back one credit for each of {n} sessions",
                    cfg.link.rx_desc
                );
                eprintln!("rpc-bench: {label}: {why}");
                points.push(Point {
                    mode: *mode,
                    credits: 0,
                    bdp: cfg.bdp_credits(),
                    sessions: n,
                    rx_desc: cfg.link.rx_desc,
                    note: None,
                    result: Err(why),
                });
                continue;
            };
            points.push(run_point(
                for_mode(&cfg, *mode, Some(credits)),
                &probes,
                &label,
            ));
        }
    }
    println!();
    println!(
        "incast: {} session(s) of one client thread -> one server thread; {}",
        a.fan_in
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("/"),
        describe(&base)
    );
    println!(
        "{}; lossless credits per session = min(BDP, rx_desc / sessions)",
        bdp_line(&base)
    );
    print!("{}", render_points(&points, true));
    if let Some(p) = &a.plot {
        let context = format!("incast over {}, one client thread", link_name(&base));
        plot_points(
            p,
            &points,
            &context,
            "sessions (fan-in)",
            |pt| pt.sessions as f64,
            true,
        )?;
    }
    if a.json {
        println!(
            "{}",
            Value::Array(points.iter().map(Point::to_json).collect())
        );
    }
    finish(&points)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TBF: &str = "qdisc tbf 8002: root refcnt 3 rate 1Gbit burst 4000b lat 99us \n Sent 65917038 bytes 43771 pkt (dropped 594, overlimits 42497 requeues 0) \n backlog 3028b 2p requeues 0\n";

    #[test]
    fn parses_tc_qdisc_stats() {
        let q = parse_tc_qdisc(TBF);
        assert_eq!(q.len(), 1);
        let t = &q[0];
        assert_eq!(t.kind, "tbf");
        assert_eq!(t.handle, "8002:");
        assert!(t.root);
        assert_eq!(t.sent_bytes, 65917038);
        assert_eq!(t.sent_pkts, 43771);
        assert_eq!(t.dropped, 594);
        assert_eq!(t.overlimits, 42497);
        assert_eq!(t.requeues, 0);
        assert_eq!(t.backlog_bytes, 3028);
        assert_eq!(t.backlog_pkts, 2);
        // Several qdiscs (a classful root and a child); only roots are summed.
        let multi = "qdisc noqueue 0: root refcnt 2 \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0)\n backlog 0b 0p requeues 0\n\
qdisc mq 0: root \n Sent 10 bytes 1 pkt (dropped 7, overlimits 0 requeues 1) \n backlog 12Kb 8p requeues 1\n\
qdisc fq_codel 0: parent :1 limit 10240p flows 1024 quantum 1514 \n Sent 10 bytes 1 pkt (dropped 7, overlimits 0 requeues 1) \n backlog 0b 0p requeues 0\n  maxpacket 0 drop_overlimit 0 new_flow_count 0 ecn_mark 0\n";
        let q = parse_tc_qdisc(multi);
        assert_eq!(q.len(), 3);
        assert!(!q[2].root);
        assert_eq!(q[1].backlog_bytes, 12 * 1024);
        assert_eq!(root_sum(&q, |s| s.dropped), 7);
        assert!(parse_tc_qdisc("").is_empty());
        assert!(parse_tc_qdisc("Cannot find device \"x\"").is_empty());
    }

    #[test]
    fn parses_cpu_steal() {
        let stat =
            "cpu  427101 32016 29508 299298 5285 0 8568 103166 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        let (steal, total) = parse_cpu_steal(stat).unwrap();
        assert_eq!(steal, 103166);
        assert_eq!(
            total,
            427101 + 32016 + 29508 + 299298 + 5285 + 8568 + 103166
        );
        assert!(parse_cpu_steal("cpu0 1 2 3\n").is_none());
    }

    #[test]
    fn credit_lists() {
        let v = parse_credit_list("0.5x, 1x,2X,16,64").unwrap();
        assert_eq!(
            v,
            vec![
                CreditSpec::Multiple(0.5),
                CreditSpec::Multiple(1.0),
                CreditSpec::Multiple(2.0),
                CreditSpec::Absolute(16),
                CreditSpec::Absolute(64)
            ]
        );
        assert_eq!(CreditSpec::Multiple(0.5).resolve(3), 2);
        assert_eq!(CreditSpec::Multiple(0.1).resolve(3), 1);
        assert_eq!(CreditSpec::Multiple(16.0).resolve(3), 48);
        assert_eq!(CreditSpec::Absolute(7).resolve(3), 7);
        for bad in ["", "0", "-1x", "abc", "0x", "70000"] {
            assert!(parse_credit_list(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn lossless_rings_grow_with_credits() {
        let mut c = for_mode(&Config::default(), Mode::Lossless, Some(300));
        c.link.rx_desc = 256;
        c.workload.sessions_per_thread = 4;
        assert_eq!(fit_ring(&mut c), Ok(Some(2048)));
        assert!(c.validate(&ValidationEnv { online_cores: 2 }).is_ok());
        let mut c = for_mode(&Config::default(), Mode::Lossless, Some(60000));
        c.workload.sessions_per_thread = 2;
        assert!(fit_ring(&mut c).unwrap_err().contains("32768"));
        let mut lossy = for_mode(&Config::default(), Mode::Lossy, Some(60000));
        assert_eq!(fit_ring(&mut lossy), Ok(None));
    }

    #[test]
    fn incast_shares_the_ring_in_lossless_mode() {
        let mut c = Config::default();
        c.link.rx_desc = 64;
        assert_eq!(c.bdp_credits(), 9);
        assert_eq!(incast_credits(&c, Mode::Lossless, 1), Some(9));
        assert_eq!(incast_credits(&c, Mode::Lossless, 16), Some(4));
        assert_eq!(incast_credits(&c, Mode::Lossless, 128), None);
        assert_eq!(incast_credits(&c, Mode::Lossy, 16), Some(36));
        // The lossless choice passes validation for the incast workload.
        c.workload.kind = crate::config::WorkloadKind::Incast;
        c.workload.sessions_per_thread = 16;
        let l = for_mode(&c, Mode::Lossless, incast_credits(&c, Mode::Lossless, 16));
        assert!(l.validate(&ValidationEnv { online_cores: 2 }).is_ok());
    }

    #[test]
    fn drop_sources_and_loss_rate() {
        let mut r = Report::new("large", "af_packet", "lossy", 32, 1024);
        r.add_drops("injected", 2);
        r.add_drops("server_injected", 3);
        r.add_drops("rx_ring_overflow", 5);
        r.add_drops("server_rx_ring_overflow", 7);
        r.add_drops(QDISC_SWITCH, 11);
        r.add_drops(QDISC_SENDER, 13);
        r.add_drops("proto.duplicate", 17);
        r.add_drops("server_proto.duplicate", 19);
        r.extra
            .insert("client_port".into(), json!({"tx_packets": 600}));
        r.server = Some(json!({"port": {"tx_packets": 400}}));
        let d = DropSources::from_report(&r);
        assert_eq!(d.lost(), 2 + 3 + 5 + 7 + 11);
        assert_eq!((d.proto_client, d.proto_server), (17, 19));
        let cfg = Config::default();
        assert_eq!(packets_sent(&cfg, &r), 1000);
        annotate(&cfg, &mut r);
        assert!((loss_rate(&r) - 28.0 / 1000.0).abs() < 1e-12);
        let mut tx = cfg.clone();
        tx.faults.drop = DropKind::Uniform;
        tx.faults.direction = Direction::Tx;
        assert_eq!(packets_sent(&tx, &r), 1005);
        let text = render_drop_sources(&r, &r);
        for row in [
            "injected",
            "rx ring overflow",
            "switch",
            "sender",
            "loss rate",
        ] {
            assert!(text.contains(row), "{row}:\n{text}");
        }
    }

    #[test]
    fn subcommand_flags_do_not_clash() {
        use clap::{Args as _, Command};
        // `sweep --credits LIST` renames the shared `--credits N` shortcut.
        for cmd in [
            CompareArgs::augment_args(Command::new("compare")),
            SweepArgs::augment_args(Command::new("sweep")),
            IncastArgs::augment_args(Command::new("incast")),
        ] {
            cmd.debug_assert();
        }
        let m = SweepArgs::augment_args(Command::new("sweep"))
            .try_get_matches_from(["sweep", "--credits", "1x,4x", "--modes", "lossy,lossless"])
            .unwrap();
        use clap::FromArgMatches as _;
        let a = SweepArgs::from_arg_matches(&m).unwrap();
        assert_eq!(a.credit_list, "1x,4x");
        assert_eq!(a.cfg.credits, None);
        assert_eq!(a.modes, vec!["lossy", "lossless"]);
    }

    #[test]
    fn probes_know_the_senders_own_egress() {
        let mut c = Config::default();
        c.link.kind = LinkKind::AfPacket;
        c.link.iface = "lv0".into();
        c.link.client_netns = Some("lv0ns".into());
        assert!(QdiscProbe::parse("lv0", &c).own_egress);
        assert!(QdiscProbe::parse("lv0p@lv0ns", &c).own_egress);
        let sw = QdiscProbe::parse("lv0q@lv0sw", &c);
        assert!(!sw.own_egress);
        assert_eq!(sw.label(), "lv0q@lv0sw");
        assert_eq!(default_probes(&c)[0].dev, "lv0");
        assert!(default_probes(&Config::default()).is_empty());
    }
}
