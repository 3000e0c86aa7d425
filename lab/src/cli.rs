//! The lab's command, `rpc-lab` (also `rpc-bench fabric`, which hands its
//! flags here): the seeds' regimes on the simulated datacenter fabric of
//! [`crate::fabric`] (deterministic, virtual time, no DPDK).
//!
//! A thin front end: the flags and an optional TOML file resolve to a
//! [`FabricPlan`] (a [`ScenarioSpec`], the seeds and the regimes to run);
//! the simulator builds the workload of each seed and runs each regime; this
//! module prints what came back: a table on stdout (stderr with `--json`;
//! [`crate::table`]), a live progress line on stderr, the
//! [`FabricReport`] as one JSON line (with `--seeds N`, N > 1, the
//! [`SeedsReport`] of [`crate::seeds`] instead), stamped by
//! [`crate::meta::stamp`] with the build, time, machine and the resolved
//! settings (so two runs of one seed differ only in the stamp's
//! `timestamp`), and optionally an SVG of slowdown by flow size
//! ([`crate::plot`]), whose path is checked before anything runs. Every
//! check of the values (ranges, overrides a scenario has no use for) is
//! the simulator's; its message is passed on as the error, a
//! [`PlanError`] (exit 2). Ctrl-C is checked between regimes
//! and within one ([`run_until`]): the report holds what finished. The settings
//! themselves, flags and file, are [`crate::settings`]'.

use crate::fabric::scenario::{self, Scenario, ScenarioSpec, Workload};
use crate::fabric::topology::TopologyKind;
use crate::fabric::{FabricConfig, FabricRegime, FabricReport, PathSelection, RegimeResult};
use crate::jobs::{per_sec, run_grid, Runs};
use crate::progress::Board;
use crate::seeds::SeedsReport;
pub use crate::settings::FabricSettings;
use crate::settings::{checked_transport, transport_sets, LINK_GBPS};
use crate::table::{render_seeds_table, render_table, seed_range};
use anyhow::{anyhow, bail, Context};
use clap::Args;
use engine::config::Source;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

/// The seed when neither the flags nor the file give one.
const DEFAULT_SEED: u64 = 1;

/// Flags of `rpc-lab` (and of `rpc-bench fabric`).
#[derive(Args, Clone, Debug, Default)]
pub struct FabricArgs {
    /// TOML file with the same settings as the flags below, by the same
    /// names (see docs/configs.md); flags override it.
    #[arg(long, short = 'c', value_name = "FILE.toml")]
    pub config: Option<PathBuf>,
    /// A key of the run config's `[transport]` over every regime's
    /// (repeatable), e.g. `--set transport.credits=9`,
    /// `--set transport.scan_us=500`; refused as rpc-server refuses it; the
    /// keys a regime or the fabric's links set are noted and not applied.
    #[arg(long = "set", value_name = "transport.KEY=VALUE")]
    pub sets: Vec<String>,
    /// What to run and on what fabric.
    #[command(flatten)]
    pub settings: FabricSettings,
    /// Print the report as one JSON line, stamped with the build, time,
    /// host and resolved settings, the only line on stdout (the table goes
    /// to stderr).
    #[arg(long)]
    pub json: bool,
    /// Add the wall-clock rate `sim_pkts_per_sec` to the JSON (which then
    /// differs between runs of one seed).
    #[arg(long)]
    pub timing: bool,
    /// Write an SVG of FCT slowdown p50 and p99 by flow size: a group of
    /// bars per size, one bar per regime.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Print no table (errors and progress lines still go to stderr): with
    /// --json, the JSON line alone.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// The settings were refused before anything was simulated with them: a
/// value of the `-c` file, a flag or a `--set`, a name, the `--plot`
/// path, what the scenario builder or a regime's set-up refuses.
/// `rpc-lab` and `rpc-bench fabric` exit 2 on it, as on a usage error.
#[derive(Debug, thiserror::Error)]
#[error("{0:#}")]
pub struct PlanError(pub anyhow::Error);

/// `e` as a [`PlanError`].
fn refused(e: anyhow::Error) -> anyhow::Error {
    PlanError(e).into()
}

/// What to run, resolved from the flags over the file.
#[derive(Clone, Debug, PartialEq)]
pub struct FabricPlan {
    /// The scenario, its overrides and the (first) seed.
    pub spec: ScenarioSpec,
    /// How many seeds to run, from `spec.seed` up (at least 1).
    pub seeds: u64,
    /// The regimes, in run (and report) order.
    pub regimes: Vec<FabricRegime>,
    /// The fabric's knobs (PFC, credits and the like come from each regime).
    pub fabric: FabricConfig,
    /// Every link's rate instead of the scenario's, bits/s.
    pub link_bps: Option<u64>,
    /// Whether endpoints copy payload bytes (otherwise headers only).
    pub copy_payload: bool,
    /// Runs (seed, regime pairs) at once, on as many threads (`--jobs`).
    pub jobs: usize,
}

impl FabricArgs {
    /// The plan: each setting from its flag, else from the `-c` file, else
    /// the default. Names are checked here; values by the simulator.
    pub fn plan(&self) -> anyhow::Result<FabricPlan> {
        plan_of(&self.resolved()?)
    }

