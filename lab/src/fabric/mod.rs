//! The fabric lab: a deterministic virtual-time datacenter fabric whose
//! hosts run the engine's own [`Endpoint`]s, unchanged. The code that runs
//! on memif is the code that runs here on hundreds of hosts.
//!
//! - Hosts (`nic.rs`): an endpoint, a NIC that serialises at line rate and
//!   takes the next frame from the endpoint only when the last has left,
//!   and a finite receive ring (a slow host drains it at a service rate;
//!   overflow is a counted drop).
//! - Switches (`switch.rs`): egress FIFOs over a shared buffer, tail drop by
//!   dynamic threshold, RED-like ECN marking, PFC per ingress port (XOFF and
//!   XON frames that take a link delay to land, headroom; `pfc.rs`), link-level
//!   credits (InfiniBand), an uplink by the packet's entropy or spraying,
//!   packet trimming onto a priority queue (`trim.rs`).
//! - Topologies (`topology.rs`), routes over degraded and failed links
//!   (`routing.rs`) and their queues' thresholds (`queues.rs`), path selection at the NICs (`paths.rs`), regimes (`fabric_regime.rs`), the
//!   hosts' message buffers and whether payload bytes move (`buffers.rs`),
//!   scenarios and flow sizes (`scenario.rs`, `cdf.rs`), the application that turns flows
//!   into RPCs (`flows.rs`), metrics (`metrics.rs`) and the runner that ties
//!   one scenario to one regime (`run.rs`).
//!
//! Everything is a pure function of the configuration and the seed: events
//! at equal times run in the order they were scheduled.

mod buffers;
pub mod cdf;
mod config;
mod event;
mod fabric_regime;
mod flows;
pub mod matrix;
pub mod metrics;
mod nic;
mod packets;
mod paths;
mod pfc;
mod port;
mod queues;
mod routing;
mod run;
pub mod scenario;
mod switch;
pub mod topology;
mod trim;

pub use buffers::{Buffers, HeadersOnly};
pub use config::{FabricConfig, Pfc, Red, ETH_OVERHEAD};
pub use fabric_regime::{not_applied, FabricRegime};
pub use paths::PathSelection;
pub use run::{run_regime, run_regime_in, FabricReport, Progress, RegimeResult};

use engine::proto::Endpoint;
use engine::rng::Rng;
use event::{Ev, Events};
use flows::Flows;
use packets::{Pkt, HEADERS_ONLY_STRIDE};
use port::{Hop, Port};
use std::collections::VecDeque;
use topology::{Role, Topology};

/// Counters of one fabric run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FabricStats {
    /// Frames the hosts' NICs put on the wire.
    pub sim_pkts: u64,
    /// Frames handed to an endpoint.
    pub delivered: u64,
    /// Dropped in a switch (buffer or dynamic threshold, or PFC headroom).
    pub drops_switch: u64,
    /// Of `drops_switch`: PFC headroom overflows (lossless violations).
    pub drops_headroom: u64,
    /// Dropped at a host's full receive ring.
    pub drops_host_ring: u64,
    /// Frames addressed to no host.
    pub drops_unroutable: u64,
    /// Frames lost by a host NIC's injected loss (`FabricConfig::loss`).
    pub drops_loss: u64,
    /// PFC frames sent (XOFF and XON), by switches and hosts.
    pub pause_frames: u64,
    /// Time egress ports spent paused, summed over ports, in ns.
    pub paused_ns: u64,
    /// Egress ports (links, one direction) that were ever paused.
    pub links_paused: u64,
    /// Frames marked CE by a switch.
    pub ecn_marks: u64,
    /// Data packets a switch cut to their headers (`FabricConfig::trim`).
    pub trims: u64,
    /// Of `drops_switch`: trimmed headers dropped because the port's
    /// priority queue was full too.
    pub drops_trimmed: u64,
    /// The most bytes any one switch buffered at once.
    pub peak_buffer_bytes: u64,
    /// Events the simulator processed.
    pub events: u64,
}

