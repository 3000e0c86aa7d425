//! One measured run (per-mode configurations, ring fitting, a server+client
//! pair with qdisc probes) and `rpc-bench compare`, whose output follows
//! [`apps::report::output`]: tables on stdout (stderr with `--json`), one
//! JSON object keyed by mode, each mode stamped with its own configuration,
//! and a CSV row per mode written as the mode finishes.

use super::modes::*;
use super::probes::*;
use super::report::*;
use super::tc::*;
use crate::own_client::OwnClient;
use crate::run::bench;
use anyhow::{bail, Context};
use apps::config::cli::ConfigArgs;
use apps::config::{Config, Mode, ValidationEnv};
use apps::report::{output, render_columns, Report};
use clap::Args;
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

#[derive(Args, Clone, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    pub cfg: ConfigArgs,
    /// Modes to run, comma-separated, in this order: lossless (credits =
    /// BDP, ring reserved), pause (pause frames, credits = multiple x BDP),
    /// lossy (credits = multiple x BDP), irn (credits = BDP, selective
    /// retransmission).
    #[arg(long, value_delimiter = ',', default_value = "lossless,lossy")]
    pub modes: Vec<String>,
    #[command(flatten)]
    pub mode_sets: ModeOverrides,
    /// Credits of pause and lossy as a multiple of the BDP, or "unbounded"
    /// (shortcut for --set transport.lossy_credit_multiple=X; irn stays at 1).
    #[arg(long, value_name = "X")]
    pub multiple: Option<String>,
    /// Read drops of this device's qdisc, DEV or DEV@NETNS (repeatable).
    /// Default on af_packet: the server's interface, and the switch port of
    /// `scripts/veth.sh up IFACE --switch` when there is one.
    #[arg(long = "qdisc", value_name = "DEV[@NETNS]")]
    pub qdisc: Vec<String>,
    /// Print one JSON object keyed by mode ({"lossless": {...}, "lossy":
    /// {...}}, each stamped with the build, host and that mode's config) as
    /// the only line on stdout (the tables go to stderr).
    #[arg(long)]
    pub json: bool,
    /// Draw every mode's latency distribution (log latency axis) on one SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Write one CSV row per mode (its summary's scalar fields), each as
    /// soon as the mode's run ends.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
}

/// The run configuration as loaded (`common`), and per preset: the preset
/// on top of it, then that mode's own overrides.
#[derive(Clone, Debug)]
pub struct Bases {
    pub common: Config,
    /// Indexed like [`Preset::ALL`]: every preset is derived, run or not.
    per_preset: Vec<Config>,
}

impl Bases {
    pub fn get(&self, p: Preset) -> &Config {
        &self.per_preset[p as usize]
    }

    /// Applies `f` to every configuration.
    pub(super) fn each(&mut self, f: impl Fn(&mut Config)) {
        f(&mut self.common);
        self.per_preset.iter_mut().for_each(f);
    }

    /// Drops an explicit `transport.credits` (the modes choose credits);
    /// true when there was one.
    pub(super) fn clear_credits(&mut self) -> bool {
        let had = std::iter::once(&self.common)
            .chain(&self.per_preset)
            .any(|c| c.transport.credits.is_some());
        self.each(|c| c.transport.credits = None);
        had
    }
}

pub(super) fn load_bases(
    cfg: &ConfigArgs,
    multiple: Option<&str>,
    sets: &ModeOverrides,
    running: &[Preset],
) -> anyhow::Result<Bases> {
    sets.check(running)?;
    let mut args = cfg.clone();
    if let Some(m) = multiple {
        // First among the --set overrides, so an explicit --set still wins.
        args.set
            .insert(0, format!("transport.lossy_credit_multiple={m}"));
    }
    let mut common = Config::load(args.config.as_deref(), &args.overrides())?;
    common.trust_own_client();
    let mut per_preset = Vec::new();
    for p in Preset::ALL {
        let c = p
            .apply(&common)
            .with_overrides(&sets.for_preset(p)?)
            .with_context(|| format!("the {} mode's overrides", p.name()))?;
        per_preset.push(c);
    }
    // Each run's configuration is validated before it runs; check the
    // parts common to all now (a lossless check of the user's credits
    // would reject what the lossy runs are for).
    for_mode(&common, Mode::Lossy, common.transport.credits).validate(&ValidationEnv::detect())?;
    bench::preflight(&common)?;
    if common.workload.warmup_seconds > common.workload.seconds {
        eprintln!("rpc-bench: note: the warm-up is longer than the measured interval");
    }
    Ok(Bases { common, per_preset })
}