    /// The settings in effect: each from its flag, else from the `-c` file
    /// (unset: the scenario's or the simulator's default).
    pub fn resolved(&self) -> anyhow::Result<FabricSettings> {
        let file = match &self.config {
            Some(p) => FabricSettings::read(p)?,
            None => FabricSettings::default(),
        };
        let flags = FabricSettings {
            transport: transport_sets(&self.sets)?,
            ..self.settings.clone()
        };
        Ok(flags.over(file))
    }
}

/// The plan of resolved settings `s`; names are checked here, values by the
/// simulator.
fn plan_of(s: &FabricSettings) -> anyhow::Result<FabricPlan> {
    let Some(name) = s.scenario.as_ref() else {
        let names: Vec<&str> = Scenario::ALL.iter().map(|s| s.name()).collect();
        bail!(
            "no scenario: give --scenario NAME or `scenario = \"NAME\"` in the -c file (one of {})",
            names.join(", ")
        );
    };
    let scenario = Scenario::from_name(name).map_err(anyhow::Error::msg)?;
    let regimes = match s.regimes.as_ref() {
        Some(list) => parse_regimes(list)?,
        None => FabricRegime::ALL.to_vec(),
    };
    let seed = s.seed.unwrap_or(DEFAULT_SEED);
    let seeds = match s.seeds.unwrap_or(1) {
        0 => bail!("--seeds 0: give at least one seed"),
        n if seed.checked_add(n - 1).is_none() => {
            bail!("--seeds {n} from seed {seed} goes past the largest seed")
        }
        n => n,
    };
    let jobs = match s.jobs.unwrap_or(1) {
        0 => bail!("--jobs 0: give at least one job (1 runs everything in turn)"),
        n => n,
    };
    let mut spec = ScenarioSpec::new(scenario, seed);
    spec.hosts = s.hosts;
    spec.load = s.load;
    spec.flow_size = s.flow_size;
    spec.flows = s.flows;
    spec.matrix = s.matrix.clone();
    if let Some(us) = s.service_us {
        // Only what cannot become a duration is refused here; the
        // scenario builder owns the range.
        if !(us.is_finite() && us >= 0.0) {
            bail!("service time {us} us is not a duration");
        }
        spec.service = Some(engine::time::Duration::from_nanos((us * 1e3).round() as u64));
    }
    let mut fabric = FabricConfig::default();
    if let Some(us) = s.link_delay_us {
        if !(0.0..=1e6).contains(&us) {
            bail!("link delay {us} us outside 0..=1000000");
        }
        fabric.link_delay = engine::time::Duration::from_nanos((us * 1e3).round() as u64);
    }
    fabric.loss = s.loss.unwrap_or(0.0);
    if let Some(kb) = s.buffer_kb {
        fabric.buffer_per_port = kb.saturating_mul(1024);
    }
    if let Some(kb) = s.trim_kb {
        let buffer_kb = fabric.buffer_per_port / 1024;
        if kb == 0 || kb > buffer_kb {
            bail!("--trim-kb {kb} (trim_kb): the trimming threshold must be in 1..={buffer_kb} KiB, the per-port buffer (--buffer-kb)");
        }
        fabric.trim = Some(kb * 1024);
    }
    if let Some(n) = s.ring {
        if n == 0 {
            bail!("--ring 0: a host's receive ring needs at least one entry");
        }
        fabric.host_ring = n;
    }
    paths_of(s, &mut spec, &mut fabric)?;
    // The `[transport]` keys given (the file's, then --set): the engine's
    // `[transport]` over every regime's (`FabricRegime::transport`). The lab asks
    // only whether a key was given, not where.
    if let Some(table) = &s.transport {
        fabric.transport = checked_transport(table)?;
        for key in table.keys() {
            fabric.given.set(&format!("transport.{key}"), Source::Flag);
        }
    }
    let link_gbps = s.link_gbps.or(fabric
        .given
        .given(LINK_GBPS)
        .then_some(fabric.transport.link_gbps));
    let link_bps = match link_gbps {
        Some(g) if g > 0.0 && g <= 10_000.0 => Some((g * 1e9).round() as u64),
        Some(g) => bail!("link rate {g} Gb/s outside (0, 10000]"),
        None => None,
    };
    Ok(FabricPlan {
        spec,
        seeds,
        regimes,
        fabric,
        link_bps,
        copy_payload: s.copy_payload,
        jobs,
    })
}

/// The topology, path selection, degraded and failed links and MTU of
/// `s`, each refused with its flag's name (the link counts are checked
/// against the topology when it is built).
fn paths_of(
    s: &FabricSettings,
    spec: &mut ScenarioSpec,
    fabric: &mut FabricConfig,
) -> anyhow::Result<()> {
    if let Some(t) = &s.topology {
        let (name, shape) = match t.split_once(':') {
            Some((n, sh)) => (n, Some(sh)),
            None => (t.as_str(), None),
        };
        let kind = TopologyKind::from_name(name).map_err(|e| anyhow!("--topology: {e}"))?;
        spec.topology = Some(kind);
        if let Some(sh) = shape {
            spec.leaf_shape = Some(leaf_shape(kind, sh)?);
        }
    }
    if let Some(p) = &s.path_selection {
        let sel = PathSelection::from_name(p).map_err(|e| anyhow!("--path-selection: {e}"))?;
        fabric.path_selection = Some(sel);
    }
    fabric.degraded_links = s.degraded_links.unwrap_or(0);
    fabric.failed_links = s.failed_links.unwrap_or(0);
    if let Some(f) = s.degraded_fraction {
        // Written so that NaN fails too.
        if !(f > 0.0 && f <= 1.0) {
            bail!("--degraded-fraction {f} outside (0, 1]");
        }
        fabric.degraded_fraction = f;
    }
    if let Some(mtu) = s.mtu {
        if !(576..=9000).contains(&mtu) {
            bail!("--mtu {mtu} outside 576..=9000");
        }
        fabric.mtu = mtu;
    }
    Ok(())
}

/// `leaf-spine:HxS`'s H (hosts per leaf) and S (spines), both at least 1;
/// a shape is for a leaf-spine only.
fn leaf_shape(kind: TopologyKind, shape: &str) -> anyhow::Result<(usize, usize)> {
    if kind != TopologyKind::LeafSpine {
        bail!(
            "--topology {}:{shape}: only leaf-spine takes a shape (leaf-spine:HOSTSxSPINES)",
            kind.name()
        );
    }
    let parsed = shape
        .split_once('x')
        .and_then(|(h, s)| Some((h.parse::<usize>().ok()?, s.parse::<usize>().ok()?)));
    match parsed {
        Some((h, s)) if h > 0 && s > 0 => Ok((h, s)),
        _ => bail!(
            "--topology leaf-spine:{shape}: expected leaf-spine:HOSTSxSPINES, e.g. leaf-spine:32x8 (32 hosts and 8 uplinks per leaf)"
        ),
    }
}

/// The regimes named in `list`, in order; none, or one twice, is an error
/// (a repeated regime would only repeat an identical result).
pub fn parse_regimes(list: &[String]) -> anyhow::Result<Vec<FabricRegime>> {
    let mut out: Vec<FabricRegime> = Vec::with_capacity(list.len());
    for name in list {
        let r = FabricRegime::from_name(name.trim()).map_err(anyhow::Error::msg)?;
        if out.contains(&r) {
            bail!("regime `{}` is listed twice", r.name());
        }
        out.push(r);
    }
    if out.is_empty() {
        bail!("no regime to run (--regimes is empty)");
    }
    Ok(out)
}

/// Runs the command (`rpc-lab`, `rpc-bench fabric`) to the end: builds
/// the scenario, runs every regime (with each seed), prints the table,
/// writes the plot, prints the JSON.
pub fn run(a: &FabricArgs) -> anyhow::Result<()> {
    run_until(a, &|| false)
}

/// [`run`], stopping once `stop()` says so (Ctrl-C; asked between regimes
/// and every 2^20 events within one, whose cut run is dropped): the
/// report then holds what finished (the first seed's finished regimes, or
/// the seeds that finished every regime) and, in the JSON,
/// `"interrupted": true`. Refused settings are a [`PlanError`].
pub fn run_until(a: &FabricArgs, stop: &(dyn Fn() -> bool + Sync)) -> anyhow::Result<()> {
    let settings = a.resolved().map_err(refused)?;
    let plan = plan_of(&settings).map_err(refused)?;
    // Before the simulation, which can take minutes.
    if let Some(p) = &a.plot {
        check_plot_path(p).map_err(refused)?;
    }
    let planned: Vec<u64> = (0..plan.seeds).map(|k| plan.spec.seed + k).collect();
    // With --json, stdout carries the JSON line alone; -q: no table.
    let mut human: Box<dyn Write> = match (a.quiet, a.json) {
        (true, _) => Box::new(std::io::sink()),
        (false, true) => Box::new(std::io::stderr()),
        (false, false) => Box::new(std::io::stdout()),
    };
    // Every seed's workload first (quick next to its runs), so the runs
    // can go on several threads; a refusal still comes before any run.
    let mut loads = Vec::with_capacity(planned.len());
    for &seed in &planned {
        loads.push(workload(&plan, seed).map_err(refused)?);
    }
    writeln!(human, "{}", header(&plan, &loads[0], &planned))?;
    human.flush()?;
    // The live line only on a terminal, and not under -q.
    let board = Board::new(plan.jobs, !a.quiet && std::io::stderr().is_terminal());
    let runs_of = Runs {
        regimes: &plan.regimes,
        fabric: &plan.fabric,
        copy_payload: plan.copy_payload,
        seeds: &planned,
        loads: &loads,
    };
    let grid = run_grid(runs_of, plan.jobs, &board, stop).map_err(|e| refused(anyhow!(e)))?;
    // One list of per-regime results per seed: the seeds that finished
    // every regime, from the first on, or the first seed's finished
    // regimes alone when it was cut short.
    let mut runs: Vec<Vec<RegimeResult>> = Vec::with_capacity(planned.len());
    for row in grid {
        let whole = row.iter().all(Option::is_some);
        let results: Vec<RegimeResult> = row.into_iter().flatten().collect();
        if whole || (runs.is_empty() && !results.is_empty()) {
            runs.push(results);
        }
        if !whole {
            break;
        }
    }
    let interrupted = stop();
    if runs.is_empty() {
        bail!("interrupted before a regime finished: nothing to report");
    }
    let seeds = &planned[..runs.len()];
    if interrupted {
        eprintln!(
            "fabric: interrupted: reporting {} seed(s) of {}, the first with {} regime(s) of {}",
            seeds.len(),
            planned.len(),
            runs[0].len(),
            plan.regimes.len()
        );
    }
    let sim_pkts_per_sec = a.timing.then(|| sim_rate(runs.iter().flatten()));
    let name = plan.spec.scenario.name();
    let seeds_report = (seeds.len() > 1).then(|| SeedsReport::new(name, seeds.to_vec(), &runs));
    match &seeds_report {
        Some(rep) => write!(human, "{}", render_seeds_table(rep))?,
        None => write!(human, "{}", render_table(&runs[0]))?,
    }
    if let Some(rate) = sim_pkts_per_sec {
        writeln!(
            human,
            "simulated: {:.2} M packets per wall-clock second over all regimes",
            rate / 1e6
        )?;
    }
    if let Some(path) = &a.plot {
        // One seed's flows per chart: the first seed's.
        let of = match seeds.len() {
            1 => String::new(),
            _ => format!(" of {}", seed_range(seeds)),
        };
        let title = format!("{name}: FCT slowdown by flow size (seed {}{of})", seeds[0]);
        crate::plot::plot_slowdown_by_size(path, &title, &runs[0])?;
        writeln!(human, "plot: {}", path.display())?;
    }
    human.flush()?;
    if a.json {
        let report = match seeds_report {
            Some(mut rep) => {
                rep.sim_pkts_per_sec = sim_pkts_per_sec;
                serde_json::to_value(&rep)
            }
            None => serde_json::to_value(&FabricReport {
                scenario: name,
                seed: seeds[0],
                sim_pkts_per_sec,
                results: runs.swap_remove(0),
            }),
        };
        let mut report = report.context("fabric report as JSON")?;
        if interrupted {
            report["interrupted"] = true.into();
        }
        crate::meta::stamp(&mut report, effective_settings(settings, &plan));
        let mut out = std::io::stdout().lock();
        writeln!(out, "{report}")?;
        out.flush()?;
    }
    Ok(())
}

/// The settings a run used, for its report's `config`: the resolved ones
/// with the seed, seed count and regimes the plan settled on; what stays
/// null is the scenario's default.
fn effective_settings(mut s: FabricSettings, plan: &FabricPlan) -> serde_json::Value {
    s.seed = Some(plan.spec.seed);
    s.seeds = Some(plan.seeds);
    s.regimes = Some(plan.regimes.iter().map(|r| r.name().to_string()).collect());
    serde_json::to_value(&s).unwrap_or(serde_json::Value::Null)
}

/// Refuses a `--plot` path the chart could not be written to: not `.svg`
/// (the only format drawn), or in a folder that does not exist.
fn check_plot_path(path: &Path) -> anyhow::Result<()> {
    let svg = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"));
    if !svg {
        bail!(
            "--plot {}: only SVG plots are supported; give a file name ending in .svg",
            path.display()
        );
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        bail!(
            "--plot {}: folder {} does not exist",
            path.display(),
            folder.display()
        );
    }
    Ok(())
}

/// The workload of `plan` under `seed`, with its link rate override.
fn workload(plan: &FabricPlan, seed: u64) -> anyhow::Result<Workload> {
    let spec = ScenarioSpec {
        seed,
        ..plan.spec.clone()
    };
    let mut w = scenario::build(&spec).map_err(anyhow::Error::msg)?;
    if let Some(bps) = plan.link_bps {
        w.host_link_bps = bps;
        w.fabric_link_bps = bps;
    }
    Ok(w)
}

/// The first line: what runs, on what (the first seed's workload: the
/// seeds change which flows, not how many).
fn header(plan: &FabricPlan, w: &Workload, seeds: &[u64]) -> String {
    let regimes: Vec<&str> = plan.regimes.iter().map(|r| r.name()).collect();
    format!(
        "fabric: scenario {}, {} hosts, {} flows, {}; regimes {}",
        plan.spec.scenario.name(),
        w.topology.hosts(),
        w.flows.len(),
        seed_range(seeds),
        regimes.join(",")
    )
}

/// Simulated packets per wall-clock second over all runs (sums, so a long
/// run weighs as much as its share of the time).
fn sim_rate<'a>(results: impl Iterator<Item = &'a RegimeResult> + Clone) -> f64 {
    let pkts = results.clone().map(|r| r.sim_pkts).sum();
    let secs = results.map(|r| r.wall_secs).sum();
    per_sec(pkts, secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_the_file_and_defaults_fill_the_rest() {
        let dir = std::env::temp_dir().join(format!("lab-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("f.toml");
        std::fs::write(
            &f,
            "scenario = \"incast\"\nregimes = [\"irn\", \"ib\"]\nhosts = 4\nseed = 9\nseeds = 3\n",
        )
        .unwrap();
        let a = FabricArgs {
            config: Some(f.clone()),
            settings: FabricSettings {
                hosts: Some(8),
                ..FabricSettings::default()
            },
            ..FabricArgs::default()
        };
        let p = a.plan().unwrap();
        assert_eq!(p.spec.scenario, Scenario::Incast);
        assert_eq!((p.spec.hosts, p.spec.seed, p.seeds), (Some(8), 9, 3));
        assert_eq!(p.regimes, [FabricRegime::Irn, FabricRegime::Ib]);
        let p = FabricArgs {
            settings: FabricSettings {
                scenario: Some("alltoall".into()),
                ..FabricSettings::default()
            },
            ..FabricArgs::default()
        }
        .plan()
        .unwrap();
        assert_eq!(
            (p.spec.seed, p.seeds, p.regimes.len()),
            (DEFAULT_SEED, 1, FabricRegime::ALL.len())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_plot_that_cannot_be_written_is_refused_before_the_run() {
        let e = check_plot_path(Path::new("slowdown.png")).unwrap_err();
        let m = e.to_string();
        assert!(
            m.contains("--plot slowdown.png") && m.contains("only SVG"),
            "{m}"
        );
        let e = check_plot_path(Path::new("/nonexistent-lab-dir/a.svg")).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        check_plot_path(&std::env::temp_dir().join("a.SVG")).unwrap();
        // The run refuses it before simulating: a valid plan, a bad plot.
        let a = FabricArgs {
            settings: FabricSettings {
                scenario: Some("incast".into()),
                ..FabricSettings::default()
            },
            plot: Some("x.jpg".into()),
            ..FabricArgs::default()
        };
        assert!(run(&a).unwrap_err().to_string().contains("only SVG"));
    }

    #[test]
    fn the_reported_config_reads_back_as_the_settings_that_ran() {
        let a = FabricArgs {
            settings: FabricSettings {
                scenario: Some("incast".into()),
                hosts: Some(4),
                ..FabricSettings::default()
            },
            ..FabricArgs::default()
        };
        let s = FabricSettings {
            transport: transport_sets(&["transport.credits=7".into()]).unwrap(),
            ..a.resolved().unwrap()
        };
        let plan = plan_of(&s).unwrap();
        let v = effective_settings(s.clone(), &plan);
        let back: FabricSettings = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(back.hosts, Some(4));
        let t = back.transport.as_ref().and_then(|t| t.get("credits"));
        assert_eq!(t.and_then(|v| v.as_integer()), Some(7));
        assert_eq!((back.seed, back.seeds), (Some(DEFAULT_SEED), Some(1)));
        assert_eq!(back.regimes.map(|r| r.len()), Some(FabricRegime::ALL.len()));
        assert_eq!(
            FabricSettings {
                seed: None,
                seeds: None,
                regimes: None,
                ..back
            },
            s
        );
    }

    #[test]
    fn the_run_configs_transport_keys_are_taken() {
        let file = "scenario = \"incast\"\n[transport]\nscan_us = 500\nrto_us = 5000\nrto_low_us = 500\nnak = false\ncredits = 9\nreq_window = 4\nlink_gbps = 40.0\n";
        let a = FabricSettings::parse(file).unwrap();
        let sets: Vec<String> = [
            "scan_us=500",
            "rto_us=5000",
            "rto_low_us=500",
            "nak=false",
            "credits=9",
            "req_window=4",
            "link_gbps=40.0",
        ]
        .iter()
        .map(|kv| format!("transport.{kv}"))
        .collect();
        let b = FabricArgs {
            settings: FabricSettings {
                scenario: Some("incast".into()),
                ..FabricSettings::default()
            },
            sets,
            ..FabricArgs::default()
        };
        let (pa, pb) = (plan_of(&a).unwrap(), b.plan().unwrap());
        assert_eq!(
            pa, pb,
            "-c [transport] and --set transport.* are one setting"
        );
        assert_eq!(pa.fabric.transport.rto().as_nanos(), 5_000_000);
        assert_eq!(pa.fabric.transport.credits, Some(9));
        assert!(pa.fabric.given.given("transport.req_window"));
        assert_eq!(pa.link_bps, Some(40_000_000_000), "the run's line rate");
        // A flag over the file's key.
        let dir = std::env::temp_dir().join(format!("lab-set-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("t.toml");
        std::fs::write(&f, file).unwrap();
        let c = FabricArgs {
            config: Some(f),
            sets: vec!["transport.credits=12".into()],
            ..FabricArgs::default()
        };
        assert_eq!(c.plan().unwrap().fabric.transport.credits, Some(12));
        std::fs::remove_dir_all(&dir).unwrap();
        // A [transport] key at the top level says where it belongs; --set
        // takes [transport] keys only.
        let e = FabricSettings::parse("credits = 9\n").unwrap_err();
        assert!(e.to_string().contains("put it under [transport]"), "{e}");
        let e = transport_sets(&["credits=9".into()]).unwrap_err();
        assert!(e.to_string().contains("transport.KEY=VALUE"), "{e}");
        let e = transport_sets(&["transport.rto_us=1".into()]).unwrap_err();
        assert!(
            e.to_string().contains("transport.rto_us = 1 must be"),
            "{e}"
        );
        // A run config's other sections are not the fabric's: noted, not
        // refused.
        FabricSettings::parse("scenario = \"incast\"\n[link]\nkind = \"memif\"\n").unwrap();
        // The whole [transport] of a run config is accepted (what the
        // fabric does not apply is noted), and refused alike: an unknown
        // key, a wrong type, a value the engine's validation refuses.
        FabricSettings::parse("[transport]\nmode = \"lossy\"\ncc = \"dcqcn\"\n").unwrap();
        let e = FabricSettings::parse("[transport]\nmodes = \"lossy\"\n").unwrap_err();
        assert!(e.to_string().contains("unknown field `modes`"), "{e}");
        let e = FabricSettings::parse("[transport]\nrto_us = \"soon\"\n").unwrap_err();
        assert!(e.to_string().contains("rto_us"), "{e}");
        let e = FabricSettings::parse("[transport]\nrto_us = 100\n").unwrap_err();
        assert!(
            e.to_string()
                .contains("transport.rto_us = 100 must be >= transport.scan_us"),
            "{e}"
        );
    }

    #[test]
    fn bad_names_and_keys_are_errors_naming_them() {
        let e = FabricSettings::parse("scenario = \"incast\"\nsenders = 3\n").unwrap_err();
        assert!(format!("{e:#}").contains("senders"), "{e:#}");
        let e = FabricArgs::default().plan().unwrap_err();
        assert!(e.to_string().contains("no scenario"), "{e}");
        let seeds = |seed: u64, seeds: u64| {
            let settings = FabricSettings {
                scenario: Some("incast".into()),
                seed: Some(seed),
                seeds: Some(seeds),
                ..FabricSettings::default()
            };
            let a = FabricArgs {
                settings,
                ..FabricArgs::default()
            };
            a.plan().map(|p| p.seeds).map_err(|e| e.to_string())
        };
        assert!(seeds(1, 0).unwrap_err().contains("--seeds 0"));
        assert!(seeds(u64::MAX - 1, 3).unwrap_err().contains("--seeds 3"));
        assert_eq!(seeds(u64::MAX - 1, 2), Ok(2));
        let bad = |list: &[&str]| {
            let v: Vec<String> = list.iter().map(|s| s.to_string()).collect();
            parse_regimes(&v).unwrap_err().to_string()
        };
        assert!(bad(&["pfc"]).contains("pfc"));
        assert!(bad(&["irn", "irn"]).contains("twice"));
        assert!(bad(&[]).contains("no regime"));
    }
}
