//! One measured run (per-mode configurations, ring fitting, a server+client
//! pair with qdisc probes) and `rpc-bench compare`.

use super::probes::*;
use super::report::*;
use super::tc::*;
use crate::bench;
use crate::cli::ConfigArgs;
use crate::config::{Config, Mode, OnLoss, ValidationEnv, MAX_DESC};
use crate::report::{render_side_by_side, Report};
use anyhow::{bail, Context};
use clap::Args;
use serde_json::{json, Value};
use std::path::PathBuf;

// ------------------------------------------------------------ one run

/// The base configuration in `mode`; `credits` None = the mode's default
/// (BDP, or `lossy_credit_multiple` x BDP).
pub fn for_mode(base: &Config, mode: Mode, credits: Option<u16>) -> Config {
    let mut c = base.clone();
    c.transport.mode = mode;
    c.transport.credits = credits;
    if mode == Mode::Lossy {
        // `reset` is a lossless policy; validation rejects it in lossy mode.
        c.transport.on_loss = OnLoss::Retransmit;
    }
    c
}

/// Lossless mode needs (credits + 1) x sessions <= rx_desc. Raises `rx_desc` to
/// the next power of two that backs the credits; returns the new size, or
/// why it cannot (past the largest ring).
pub fn fit_ring(cfg: &mut Config) -> Result<Option<u32>, String> {
    if cfg.transport.mode != Mode::Lossless {
        return Ok(None);
    }
    let sessions = (cfg.workload.sessions_per_thread as u64)
        .max(cfg.max_sessions_per_server_worker() as u64)
        .max(1);
    let need = engine::proto::lossless_ring_entries(cfg.effective_credits()) as u64 * sessions;
    if need <= cfg.link.rx_desc as u64 {
        return Ok(None);
    }
    let ring = need.next_power_of_two();
    if ring > MAX_DESC as u64 {
        return Err(format!(
            "lossless with {} credits x {sessions} session(s) needs a {need}-entry receive ring, more than the largest ({MAX_DESC})",
            cfg.effective_credits()
        ));
    }
    cfg.link.rx_desc = ring as u32;
    Ok(Some(ring as u32))
}

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
    #[command(flatten)]
    pub modes: ModeOverrides,
    /// Lossy credits as a multiple of the BDP, or "unbounded" (shortcut for
    /// --set transport.lossy_credit_multiple=X).
    #[arg(long, value_name = "X")]
    pub multiple: Option<String>,
    /// Read drops of this device's qdisc, DEV or DEV@NETNS (repeatable).
    /// Default on af_packet: the server's interface, and the switch port of
    /// `scripts/veth.sh up IFACE --switch` when there is one.
    #[arg(long = "qdisc", value_name = "DEV[@NETNS]")]
    pub qdisc: Vec<String>,
    /// Print one JSON object {"lossless": {...}, "lossy": {...}} as the last line.
    #[arg(long)]
    pub json: bool,
    /// Draw both latency distributions on one SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// Overrides for one flow mode only, applied after `--set`.
#[derive(Args, Clone, Debug, Default)]
pub struct ModeOverrides {
    /// Override a config key in the lossless runs only (repeatable), e.g.
    /// --lossless-set transport.rto_us=100000.
    #[arg(long = "lossless-set", value_name = "KEY=VALUE")]
    pub lossless_set: Vec<String>,
    /// Override a config key in the lossy runs only (repeatable).
    #[arg(long = "lossy-set", value_name = "KEY=VALUE")]
    pub lossy_set: Vec<String>,
}

/// The run configuration as loaded (`common`), and per flow mode with
/// that mode's overrides.
#[derive(Clone, Debug)]
pub struct Bases {
    pub common: Config,
    pub lossless: Config,
    pub lossy: Config,
}

impl Bases {
    pub fn get(&self, mode: Mode) -> &Config {
        match mode {
            Mode::Lossless => &self.lossless,
            Mode::Lossy => &self.lossy,
        }
    }

    /// Applies `f` to every configuration.
    pub(super) fn each(&mut self, f: impl Fn(&mut Config)) {
        for c in [&mut self.common, &mut self.lossless, &mut self.lossy] {
            f(c);
        }
    }

    /// Drops an explicit `transport.credits` (the modes choose credits);
    /// true when there was one.
    pub(super) fn clear_credits(&mut self) -> bool {
        let had = [&self.common, &self.lossless, &self.lossy]
            .iter()
            .any(|c| c.transport.credits.is_some());
        self.each(|c| c.transport.credits = None);
        had
    }
}

