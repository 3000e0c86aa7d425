//! The `rpc-lab --plot` chart: FCT slowdown by flow-size bucket as
//! grouped bars, one group per bucket and one bar per regime, p50 in the
//! upper panel and p99 in the lower, on a log y axis from 1 (the ideal; the
//! slowdowns reach the hundreds). Bars rather than lines because the
//! fixed-size scenarios (incast, ...) fill a single bucket, where a line per
//! regime would be a lone dot and equal values would hide each other. SVG
//! only, through plotters' SVG backend with no font features (as the
//! plots of `apps`): text is written as SVG `<text>` elements the viewer
//! lays out, so no fontconfig or freetype is needed.

use crate::fabric::metrics::Percentiles;
use crate::fabric::RegimeResult;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Canvas size, in pixels: two panels stacked, the legend on their right.
const SIZE: (u32, u32) = (1000, 800);
/// Width of the legend column, in pixels.
const LEGEND_WIDTH: u32 = 120;
/// Share of a bucket's width its bars take (the rest separates groups).
const GROUP_WIDTH: f64 = 0.8;

/// Writes the chart of `results` to `path`. Only buckets where some regime
/// completed a flow get a group; a regime with no flow in a bucket has no
/// bar there.
pub fn plot_slowdown_by_size(
    path: &Path,
    title: &str,
    results: &[RegimeResult],
) -> Result<(), ChartError> {
    let first = results.first().ok_or_else(|| err(path, "no regime ran"))?;
    // Every result lists the same buckets in the same order (the fixed
    // five of `fabric::metrics`), so the first one's labels name the groups.
    let cols: Vec<usize> = (0..first.buckets.len())
        .filter(|&i| results.iter().any(|r| bucket(r, i).is_some()))
        .collect();
    if cols.is_empty() {
        return Err(err(path, "no flow completed in any regime"));
    }
    let labels: Vec<&str> = cols.iter().map(|&i| first.buckets[i].label).collect();
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(path, e))?;
    let root = root
        .titled(title, ("sans-serif", 26))
        .map_err(|e| err(path, e))?;
    // The legend gets a column of its own: inside a panel it would cover
    // bars wherever the data happen to be high.
    let (charts, key) = root.split_horizontally(SIZE.0 - LEGEND_WIDTH);
    legend(path, &key, results)?;
    let pick_p50: fn(&Percentiles) -> f64 = |p| p.p50;
    let pick_p99: fn(&Percentiles) -> f64 = |p| p.p99;
    let views = [("p50", pick_p50), ("p99", pick_p99)];
    for (area, (name, pick)) in charts.split_evenly((2, 1)).iter().zip(views) {
        let bars = bars(results, &cols, pick);
        panel(path, area, name, &labels, &bars)?;
    }
    root.present().map_err(|e| err(path, e))
}

/// A chart that could not be drawn or written.
#[derive(Debug, thiserror::Error)]
#[error("plot {}: {msg}", path.display())]
pub struct ChartError {
    /// The file the chart was for.
    pub path: PathBuf,
    /// What went wrong.
    pub msg: String,
}

/// A [`ChartError`] for `path`.
fn err(path: &Path, msg: impl ToString) -> ChartError {
    ChartError {
        path: path.to_path_buf(),
        msg: msg.to_string(),
    }
}

/// A short axis label: at most two decimals, exponent form when very large
/// or very small (the format of `apps`' plots, so the charts read alike).
fn short(x: f64) -> String {
    if x != 0.0 && (x.abs() >= 1e5 || x.abs() < 1e-2) {
        format!("{x:.1e}")
    } else {
        let s = format!("{x:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Bucket `i` of `r` if it holds a completed flow.
fn bucket(r: &RegimeResult, i: usize) -> Option<&crate::fabric::metrics::Bucket> {
    r.buckets.get(i).filter(|b| b.flows > 0)
}

/// One bar: regime index (its colour), x from, x to, height.
type Bar = (usize, f64, f64, f64);

/// The bars of `pick` for every regime in every column of `cols`: column
/// `j` spans x in [j, j + 1), its bars side by side in the middle.
fn bars(results: &[RegimeResult], cols: &[usize], pick: fn(&Percentiles) -> f64) -> Vec<Bar> {
    let w = GROUP_WIDTH / results.len() as f64;
    let mut out = Vec::new();
    for (j, &col) in cols.iter().enumerate() {
        for (i, r) in results.iter().enumerate() {
            if let Some(b) = bucket(r, col) {
                let x0 = j as f64 + (1.0 - GROUP_WIDTH) / 2.0 + i as f64 * w;
                out.push((i, x0, x0 + w * 0.9, pick(&b.slowdown)));
            }
        }
    }
    out
}

/// One panel: size buckets across, slowdown (log) up, the bars.
fn panel(
    path: &Path,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    name: &str,
    labels: &[&str],
    bars: &[Bar],
) -> Result<(), ChartError> {
    let top = bars
        .iter()
        .map(|b| b.3)
        .filter(|y| y.is_finite())
        .fold(2.0f64, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(format!("slowdown {name}"), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(Columns(labels.len()), (1.0f64..top * 1.5).log_scale())
        .map_err(|e| err(path, e))?;
    let x_label = |x: &f64| {
        let j = x.floor();
        match j >= 0.0 && (j as usize) < labels.len() {
            true => labels[j as usize].to_string(),
            false => String::new(),
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        // The log axis' minor lines would shade the whole panel grey.
        .light_line_style(WHITE)
        .x_desc("flow size")
        .y_desc(format!("FCT slowdown {name}"))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 16))
        .x_label_formatter(&x_label)
        .y_label_formatter(&|y| short(*y))
        .draw()
        .map_err(|e| err(path, e))?;
    chart
        .draw_series(bars.iter().map(|&(i, x0, x1, y)| {
            // A slowdown is at least 1: bars grow from the ideal.
            Rectangle::new([(x0, 1.0), (x1, y.max(1.0))], regime_color(i).filled())
        }))
        .map_err(|e| err(path, e))?;
    Ok(())
}

/// An x axis of `n` equal columns over [0, n) whose key points (ticks and
/// labels) are the columns' centres, so each bar group sits above its
/// bucket's label. (A plain `f64` range picks its own round tick values.)
struct Columns(usize);

impl Ranged for Columns {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let frac = v / self.0.max(1) as f64;
        limit.0 + (frac * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        (0..self.0).map(|j| j as f64 + 0.5).collect()
    }

    fn range(&self) -> Range<f64> {
        0.0..self.0 as f64
    }
}

/// The colour of the `i`-th regime of the run, the same in both panels and
/// the legend.
fn regime_color(i: usize) -> RGBAColor {
    Palette99::pick(i).to_rgba()
}

/// The legend column: a colour swatch and the name of each regime.
fn legend(
    path: &Path,
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    results: &[RegimeResult],
) -> Result<(), ChartError> {
    for (i, r) in results.iter().enumerate() {
        let y = 60 + 24 * i as i32;
        area.draw(&Rectangle::new(
            [(8, y - 7), (28, y + 7)],
            regime_color(i).filled(),
        ))
        .map_err(|e| err(path, e))?;
        area.draw(&Text::new(r.regime, (36, y - 8), ("sans-serif", 16)))
            .map_err(|e| err(path, e))?;
    }
    Ok(())
}
