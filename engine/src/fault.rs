//! Seeded packet-drop injectors, shared by the in-memory link (`sim`) and the
//! DPDK run loop. A [`Dropper`] answers one question per packet, "drop this
//! one?", from a [`DropModel`] and a seed, so a seed fully determines which
//! packets of a run are lost. Two models: independent (uniform) loss, and the
//! two-state Gilbert-Elliott chain, which produces bursts of loss like a
//! congested switch port or a briefly overrun receive ring.
//!
//! No clock, no allocation: one `Rng` step (two in Gilbert-Elliott) per call.

use crate::rng::Rng;

/// How packets are chosen for dropping.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum DropModel {
    /// Never drop.
    #[default]
    None,
    /// Drop each packet independently with probability `p`.
    Uniform {
        /// Loss probability per packet, in [0, 1].
        p: f64,
    },
    /// Two-state Markov chain evaluated once per packet: in the Good state a
    /// packet is lost with probability `loss_good`, in the Bad state with
    /// `loss_bad`; after each packet the chain moves Good -> Bad with
    /// probability `p_good_to_bad` and Bad -> Good with `p_bad_to_good`.
    /// The mean burst (Bad-state) length is `1 / p_bad_to_good` packets, and
    /// the long-run loss rate is `pi_good * loss_good + pi_bad * loss_bad` with
    /// `pi_bad = p_good_to_bad / (p_good_to_bad + p_bad_to_good)`.
    GilbertElliott {
        /// Per-packet probability of moving Good -> Bad.
        p_good_to_bad: f64,
        /// Per-packet probability of moving Bad -> Good.
        p_bad_to_good: f64,
        /// Loss probability in the Good state.
        loss_good: f64,
        /// Loss probability in the Bad state.
        loss_bad: f64,
    },
}

impl DropModel {
    /// The long-run fraction of packets this model drops.
    pub fn expected_loss(&self) -> f64 {
        match *self {
            DropModel::None => 0.0,
            DropModel::Uniform { p } => p.clamp(0.0, 1.0),
            DropModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => {
                let total = p_good_to_bad + p_bad_to_good;
                if total <= 0.0 {
                    // The chain never leaves its initial (Good) state.
                    return loss_good.clamp(0.0, 1.0);
                }
                let pi_bad = p_good_to_bad / total;
                (1.0 - pi_bad) * loss_good.clamp(0.0, 1.0) + pi_bad * loss_bad.clamp(0.0, 1.0)
            }
        }
    }
}

/// Counters of one [`Dropper`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropStats {
    /// Packets the dropper was asked about.
    pub seen: u64,
    /// Packets it chose to drop.
    pub dropped: u64,
    /// Good -> Bad transitions (Gilbert-Elliott only): the number of bursts.
    pub bursts: u64,
}

/// A seeded drop decision source. See the module docs.
#[derive(Clone, Debug)]
pub struct Dropper {
    model: DropModel,
    rng: Rng,
    /// Gilbert-Elliott state; starts Good.
    bad: bool,
    stats: DropStats,
}

impl Dropper {
    /// A dropper for `model`, starting in the Good state; `seed` fixes its decisions.
    pub fn new(model: DropModel, seed: u64) -> Self {
        Dropper {
            model,
            rng: Rng::new(seed),
            bad: false,
            stats: DropStats::default(),
        }
    }

    /// Decides the fate of the next packet: `true` means drop it.
    pub fn should_drop(&mut self) -> bool {
        self.stats.seen += 1;
        let drop = match self.model {
            DropModel::None => false,
            DropModel::Uniform { p } => self.rng.chance(p),
            DropModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => {
                let drop = self.rng.chance(if self.bad { loss_bad } else { loss_good });
                if self.bad {
                    if self.rng.chance(p_bad_to_good) {
                        self.bad = false;
                    }
                } else if self.rng.chance(p_good_to_bad) {
                    self.bad = true;
                    self.stats.bursts += 1;
                }
                drop
            }
        };
        if drop {
            self.stats.dropped += 1;
        }
        drop
    }

    /// The model this dropper follows.
    pub fn model(&self) -> DropModel {
        self.model
    }

    /// Counters so far.
    pub fn stats(&self) -> DropStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(model: DropModel, seed: u64, n: u64) -> (f64, DropStats) {
        let mut d = Dropper::new(model, seed);
        for _ in 0..n {
            d.should_drop();
        }
        let s = d.stats();
        assert_eq!(s.seen, n);
        (s.dropped as f64 / n as f64, s)
    }

    #[test]
    fn none_never_drops() {
        let (r, s) = rate(DropModel::None, 1, 10_000);
        assert_eq!(r, 0.0);
        assert_eq!(s.dropped, 0);
    }

    #[test]
    fn uniform_rates_match_p() {
        // 200k trials: the standard deviation of the rate at p = 0.01 is
        // sqrt(p(1-p)/n) ~ 0.00022, so +-10 % of p is > 4 sigma.
        for (p, seed) in [(0.001, 3), (0.01, 4), (0.1, 5), (0.5, 6)] {
            let (r, _) = rate(DropModel::Uniform { p }, seed, 200_000);
            let tol = (p * 0.1).max(4.0 * (p * (1.0 - p) / 200_000.0).sqrt());
            assert!((r - p).abs() < tol, "p={p} rate={r}");
        }
        let (r, _) = rate(DropModel::Uniform { p: 1.0 }, 7, 1000);
        assert_eq!(r, 1.0);
    }

    #[test]
    fn gilbert_elliott_matches_stationary_rate_and_bursts() {
        let model = DropModel::GilbertElliott {
            p_good_to_bad: 0.01,
            p_bad_to_good: 0.2,
            loss_good: 0.0,
            loss_bad: 0.5,
        };
        let expected = model.expected_loss(); // 0.01/0.21 * 0.5 ~ 0.0238
        let (r, s) = rate(model, 11, 400_000);
        assert!(
            (r - expected).abs() < expected * 0.1,
            "rate={r} expected={expected}"
        );
        // Mean time in Good is 100 packets: ~400k / 105 bursts.
        assert!((3_300..4_300).contains(&s.bursts), "bursts={}", s.bursts);
    }

    #[test]
    fn gilbert_elliott_is_burstier_than_uniform() {
        // Same average loss; count drops whose predecessor was also dropped.
        let ge = DropModel::GilbertElliott {
            p_good_to_bad: 0.005,
            p_bad_to_good: 0.1,
            loss_good: 0.0,
            loss_bad: 0.8,
        };
        let uni = DropModel::Uniform {
            p: ge.expected_loss(),
        };
        let consecutive = |m: DropModel| {
            let mut d = Dropper::new(m, 99);
            let mut prev = false;
            let mut n = 0;
            for _ in 0..200_000 {
                let cur = d.should_drop();
                if cur && prev {
                    n += 1;
                }
                prev = cur;
            }
            n
        };
        let (c_ge, c_uni) = (consecutive(ge), consecutive(uni));
        assert!(c_ge > 10 * c_uni, "ge={c_ge} uniform={c_uni}");
    }

    #[test]
    fn same_seed_same_decisions() {
        let m = DropModel::Uniform { p: 0.3 };
        let mut a = Dropper::new(m, 42);
        let mut b = Dropper::new(m, 42);
        let va: Vec<bool> = (0..1000).map(|_| a.should_drop()).collect();
        let vb: Vec<bool> = (0..1000).map(|_| b.should_drop()).collect();
        assert_eq!(va, vb);
        let mut c = Dropper::new(m, 43);
        let vc: Vec<bool> = (0..1000).map(|_| c.should_drop()).collect();
        assert_ne!(va, vc);
    }
}
