//! `rpc-bench run --repeat N`: the same pair N times on one measured link
//! (one floor, one resolution), and each headline figure's spread over the
//! runs, min / median / max, so a reader sees how far one run can be
//! trusted on this machine before comparing two. The summary's other keys
//! are the last run's; a run with failures, or Ctrl-C, ends the series at
//! once.

use crate::run::bench::run_pair_streaming;
use apps::config::Config;
use apps::report::Report;
use serde_json::{json, Map, Value};
use std::fmt::Write as _;

/// How a figure is read off one run's report.
pub type Reading = fn(&Report) -> f64;

/// The figures given with their spread: (text label, JSON key, reading).
pub const FIGURES: [(&str, &str, Reading); 5] = [
    ("p50 (us)", "p50_us", |r| r.latency.percentile_us(50.0)),
    ("p99 (us)", "p99_us", |r| r.latency.percentile_us(99.0)),
    ("p99.9 (us)", "p999_us", |r| r.latency.percentile_us(99.9)),
    ("Mrps", "mrps", Report::mrps),
    ("goodput (Gbps)", "gbps", Report::gbps),
];

/// One figure over the runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Stat {
    pub min: f64,
    pub median: f64,
    pub max: f64,
    /// In run order.
    pub values: Vec<f64>,
}

impl Stat {
    /// `None` for no values.
    pub fn of(values: Vec<f64>) -> Option<Stat> {
        let mut s = values.clone();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = match n {
            0 => return None,
            _ if n % 2 == 1 => s[n / 2],
            _ => (s[n / 2 - 1] + s[n / 2]) / 2.0,
        };
        Some(Stat {
            min: s[0],
            median,
            max: s[n - 1],
            values,
        })
    }
}

/// Every figure of [`FIGURES`] over a series of runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Spread {
    pub runs: usize,
    pub figures: Vec<(&'static str, &'static str, Stat)>,
}

impl Spread {
    pub fn of(reports: &[Report]) -> Spread {
        let figures = FIGURES
            .iter()
            .filter_map(|(label, key, read)| {
                Stat::of(reports.iter().map(read).collect()).map(|s| (*label, *key, s))
            })
            .collect();
        Spread {
            runs: reports.len(),
            figures,
        }
    }

    /// A table: one row per figure, its min, median and max.
    pub fn render_text(&self) -> String {
        let mut o = String::new();
        let head = format!("over {} runs", self.runs);
        let _ = writeln!(o, "{head:<16} {:>10} {:>10} {:>10}", "min", "median", "max");
        for (label, _, s) in &self.figures {
            let _ = writeln!(
                o,
                "{label:<16} {:>10.3} {:>10.3} {:>10.3}",
                s.min, s.median, s.max
            );
        }
        o
    }

    /// `{"runs": N, "p50_us": {"min", "median", "max", "values"}, ...}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("runs".into(), json!(self.runs));
        for (_, key, s) in &self.figures {
            m.insert(
                (*key).into(),
                json!({"min": s.min, "median": s.median, "max": s.max, "values": s.values}),
            );
        }
        Value::Object(m)
    }
}

/// Runs the pair `n` times (at least once) on `cfg`; returns the last
/// run's report and, for two runs or more, the spread. A run with failed
/// requests or errors ends the series: its report is returned as it is.
pub fn run(cfg: &Config, n: u32, json_stream: bool) -> anyhow::Result<(Report, Option<Spread>)> {
    let n = n.max(1);
    let mut reports = Vec::with_capacity(n as usize);
    for i in 1..=n {
        let rep = run_pair_streaming(cfg, json_stream)?;
        let failed = rep.failed > 0 || rep.extra.contains_key("errors");
        if n > 1 {
            eprintln!(
                "rpc-bench: run {i} of {n}: p50 {:.2} us, p99 {:.2} us, {:.3} Mrps, {} completed, {} failed",
                rep.latency.percentile_us(50.0),
                rep.latency.percentile_us(99.0),
                rep.mrps(),
                rep.completed,
                rep.failed
            );
        }
        // A signal ends the series too: this run is the partial one.
        if failed || apps::exit::interrupted() {
            return Ok((rep, None));
        }
        reports.push(rep);
    }
    let spread = (reports.len() > 1).then(|| Spread::of(&reports));
    // Non-empty: n >= 1 runs and each one pushed or returned.
    let last = reports.pop().expect("at least one run");
    Ok((last, spread))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(us: u64, completed: u64) -> Report {
        let mut r = Report::new("latency", "memif", "lossless", 32, 32);
        for _ in 0..100 {
            r.latency.record_ns(us * 1000);
        }
        r.completed = completed;
        r.seconds = 1.0;
        r
    }

    #[test]
    fn medians_of_odd_and_even_series() {
        let s = Stat::of(vec![3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 2.0, 3.0));
        assert_eq!(s.values, [3.0, 1.0, 2.0], "run order kept");
        let s = Stat::of(vec![4.0, 1.0]).unwrap();
        assert_eq!(s.median, 2.5);
        assert!(Stat::of(Vec::new()).is_none());
    }

    #[test]
    fn every_figure_has_its_spread_in_text_and_json() {
        let reps = [
            report(1, 1_000_000),
            report(3, 3_000_000),
            report(2, 2_000_000),
        ];
        let s = Spread::of(&reps);
        assert_eq!(s.runs, 3);
        let j = s.to_json();
        assert_eq!(j["runs"], 3);
        for (_, key, _) in FIGURES {
            for k in ["min", "median", "max"] {
                assert!(j[key][k].is_number(), "{key}.{k}: {j}");
            }
        }
        assert_eq!(j["mrps"]["min"], 1.0);
        assert_eq!(j["mrps"]["median"], 2.0);
        assert_eq!(j["mrps"]["max"], 3.0);
        assert!(j["p50_us"]["min"].as_f64().unwrap() < j["p50_us"]["max"].as_f64().unwrap());
        let t = s.render_text();
        assert!(t.starts_with("over 3 runs"), "{t}");
        for label in [
            "p50 (us)",
            "p99 (us)",
            "p99.9 (us)",
            "Mrps",
            "goodput (Gbps)",
        ] {
            assert!(t.contains(label), "{label}: {t}");
        }
    }
}
