//! The human-readable tables of `rpc-lab`: one seed's results
//! ([`render_table`], every counter) and a multi-seed run's statistics
//! ([`render_seeds_table`], `mean ±half-width` of the metrics of
//! [`crate::seeds::METRICS`]), each one row per regime and a line per
//! regime of slowdown p99 by flow size.

use crate::fabric::RegimeResult;
use crate::seeds::{Format, Interval, SeedsReport, METRICS};

/// The table (one row per regime) and, per regime, slowdown p99 by flow
/// size (non-empty buckets only).
pub fn render_table(results: &[RegimeResult]) -> String {
    let victim = results.iter().any(|r| r.victim_goodput_gbps.is_some());
    let mut head = vec!["regime", "done", "Gb/s", "flow Gb/s"];
    if victim {
        head.push("victim Gb/s");
    }
    head.extend([
        "sd p50",
        "sd p99",
        "sd p99.9",
        "drops sw",
        "drops ring",
        "pauses",
        "paused us",
        "links paused",
        "ECN marks",
        "resent",
        "peak KB",
    ]);
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let mut row = vec![
                r.regime.to_string(),
                format!("{}/{}", r.completed, r.flows),
                format!("{:.1}", r.goodput_gbps),
                format!("{:.1}", r.mean_flow_gbps),
            ];
            if victim {
                row.push(
                    r.victim_goodput_gbps
                        .map_or("-".into(), |g| format!("{g:.1}")),
                );
            }
            row.extend([
                format!("{:.2}", r.slowdown.p50),
                format!("{:.2}", r.slowdown.p99),
                format!("{:.2}", r.slowdown.p999),
                r.drops_switch.to_string(),
                r.drops_host_ring.to_string(),
                r.pause_frames.to_string(),
                format!("{:.1}", r.paused_us),
                r.links_paused.to_string(),
                r.ecn_marks.to_string(),
                r.retransmitted_pkts.to_string(),
                format!("{:.0}", r.peak_buffer_bytes as f64 / 1e3),
            ]);
            row
        })
        .collect();
    let mut out = align(&head, &rows);
    let name_w = name_width(&head, &rows);
    for r in results {
        let cells: Vec<String> = r
            .buckets
            .iter()
            .filter(|b| b.flows > 0)
            .map(|b| format!("{}: {:.2}", b.label, b.slowdown.p99))
            .collect();
        out.push_str(&by_size_line(r.regime, name_w, &cells));
    }
    out
}

/// The statistics of a multi-seed run: a line saying what the cells are,
/// one row per regime with `mean ±half-width` of each table metric, and
/// per regime slowdown p99 by flow size the same way (buckets with flows
/// in only some seeds say in how many).
pub fn render_seeds_table(report: &SeedsReport) -> String {
    let n = report.seeds.len();
    // A column shows when every regime has the metric (victim: all or none).
    let cols: Vec<_> = METRICS
        .iter()
        .filter(|m| m.column.is_some())
        .filter(|m| report.regimes.iter().all(|r| r.stats.get(m.key).is_some()))
        .collect();
    let mut head = vec!["regime"];
    head.extend(cols.iter().filter_map(|m| m.column));
    let rows: Vec<Vec<String>> = report
        .regimes
        .iter()
        .map(|r| {
            let mut row = vec![r.regime.to_string()];
            for m in &cols {
                let i = r.stats.get(m.key).expect("filtered above");
                row.push(cell(i, m.format));
            }
            row
        })
        .collect();
    let mut out = format!(
        "mean ±half-width of the 95 % confidence interval over {} (n = {n}, Student's t with {} df)\n",
        seed_range(&report.seeds),
        n - 1
    );
    out.push_str(&align(&head, &rows));
    let name_w = name_width(&head, &rows);
    for r in &report.regimes {
        let labels = r.results[0].buckets.iter().map(|b| b.label);
        let cells: Vec<String> = labels
            .enumerate()
            .filter_map(|(b, label)| {
                let p99: Vec<f64> = r
                    .results
                    .iter()
                    .filter_map(|res| res.buckets.get(b).filter(|b| b.flows > 0))
                    .map(|b| b.slowdown.p99)
                    .collect();
                let i = Interval::of(&p99);
                match i.n {
                    0 => None,
                    k if k == n => Some(format!("{label}: {}", cell(&i, Format::Decimals(2)))),
                    k => Some(format!(
                        "{label}: {} ({k} of {n} seeds)",
                        cell(&i, Format::Decimals(2))
                    )),
                }
            })
            .collect();
        out.push_str(&by_size_line(r.regime, name_w, &cells));
    }
    out
}

