//! One measured run (per-regime configurations, ring fitting, a
//! server+client pair with qdisc probes) and `rpc-bench compare`, whose
//! output follows [`apps::report::output`]: tables on stdout (stderr with
//! `--json`), one JSON object keyed by regime, each regime stamped with its
//! own configuration, and a CSV row per regime written as the regime's run
//! finishes. Ctrl-C stops the running regime (its numbers are discarded)
//! and reports the ones that finished, `"interrupted": true` in the JSON.

use super::probes::*;
use super::regimes::*;
use super::report::*;
use super::tc::*;
use crate::measure::bdp::resolve_pair;
use crate::measure::link::{measure_once, HARNESS_PINGS};
use crate::run::bench;
use anyhow::{bail, Context};
use apps::config::cli::ConfigArgs;
use apps::config::{Config, ConfigError, FlowMode, ValidationEnv};
use apps::report::{output, render_columns, Report};
use clap::Args;
use engine::config::Resolved;
use serde_json::{json, Value};
use std::path::PathBuf;

// ------------------------------------------------------------ one run

/// Runs one server+client pair on `cfg` (validated here) and returns its
/// report with the qdisc drops of `probes` and the drop-source summary.
pub fn measure(cfg: &Config, probes: &[QdiscProbe]) -> anyhow::Result<Report> {
    cfg.validate(&ValidationEnv::detect())?;
    let mut cfg = cfg.clone();
    bench::isolate(&mut cfg);
    let before: Vec<_> = probes.iter().map(QdiscProbe::read).collect();
    let steal0 = cpu_steal();
    let result = bench::run_pair(&cfg);
    let steal1 = cpu_steal();
    let after: Vec<_> = probes.iter().map(QdiscProbe::read).collect();
    let mut rep = result?;
    if let (Some((s0, t0)), Some((s1, t1))) = (steal0, steal1) {
        if t1 > t0 {
            let pct = 100.0 * s1.saturating_sub(s0) as f64 / (t1 - t0) as f64;
            rep.extra.insert("cpu_steal_pct".into(), json!(pct));
        }
    }
    let mut seen = Vec::new();
    for ((p, b), a) in probes.iter().zip(before).zip(after) {
        let (Some(b), Some(a)) = (b, a) else {
            continue;
        };
        let delta = |f: fn(&QdiscStats) -> u64| root_sum(&a, f).saturating_sub(root_sum(&b, f));
        let dropped = delta(|q| q.dropped);
        rep.add_drops(
            if p.own_egress {
                QDISC_SENDER
            } else {
                QDISC_SWITCH
            },
            dropped,
        );
        let kinds: Vec<&str> = a
            .iter()
            .filter(|q| q.root)
            .map(|q| q.kind.as_str())
            .collect();
        seen.push(json!({
            "dev": p.label(), "qdisc": kinds.join(","), "own_egress": p.own_egress,
            "dropped": dropped, "sent_pkts": delta(|q| q.sent_pkts),
            "overlimits": delta(|q| q.overlimits),
        }));
    }
    if !seen.is_empty() {
        rep.extra.insert("qdisc".into(), Value::Array(seen));
    }
    annotate(&cfg, &mut rep);
    Ok(rep)
}

// ------------------------------------------------------------ compare

/// How `compare`, `sweep` and `incast` measure the link: once per
/// invocation, with the raw floor `run` uses, so every regime's credits
/// come from one measurement.
#[derive(Args, Clone, Debug, Default)]
pub struct MeasureArgs {
    /// Skip the raw floor: every regime's BDP then comes from the config's
    /// transport.link_gbps x transport.rtt_us (10 Gb/s x 10 us = 9
    /// credits at 1500 B with the defaults) instead of the link.
    #[arg(long)]
    pub no_floor: bool,
    /// Pings per frame size for the floor measured before the runs.
    #[arg(long, value_name = "N", default_value_t = HARNESS_PINGS)]
    pub floor_pings: u64,
}

