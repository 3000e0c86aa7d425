//! `rpc-bench sweep`'s flags: the credit values (`--credits`) or the
//! request sizes (`--msg-sizes`) to sweep, with their parsers, shared by
//! the credit sweep ([`super::sweep`]) and the size sweep
//! ([`super::size_sweep`]).

use super::regimes::RegimeOverrides;
use super::stream::PointsOut;
use apps::config::cli::ConfigArgs;
use apps::config::units::parse_size_u32;
use apps::exit::usage;
use clap::{Args, ValueEnum};

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
                _ => {
                    return Err(usage(format!(
                        "--credits: {item:?} is not a positive multiple of the BDP (e.g. 0.5x, 4x)"
                    )))
                }
            }
        } else {
            match item.parse::<u16>() {
                Ok(n) if n > 0 => CreditSpec::Absolute(n),
                _ => return Err(usage(format!("--credits: {item:?} is neither a multiple of the BDP (4x) nor a credit count in 1..=65535"))),
            }
        };
        v.push(spec);
    }
    if v.is_empty() {
        return Err(usage(
            "--credits needs at least one value, e.g. 0.5x,1x,2x,4x,8x,16x",
        ));
    }
    Ok(v)
}

#[derive(Args, Clone, Debug)]
#[command(mut_arg("credits", |a| a.long("fixed-credits").hide(true)))]
pub struct SweepArgs {
    #[command(flatten)]
    pub cfg: ConfigArgs,
    #[command(flatten)]
    pub regime_sets: RegimeOverrides,
    #[command(flatten)]
    pub measure: super::run::MeasureArgs,
    /// Credit values, comma-separated: multiples of the BDP ("0.5x,1x,4x")
    /// or absolute counts ("2,8,32").
    #[arg(
        long = "credits",
        value_name = "LIST",
        default_value = "0.5x,1x,2x,4x,8x,16x"
    )]
    pub credit_list: String,
    /// Sweep the request size instead of the credits: one run per size
    /// (and regime), comma-separated, k = 1024 (32,1k,4k,64k,1M,8M). Each
    /// point runs the configured workload (--workload) with that request
    /// size; sizes above one packet's payload travel as multi-packet
    /// messages. Credits are each regime's default (or --set
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
    /// Regimes to sweep, comma-separated (lossless, pause, lossy, irn: the
    /// base configuration of each point; the credits are the sweep's).
    /// Lossless credits above rx_desc / sessions, or a pause headroom above
    /// rx_desc, raise link.rx_desc (up to the link's largest ring: 16384 on
    /// memif, 32768 elsewhere).
    #[arg(
        long,
        visible_alias = "modes",
        value_delimiter = ',',
        default_value = "lossy"
    )]
    pub regimes: Vec<String>,
    #[command(flatten)]
    pub out: PointsOut,
}

/// The response size of each point of a size sweep.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum RespSizes {
    /// The configured `workload.resp_size` at every point.
    #[default]
    Config,
    /// As many bytes as the request.
    Same,
}

/// One `--msg-sizes` item: bytes with an optional binary suffix (k, M, G;
/// k = 1024), at least 1 (an empty request measures nothing a 32 B one
/// does not).
pub fn parse_msg_size(text: &str) -> Result<u64, String> {
    match parse_size_u32(text)? {
        0 => Err(format!("{text:?}: a message size must be at least 1 byte")),
        n => Ok(n),
    }
}
