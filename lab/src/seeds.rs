//! Statistics across seeds for `rpc-lab --seeds N`: the mean and
//! Student's t 95 % confidence interval of a sample ([`Interval`]), the
//! metrics summarized per regime ([`METRICS`]), and the report of a
//! multi-seed run ([`SeedsReport`], its JSON shape).
//!
//! Seeds are the samples: each seed is one independent draw of the workload
//! and of every random choice, so the interval says how far the mean over
//! these seeds may be from the mean over all seeds. Pure arithmetic on the
//! results, so the same seeds give the same report, byte for byte.

use crate::fabric::RegimeResult;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

/// The 0.975 quantile of Student's t for 1 to 30 degrees of freedom (the
/// two-sided 95 % critical value), to six decimals.
const T975: [f64; 30] = [
    12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157,
    2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922,
    2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831,
    2.048407, 2.045230, 2.042272,
];

/// The 0.975 quantile of the standard normal.
const Z975: f64 = 1.959_963_984_540_054;

/// The 0.975 quantile of Student's t with `df` degrees of freedom (`df` at
/// least 1): the table up to 30; beyond, the Cornish-Fisher expansion
/// around the normal quantile to the third order in 1/df, within 2e-6 of
/// the true value there (1.96 flat would be 4 % short at 31).
pub fn t975(df: usize) -> f64 {
    assert!(df >= 1, "Student's t needs at least one degree of freedom");
    if df <= T975.len() {
        return T975[df - 1];
    }
    let (z, v) = (Z975, df as f64);
    let z2 = z * z;
    let g1 = (z2 + 1.0) * z / 4.0;
    let g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0;
    let g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0;
    z + g1 / v + g2 / (v * v) + g3 / (v * v * v)
}

/// A sample's mean and 95 % confidence interval for the mean.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Interval {
    /// The sample mean (0 for an empty sample).
    pub mean: f64,
    /// Half-width of the 95 % interval, `t975(n - 1) * s / sqrt(n)` with `s`
    /// the sample standard deviation (n - 1 in the denominator); `None`
    /// (JSON `null`) below two values, where no spread can be estimated.
    pub ci95: Option<f64>,
    /// Values in the sample.
    pub n: usize,
    /// The values, in seed order.
    pub values: Vec<f64>,
}

impl Interval {
    /// The mean and interval of `values`.
    /// Sums run on the differences from the first value, so equal values
    /// give that value exactly and a zero-width interval (no rounding
    /// noise), and the variance does not lose digits to a large mean.
    pub fn of(values: &[f64]) -> Interval {
        let n = values.len();
        let x0 = values.first().copied().unwrap_or(0.0);
        let (sum, sum_sq) = values.iter().fold((0.0, 0.0), |(s, q), x| {
            let d = x - x0;
            (s + d, q + d * d)
        });
        let mean = match n {
            0 => 0.0,
            _ => x0 + sum / n as f64,
        };
        let ci95 = (n >= 2).then(|| {
            let ss = (sum_sq - sum * sum / n as f64).max(0.0);
            let sd = (ss / (n - 1) as f64).sqrt();
            t975(n - 1) * sd / (n as f64).sqrt()
        });
        Interval {
            mean,
            ci95,
            n,
            values: values.to_vec(),
        }
    }
}

/// How a metric's mean is printed in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A rate or ratio: this many decimals.
    Decimals(usize),
    /// A count: one decimal below 100 when the seeds differ (a mean of
    /// counts need not be whole), else none.
    Count,
}

/// One metric summarized across seeds.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    /// Its key in the JSON `stats` object (the result's own key where it
    /// has one).
    pub key: &'static str,
    /// Its column in the table; `None`: JSON only.
    pub column: Option<&'static str>,
    /// How the table prints it.
    pub format: Format,
    /// Its value in one result; `None` where the result has none (no
    /// victim flow), which leaves the metric out.
    pub get: fn(&RegimeResult) -> Option<f64>,
}