#[derive(Args, Clone, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    pub cfg: ConfigArgs,
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// Give every regime the same credits, the lossless regime's (1 x BDP),
    /// so the runs differ in the rest of each regime alone (flow mode,
    /// retransmission); `--credits N` fixes them to N in every regime
    /// instead.
    #[arg(long)]
    pub same_credits: bool,
    /// Regimes to run, comma-separated, in this order: lossless (credits =
    /// BDP, ring reserved), pause (pause frames, credits = multiple x BDP),
    /// lossy (credits = multiple x BDP), irn (credits = BDP, selective
    /// retransmission).
    #[arg(
        long,
        visible_alias = "modes",
        value_delimiter = ',',
        default_value = "lossless,lossy"
    )]
    pub regimes: Vec<String>,
    #[command(flatten)]
    pub regime_sets: RegimeOverrides,
    /// Credits of pause and lossy as a multiple of the BDP, or "unbounded"
    /// (shortcut for --set transport.lossy_credit_multiple=X; irn stays at 1).
    #[arg(long, value_name = "X")]
    pub multiple: Option<String>,
    /// Read drops of this device's qdisc, DEV or DEV@NETNS (repeatable).
    /// Default on af_packet: the server's interface, and the switch port of
    /// `scripts/veth.sh up IFACE --switch` when there is one.
    #[arg(long = "qdisc", value_name = "DEV[@NETNS]")]
    pub qdisc: Vec<String>,
    /// Print one JSON object keyed by regime ({"lossless": {...}, "lossy":
    /// {...}}, each stamped with the build, host and that regime's config) as
    /// the only line on stdout (the tables go to stderr).
    #[arg(long)]
    pub json: bool,
    /// Draw every regime's latency distribution (log latency axis) on one
    /// SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Write one CSV row per regime (its summary's scalar fields), each as
    /// soon as the regime's run ends.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Print no tables (errors and progress lines still go to stderr): with
    /// --json, the JSON line alone.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// The run configuration as loaded (`common`), and per regime: the regime
/// on top of it, then that regime's own overrides; and the link as
/// measured once for the whole invocation.
#[derive(Clone, Debug)]
pub struct Bases {
    pub common: Config,
    /// Indexed like [`Regime::ALL`]: every regime is derived, run or not.
    pub(super) per_regime: Vec<Config>,
    /// The raw floor measured before the runs (`None`: not measured).
    pub floor: Option<Value>,
}

impl Bases {
    pub fn get(&self, r: Regime) -> &Config {
        &self.per_regime[r as usize]
    }

    /// Applies `f` to every configuration.
    pub(super) fn each(&mut self, f: impl Fn(&mut Config)) {
        f(&mut self.common);
        self.per_regime.iter_mut().for_each(f);
    }

    /// `cfg` (a base, perhaps with a point's changes) resolved for a pair
    /// of this tool's own on the measured link: the config its processes
    /// run and the resolution.
    pub fn resolve(&self, cfg: &Config) -> Result<(Config, Resolved), ConfigError> {
        resolve_pair(cfg, self.floor.as_ref())
    }

    /// As [`Self::resolve`] on the configured ring, never grown (incast:
    /// lossless sessions share it).
    pub fn resolve_on_ring(&self, cfg: &Config) -> Result<(Config, Resolved), ConfigError> {
        crate::measure::bdp::resolve_pair_on_ring(cfg, self.floor.as_ref())
    }

    /// Measures the link, once, before every regime's run (after every
    /// configuration was checked, so a bad one fails before any process
    /// starts): the BDP each regime's credits derive from.
    pub fn measure_link(&mut self, m: &MeasureArgs, tool: &str) -> anyhow::Result<()> {
        let mut floor_cfg = self.common.clone();
        bench::isolate(&mut floor_cfg);
        self.floor = measure_once(&floor_cfg, m.no_floor, m.floor_pings, true, tool)?;
        Ok(())
    }

    /// The resolution of the shared configuration: the BDP every regime's
    /// credits come from.
    pub fn shared(&self) -> Result<Resolved, ConfigError> {
        Ok(self.resolve(&self.common)?.1)
    }

    /// Gives every regime the lossless regime's resolved credits (unless
    /// the user gave credits, which every regime takes already).
    pub(super) fn same_credits(&mut self) -> Result<u16, ConfigError> {
        let lossless = self.resolve(self.get(Regime::Lossless))?.1.credits();
        if !self.common.origins.given("transport.credits") {
            self.each(|c| {
                c.transport.credits = Some(lossless);
                c.origins
                    .set("transport.credits", apps::config::Source::Derived);
            });
        }
        Ok(lossless)
    }
}

