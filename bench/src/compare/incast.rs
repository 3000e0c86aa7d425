//! `rpc-bench incast`: N sessions of one client thread converging on one
//! server thread, in each regime of `--regimes`. Points are written as they
//! finish ([`super::stream`]).

use super::probes::*;
use super::regimes::*;
use super::report::*;
use super::run::*;
use super::stream::*;
use super::sweep::*;
use apps::config::cli::ConfigArgs;
use clap::Args;

// ------------------------------------------------------------ incast

#[derive(Args, Clone, Debug)]
pub struct IncastArgs {
    #[command(flatten)]
    pub cfg: ConfigArgs,
    /// Fan-in values: sessions converging on server worker 0, all
    /// multiplexed by one client thread (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 2, 4, 8, 16])]
    pub fan_in: Vec<u32>,
    /// Regimes, comma-separated (lossless, pause, lossy, irn: the base
    /// configuration of each point).
    #[arg(
        long,
        visible_alias = "modes",
        value_delimiter = ',',
        default_value = "lossless,lossy"
    )]
    pub regimes: Vec<String>,
    #[command(flatten)]
    pub regime_sets: RegimeOverrides,
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// Credits of pause and lossy as a multiple of the BDP, or "unbounded".
    #[arg(long, value_name = "X")]
    pub multiple: Option<String>,
    #[command(flatten)]
    pub out: PointsOut,
}

/// `rpc-bench incast`: fan-in sessions to one server worker, in each
/// regime.
pub fn incast_cmd(a: &IncastArgs) -> anyhow::Result<()> {
    crate::run::child::install_signal_handlers();
    a.out.check(&["p99", "loss"])?;
    let regimes = parse_regimes(&a.regimes)?;
    let mut bases = load_bases(&a.cfg, a.multiple.as_deref(), &a.regime_sets, &regimes)?;
    bases.measure_link(&a.measure, "rpc-bench incast")?;
    bases.each(|c| c.workload.kind = apps::config::WorkloadKind::Incast);
    let base = bases.common.clone();
    let bdp = bases.shared()?.bdp;
    let probes = probes_for(&base, &a.out.qdisc);
    warn_bypassed(&base, &probes);
    eprintln!(
        "rpc-bench incast: {} ; {} -> server worker 0 on core {}",
        describe(&base),
        a.fan_in
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(","),
        base.cores.server[0]
    );
    eprintln!("  {}", bdp_line(&bdp, base.link.mtu));
    let plan: Vec<(u32, Regime)> = a
        .fan_in
        .iter()
        .flat_map(|&n| regimes.iter().map(move |r| (n, *r)))
        .collect();
    let mut columns = INCAST_COLUMNS.to_vec();
    columns.extend_from_slice(METRICS);
    let mut sink = Sink::new(&a.out, &columns, &["sessions", "mode", "credits"])?;
    sink.say(&format!(
        "incast: {} session(s) of one client thread -> one server thread; {}",
        a.fan_in
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("/"),
        describe(&base)
    ))?;
    sink.say(&format!(
        "{}; lossless credits per session = min(BDP, rx_desc / sessions - 1)",
        bdp_line(&bdp, base.link.mtu)
    ))?;
    let total = plan.len();
    let outcome = run_points(
        total,
        |i| {
            let (n, regime) = plan[i];
            let label = format!("[{}/{total}] {} x {n}", i + 1, regime.name());
            let point = incast_point(&bases, regime, n, &probes, &label);
            Done {
                row: point.to_json(),
                point,
                label: format!("{} x {n}", regime.name()),
            }
        },
        crate::run::child::interrupted,
        &mut sink,
    )?;
    conclude(
        "incast",
        "fan_in",
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
                "sessions (fan-in)",
                |p| p.sessions as f64,
            )
        },
    )
}

