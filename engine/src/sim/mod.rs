//! An in-memory link for two or more [`Endpoint`]s, driven in virtual time:
//! the deterministic test and research harness for the protocol core (the
//! quinn-proto/smoltcp approach). Each step jumps the clock to the next of
//! (a packet arrival, an endpoint timeout), delivers what is due, fires due
//! timers, then drains every endpoint's transmit and event queues.
//!
//! Every direction (ordered pair of nodes) has its own [`ChannelConfig`] and
//! state: fixed propagation delay, seeded loss from a [`DropModel`](crate::fault::DropModel),
//! reordering (a packet is held back by a random extra delay), duplication,
//! and an optional bottleneck: a serialisation rate with a bounded FIFO
//! queue that tail-drops when full, like a congested switch port. A seed
//! fixes every random choice, so a run is exactly reproducible.
//!
//! Frames are routed by destination: Ethernet broadcast goes to every other
//! node; otherwise to the node whose MAC, IP and UDP port match (by MAC
//! alone if the frame does not parse). The application side is a
//! [`SimApp`], called with every `Delivery` and `Event`.
//!
//! Layout: this file holds the event loop and routing; `link.rs` one
//! direction (loss, bottleneck queue, ECN marking), `host.rs` what a node
//! adds around its endpoint (receive ring, NIC pacing). The fabric lab
//! (switches, topologies, regimes) is a crate of its own, `lab`, which
//! drives the same endpoints through the engine's public API.

mod channel;
mod host;

pub use channel::{ChannelConfig, LinkStats};

use crate::proto::{Delivery, Endpoint, Event};
use crate::rng::Rng;
use crate::time::{Duration, Instant};
use crate::wire::{self, MacAddr};
use channel::Direction;
use host::Node;
use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};

/// The application side of a simulation.
pub trait SimApp {
    /// A request (server side) or response (client side) arrived at `node`.
    fn on_delivery(&mut self, node: usize, now: Instant, ep: &mut Endpoint, d: Delivery<'_>);
    /// An event of `node`'s endpoint.
    fn on_event(&mut self, node: usize, now: Instant, ep: &mut Endpoint, ev: Event) {
        let _ = (node, now, ep, ev);
    }
}

/// Decides per frame whether to drop it: `(now, from, to, frame) -> drop?`.
/// Also a convenient tap for tests that watch the wire.
pub type Filter = Box<dyn FnMut(Instant, usize, usize, &[u8]) -> bool>;

struct InFlight {
    at: Instant,
    seq: u64,
    from: usize,
    to: usize,
    frame: Vec<u8>,
}

impl PartialEq for InFlight {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for InFlight {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// The simulated network; see the module docs.
pub struct Sim {
    now: Instant,
    nodes: Vec<Node>,
    default_link: ChannelConfig,
    dirs: HashMap<(usize, usize), Direction>,
    in_flight: BinaryHeap<Reverse<InFlight>>,
    /// Recycled frame buffers.
    spare: Vec<Vec<u8>>,
    tx_buf: Vec<u8>,
    seq: u64,
    seed: u64,
    rng: Rng,
    filter: Option<Filter>,
    trimmer: Option<Filter>,
}

impl core::fmt::Debug for Sim {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Sim")
            .field("now", &self.now)
            .field("nodes", &self.nodes.len())
            .field("in_flight", &self.in_flight.len())
            .finish()
    }
}

impl Sim {
    /// An empty network whose every direction starts as `default_link`.
    pub fn new(seed: u64, default_link: ChannelConfig) -> Self {
        Sim {
            now: Instant::ZERO,
            nodes: Vec::new(),
            default_link,
            dirs: HashMap::new(),
            in_flight: BinaryHeap::new(),
            spare: Vec::new(),
            tx_buf: Vec::new(),
            seq: 0,
            seed,
            rng: Rng::new(seed ^ 0x5151_5151),
            filter: None,
            trimmer: None,
        }
    }

    /// Attaches an endpoint; returns its node index.
    pub fn add(&mut self, ep: Endpoint) -> usize {
        let need = ep.min_tx_buf_len();
        if self.tx_buf.len() < need {
            self.tx_buf.resize(need, 0);
        }
        self.nodes.push(Node::new(ep));
        self.nodes.len() - 1
    }

    /// The current virtual time.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// The endpoint of `node` (as returned by `add_node`). Panics if out of range.
    pub fn ep(&self, node: usize) -> &Endpoint {
        &self.nodes[node].ep
    }

    /// The endpoint of `node`, mutable. Panics if out of range.
    pub fn ep_mut(&mut self, node: usize) -> &mut Endpoint {
        &mut self.nodes[node].ep
    }

