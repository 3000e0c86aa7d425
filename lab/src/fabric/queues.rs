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

/// The least egress queue, bytes, at which a switch may touch a packet's
/// frame: an ECN mark needs more than `kmin` queued, a trim more than the
/// threshold less the packet (at most a frame); below it the switches read
/// only the packet's 16-byte record, so the run loop need not load the
/// frame's header line for the hop (`packets.rs`). A hint's bound: a
/// queue that grows between the hint and the hop costs a load, never a
/// different result.
pub(super) fn frame_touch_from(cfg: &FabricConfig, degraded: &Degraded) -> u64 {
    let marks = [cfg.ecn, degraded.ecn].map(|r| r.map_or(u64::MAX, |r| r.kmin));
    let trims = [trim_at(cfg), degraded.trim_at].map(|t| match t {
        u64::MAX => u64::MAX,
        t => t.saturating_sub(cfg.max_frame()),
    });
    marks.into_iter().chain(trims).min().unwrap_or(u64::MAX)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_touched_from_the_lowest_mark_or_trim_threshold() {
        let mut cfg = FabricConfig::default();
        let at = |cfg: &FabricConfig| frame_touch_from(cfg, &Degraded::new(cfg));
        assert_eq!(at(&cfg), u64::MAX, "no marking, no trimming: never");
        cfg.ecn = Some(Red {
            kmin: 40_000,
            kmax: 160_000,
            pmax: 1.0,
        });
        // A degraded link marks from 0.25 of kmin.
        assert_eq!(at(&cfg), 10_000);
        cfg.degraded_fraction = 1.0;
        assert_eq!(at(&cfg), 40_000);
        // A trim may come once the queue and the packet pass the threshold.
        cfg.trim = Some(20_000);
        assert_eq!(at(&cfg), 20_000 - cfg.max_frame());
        // On a fabric that does not drop, nothing is trimmed.
        cfg.link_credits = Some(cfg.buffer_per_port / 2);
        assert_eq!(at(&cfg), 40_000);
    }
}