pub(super) fn load_bases(
    cfg: &ConfigArgs,
    multiple: Option<&str>,
    sets: &ModeOverrides,
) -> anyhow::Result<Bases> {
    let mut args = cfg.clone();
    if let Some(m) = multiple {
        // First among the --set overrides, so an explicit --set still wins.
        args.set
            .insert(0, format!("transport.lossy_credit_multiple={m}"));
    }
    let overrides = args.overrides();
    let load = |extra: &[String]| {
        Config::load(
            args.config.as_deref(),
            &[overrides.clone(), extra.to_vec()].concat(),
        )
    };
    let bases = Bases {
        common: load(&[])?,
        lossless: load(&sets.lossless_set).context("--lossless-set")?,
        lossy: load(&sets.lossy_set).context("--lossy-set")?,
    };
    // Each run's configuration is validated before it runs; check the
    // parts common to all now (a lossless check of the user's credits
    // would reject what the lossy runs are for).
    let c = &bases.common;
    for_mode(c, Mode::Lossy, c.transport.credits).validate(&ValidationEnv::detect())?;
    bench::preflight(c)?;
    if c.workload.warmup_seconds > c.workload.seconds {
        eprintln!("rpc-bench: note: the warm-up is longer than the measured interval");
    }
    Ok(bases)
}

/// `rpc-bench compare`: the same workload lossless then lossy.
pub fn compare_cmd(a: &CompareArgs) -> anyhow::Result<()> {
    crate::child::install_signal_handlers();
    let mut bases = load_bases(&a.cfg, a.multiple.as_deref(), &a.modes)?;
    if bases.clear_credits() {
        eprintln!(
            "rpc-bench compare: ignoring transport.credits: lossless runs at the BDP, lossy at lossy_credit_multiple x BDP (use `rpc-bench sweep --credits` for explicit values)"
        );
    }
    let base = bases.common.clone();
    let lossless = for_mode(&bases.lossless, Mode::Lossless, None);
    let lossy = for_mode(&bases.lossy, Mode::Lossy, None);
    // Both before either runs: a lossless BDP the ring cannot back fails here.
    let env = ValidationEnv::detect();
    lossless.validate(&env).context("lossless configuration")?;
    lossy.validate(&env).context("lossy configuration")?;
    let probes = probes_for(&base, &a.qdisc);
    warn_bypassed(&base, &probes);
    let bdp = base.bdp_credits();
    eprintln!("rpc-bench compare: {}", describe(&lossless));
    eprintln!(
        "  {}; lossless {} credits (reserving {} of {} receive-ring entries per session); lossy {} credits ({:.2} x BDP), nothing reserved",
        bdp_line(&base),
        lossless.effective_credits(),
        lossless.effective_credits(),
        lossless.link.rx_desc,
        lossy.effective_credits(),
        multiple(lossy.effective_credits(), bdp)
    );
    if !probes.is_empty() {
        let names: Vec<String> = probes.iter().map(QdiscProbe::label).collect();
        eprintln!("  qdisc drops read on: {}", names.join(", "));
    }
    let mut reports = Vec::new();
    for cfg in [&lossless, &lossy] {
        eprintln!(
            "rpc-bench compare: {} run, {} credits",
            cfg.transport.mode.as_str(),
            cfg.effective_credits()
        );
        let rep = measure(cfg, &probes)
            .with_context(|| format!("{} run", cfg.transport.mode.as_str()))?;
        reports.push(rep);
    }
    let (ll, ly) = (&reports[0], &reports[1]);
    println!();
    print!("{}", render_side_by_side(ll, ly));
    print!("{}", render_drop_sources(ll, ly));
    if let Some(p) = &a.plot {
        crate::plot::plot_latency_percentiles(
            p,
            &format!(
                "{} over {}: lossless ({} credits) vs lossy ({} credits)",
                ll.workload,
                ll.link,
                lossless.effective_credits(),
                lossy.effective_credits()
            ),
            &[
                (
                    &format!("lossless, {} credits", lossless.effective_credits()),
                    &ll.latency,
                ),
                (
                    &format!("lossy, {} credits", lossy.effective_credits()),
                    &ly.latency,
                ),
            ],
        )?;
        println!("latency plot: {}", p.display());
    }
    if a.json {
        println!(
            "{}",
            json!({"lossless": json_without_hist(ll), "lossy": json_without_hist(ly)})
        );
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lossless_rings_grow_with_credits() {
        let mut c = for_mode(&Config::default(), Mode::Lossless, Some(300));
        c.link.rx_desc = 256;
        c.workload.sessions_per_thread = 4;
        assert_eq!(fit_ring(&mut c), Ok(Some(2048)));
        assert!(c.validate(&ValidationEnv { online_cores: 2 }).is_ok());
        let mut c = for_mode(&Config::default(), Mode::Lossless, Some(60000));
        c.workload.sessions_per_thread = 2;
        assert!(fit_ring(&mut c).unwrap_err().contains("32768"));
        let mut lossy = for_mode(&Config::default(), Mode::Lossy, Some(60000));
        assert_eq!(fit_ring(&mut lossy), Ok(None));
    }
}