/// The incast table: fan-in, regime, per-session credits, ring, then the
/// results (the regime's JSON and CSV key is `mode`).
const INCAST_COLUMNS: &[Column] = &[
    Column {
        head: "sessions",
        width: 8,
        cell: |r| text(r, "sessions"),
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
    Column {
        head: "rx_desc",
        width: 7,
        cell: |r| text(r, "rx_desc"),
    },
];

/// One incast point: `n` sessions on `regime`'s base, resolved on the
/// configured ring (lossless sessions share it: derived credits lowered to
/// min(BDP, rx_desc / n - 1)), or why it cannot run (not even one credit
/// each; a skipped point).
fn incast_point(
    bases: &Bases,
    regime: Regime,
    n: u32,
    probes: &[QdiscProbe],
    label: &str,
) -> Point {
    let mut cfg = bases.get(regime).clone();
    cfg.workload.sessions_per_thread = n.max(1);
    run_point(regime, &cfg, bases.resolve_on_ring(&cfg), probes, label)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::sweep_args::SweepArgs;
    use apps::config::{Config, ValidationEnv};

    #[test]
    fn incast_shares_the_ring_in_the_lossless_regime() {
        let mut common = Config::default();
        common.link.rx_desc = 64;
        common.workload.kind = apps::config::WorkloadKind::Incast;
        let bases = Bases {
            per_regime: Regime::ALL.iter().map(|p| p.apply(&common)).collect(),
            common,
            floor: None,
        };
        let credits = |p: Regime, n: u32| {
            let mut c = bases.get(p).clone();
            c.workload.sessions_per_thread = n;
            bases.resolve_on_ring(&c).map(|(run, r)| {
                assert_eq!(run.link.rx_desc, 64, "the ring is shared, not grown");
                assert!(run.validate(&ValidationEnv { online_cores: 2 }).is_ok());
                r.credits()
            })
        };
        assert_eq!(credits(Regime::Lossless, 1).unwrap(), 9);
        // 64 entries / 16 sessions = 4 each: 3 credits + the probe's entry.
        assert_eq!(credits(Regime::Lossless, 16).unwrap(), 3);
        assert!(credits(Regime::Lossless, 128).is_err());
        assert_eq!(credits(Regime::Lossy, 16).unwrap(), 36);
    }

    #[test]
    fn subcommand_flags_do_not_clash() {
        use clap::{Args as _, Command};
        // `sweep --credits LIST` renames the shared `--credits N` shortcut.
        for cmd in [
            CompareArgs::augment_args(Command::new("compare")),
            SweepArgs::augment_args(Command::new("sweep")),
            IncastArgs::augment_args(Command::new("incast")),
        ] {
            cmd.debug_assert();
        }
        let m = SweepArgs::augment_args(Command::new("sweep"))
            .try_get_matches_from(["sweep", "--credits", "1x,4x", "--regimes", "lossy,lossless"])
            .unwrap();
        use clap::FromArgMatches as _;
        let a = SweepArgs::from_arg_matches(&m).unwrap();
        assert_eq!(a.credit_list, "1x,4x");
        assert_eq!(a.cfg.credits, None);
        assert_eq!(a.regimes, vec!["lossy", "lossless"]);
        // compare: two regimes unless told, any overrides per regime.
        let parse = |args: &[&str]| {
            let m = CompareArgs::augment_args(Command::new("compare"))
                .try_get_matches_from(args)
                .unwrap();
            CompareArgs::from_arg_matches(&m).unwrap()
        };
        assert_eq!(parse(&["compare"]).regimes, vec!["lossless", "lossy"]);
        let a = parse(&[
            "compare",
            "--regimes=lossless,pause,lossy,irn",
            "--regime-set",
            "irn:transport.rto_low_us=200",
            "--regime-set=pause:transport.pause_time_us=50",
            "--lossless-set=transport.rto_us=100000",
        ]);
        assert_eq!(parse_regimes(&a.regimes).unwrap(), Regime::ALL);
        assert_eq!(
            a.regime_sets.for_regime(Regime::Pause).unwrap(),
            vec!["transport.pause_time_us=50"]
        );
        assert_eq!(a.regime_sets.lossless_set, vec!["transport.rto_us=100000"]);
        // The old spellings, --modes and --mode-set, are aliases: scripts
        // written for them run unchanged.
        let old = parse(&[
            "compare",
            "--modes=pause,irn",
            "--mode-set",
            "irn:transport.rto_low_us=200",
        ]);
        assert_eq!(old.regimes, vec!["pause", "irn"]);
        assert_eq!(
            old.regime_sets.for_regime(Regime::Irn).unwrap(),
            vec!["transport.rto_low_us=200"]
        );
        let m = SweepArgs::augment_args(Command::new("sweep"))
            .try_get_matches_from(["sweep", "--modes", "lossless"])
            .unwrap();
        assert_eq!(
            SweepArgs::from_arg_matches(&m).unwrap().regimes,
            vec!["lossless"]
        );
        let m = IncastArgs::augment_args(Command::new("incast"))
            .try_get_matches_from([
                "incast",
                "--modes=irn",
                "--mode-set=irn:transport.rto_us=900",
            ])
            .unwrap();
        let a = IncastArgs::from_arg_matches(&m).unwrap();
        assert_eq!(a.regimes, vec!["irn"]);
        assert_eq!(a.regime_sets.regime_set, vec!["irn:transport.rto_us=900"]);
    }
}
