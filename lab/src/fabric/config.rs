//! The fabric's knobs: link rates and delays, switch buffers, ECN marking,
//! PFC thresholds, link-level credits, multipath and path selection,
//! degraded and failed links, and the hosts' receive rings; and the bounds
//! that make them lossless (PFC headroom, credits).

use super::paths::PathSelection;
use super::topology::Topology;
use engine::config::{Origins, TransportConfig};
use engine::time::Duration;

/// RED-like ECN marking at a switch egress queue (DCQCN's switch side):
/// below `kmin` bytes never, above `kmax` always, in between with a
/// probability rising linearly to `pmax`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Red {
    /// Queue bytes from which marking starts.
    pub kmin: u64,
    /// Queue bytes from which every ECN-capable packet is marked.
    pub kmax: u64,
    /// Marking probability just below `kmax`.
    pub pmax: f64,
}

impl Red {
    /// The marking DCQCN's parameter set for a `bps` link expects (see
    /// `DcqcnParams::for_link`): the paper's Kmin 5 KB, Kmax 200 KB, Pmax
    /// 1 % below 50 Gb/s; from 50 Gb/s the HPCC authors' thresholds, which
    /// scale with the link (Kmin 100 KB, Kmax 400 KB per 25 Gb/s, Pmax 0.2:
    /// 400 KB / 1.6 MB at 100 Gb/s). The paper's 5 KB at 100-400 Gb/s marks
    /// nearly every packet behind any queue at all.
    pub fn for_link(bps: u64) -> Red {
        if bps < 50_000_000_000 {
            return Red {
                kmin: 5_000,
                kmax: 200_000,
                pmax: 0.01,
            };
        }
        let per_25g = bps as f64 / 25e9;
        Red {
            kmin: (100_000.0 * per_25g) as u64,
            kmax: (400_000.0 * per_25g) as u64,
            pmax: 0.2,
        }
    }
}

/// Priority flow control (802.1Qbb) on every switch ingress port and host
/// NIC, for the one priority all traffic uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pfc {
    /// Bytes buffered from one ingress port at which XOFF goes upstream.
    pub xoff: u64,
    /// Bytes at or below which XON releases it.
    pub xon: u64,
    /// Bytes reserved above `xoff` per ingress port for what is already on
    /// the wire when the pause lands; a packet that finds the headroom full
    /// is dropped (and counted: a lossless violation). `None` reserves, on
    /// each port, [`FabricConfig::pfc_headroom_bound`] of its own link.
    pub headroom: Option<u64>,
}

