//! SVG plots of results: HdrHistogram-style latency percentile curves and
//! x-y sweeps (goodput, p99 or loss against credits). SVG only, through
//! plotters' SVG backend with no font features: text is written as SVG
//! `<text>` elements that the viewer lays out with its own fonts, and
//! plotters sizes labels with its built-in estimate, so no fontconfig or
//! freetype is needed at build or run time.
//!
//! The format comes from the file name: a path that does not end in `.svg`
//! is refused ([`is_svg`]) rather than filled with SVG under another name.
//! Latency percentile plots put latency on a log axis: a p50 of a few
//! microseconds stays readable under a maximum of tens of milliseconds.

use crate::measure::hist::LatencyHist;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Canvas size of every plot, in pixels.
const SIZE: (u32, u32) = (960, 600);
/// Rightmost percentile tick: 1/(1-p) for p = 99.9999 %.
const MAX_PCT_X: f64 = 1e6;
/// Percentile ticks as 1/(1-p): 0 %, 50 %, 90 %, 99 %, ..., 99.9999 %.
const PCT_TICKS: &[f64] = &[1.0, 2.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6];

/// A plot that could not be drawn or written.
#[derive(Debug, thiserror::Error)]
#[error("plot {}: {msg}", path.display())]
pub struct PlotError {
    pub path: PathBuf,
    pub msg: String,
}

/// A [`PlotError`] for `path`.
pub(crate) fn err(path: &Path, msg: impl ToString) -> PlotError {
    PlotError {
        path: path.to_path_buf(),
        msg: msg.to_string(),
    }
}

/// Latency against percentile, one line per histogram, x on a log scale of
/// 1/(1-p) labelled 50 %, 90 %, 99 %, 99.9 %, ... (HdrHistogram's plot),
/// latency on a log scale ([`latency_axis`]).
pub fn plot_latency_percentiles(
    path: &Path,
    title: &str,
    series: &[(&str, &LatencyHist)],
) -> Result<(), PlotError> {
    let curves: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .filter(|(_, h)| h.count() > 0)
        .map(|(name, h)| (*name, percentile_curve(h)))
        .collect();
    if curves.is_empty() {
        return Err(err(path, "no histogram has samples"));
    }
    let x_max = curves
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| p.0))
        .fold(10.0f64, f64::max)
        .min(MAX_PCT_X);
    // First tick at or past the data, so the last curve point is inside.
    let x_end = PCT_TICKS
        .iter()
        .copied()
        .find(|t| *t >= x_max)
        .unwrap_or(MAX_PCT_X);
    let ticks: Vec<f64> = PCT_TICKS.iter().copied().filter(|t| *t <= x_end).collect();
    let x_spec = (1.0..x_end).log_scale().with_key_points(ticks);
    let y_spec = latency_axis(&curves).log_scale();
    draw(
        path,
        (title, "percentile", "latency (us, log scale)"),
        &curves,
        x_spec,
        y_spec,
        &|x| percentile_label(*x),
    )
}

/// The log latency axis of a percentile plot: from a little under the
/// smallest latency to a little over the largest (at least a decade, so a
/// flat curve still gets ticks).
fn latency_axis(curves: &[(&str, Vec<(f64, f64)>)]) -> Range<f64> {
    let ys = || curves.iter().flat_map(|(_, p)| p.iter().map(|q| q.1));
    let lo = ys()
        .filter(|y| *y > 0.0 && y.is_finite())
        .fold(f64::INFINITY, f64::min);
    let lo = if lo.is_finite() { lo / 1.25 } else { 0.1 };
    let hi = (max_y(curves) * 1.25).max(lo * 10.0);
    lo..hi
}

/// Whether `path` names an SVG file (`.svg`, any case): the one format
/// this build writes.
pub fn is_svg(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"))
}

/// Lines through `(x, y)` points, one per series (e.g. goodput against
/// credits for lossless and lossy), optionally with a log-scale x axis.
pub fn plot_xy(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(&str, Vec<(f64, f64)>)],
    log_x: bool,
) -> Result<(), PlotError> {
    plot_xy_axes(path, (title, x_label, y_label), series, log_x, false)
}

/// [`plot_xy`] with a log-scale y axis (latencies from microseconds to
/// milliseconds on one chart); points with y <= 0 are left out.
pub fn plot_xy_log_y(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(&str, Vec<(f64, f64)>)],
    log_x: bool,
) -> Result<(), PlotError> {
    plot_xy_axes(path, (title, x_label, y_label), series, log_x, true)
}

