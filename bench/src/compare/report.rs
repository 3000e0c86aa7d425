//! Report assembly for compare/sweep/incast: drops sorted by source, loss
//! rate, the recovery and flow-control counters of both sides, the one-line
//! workload, BDP and regime descriptions, the drop-source and counter rows,
//! the sweep/incast table and its plots.

use super::recovery_counters::RecoveryCounters;
use anyhow::bail;
use apps::config::{Config, Direction, DropKind, FlowMode, Source};
use apps::report::Report;
use engine::config::{Bdp, Resolved};
use engine::regimes::Regime;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

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
pub(super) fn annotate(cfg: &Config, r: &mut Report) {
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
    let counters = RecoveryCounters::from_report(r);
    for (key, _, n) in counters.fields() {
        r.extra.insert(key.into(), json!(n));
    }
    // Runs are bounded in time, so a regime that recovers faster completes
    // more RPCs and sends more packets of every kind: per RPC is the
    // figure that compares recovery cost across regimes.
    r.extra.insert(
        "retransmitted_per_rpc".into(),
        json!(counters.per_rpc(completed_all(r))),
    );
    let t = &cfg.transport;
    r.extra.insert("flow_mode".into(), json!(t.mode.as_str()));
    r.extra
        .insert("retransmit".into(), json!(t.retransmit.as_str()));
    if let (FlowMode::Pause, Ok(resolved)) = (t.mode, cfg.resolved()) {
        let p = resolved.pause_config();
        r.extra.insert(
            "pause".into(),
            json!({"xoff": p.xoff, "xon": p.xon, "headroom": p.headroom,
                   "pause_time_us": t.pause_time_us}),
        );
        // What the pause was for: frames the receive rings lost anyway.
        r.extra.insert(
            "drops_despite_pause".into(),
            json!(d.rx_missed_client + d.rx_missed_server),
        );
    }
}

pub(super) fn steal(r: &Report) -> Option<f64> {
    r.extra.get("cpu_steal_pct").and_then(Value::as_f64)
}

pub(super) fn steal_text(r: &Report) -> String {
    steal(r).map_or("-".into(), |p| format!("{p:.0}%"))
}

/// The largest share of the run a pinned core gave to other work
/// (`run::contention`), as a table cell.
fn other_work_text(r: &Report) -> String {
    r.extra
        .get("core_other_pct_max")
        .and_then(Value::as_f64)
        .map_or("-".into(), |p| format!("{p:.0}%"))
}

pub(super) fn loss_rate(r: &Report) -> f64 {
    r.extra
        .get("loss_rate")
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}

/// Every RPC the run completed, warm-up and drain included: what the
/// packet counters (which cover the whole run) are divided by.
fn completed_all(r: &Report) -> u64 {
    r.extra
        .get("completed_total")
        .and_then(Value::as_u64)
        .unwrap_or(r.completed)
}

/// True when the run completed everything it started, with the right bytes.
pub(super) fn clean(r: &Report) -> bool {
    r.failed == 0
        && r.extra
            .get("bad_responses")
            .and_then(Value::as_u64)
            .unwrap_or(0)
            == 0
        && !r.extra.contains_key("errors")
        && !r.extra.contains_key("server_error")
}

pub(super) fn json_without_hist(r: &Report) -> Value {
    let mut v = r.to_json();
    if let Some(o) = v.as_object_mut() {
        o.remove("hist");
    }
    v
}

/// One regime's summary in compare's JSON and CSV: the report without its
/// histogram, stamped with the build, the host and that regime's own
/// effective configuration (the regimes differ in credits, rings, flow
/// mode).
pub(super) fn regime_json(r: &Report, cfg: &Config) -> Value {
    let mut v = json_without_hist(r);
    apps::report::meta::stamp(&mut v, Some(cfg));
    v
}

/// Compare's JSON: one object keyed by each regime's name (the values of
/// [`regime_json`]), so `.lossy.p99_us` reads one regime's figure.
pub(super) fn json_by_regime(regimes: &[(String, Value)]) -> Value {
    Value::Object(regimes.iter().cloned().collect())
}

