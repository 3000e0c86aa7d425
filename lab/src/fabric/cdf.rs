//! Flow-size distributions: a piecewise-linear cumulative distribution of
//! flow sizes, parsed from the "size cumulative_percent" text format the
//! HPCC traffic generator ships, sampled by inverse CDF with linear
//! interpolation, and the two standard workloads (web search, Hadoop).

use engine::rng::Rng;

/// A flow-size distribution: points `(size in bytes, cumulative
/// probability)` joined by straight lines, so sizes between two points are
/// uniformly likely.
///
/// Both columns are non-decreasing and the last probability is exactly 1. A
/// repeated size with a higher probability is a point mass at that size (a
/// vertical step); a repeated probability with a larger size is a range of
/// sizes that never occurs (a flat step). A first probability above zero is a
/// point mass at the first size.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeCdf {
    /// `(size, probability)`, validated by [`SizeCdf::parse`].
    points: Vec<(u64, f64)>,
}

impl SizeCdf {
    /// Parses lines of `size cumulative_percent` (whitespace separated;
    /// `#` starts a comment; blank lines are skipped). Sizes are whole bytes,
    /// percents lie in `0..=100`, both columns are non-decreasing, and the
    /// last percent is 100. Errors name the offending line (1-based).
    pub fn parse(text: &str) -> Result<SizeCdf, String> {
        let mut points: Vec<(u64, f64)> = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() != 2 {
                return Err(format!(
                    "line {line_no}: expected \"size cumulative_percent\", got {} field(s): {line:?}",
                    fields.len()
                ));
            }
            let size: u64 = fields[0].parse().map_err(|_| {
                format!(
                    "line {line_no}: size {:?} is not a whole number of bytes",
                    fields[0]
                )
            })?;
            let percent: f64 = fields[1]
                .parse()
                .map_err(|_| format!("line {line_no}: percent {:?} is not a number", fields[1]))?;
            // `!(0..=100).contains` also rejects NaN, which every comparison fails.
            if !(0.0..=100.0).contains(&percent) {
                return Err(format!(
                    "line {line_no}: percent {percent} is outside 0..=100"
                ));
            }
            if let Some(&(prev_size, prev_prob)) = points.last() {
                if size < prev_size {
                    return Err(format!(
                        "line {line_no}: size {size} is below the previous size {prev_size}"
                    ));
                }
                if percent / 100.0 < prev_prob {
                    return Err(format!(
                        "line {line_no}: percent {percent} is below the previous percent {}",
                        prev_prob * 100.0
                    ));
                }
            }
            points.push((size, percent / 100.0));
            last_line = line_no;
        }
        match points.last_mut() {
            None => Err("the distribution has no points".into()),
            // Exact comparison is fine: "100", "100.0" and "1e2" all parse to
            // exactly 100.0; anything else is a truncated or mistyped file.
            Some(&mut (_, p)) if p != 1.0 => Err(format!(
                "line {last_line}: the last percent is {}, not 100",
                p * 100.0
            )),
            Some(_) => Ok(SizeCdf { points }),
        }
    }

    /// The points, `(size in bytes, cumulative probability in [0, 1])`.
    pub fn points(&self) -> &[(u64, f64)] {
        &self.points
    }

    /// The largest size the distribution can produce.
    pub fn max(&self) -> u64 {
        self.points.last().map_or(1, |&(s, _)| s.max(1))
    }

    /// Draws a size by inverse CDF: a uniform `u` in [0, 1) is mapped to the
    /// size where the piecewise-linear CDF reaches `u`, interpolating between
    /// the two points around it (as the HPCC traffic generator does), rounded
    /// to whole bytes. Never below 1 byte: a zero-byte flow has no packets.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let u = rng.next_f64();
        // The first point whose probability exceeds `u`; it exists because
        // the last probability is 1 and `u < 1`. Strict `>` skips flat steps.
        let i = self.points.partition_point(|&(_, p)| p <= u);
        let size = match (i.checked_sub(1), self.points.get(i)) {
            // Below the first probability: the point mass at the first size.
            (None, Some(&(s, _))) => s as f64,
            (Some(j), Some(&(s1, p1))) => {
                let (s0, p0) = self.points[j];
                // p1 > u >= p0, so the division is by a positive width.
                s0 as f64 + (s1 as f64 - s0 as f64) * (u - p0) / (p1 - p0)
            }
            // Unreachable for a parsed distribution; the largest size is the
            // safe answer rather than a panic.
            (_, None) => self.max() as f64,
        };
        (size.round() as u64).max(1)
    }

    /// The exact mean size in bytes of the piecewise-linear distribution:
    /// each segment is uniform between its end sizes, so it contributes its
    /// probability times the midpoint; a point mass contributes its size.
    pub fn mean(&self) -> f64 {
        let Some(&(s0, p0)) = self.points.first() else {
            return 0.0;
        };
        let mut sum = s0 as f64 * p0;
        for w in self.points.windows(2) {
            let ((sa, pa), (sb, pb)) = (w[0], w[1]);
            sum += (pb - pa) * (sa as f64 + sb as f64) / 2.0;
        }
        sum
    }
}