    /// Configures the direction `from -> to` (resetting its state).
    pub fn set_link(&mut self, from: usize, to: usize, cfg: ChannelConfig) {
        let d = self.new_dir(from, to, cfg);
        self.dirs.insert((from, to), d);
    }

    /// Configures both directions between `a` and `b`.
    pub fn set_link_both(&mut self, a: usize, b: usize, cfg: ChannelConfig) {
        self.set_link(a, b, cfg);
        self.set_link(b, a, cfg);
    }

    /// Stops (or resumes) delivering frames to `node`, including frames
    /// already in flight: models a dead or partitioned peer.
    pub fn set_rx_enabled(&mut self, node: usize, enabled: bool) {
        self.nodes[node].rx_enabled = enabled;
    }

    /// Installs a per-frame drop filter, consulted before the link model.
    pub fn set_filter(&mut self, f: Filter) {
        self.filter = Some(f);
    }

    /// Installs a per-frame trimmer, consulted after the drop filter: a
    /// data frame it says yes to is cut to its headers and marked
    /// ([`wire::mark_trimmed`]) before the link, as a UEC switch trims a
    /// packet its queue cannot keep (counted in [`LinkStats::trimmed`]).
    pub fn set_trimmer(&mut self, f: Filter) {
        self.trimmer = Some(f);
    }

    /// Removes the drop filter installed by [`Self::set_filter`].
    pub fn clear_filter(&mut self) {
        self.filter = None;
    }

    /// Counters of the direction `from -> to`.
    pub fn link_stats(&self, from: usize, to: usize) -> LinkStats {
        self.dirs
            .get(&(from, to))
            .map(|d| d.stats)
            .unwrap_or_default()
    }

    /// Frames currently on the wire.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Runs until nothing is left to do (no frames in flight, every
    /// endpoint idle: returns `true`; housekeeping timers such as
    /// keepalives do not count as work) or until `deadline` (returns
    /// `false`, with the clock at `deadline`).
    pub fn run_until<A: SimApp>(&mut self, app: &mut A, deadline: Instant) -> bool {
        self.run(app, deadline, true)
    }

    /// Runs until `deadline` even when idle, firing housekeeping timers
    /// (keepalives, idle reclamation) on the way.
    pub fn advance<A: SimApp>(&mut self, app: &mut A, d: Duration) {
        let deadline = self.now + d;
        self.run(app, deadline, false);
    }

    fn run<A: SimApp>(&mut self, app: &mut A, deadline: Instant, stop_when_idle: bool) -> bool {
        loop {
            self.flush(app);
            let next_ring = self
                .nodes
                .iter()
                .filter_map(|n| n.ring.as_ref().filter(|r| !r.frames.is_empty()))
                .map(|r| r.next_at.max(self.now))
                .min();
            let next_pkt = match (self.in_flight.peek().map(|Reverse(p)| p.at), next_ring) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if stop_when_idle && next_pkt.is_none() && self.nodes.iter().all(|n| n.ep.is_idle()) {
                return true;
            }
            let now = self.now;
            let next_timer = self
                .nodes
                .iter()
                .flat_map(|n| {
                    let tx =
                        (n.tx_free_at > now && n.ep.has_pending_transmit()).then_some(n.tx_free_at);
                    [n.ep.poll_timeout(), tx]
                })
                .flatten()
                .min();
            let next = match (next_pkt, next_timer) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(t) => t,
                    None => return true,
                },
            };
            if next > deadline {
                self.now = deadline;
                return false;
            }
            self.now = self.now.max(next);
            self.deliver_due(app);
            self.serve_rings(app);
            let now = self.now;
            for n in &mut self.nodes {
                if n.ep.poll_timeout().is_some_and(|t| t <= now) {
                    n.ep.handle_timeout(now);
                }
            }
        }
    }

    /// Runs for `d` of virtual time (see [`run_until`](Self::run_until)).
    pub fn run_for<A: SimApp>(&mut self, app: &mut A, d: Duration) -> bool {
        let deadline = self.now + d;
        self.run_until(app, deadline)
    }

    /// Drains transmit and event queues of all endpoints until quiet.
    fn flush<A: SimApp>(&mut self, app: &mut A) {
        let now = self.now;
        loop {
            let mut busy = false;
            for i in 0..self.nodes.len() {
                while self.nodes[i].tx_free_at <= now {
                    let Some(len) = self.nodes[i].ep.poll_transmit(now, &mut self.tx_buf) else {
                        break;
                    };
                    busy = true;
                    if let Some(bps) = self.nodes[i].tx_rate {
                        let ns = (len as u64 * 8 * 1_000_000_000).div_ceil(bps);
                        self.nodes[i].tx_free_at = now + Duration::from_nanos(ns);
                    }
                    self.route(i, len);
                }
                while let Some(ev) = self.nodes[i].ep.poll_event() {
                    busy = true;
                    app.on_event(i, now, &mut self.nodes[i].ep, ev);
                }
            }
            if !busy {
                return;
            }
        }
    }

