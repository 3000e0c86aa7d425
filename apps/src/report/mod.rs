//! The run report: what one client run measured (completions, the merged
//! latency histogram, loss and recovery counters, optional server counters
//! and raw-floor figures), rendered three ways: a JSON object for scripts
//! (`to_json`, read back with `from_json`; the histogram travels inside it),
//! a text report for terminals (`render_text`), and a table with one column
//! per run for the comparison of flow modes (`render_columns`).
//!
//! Goodput counts application bytes only (request + response payloads of
//! completed RPCs), never headers or retransmissions.

mod glossary;
pub mod meta;
pub mod output;
pub mod plot;

use crate::config::Config;
use crate::measure::hist::LatencyHist;
use base64::Engine as _;
use engine::counters::Counters;
use engine::proto::Stats;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Percentiles every report shows: (text label, JSON key, percentile).
pub const PERCENTILES: &[(&str, &str, f64)] = &[
    ("p50", "p50_us", 50.0),
    ("p90", "p90_us", 90.0),
    ("p99", "p99_us", 99.0),
    ("p99.9", "p999_us", 99.9),
    ("p99.99", "p9999_us", 99.99),
];

/// Rows of the ASCII histogram in the text report.
const HIST_ROWS: usize = 16;

/// One run's results. Fields are public: the binaries fill them in.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub workload: String,
    pub link: String,
    /// The flow mode, or the regime `rpc-bench compare` ran (the column
    /// name in side-by-side tables); the JSON and CSV key `mode` either way.
    pub mode: String,
    /// Request payload bytes.
    pub msg_size: u64,
    /// Response payload bytes.
    pub resp_size: u64,
    /// RPCs completed in the measured interval (warm-up excluded).
    pub completed: u64,
    /// RPCs completed inside the measured window (after warm-up); the rate
    /// figures use it with `seconds`. `None`: all of `completed`.
    pub measured: Option<u64>,
    pub failed: u64,
    /// Length of the measured interval.
    pub seconds: f64,
    pub latency: LatencyHist,
    pub retransmissions: u64,
    /// Frames lost or discarded, all sources; `drops_by_reason` splits it.
    pub drops: u64,
    pub drops_by_reason: BTreeMap<String, u64>,
    /// Losses in lossless mode (each one the design says cannot happen).
    pub violations: u64,
    pub resets: u64,
    pub credit_stalls: u64,
    /// Every engine counter of the client side (`client_stats` in the JSON).
    pub client_stats: Option<Stats>,
    /// Every engine counter of the server side: set by `rpc-bench` from the
    /// server's typed summary. The JSON carries them in `server.stats` and
    /// `from_json` does not read them back (over net_ring that object is
    /// the client's own endpoint, already in `client_stats`).
    pub server_stats: Option<Stats>,
    /// Server-side counters, as the server reported them.
    pub server: Option<Value>,
    /// Raw-frame floor of the same link (`rpc-bench floor`), for ratios.
    pub floor_p50_us: Option<f64>,
    pub floor_p99_us: Option<f64>,
    /// Anything else worth keeping; merged into the JSON top level (never
    /// replacing a standard key) and listed in the text report.
    pub extra: BTreeMap<String, Value>,
}

/// A JSON report that `from_json` cannot read back.
#[derive(Debug, thiserror::Error)]
#[error("bad report JSON: {0}")]
pub struct ReportError(String);

/// Every nonzero drop reason the engine counts, by its own name (a new
/// engine counter shows up with no edit here); the per-kind refinements
/// (`dup_*`, `future_*`, `stale_*`) are already inside their aggregates, and
/// frames for another address (`not_ours`) are not drops of this endpoint.
pub fn protocol_drops(d: &engine::proto::Drops) -> Vec<(String, u64)> {
    d.to_pairs()
        .into_iter()
        .filter(|(reason, n)| {
            let refinement = ["dup_", "future_", "stale_"]
                .iter()
                .any(|p| reason.starts_with(p));
            *n > 0 && !refinement && reason != "not_ours"
        })
        .collect()
}

