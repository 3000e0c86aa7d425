//! Where results go and in what shape, one convention for every command:
//!
//! - without `--json`, the human report is on stdout and progress lines
//!   are on stderr;
//! - with `--json`, stdout carries exactly one line, the JSON summary
//!   (stamped by [`super::meta::stamp`]), and the human report moves to
//!   stderr, so `rpc-bench run --json | jq .` works;
//! - `--csv FILE` writes one row per run, mode or point, each row flushed
//!   as soon as it is known ([`CsvRows`]), so an interrupted sweep keeps
//!   its finished points;
//! - every output path is checked before the run starts
//!   ([`check_writable`]): a typo fails in a millisecond, not after a
//!   two-minute run, as a usage error ([`crate::exit::UsageError`], exit 2);
//! - stdout is written through [`Stdout`], so a reader that goes away
//!   (`| head -1`) costs neither noise nor the run's files and status.

use super::meta::stamp;
use crate::config::Config;
use crate::exit::usage;
use anyhow::Context;
use clap::Args;
use serde_json::Value;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Output flags shared by rpc-client and rpc-bench run.
#[derive(Args, Clone, Debug, Default)]
pub struct ReportArgs {
    /// Print the JSON summary, stamped with the build, host and effective
    /// config, as the only line on stdout (the text report goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Print one JSON line per second while the run lasts (`"event":
    /// "interval"`, all workers summed: rpcs, mrps, gbps, p50_us, p99_us,
    /// retransmissions, drops), then the JSON summary as the last line.
    #[arg(long)]
    pub json_stream: bool,
    /// Save the latency histogram in HdrHistogram's percentile format.
    #[arg(long, value_name = "FILE")]
    pub hist_out: Option<PathBuf>,
    /// Draw the latency percentile distribution (log latency axis) as SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Write the summary's scalar fields as a CSV header and one row.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Print no text report (errors and progress lines still go to
    /// stderr): with --json, the JSON line alone.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl ReportArgs {
    /// Checks every output path; call it before the run starts.
    pub fn check(&self) -> anyhow::Result<()> {
        if let Some(p) = &self.hist_out {
            check_writable("--hist-out", p)?;
        }
        if let Some(p) = &self.plot {
            check_plot("--plot", p)?;
        }
        if let Some(p) = &self.csv {
            check_writable("--csv", p)?;
        }
        Ok(())
    }

    /// Whether stdout is kept for JSON (`--json` or `--json-stream`), so
    /// text goes to stderr.
    pub fn stdout_is_json(&self) -> bool {
        self.json || self.json_stream
    }

    /// Prints the text report: stdout, or stderr with `--json` or
    /// `--json-stream`; nothing with `--quiet`.
    pub fn human(&self, text: &str) {
        if !self.quiet {
            print_human(self.stdout_is_json(), text);
        }
    }

    /// Writes the histogram file, the plot and the CSV row if asked; with
    /// `--json` prints the summary stamped with `cfg` (with the encoded
    /// histogram only if `keep_hist`) as stdout's one line.
    pub fn emit(
        &self,
        rep: &super::Report,
        keep_hist: bool,
        cfg: Option<&Config>,
    ) -> anyhow::Result<()> {
        if let Some(p) = &self.hist_out {
            rep.write_hist(p)?;
        }
        if let Some(p) = &self.plot {
            super::plot::plot_latency_percentiles(
                p,
                "RPC latency",
                &[(rep.mode.as_str(), &rep.latency)],
            )?;
            eprintln!("latency plot: {}", p.display());
        }
        let mut v = rep.to_json();
        if !keep_hist {
            if let Some(o) = v.as_object_mut() {
                o.remove("hist");
            }
        }
        stamp(&mut v, cfg);
        if let Some(p) = &self.csv {
            let mut w = CsvRows::create(p, CSV_LEADING)?;
            w.push(&flat_row(&v))?;
        }
        if self.json || self.json_stream {
            print_stdout(&format!("{v}\n"));
        }
        Ok(())
    }
}

/// Leading CSV columns of a run's row: what it was, then what it got.
pub const CSV_LEADING: &[&str] = &[
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
    "p50_us",
    "p90_us",
    "p99_us",
    "p999_us",
    "p9999_us",
    "max_us",
    "drops",
    "retransmissions",
];

