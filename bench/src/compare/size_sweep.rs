//! `rpc-bench sweep --msg-sizes 32,1k,4k,64k,1M,8M`: one run per request
//! size in each regime of `--regimes` (perftest's `-a`). Each point is the
//! configured workload with `workload.req_size` set to the size (and
//! `resp_size` too with `--resp-sizes same`); sizes above one packet's
//! payload are multi-packet messages. Credits are each regime's default,
//! as in `compare` (an explicit `transport.credits` is kept: a fixed
//! window of credits across sizes is a fair question too).
//!
//! Every point's configuration is validated before the first run, so a
//! size the limits refuse (`transport.max_msg_size`, the memory budgets)
//! fails at once, naming the size, the regime and the key.
//!
//! Output: the table (size, regime, p50/p99/p99.9 latency, Mrps, goodput,
//! loss), CSV and JSON rows with `req_size`, `resp_size` and `mode` (the
//! regime), and two
//! plots: latency (p50 and p99, on a log axis: the sizes span three
//! decades of latency) and goodput, both against the request size on a
//! log axis.

use super::probes::*;
use super::regimes::*;
use super::report::*;
use super::run::*;
use super::stream::*;
use super::sweep_args::{RespSizes, SweepArgs};
use anyhow::Context;
use apps::config::{Config, ValidationEnv};
use serde_json::{json, Value};
use std::path::Path;

/// The plot files a size sweep writes next to `--plot FILE.svg`.
pub const SIZE_PLOT_SUFFIXES: [&str; 1] = ["goodput"];

/// "32", "4k", "1M": how the user typed it, when it is a whole number of
/// KiB or MiB.
pub fn size_text(n: u64) -> String {
    const MIB: u64 = 1 << 20;
    const KIB: u64 = 1 << 10;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{}M", n / MIB)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{}k", n / KIB)
    } else {
        n.to_string()
    }
}

/// One planned point: the regime, the request size and its configuration.
#[derive(Clone, Debug)]
pub(super) struct SizePoint {
    pub regime: Regime,
    pub size: u64,
    pub cfg: Config,
}

/// Every (regime, size) configuration, regimes outer, sizes in the order
/// given; each validated as it will run (after the ring is fitted to its
/// credits), the first refusal named by size, regime and key.
pub(super) fn plan(
    bases: &Bases,
    regimes: &[Regime],
    sizes: &[u64],
    resp: RespSizes,
    env: &ValidationEnv,
) -> anyhow::Result<Vec<SizePoint>> {
    let mut v = Vec::new();
    for &regime in regimes {
        for &size in sizes {
            let mut cfg = bases.get(regime).clone();
            cfg.workload.req_size = size;
            if resp == RespSizes::Same {
                cfg.workload.resp_size = size;
            }
            // A ring too small for the credits is a skipped point, as in
            // the credit sweep; everything else must pass now.
            if let Ok((fitted, _)) = bases.resolve(&cfg) {
                fitted.validate(env).with_context(|| {
                    format!(
                        "--msg-sizes {} ({size} B) in regime {}",
                        size_text(size),
                        regime.name()
                    )
                })?;
            }
            v.push(SizePoint { regime, size, cfg });
        }
    }
    Ok(v)
}

/// A point's row: [`Point::to_json`] with the sizes first.
pub(super) fn size_row(point: &Point, req: u64, resp: u64) -> Value {
    let mut row = json!({"req_size": req, "resp_size": resp});
    merge(&mut row, &point.to_json());
    row
}

/// The size sweep's table: size, response size, regime (JSON and CSV key
/// `mode`), credits, then the latency, rate and loss columns.
pub(super) fn size_columns() -> Vec<Column> {
    let mut cols = vec![
        Column {
            head: "size",
            width: 6,
            cell: |r| r["req_size"].as_u64().map_or("-".into(), size_text),
        },
        Column {
            head: "resp",
            width: 6,
            cell: |r| r["resp_size"].as_u64().map_or("-".into(), size_text),
        },
        Column {
            head: "regime",
            width: 8,
            cell: |r| text(r, "mode"),
        },
        Column {
            head: "credits",
            width: 7,
            cell: |r| text(r, "credits"),
        },
    ];
    for head in [
        "p50 us",
        "p99 us",
        "p99.9 us",
        "Mrps",
        "Gbps",
        "loss rate",
        "lost",
        "retx",
        "failed",
    ] {
        cols.extend(METRICS.iter().filter(|c| c.head == head).copied());
    }
    cols
}