/// `rpc-bench compare`: the same workload in each mode of `--modes`.
pub fn compare_cmd(a: &CompareArgs) -> anyhow::Result<()> {
    // Output paths before anything starts: a typo fails at once.
    if let Some(p) = &a.plot {
        output::check_plot("--plot", p)?;
    }
    if let Some(p) = &a.csv {
        output::check_writable("--csv", p)?;
    }
    crate::run::child::install_signal_handlers();
    let presets = parse_presets(&a.modes)?;
    let mut bases = load_bases(&a.cfg, a.multiple.as_deref(), &a.mode_sets, &presets)?;
    if bases.clear_credits() {
        eprintln!(
            "rpc-bench compare: ignoring transport.credits: each mode takes its preset's (lossless the BDP, pause and lossy lossy_credit_multiple x BDP, irn 1 x BDP; use `rpc-bench sweep --credits` for explicit values)"
        );
    }
    let base = bases.common.clone();
    let runs: Vec<(Preset, Config)> = presets
        .iter()
        .map(|p| (*p, bases.get(*p).clone()))
        .collect();
    // All before any runs: a lossless BDP the ring cannot back fails here.
    let env = ValidationEnv::detect();
    for (p, cfg) in &runs {
        cfg.validate(&env)
            .with_context(|| format!("{} configuration", p.name()))?;
    }
    let probes = probes_for(&base, &a.qdisc);
    warn_bypassed(&base, &probes);
    eprintln!("rpc-bench compare: {}", describe(&base));
    eprintln!("  {}", bdp_line(&base));
    for (p, cfg) in &runs {
        eprintln!("  {}", mode_line(p.name(), cfg));
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
    let mut by_mode = Vec::new();
    for (p, cfg) in &runs {
        eprintln!(
            "rpc-bench compare: {} run, {} credits",
            p.name(),
            cfg.effective_credits()
        );
        let mut rep = measure(cfg, &probes).with_context(|| format!("{} run", p.name()))?;
        // The column and the JSON key: the preset (irn runs in lossy mode).
        rep.mode = p.name().to_string();
        let v = mode_json(&rep, cfg);
        if let Some(w) = csv.as_mut() {
            w.push(&output::flat_row(&v))?;
        }
        by_mode.push((rep.mode.clone(), v));
        reports.push(rep);
    }
    let refs: Vec<&Report> = reports.iter().collect();
    let tables = [
        render_columns(&refs),
        render_drop_sources(&refs),
        render_recovery(&refs),
    ];
    output::print_human(a.json, &format!("\n{}", tables.concat()));
    if let Some(path) = &a.plot {
        let label = |(p, cfg): &(Preset, Config)| (p.name(), cfg.effective_credits());
        let title: Vec<String> = runs
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
        println!("{}", json_by_mode(&by_mode));
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

/// Runs `cfg` (already `preset`'s, with its credits) as one point.
pub(super) fn run_point(
    preset: Preset,
    mut cfg: Config,
    probes: &[QdiscProbe],
    label: &str,
) -> Point {
    let bdp = cfg.bdp_credits();
    let mut note = None;
    // Lossless credits x sessions and pause headroom need ring room.
    let fit = cfg.fit_ring().map(|f| f.rx_desc);
    let mut point = Point {
        mode: preset,
        credits: cfg.effective_credits(),
        bdp,
        sessions: cfg.workload.sessions_per_thread,
        rx_desc: cfg.link.rx_desc,
        note: None,
        result: Err(String::new()),
    };
    match fit {
        Err(why) => {
            eprintln!("rpc-bench: {label}: skipped: {why}");
            point.result = Err(format!("skipped: {why}"));
            return point;
        }
        Ok(Some(ring)) => {
            let n = format!("link.rx_desc raised to {ring} to back the credits");
            eprintln!("rpc-bench: {label}: {n}");
            note = Some(n);
        }
        Ok(None) => {}
    }
    point.rx_desc = cfg.link.rx_desc;
    point.note = note;
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

    /// The ring [`OwnClient::fit_ring`] raised `rx_desc` to, if any.
    fn fit_ring(c: &mut Config) -> Result<Option<u32>, String> {
        c.fit_ring().map(|f| f.rx_desc)
    }

    #[test]
    fn lossless_rings_grow_with_credits() {
        let mut own = Config::default();
        own.trust_own_client();
        let mut c = for_mode(&own, Mode::Lossless, Some(300));
        c.link.rx_desc = 256;
        c.workload.sessions_per_thread = 4;
        assert_eq!(fit_ring(&mut c), Ok(Some(2048)));
        assert!(c.validate(&ValidationEnv { online_cores: 2 }).is_ok());
        let mut c = for_mode(&own, Mode::Lossless, Some(60000));
        c.workload.sessions_per_thread = 2;
        assert!(fit_ring(&mut c)
            .unwrap_err()
            .contains("link.rx_desc <= 16384"));
        let mut lossy = for_mode(&Config::default(), Mode::Lossy, Some(60000));
        assert_eq!(fit_ring(&mut lossy), Ok(None));
    }

    #[test]
    fn pause_rings_grow_to_hold_the_headroom() {
        // Headroom 2 x 9 + 32 = 50 entries: 52 do not fit 32, fit 64.
        let mut c = for_mode(&Config::default(), Mode::Pause, None);
        c.link.rx_desc = 32;
        assert!(c.validate(&ValidationEnv { online_cores: 2 }).is_err());
        assert_eq!(fit_ring(&mut c), Ok(Some(64)));
        assert!(c.validate(&ValidationEnv { online_cores: 2 }).is_ok());
        assert_eq!(fit_ring(&mut c), Ok(None));
        // Explicit thresholds are the user's: validation names them instead.
        c.link.rx_desc = 32;
        c.transport.pause_xoff = Some(16);
        assert_eq!(fit_ring(&mut c), Ok(None));
    }
}