fn plot_xy_axes(
    path: &Path,
    (title, x_label, y_label): (&str, &str, &str),
    series: &[(&str, Vec<(f64, f64)>)],
    log_x: bool,
    log_y: bool,
) -> Result<(), PlotError> {
    let curves: Vec<(&str, Vec<(f64, f64)>)> = series
        .iter()
        .map(|(n, pts)| {
            let finite = pts
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite() && (!log_y || *y > 0.0));
            (*n, finite.collect())
        })
        .collect();
    let xs = || curves.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let (lo, hi) = xs().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if !lo.is_finite() {
        return Err(err(path, "no finite points"));
    }
    if log_x && lo <= 0.0 {
        return Err(err(path, format!("log x axis needs x > 0, got {lo}")));
    }
    let labels = (title, x_label, y_label);
    let y_lin = 0.0f64.min(min_y(&curves))..max_y(&curves) * 1.1;
    let y_least = curves
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .fold(f64::INFINITY, f64::min);
    let y_log = (y_least / 1.5..max_y(&curves) * 1.5).log_scale();
    let x_pad = if hi > lo { (hi - lo) * 0.05 } else { 1.0 };
    let x_lin = lo - x_pad..hi + x_pad;
    let x_log = (lo / 1.2..hi * 1.2).log_scale();
    let fmt = &|x: &f64| short(*x);
    match (log_x, log_y) {
        (true, true) => draw(path, labels, &curves, x_log, y_log, fmt),
        (true, false) => draw(path, labels, &curves, x_log, y_lin, fmt),
        (false, true) => draw(path, labels, &curves, x_lin, y_log, fmt),
        (false, false) => draw(path, labels, &curves, x_lin, y_lin, fmt),
    }
}

/// Points (1/(1-q), latency us) at HdrHistogram's quantile ticks, ending
/// at the maximum, placed at 1/(1-q) = sample count.
fn percentile_curve(h: &LatencyHist) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = h
        .raw()
        .iter_quantiles(5)
        .map(|v| (v.quantile_iterated_to(), v.value_iterated_to()))
        .filter(|(q, _)| *q < 1.0)
        .map(|(q, ns)| ((1.0 / (1.0 - q)).min(MAX_PCT_X), ns as f64 / 1000.0))
        .collect();
    let last_x = pts.last().map_or(1.0, |p| p.0);
    pts.push(((h.count() as f64).clamp(last_x, MAX_PCT_X), h.max_us()));
    pts
}