    /// Sends the frame in `tx_buf[..len]` from `from` to its destination(s).
    fn route(&mut self, from: usize, len: usize) {
        let dst_mac = MacAddr(self.tx_buf[..6].try_into().unwrap_or([0; 6]));
        let dst = wire::parse_frame(&self.tx_buf[..len])
            .ok()
            .map(|p| (p.dst_ip, p.dst_port));
        for to in 0..self.nodes.len() {
            if to == from {
                continue;
            }
            let local = self.nodes[to].ep.local_addr();
            let hit = dst_mac.is_broadcast()
                || (dst_mac == local.mac && !matches!(dst, Some(d) if d != (local.ip, local.port)));
            if hit {
                self.send(from, to, len);
            }
        }
    }

    /// Puts one copy of `tx_buf[..len]` on the direction `from -> to`.
    fn send(&mut self, from: usize, to: usize, len: usize) {
        let now = self.now;
        if !self.dirs.contains_key(&(from, to)) {
            let d = self.new_dir(from, to, self.default_link);
            self.dirs.insert((from, to), d);
        }
        let blocked = match self.filter.as_mut() {
            Some(f) => f(now, from, to, &self.tx_buf[..len]),
            None => false,
        };
        let Some(dir) = self.dirs.get_mut(&(from, to)) else {
            return; // unreachable: inserted above
        };
        dir.stats.sent += 1;
        if blocked {
            dir.stats.dropped_blocked += 1;
            return;
        }
        let mut len = len;
        if let Some(t) = self.trimmer.as_mut() {
            if t(now, from, to, &self.tx_buf[..len]) {
                if let Some(n) = wire::mark_trimmed(&mut self.tx_buf[..len]) {
                    len = n;
                    dir.stats.trimmed += 1;
                }
            }
        }
        let Some(mut at) = dir.admit(now, &mut self.tx_buf[..len]) else {
            return;
        };
        let cfg = dir.cfg;
        at += cfg.delay;
        if self.rng.chance(cfg.reorder_p) {
            dir.stats.reordered += 1;
            at += Duration::from_nanos(self.rng.below(cfg.reorder_max.as_nanos() + 1));
        }
        let copies = if self.rng.chance(cfg.dup_p) {
            dir.stats.duplicated += 1;
            2
        } else {
            1
        };
        for c in 0..copies {
            let mut frame = self.spare.pop().unwrap_or_default();
            frame.clear();
            frame.extend_from_slice(&self.tx_buf[..len]);
            self.seq += 1;
            self.in_flight.push(Reverse(InFlight {
                at: at + Duration::from_nanos(c),
                seq: self.seq,
                from,
                to,
                frame,
            }));
        }
    }

    /// Hands every frame due at `now` to its endpoint.
    fn deliver_due<A: SimApp>(&mut self, app: &mut A) {
        let now = self.now;
        while self.in_flight.peek().is_some_and(|Reverse(p)| p.at <= now) {
            let Some(Reverse(p)) = self.in_flight.pop() else {
                break;
            };
            let node = &mut self.nodes[p.to];
            if let Some(end) = node.stalled_until(now) {
                // The same seq keeps the held frames in their order.
                self.in_flight.push(Reverse(InFlight { at: end, ..p }));
                continue;
            }
            let stats = self.dirs.get_mut(&(p.from, p.to)).map(|d| &mut d.stats);
            if !node.rx_enabled {
                if let Some(s) = stats {
                    s.dropped_blocked += 1;
                }
            } else {
                if let Some(ring) = node.ring.as_mut() {
                    if ring.frames.len() >= ring.capacity {
                        if let Some(s) = stats {
                            s.dropped_ring += 1;
                        }
                        self.spare.push(p.frame);
                    } else {
                        if let Some(s) = stats {
                            s.delivered += 1;
                        }
                        ring.frames.push_back((p.from, p.frame));
                        ring.peak = ring.peak.max(ring.frames.len());
                        node.ep.observe_rx_ring(now, ring.frames.len());
                    }
                    continue;
                }
                if let Some(s) = stats {
                    s.delivered += 1;
                }
                if let Some(d) = node.ep.handle_frame(now, &p.frame) {
                    app.on_delivery(p.to, now, &mut node.ep, d);
                }
            }
            self.spare.push(p.frame);
        }
    }

    fn new_dir(&self, from: usize, to: usize, cfg: ChannelConfig) -> Direction {
        // Each direction gets its own loss stream, fixed by (seed, from, to).
        let seed =
            self.seed ^ ((from as u64) << 32 | to as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Direction::new(cfg, seed)
    }
}
