//! One direction of the in-memory link: its configuration and counters,
//! and what happens to a frame on it before the propagation delay: the
//! seeded loss model, then an optional bottleneck (serialisation at a rate
//! behind a bounded FIFO that tail-drops when full, marking ECN-capable
//! frames CE above a threshold, like a congested switch port).

use crate::fault::{DropModel, Dropper};
use crate::time::{Duration, Instant};
use crate::wire;
use std::collections::VecDeque;

/// Properties of one direction of the link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChannelConfig {
    /// One-way propagation delay.
    pub delay: Duration,
    /// Which packets are lost.
    pub drop: DropModel,
    /// Probability that a packet is held back by an extra delay drawn
    /// uniformly from `0..=reorder_max` (so later packets may overtake it).
    pub reorder_p: f64,
    /// Largest extra delay of a reordered packet.
    pub reorder_max: Duration,
    /// Probability that a packet is delivered twice.
    pub dup_p: f64,
    /// Bottleneck rate in bits/s; `None` means infinitely fast.
    pub rate_bps: Option<u64>,
    /// Packets the bottleneck queue holds (including the one being
    /// serialised) before tail-dropping. Ignored without `rate_bps`.
    pub queue_pkts: usize,
    /// Mark ECN-capable frames Congestion Experienced when they join a
    /// bottleneck queue holding at least this many (a step marker, as
    /// DCTCP configures RED; `None`: never mark).
    pub ecn_mark_pkts: Option<usize>,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        ChannelConfig {
            delay: Duration::from_micros(5),
            drop: DropModel::None,
            reorder_p: 0.0,
            reorder_max: Duration::ZERO,
            dup_p: 0.0,
            rate_bps: None,
            queue_pkts: 1024,
            ecn_mark_pkts: None,
        }
    }
}

/// Counters of one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Frames offered to the direction.
    pub sent: u64,
    /// Frames handed to the receiving endpoint (duplicates included).
    pub delivered: u64,
    /// Lost to the drop model.
    pub dropped_loss: u64,
    /// Tail-dropped at the full bottleneck queue.
    pub dropped_queue: u64,
    /// Lost because the receiver was disabled (`set_rx_enabled(.., false)`)
    /// or the filter said so.
    pub dropped_blocked: u64,
    /// Frames delivered a second time (`dup_p`).
    pub duplicated: u64,
    /// Dropped at the receiver's full receive ring (`Sim::set_rx_ring`).
    pub dropped_ring: u64,
    /// Frames marked CE at the bottleneck (`ecn_mark_pkts`).
    pub ecn_marked: u64,
    /// Frames held back by an extra delay (`reorder_p`).
    pub reordered: u64,
    /// Data frames cut to their headers by the trimmer (`Sim::set_trimmer`).
    pub trimmed: u64,
}

/// The state of one direction.
pub(super) struct Direction {
    pub cfg: ChannelConfig,
    dropper: Dropper,
    /// Departure times of frames in the bottleneck queue, oldest first.
    queue: VecDeque<Instant>,
    busy_until: Instant,
    pub stats: LinkStats,
}

impl Direction {
    /// A direction with its own loss stream, fixed by `seed`.
    pub fn new(cfg: ChannelConfig, seed: u64) -> Self {
        Direction {
            cfg,
            dropper: Dropper::new(cfg.drop, seed),
            queue: VecDeque::new(),
            busy_until: Instant::ZERO,
            stats: LinkStats::default(),
        }
    }

    /// `frame`, offered at `now`: lost (`None`, counted), or the time it
    /// leaves the bottleneck (`now` without one), marked CE if the queue
    /// it joined was long enough.
    pub fn admit(&mut self, now: Instant, frame: &mut [u8]) -> Option<Instant> {
        if self.dropper.should_drop() {
            self.stats.dropped_loss += 1;
            return None;
        }
        let cfg = self.cfg;
        let Some(rate) = cfg.rate_bps.filter(|&r| r > 0) else {
            return Some(now);
        };
        while self.queue.front().is_some_and(|&t| t <= now) {
            self.queue.pop_front();
        }
        if self.queue.len() >= cfg.queue_pkts {
            self.stats.dropped_queue += 1;
            return None;
        }
        if cfg.ecn_mark_pkts.is_some_and(|k| self.queue.len() >= k) && wire::mark_ce(frame) {
            self.stats.ecn_marked += 1;
        }
        let ser = Duration::from_nanos((frame.len() as u64 * 8 * 1_000_000_000).div_ceil(rate));
        let at = self.busy_until.max(now) + ser;
        self.busy_until = at;
        self.queue.push_back(at);
        Some(at)
    }
}
