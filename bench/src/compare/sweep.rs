//! `rpc-bench sweep`: one run per credit value (and regime); with
//! `--msg-sizes`, one per request size ([`super::size_sweep`]). Points are
//! written as they finish ([`super::stream`]).

use super::probes::*;
use super::regimes::*;
use super::report::*;
use super::run::*;
use super::size_sweep::*;
use super::stream::*;
use super::sweep_args::*;
use apps::config::{Config, Source};

/// The credit sweep's table: the point's regime (JSON and CSV key `mode`)
/// and credits, then the results.
const CREDIT_COLUMNS: &[Column] = &[
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
    Column {
        head: "x BDP",
        width: 6,
        cell: |r| fixed(r, "credits_x_bdp", 2),
    },
    Column {
        head: "rx_desc",
        width: 7,
        cell: |r| text(r, "rx_desc"),
    },
];

/// `rpc-bench sweep`: one run per credit value (and regime), or with
/// `--msg-sizes` one per request size (and regime).
pub fn sweep_cmd(a: &SweepArgs) -> anyhow::Result<()> {
    crate::run::child::install_signal_handlers();
    if let Some(sizes) = &a.msg_sizes {
        a.out.check(&SIZE_PLOT_SUFFIXES)?;
        return size_sweep_cmd(a, sizes);
    }
    a.out.check(&["p99", "loss"])?;
    let specs = parse_credit_list(&a.credit_list)?;
    let regimes = parse_regimes(&a.regimes)?;
    let mut bases = load_bases(&a.cfg, None, &a.regime_sets, &regimes)?;
    bases.measure_link(&a.measure, "rpc-bench sweep")?;
    let base = bases.common.clone();
    let bdp = bases.shared()?.bdp;
    let probes = probes_for(&base, &a.out.qdisc);
    warn_bypassed(&base, &probes);
    eprintln!("rpc-bench sweep: {}", describe(&base));
    eprintln!("  {}", bdp_line(&bdp, base.link.mtu));
    let plan: Vec<(Regime, CreditSpec)> = regimes
        .iter()
        .flat_map(|r| specs.iter().map(move |s| (*r, *s)))
        .collect();
    let mut columns = CREDIT_COLUMNS.to_vec();
    columns.extend_from_slice(METRICS);
    let mut sink = Sink::new(&a.out, &columns, &["mode", "credits", "credits_x_bdp"])?;
    sink.say(&format!(
        "credit sweep: {}",
        describe(&base).replacen(" (lossless)", "", 1)
    ))?;
    sink.say(&bdp_line(&bdp, base.link.mtu))?;
    let total = plan.len();
    let outcome = run_points(
        total,
        |i| {
            let (regime, spec) = plan[i];
            let mut cfg = bases.get(regime).clone();
            // The sweep's credits, multiples of the one measured BDP.
            cfg.transport.credits = Some(spec.resolve(bdp.packets));
            cfg.origins.set("transport.credits", Source::Flag);
            let label = format!("[{}/{total}] {}", i + 1, regime.name());
            let point = run_point(regime, &cfg, bases.resolve(&cfg), &probes, &label);
            let label = format!("{} {} credits", regime.name(), point.credits);
            Done {
                row: point.to_json(),
                point,
                label,
            }
        },
        crate::run::child::interrupted,
        &mut sink,
    )?;
    conclude(
        "sweep",
        "credits",
        &outcome,
        &mut sink,
        &a.out,
        &base,
        |done, _| {
            plot_done(
                a.out.plot.as_deref(),
                done,
                &base,
                bdp.packets,
                "credits",
                |p| p.credits as f64,
            )
        },
    )
}

/// Goodput, p99 and loss rate against `x` (credits, fan-in) when `--plot`
/// asked: the plots of the points' table.
pub(super) fn plot_done(
    path: Option<&std::path::Path>,
    done: &[Done],
    base: &Config,
    bdp: u16,
    x_label: &str,
    x: impl Fn(&Point) -> f64,
) -> anyhow::Result<()> {
    let Some(path) = path else {
        return Ok(());
    };
    let points: Vec<Point> = done.iter().map(|d| d.point.clone()).collect();
    let context = if base.workload.kind == apps::config::WorkloadKind::Incast {
        format!("incast over {}, one client thread", link_name(base))
    } else {
        format!(
            "{} over {}, BDP {bdp}",
            base.workload.kind.as_str(),
            link_name(base),
        )
    };
    plot_points(path, &points, &context, x_label, x, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credit_lists() {
        let v = parse_credit_list("0.5x, 1x,2X,16,64").unwrap();
        assert_eq!(
            v,
            vec![
                CreditSpec::Multiple(0.5),
                CreditSpec::Multiple(1.0),
                CreditSpec::Multiple(2.0),
                CreditSpec::Absolute(16),
                CreditSpec::Absolute(64)
            ]
        );
        assert_eq!(CreditSpec::Multiple(0.5).resolve(3), 2);
        assert_eq!(CreditSpec::Multiple(0.1).resolve(3), 1);
        assert_eq!(CreditSpec::Multiple(16.0).resolve(3), 48);
        assert_eq!(CreditSpec::Absolute(7).resolve(3), 7);
        for bad in ["", "0", "-1x", "abc", "0x", "70000"] {
            assert!(parse_credit_list(bad).is_err(), "{bad:?}");
        }
    }
}