#[derive(Debug)]
struct Switch {
    role: Role,
    first_port: u32,
    used: u64,
    capacity: u64,
    peak: u64,
    /// Per-packet spraying: the next uplink to use.
    spray_next: u32,
}

/// How many queued `HostTimer` times a host's entry in
/// [`Fabric::timers_queued`] keeps: the retransmission timeout, and a
/// pacer's deadline that a nearer one went before (one kept time left
/// every copy in place). An event beyond these is still pushed, just not
/// reused.
const TIMERS_KEPT: usize = 2;
/// No queued timer in that place.
const NO_TIMER: u64 = u64::MAX;

/// A host: its NIC's receive side, then its endpoint. In this order (C
/// layout): an arrival reads the NIC's fields first, and they share the
/// line the prefetch loads first (Rust's layout put them after the
/// endpoint's 2 kB, on a line of their own that nothing prefetched).
#[derive(Debug)]
#[repr(C)]
struct Host {
    /// The time of the armed `HostTimer` event, `u64::MAX` if none.
    timer_at: u64,
    /// Per-frame service time; 0 is a host that keeps up with any rate.
    service_ns: u64,
    next_serve_at: u64,
    ring: VecDeque<u32>,
    serve_pending: bool,
    ep: Endpoint,
}

// The NIC's fields fit the host's first line, before the endpoint.
const _: () = assert!(std::mem::offset_of!(Host, ep) <= 64);

/// The simulated fabric; see the module docs.
pub struct Fabric {
    cfg: FabricConfig,
    topo: Topology,
    now: u64,
    events: Events,
    pkts: Vec<Pkt>,
    /// Packet `i`'s frame bytes are `frames[i * frame_stride..][..len]`:
    /// one arena, so a frame's address needs no load (it can be prefetched
    /// from the event that names the packet) and headers sit densely.
    frames: Vec<u8>,
    /// Bytes per frame slot: the endpoints' transmit size, in whole cache
    /// lines, or less when no payload moves.
    frame_stride: usize,
    /// The endpoints move no payload bytes ([`HeadersOnly`]).
    headers_only: bool,
    free_pkts: Vec<u32>,
    ports: Vec<Port>,
    switches: Vec<Switch>,
    hosts: Vec<Host>,
    uplinks: u32,
    /// Hosts per leaf, as routing divides by it.
    hpl: topology::Divisor,
    /// The live uplinks towards each leaf, and the choice among them.
    routes: routing::Routes,
    paths: paths::Paths,
    rng: Rng,
    /// Bytes of a transmit buffer every endpoint accepts.
    tx_len: usize,
    stats: FabricStats,
    app: Flows,
    /// Trimming threshold of every switch egress queue, bytes (`u64::MAX`:
    /// no trimming, or a fabric that does not drop for lack of room).
    trim_at: u64,
    /// The thresholds of a degraded link's queue (`queues.rs`).
    degraded: queues::Degraded,
    /// The least egress queue at which a switch may touch a frame
    /// ([`queues::frame_touch_from`]).
    frame_touch_from: u64,
    /// Per host, times of `HostTimer` events still queued ([`NO_TIMER`]
    /// for none), so that arming the timer for such a time again reuses
    /// the event (`nic.rs`). Beside the hosts, not in them: the NIC's
    /// fields fill the host's first line.
    timers_queued: Vec<[u64; TIMERS_KEPT]>,
    /// Host receive ring occupancy at which a host sends XOFF (PFC).
    host_xoff: usize,
    host_xon: usize,
}

impl core::fmt::Debug for Fabric {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Fabric")
            .field("now_ns", &self.now)
            .field("hosts", &self.hosts.len())
            .field("switches", &self.switches.len())
            .field("events", &self.events.len())
            .finish()
    }
}

