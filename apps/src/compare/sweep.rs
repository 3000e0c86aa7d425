//! `rpc-bench sweep`: one run per credit value (and flow mode); with
//! `--msg-sizes`, one per request size ([`super::size_sweep`]). Points are
//! written as they finish ([`super::stream`]).

use super::modes::*;
use super::probes::*;
use super::report::*;
use super::run::*;
use super::size_sweep::*;
use super::stream::*;
use crate::config::cli::ConfigArgs;
use crate::config::Config;
use anyhow::bail;
use clap::Args;

// ------------------------------------------------------------ sweep

/// One entry of `--credits`: a multiple of the BDP ("4x") or a count ("16").
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CreditSpec {
    Multiple(f64),
    Absolute(u16),
}

impl CreditSpec {
    /// Credits for a BDP of `bdp` packets (multiples round up, at least 1).
    pub fn resolve(self, bdp: u16) -> u16 {
        match self {
            CreditSpec::Absolute(n) => n,
            CreditSpec::Multiple(f) => (bdp as f64 * f).ceil().clamp(1.0, u16::MAX as f64) as u16,
        }
    }
}

/// "0.5x,1x,2x,16,64" -> specs; errors name the bad entry.
pub fn parse_credit_list(s: &str) -> anyhow::Result<Vec<CreditSpec>> {
    let mut v = Vec::new();
    for item in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let spec = if let Some(m) = item.strip_suffix(['x', 'X']) {
            match m.trim().parse::<f64>() {
                Ok(f) if f.is_finite() && f > 0.0 => CreditSpec::Multiple(f),
                _ => bail!(
                    "--credits: {item:?} is not a positive multiple of the BDP (e.g. 0.5x, 4x)"
                ),
            }
        } else {
            match item.parse::<u16>() {
                Ok(n) if n > 0 => CreditSpec::Absolute(n),
                _ => bail!("--credits: {item:?} is neither a multiple of the BDP (4x) nor a credit count in 1..=65535"),
            }
        };
        v.push(spec);
    }
    if v.is_empty() {
        bail!("--credits needs at least one value, e.g. 0.5x,1x,2x,4x,8x,16x");
    }
    Ok(v)
}

#[derive(Args, Clone, Debug)]
#[command(mut_arg("credits", |a| a.long("fixed-credits").hide(true)))]
pub struct SweepArgs {
    #[command(flatten)]
    pub cfg: ConfigArgs,
    #[command(flatten)]
    pub mode_sets: ModeOverrides,
    /// Credit values, comma-separated: multiples of the BDP ("0.5x,1x,4x")
    /// or absolute counts ("2,8,32").
    #[arg(
        long = "credits",
        value_name = "LIST",
        default_value = "0.5x,1x,2x,4x,8x,16x"
    )]
    pub credit_list: String,
    /// Sweep the request size instead of the credits: one run per size
    /// (and mode), comma-separated, k = 1024 (32,1k,4k,64k,1M,8M). Each
    /// point runs the configured workload (--workload) with that request
    /// size; sizes above one packet's payload travel as multi-packet
    /// messages. Credits are each mode's default (or --set
    /// transport.credits). Every point is validated before the first run.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        value_parser = parse_msg_size,
        conflicts_with = "credit_list"
    )]
    pub msg_sizes: Option<Vec<u64>>,
    /// Response size of a --msg-sizes sweep: "config" keeps the configured
    /// workload.resp_size (32 B unless --resp-size says otherwise: a
    /// write-like RPC); "same" answers with as many bytes as the request
    /// (an echo, perftest's ping-pong).
    #[arg(long, value_enum, default_value_t = RespSizes::Config, requires = "msg_sizes")]
    pub resp_sizes: RespSizes,
    /// Modes to sweep, comma-separated (lossless, pause, lossy, irn: the
    /// base configuration of each point; the credits are the sweep's).
    /// Lossless credits above rx_desc / sessions, or a pause headroom above
    /// rx_desc, raise link.rx_desc (to at most 32768).
    #[arg(long, value_delimiter = ',', default_value = "lossy")]
    pub modes: Vec<String>,
    #[command(flatten)]
    pub out: PointsOut,
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
    let fit = fit_ring(&mut cfg);
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

/// The credit sweep's table: the point's mode and credits, then the results.
const CREDIT_COLUMNS: &[Column] = &[
    Column {
        head: "mode",
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

/// `rpc-bench sweep`: one run per credit value (and mode), or with
/// `--msg-sizes` one per request size (and mode).
pub fn sweep_cmd(a: &SweepArgs) -> anyhow::Result<()> {
    crate::run::child::install_signal_handlers();
    if let Some(sizes) = &a.msg_sizes {
        a.out.check(&SIZE_PLOT_SUFFIXES)?;
        return size_sweep_cmd(a, sizes);
    }
    a.out.check(&["p99", "loss"])?;
    let specs = parse_credit_list(&a.credit_list)?;
    let modes = parse_presets(&a.modes)?;
    let bases = load_bases(&a.cfg, None, &a.mode_sets, &modes)?;
    let base = bases.common.clone();
    let probes = probes_for(&base, &a.out.qdisc);
    warn_bypassed(&base, &probes);
    eprintln!("rpc-bench sweep: {}", describe(&base));
    eprintln!("  {}", bdp_line(&base));
    let plan: Vec<(Preset, CreditSpec)> = modes
        .iter()
        .flat_map(|m| specs.iter().map(move |s| (*m, *s)))
        .collect();
    let mut columns = CREDIT_COLUMNS.to_vec();
    columns.extend_from_slice(METRICS);
    let mut sink = Sink::new(&a.out, &columns, &["mode", "credits", "credits_x_bdp"])?;
    sink.say(&format!(
        "credit sweep: {}",
        describe(&base).replacen(" (lossless)", "", 1)
    ))?;
    sink.say(&bdp_line(&base))?;
    let total = plan.len();
    let outcome = run_points(
        total,
        |i| {
            let (mode, spec) = plan[i];
            let mut cfg = bases.get(mode).clone();
            cfg.transport.credits = Some(spec.resolve(cfg.bdp_credits()));
            let label = format!("[{}/{total}] {}", i + 1, mode.name());
            let point = run_point(mode, cfg, &probes, &label);
            let label = format!("{} {} credits", mode.name(), point.credits);
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
            plot_done(a.out.plot.as_deref(), done, &base, "credits", |p| {
                p.credits as f64
            })
        },
    )
}

/// Goodput, p99 and loss rate against `x` (credits, fan-in) when `--plot`
/// asked: the plots of `render_points`' table.
pub(super) fn plot_done(
    path: Option<&std::path::Path>,
    done: &[Done],
    base: &Config,
    x_label: &str,
    x: impl Fn(&Point) -> f64,
) -> anyhow::Result<()> {
    let Some(path) = path else {
        return Ok(());
    };
    let points: Vec<Point> = done.iter().map(|d| d.point.clone()).collect();
    let context = if base.workload.kind == crate::config::WorkloadKind::Incast {
        format!("incast over {}, one client thread", link_name(base))
    } else {
        format!(
            "{} over {}, BDP {}",
            base.workload.kind.as_str(),
            link_name(base),
            base.bdp_credits()
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