/// Everything about the fabric except who sends what.
#[derive(Clone, Debug, PartialEq)]
pub struct FabricConfig {
    /// Host-to-switch link rate, bits/s.
    pub host_link_bps: u64,
    /// Switch-to-switch link rate, bits/s.
    pub fabric_link_bps: u64,
    /// Propagation delay of every link, one way.
    pub link_delay: Duration,
    /// IP MTU of every endpoint (and so the largest frame, plus 14 bytes).
    pub mtu: usize,
    /// Shared buffer of a switch, per port it has (a 32-port switch with
    /// 256 KiB per port has 8 MiB).
    pub buffer_per_port: u64,
    /// Dynamic threshold of the shared buffer (lossy regimes): an egress
    /// queue may hold at most `alpha` times the free buffer.
    pub dt_alpha: f64,
    /// ECN marking at every switch egress, if any.
    pub ecn: Option<Red>,
    /// PFC, if any.
    pub pfc: Option<Pfc>,
    /// Link-level credit-based flow control (InfiniBand): bytes of buffer
    /// each receiver advertises per ingress port; a sender transmits only
    /// into advertised buffer, so nothing is ever dropped for lack of room.
    pub link_credits: Option<u64>,
    /// Spray every packet over the uplinks (SRD) instead of hashing the
    /// flow's 5-tuple onto one (ECMP).
    pub spray: bool,
    /// How the sending NICs pick each packet's entropy, over every
    /// regime's own choice (`None`: the regime's, ECMP or `spray`).
    pub path_selection: Option<PathSelection>,
    /// Links of the top tier (leaf-spine, aggregation-core) that run at
    /// `degraded_fraction` of their rate, taken as uet-htsim's `-failed`
    /// takes them (`routing::plan`).
    pub degraded_links: usize,
    /// The rate a degraded link keeps, in (0, 1]; uet-htsim's
    /// `_failed_link_ratio` is 0.25.
    pub degraded_fraction: f64,
    /// Links of the top tier that are down (after those degraded): routes
    /// avoid them.
    pub failed_links: usize,
    /// Packet trimming (UEC), on lossy fabrics: a data packet that would
    /// find its egress queue holding more than this many bytes (or would
    /// be dropped) is cut to its headers and queued on the port's priority
    /// queue instead (`switch.rs`). `None`: drops are drops.
    pub trim: Option<u64>,
    /// A degraded link's queue keeps `degraded_fraction` of the trimming
    /// threshold and of the ECN thresholds, as its rate: the same queue
    /// in time (uet-htsim's `FatTreeTopology::alloc_queue` with
    /// `reduced_speed`). Set by the `uec` regimes (`apply_queues`); off,
    /// a degraded link keeps the thresholds of a full one.
    pub scale_degraded_queues: bool,
    /// Whether switch ports towards hosts (the last hop) mark ECN. Off in
    /// `uec-rcv`, as uet-htsim's receiver-driven mode turns marking off
    /// on ToR downlinks (`set_ecn_parameters` in `main_uec.cpp`).
    pub ecn_last_hop: bool,
    /// Entries of a host's receive ring (frames waiting for the endpoint).
    pub host_ring: usize,
    /// PFC headroom the `roce` regime reserves per ingress port; `None`
    /// reserves [`pfc_headroom_bound`](Self::pfc_headroom_bound) of each
    /// port's link (set it lower to see what too little headroom does).
    pub pfc_headroom: Option<u64>,
    /// Probability that a host's NIC loses a frame it sends (seeded; on
    /// top of what the fabric drops), as the run loop's `faults.drop`
    /// does on a real link.
    pub loss: f64,
    /// The user's `[transport]` over every regime's endpoints (to match a
    /// real run: its measured credits, its run loop's timers, its
    /// `transport.nak`): the keys `given` lists replace the regime's, but
    /// for those the regime or the fabric's links set
    /// (`FabricRegime::transport`, `not_applied`). The regimes run their timers
    /// on a 5 us grain (IRN's 100 us timeout must not round up); a real run
    /// loop's is 500 us. NAKs are taken only by the regimes that recover by
    /// go-back-N on a lossy fabric (ib, roce, roce-nocc, lossy).
    pub transport: TransportConfig,
    /// Which `[transport]` keys the user gave.
    pub given: Origins,
    /// Virtual time a run may take after its last flow starts; what is
    /// unfinished then is reported as such.
    pub grace: Duration,
}

impl Default for FabricConfig {
    fn default() -> Self {
        FabricConfig {
            host_link_bps: 100_000_000_000,
            fabric_link_bps: 100_000_000_000,
            link_delay: Duration::from_micros(1),
            mtu: 1500,
            buffer_per_port: 256 << 10,
            dt_alpha: 1.0,
            ecn: None,
            pfc: None,
            link_credits: None,
            spray: false,
            path_selection: None,
            degraded_links: 0,
            degraded_fraction: 0.25,
            failed_links: 0,
            trim: None,
            scale_degraded_queues: false,
            ecn_last_hop: true,
            host_ring: 1024,
            pfc_headroom: None,
            grace: Duration::from_millis(500),
            loss: 0.0,
            transport: TransportConfig::default(),
            given: Origins::default(),
        }
    }
}

/// Ethernet header bytes on top of the IP MTU.
pub const ETH_OVERHEAD: usize = 14;

/// Nanoseconds to serialise `bytes` at `bps`, rounded up.
pub(super) fn ser_ns(bytes: u64, bps: u64) -> u64 {
    (bytes as u128 * 8_000_000_000).div_ceil(bps.max(1) as u128) as u64
}

impl FabricConfig {
    /// The largest frame on any link.
    pub fn max_frame(&self) -> u64 {
        (self.mtu + ETH_OVERHEAD) as u64
    }

    /// The headroom that makes PFC lossless on a link of `bps`: what the
    /// upstream sends from the moment the XOFF is decided until it stops
    /// (the pause's own flight plus the last data's flight, two one-way
    /// delays at line rate), plus one frame the upstream is already
    /// serialising, one the XOFF waits behind on the reverse link, and
    /// the frame that crossed the threshold.
    pub fn pfc_headroom_bound(&self, bps: u64) -> u64 {
        let in_flight =
            (bps as u128 * 2 * self.link_delay.as_nanos() as u128).div_ceil(8_000_000_000);
        in_flight as u64 + 3 * self.max_frame()
    }