impl Fabric {
    /// Builds `topo` with `cfg`, one endpoint per host (`endpoints[h]`
    /// must be addressed as [`host_addr`]`(h)`), and the application that
    /// will run `app`'s flows; `headers_only`: the endpoints move no
    /// payload bytes.
    fn build(
        cfg: FabricConfig,
        topo: Topology,
        endpoints: Vec<Endpoint>,
        app: Flows,
        seed: u64,
        headers_only: bool,
    ) -> Result<Fabric, String> {
        let (shapes, nics) = topology::build(&topo);
        let plan = routing::plan(&cfg, &topo, &shapes)?;
        let hosts = topo.hosts();
        let mut first = Vec::with_capacity(shapes.len());
        let mut n = hosts as u32;
        for s in &shapes {
            first.push(n);
            n += s.ports.len() as u32;
        }
        let host_ps = 8_000_000_000_000 / cfg.host_link_bps;
        let fabric_ps = 8_000_000_000_000 / cfg.fabric_link_bps;
        let delay_ns = cfg.link_delay.as_nanos();
        let credit_bytes = cfg.link_credits.map_or(0, |c| c as i64);
        let credit_frames = cfg.host_ring as i64;
        let xoff = cfg.pfc.map_or(0, |p| p.xoff);
        let host_limit = xoff + cfg.pfc_headroom_at(cfg.host_link_bps);
        let fabric_limit = xoff + cfg.pfc_headroom_at(cfg.fabric_link_bps);
        let port =
            |owner: u32, ps: u64, to: Hop, reverse: u32, credits: i64, pfc_limit: u64| Port {
                ps_per_byte: ps.max(1),
                delay_ns,
                owner,
                to,
                reverse,
                busy_until: 0,
                tx_due: u64::MAX,
                paused: false,
                paused_since: 0,
                ever_paused: false,
                credits,
                sent: 0,
                front: port::NO_PKT,
                queue: VecDeque::new(),
                queue_bytes: 0,
                hi: VecDeque::new(),
                hi_bytes: 0,
                ingress_bytes: 0,
                pfc_limit,
                xoff_sent: false,
                class: queues::QueueClass::Normal,
            };
        let mut ports = Vec::with_capacity(n as usize);
        for &(sw, p) in &nics {
            ports.push(port(
                u32::MAX,
                host_ps,
                Hop::Switch,
                first[sw] + p as u32,
                credit_bytes,
                host_limit,
            ));
        }
        for (s, shape) in shapes.iter().enumerate() {
            let owner = s as u32;
            for peer in &shape.ports {
                ports.push(match *peer {
                    topology::Peer::Host(h) => port(
                        owner,
                        host_ps,
                        Hop::Host(h as u32),
                        h as u32,
                        credit_frames,
                        host_limit,
                    ),
                    topology::Peer::Switch { switch, port: p } => port(
                        owner,
                        fabric_ps,
                        Hop::Switch,
                        first[switch] + p as u32,
                        credit_bytes,
                        fabric_limit,
                    ),
                });
            }
        }
        queues::degrade(&mut ports, &plan.degraded, &first, &cfg);
        let switches = shapes
            .iter()
            .zip(&first)
            .map(|(s, &f)| Switch {
                role: s.role,
                first_port: f,
                used: 0,
                capacity: cfg.buffer_per_port * s.ports.len() as u64,
                peak: 0,
                spray_next: 0,
            })
            .collect();
        let tx_len = endpoints
            .iter()
            .map(|e| e.min_tx_buf_len())
            .max()
            .unwrap_or(0)
            .max(cfg.mtu + ETH_OVERHEAD);
        let hosts_v = endpoints
            .into_iter()
            .map(|ep| Host {
                ep,
                timer_at: u64::MAX,
                ring: VecDeque::new(),
                service_ns: 0,
                next_serve_at: 0,
                serve_pending: false,
            })
            .collect();
        // A host pauses its switch port while fewer ring entries are free
        // than its link's headroom could fill with minimum-size frames.
        let host_xoff = match cfg.pfc {
            Some(_) => {
                let headroom = cfg.pfc_headroom_at(cfg.host_link_bps);
                cfg.host_ring
                    .saturating_sub(headroom.div_ceil(64) as usize)
                    .max(1)
            }
            None => usize::MAX,
        };
        let pairs = app.flows.iter().map(|f| (f.spec.src, f.spec.dst));
        let paths = paths::Paths::new(cfg.path_selection, hosts, pairs, seed);
        let degraded = queues::Degraded::new(&cfg);
        Ok(Fabric {
            topo,
            now: 0,
            // A frame's hop (serialisation and delay) is the longest step
            // most events take; room for a few.
            events: Events::with_horizon(
                4 * (delay_ns
                    + config::ser_ns(cfg.max_frame(), cfg.host_link_bps.min(cfg.fabric_link_bps))),
                hosts,
            ),
            pkts: Vec::new(),
            frames: Vec::new(),
            frame_stride: if headers_only {
                HEADERS_ONLY_STRIDE
            } else {
                tx_len.next_multiple_of(64)
            },
            headers_only,
            free_pkts: Vec::new(),
            ports,
            switches,
            hosts: hosts_v,
            uplinks: topo.uplinks() as u32,
            hpl: topology::Divisor::new(topo.hosts_per_leaf()),
            routes: plan.routes,
            paths,
            rng: Rng::new(seed ^ 0xFAB_41C),
            tx_len,
            stats: FabricStats::default(),
            app,
            host_xoff,
            host_xon: host_xoff.saturating_sub(8),
            trim_at: queues::trim_at(&cfg),
            degraded,
            frame_touch_from: queues::frame_touch_from(&cfg, &degraded),
            timers_queued: vec![[NO_TIMER; TIMERS_KEPT]; hosts],
            cfg,
        })
    }