/// Every counter of `s` by serde (a new engine counter shows up with no edit
/// here), plus the drop total over all reasons.
pub fn stats_json(s: &Stats) -> Value {
    let mut v = serde_json::to_value(s).unwrap_or_else(|e| json!({"error": e.to_string()}));
    if let Some(o) = v.as_object_mut() {
        o.insert("drops_total".into(), json!(s.drops.total()));
    }
    v
}

impl Report {
    pub fn new(workload: &str, link: &str, mode: &str, msg_size: u64, resp_size: u64) -> Self {
        Report {
            workload: workload.into(),
            link: link.into(),
            mode: mode.into(),
            msg_size,
            resp_size,
            ..Default::default()
        }
    }

    /// An empty report labelled with the config's workload, link, mode and sizes.
    pub fn from_config(cfg: &Config) -> Self {
        let link = serde_json::to_value(cfg.link.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        Report::new(
            cfg.workload.kind.as_str(),
            &link,
            cfg.transport.mode.as_str(),
            cfg.workload.req_size,
            cfg.workload.resp_size,
        )
    }

    /// Million RPCs per second.
    pub fn mrps(&self) -> f64 {
        per_second(self.measured.unwrap_or(self.completed) as f64, self.seconds) / 1e6
    }

    /// Goodput in Gb/s: request + response payload bytes of completed RPCs.
    pub fn gbps(&self) -> f64 {
        let bits = self.measured.unwrap_or(self.completed) as f64
            * (self.msg_size + self.resp_size) as f64
            * 8.0;
        per_second(bits, self.seconds) / 1e9
    }

    /// Median latency over the raw floor's median, when the floor is known.
    pub fn ratio_p50(&self) -> Option<f64> {
        ratio(self.latency.percentile_us(50.0), self.floor_p50_us)
    }

    pub fn ratio_p99(&self) -> Option<f64> {
        ratio(self.latency.percentile_us(99.0), self.floor_p99_us)
    }

    /// Counts `n` drops under `reason` (and in the total).
    pub fn add_drops(&mut self, reason: &str, n: u64) {
        if n == 0 {
            return;
        }
        self.drops += n;
        *self.drops_by_reason.entry(reason.to_string()).or_default() += n;
    }

    /// Adds one endpoint's protocol counters: retransmissions, violations,
    /// resets, credit stalls, and received frames the protocol discarded
    /// (as `proto.<reason>`). Frames for other hosts (`not_ours`, e.g.
    /// kernel chatter on af_packet) are not losses; they go to `extra`.
    pub fn add_engine_stats(&mut self, s: &engine::proto::Stats) {
        self.retransmissions += s.retransmissions;
        self.violations += s.lossless_violations;
        self.resets += s.session_resets;
        self.credit_stalls += s.credit_stalls;
        for (reason, n) in protocol_drops(&s.drops) {
            self.add_drops(&format!("proto.{reason}"), n);
        }
        let not_ours = s.drops.not_ours;
        if not_ours > 0 {
            let prev = self.extra.get("rx_not_ours").and_then(Value::as_u64);
            self.extra
                .insert("rx_not_ours".into(), json!(prev.unwrap_or(0) + not_ours));
        }
    }

    /// Writes the latency histogram in HdrHistogram's percentile format.
    pub fn write_hist(&self, path: &Path) -> std::io::Result<()> {
        let f = std::fs::File::create(path)?;
        let mut w = std::io::BufWriter::new(f);
        self.latency.write_percentiles(&mut w)?;
        std::io::Write::flush(&mut w)
    }

    /// The report as one JSON object: the fields, `mrps`, `gbps`, the
    /// `PERCENTILES` keys, `max_us`, `mean_us`, `samples`; `floor_*` and
    /// `ratio_*` only when the floor is set; `hist` is the histogram
    /// (base64 of HdrHistogram's V2 deflate encoding) when it has samples.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("workload".into(), json!(self.workload));
        m.insert("link".into(), json!(self.link));
        m.insert("mode".into(), json!(self.mode));
        m.insert("msg_size".into(), json!(self.msg_size));
        m.insert("resp_size".into(), json!(self.resp_size));
        m.insert("completed".into(), json!(self.completed));
        if let Some(n) = self.measured {
            m.insert("completed_measured".into(), json!(n));
        }
        m.insert("failed".into(), json!(self.failed));
        m.insert("seconds".into(), json!(self.seconds));
        m.insert("mrps".into(), json!(self.mrps()));
        m.insert("gbps".into(), json!(self.gbps()));
        for (_, key, p) in PERCENTILES {
            m.insert((*key).into(), json!(self.latency.percentile_us(*p)));
        }
        m.insert("max_us".into(), json!(self.latency.max_us()));
        m.insert("mean_us".into(), json!(self.latency.mean_us()));
        m.insert("samples".into(), json!(self.latency.count()));
        m.insert("retransmissions".into(), json!(self.retransmissions));
        m.insert("drops".into(), json!(self.drops));
        m.insert("drops_by_reason".into(), json!(self.drops_by_reason));
        m.insert("violations".into(), json!(self.violations));
        m.insert("resets".into(), json!(self.resets));
        m.insert("credit_stalls".into(), json!(self.credit_stalls));
        if let Some(s) = &self.client_stats {
            m.insert("client_stats".into(), stats_json(s));
        }
        if let Some(s) = &self.server {
            m.insert("server".into(), s.clone());
        }
        let floors = [
            (
                "floor_p50_us",
                "ratio_p50",
                self.floor_p50_us,
                self.ratio_p50(),
            ),
            (
                "floor_p99_us",
                "ratio_p99",
                self.floor_p99_us,
                self.ratio_p99(),
            ),
        ];
        for (fkey, rkey, floor, r) in floors {
            if let Some(f) = floor {
                m.insert(fkey.into(), json!(f));
                m.insert(rkey.into(), json!(r));
            }
        }
        if let Some(h) = encode_hist(&self.latency) {
            m.insert("hist".into(), json!(h));
        }
        for (k, v) in &self.extra {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Value::Object(m)
    }

    /// Reads back what [`Self::to_json`] wrote (e.g. a child process's last
    /// line). Derived keys are recomputed, unknown keys land in `extra`,
    /// except the child's stamp ([`meta::STAMP_KEYS`]).
    pub fn from_json(v: &Value) -> Result<Report, ReportError> {
        let m = v
            .as_object()
            .ok_or_else(|| ReportError("not an object".into()))?;
        let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let u = |k: &str| m.get(k).and_then(Value::as_u64).unwrap_or(0);
        let f = |k: &str| m.get(k).and_then(Value::as_f64);
        let latency = match m.get("hist").and_then(Value::as_str) {
            Some(b64) => decode_hist(b64)?,
            None => LatencyHist::new(),
        };
        let drops_by_reason = match m.get("drops_by_reason") {
            Some(d) => serde_json::from_value(d.clone())
                .map_err(|e| ReportError(format!("drops_by_reason: {e}")))?,
            None => BTreeMap::new(),
        };
        let client_stats = match m.get("client_stats") {
            Some(c) => Some(
                serde_json::from_value::<Stats>(c.clone())
                    .map_err(|e| ReportError(format!("client_stats: {e}")))?,
            ),
            None => None,
        };
        // The child's stamp describes the child; the reader stamps its own.
        let extra = m
            .iter()
            .filter(|(k, _)| !is_standard_key(k) && !meta::STAMP_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Report {
            workload: s("workload"),
            link: s("link"),
            mode: s("mode"),
            msg_size: u("msg_size"),
            resp_size: u("resp_size"),
            completed: u("completed"),
            measured: v.get("completed_measured").and_then(Value::as_u64),
            failed: u("failed"),
            seconds: f("seconds").unwrap_or(0.0),
            latency,
            retransmissions: u("retransmissions"),
            drops: u("drops"),
            drops_by_reason,
            violations: u("violations"),
            resets: u("resets"),
            credit_stalls: u("credit_stalls"),
            client_stats,
            server_stats: None,
            server: m.get("server").cloned(),
            floor_p50_us: f("floor_p50_us"),
            floor_p99_us: f("floor_p99_us"),
            extra,
        })
    }

    /// A readable multi-line report for terminals.
    pub fn render_text(&self) -> String {
        let mut o = String::new();
        let _ = write!(
            o,
            "{} over {} ({}), request {} B, response {} B: {} completed, {} failed in {:.2} s",
            self.workload,
            self.link,
            self.mode,
            self.msg_size,
            self.resp_size,
            self.completed,
            self.failed,
            self.seconds
        );
        // The headline is the measured window's; say what it left out.
        let total = self.extra.get("completed_total").and_then(Value::as_u64);
        match total.map(|t| t.saturating_sub(self.completed)) {
            Some(n) if n > 0 => {
                let _ = writeln!(o, " (+{n} completed in the warm-up and drain, not counted)");
            }
            _ => o.push('\n'),
        }
        o.push_str("latency (us)");
        for (label, _, _) in PERCENTILES {
            let _ = write!(o, " {label:>9}");
        }
        let _ = writeln!(o, " {:>9}", "max");
        o.push_str("            ");
        for (_, _, p) in PERCENTILES {
            let _ = write!(o, " {:>9.2}", self.latency.percentile_us(*p));
        }
        let _ = writeln!(o, " {:>9.2}", self.latency.max_us());
        let _ = writeln!(
            o,
            "throughput   {:.3} Mrps, goodput {:.3} Gbps",
            self.mrps(),
            self.gbps()
        );
        let _ = writeln!(
            o,
            "loss         retransmissions {}, drops {}, violations {}, resets {}, credit stalls {}",
            self.retransmissions, self.drops, self.violations, self.resets, self.credit_stalls
        );
        for (reason, n) in &self.drops_by_reason {
            let _ = writeln!(o, "  drops {reason:<24} {n}");
        }
        if let (Some(f50), Some(r50)) = (self.floor_p50_us, self.ratio_p50()) {
            let _ = write!(o, "vs floor     p50 {f50:.2} us (x{r50:.2})");
            if let (Some(f99), Some(r99)) = (self.floor_p99_us, self.ratio_p99()) {
                let _ = write!(o, ", p99 {f99:.2} us (x{r99:.2})");
            }
            o.push('\n');
        }
        if let Some(s) = &self.server {
            let st = &s["stats"];
            let _ = writeln!(
                o,
                "server       {} handled on {} worker(s), rx {} tx {} pkts, dropped {}, rx ring overflow {}",
                s["handled"],
                s["workers"],
                st["rx_pkts"],
                st["tx_pkts"],
                st["drops_total"],
                s["port"]["rx_missed"]
            );
        }
        // Scalars only: nested objects (floor, port counters) stay in the JSON.
        let scalars: Vec<String> = self
            .extra
            .iter()
            .filter(|(_, v)| !v.is_object() && !v.is_array())
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        if !scalars.is_empty() {
            let _ = writeln!(o, "run          {}", scalars.join(", "));
        }
        for (key, label) in [("warnings", "warning"), ("errors", "error")] {
            for e in self
                .extra
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let _ = writeln!(o, "{label:<12} {}", e.as_str().unwrap_or_default());
            }
        }
        let hist = self.latency.ascii_histogram(HIST_ROWS);
        if !hist.is_empty() {
            let _ = writeln!(
                o,
                "histogram ({} samples, up to p99.9):",
                self.latency.count()
            );
            o.push_str(&hist);
        }
        o
    }
}

