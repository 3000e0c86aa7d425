//! What the run loop tells the protocol about its receive side beyond the
//! frames themselves: the receive ring's occupancy, which pause mode acts
//! on. (What happens to the frames themselves, the injected ECN marker
//! among it, is in `phy`.)
//!
//! Occupancy comes from the driver (`rte_eth_rx_queue_count`) where it can
//! tell. memif, af_packet and net_ring cannot in DPDK 22.11; there the loop
//! estimates it from what it can see: a burst that came back full means
//! the ring held at least that many more, so consecutive full bursts add
//! up, and a short burst means the ring is empty now. It is a lower bound
//! that rises while the receiver falls behind, which is what XOFF needs.

use crate::dpdk::{RxQueue, BURST};
use crate::proto::Endpoint;
use crate::time::Instant;

/// Receive-side signals of one run loop (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct RxSignals {
    /// Pause mode: observe the ring every loop.
    observe_ring: bool,
    /// The driver answers `queue_count` (probed once when enabled).
    driver_count: bool,
    /// The estimate when it does not.
    estimate: usize,
}

impl RxSignals {
    /// Starts observing `rx`'s ring (pause mode).
    pub fn observe(&mut self, rx: &RxQueue) {
        self.observe_ring = true;
        self.driver_count = rx.queue_count().is_some();
    }

    /// Pause mode: tells the endpoint the ring's occupancy after a burst
    /// that returned `n` frames.
    #[inline]
    pub fn after_burst(&mut self, rx: &RxQueue, n: usize, ep: &mut Endpoint, now: Instant) {
        if self.observe_ring {
            let occupancy = self.occupancy(rx, n, BURST);
            ep.observe_rx_ring(now, occupancy);
        }
    }

    /// Ring occupancy after a burst that returned `n` of at most `burst`.
    fn occupancy(&mut self, rx: &RxQueue, n: usize, burst: usize) -> usize {
        if self.driver_count {
            if let Some(c) = rx.queue_count() {
                return c;
            }
        }
        self.estimate = if n == burst { self.estimate + n } else { 0 };
        self.estimate
    }
}
