//! The settings of an endpoint's receive and transmit layers (`phy`):
//! fault injection, ECN marking and packet capture, set by the worker's
//! owner before or between runs of the loop, never per packet.

use super::Rpc;
use crate::fault::DropModel;
use crate::runtime::phy::{Capture, FaultSide};

impl<A> Rpc<A> {
    /// Counters of the fault injector, if one is set.
    pub fn fault_stats(&self) -> Option<crate::fault::DropStats> {
        self.phy.fault_stats()
    }

    /// Drops frames on purpose (seeded) on the RX or TX side of this endpoint.
    pub fn set_fault(&mut self, side: FaultSide, model: DropModel, seed: u64) {
        self.phy.set_fault(side, model, seed);
    }

    /// Marks received ECN-capable frames Congestion Experienced with
    /// probability `p` (seeded), as a marking switch would: tests DCQCN on
    /// links that have none (this kernel has no ECN qdisc on veth).
    pub fn set_ecn_marker(&mut self, p: f64, seed: u64) {
        self.phy.set_ecn_marker(p, seed);
    }

    /// Records every frame this endpoint receives (as rx_burst returns it,
    /// before the RX fault injector) and transmits (as it is queued for
    /// tx_burst, after the TX fault injector), stamped with the loop's clock.
    pub fn set_capture(&mut self, capture: Capture) {
        self.phy.set_capture(capture);
    }

    /// Stops capturing; the capture, for `Capture::finish`.
    pub fn take_capture(&mut self) -> Option<Capture> {
        self.phy.take_capture()
    }
}
