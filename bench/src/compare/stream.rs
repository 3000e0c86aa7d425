//! The loop of the multi-point commands (`sweep`, `sweep --msg-sizes`,
//! `incast`) and where each point goes the moment it finishes, following
//! `report::output`'s convention:
//!
//! - a table row on the human stream (stdout; stderr when stdout carries
//!   JSON), under a header printed before the first run (perftest's habit:
//!   the table grows while the sweep runs);
//! - with `--csv FILE`, a row flushed at once ([`CsvRows`]);
//! - with `--json-stream`, one `{"event":"point",...}` line on stdout.
//!
//! After the last point, or after Ctrl-C stopped the running pair, the
//! summary: one stamped JSON object (`--json`, `--json-stream`) with every
//! finished point and `"interrupted"`. A point whose run was cut short by
//! the interrupt is discarded (its numbers cover a fraction of the
//! interval); the ones before it are kept. The commands then exit 130
//! (SIGINT) or 143 (SIGTERM): `apps::exit`'s rule, applied by `main`.
//!
//! [`run_points`] is the bookkeeping alone (what ran, what was kept, when
//! to stop), driven by a "run point i" closure and an "interrupted?"
//! closure, so it is tested without DPDK.

use super::report::{clean, Point};
use anyhow::bail;
use apps::config::Config;
use apps::report::output::{check_writable, CsvRows, Stdout};
use clap::Args;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Drop sources and output of a multi-point run (`sweep`, `incast`).
#[derive(Args, Clone, Debug, Default)]
pub struct PointsOut {
    /// Read drops of this device's qdisc, DEV or DEV@NETNS (repeatable).
    #[arg(long = "qdisc", value_name = "DEV[@NETNS]")]
    pub qdisc: Vec<String>,
    /// Print one JSON summary object (every finished point, "interrupted",
    /// version, host, config) as the only stdout line; the table goes to
    /// stderr.
    #[arg(long)]
    pub json: bool,
    /// Print one JSON line per point on stdout as it finishes
    /// ({"event":"point",...}), then the summary ({"event":"summary",...});
    /// the table goes to stderr.
    #[arg(long)]
    pub json_stream: bool,
    /// Write one CSV row per point, flushed as each point finishes (an
    /// interrupted sweep keeps its finished rows).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Draw the sweep as SVG. Credits and fan-in: goodput in FILE, p99 in
    /// FILE-p99.svg, loss rate in FILE-loss.svg. Message sizes: p50/p99
    /// latency in FILE, goodput in FILE-goodput.svg.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Print no table (errors and progress lines still go to stderr): with
    /// --json, the JSON line alone.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl PointsOut {
    /// Refuses, naming the flag, any output path that cannot be written or
    /// a plot not named `.svg` (SVG is the only format drawn), before any
    /// run starts. `plot_suffixes`: the sibling files the plot also writes.
    pub fn check(&self, plot_suffixes: &[&str]) -> anyhow::Result<()> {
        if let Some(p) = &self.csv {
            check_writable("--csv", p)?;
        }
        if let Some(p) = &self.plot {
            let svg = p
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| e.eq_ignore_ascii_case("svg"));
            if !svg {
                return Err(apps::exit::usage(format!(
                    "--plot {}: plots are drawn as SVG only; name the file FILE.svg",
                    p.display()
                )));
            }
            check_writable("--plot", p)?;
            for s in plot_suffixes {
                check_writable("--plot", &sibling(p, s))?;
            }
        }
        Ok(())
    }

    /// Whether stdout is reserved for JSON (the human text goes to stderr).
    pub fn json_on_stdout(&self) -> bool {
        self.json || self.json_stream
    }
}

/// `dir/NAME.svg` -> `dir/NAME-suffix.svg`.
pub(super) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("sweep");
    path.with_file_name(format!("{stem}-{suffix}.svg"))
}

/// One column of the streamed table: its header, its width (wider cells
/// push the row, they are never cut), and its cell from the point's row.
#[derive(Clone, Copy)]
pub(super) struct Column {
    pub head: &'static str,
    pub width: usize,
    pub cell: fn(&Value) -> String,
}

impl std::fmt::Debug for Column {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.head)
    }
}

/// `row[key]` as a float with `prec` decimals, "-" when absent.
pub(super) fn fixed(row: &Value, key: &str, prec: usize) -> String {
    row[key]
        .as_f64()
        .map_or("-".into(), |x| format!("{x:.prec$}"))
}

