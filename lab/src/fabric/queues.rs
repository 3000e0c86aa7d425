//! Which trimming and ECN thresholds each switch egress queue takes: the
//! fabric's, a degraded link's scaled with its rate, or a last hop's
//! without marking. The `uec` regimes set the last two
//! (`FabricRegime::apply_queues`), after uet-htsim.

use super::config::{FabricConfig, Red};
use super::{Hop, Port};

/// The thresholds an egress queue takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum QueueClass {
    /// The fabric's (`FabricConfig::trim`, `FabricConfig::ecn`).
    Normal,
    /// A degraded link's, scaled with its rate
    /// (`FabricConfig::scale_degraded_queues`): the same queue in time, as
    /// uet-htsim's `FatTreeTopology::alloc_queue` sizes a `reduced_speed`
    /// queue and its ECN thresholds.
    Degraded,
    /// A last hop's without ECN marking (`FabricConfig::ecn_last_hop`
    /// off), as uet-htsim's receiver-driven mode sets ToR downlinks.
    NoEcn,
}

/// A degraded link's trimming threshold and ECN thresholds.
#[derive(Clone, Copy, Debug)]
pub(super) struct Degraded {
    pub trim_at: u64,
    pub ecn: Option<Red>,
}

/// The trimming threshold of every switch egress queue, bytes (`u64::MAX`:
/// no trimming, or a fabric that does not drop for lack of room).
pub(super) fn trim_at(cfg: &FabricConfig) -> u64 {
    match cfg.trim {
        Some(t) if cfg.pfc.is_none() && cfg.link_credits.is_none() => t,
        _ => u64::MAX,
    }
}

impl Degraded {
    /// [`trim_at`] and `cfg`'s ECN thresholds at `cfg.degraded_fraction`
    /// (the trimming threshold at least one frame).
    pub fn new(cfg: &FabricConfig) -> Degraded {
        let f = cfg.degraded_fraction;
        let scaled = |b: u64| (b as f64 * f) as u64;
        Degraded {
            trim_at: match trim_at(cfg) {
                u64::MAX => u64::MAX,
                t => scaled(t).max(cfg.max_frame()),
            },
            ecn: cfg.ecn.map(|r| Red {
                kmin: scaled(r.kmin),
                kmax: scaled(r.kmax),
                ..r
            }),
        }
    }
}

/// Slows the `degraded` links (switch, port: the routing plan's; `first`,
/// each switch's first port in `ports`) to `cfg.degraded_fraction` of
/// their rate, and sets the class of every switch egress port: degraded
/// if `cfg` scales their queues, towards a host unmarked if the last hop
/// does not mark.
pub(super) fn degrade(
    ports: &mut [Port],
    degraded: &[(usize, usize)],
    first: &[u32],
    cfg: &FabricConfig,
) {
    for &(s, p) in degraded {
        let port = &mut ports[(first[s] + p as u32) as usize];
        port.ps_per_byte = (port.ps_per_byte as f64 / cfg.degraded_fraction).round() as u64;
        if cfg.scale_degraded_queues {
            port.class = QueueClass::Degraded;
        }
    }
    if !cfg.ecn_last_hop {
        for p in ports.iter_mut() {
            if p.owner != u32::MAX && matches!(p.to, Hop::Host(_)) {
                p.class = QueueClass::NoEcn;
            }
        }
    }
}