/// The metrics of `stats`, in JSON and column order.
pub const METRICS: [Metric; 16] = [
    Metric {
        key: "completed",
        column: Some("done"),
        format: Format::Count,
        get: |r| Some(r.completed as f64),
    },
    Metric {
        key: "goodput_gbps",
        column: Some("Gb/s"),
        format: Format::Decimals(1),
        get: |r| Some(r.goodput_gbps),
    },
    Metric {
        key: "mean_flow_gbps",
        column: Some("flow Gb/s"),
        format: Format::Decimals(1),
        get: |r| Some(r.mean_flow_gbps),
    },
    Metric {
        key: "victim_goodput_gbps",
        column: Some("victim Gb/s"),
        format: Format::Decimals(1),
        get: |r| r.victim_goodput_gbps,
    },
    Metric {
        key: "slowdown_p50",
        column: Some("sd p50"),
        format: Format::Decimals(2),
        get: |r| Some(r.slowdown.p50),
    },
    Metric {
        key: "slowdown_p99",
        column: Some("sd p99"),
        format: Format::Decimals(2),
        get: |r| Some(r.slowdown.p99),
    },
    Metric {
        key: "slowdown_p999",
        column: Some("sd p99.9"),
        format: Format::Decimals(2),
        get: |r| Some(r.slowdown.p999),
    },
    Metric {
        key: "fct_us_p50",
        column: None,
        format: Format::Decimals(1),
        get: |r| Some(r.fct_us.p50),
    },
    Metric {
        key: "fct_us_p99",
        column: None,
        format: Format::Decimals(1),
        get: |r| Some(r.fct_us.p99),
    },
    Metric {
        key: "drops_switch",
        column: Some("drops sw"),
        format: Format::Count,
        get: |r| Some(r.drops_switch as f64),
    },
    Metric {
        key: "drops_host_ring",
        column: Some("drops ring"),
        format: Format::Count,
        get: |r| Some(r.drops_host_ring as f64),
    },
    Metric {
        key: "pause_frames",
        column: Some("pauses"),
        format: Format::Count,
        get: |r| Some(r.pause_frames as f64),
    },
    Metric {
        key: "paused_us",
        column: None,
        format: Format::Decimals(1),
        get: |r| Some(r.paused_us),
    },
    Metric {
        key: "ecn_marks",
        column: Some("ECN marks"),
        format: Format::Count,
        get: |r| Some(r.ecn_marks as f64),
    },
    Metric {
        key: "trims",
        column: None,
        format: Format::Count,
        get: |r| Some(r.trims as f64),
    },
    Metric {
        key: "retransmitted_pkts",
        column: Some("resent"),
        format: Format::Count,
        get: |r| Some(r.retransmitted_pkts as f64),
    },
];

/// Each metric's [`Interval`] over one regime's seeds, in [`METRICS`]
/// order; a JSON object by metric key.
#[derive(Clone, Debug, PartialEq)]
pub struct SeedStats(pub Vec<(&'static str, Interval)>);

impl SeedStats {
    /// The statistics of `results`, one per seed; a metric some result
    /// lacks is left out.
    pub fn of(results: &[RegimeResult]) -> SeedStats {
        let out = METRICS
            .iter()
            .filter_map(|m| {
                let values: Option<Vec<f64>> = results.iter().map(m.get).collect();
                Some((m.key, Interval::of(&values?)))
            })
            .collect();
        SeedStats(out)
    }

    /// The interval of metric `key`, if it is there.
    pub fn get(&self, key: &str) -> Option<&Interval> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, i)| i)
    }
}

impl Serialize for SeedStats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (key, interval) in &self.0 {
            map.serialize_entry(key, interval)?;
        }
        map.end()
    }
}

/// One regime over every seed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RegimeSeeds {
    /// The regime's name.
    pub regime: &'static str,
    /// Mean and interval of each metric.
    pub stats: SeedStats,
    /// The full result of each seed, in seed order (the single-seed JSON's
    /// `results` entry for that seed and regime).
    pub results: Vec<RegimeResult>,
}

/// A whole `rpc-lab --seeds N` run (N at least 2), one JSON line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeedsReport {
    /// The scenario's name.
    pub scenario: &'static str,
    /// The seeds, in run order: `--seed`, its successor, ...
    pub seeds: Vec<u64>,
    /// Simulated frames per wall-clock second over all runs; `None` unless
    /// asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sim_pkts_per_sec: Option<f64>,
    /// One entry per regime, in the order asked.
    pub regimes: Vec<RegimeSeeds>,
}