    /// The rates of the links a frame from host `src` to host `dst`
    /// crosses, in order: up to its switch and down, or through a spine.
    pub fn path_rates(&self, topo: &Topology, src: usize, dst: usize) -> Vec<u64> {
        let (h, f) = (self.host_link_bps, self.fabric_link_bps);
        match *topo {
            _ if topo.leaf_of(src) == topo.leaf_of(dst) => vec![h, h],
            Topology::LeafSpine { .. } => vec![h, f, f, h],
            Topology::FatTree { k } if src / (k * k / 4) == dst / (k * k / 4) => vec![h, f, f, h],
            Topology::FatTree { .. } => vec![h, f, f, f, f, h],
            Topology::Star { .. } => vec![h, h],
        }
    }

    /// The PFC headroom of a port on a link of `bps` (0 without PFC).
    pub fn pfc_headroom_at(&self, bps: u64) -> u64 {
        self.pfc.map_or(0, |p| {
            p.headroom.unwrap_or_else(|| self.pfc_headroom_bound(bps))
        })
    }

    /// Checks the values, naming the field at fault.
    pub fn validate(&self) -> Result<(), String> {
        if self.host_link_bps == 0 || self.fabric_link_bps == 0 {
            return Err("link rates must be positive".into());
        }
        if !(576..=9000).contains(&self.mtu) {
            return Err(format!("mtu {} outside 576..=9000", self.mtu));
        }
        if self.buffer_per_port < self.max_frame() {
            return Err(format!(
                "buffer_per_port {} is less than one frame ({})",
                self.buffer_per_port,
                self.max_frame()
            ));
        }
        if !(self.dt_alpha > 0.0 && self.dt_alpha.is_finite()) {
            return Err(format!("dt_alpha {} must be positive", self.dt_alpha));
        }
        if let Some(r) = self.ecn {
            if r.kmin > r.kmax || !(0.0..=1.0).contains(&r.pmax) {
                return Err(format!(
                    "ecn: need kmin <= kmax and pmax in [0, 1], got {r:?}"
                ));
            }
        }
        if let Some(p) = self.pfc {
            if p.xon > p.xoff || p.xoff == 0 {
                return Err(format!("pfc: need 0 < xoff and xon <= xoff, got {p:?}"));
            }
        }
        if self.pfc.is_some() && self.link_credits.is_some() {
            return Err("pfc and link_credits are two ways to be lossless: pick one".into());
        }
        if let Some(c) = self.link_credits {
            if c < self.max_frame() {
                return Err(format!("link_credits {c} is less than one frame"));
            }
        }
        if let Some(t) = self.trim {
            if t == 0 || t > self.buffer_per_port {
                return Err(format!(
                    "trim_kb: the trimming threshold ({t} bytes) must be in 1..={} bytes, the per-port buffer",
                    self.buffer_per_port
                ));
            }
        }
        if !(0.0..1.0).contains(&self.loss) {
            return Err(format!("loss {} outside [0, 1)", self.loss));
        }
        if self.host_ring == 0 {
            return Err("host_ring must be at least 1".into());
        }
        // Written so that NaN fails too.
        if !(self.degraded_fraction > 0.0 && self.degraded_fraction <= 1.0) {
            return Err(format!(
                "degraded_fraction (--degraded-fraction) {} outside (0, 1]",
                self.degraded_fraction
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headroom_bound_counts_two_delays_and_three_frames() {
        let c = FabricConfig::default();
        // 100 Gb/s x 2 us = 25,000 bytes, plus 3 x 1514.
        assert_eq!(c.pfc_headroom_bound(100_000_000_000), 25_000 + 3 * 1514);
    }

    #[test]
    fn validate_names_the_problem() {
        let mut c = FabricConfig::default();
        c.validate().unwrap();
        c.pfc = Some(Pfc {
            xoff: 10,
            xon: 20,
            headroom: None,
        });
        assert!(c.validate().unwrap_err().contains("pfc"));
        c.pfc = None;
        c.link_credits = Some(100);
        assert!(c.validate().unwrap_err().contains("link_credits"));
        c.link_credits = None;
        c.trim = Some(c.buffer_per_port + 1);
        assert!(c.validate().unwrap_err().contains("trim_kb"));
        c.trim = Some(0);
        assert!(c.validate().unwrap_err().contains("trim_kb"));
        c.trim = Some(c.buffer_per_port);
        c.validate().unwrap();
    }
}
