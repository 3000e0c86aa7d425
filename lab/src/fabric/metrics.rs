//! Flow completion time statistics: from each flow's size, start, end and
//! ideal completion time, the slowdown percentiles (overall and by size
//! bucket), FCT percentiles, goodput of all flows and of victim flows over
//! the run's span (makespan goodput), and the mean rate a flow saw while it
//! ran.
//! Pure arithmetic on its inputs, so a deterministic run gives a
//! deterministic summary.

use engine::time::{Duration, Instant};

/// What happened to one flow, as the fabric core reports it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowOutcome {
    /// Bytes the flow carried.
    pub size: u64,
    /// When the flow's first byte was offered.
    pub start: Instant,
    /// When its last byte was delivered; `None` if it did not complete.
    pub end: Option<Instant>,
    /// Its completion time alone on an empty fabric (computed by the caller).
    pub ideal: Duration,
    /// Whether it is a victim flow (one the scenario watches for collateral
    /// damage).
    pub victim: bool,
}

/// Three percentiles of a set of values, by nearest rank on the sorted
/// values (the smallest value with at least p% of the values at or below
/// it); all 0 for an empty set.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
}

impl Percentiles {
    /// The percentiles of `values` (any order; NaNs sort last by
    /// `f64::total_cmp`).
    pub fn of(values: &[f64]) -> Percentiles {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        Percentiles {
            p50: nearest_rank(&sorted, 50, 100),
            p99: nearest_rank(&sorted, 99, 100),
            p999: nearest_rank(&sorted, 999, 1000),
        }
    }
}

/// The value of rank `ceil(n * num / den)` (1-based, at least 1) in
/// `sorted`; integer arithmetic so that e.g. p99 of 100 values is exactly the
/// 99th, with no float rounding at the boundary.
fn nearest_rank(sorted: &[f64], num: usize, den: usize) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return 0.0;
    }
    let rank = (n * num).div_ceil(den).clamp(1, n);
    sorted[rank - 1]
}

/// Slowdown percentiles of the completed flows in one size range.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Bucket {
    /// The range, e.g. `"10KB-100KB"`.
    pub label: &'static str,
    /// Largest size in the bucket, in bytes (`u64::MAX` for the last one).
    pub max_bytes: u64,
    /// Completed flows in the bucket (the ones `slowdown` describes).
    pub flows: u64,
    /// Their slowdown percentiles.
    pub slowdown: Percentiles,
}

/// The size buckets, `(label, largest size)`, each from just above the
/// previous one's largest size. Decimal units, as FCT papers report.
const BUCKETS: [(&str, u64); 5] = [
    ("<10KB", 10_000),
    ("10KB-100KB", 100_000),
    ("100KB-1MB", 1_000_000),
    ("1MB-10MB", 10_000_000),
    (">10MB", u64::MAX),
];

/// The statistics of a run's flows.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct FctSummary {
    /// Flows offered.
    pub flows: u64,
    /// Flows that completed (the percentiles cover only these).
    pub completed: u64,
    /// Slowdown (FCT / ideal FCT, at least 1) percentiles of all completed
    /// flows.
    pub slowdown: Percentiles,
    /// Slowdown percentiles by flow size: always the same five buckets, empty
    /// ones with zeros, so the JSON shape does not depend on the workload.
    pub buckets: Vec<Bucket>,
    /// FCT percentiles in microseconds.
    pub fct_us: Percentiles,
    /// Bytes of completed flows, in gigabits, per nanosecond from the first
    /// flow's start to the last completion (i.e. Gb/s); 0 if none completed.
    pub goodput_gbps: f64,
    /// The mean over completed flows of each flow's own rate, its bytes in
    /// gigabits per nanosecond of its FCT (Gb/s; an FCT of 0 counts as
    /// 1 ns). One late flow moves it by its share of the flows, not to the
    /// end of the run as it does `goodput_gbps`. It is a per-flow figure,
    /// not the fabric's: flows that share a link each see a part of it (an
    /// incast's senders, one flow each, each see about 1/N of the
    /// receiver's link). 0 if none completed.
    pub mean_flow_gbps: f64,
    /// The same for victim flows alone (from the first victim start to the
    /// last victim completion); `None` when there are no victim flows.
    pub victim_goodput_gbps: Option<f64>,
    /// When the last flow completed.
    #[serde(skip)]
    pub last_end: Option<Instant>,
}

/// A flow's slowdown: FCT over ideal FCT, clamped to at least 1. The ideal
/// is an analytic lower bound (serialization plus propagation on an empty
/// fabric), so a ratio below 1 only reflects how the caller rounded it or
/// timed the ends, not a flow faster than possible; clamping keeps such
/// noise out of the percentiles. A zero ideal counts as 1 ns so the ratio
/// stays finite.
fn slowdown(fct: Duration, ideal: Duration) -> f64 {
    let ideal = ideal.as_nanos().max(1) as f64;
    (fct.as_nanos() as f64 / ideal).max(1.0)
}