/// `first-last` for consecutive seeds, else the list.
pub fn seed_range(seeds: &[u64]) -> String {
    let consecutive = seeds.windows(2).all(|w| w[0].checked_add(1) == Some(w[1]));
    match (seeds, consecutive) {
        ([one], _) => format!("seed {one}"),
        ([first, .., last], true) => format!("seeds {first}-{last}"),
        _ => {
            let list: Vec<String> = seeds.iter().map(u64::to_string).collect();
            format!("seeds {}", list.join(","))
        }
    }
}

/// `mean ±half-width`, or the mean alone without an interval.
fn cell(i: &Interval, format: Format) -> String {
    let d = match format {
        Format::Decimals(d) => d,
        Format::Count if i.mean.abs() < 100.0 && i.ci95.is_some_and(|hw| hw > 0.0) => 1,
        Format::Count => 0,
    };
    match i.ci95 {
        Some(hw) => format!("{:.d$} ±{hw:.d$}", i.mean),
        None => format!("{:.d$}", i.mean),
    }
}

/// One regime's `slowdown p99 by size` line.
fn by_size_line(regime: &str, name_w: usize, cells: &[String]) -> String {
    let text = match cells.is_empty() {
        true => "no flow completed".to_string(),
        false => cells.join("  "),
    };
    format!("{regime:<name_w$}  slowdown p99 by size  {text}\n")
}

/// Width of the name column.
fn name_width(head: &[&str], rows: &[Vec<String>]) -> usize {
    col_width(head, rows, 0)
}

/// Width of column `c`: its widest cell (characters, so `±` counts one).
fn col_width(head: &[&str], rows: &[Vec<String>], c: usize) -> usize {
    rows.iter()
        .map(|r| r[c].chars().count())
        .chain([head[c].chars().count()])
        .max()
        .unwrap_or(0)
}

/// The header and rows as aligned text: names left-aligned, numbers
/// right-aligned, columns two spaces apart.
fn align(head: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..head.len()).map(|c| col_width(head, rows, c)).collect();
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        for (c, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            match c {
                0 => out.push_str(&format!("{cell:<w$}")),
                _ => out.push_str(&format!("  {cell:>w$}")),
            }
        }
        out.push('\n');
    };
    line(head);
    for row in rows {
        line(&row.iter().map(String::as_str).collect::<Vec<_>>());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_seed_ranges() {
        let i = Interval::of(&[1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(cell(&i, Format::Decimals(2)), "3.00 ±1.96");
        assert_eq!(cell(&i, Format::Count), "3.0 ±2.0");
        let big = Interval::of(&[1000.0, 1010.0]);
        assert_eq!(cell(&big, Format::Count), "1005 ±64");
        assert_eq!(cell(&Interval::of(&[8.0; 3]), Format::Count), "8 ±0");
        assert_eq!(cell(&Interval::of(&[7.0]), Format::Decimals(1)), "7.0");
        assert_eq!(seed_range(&[1, 2, 3]), "seeds 1-3");
        assert_eq!(seed_range(&[4]), "seed 4");
        assert_eq!(seed_range(&[1, 5]), "seeds 1,5");
    }

    #[test]
    fn align_counts_characters_not_bytes() {
        let rows = vec![vec!["irn".to_string(), "3.0 ±2.0".to_string()]];
        let t = align(&["regime", "x"], &rows);
        assert_eq!(t, "regime         x\nirn     3.0 ±2.0\n");
    }
}