pub(super) fn load_bases(
    cfg: &ConfigArgs,
    multiple: Option<&str>,
    sets: &RegimeOverrides,
    running: &[Regime],
) -> anyhow::Result<Bases> {
    sets.check(running)?;
    let mut args = cfg.clone();
    if let Some(m) = multiple {
        // First among the --set overrides, so an explicit --set still wins.
        args.set
            .insert(0, format!("transport.lossy_credit_multiple={m}"));
    }
    let common = Config::load(args.config.as_deref(), &args.overrides())?;
    let mut per_regime = Vec::new();
    for r in Regime::ALL {
        let c = r
            .apply(&common)
            .with_overrides(&sets.for_regime(r)?)
            .with_context(|| format!("the {} regime's overrides", r.name()))?;
        per_regime.push(c);
    }
    // Each run's configuration is validated before it runs; check the
    // parts common to all now (a lossless check of the user's credits
    // would reject what the lossy runs are for).
    for_flow_mode(&common, FlowMode::Lossy, common.transport.credits)
        .validate_pair(&ValidationEnv::detect())?;
    bench::preflight(&common)?;
    if common.workload.warmup_seconds > common.workload.seconds {
        eprintln!("rpc-bench: note: the warm-up is longer than the measured interval");
    }
    Ok(Bases {
        common,
        per_regime,
        floor: None,
    })
}