    /// Makes host `h` take one frame per `service` from its receive ring.
    fn set_slow_host(&mut self, h: usize, service_ns: u64) {
        self.hosts[h].service_ns = service_ns;
    }

    /// Runs events until every flow is done or `deadline_ns`; `progress`, every
    /// 2^20 events, ends the run early by returning false (a signal).
    fn run(&mut self, deadline_ns: u64, progress: &mut dyn FnMut(&Fabric) -> bool) {
        while !self.app.all_done() {
            let Some((at, ev)) = self.events.pop_by(deadline_ns) else {
                if self.events.len() > 0 {
                    self.now = deadline_ns; // stopped by the bound
                }
                break;
            };
            self.now = at;
            self.prefetch_ahead();
            self.dispatch(ev);
            self.stats.events += 1;
            if self.stats.events & ((1 << 20) - 1) == 0 && !progress(self) {
                break;
            }
        }
        self.close_pauses();
    }

    fn dispatch(&mut self, ev: Ev) {
        match ev {
            Ev::HostTxDone(h) => {
                if self.take_tx_due(h) {
                    self.host_try_send(h as usize);
                }
            }
            Ev::HostTimer(h) => self.host_timer(h as usize),
            Ev::HostServe(h) => self.host_serve(h as usize),
            Ev::AtHost { host, pkt } => self.at_host(host as usize, pkt),
            Ev::AtSwitch { ingress, pkt } => self.at_switch(ingress, pkt),
            Ev::PortTxDone(g) => {
                if self.take_tx_due(g) {
                    self.switch_try_tx(g);
                }
            }
            Ev::Pause { port, on } => self.pause(port, on),
            Ev::Credit { port, units } => {
                self.ports[port as usize].credits += units as i64;
                self.wake(port);
            }
            Ev::FlowStart(f) => {
                let now = engine::time::Instant(self.now);
                let h = self
                    .app
                    .start(f as usize, now, &mut HostEps(&mut self.hosts));
                if let Some(h) = h {
                    self.after_ep(h);
                }
            }
        }
    }

