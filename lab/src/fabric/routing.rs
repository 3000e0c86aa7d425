//! Routes over live links: which top-tier links run degraded and which
//! have failed (`--degraded-links`, `--failed-links`), the uplinks that
//! still lead to each top-of-rack switch once failed ones are avoided (as
//! after routing converged), the check that no host is cut off, and the
//! per-packet choice of an uplink from the packet's entropy.
//!
//! Routing is up-down (valley-free) shortest path: a switch sends a packet
//! down when its destination is below it, else up by one of the uplinks
//! that can still reach the destination's top-of-rack switch.

use super::config::FabricConfig;
use super::topology::{self, Divisor, Peer, SwitchShape, Topology};

/// The uplink tables of one fabric.
#[derive(Debug)]
pub(super) struct Routes {
    leaves: usize,
    hosts_per_leaf: Divisor,
    uplinks: usize,
    /// Some link failed: the live uplinks come from `up`, else all are.
    failed: bool,
    /// Per (switch, destination leaf), bit `i` set when the switch's
    /// `i`-th uplink is live and still reaches the leaf.
    up: Vec<u64>,
    /// More than one tier chooses an uplink (fat tree): the choice mixes
    /// the switch into the entropy, or every tier would pick alike.
    tiered: bool,
}

/// What becomes of the top tier's links: the egress ports (switch, port)
/// that run at `--degraded-fraction` of their rate, and the routes.
pub(super) struct Plan {
    pub(super) routes: Routes,
    pub(super) degraded: Vec<(usize, usize)>,
}

/// The links of `topo` that `cfg` degrades and fails, and the routes that
/// avoid the failed ones. The first `degraded_links` links of the top
/// tier, in uet-htsim's order for `-failed` (`Topology::top_links`), run
/// degraded in the direction down from the upper switch, as htsim's
/// 3-tier `-failed` degrades the core's queue towards the aggregation
/// switch (`FatTreeTopology::init_network`, `alloc_queue(.., true)`); the
/// next `failed_links` are down both ways. A failure that cuts a leaf off
/// from another is an error.
pub(super) fn plan(
    cfg: &FabricConfig,
    topo: &Topology,
    shapes: &[SwitchShape],
) -> Result<Plan, String> {
    let top = topo.top_links();
    let (d, f) = (cfg.degraded_links, cfg.failed_links);
    if d + f > top.len() {
        return Err(format!(
            "--degraded-links {d} and --failed-links {f}: this {} has {} links between switches in its top tier",
            topo.kind().name(),
            top.len()
        ));
    }
    let degraded = top[..d].iter().map(|&(_, _, s, p)| (s, p)).collect();
    let mut dead: Vec<Vec<bool>> = shapes.iter().map(|s| vec![false; s.ports.len()]).collect();
    for &(a, pa, b, pb) in &top[d..d + f] {
        dead[a][pa] = true;
        dead[b][pb] = true;
    }
    let leaves = topo.leaves();
    let mut r = Routes {
        leaves,
        hosts_per_leaf: Divisor::new(topo.hosts_per_leaf()),
        uplinks: topo.uplinks(),
        failed: f > 0,
        up: Vec::new(),
        tiered: matches!(topo, Topology::FatTree { .. }),
    };
    if f > 0 {
        let mut memo = vec![None; shapes.len() * leaves];
        r.up = vec![0; shapes.len() * leaves];
        for a in 0..leaves {
            for b in (0..leaves).filter(|&b| b != a) {
                if !r.reaches(a, b, shapes, &dead, &mut memo) {
                    return Err(format!(
                        "--failed-links {f} cuts the hosts of leaf {a} off from those of leaf {b}"
                    ));
                }
            }
        }
    }
    Ok(Plan {
        routes: r,
        degraded,
    })
}

impl Routes {
    /// Whether switch `s` can still deliver to leaf `leaf` (filling `up`
    /// on the way; `memo` holds the answers so far).
    fn reaches(
        &mut self,
        s: usize,
        leaf: usize,
        shapes: &[SwitchShape],
        dead: &[Vec<bool>],
        memo: &mut [Option<bool>],
    ) -> bool {
        let at = s * self.leaves + leaf;
        if let Some(ok) = memo[at] {
            return ok;
        }
        let host = leaf * self.hosts_per_leaf.get();
        let mut via = |r: &mut Routes, p: usize| {
            !dead[s][p]
                && match shapes[s].ports[p] {
                    Peer::Host(_) => true,
                    Peer::Switch { switch, .. } => r.reaches(switch, leaf, shapes, dead, memo),
                }
        };
        let ok = match topology::route(shapes[s].role, self.hosts_per_leaf, self.uplinks, host) {
            Ok(p) => via(self, p),
            Err((first, n)) => {
                let mut mask = 0u64;
                for i in 0..n {
                    if via(self, first + i) {
                        mask |= 1 << i;
                    }
                }
                self.up[at] = mask;
                mask != 0
            }
        };
        memo[at] = Some(ok);
        ok
    }

    /// How many of switch `s`'s `n` uplinks lead to host `dst`.
    #[inline]
    pub(super) fn live(&self, s: usize, dst: usize, n: usize) -> u32 {
        self.mask(s, dst, n).count_ones()
    }