impl SeedsReport {
    /// The report of `runs`, one list of per-regime results per seed (every
    /// list the same regimes in the same order).
    pub fn new(scenario: &'static str, seeds: Vec<u64>, runs: &[Vec<RegimeResult>]) -> Self {
        let regimes = runs.first().map_or(0, Vec::len);
        let regimes = (0..regimes)
            .map(|i| {
                let results: Vec<RegimeResult> = runs.iter().map(|run| run[i].clone()).collect();
                RegimeSeeds {
                    regime: results[0].regime,
                    stats: SeedStats::of(&results),
                    results,
                }
            })
            .collect();
        SeedsReport {
            scenario,
            seeds,
            sim_pkts_per_sec: None,
            regimes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn t_quantiles_match_the_tables() {
        assert_eq!(t975(1), 12.706205);
        assert_eq!(t975(4), 2.776445);
        assert_eq!(t975(30), 2.042272);
        // Beyond the table: published values to 4 decimals, and the limit.
        for (df, t) in [(31, 2.0395), (40, 2.0211), (60, 2.0003), (120, 1.9799)] {
            assert!(close(t975(df), t, 6e-5), "df {df}: {} vs {t}", t975(df));
        }
        assert!(close(t975(1_000_000), Z975, 1e-5));
        // Decreasing all the way, with no step where the table ends.
        for df in 1..200 {
            assert!(t975(df + 1) < t975(df), "df {df}");
        }
        assert!(t975(30) - t975(31) < 0.003);
    }

    #[test]
    fn interval_of_one_to_five() {
        let i = Interval::of(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!((i.mean, i.n), (3.0, 5));
        // s^2 = 10 / 4 = 2.5; 2.776445 * sqrt(2.5) / sqrt(5) = 1.96324.
        let hw = i.ci95.unwrap();
        assert!(close(hw, 2.776445 * 2.5f64.sqrt() / 5f64.sqrt(), 1e-12));
        assert!(close(hw, 1.963, 5e-4), "{hw}");
        assert_eq!(i.values, [1.0, 2.0, 3.0, 4.0, 5.0]);
    }

    #[test]
    fn interval_edge_cases() {
        // Two values: 12.706 * |a - b| / 2.
        let i = Interval::of(&[10.0, 12.0]);
        assert!(close(i.ci95.unwrap(), 12.706205, 1e-12), "{i:?}");
        // One value: the value, no interval; none: zeros, no interval.
        assert_eq!(Interval::of(&[7.5]).ci95, None);
        assert_eq!(Interval::of(&[7.5]).mean, 7.5);
        let e = Interval::of(&[]);
        assert_eq!((e.mean, e.ci95, e.n), (0.0, None, 0));
        // No spread: the value itself and a zero-width interval, with no
        // rounding noise (a plain sum of three 0.1s is not 0.3).
        let i = Interval::of(&[92.75739749657217; 3]);
        assert_eq!((i.mean, i.ci95), (92.75739749657217, Some(0.0)));
        // A large mean does not swamp a small spread.
        let i = Interval::of(&[1e12 + 1.0, 1e12 + 2.0, 1e12 + 3.0]);
        assert_eq!(i.mean, 1e12 + 2.0);
        assert!(
            close(i.ci95.unwrap(), 4.302653 / 3f64.sqrt(), 1e-9),
            "{i:?}"
        );
    }

    #[test]
    fn json_is_an_object_by_metric_in_order() {
        let s = SeedStats(vec![
            ("goodput_gbps", Interval::of(&[1.0, 3.0])),
            ("completed", Interval::of(&[8.0])),
        ]);
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(
            j,
            "{\"goodput_gbps\":{\"mean\":2.0,\"ci95\":12.706205,\"n\":2,\"values\":[1.0,3.0]},\
             \"completed\":{\"mean\":8.0,\"ci95\":null,\"n\":1,\"values\":[8.0]}}"
        );
        assert_eq!(s.get("completed").map(|i| i.n), Some(1));
        assert!(s.get("nope").is_none());
    }

    #[test]
    fn report_has_one_entry_per_regime_over_the_seeds() {
        use crate::fabric::scenario::{build, Scenario, ScenarioSpec};
        use crate::fabric::{run_regime, FabricConfig, FabricRegime};
        let runs: Vec<Vec<RegimeResult>> = (1..=2)
            .map(|seed| {
                let mut spec = ScenarioSpec::new(Scenario::Incast, seed);
                spec.hosts = Some(4);
                spec.flow_size = Some(16_384);
                let w = build(&spec).unwrap();
                [FabricRegime::Irn, FabricRegime::Lossy]
                    .iter()
                    .map(|&r| run_regime(&w, r, &FabricConfig::default(), seed, &mut |_| {}))
                    .collect::<Result<_, _>>()
                    .unwrap()
            })
            .collect();
        let rep = SeedsReport::new("incast", vec![1, 2], &runs);
        let names: Vec<_> = rep.regimes.iter().map(|r| r.regime).collect();
        assert_eq!(names, ["irn", "lossy"]);
        for (i, r) in rep.regimes.iter().enumerate() {
            assert_eq!(r.results, [runs[0][i].clone(), runs[1][i].clone()]);
            let g = r.stats.get("goodput_gbps").unwrap();
            assert_eq!(g.values, [runs[0][i].goodput_gbps, runs[1][i].goodput_gbps]);
            assert_eq!(r.stats.get("completed").unwrap().mean, 4.0);
            // No victim flow: no victim metric, every other one.
            assert!(r.stats.get("victim_goodput_gbps").is_none());
            assert_eq!(r.stats.0.len(), METRICS.len() - 1);
        }
    }

    #[test]
    fn metric_keys_are_unique() {
        for (i, a) in METRICS.iter().enumerate() {
            assert!(METRICS[i + 1..].iter().all(|b| b.key != a.key), "{}", a.key);
        }
    }
}