/// A lossless-vs-lossy table: one row per figure, one column per report,
/// headed by each report's `mode`.
pub fn render_side_by_side(a: &Report, b: &Report) -> String {
    render_columns(&[a, b])
}

/// The comparison table of any number of runs: one row per figure, one
/// column per report, headed by each report's `mode` (prefixed "a: ",
/// "b: ", ... when two share a name).
pub fn render_columns(reports: &[&Report]) -> String {
    let Some(first) = reports.first() else {
        return String::new();
    };
    let mut names: Vec<&str> = reports.iter().map(|r| r.mode.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    let heads: Vec<String> = reports
        .iter()
        .enumerate()
        .map(|(i, r)| match names.len() == reports.len() {
            true => r.mode.clone(),
            false => format!("{}: {}", (b'a' + (i % 26) as u8) as char, r.mode),
        })
        .collect();
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut row = |name: &str, f: &dyn Fn(&Report) -> String| {
        rows.push((name.to_string(), reports.iter().map(|r| f(r)).collect()))
    };
    row("goodput (Gbps)", &|r| f3(r.gbps()));
    row("throughput (Mrps)", &|r| f3(r.mrps()));
    for (label, _, p) in PERCENTILES.iter().filter(|(l, _, _)| *l != "p90") {
        row(&format!("{label} (us)"), &|r| {
            f2(r.latency.percentile_us(*p))
        });
    }
    row("max (us)", &|r| f2(r.latency.max_us()));
    row("completed", &|r| r.completed.to_string());
    row("failed", &|r| r.failed.to_string());
    row("drops (total)", &|r| r.drops.to_string());
    let reasons: std::collections::BTreeSet<&String> = reports
        .iter()
        .flat_map(|r| r.drops_by_reason.keys())
        .collect();
    for reason in reasons {
        row(&format!("  {reason}"), &|r| {
            r.drops_by_reason
                .get(reason)
                .copied()
                .unwrap_or(0)
                .to_string()
        });
    }
    row("retransmissions", &|r| r.retransmissions.to_string());
    row("violations", &|r| r.violations.to_string());
    row("resets", &|r| r.resets.to_string());
    row("credit stalls", &|r| r.credit_stalls.to_string());
    let w0 = rows.iter().map(|r| r.0.len()).max().unwrap_or(0).max(8);
    let widths: Vec<usize> = heads
        .iter()
        .enumerate()
        .map(|(i, h)| {
            rows.iter()
                .map(|r| r.1[i].len())
                .chain([h.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |name: &str, cells: &[String]| {
        let mut l = format!("{name:<w0$}");
        for (c, w) in cells.iter().zip(&widths) {
            let _ = write!(l, "  {c:>w$}");
        }
        l
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{} over {}, request {} B, response {} B",
        first.workload, first.link, first.msg_size, first.resp_size
    );
    let _ = writeln!(o, "{}", line("", &heads));
    for (name, cells) in &rows {
        let _ = writeln!(o, "{}", line(name, cells));
    }
    o
}

fn f2(v: f64) -> String {
    format!("{v:.2}")
}

fn f3(v: f64) -> String {
    format!("{v:.3}")
}

fn per_second(x: f64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        x / seconds
    } else {
        0.0
    }
}

fn ratio(v: f64, floor: Option<f64>) -> Option<f64> {
    floor.filter(|f| *f > 0.0).map(|f| v / f)
}

/// Keys `to_json` writes itself (everything else is `extra`).
fn is_standard_key(k: &str) -> bool {
    const KEYS: &[&str] = &[
        "workload",
        "link",
        "mode",
        "msg_size",
        "resp_size",
        "completed",
        "failed",
        "seconds",
        "mrps",
        "gbps",
        "max_us",
        "mean_us",
        "samples",
        "retransmissions",
        "drops",
        "drops_by_reason",
        "violations",
        "resets",
        "credit_stalls",
        "client_stats",
        "server",
        "floor_p50_us",
        "floor_p99_us",
        "ratio_p50",
        "ratio_p99",
        "hist",
    ];
    KEYS.contains(&k) || PERCENTILES.iter().any(|(_, key, _)| *key == k)
}

fn encode_hist(h: &LatencyHist) -> Option<String> {
    if h.count() == 0 {
        return None;
    }
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h.raw(), &mut buf)
        .ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(buf))
}

fn decode_hist(b64: &str) -> Result<LatencyHist, ReportError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| ReportError(format!("hist: {e}")))?;
    let raw: hdrhistogram::Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| ReportError(format!("hist: {e:?}")))?;
    // LatencyHist has no constructor from a raw histogram: replay each
    // recorded bucket (its highest equivalent value maps back to it).
    let mut out = LatencyHist::new();
    for v in raw.iter_recorded() {
        for _ in 0..v.count_at_value() {
            out.record_ns(v.value_iterated_to());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        let mut r = Report::new("latency", "memif", "lossless", 32, 32);
        for us in 1..=1000u64 {
            r.latency.record_ns(us * 1000);
        }
        r.completed = 1000;
        r.seconds = 2.0;
        r.retransmissions = 3;
        r.add_drops("injected", 5);
        r.add_drops("proto.future", 2);
        r
    }

    #[test]
    fn json_has_required_keys() {
        let j = sample().to_json();
        for k in [
            "workload",
            "link",
            "mode",
            "msg_size",
            "completed",
            "failed",
            "seconds",
            "mrps",
            "gbps",
            "p50_us",
            "p90_us",
            "p99_us",
            "p999_us",
            "p9999_us",
            "max_us",
            "retransmissions",
            "drops",
        ] {
            assert!(j.get(k).is_some(), "missing {k} in {j}");
        }
        assert!(j.get("floor_p50_us").is_none());
        assert!(j.get("ratio_p50").is_none());
        assert_eq!(j["drops"], 7);
        assert_eq!(j["drops_by_reason"]["injected"], 5);
    }

    #[test]
    fn rates_and_ratios() {
        let mut r = sample();
        assert!((r.mrps() - 0.0005).abs() < 1e-12);
        // 1000 x 64 B x 8 / 2 s = 256 kb/s
        assert!((r.gbps() - 256e3 / 1e9).abs() < 1e-12);
        r.floor_p50_us = Some(100.0);
        r.floor_p99_us = Some(330.0);
        let p50 = r.latency.percentile_us(50.0);
        let p99 = r.latency.percentile_us(99.0);
        assert!((r.ratio_p50().unwrap() - p50 / 100.0).abs() < 1e-9);
        let j = r.to_json();
        assert!((j["ratio_p50"].as_f64().unwrap() - p50 / 100.0).abs() < 1e-9);
        assert!((j["ratio_p99"].as_f64().unwrap() - p99 / 330.0).abs() < 1e-9);
        assert_eq!(j["floor_p99_us"], 330.0);
        assert!((p50 / 100.0 - 5.0).abs() < 0.01, "p50 {p50}");
        r.floor_p50_us = Some(0.0);
        assert_eq!(r.ratio_p50(), None);
        let empty = Report::default();
        assert_eq!(empty.mrps(), 0.0);
        assert_eq!(empty.gbps(), 0.0);
    }

    #[test]
    fn text_has_percentiles() {
        let mut r = sample();
        r.floor_p50_us = Some(100.0);
        let t = r.render_text();
        for label in [
            "p50", "p90", "p99", "p99.9", "p99.99", "max", "Mrps", "Gbps",
        ] {
            assert!(t.contains(label), "missing {label}:\n{t}");
        }
        assert!(t.contains("retransmissions 3"), "{t}");
        assert!(t.contains("vs floor"), "{t}");
        assert!(t.contains('#'), "histogram bars:\n{t}");
    }

    #[test]
    fn json_round_trip_keeps_histogram() {
        let mut r = sample();
        r.extra.insert("note".into(), json!("x"));
        r.server = Some(json!({"handler_invocations": 1000}));
        r.client_stats = Some(Stats {
            retransmissions: 7,
            pause_frames_sent: 2,
            ..Default::default()
        });
        let back = Report::from_json(&r.to_json()).unwrap();
        assert_eq!(back.client_stats, r.client_stats, "typed again");
        assert_eq!(r.to_json()["client_stats"]["drops_total"], 0);
        assert_eq!(back.latency.count(), 1000);
        assert_eq!(
            back.latency.percentile_us(99.0),
            r.latency.percentile_us(99.0)
        );
        assert_eq!(back.drops_by_reason, r.drops_by_reason);
        assert_eq!(back.extra.get("note"), Some(&json!("x")));
        assert_eq!(back.server, r.server);
        assert_eq!(back.to_json(), r.to_json());
        assert!(Report::from_json(&json!([1])).is_err());
    }

    #[test]
    fn a_childs_stamp_is_not_read_back_as_extra() {
        let r = sample();
        let mut v = r.to_json();
        meta::stamp(&mut v, Some(&Config::default()));
        v["note"] = json!("kept");
        let back = Report::from_json(&v).unwrap();
        for k in meta::STAMP_KEYS {
            assert!(v.get(k).is_some(), "{k} was stamped");
            assert!(!back.extra.contains_key(k), "{k} came back as extra");
        }
        assert_eq!(back.extra.get("note"), Some(&json!("kept")));
        assert!(!back.render_text().contains("dpdk_version"));
    }

    #[test]
    fn side_by_side_columns() {
        let a = sample();
        let mut b = sample();
        b.mode = "lossy".into();
        b.add_drops("ring_overflow", 40);
        b.violations = 0;
        let t = render_side_by_side(&a, &b);
        let header = t.lines().nth(1).unwrap();
        assert!(
            header.contains("lossless") && header.contains("lossy"),
            "{t}"
        );
        for row in [
            "goodput",
            "p99.9",
            "max",
            "ring_overflow",
            "retransmissions",
            "violations",
            "resets",
        ] {
            assert!(t.contains(row), "missing {row}:\n{t}");
        }
    }

    #[test]
    fn one_column_per_report() {
        let names = ["lossless", "pause", "lossy", "irn"];
        let reps: Vec<Report> = names
            .iter()
            .map(|m| {
                let mut r = sample();
                r.mode = m.to_string();
                r
            })
            .collect();
        let refs: Vec<&Report> = reps.iter().collect();
        let t = render_columns(&refs);
        let header: Vec<&str> = t.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(header, names, "{t}");
        let failed: Vec<&str> = t
            .lines()
            .find(|l| l.starts_with("failed"))
            .unwrap()
            .split_whitespace()
            .collect();
        assert_eq!(failed, ["failed", "0", "0", "0", "0"], "{t}");
        // Two columns print as they always did.
        assert_eq!(
            render_columns(&refs[..2]),
            render_side_by_side(&reps[0], &reps[1])
        );
        // Equal names get letters.
        let t = render_columns(&[&reps[2], &reps[2], &reps[3]]);
        assert!(
            t.contains("a: lossy") && t.contains("b: lossy") && t.contains("c: irn"),
            "{t}"
        );
    }

    #[test]
    fn engine_stats_feed_counters() {
        let s = engine::proto::Stats {
            retransmissions: 4,
            lossless_violations: 1,
            drops: engine::proto::Drops {
                future: 6,
                not_ours: 9,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut r = Report::default();
        r.add_engine_stats(&s);
        r.add_engine_stats(&s);
        assert_eq!(r.retransmissions, 8);
        assert_eq!(r.violations, 2);
        assert_eq!(r.drops, 12);
        assert_eq!(r.drops_by_reason["proto.future"], 12);
        assert_eq!(r.extra["rx_not_ours"], 18);
    }

    #[test]
    fn hist_file() {
        let dir = std::env::temp_dir().join(format!("apps-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("lat.hgrm");
        sample().write_hist(&p).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("Total count"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