/// `row[key]` as JSON text (integers, names), "-" when absent.
pub(super) fn text(row: &Value, key: &str) -> String {
    match &row[key] {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// The result columns every sweep and incast table shares.
pub(super) const METRICS: &[Column] = &[
    Column {
        head: "Gbps",
        width: 7,
        cell: |r| fixed(r, "gbps", 3),
    },
    Column {
        head: "Mrps",
        width: 7,
        cell: |r| fixed(r, "mrps", 4),
    },
    Column {
        head: "p50 us",
        width: 8,
        cell: |r| fixed(r, "p50_us", 1),
    },
    Column {
        head: "p99 us",
        width: 8,
        cell: |r| fixed(r, "p99_us", 1),
    },
    Column {
        head: "p99.9 us",
        width: 8,
        cell: |r| fixed(r, "p999_us", 1),
    },
    Column {
        head: "lost",
        width: 6,
        cell: |r| text(r, "lost"),
    },
    Column {
        head: "loss rate",
        width: 9,
        cell: |r| {
            r["loss_rate"]
                .as_f64()
                .map_or("-".into(), |x| format!("{x:.2e}"))
        },
    },
    Column {
        head: "refused",
        width: 7,
        cell: |r| text(&r["drop_sources"], "qdisc_sender_egress"),
    },
    Column {
        head: "retx",
        width: 6,
        cell: |r| text(r, "retransmissions"),
    },
    Column {
        head: "discards",
        width: 8,
        cell: |r| {
            let d = &r["drop_sources"];
            match (d["proto_client"].as_u64(), d["proto_server"].as_u64()) {
                (Some(c), Some(s)) => (c + s).to_string(),
                _ => "-".into(),
            }
        },
    },
    Column {
        head: "failed",
        width: 6,
        cell: |r| text(r, "failed"),
    },
    Column {
        head: "steal",
        width: 5,
        cell: |r| {
            r["cpu_steal_pct"]
                .as_f64()
                .map_or("-".into(), |p| format!("{p:.0}%"))
        },
    },
];

/// One table line: the first column left-aligned, the others right.
pub(super) fn table_line(columns: &[Column], cells: &[String]) -> String {
    let mut o = String::new();
    for (i, (c, s)) in columns.iter().zip(cells).enumerate() {
        if i == 0 {
            o.push_str(&format!("{s:<w$}", w = c.width));
        } else {
            o.push_str(&format!("  {s:>w$}", w = c.width));
        }
    }
    o.trim_end().to_string()
}

/// A finished point: the run (or why it did not run), its row (the JSON
/// object that the CSV, the stream and the summary carry), and its name
/// in notes ("lossy 16 credits", "lossy 4k").
#[derive(Clone, Debug)]
pub(super) struct Done {
    pub point: Point,
    pub row: Value,
    pub label: String,
}

/// What a multi-point run leaves: the finished points in order, how many
/// were planned, and whether Ctrl-C stopped it early.
#[derive(Debug)]
pub(super) struct Outcome {
    pub done: Vec<Done>,
    pub planned: usize,
    pub interrupted: bool,
}

/// Where finished points go: the human stream, the CSV file, the JSON
/// stream. Writers are injected so tests read what was written.
pub(super) struct Sink {
    columns: Vec<Column>,
    human: Box<dyn Write>,
    json_out: Box<dyn Write>,
    csv: Option<CsvRows>,
    json_stream: bool,
    headed: bool,
}

impl Sink {
    /// stdout/stderr as `out` says (nothing with `-q`), and the CSV file
    /// (created now, truncating: call this after the configuration is
    /// known to be good).
    pub fn new(out: &PointsOut, columns: &[Column], csv_leading: &[&str]) -> anyhow::Result<Sink> {
        let human: Box<dyn Write> = match (out.quiet, out.json_on_stdout()) {
            (true, _) => Box::new(std::io::sink()),
            (false, true) => Box::new(std::io::stderr()),
            (false, false) => Box::new(Stdout),
        };
        let csv = match &out.csv {
            Some(p) => Some(CsvRows::create(p, csv_leading)?),
            None => None,
        };
        Ok(Sink::with_writers(
            columns,
            human,
            Box::new(Stdout),
            csv,
            out.json_stream,
        ))
    }

    pub fn with_writers(
        columns: &[Column],
        human: Box<dyn Write>,
        json_out: Box<dyn Write>,
        csv: Option<CsvRows>,
        json_stream: bool,
    ) -> Sink {
        Sink {
            columns: columns.to_vec(),
            human,
            json_out,
            csv,
            json_stream,
            headed: false,
        }
    }

    /// A line of human text (titles, notes, the verdict), flushed.
    pub fn say(&mut self, line: &str) -> anyhow::Result<()> {
        writeln!(self.human, "{line}")?;
        self.human.flush()?;
        Ok(())
    }

    /// Point `n` of `of` (1-based) finished: its table row (and note), CSV
    /// row and JSON line, each written and flushed now.
    pub fn point(&mut self, n: usize, of: usize, d: &Done) -> anyhow::Result<()> {
        if !self.headed {
            let heads: Vec<String> = self.columns.iter().map(|c| c.head.to_string()).collect();
            let line = table_line(&self.columns, &heads);
            self.say(&line)?;
            self.headed = true;
        }
        let cells: Vec<String> = self.columns.iter().map(|c| (c.cell)(&d.row)).collect();
        let line = table_line(&self.columns, &cells);
        self.say(&line)?;
        for key in ["error", "note"] {
            if let Some(why) = d.row[key].as_str() {
                self.say(&format!("  {}: {why}", d.label))?;
            }
        }
        if let Some(csv) = &mut self.csv {
            csv.push(&flatten(&d.row))?;
        }
        if self.json_stream {
            let mut v = json!({"event": "point", "n": n, "of": of});
            merge(&mut v, &d.row);
            writeln!(self.json_out, "{v}")?;
            self.json_out.flush()?;
        }
        Ok(())
    }

    /// The summary line on stdout when `--json` or `--json-stream` asked.
    pub fn summary(&mut self, out: &PointsOut, summary: &Value) -> anyhow::Result<()> {
        if out.json_on_stdout() {
            writeln!(self.json_out, "{summary}")?;
            self.json_out.flush()?;
        }
        Ok(())
    }
}

/// Adds `extra`'s keys to the object `v` (keys `v` has win).
pub(super) fn merge(v: &mut Value, extra: &Value) {
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        for (k, x) in e {
            o.entry(k.clone()).or_insert_with(|| x.clone());
        }
    }
}

/// Nested objects as dotted keys one level down (`drop_sources.lost`), so
/// every CSV cell is a number or a name, not JSON text.
pub(super) fn flatten(row: &Value) -> Value {
    let Some(o) = row.as_object() else {
        return row.clone();
    };
    let mut flat = Map::new();
    for (k, v) in o {
        match v.as_object() {
            Some(inner) => {
                for (ik, iv) in inner {
                    flat.insert(format!("{k}.{ik}"), iv.clone());
                }
            }
            None => {
                flat.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(flat)
}

/// Runs points `0..planned` in order with `run_one(i)` and writes each to
/// `sink` as it finishes. Stops before the next point once `interrupted()`
/// says so; a point during which the interrupt arrived is discarded (the
/// pair was stopped mid-run). Errors only when an output cannot be written.
pub(super) fn run_points(
    planned: usize,
    mut run_one: impl FnMut(usize) -> Done,
    interrupted: impl Fn() -> bool,
    sink: &mut Sink,
) -> anyhow::Result<Outcome> {
    let mut done = Vec::new();
    let mut stopped = false;
    for i in 0..planned {
        if interrupted() {
            stopped = true;
            break;
        }
        let d = run_one(i);
        if interrupted() {
            eprintln!(
                "rpc-bench: [{}/{planned}] {}: interrupted: the pair was stopped, the point is discarded",
                i + 1,
                d.label
            );
            stopped = true;
            break;
        }
        sink.point(i + 1, planned, &d)?;
        done.push(d);
    }
    Ok(Outcome {
        done,
        planned,
        interrupted: stopped,
    })
}

/// The summary object: what was swept, every finished point's row, how
/// many were planned, whether it was interrupted; stamped with the build,
/// the machine and `base` (the configuration every point started from;
/// each row carries what its point changed).
pub(super) fn summary_json(command: &str, swept: &str, o: &Outcome, base: &Config) -> Value {
    let mut v = json!({
        "event": "summary",
        "command": command,
        "swept": swept,
        "points_planned": o.planned,
        "points_finished": o.done.len(),
        "interrupted": o.interrupted,
        "points": o.done.iter().map(|d| d.row.clone()).collect::<Vec<_>>(),
    });
    apps::report::meta::stamp(&mut v, Some(base));
    v
}

/// The end of every multi-point command: the "interrupted" line, the
/// plots (`plot`, given the finished points; skipped when none
/// succeeded), the summary line; then the verdict: an error naming the
/// finished points that failed, or Ok (after an interrupt `main` exits
/// 130/143 either way).
pub(super) fn conclude(
    command: &str,
    swept: &str,
    o: &Outcome,
    sink: &mut Sink,
    out: &PointsOut,
    base: &Config,
    plot: impl FnOnce(&[Done], &mut Sink) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    if o.interrupted {
        sink.say(&format!(
            "interrupted: {} of {} points finished",
            o.done.len(),
            o.planned
        ))?;
    }
    if out.plot.is_some() {
        if o.done.iter().any(|d| d.point.result.is_ok()) {
            plot(&o.done, sink)?;
        } else {
            eprintln!("rpc-bench {command}: no point succeeded: no plot drawn");
        }
    }
    sink.summary(out, &summary_json(command, swept, o, base))?;
    failures(&o.done)
}

/// An error naming every point that ran with failed RPCs or could not
/// run (skipped points, which the configuration ruled out, are not
/// failures).
pub(super) fn failures(done: &[Done]) -> anyhow::Result<()> {
    let bad: Vec<String> = done
        .iter()
        .filter_map(|d| match &d.point.result {
            Ok(r) if clean(r) => None,
            Ok(r) => Some(format!("{}: {} failed", d.label, r.failed)),
            Err(e) if e.starts_with("skipped") => None,
            Err(e) => Some(format!("{}: {e}", d.label)),
        })
        .collect();
    if !bad.is_empty() {
        bail!("runs with failures: {}", bad.join("; "));
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::compare::Regime;
    use apps::report::Report;
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    /// A writer tests read back.
    #[derive(Clone, Default)]
    pub struct Shared(pub Rc<RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.borrow_mut().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        pub fn text(&self) -> String {
            String::from_utf8(self.0.borrow().clone()).unwrap()
        }
    }

    /// A report of `completed` RPCs of `size` B over one second, p50 =
    /// `us` us: what a run would have measured.
    pub fn fake_report(size: u64, completed: u64, us: u64) -> Report {
        let mut r = Report::new("latency", "memif", "lossy", size, 32);
        r.completed = completed;
        r.seconds = 1.0;
        for _ in 0..completed.min(1000) {
            r.latency.record_ns(us * 1000);
        }
        r
    }

    pub fn fake_point(regime: Regime, result: Result<Report, String>) -> Point {
        Point {
            regime,
            credits: 36,
            credits_from: "derived: lossy: 4 x BDP".into(),
            bdp: 9,
            sessions: 1,
            rx_desc: 1024,
            note: None,
            result,
        }
    }

    const COLS: &[Column] = &[Column {
        head: "x",
        width: 4,
        cell: |r| text(r, "x"),
    }];

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("rpc-stream-{}-{name}", std::process::id()))
    }

    /// A sink over test buffers (human, json) and a CSV file.
    fn sink(json_stream: bool, csv: Option<&Path>) -> (Sink, Shared, Shared) {
        let (h, j) = (Shared::default(), Shared::default());
        let csv = csv.map(|p| CsvRows::create(p, &["x"]).unwrap());
        let s = Sink::with_writers(
            COLS,
            Box::new(h.clone()),
            Box::new(j.clone()),
            csv,
            json_stream,
        );
        (s, h, j)
    }

    fn done(i: usize) -> Done {
        let point = fake_point(Regime::Lossy, Ok(fake_report(32, 1000 + i as u64, 5)));
        let mut row = point.to_json();
        row["x"] = json!(i);
        Done {
            point,
            row,
            label: format!("point {i}"),
        }
    }

    #[test]
    fn every_point_is_written_as_it_finishes() {
        let csv = tmp("stream.csv");
        let (mut s, human, js) = sink(true, Some(&csv));
        let seen = Rc::new(Cell::new(0));
        let probe = seen.clone();
        let (h2, j2, c2) = (human.clone(), js.clone(), csv.clone());
        let o = run_points(
            3,
            |i| {
                // Before point i runs, the i points before it are out.
                assert_eq!(h2.text().lines().count(), if i == 0 { 0 } else { i + 1 });
                assert_eq!(j2.text().lines().count(), i);
                if i > 0 {
                    let rows = std::fs::read_to_string(&c2).unwrap();
                    assert_eq!(rows.lines().count(), i + 1, "{rows}");
                }
                probe.set(i + 1);
                done(i)
            },
            || false,
            &mut s,
        )
        .unwrap();
        assert_eq!(seen.get(), 3);
        assert!(!o.interrupted);
        assert_eq!(o.done.len(), 3);
        let lines: Vec<Value> = js
            .text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[2]["event"], "point");
        assert_eq!(lines[2]["n"], 3);
        assert_eq!(lines[2]["of"], 3);
        assert_eq!(lines[2]["x"], 2);
        assert_eq!(lines[2]["mode"], "lossy");
        assert_eq!(human.text(), "x\n0\n1\n2\n");
        // CSV: the swept key first, nested drop sources as dotted columns.
        let rows = std::fs::read_to_string(&csv).unwrap();
        let head = rows.lines().next().unwrap();
        assert!(head.starts_with("x,"), "{head}");
        assert!(head.contains("drop_sources.lost"), "{head}");
        assert!(!rows.contains('{'), "no JSON text in cells: {rows}");
        std::fs::remove_file(&csv).unwrap();
    }

    #[test]
    fn an_interrupt_keeps_the_finished_points_and_drops_the_cut_one() {
        let (mut s, human, js) = sink(false, None);
        let runs = Cell::new(0);
        // The signal arrives while the third point runs.
        let o = run_points(
            5,
            |i| {
                runs.set(i + 1);
                done(i)
            },
            || runs.get() >= 3,
            &mut s,
        )
        .unwrap();
        assert!(o.interrupted);
        assert_eq!(runs.get(), 3, "no point starts after the interrupt");
        let xs: Vec<u64> = o
            .done
            .iter()
            .map(|d| d.row["x"].as_u64().unwrap())
            .collect();
        assert_eq!(xs, vec![0, 1], "the cut point is discarded");
        assert_eq!(human.text().lines().count(), 3, "header + 2 rows");
        assert_eq!(js.text(), "", "no JSON stream unless asked");
        let v = summary_json("sweep", "msg_size", &o, &Config::default());
        assert_eq!(v["interrupted"], true);
        assert_eq!(v["points_planned"], 5);
        assert_eq!(v["points_finished"], 2);
        assert_eq!(v["points"].as_array().unwrap().len(), 2);
        assert_eq!(v["points"][1]["x"], 1);
        for k in ["version", "commit", "timestamp", "host", "config"] {
            assert!(!v[k].is_null(), "{k} missing: {v}");
        }
        // Interrupted before the first point: nothing runs.
        let (mut s, _, _) = sink(false, None);
        let o = run_points(4, |_| panic!("must not run"), || true, &mut s).unwrap();
        assert!(o.interrupted && o.done.is_empty());
    }

    #[test]
    fn failed_points_print_dashes_and_their_reason() {
        let (mut s, human, _) = sink(false, None);
        let point = fake_point(Regime::Lossless, Err("skipped: no ring".into()));
        let mut row = point.to_json();
        row["x"] = json!(7);
        let mut cols = COLS.to_vec();
        cols.extend_from_slice(METRICS);
        s.columns = cols;
        s.point(
            1,
            1,
            &Done {
                point,
                row,
                label: "lossless 7".into(),
            },
        )
        .unwrap();
        let t = human.text();
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].contains("p99.9 us"), "{t}");
        assert!(lines[1].starts_with("7 ") && lines[1].contains(" -"), "{t}");
        assert_eq!(lines[2], "  lossless 7: skipped: no ring");
    }

    #[test]
    fn plot_and_csv_paths_are_checked_before_any_run() {
        let mut o = PointsOut {
            plot: Some("x.png".into()),
            ..Default::default()
        };
        let e = o.check(&[]).unwrap_err().to_string();
        assert!(e.contains("--plot x.png") && e.contains("SVG"), "{e}");
        o.plot = Some(std::env::temp_dir().join("rpc-stream-ok.SVG"));
        o.check(&["goodput"]).unwrap();
        o.csv = Some("/nonexistent-dir-q/a.csv".into());
        let e = format!("{:#}", o.check(&[]).unwrap_err());
        assert!(e.contains("--csv") && e.contains("does not exist"), "{e}");
        assert_eq!(
            sibling(Path::new("/d/lat.svg"), "goodput"),
            PathBuf::from("/d/lat-goodput.svg")
        );
    }
}