/// `rpc-bench sweep --msg-sizes`.
pub(super) fn size_sweep_cmd(a: &SweepArgs, sizes: &[u64]) -> anyhow::Result<()> {
    let regimes = parse_regimes(&a.regimes)?;
    let mut bases = load_bases(&a.cfg, None, &a.regime_sets, &regimes)?;
    let base = bases.common.clone();
    let plan = plan(
        &bases,
        &regimes,
        sizes,
        a.resp_sizes,
        &ValidationEnv::detect(),
    )?;
    bases.measure_link(&a.measure, "rpc-bench sweep")?;
    let bdp = bases.shared()?.bdp;
    let probes = probes_for(&base, &a.out.qdisc);
    warn_bypassed(&base, &probes);
    let list: Vec<String> = sizes.iter().map(|s| size_text(*s)).collect();
    eprintln!(
        "rpc-bench sweep: request sizes {} ; {}",
        list.join(","),
        describe(&base)
    );
    let mut sink = Sink::new(&a.out, &size_columns(), &["req_size", "resp_size", "mode"])?;
    let resp = match a.resp_sizes {
        RespSizes::Config => format!("{} B responses", base.workload.resp_size),
        RespSizes::Same => "responses as large as the requests".into(),
    };
    sink.say(&format!(
        "message-size sweep: {} over {}, {resp}, window {} per session, {} s per point",
        base.workload.kind.as_str(),
        link_name(&base),
        base.window(),
        base.workload.seconds
    ))?;
    sink.say(&bdp_line(&bdp, base.link.mtu))?;
    let total = plan.len();
    let outcome = run_points(
        total,
        |i| {
            let p = &plan[i];
            let label = format!(
                "[{}/{total}] {} {}",
                i + 1,
                p.regime.name(),
                size_text(p.size)
            );
            let point = run_point(p.regime, &p.cfg, bases.resolve(&p.cfg), &probes, &label);
            Done {
                row: size_row(&point, p.size, p.cfg.workload.resp_size),
                point,
                label: format!("{} {}", p.regime.name(), size_text(p.size)),
            }
        },
        crate::run::child::interrupted,
        &mut sink,
    )?;
    let context = format!(
        "{} over {}, {resp}",
        base.workload.kind.as_str(),
        link_name(&base)
    );
    conclude(
        "sweep",
        "msg_size",
        &outcome,
        &mut sink,
        &a.out,
        &base,
        |done, sink| match &a.out.plot {
            Some(p) => plot_sizes(p, done, &context, sink),
            None => Ok(()),
        },
    )
}

/// Series by regime from the rows: (request size, `y(row)`) where both are
/// numbers; `name` makes the series name from the regime's.
fn series(
    done: &[Done],
    name: impl Fn(&str) -> String,
    y: impl Fn(&Value) -> Option<f64>,
) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut out: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for p in Regime::ALL {
        let pts: Vec<(f64, f64)> = done
            .iter()
            .filter(|d| d.point.regime == p && d.point.result.is_ok())
            .filter_map(|d| Some((d.row["req_size"].as_f64()?, y(&d.row)?)))
            .collect();
        if !pts.is_empty() {
            out.push((name(p.name()), pts));
        }
    }
    out
}