/// 2 -> "50%", 1000 -> "99.9%".
fn percentile_label(x: f64) -> String {
    let p = 100.0 * (1.0 - 1.0 / x.max(1.0));
    let s = format!("{p:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// A short axis label: at most two decimals, exponent form when very large
/// or very small.
pub(crate) fn short(x: f64) -> String {
    if x != 0.0 && (x.abs() >= 1e5 || x.abs() < 1e-2) {
        format!("{x:.1e}")
    } else {
        let s = format!("{x:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn max_y(curves: &[(&str, Vec<(f64, f64)>)]) -> f64 {
    let m = curves
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .fold(0.0f64, f64::max);
    if m > 0.0 {
        m
    } else {
        1.0
    }
}

fn min_y(curves: &[(&str, Vec<(f64, f64)>)]) -> f64 {
    curves
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .fold(0.0f64, f64::min)
}

/// Draws the chart (SVG paths only): title, mesh with labels, one line with
/// point markers per series, legend.
#[allow(clippy::too_many_arguments)]
fn draw<X, Y>(
    path: &Path,
    (title, x_label, y_label): (&str, &str, &str),
    curves: &[(&str, Vec<(f64, f64)>)],
    x_spec: X,
    y_spec: Y,
    x_fmt: &dyn Fn(&f64) -> String,
) -> Result<(), PlotError>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    if !is_svg(path) {
        return Err(err(
            path,
            "only SVG plots are supported: give a file name ending in .svg",
        ));
    }
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(path, e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 28))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(x_spec, y_spec)
        .map_err(|e| err(path, e))?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .x_label_formatter(x_fmt)
        .y_label_formatter(&|y| short(*y))
        .draw()
        .map_err(|e| err(path, e))?;
    for (i, (name, pts)) in curves.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(|e| err(path, e))?
            .label(*name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart
            .draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
            .map_err(|e| err(path, e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 16))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(path, e))?;
    root.present().map_err(|e| err(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        // One directory per test: tests run in parallel.
        let dir = std::env::temp_dir().join(format!("apps-plot-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn labels() {
        assert_eq!(percentile_label(2.0), "50%");
        assert_eq!(percentile_label(10.0), "90%");
        assert_eq!(percentile_label(1000.0), "99.9%");
        assert_eq!(percentile_label(10000.0), "99.99%");
        assert_eq!(percentile_label(1.0), "0%");
        assert_eq!(short(32.0), "32");
        assert_eq!(short(2.5), "2.5");
    }

    #[test]
    fn percentile_svg() {
        let mut a = LatencyHist::new();
        let mut b = LatencyHist::new();
        for i in 1..=20_000u64 {
            a.record_ns(2_000 + i % 500);
            b.record_ns(3_000 + (i * 7) % 9_000);
        }
        let p = tmp("lat.svg");
        plot_latency_percentiles(&p, "RTT", &[("lossless-run", &a), ("lossy-run", &b)]).unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.contains("<svg"));
        for s in [
            "lossless-run",
            "lossy-run",
            "99.9%",
            "latency (us, log scale)",
        ] {
            assert!(svg.contains(s), "missing {s}");
        }
        let empty = LatencyHist::new();
        assert!(plot_latency_percentiles(&p, "x", &[("e", &empty)]).is_err());
        std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
    }

    /// Text of every `<text>` element of an SVG (the axis labels).
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| t.split_once('>').and_then(|(_, r)| r.split_once("</text>")))
            .map(|(t, _)| t.trim().to_string())
            .collect()
    }

    #[test]
    fn latency_axis_is_logarithmic_so_microseconds_show_under_a_long_tail() {
        // 2-3 us for almost every RPC, one 50 ms outlier.
        let mut h = LatencyHist::new();
        for i in 0..100_000u64 {
            h.record_ns(2_000 + i % 1_000);
        }
        h.record_ns(50_000_000);
        let curve = percentile_curve(&h);
        let axis = latency_axis(&[("x", curve)]);
        assert!(axis.start > 1.0 && axis.start < 2.0, "{axis:?}");
        assert!(axis.end >= 50_000.0, "{axis:?}");
        let p = tmp("tail.svg");
        plot_latency_percentiles(&p, "tail", &[("x", &h)]).unwrap();
        let labels = texts(&std::fs::read_to_string(&p).unwrap());
        // A linear 0..50 ms axis has no tick below thousands of us; a log
        // one has a tick per decade from single microseconds up.
        for tick in ["10", "100", "1000"] {
            assert!(
                labels.iter().any(|l| l == tick),
                "no {tick} tick: {labels:?}"
            );
        }
        assert!(labels.iter().any(|l| l.contains("log scale")), "{labels:?}");
        std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
    }

    #[test]
    fn xy_plots_take_a_log_y_axis_and_leave_out_what_it_cannot_show() {
        let p = tmp("xy.svg");
        let pts = vec![
            (32.0, 1.5),
            (4096.0, 2.5),
            (1e6, 300.0),
            (8e6, 3000.0),
            (1e7, 0.0),
        ];
        plot_xy_log_y(
            &p,
            "by size",
            "size",
            "latency (us, log scale)",
            &[("p50", pts.clone())],
            true,
        )
        .unwrap();
        let labels = texts(&std::fs::read_to_string(&p).unwrap());
        for tick in ["10", "100", "1000"] {
            assert!(
                labels.iter().any(|l| l == tick),
                "no {tick} tick: {labels:?}"
            );
        }
        // The same points on a linear axis have no 10 us tick.
        plot_xy(&p, "by size", "size", "us", &[("p50", pts)], true).unwrap();
        let linear = texts(&std::fs::read_to_string(&p).unwrap());
        assert!(!linear.iter().any(|l| l == "10"), "{linear:?}");
        assert!(plot_xy_log_y(&p, "t", "x", "y", &[("z", vec![(1.0, 0.0)])], false).is_err());
        std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
    }

    #[test]
    fn only_svg_file_names_are_drawn() {
        assert!(is_svg(Path::new("a/b.svg")) && is_svg(Path::new("B.SVG")));
        for name in ["lat.png", "lat.jpg", "lat", "svg"] {
            assert!(!is_svg(Path::new(name)), "{name}");
        }
        let mut h = LatencyHist::new();
        h.record_ns(1_000);
        let p = tmp("lat.png");
        let e = plot_latency_percentiles(&p, "x", &[("a", &h)]).unwrap_err();
        assert!(e.to_string().contains("only SVG"), "{e}");
        assert!(!p.exists(), "nothing written under a .png name");
        let e = plot_xy(&p, "t", "x", "y", &[("a", vec![(1.0, 1.0)])], false).unwrap_err();
        assert!(e.to_string().contains("only SVG"), "{e}");
        std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
    }

    #[test]
    fn xy_svg() {
        let p = tmp("sweep.svg");
        let credits: [f64; 7] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];
        let lossless: Vec<(f64, f64)> = credits.iter().map(|c| (*c, (*c).min(9.0))).collect();
        let lossy: Vec<(f64, f64)> = credits.iter().map(|c| (*c, (*c).min(8.0))).collect();
        let series = [("goodput-lossless", lossless), ("goodput-lossy", lossy)];
        plot_xy(&p, "credits sweep", "credits", "Gbps", &series, true).unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        assert!(svg.contains("<svg"));
        assert!(svg.contains("goodput-lossless") && svg.contains("goodput-lossy"));
        plot_xy(&p, "linear", "x", "y", &series, false).unwrap();
        let bad = [("neg", vec![(-1.0, 1.0)])];
        assert!(plot_xy(&p, "t", "x", "y", &bad, true).is_err());
        std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
    }
}