/// Web-search flow sizes (DCTCP, SIGCOMM 2010): mostly short queries, with
/// most bytes in flows of 1-30 MB; mean about 1.7 MB.
pub fn websearch() -> SizeCdf {
    SizeCdf::parse(include_str!("data/websearch.cdf"))
        .expect("data/websearch.cdf is a valid distribution (checked by a unit test)")
}

/// Facebook Hadoop flow sizes (Roy et al., SIGCOMM 2015): mostly flows under
/// 1 KB, with a tail up to 10 MB.
pub fn hadoop() -> SizeCdf {
    SizeCdf::parse(include_str!("data/fb-hadoop.cdf"))
        .expect("data/fb-hadoop.cdf is a valid distribution (checked by a unit test)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        SizeCdf::parse(text).unwrap_err()
    }

    #[test]
    fn parse_skips_comments_and_blanks() {
        let c = SizeCdf::parse("# header\n\n0 0\n100 50 # mid\n  \n200 100\n").unwrap();
        assert_eq!(c.points(), &[(0, 0.0), (100, 0.5), (200, 1.0)]);
        assert_eq!(c.max(), 200);
    }

    #[test]
    fn parse_errors_name_the_line() {
        assert!(err("").contains("no points"));
        assert!(err("# only a comment\n").contains("no points"));
        assert!(
            err("0 0\n100\n").starts_with("line 2:"),
            "{}",
            err("0 0\n100\n")
        );
        assert!(err("0 0\n100 50 7\n").starts_with("line 2:"));
        assert!(err("0 0\nabc 50\n").contains("line 2: size"));
        assert!(err("0 0\n-5 50\n").contains("line 2: size"));
        assert!(err("0 0\n10 x\n").contains("line 2: percent"));
        assert!(err("0 0\n10 101\n").contains("outside 0..=100"));
        assert!(err("0 0\n10 -1\n").contains("outside 0..=100"));
        assert!(err("0 0\n10 NaN\n").contains("outside 0..=100"));
        assert!(err("0 0\n100 50\n50 100\n").contains("line 3: size 50 is below"));
        assert!(err("0 0\n100 50\n200 40\n300 100\n").contains("line 3: percent 40 is below"));
        let e = err("# c\n0 0\n100 50\n\n");
        assert!(e.contains("line 3") && e.contains("not 100"), "{e}");
    }

    #[test]
    fn duplicates_are_steps() {
        // A point mass at 100 (half the probability), then uniform 100..=300.
        let c = SizeCdf::parse("100 0\n100 50\n300 100\n").unwrap();
        assert_eq!(c.mean(), 0.5 * 100.0 + 0.5 * 200.0);
        // A flat step: nothing between 100 and 1000.
        let flat = SizeCdf::parse("0 0\n100 50\n1000 50\n1100 100\n").unwrap();
        let mut rng = Rng::new(3);
        for _ in 0..10_000 {
            let s = flat.sample(&mut rng);
            assert!(s <= 100 || s >= 1000, "{s}");
        }
        // A first percent above zero is a point mass at the first size.
        let first = SizeCdf::parse("500 20\n1000 100\n").unwrap();
        assert_eq!(first.mean(), 0.2 * 500.0 + 0.8 * 750.0);
        let mut rng = Rng::new(4);
        let at_500 = (0..10_000)
            .filter(|_| first.sample(&mut rng) == 500)
            .count();
        assert!((1_800..2_200).contains(&at_500), "{at_500}");
    }

    #[test]
    fn samples_are_at_least_one_byte() {
        let c = SizeCdf::parse("0 0\n0 100\n").unwrap();
        let mut rng = Rng::new(1);
        assert!((0..100).all(|_| c.sample(&mut rng) == 1));
    }

    #[test]
    fn websearch_mean_is_about_1_7_mb() {
        // Sum of segment probability times midpoint, by hand from the file.
        let m = websearch().mean();
        assert!((m - 1_711_250.0).abs() < 1e-6, "{m}");
        assert_eq!(websearch().max(), 30_000_000);
    }

    #[test]
    fn hadoop_parses() {
        let h = hadoop();
        assert_eq!(h.points().len(), 20);
        assert_eq!(h.max(), 10_000_000);
        assert!((h.mean() - 120_420.75).abs() < 1e-6, "{}", h.mean());
    }

    #[test]
    fn sample_mean_tracks_mean() {
        for cdf in [websearch(), hadoop()] {
            let mut rng = Rng::new(0x5eed);
            let n = 200_000;
            let total: u64 = (0..n).map(|_| cdf.sample(&mut rng)).sum();
            let got = total as f64 / n as f64;
            let want = cdf.mean();
            assert!(
                (got / want - 1.0).abs() < 0.03,
                "sample mean {got}, mean {want}"
            );
        }
    }

    #[test]
    fn sampling_is_deterministic_for_a_seed() {
        let c = websearch();
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..100).map(|_| c.sample(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draw(9), draw(9));
        assert_ne!(draw(9), draw(10));
    }
}