/// The top-level scalar fields of a JSON summary (numbers, strings,
/// booleans): one CSV row. Objects and arrays (config, counters by name,
/// the encoded histogram) stay in the JSON.
pub fn flat_row(summary: &Value) -> Value {
    let Some(o) = summary.as_object() else {
        return Value::Object(Default::default());
    };
    let flat = o
        .iter()
        .filter(|(k, v)| k.as_str() != "hist" && !matches!(v, Value::Object(_) | Value::Array(_)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Value::Object(flat)
}

/// Prints `text` as it is to stdout, or to stderr when stdout is kept for
/// the JSON line.
pub fn print_human(json: bool, text: &str) {
    if json {
        eprint!("{text}");
    } else {
        print_stdout(text);
    }
}

/// Writes `text` to stdout through [`Stdout`] and flushes it. Any other
/// failure than a closed pipe is said on stderr; the run goes on (its
/// files and status do not depend on a terminal).
pub fn print_stdout(text: &str) {
    let mut out = Stdout;
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        eprintln!("warning: cannot write to stdout: {e}");
    }
}

/// This process's stdout, where a reader that went away (`rpc-bench man |
/// head -1`, a report piped into `head`) is not an error: what it did not
/// read is dropped, quietly, and the run goes on to write its files and
/// end with its own status. Rust ignores SIGPIPE, so a write to a closed
/// pipe fails with `BrokenPipe`, which `print!` would turn into a panic.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match std::io::stdout().lock().write(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(buf.len()),
            r => r,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match std::io::stdout().lock().flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => r,
        }
    }
}

/// [`check_writable`] for a plot: the name must also end in `.svg`, the one
/// format this build draws (plotters' SVG backend; no bitmap backend).
pub fn check_plot(flag: &str, path: &Path) -> anyhow::Result<()> {
    if !super::plot::is_svg(path) {
        return Err(usage(format!(
            "{flag} {}: only SVG plots are supported; give a file name ending in .svg",
            path.display()
        )));
    }
    check_writable(flag, path)
}