/// `rpc-bench compare`: the same workload in each regime of `--regimes`.
pub fn compare_cmd(a: &CompareArgs) -> anyhow::Result<()> {
    // Output paths before anything starts: a typo fails at once.
    if let Some(p) = &a.plot {
        output::check_plot("--plot", p)?;
    }
    if let Some(p) = &a.csv {
        output::check_writable("--csv", p)?;
    }
    crate::run::child::install_signal_handlers();
    let regimes = parse_regimes(&a.regimes)?;
    let mut bases = load_bases(&a.cfg, a.multiple.as_deref(), &a.regime_sets, &regimes)?;
    // Every regime resolves before the link is measured too: a refusal
    // fails before any process starts.
    for p in &regimes {
        bases
            .resolve(bases.get(*p))
            .with_context(|| format!("{} configuration", p.name()))?;
    }
    bases.measure_link(&a.measure, "rpc-bench compare")?;
    if a.same_credits {
        let c = bases.same_credits()?;
        eprintln!("rpc-bench compare: --same-credits: every regime at {c} credits");
    }
    let base = bases.common.clone();
    let shared = bases.shared()?;
    // Every regime resolved on the one measurement, before any runs: a
    // lossless BDP the ring cannot back fails here.
    let mut runs: Vec<(Regime, Config, Resolved)> = Vec::new();
    for p in &regimes {
        let (cfg, r) = bases
            .resolve(bases.get(*p))
            .with_context(|| format!("{} configuration", p.name()))?;
        runs.push((*p, cfg, r));
    }
    let probes = probes_for(&base, &a.qdisc);
    warn_bypassed(&base, &probes);
    eprintln!("rpc-bench compare: {}", describe(&base));
    eprintln!("  {}", bdp_line(&shared.bdp, base.link.mtu));
    for (p, _, r) in &runs {
        eprintln!("  {}", regime_line(p.name(), bases.get(*p), r));
    }
    if !probes.is_empty() {
        let names: Vec<String> = probes.iter().map(QdiscProbe::label).collect();
        eprintln!("  qdisc drops read on: {}", names.join(", "));
    }
    let mut csv = match &a.csv {
        Some(p) => Some(output::CsvRows::create(p, output::CSV_LEADING)?),
        None => None,
    };
    let mut reports = Vec::new();
    let mut by_regime = Vec::new();
    for (p, cfg, r) in &runs {
        if crate::run::child::interrupted() {
            break;
        }
        eprintln!(
            "rpc-bench compare: {} run, {} credits",
            p.name(),
            r.credits()
        );
        let result = measure(cfg, &probes);
        if crate::run::child::interrupted() {
            // Stopped mid-run: its numbers cover part of the interval.
            eprintln!(
                "rpc-bench compare: {}: interrupted: the pair was stopped, the run is discarded",
                p.name()
            );
            break;
        }
        let mut rep = result.with_context(|| format!("{} run", p.name()))?;
        // The column and the JSON key (and the JSON's `mode`): the regime
        // (irn runs in flow mode lossy).
        rep.mode = p.name().to_string();
        rep.extra.insert("credits".into(), r.credits().into());
        rep.extra.insert(
            "credits_source".into(),
            credits_source(bases.get(*p), r).into(),
        );
        rep.extra.insert("bdp_credits".into(), r.bdp.packets.into());
        rep.extra
            .insert("bdp_source".into(), r.bdp.source.as_str().into());
        let v = regime_json(&rep, cfg);
        if let Some(w) = csv.as_mut() {
            w.push(&output::flat_row(&v))?;
        }
        by_regime.push((rep.mode.clone(), v));
        reports.push(rep);
    }
    let interrupted = crate::run::child::interrupted();
    if reports.is_empty() {
        // Only an interrupt ends the loop before the first regime's report.
        eprintln!("rpc-bench compare: interrupted before a regime finished: nothing to report");
        return Ok(());
    }
    let refs: Vec<&Report> = reports.iter().collect();
    let tables = [
        render_columns(&refs),
        render_drop_sources(&refs),
        render_recovery(&refs),
    ];
    if !a.quiet {
        output::print_human(a.json, &format!("\n{}", tables.concat()));
    }
    if interrupted {
        eprintln!(
            "rpc-bench compare: interrupted: {} of {} regimes finished",
            reports.len(),
            runs.len()
        );
    }
    if let Some(path) = &a.plot {
        let label = |(p, _, r): &(Regime, Config, Resolved)| (p.name(), r.credits());
        let title: Vec<String> = runs[..reports.len()]
            .iter()
            .map(label)
            .map(|(n, c)| format!("{n} ({c} credits)"))
            .collect();
        let names: Vec<String> = runs
            .iter()
            .map(label)
            .map(|(n, c)| format!("{n}, {c} credits"))
            .collect();
        let series: Vec<(&str, &apps::measure::hist::LatencyHist)> = names
            .iter()
            .zip(&reports)
            .map(|(n, r)| (n.as_str(), &r.latency))
            .collect();
        let (workload, link) = (&reports[0].workload, &reports[0].link);
        apps::report::plot::plot_latency_percentiles(
            path,
            &format!("{workload} over {link}: {}", title.join(" vs ")),
            &series,
        )?;
        eprintln!("latency plot: {}", path.display());
    }
    if a.json {
        let mut v = json_by_regime(&by_regime);
        if interrupted {
            // Beside the regimes' objects, only when cut short.
            v["interrupted"] = true.into();
        }
        output::print_stdout(&format!("{v}\n"));
    }
    let bad: Vec<String> = reports
        .iter()
        .filter(|r| !clean(r))
        .map(|r| format!("{}: {} failed", r.mode, r.failed))
        .collect();
    if !bad.is_empty() {
        bail!("runs with failures: {}", bad.join("; "));
    }
    Ok(())
}