/// "af_packet", "memif", ... as the config spells it.
pub(super) fn link_name(cfg: &Config) -> String {
    serde_json::to_value(cfg.link.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The workload in one line (no regime: the commands run several).
pub(super) fn describe(cfg: &Config) -> String {
    let w = &cfg.workload;
    let sessions = if w.kind == apps::config::WorkloadKind::Incast {
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

/// The BDP every regime's credits come from, and where it came from.
pub(super) fn bdp_line(b: &Bdp, mtu: u32) -> String {
    let from = match b.source {
        Source::Measured => b.why.clone(),
        s => format!("the config's ({}): {}", s.as_str(), b.why),
    };
    format!(
        "BDP = {} credits ({:.2} Gb/s x {:.1} us / mtu {mtu}; {from})",
        b.packets, b.gbps, b.rtt_us
    )
}

/// Where `r`'s credits came from, in a few words: "flag", "derived:
/// lossless: 1 x BDP", "derived: lossy: 4 x BDP, lowered to ...".
pub(super) fn credits_source(cfg: &Config, r: &Resolved) -> String {
    match r.setting("transport.credits") {
        Some(s) => {
            let rule = s.why.split(" (").next().unwrap_or_default();
            let lowered = if r.credits_clamped {
                ", lowered to what the ring backs"
            } else {
                ""
            };
            format!("{}: {rule}{lowered}", s.source.as_str())
        }
        None => cfg.source_of("transport.credits").as_str().to_string(),
    }
}

pub(super) fn multiple(credits: u16, bdp: u16) -> f64 {
    credits as f64 / bdp.max(1) as f64
}

/// One regime's credits (and their source), reservation and loss repair
/// in one line; `cfg` is the regime's config as given, `r` its resolution.
pub(super) fn regime_line(name: &str, cfg: &Config, r: &Resolved) -> String {
    let credits = r.credits();
    let rx = r.rx_ring;
    let flow = match r.transport.mode {
        FlowMode::Lossless => format!(
            "reserving {} of {rx} receive-ring entries per session",
            engine::proto::lossless_ring_entries(credits)
        ),
        FlowMode::Lossy => "nothing reserved".to_string(),
        FlowMode::Pause => {
            let p = r.pause_config();
            format!(
                "nothing reserved, XOFF at {} / XON at {} of {rx} ring entries (headroom {})",
                p.xoff, p.xon, p.headroom
            )
        }
    };
    format!(
        "{name}: {credits} credits ({:.2} x BDP; {}), {flow}, {}",
        multiple(credits, r.bdp.packets),
        credits_source(cfg, r),
        r.transport.retransmit.as_str()
    )
}

/// The drop-source rows under the side-by-side table, one column per run.
pub fn render_drop_sources(reports: &[&Report]) -> String {
    let ds: Vec<DropSources> = reports
        .iter()
        .map(|r| DropSources::from_report(r))
        .collect();
    let pair = |x: u64, y: u64| format!("{x} / {y}");
    let sent = |r: &Report| {
        r.extra
            .get("pkts_sent")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let by_source = |f: &dyn Fn(&DropSources) -> String| ds.iter().map(f).collect::<Vec<_>>();
    let by_report = |f: &dyn Fn(&Report) -> String| reports.iter().map(|r| f(r)).collect();
    let rows: Vec<(&str, Vec<String>)> = vec![
        (
            "injected (client / server)",
            by_source(&|d| pair(d.injected_client, d.injected_server)),
        ),
        (
            "rx ring overflow (client / server)",
            by_source(&|d| pair(d.rx_missed_client, d.rx_missed_server)),
        ),
        (
            "qdisc at a switch port (lost)",
            by_source(&|d| d.qdisc_switch.to_string()),
        ),
        (
            "qdisc at sender egress (re-sent)",
            by_source(&|d| d.qdisc_sender.to_string()),
        ),
        (
            "protocol discards (client / server)",
            by_source(&|d| pair(d.proto_client, d.proto_server)),
        ),
        ("lost in the network", by_source(&|d| d.lost().to_string())),
        ("frames sent", by_report(&|r| sent(r).to_string())),
        ("loss rate", by_report(&|r| format!("{:.3e}", loss_rate(r)))),
        ("vCPU steal during the run", by_report(&steal_text)),
        ("other work on a pinned core", by_report(&other_work_text)),
    ];
    render_block("drops by source", reports, &rows)
}

/// The recovery and flow-control counters ([`RecoveryCounters`]), one column
/// per run.
pub fn render_recovery(reports: &[&Report]) -> String {
    let counters: Vec<RecoveryCounters> = reports
        .iter()
        .map(|r| RecoveryCounters::from_report(r))
        .collect();
    let mut rows: Vec<(&str, Vec<String>)> = (0..6)
        .map(|i| {
            let name = RecoveryCounters::default().fields()[i].1;
            (
                name,
                counters
                    .iter()
                    .map(|c| c.fields()[i].2.to_string())
                    .collect(),
            )
        })
        .collect();
    let per_rpc = counters
        .iter()
        .zip(reports)
        .map(|(c, r)| format!("{:.3}", c.per_rpc(completed_all(r))))
        .collect();
    rows.insert(1, ("retransmitted per RPC", per_rpc));
    render_block("recovery and flow control (both sides)", reports, &rows)
}

/// Rows of one value per report under a title line that names the columns
/// (each report's `mode`: compare's regime), every column at least 8 wide.
fn render_block(title: &str, reports: &[&Report], rows: &[(&str, Vec<String>)]) -> String {
    let w0 = rows
        .iter()
        .map(|r| r.0.len())
        .chain([title.len()])
        .max()
        .unwrap_or(0);
    let widths: Vec<usize> = reports
        .iter()
        .enumerate()
        .map(|(i, r)| {
            rows.iter()
                .map(|row| row.1[i].len())
                .chain([r.mode.len(), 8])
                .max()
                .unwrap_or(8)
        })
        .collect();
    let mut o = format!("{title}{:>w$}", "", w = w0.saturating_sub(title.len()));
    for (r, w) in reports.iter().zip(&widths) {
        let _ = write!(o, "  {:>w$}", r.mode);
    }
    o.push('\n');
    for (name, cells) in rows {
        let _ = write!(o, "{name:<w0$}");
        for (c, w) in cells.iter().zip(&widths) {
            let _ = write!(o, "  {c:>w$}");
        }
        o.push('\n');
    }
    o
}

/// One run of a sweep (or why it did not run).
#[derive(Clone, Debug)]
pub struct Point {
    /// The regime the point ran (its JSON and CSV key is `mode`, which
    /// scripts read).
    pub regime: Regime,
    pub credits: u16,
    /// Where the credits came from (`credits_source`).
    pub credits_from: String,
    pub bdp: u16,
    pub sessions: u32,
    pub rx_desc: u32,
    pub note: Option<String>,
    pub result: Result<Report, String>,
}

impl Point {
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "mode": self.regime.name(), "credits": self.credits, "credits_source": self.credits_from,
            "bdp_credits": self.bdp,
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
                for (key, _, n) in RecoveryCounters::from_report(r).fields() {
                    v[key] = json!(n);
                }
            }
            Err(e) => v["error"] = json!(e),
        }
        v
    }
}

/// Goodput (FILE), p99 (FILE-p99.svg) and loss rate (FILE-loss.svg)
/// against `x`, one line per regime.
pub(super) fn plot_points(
    path: &Path,
    points: &[Point],
    context: &str,
    x_label: &str,
    x: impl Fn(&Point) -> f64,
    log_x: bool,
) -> anyhow::Result<()> {
    let series = |y: &dyn Fn(&Report) -> f64| -> Vec<(String, Vec<(f64, f64)>)> {
        Regime::ALL
            .iter()
            .filter_map(|m| {
                let pts: Vec<(f64, f64)> = points
                    .iter()
                    .filter(|p| p.regime == *m)
                    .filter_map(|p| p.result.as_ref().ok().map(|r| (x(p), y(r))))
                    .collect();
                (!pts.is_empty()).then(|| (m.name().to_string(), pts))
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
        apps::report::plot::plot_xy(&file, &title, x_label, y_label, &refs, log_x)?;
        eprintln!("plot: {}", file.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::proto::Stats;

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
        let text = render_drop_sources(&[&r, &r]);
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
    fn recovery_counters_sum_both_sides_into_six_json_keys() {
        let client = Stats {
            retransmissions: 5,
            spurious_timeouts: 1,
            pause_frames_sent: 2,
            pause_frames_received: 40,
            paused_ns: 1_500_000,
            ecn_marks: 3,
            cnps_received: 60,
            ..Default::default()
        };
        let server = Stats {
            retransmissions: 2,
            pause_frames_sent: 4,
            paused_ns: 500_999,
            ecn_marks: 7,
            cnps_sent: 6,
            ..Default::default()
        };
        let mut irn = Report::new("throughput", "memif", "irn", 65536, 32);
        irn.client_stats = Some(client);
        irn.server_stats = Some(server);
        irn.completed = 4;
        annotate(&Config::default(), &mut irn);
        // A run whose server did not report: its side counts 0.
        let mut pause = Report::new("throughput", "memif", "pause", 65536, 32);
        pause.client_stats = Some(client);
        annotate(&Config::default(), &mut pause);
        let cfg = Config::default();
        let j = json_by_regime(&[
            ("irn".into(), regime_json(&irn, &cfg)),
            ("pause".into(), regime_json(&pause, &cfg)),
        ]);
        for k in apps::report::meta::STAMP_KEYS {
            assert!(j["irn"].get(k).is_some(), "each regime is stamped: {k}");
        }
        assert_eq!(
            j["pause"]["config"]["link"],
            serde_json::to_value(&cfg.link).unwrap()
        );
        assert!(j["irn"].get("hist").is_none(), "no histogram in the JSON");
        let want = [
            ("retransmitted_pkts", 7, 5),
            ("spurious_timeouts", 1, 1),
            ("pause_frames", 6, 2),
            ("paused_us", 2000, 1500),
            ("ecn_marks", 10, 3),
            ("cnps", 6, 0),
        ];
        for (key, both, client_only) in want {
            assert_eq!(j["irn"][key].as_u64(), Some(both), "{key}: {j}");
            assert_eq!(j["pause"][key].as_u64(), Some(client_only), "{key}: {j}");
        }
        // 7 resent over 4 RPCs; a run with none completed says 0.
        assert_eq!(j["irn"]["retransmitted_per_rpc"].as_f64(), Some(1.75));
        assert_eq!(j["pause"]["retransmitted_per_rpc"].as_f64(), Some(0.0));
        assert_eq!(j["irn"]["mode"], "irn");
        assert_eq!(
            j["irn"]["flow_mode"], "lossless",
            "the config's flow mode: {j}"
        );
        assert_eq!(j["irn"]["retransmit"], "go_back_n");
        // The sweep's points carry them too, and the table shows them.
        let point = Point {
            regime: Regime::Irn,
            credits: 9,
            credits_from: "derived".into(),
            bdp: 9,
            sessions: 1,
            rx_desc: 1024,
            note: None,
            result: Ok(irn.clone()),
        };
        assert_eq!(point.to_json()["paused_us"], 2000);
        assert_eq!(point.to_json()["mode"], "irn");
        let text = render_recovery(&[&irn, &pause]);
        let head = text.lines().next().unwrap();
        assert!(head.contains("irn") && head.contains("pause"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.starts_with("paused (us)") && l.ends_with("2000      1500")),
            "{text}"
        );
    }

    #[test]
    fn pause_runs_report_their_thresholds() {
        let mut cfg = Config::default();
        cfg.transport.mode = FlowMode::Pause;
        let mut r = Report::new("throughput", "memif", "pause", 32, 32);
        annotate(&cfg, &mut r);
        assert_eq!(r.extra["pause"]["xoff"], 974);
        assert_eq!(r.extra["pause"]["headroom"], 50);
        let line = regime_line("pause", &cfg, &cfg.resolved().unwrap());
        assert!(line.contains("XOFF at 974 / XON at 487 of 1024"), "{line}");
        assert!(
            line.contains("36 credits (4.00 x BDP; derived: pause: 4 x BDP)"),
            "{line}"
        );
    }

    #[test]
    fn a_pause_run_reports_what_its_rings_lost_anyway() {
        let mut cfg = Config::default();
        cfg.transport.mode = FlowMode::Pause;
        let mut r = Report::new("throughput", "af_packet", "pause", 32, 32);
        r.add_drops("rx_ring_overflow", 3);
        r.add_drops("server_rx_ring_overflow", 40);
        r.add_drops("server_injected", 7);
        annotate(&cfg, &mut r);
        assert_eq!(r.extra["drops_despite_pause"], 43);
        assert_eq!(
            r.extra["pause"]["xon"],
            r.extra["pause"]["xoff"].as_u64().unwrap() / 2
        );
        // Only pause runs carry it.
        let mut lossy = Report::new("throughput", "af_packet", "lossy", 32, 32);
        annotate(&Config::default(), &mut lossy);
        assert!(!lossy.extra.contains_key("drops_despite_pause"));
    }
}