/// Fails, naming `flag`, unless `path` can be created or overwritten: its
/// folder exists and is writable and the path is not a folder (a
/// [`crate::exit::UsageError`]: exit 2). Creates nothing that was not there.
pub fn check_writable(flag: &str, path: &Path) -> anyhow::Result<()> {
    if path.as_os_str().is_empty() {
        return Err(usage(format!("{flag}: empty path")));
    }
    if path.is_dir() {
        return Err(usage(format!(
            "{flag} {}: is a folder, not a file",
            path.display()
        )));
    }
    let existed = path.exists();
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(usage(format!(
            "{flag} {}: folder {} does not exist",
            path.display(),
            parent.display()
        )));
    }
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| usage(format!("{flag} {}: cannot write: {e}", path.display())))?;
    if !existed {
        // Best effort: leave no empty file behind if the run fails later.
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// A CSV file written a row at a time: the header is `leading` (the keys a
/// reader looks for first, e.g. the swept value) then the first row's other
/// keys in name order; every later row fills those columns (missing: empty;
/// nested values: their JSON text), and each row is flushed at once.
#[derive(Debug)]
pub struct CsvRows {
    path: PathBuf,
    out: csv::Writer<File>,
    leading: Vec<String>,
    columns: Option<Vec<String>>,
}

impl CsvRows {
    /// Creates (truncates) `path`.
    pub fn create(path: &Path, leading: &[&str]) -> anyhow::Result<CsvRows> {
        let out = csv::Writer::from_path(path)
            .with_context(|| format!("--csv {}: cannot create", path.display()))?;
        Ok(CsvRows {
            path: path.to_path_buf(),
            out,
            leading: leading.iter().map(|s| s.to_string()).collect(),
            columns: None,
        })
    }

    /// Appends one row from a flat JSON object (non-objects are refused).
    pub fn push(&mut self, row: &Value) -> anyhow::Result<()> {
        let Some(o) = row.as_object() else {
            anyhow::bail!("a CSV row must be a JSON object, got {row}");
        };
        let ctx = || format!("--csv {}", self.path.display());
        if self.columns.is_none() {
            let mut cols = self.leading.clone();
            cols.extend(o.keys().filter(|k| !self.leading.contains(k)).cloned());
            self.out.write_record(&cols).with_context(ctx)?;
            self.columns = Some(cols);
        }
        let cols = self.columns.as_ref().expect("set above");
        let cells = cols.iter().map(|c| match o.get(c) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        });
        self.out.write_record(cells).with_context(ctx)?;
        self.out.flush().with_context(ctx)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("rpc-output-{}-{name}", std::process::id()))
    }

    #[test]
    fn a_path_in_a_missing_folder_is_refused_by_flag() {
        let e = check_writable("--csv", Path::new("/nonexistent-dir-x/a.csv")).unwrap_err();
        let m = format!("{e:#}");
        assert!(m.contains("--csv") && m.contains("does not exist"), "{m}");
        // A refused flag value: exit 2, as clap's own refusals.
        assert_eq!(crate::exit::error_status(&e), crate::exit::USAGE);
        let e = check_writable("--plot", &std::env::temp_dir()).unwrap_err();
        assert!(format!("{e:#}").contains("is a folder"), "{e:#}");
        assert_eq!(crate::exit::error_status(&e), crate::exit::USAGE);
    }

    #[test]
    fn a_writable_path_passes_and_leaves_nothing_behind() {
        let p = tmp("check.csv");
        check_writable("--csv", &p).unwrap();
        assert!(!p.exists());
    }

    #[test]
    fn a_plot_must_be_svg_and_the_refusal_names_the_flag() {
        let e = check_plot("--plot", &tmp("lat.png")).unwrap_err();
        let m = format!("{e:#}");
        assert!(m.contains("--plot") && m.contains("only SVG"), "{m}");
        assert!(check_plot("--plot", &tmp("noext")).is_err());
        check_plot("--plot", &tmp("lat.SVG")).unwrap();
        let e = check_plot("--plot", Path::new("/nonexistent-dir-x/a.svg")).unwrap_err();
        assert!(format!("{e:#}").contains("does not exist"), "{e:#}");
    }

    #[test]
    fn report_args_check_every_path_by_its_flag() {
        let ok = ReportArgs {
            hist_out: Some(tmp("h.hgrm")),
            plot: Some(tmp("p.svg")),
            csv: Some(tmp("c.csv")),
            ..Default::default()
        };
        ok.check().unwrap();
        let bad = Path::new("/nonexistent-dir-x/f");
        for (flag, args) in [
            (
                "--hist-out",
                ReportArgs {
                    hist_out: Some(bad.into()),
                    ..ok.clone()
                },
            ),
            (
                "--plot",
                ReportArgs {
                    plot: Some(bad.with_extension("svg")),
                    ..ok.clone()
                },
            ),
            (
                "--csv",
                ReportArgs {
                    csv: Some(bad.into()),
                    ..ok.clone()
                },
            ),
        ] {
            let m = format!("{:#}", args.check().unwrap_err());
            assert!(m.starts_with(flag), "{flag}: {m}");
        }
    }

    #[test]
    fn emit_writes_a_stamped_csv_row_of_scalars() {
        let mut rep = crate::report::Report {
            workload: "latency".into(),
            link: "memif".into(),
            mode: "lossless".into(),
            msg_size: 32,
            resp_size: 32,
            completed: 10,
            seconds: 1.0,
            ..Default::default()
        };
        rep.latency.record_ns(2_000);
        let p = tmp("emit.csv");
        let args = ReportArgs {
            csv: Some(p.clone()),
            ..Default::default()
        };
        args.emit(&rep, false, Some(&Config::default())).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(&header[..CSV_LEADING.len()], CSV_LEADING);
        for k in ["version", "commit", "dpdk_version", "timestamp", "host"] {
            assert!(header.contains(&k), "{k} in {header:?}");
        }
        for k in ["config", "hist", "drops_by_reason"] {
            assert!(!header.contains(&k), "{k} is not a scalar: {header:?}");
        }
        let row = lines.next().unwrap();
        assert!(
            row.starts_with("latency,memif,lossless,32,32,10,0,1.0,"),
            "{row}"
        );
        assert_eq!(lines.next(), None, "one row");
    }

    #[test]
    fn flat_rows_keep_scalars_only() {
        let v = json!({"a": 1, "b": "x", "c": true, "d": {"e": 1}, "f": [1], "hist": "AAA"});
        assert_eq!(flat_row(&v), json!({"a": 1, "b": "x", "c": true}));
        assert_eq!(flat_row(&json!(3)), json!({}));
    }

    #[test]
    fn csv_rows_keep_the_first_rows_columns_and_are_on_disk_at_once() {
        let p = tmp("rows.csv");
        let mut w = CsvRows::create(&p, &["size"]).unwrap();
        w.push(&json!({"size": 32, "mode": "lossy", "p50_us": 1.5}))
            .unwrap();
        // Read back before the writer is dropped: rows are flushed.
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "size,mode,p50_us\n32,lossy,1.5\n"
        );
        w.push(&json!({"mode": "a,b", "size": 4096, "extra": 1}))
            .unwrap();
        assert!(w.push(&json!([1])).is_err());
        drop(w);
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text, "size,mode,p50_us\n32,lossy,1.5\n4096,\"a,b\",\n");
        std::fs::remove_file(&p).unwrap();
    }
}
