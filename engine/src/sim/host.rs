//! A simulated host around its endpoint: whether it receives at all,
//! whether it stalls (a descheduled process), its receive ring (frames wait there for an endpoint that takes one per
//! service time, and a full ring drops), and its NIC's pacing (the next
//! frame is taken from the endpoint only when the last has been
//! serialised).

use super::{Sim, SimApp};
use crate::proto::Endpoint;
use crate::time::{Duration, Instant};
use std::collections::VecDeque;

pub(super) struct Node {
    pub ep: Endpoint,
    pub rx_enabled: bool,
    pub ring: Option<RxRing>,
    /// NIC pacing (`Sim::set_tx_rate`): bits/s, and when the current frame
    /// has left.
    pub tx_rate: Option<u64>,
    pub tx_free_at: Instant,
    /// Periodic stalls (`Sim::set_stalls`): every `.0`, the first `.1`.
    pub stalls: Option<(Duration, Duration)>,
}

/// A node's receive ring (see [`Sim::set_rx_ring`]).
pub(super) struct RxRing {
    pub capacity: usize,
    /// Time the endpoint takes per frame.
    service: Duration,
    pub frames: VecDeque<(usize, Vec<u8>)>,
    /// When the endpoint can take the next frame.
    pub next_at: Instant,
    pub peak: usize,
}

impl Node {
    /// When the stall `now` falls in ends, if it falls in one.
    pub fn stalled_until(&self, now: Instant) -> Option<Instant> {
        let (period, length) = self.stalls?;
        let into = now.as_nanos() % period.as_nanos();
        (into < length.as_nanos())
            .then(|| Instant::from_nanos(now.as_nanos() - into + length.as_nanos()))
    }

    pub fn new(ep: Endpoint) -> Self {
        Node {
            ep,
            rx_enabled: true,
            ring: None,
            tx_rate: None,
            tx_free_at: Instant::ZERO,
            stalls: None,
        }
    }
}

impl Sim {
    /// Gives `node` a receive ring of `capacity` frames that its endpoint
    /// drains at one frame per `service` (a slow receiver): arriving frames
    /// wait there, a full ring drops them (`LinkStats::dropped_ring`), and
    /// the endpoint is told the occupancy after every change
    /// ([`Endpoint::observe_rx_ring`], which pause mode acts on).
    pub fn set_rx_ring(&mut self, node: usize, capacity: usize, service: Duration) {
        self.nodes[node].ring = Some(RxRing {
            capacity,
            service,
            frames: VecDeque::new(),
            next_at: Instant::ZERO,
            peak: 0,
        });
    }

    /// Makes `node` send like a NIC with a one-frame transmit ring at
    /// `bps`: it takes the next frame from its endpoint only when the last
    /// one has been serialised, so what the endpoint holds back (pause,
    /// credits) is not already queued on the wire.
    pub fn set_tx_rate(&mut self, node: usize, bps: u64) {
        self.nodes[node].tx_rate = Some(bps.max(1));
    }

    /// The frames `node`'s receive ring holds now (0 without one).
    pub fn rx_ring_len(&self, node: usize) -> usize {
        self.nodes[node].ring.as_ref().map_or(0, |r| r.frames.len())
    }

    /// Makes `node` stall for `length` at the start of every `period` of
    /// virtual time, as a descheduled vCPU or run loop does: frames that
    /// reach it meanwhile wait and are handed over, in order, when the
    /// stall ends. Nothing is lost or queued in the network: the link
    /// stays idle, only the samples of time the endpoint takes grow.
    pub fn set_stalls(&mut self, node: usize, period: Duration, length: Duration) {
        let length =
            Duration::from_nanos(length.as_nanos().min(period.as_nanos().saturating_sub(1)));
        self.nodes[node].stalls = (period.as_nanos() > 0).then_some((period, length));
    }

    /// The most frames `node`'s receive ring held at once (0 without one).
    pub fn rx_ring_peak(&self, node: usize) -> usize {
        self.nodes[node].ring.as_ref().map_or(0, |r| r.peak)
    }

    /// Lets every endpoint with a receive ring take the frames it has had
    /// time for by now.
    pub(super) fn serve_rings<A: SimApp>(&mut self, app: &mut A) {
        let now = self.now;
        for (i, node) in self.nodes.iter_mut().enumerate() {
            let Some(ring) = node.ring.as_mut() else {
                continue;
            };
            while ring.next_at <= now {
                let Some((_, frame)) = ring.frames.pop_front() else {
                    break;
                };
                ring.next_at = now + ring.service;
                node.ep.observe_rx_ring(now, ring.frames.len());
                if let Some(d) = node.ep.handle_frame(now, &frame) {
                    app.on_delivery(i, now, &mut node.ep, d);
                }
                self.spare.push(frame);
            }
        }
    }
}