/// Latency (p50 and p99 per regime, log scale) in `path`, goodput in
/// `path`-goodput.svg, both against the request size (log x).
pub(super) fn plot_sizes(
    path: &Path,
    done: &[Done],
    context: &str,
    sink: &mut Sink,
) -> anyhow::Result<()> {
    let us = |key: &'static str| move |r: &Value| r[key].as_f64().filter(|us| *us > 0.0);
    let mut lat = series(done, |m| format!("{m} p50"), us("p50_us"));
    lat.extend(series(done, |m| format!("{m} p99"), us("p99_us")));
    let goodput = series(done, str::to_string, |r| r["gbps"].as_f64());
    let lat_refs: Vec<(&str, Vec<(f64, f64)>)> =
        lat.iter().map(|(n, p)| (n.as_str(), p.clone())).collect();
    let lat_file = path.to_path_buf();
    apps::report::plot::plot_xy_log_y(
        &lat_file,
        &format!("latency by request size: {context}"),
        "request size (B)",
        "latency (us, log scale)",
        &lat_refs,
        true,
    )?;
    sink.say(&format!("plot: {}", lat_file.display()))?;
    let gp_refs: Vec<(&str, Vec<(f64, f64)>)> = goodput
        .iter()
        .map(|(n, p)| (n.as_str(), p.clone()))
        .collect();
    let gp_file = sibling(path, SIZE_PLOT_SUFFIXES[0]);
    apps::report::plot::plot_xy(
        &gp_file,
        &format!("goodput by request size: {context}"),
        "request size (B)",
        "goodput, request + response payload (Gb/s)",
        &gp_refs,
        true,
    )?;
    sink.say(&format!("plot: {}", gp_file.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stream::tests::{fake_point, fake_report};
    use crate::compare::sweep_args::parse_msg_size;
    use clap::{Args as _, Command, FromArgMatches as _};

    fn parse(args: &[&str]) -> Result<SweepArgs, String> {
        let m = SweepArgs::augment_args(Command::new("sweep"))
            .try_get_matches_from(args)
            .map_err(|e| e.to_string())?;
        SweepArgs::from_arg_matches(&m).map_err(|e| e.to_string())
    }

    #[test]
    fn msg_sizes_take_suffixes() {
        let a = parse(&["sweep", "--msg-sizes", "32,1k,4K,64KiB,1M,8M"]).unwrap();
        assert_eq!(
            a.msg_sizes,
            Some(vec![32, 1024, 4096, 65536, 1 << 20, 8 << 20])
        );
        assert_eq!(a.resp_sizes, RespSizes::Config);
        let a = parse(&["sweep", "--msg-sizes=4k", "--resp-sizes=same"]).unwrap();
        assert_eq!(a.resp_sizes, RespSizes::Same);
        // No --msg-sizes: the credit sweep, as before.
        assert_eq!(parse(&["sweep"]).unwrap().msg_sizes, None);
    }

    #[test]
    fn bad_msg_sizes_are_named() {
        for (args, names) in [
            (
                &["sweep", "--msg-sizes", "32,abc"][..],
                &["--msg-sizes", "\"abc\""][..],
            ),
            (
                &["sweep", "--msg-sizes", "0"],
                &["--msg-sizes", "at least 1 byte"],
            ),
            (
                &["sweep", "--msg-sizes", "32,,64"],
                &["--msg-sizes", "\"\""],
            ),
            (
                &["sweep", "--msg-sizes", "5G"],
                &["--msg-sizes", "over 4 GiB"],
            ),
            (
                &["sweep", "--msg-sizes", "32", "--credits", "1x"],
                &["--msg-sizes", "--credits"],
            ),
            (&["sweep", "--resp-sizes", "same"], &["--msg-sizes"]),
        ] {
            let e = parse(args).map(|_| ()).unwrap_err();
            for n in names {
                assert!(e.contains(n), "{args:?}: {n} not in {e}");
            }
        }
        assert_eq!(parse_msg_size("1"), Ok(1));
        assert!(parse_msg_size("1.5k").unwrap_err().contains("not a size"));
    }

    #[test]
    fn sizes_print_as_typed() {
        assert_eq!(size_text(32), "32");
        assert_eq!(size_text(1024), "1k");
        assert_eq!(size_text(65536), "64k");
        assert_eq!(size_text(8 << 20), "8M");
        assert_eq!(size_text(1536), "1536");
        assert_eq!(size_text(1000), "1000");
    }

    /// The bases `sweep` derives from `--set` items (memif, no DPDK).
    fn bases(sets: &[&str]) -> Bases {
        let args = apps::config::cli::ConfigArgs {
            set: sets.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        load_bases(&args, None, &RegimeOverrides::default(), &Regime::ALL).unwrap()
    }

    #[test]
    fn every_point_is_validated_before_the_first_run() {
        let env = ValidationEnv { online_cores: 2 };
        let b = bases(&[]);
        let regimes = [Regime::Lossy, Regime::Lossless];
        // 8 MiB is the default transport.max_msg_size: it fits.
        let p = plan(&b, &regimes, &[32, 8 << 20], RespSizes::Config, &env).unwrap();
        let got: Vec<(Regime, u64, u64)> = p
            .iter()
            .map(|s| (s.regime, s.cfg.workload.req_size, s.cfg.workload.resp_size))
            .collect();
        assert_eq!(
            got,
            vec![
                (Regime::Lossy, 32, 32),
                (Regime::Lossy, 8 << 20, 32),
                (Regime::Lossless, 32, 32),
                (Regime::Lossless, 8 << 20, 32)
            ]
        );
        let p = plan(&b, &regimes[..1], &[4096], RespSizes::Same, &env).unwrap();
        assert_eq!(p[0].cfg.workload.resp_size, 4096);
        // One size past the limit refuses the whole sweep, naming it.
        let e = plan(&b, &regimes, &[32, 16 << 20], RespSizes::Config, &env).unwrap_err();
        let m = format!("{e:#}");
        assert!(
            m.contains("--msg-sizes 16M") && m.contains("regime lossy"),
            "{m}"
        );
        assert!(m.contains("transport.max_msg_size"), "{m}");
        let b = bases(&["transport.max_msg_size=1024"]);
        let e = plan(&b, &regimes, &[4096], RespSizes::Config, &env).unwrap_err();
        assert!(format!("{e:#}").contains("workload.req_size"), "{e:#}");
    }

    #[test]
    fn rows_carry_the_sizes_and_the_table_shows_them() {
        let point = fake_point(Regime::Lossy, Ok(fake_report(4096, 1000, 12)));
        let row = size_row(&point, 4096, 32);
        assert_eq!(row["req_size"], 4096);
        assert_eq!(row["resp_size"], 32);
        assert_eq!(row["mode"], "lossy");
        assert_eq!(row["mrps"].as_f64(), Some(0.001));
        // 1000 RPCs x (4096 + 32) B x 8 in one second.
        let gbps = row["gbps"].as_f64().unwrap();
        assert!((gbps - 1000.0 * 4128.0 * 8.0 / 1e9).abs() < 1e-12, "{gbps}");
        let cols = size_columns();
        let heads: Vec<&str> = cols.iter().map(|c| c.head).collect();
        assert_eq!(
            heads,
            [
                "size",
                "resp",
                "regime",
                "credits",
                "p50 us",
                "p99 us",
                "p99.9 us",
                "Mrps",
                "Gbps",
                "loss rate",
                "lost",
                "retx",
                "failed"
            ]
        );
        let cells: Vec<String> = cols.iter().map(|c| (c.cell)(&row)).collect();
        assert_eq!(&cells[..4], ["4k", "32", "lossy", "36"]);
        assert!(cells[4].starts_with("12."), "p50 {cells:?}");
        assert_eq!(cells[7], "0.0010");
        // A refused point: sizes still shown, results dashed.
        let bad = size_row(&fake_point(Regime::Lossy, Err("skipped".into())), 32, 32);
        let cells: Vec<String> = cols.iter().map(|c| (c.cell)(&bad)).collect();
        assert_eq!(cells[0], "32");
        assert_eq!(cells[4], "-");
    }

    #[test]
    fn the_plots_are_written_by_size() {
        let dir = std::env::temp_dir();
        let path = dir.join(format!("rpc-size-sweep-{}.svg", std::process::id()));
        let done: Vec<Done> = [(32u64, 5u64), (4096, 9), (1 << 20, 400)]
            .iter()
            .map(|&(size, us)| {
                let point = fake_point(Regime::Lossy, Ok(fake_report(size, 100, us)));
                Done {
                    row: size_row(&point, size, 32),
                    point,
                    label: size_text(size),
                }
            })
            .collect();
        let human = crate::compare::stream::tests::Shared::default();
        let mut sink = Sink::with_writers(
            &[],
            Box::new(human.clone()),
            Box::new(std::io::sink()),
            None,
            false,
        );
        plot_sizes(&path, &done, "test", &mut sink).unwrap();
        let goodput = sibling(&path, "goodput");
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(
            svg.contains("lossy p99") && svg.contains("log scale"),
            "latency plot"
        );
        assert!(std::fs::read_to_string(&goodput).unwrap().contains("Gb/s"));
        assert_eq!(human.text().lines().count(), 2, "{}", human.text());
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(&goodput).unwrap();
    }
}