    #[inline]
    fn mask(&self, s: usize, dst: usize, n: usize) -> u64 {
        match self.failed {
            true => self.up[s * self.leaves + self.hosts_per_leaf.div(dst)],
            false => u64::MAX >> (64 - n),
        }
    }

    /// Which of switch `s`'s `n` uplinks a packet to host `dst` takes:
    /// `sel` (the packet's entropy, or the switch's round-robin counter
    /// when `spray`) over the live ones that reach `dst`; `None` if none
    /// does (cannot happen once `plan` accepted the failures).
    #[inline]
    pub(super) fn uplink(
        &self,
        s: usize,
        dst: usize,
        n: usize,
        sel: u32,
        spray: bool,
    ) -> Option<u32> {
        let mask = self.mask(s, dst, n);
        let live = mask.count_ones();
        if live == 0 {
            return None;
        }
        let sel = match self.tiered && !spray {
            true => mix(sel, s as u32),
            false => sel,
        };
        Some(nth_set_bit(mask, sel % live))
    }
}

/// The position of the `k`-th set bit of `mask` (`k` below its count).
#[inline]
fn nth_set_bit(mut mask: u64, k: u32) -> u32 {
    if mask & mask.wrapping_add(1) == 0 {
        return k; // the low bits, all live: no failure
    }
    for _ in 0..k {
        mask &= mask - 1;
    }
    mask.trailing_zeros()
}

/// A hash of (entropy, switch), so the tiers of a fat tree choose
/// independently (the finaliser of MurmurHash3's 64-bit variant).
#[inline]
fn mix(entropy: u32, switch: u32) -> u32 {
    let mut x = (entropy as u64) << 32 | switch as u64;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    (x ^ (x >> 33)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(topo: Topology, degraded: usize, failed: usize) -> Result<Plan, String> {
        let cfg = FabricConfig {
            degraded_links: degraded,
            failed_links: failed,
            ..FabricConfig::default()
        };
        plan(&cfg, &topo, &topology::build(&topo).0)
    }

    #[test]
    fn nth_set_bit_skips_the_dead() {
        assert_eq!(nth_set_bit(0b1111, 2), 2);
        assert_eq!(nth_set_bit(0b1010, 0), 1);
        assert_eq!(nth_set_bit(0b1010, 1), 3);
    }

    #[test]
    fn degraded_links_are_htsims_first_and_face_down() {
        let t = Topology::FatTree { k: 16 };
        let p = planned(t, 8, 0).unwrap();
        // htsim's -failed 8 at k = 16: aggregation switch 0 (pod 0)'s
        // eight core links, each core's port towards pod 0.
        let cores: Vec<(usize, usize)> = (0..8).map(|l| (256 + 8 * l, 0)).collect();
        assert_eq!(p.degraded, cores);
        let e = planned(Topology::Star { hosts: 4 }, 1, 0).err().unwrap();
        assert!(e.contains("--degraded-links 1"), "{e}");
    }

    #[test]
    fn failed_links_are_avoided_and_a_cut_is_an_error() {
        // Leaf-spine, 3 leaves, 2 spines: fail leaf 0's link to spine 0.
        let t = Topology::LeafSpine {
            leaves: 3,
            hosts_per_leaf: 2,
            spines: 2,
        };
        let p = planned(t, 0, 1).unwrap();
        let r = &p.routes;
        for sel in 0..8 {
            // From leaf 0 and towards it, only spine 1 (uplink 1).
            assert_eq!(r.uplink(0, 4, 2, sel, false), Some(1));
            assert_eq!(r.uplink(1, 0, 2, sel, false), Some(1));
        }
        // Between leaves 1 and 2 both spines still serve.
        let used: Vec<u32> = (0..8).filter_map(|s| r.uplink(1, 5, 2, s, false)).collect();
        assert!(used.contains(&0) && used.contains(&1), "{used:?}");
        let e = planned(t, 0, 2).err().unwrap();
        assert!(e.contains("--failed-links 2 cuts"), "{e}");
        let e = planned(t, 3, 4).err().unwrap();
        assert!(e.contains("6 links"), "{e}");
    }

    #[test]
    fn a_fat_tree_routes_around_a_cut_aggregation_switch() {
        // k = 4: aggregation switch 0 (pod 0) loses both core links; every
        // packet into pod 0 must come down through aggregation switch 1.
        let t = Topology::FatTree { k: 4 };
        let p = planned(t, 0, 2).unwrap();
        let r = &p.routes;
        for sel in 0..32 {
            // ToR 2 (pod 1) to host 0: only its uplink to agg 1 of pod 1
            // leads to a core that reaches pod 0's agg 1.
            assert_eq!(r.uplink(2, 0, 2, sel, false), Some(1));
            // ToR 0 to pod 1: never up through the cut agg 0.
            assert_eq!(r.uplink(0, 8, 2, sel, false), Some(1));
            // Within pod 0, agg 0 still serves.
        }
        let within: Vec<u32> = (0..32)
            .filter_map(|s| r.uplink(0, 2, 2, s, false))
            .collect();
        assert!(within.contains(&0) && within.contains(&1));
    }
}