    /// Whether a tx-done event of egress `g` at `now` is the live one (and
    /// if so, consumes it).
    fn take_tx_due(&mut self, g: u32) -> bool {
        let p = &mut self.ports[g as usize];
        if p.tx_due != self.now {
            return false;
        }
        p.tx_due = u64::MAX;
        true
    }

    /// Schedules egress `g`'s tx-done event for when it is free, unless
    /// that one is already scheduled.
    fn arm_tx_done(&mut self, g: u32, host: bool) {
        let p = &mut self.ports[g as usize];
        if p.tx_due == p.busy_until {
            return;
        }
        p.tx_due = p.busy_until;
        let ev = if host {
            Ev::HostTxDone(g)
        } else {
            Ev::PortTxDone(g)
        };
        self.events.push(p.busy_until, ev);
    }

    /// Resumes sending on egress `g` after a pause or credit change.
    fn wake(&mut self, g: u32) {
        if (g as usize) < self.hosts.len() {
            self.host_try_send(g as usize);
        } else {
            self.switch_try_tx(g);
        }
    }

    /// Puts packet `pkt` on egress `g`, which is free: it arrives at the far
    /// end when its last bit has crossed the link.
    fn transmit(&mut self, g: u32, pkt: u32, len: u64, cost: i64) {
        let now = self.now;
        let p = &mut self.ports[g as usize];
        p.busy_until = now + p.ser_ns(len);
        p.credits -= cost;
        p.sent = p.sent.saturating_add(1);
        let at = p.busy_until + p.delay_ns;
        let ev = match p.to {
            Hop::Host(host) => Ev::AtHost { host, pkt },
            Hop::Switch => Ev::AtSwitch {
                ingress: p.reverse,
                pkt,
            },
        };
        self.events.push(at, ev);
    }

    /// Credit units a frame of `len` costs on egress `g` (frames towards a
    /// host's ring, bytes towards a switch), 0 without link credits.
    fn credit_cost(&self, g: u32, len: u64) -> i64 {
        if self.cfg.link_credits.is_none() {
            return 0;
        }
        match self.ports[g as usize].to {
            Hop::Host(_) => 1,
            Hop::Switch => len as i64,
        }
    }

    /// Leaf uplinks (leaf to spine) that carried at least one frame.
    fn uplinks_used(&self) -> u64 {
        let hpl = self.topo.hosts_per_leaf() as u32;
        self.switches
            .iter()
            .filter(|s| matches!(s.role, Role::Leaf { .. }))
            .flat_map(|s| {
                (s.first_port + hpl..s.first_port + hpl + self.uplinks)
                    .map(|g| &self.ports[g as usize])
            })
            .filter(|p| p.sent > 0)
            .count() as u64
    }

    /// The fabric's counters so far.
    fn stats(&self) -> FabricStats {
        let mut s = self.stats;
        s.peak_buffer_bytes = self.switches.iter().map(|w| w.peak).max().unwrap_or(0);
        s
    }
}

/// The hosts' endpoints, lent to the application.
pub(crate) struct HostEps<'a>(&'a mut [Host]);

impl HostEps<'_> {
    /// Host `h`'s endpoint.
    pub(crate) fn ep(&mut self, h: usize) -> &mut Endpoint {
        &mut self.0[h].ep
    }
}

/// The address of host `h`: MAC 02:00:00:01:hi:lo, IP 10.1.hi.lo, UDP 31850.
pub fn host_addr(h: usize) -> engine::proto::EndpointAddr {
    let (hi, lo) = ((h >> 8) as u8, h as u8);
    engine::proto::EndpointAddr {
        mac: engine::wire::MacAddr([0x02, 0, 0, 1, hi, lo]),
        ip: std::net::Ipv4Addr::new(10, 1, hi, lo),
        port: 31850,
    }
}