/// Gigabits per second for `bytes` over `[first, last]`: bits per
/// nanosecond is Gb/s. 0 for an empty or backwards window.
fn gbps(bytes: u64, first: Instant, last: Instant) -> f64 {
    let ns = last.saturating_since(first).as_nanos();
    if ns == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / ns as f64
    }
}

/// Summarizes `flows` (any order). Flows that did not complete count in
/// `flows` but in no percentile or goodput.
pub fn summarize(flows: &[FlowOutcome]) -> FctSummary {
    let mut slowdowns = Vec::with_capacity(flows.len());
    let mut fcts_us = Vec::with_capacity(flows.len());
    let mut by_bucket: [Vec<f64>; BUCKETS.len()] = Default::default();
    let mut done_bytes = 0u64;
    let mut rate_sum = 0.0f64;
    let mut last_end: Option<Instant> = None;
    // Victim flows: (completed bytes, first start, last end), None until one
    // is seen.
    let mut victim: Option<(u64, Instant, Option<Instant>)> = None;

    for f in flows {
        if f.victim {
            let v = victim.get_or_insert((0, f.start, None));
            v.1 = v.1.min(f.start);
            if let Some(end) = f.end {
                v.0 = v.0.saturating_add(f.size);
                v.2 = v.2.max(Some(end));
            }
        }
        let Some(end) = f.end else { continue };
        let fct = end.saturating_since(f.start);
        rate_sum += f.size as f64 * 8.0 / fct.as_nanos().max(1) as f64;
        let s = slowdown(fct, f.ideal);
        slowdowns.push(s);
        fcts_us.push(fct.as_nanos() as f64 / 1e3);
        let b = BUCKETS
            .iter()
            .position(|&(_, max)| f.size <= max)
            .unwrap_or(BUCKETS.len() - 1);
        by_bucket[b].push(s);
        done_bytes = done_bytes.saturating_add(f.size);
        last_end = last_end.max(Some(end));
    }

    let first_start = flows.iter().map(|f| f.start).min();
    let goodput_gbps = match (first_start, last_end) {
        (Some(first), Some(last)) => gbps(done_bytes, first, last),
        _ => 0.0,
    };
    let mean_flow_gbps = match slowdowns.len() {
        0 => 0.0,
        n => rate_sum / n as f64,
    };
    let victim_goodput_gbps = victim.map(|(bytes, first, last)| match last {
        Some(last) => gbps(bytes, first, last),
        None => 0.0,
    });
    let buckets = BUCKETS
        .iter()
        .zip(&by_bucket)
        .map(|(&(label, max_bytes), values)| Bucket {
            label,
            max_bytes,
            flows: values.len() as u64,
            slowdown: Percentiles::of(values),
        })
        .collect();

    FctSummary {
        flows: flows.len() as u64,
        completed: slowdowns.len() as u64,
        slowdown: Percentiles::of(&slowdowns),
        buckets,
        fct_us: Percentiles::of(&fcts_us),
        goodput_gbps,
        mean_flow_gbps,
        victim_goodput_gbps,
        last_end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(size: u64, start: u64, end: Option<u64>, ideal: u64) -> FlowOutcome {
        FlowOutcome {
            size,
            start: Instant(start),
            end: end.map(Instant),
            ideal: Duration::from_nanos(ideal),
            victim: false,
        }
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=1000).rev().map(f64::from).collect();
        let p = Percentiles::of(&v);
        assert_eq!((p.p50, p.p99, p.p999), (500.0, 990.0, 999.0));
        let p = Percentiles::of(&(1..=100).map(f64::from).collect::<Vec<_>>());
        assert_eq!((p.p50, p.p99, p.p999), (50.0, 99.0, 100.0));
        let p = Percentiles::of(&[7.0]);
        assert_eq!((p.p50, p.p99, p.p999), (7.0, 7.0, 7.0));
        let p = Percentiles::of(&[3.0, 1.0]);
        assert_eq!((p.p50, p.p99, p.p999), (1.0, 3.0, 3.0));
        assert_eq!(Percentiles::of(&[]), Percentiles::default());
    }

    #[test]
    fn slowdown_is_clamped_to_one() {
        // Faster than the "ideal" (rounding in the caller): slowdown 1, not 0.5.
        let s = summarize(&[flow(1000, 0, Some(50), 100)]);
        assert_eq!(s.slowdown.p50, 1.0);
        let s = summarize(&[flow(1000, 0, Some(300), 100)]);
        assert_eq!(s.slowdown.p50, 3.0);
        assert_eq!(s.fct_us.p50, 0.3);
        // A zero ideal stays finite; an end before the start is FCT 0.
        let s = summarize(&[flow(1000, 0, Some(5), 0), flow(1, 10, Some(5), 7)]);
        assert_eq!((s.slowdown.p50, s.slowdown.p99), (1.0, 5.0));
    }

    #[test]
    fn buckets_split_by_size_and_always_list_five() {
        let flows = [
            flow(10_000, 0, Some(20), 10),      // <10KB, inclusive bound
            flow(10_001, 0, Some(40), 10),      // 10KB-100KB
            flow(1_000_000, 0, Some(30), 10),   // 100KB-1MB
            flow(50_000_000, 0, Some(100), 10), // >10MB
            flow(60_000_000, 0, None, 10),      // not completed
        ];
        let s = summarize(&flows);
        let labels: Vec<_> = s.buckets.iter().map(|b| b.label).collect();
        assert_eq!(
            labels,
            ["<10KB", "10KB-100KB", "100KB-1MB", "1MB-10MB", ">10MB"]
        );
        let counts: Vec<_> = s.buckets.iter().map(|b| b.flows).collect();
        assert_eq!(counts, [1, 1, 1, 0, 1]);
        let p50s: Vec<_> = s.buckets.iter().map(|b| b.slowdown.p50).collect();
        assert_eq!(p50s, [2.0, 4.0, 3.0, 0.0, 10.0]);
        assert_eq!((s.flows, s.completed), (5, 4));
        assert_eq!(s.last_end, Some(Instant(100)));
    }

    #[test]
    fn goodput_counts_completed_bytes_over_the_whole_run() {
        // 1250 + 1250 bytes = 20,000 bits over 200 ns (first start 100 to
        // last end 300) = 100 Gb/s; the incomplete flow adds no bytes.
        let flows = [
            flow(1250, 100, Some(200), 100),
            flow(1250, 150, Some(300), 100),
            flow(9999, 120, None, 100),
        ];
        let s = summarize(&flows);
        assert_eq!(s.goodput_gbps, 100.0);
        assert_eq!(s.victim_goodput_gbps, None);
    }

    #[test]
    fn mean_flow_rate_is_not_set_by_a_straggler() {
        // 1250 B = 10,000 bits: over 100 ns 100 Gb/s, over 200 ns 50 Gb/s,
        // over 10,000 ns (the straggler) 1 Gb/s; the incomplete flow counts
        // in neither figure. Makespan: 30,000 bits over 0..10,000 ns = 3 Gb/s,
        // set by the straggler alone; the flows' mean rate is 151/3.
        let flows = [
            flow(1250, 0, Some(100), 10),
            flow(1250, 50, Some(250), 10),
            flow(1250, 0, Some(10_000), 10),
            flow(9999, 10, None, 10),
        ];
        let s = summarize(&flows);
        assert_eq!(s.goodput_gbps, 3.0);
        assert!((s.mean_flow_gbps - 151.0 / 3.0).abs() < 1e-12, "{s:?}");
        // Without the straggler both agree on a fair share of the time.
        let s = summarize(&flows[..2]);
        assert_eq!(s.mean_flow_gbps, 75.0);
        // Victim flows count like any other; an FCT of 0 counts as 1 ns.
        let mut v = flow(125, 0, Some(0), 10);
        v.victim = true;
        assert_eq!(summarize(&[v]).mean_flow_gbps, 1000.0);
        // Nothing completed: 0, not NaN.
        assert_eq!(summarize(&[flow(10, 0, None, 1)]).mean_flow_gbps, 0.0);
        assert_eq!(summarize(&[]).mean_flow_gbps, 0.0);
    }

    #[test]
    fn victim_goodput_uses_victim_flows_alone() {
        let mut v = flow(2500, 1000, Some(1200), 100);
        v.victim = true;
        let flows = [flow(1_000_000, 0, Some(10_000), 100), v];
        let s = summarize(&flows);
        assert_eq!(s.victim_goodput_gbps, Some(100.0));
        // A victim that never completed: zero goodput, not absent.
        let mut stuck = v;
        stuck.end = None;
        assert_eq!(summarize(&[stuck]).victim_goodput_gbps, Some(0.0));
    }

    #[test]
    fn empty_input_is_all_zeros() {
        let s = summarize(&[]);
        assert_eq!((s.flows, s.completed), (0, 0));
        assert_eq!(s.slowdown, Percentiles::default());
        assert_eq!(s.fct_us, Percentiles::default());
        assert_eq!(s.buckets.len(), 5);
        assert!(s.buckets.iter().all(|b| b.flows == 0));
        assert_eq!(s.goodput_gbps, 0.0);
        assert_eq!(s.victim_goodput_gbps, None);
        assert_eq!(s.last_end, None);
        // Nothing completed: no goodput either.
        assert_eq!(summarize(&[flow(10, 0, None, 1)]).goodput_gbps, 0.0);
    }
}
