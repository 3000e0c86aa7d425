//! Latency histograms: an HdrHistogram per worker in nanoseconds (1 ns to
//! 100 s, 3 significant digits), merged at the end, read out in microseconds,
//! and written in HdrHistogram's percentile-distribution text format.

use hdrhistogram::Histogram;
use std::io::Write;

#[derive(Clone, Debug)]
pub struct LatencyHist {
    h: Histogram<u64>,
}

impl Default for LatencyHist {
    fn default() -> Self {
        Self::new()
    }
}

/// Largest latency recorded: 100 s (anything beyond is clamped to it).
const MAX_NS: u64 = 100_000_000_000;

impl LatencyHist {
    pub fn new() -> Self {
        LatencyHist {
            // Bounds are constants that hdrhistogram accepts (low >= 1, high >= 2*low, sigfig <= 5).
            h: Histogram::new_with_bounds(1, MAX_NS, 3)
                .expect("constant histogram bounds are valid"),
        }
    }

    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        // Saturating: a value beyond the range is clamped, never lost.
        self.h.saturating_record(ns.clamp(1, MAX_NS));
    }

    pub fn merge(&mut self, other: &LatencyHist) {
        // Both share the same bounds, so adding cannot fail.
        let _ = self.h.add(&other.h);
    }

    pub fn count(&self) -> u64 {
        self.h.len()
    }

    pub fn percentile_us(&self, p: f64) -> f64 {
        if self.h.is_empty() {
            return 0.0;
        }
        self.h.value_at_quantile(p / 100.0) as f64 / 1000.0
    }

    pub fn max_us(&self) -> f64 {
        self.h.max() as f64 / 1000.0
    }

    pub fn min_us(&self) -> f64 {
        self.h.min() as f64 / 1000.0
    }

    pub fn mean_us(&self) -> f64 {
        self.h.mean() / 1000.0
    }

    pub fn raw(&self) -> &Histogram<u64> {
        &self.h
    }

    /// HdrHistogram's percentile distribution format (as `.hgrm` files),
    /// values in microseconds, 5 ticks per half distance.
    pub fn write_percentiles(&self, mut w: impl Write) -> std::io::Result<()> {
        writeln!(
            w,
            "{:>12} {:>14} {:>10} {:>14}\n",
            "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
        )?;
        let mut total = 0u64;
        for v in self.h.iter_quantiles(5) {
            total += v.count_since_last_iteration();
            let q = v.quantile_iterated_to();
            let value = v.value_iterated_to() as f64 / 1000.0;
            if q < 1.0 {
                writeln!(
                    w,
                    "{:>12.3} {:>14.12} {:>10} {:>14.2}",
                    value,
                    q,
                    total,
                    1.0 / (1.0 - q)
                )?;
            } else {
                writeln!(w, "{:>12.3} {:>14.12} {:>10}", value, q, total)?;
            }
        }
        writeln!(
            w,
            "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
            self.mean_us(),
            self.h.stdev() / 1000.0
        )?;
        writeln!(
            w,
            "#[Max     = {:>12.3}, Total count    = {:>12}]",
            self.max_us(),
            self.h.len()
        )?;
        writeln!(
            w,
            "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
            self.h.buckets(),
            self.h.distinct_values()
        )?;
        Ok(())
    }

    /// An ASCII bar chart of the latency distribution, for terminal reports.
    pub fn ascii_histogram(&self, rows: usize) -> String {
        let mut out = String::new();
        if self.h.is_empty() {
            return out;
        }
        let lo = self.h.value_at_quantile(0.0).max(1) as f64;
        let hi = self.h.value_at_quantile(0.999).max(lo as u64 + 1) as f64;
        let ratio = (hi / lo).powf(1.0 / rows as f64);
        let mut edges = Vec::with_capacity(rows + 1);
        let mut e = lo;
        for _ in 0..=rows {
            edges.push(e);
            e *= ratio;
        }
        let counts: Vec<u64> = edges
            .windows(2)
            .map(|w| {
                self.h.count_between(
                    w[0] as u64,
                    (w[1] as u64).saturating_sub(1).max(w[0] as u64),
                )
            })
            .collect();
        let maxc = counts.iter().copied().max().unwrap_or(1).max(1);
        for (w, c) in edges.windows(2).zip(&counts) {
            let bar = "#".repeat(((*c as f64 / maxc as f64) * 50.0).round() as usize);
            out.push_str(&format!(
                "  {:>9.2} - {:>9.2} us | {:<50} {}\n",
                w[0] / 1000.0,
                w[1] / 1000.0,
                bar,
                c
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_merge() {
        let mut a = LatencyHist::new();
        for ns in 1..=1000u64 {
            a.record_ns(ns * 1000);
        }
        let mut b = LatencyHist::new();
        b.record_ns(5_000_000);
        a.merge(&b);
        assert_eq!(a.count(), 1001);
        // 1001 samples: the median is the 501st (501 us), reported as its
        // bucket's upper edge, within 0.1 % at 3 significant digits.
        assert!(
            (a.percentile_us(50.0) - 501.0).abs() < 1.0,
            "{}",
            a.percentile_us(50.0)
        );
        assert!((a.max_us() - 5000.0).abs() < 5.0);
        let mut out = Vec::new();
        a.write_percentiles(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Total count"));
        assert!(text.lines().count() > 20);
        assert!(!a.ascii_histogram(10).is_empty());
    }
}
