//! Report assembly for compare/sweep/incast: drops sorted by source, loss
//! rate, the one-line workload and BDP descriptions, the drop-source rows,
//! the sweep/incast table and its plots.

use crate::config::{Config, Direction, DropKind, Mode};
use crate::report::Report;
use anyhow::bail;
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
}

pub(super) fn steal(r: &Report) -> Option<f64> {
    r.extra.get("cpu_steal_pct").and_then(Value::as_f64)
}

pub(super) fn steal_text(r: &Report) -> String {
    steal(r).map_or("-".into(), |p| format!("{p:.0}%"))
}

pub(super) fn loss_rate(r: &Report) -> f64 {
    r.extra
        .get("loss_rate")
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
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

/// "af_packet", "memif", ... as the config spells it.
pub(super) fn link_name(cfg: &Config) -> String {
    serde_json::to_value(cfg.link.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The workload in one line (no flow mode: the commands run both).
pub(super) fn describe(cfg: &Config) -> String {
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

pub(super) fn bdp_line(cfg: &Config) -> String {
    let t = &cfg.transport;
    format!(
        "BDP = {} credits (transport.link_gbps {} x rtt_us {} / mtu {})",
        cfg.bdp_credits(),
        t.link_gbps,
        t.rtt_us,
        cfg.link.mtu
    )
}

pub(super) fn multiple(credits: u16, bdp: u16) -> f64 {
    credits as f64 / bdp.max(1) as f64
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
pub(super) fn plot_points(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