/// Runs `given` (`regime`'s config, with the point's changes) as one
/// point, resolved on the measured link by `resolution` (the ring grown
/// to back lossless credits and pause headroom, or not): a resolution
/// that refuses it is a skipped point.
pub(super) fn run_point(
    regime: Regime,
    given: &Config,
    resolution: Result<(Config, Resolved), ConfigError>,
    probes: &[QdiscProbe],
    label: &str,
) -> Point {
    let mut point = Point {
        regime,
        credits: 0,
        credits_from: String::new(),
        bdp: 0,
        sessions: given.workload.sessions_per_thread,
        rx_desc: given.link.rx_desc,
        note: None,
        result: Err(String::new()),
    };
    let (cfg, r) = match resolution {
        Ok(x) => x,
        Err(why) => {
            eprintln!("rpc-bench: {label}: skipped: {why}");
            point.result = Err(format!("skipped: {why}"));
            return point;
        }
    };
    point.credits = r.credits();
    point.credits_from = credits_source(given, &r);
    point.bdp = r.bdp.packets;
    point.rx_desc = cfg.link.rx_desc;
    if let Some(s) = r.setting("link.rx_desc") {
        let n = format!("link.rx_desc raised to {} to back the credits", s.value);
        eprintln!("rpc-bench: {label}: {n}");
        point.note = Some(n);
    }
    let bdp = point.bdp;
    eprintln!(
        "rpc-bench: {label}: {} credits ({:.2} x BDP), rx_desc {}",
        point.credits,
        multiple(point.credits, bdp),
        point.rx_desc
    );
    point.result = measure(&cfg, probes).map_err(|e| format!("{e:#}"));
    if let Err(e) = &point.result {
        eprintln!("rpc-bench: {label}: failed: {e}");
    }
    point
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ring resolution grew `rx_desc` to for a pair of ours, if any.
    fn fit_ring(c: &Config) -> Result<Option<u32>, String> {
        let (run, r) = resolve_pair(c, None).map_err(|e| e.to_string())?;
        Ok(r.setting("link.rx_desc").map(|_| run.link.rx_desc))
    }

    #[test]
    fn lossless_rings_grow_with_credits() {
        let own = Config::default();
        let mut c = for_flow_mode(&own, FlowMode::Lossless, Some(300));
        c.link.rx_desc = 256;
        c.workload.sessions_per_thread = 4;
        assert_eq!(fit_ring(&c), Ok(Some(2048)));
        let (run, _) = resolve_pair(&c, None).unwrap();
        assert!(run.validate(&ValidationEnv { online_cores: 2 }).is_ok());
        let mut c = for_flow_mode(&own, FlowMode::Lossless, Some(60000));
        c.workload.sessions_per_thread = 2;
        assert!(fit_ring(&c).unwrap_err().contains("link.rx_desc <= 16384"));
        let lossy = for_flow_mode(&Config::default(), FlowMode::Lossy, Some(60000));
        assert_eq!(fit_ring(&lossy), Ok(None));
    }

    #[test]
    fn pause_rings_grow_to_hold_the_headroom() {
        // Headroom 2 x 9 + 32 = 50 entries: 52 do not fit 32, fit 64.
        let mut c = for_flow_mode(&Config::default(), FlowMode::Pause, None);
        c.link.rx_desc = 32;
        assert!(c.validate(&ValidationEnv { online_cores: 2 }).is_err());
        assert_eq!(fit_ring(&c), Ok(Some(64)));
        let (run, _) = resolve_pair(&c, None).unwrap();
        assert!(run.validate(&ValidationEnv { online_cores: 2 }).is_ok());
        assert_eq!(fit_ring(&run), Ok(None));
        // Explicit thresholds are the user's: resolution names them instead.
        c.transport.pause_xoff = Some(16);
        assert!(fit_ring(&c).unwrap_err().contains("transport.pause_xoff"));
    }

    #[test]
    fn every_regime_takes_its_credits_from_one_measurement() {
        let floor = json!({"train_gbps_mtu": 52.87, "stream_gbps_mtu": 91.6,
                           "burst_rtt_p50_us_mtu": 16.6});
        let common = Config::default();
        let bases = Bases {
            per_regime: Regime::ALL.iter().map(|p| p.apply(&common)).collect(),
            common,
            floor: Some(floor),
        };
        let credits = |p| bases.resolve(bases.get(p)).unwrap().1.credits();
        assert_eq!(credits(Regime::Lossless), 74);
        assert_eq!(credits(Regime::Lossy), 4 * 74);
        assert_eq!(credits(Regime::Pause), 4 * 74);
        assert_eq!(credits(Regime::Irn), 74);
        // --same-credits: the lossless regime's, everywhere.
        let mut same = bases.clone();
        assert_eq!(same.same_credits().unwrap(), 74);
        for p in Regime::ALL {
            assert_eq!(same.resolve(same.get(p)).unwrap().1.credits(), 74, "{p:?}");
        }
        // Not measured: the config's BDP, said so.
        let unmeasured = Bases {
            floor: None,
            ..bases
        };
        let r = unmeasured.shared().unwrap();
        assert_eq!(r.bdp.packets, 9);
        assert_eq!(r.bdp.why, "nothing measured in this run");
    }
}
