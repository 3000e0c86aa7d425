//! The fault-injection stage: drops frames on purpose, on one side of the
//! device, from a seeded [`Dropper`]. The decision for the k-th frame that
//! reaches the stage depends on the seed and k only (not on the frame's
//! bytes or the time), so a seed fixes which frames a run loses.

use crate::fault::{DropModel, DropStats, Dropper};

/// Which side of the wire the fault injector sits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultSide {
    /// Drop frames after rx_burst, before the endpoint sees them.
    Rx,
    /// Drop frames the endpoint wrote, before tx_burst.
    Tx,
}

/// One side's fault injector (see the module docs).
#[derive(Clone, Debug)]
pub(crate) struct FaultDrop {
    dropper: Dropper,
}

impl FaultDrop {
    /// Drops frames following `model`, decisions fixed by `seed`.
    pub fn new(model: DropModel, seed: u64) -> Self {
        FaultDrop {
            dropper: Dropper::new(model, seed),
        }
    }

    /// Whether the next frame through this stage is dropped.
    #[inline]
    pub fn drops(&mut self) -> bool {
        self.dropper.should_drop()
    }

    /// Frames seen and dropped so far.
    pub fn stats(&self) -> DropStats {
        self.dropper.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decisions_are_the_seeded_droppers() {
        // The stage makes exactly the decisions the run loop made inline
        // before it was a stage: one `Dropper` draw per frame.
        let model = DropModel::Uniform { p: 0.3 };
        let mut stage = FaultDrop::new(model, 7);
        let mut bare = Dropper::new(model, 7);
        let a: Vec<bool> = (0..2000).map(|_| stage.drops()).collect();
        let b: Vec<bool> = (0..2000).map(|_| bare.should_drop()).collect();
        assert_eq!(a, b);
        let dropped = a.iter().filter(|&&d| d).count() as u64;
        assert_eq!(stage.stats().seen, 2000);
        assert_eq!(stage.stats().dropped, dropped);
        assert!(
            (450..750).contains(&dropped),
            "{dropped} of 2000 at p = 0.3"
        );
    }

    #[test]
    fn p_zero_and_one() {
        let mut never = FaultDrop::new(DropModel::Uniform { p: 0.0 }, 1);
        let mut always = FaultDrop::new(DropModel::Uniform { p: 1.0 }, 1);
        assert!((0..500).all(|_| !never.drops() && always.drops()));
        assert_eq!(never.stats().dropped, 0);
        assert_eq!(always.stats().dropped, 500);
    }
}
