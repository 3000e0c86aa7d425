//! A switch's data path: pick the egress port (the host's port, or a live
//! uplink by the packet's entropy or round-robin spraying, `routing.rs`),
//! trim it (`trim.rs`), admit the packet into the shared buffer or drop it
//! (dynamic threshold on a lossy fabric, headroom
//! overflow on a PFC fabric; never on a credit fabric), mark ECN by RED on
//! the egress queue, account it to its ingress port (XOFF upstream above
//! the threshold), and serialise the queue when the port is free, not
//! paused and, with link credits, the next hop has room.

use super::event::{Ev, NO_NOTE};
use super::queues::QueueClass;
use super::topology;
use super::trim::Trim;
use super::Fabric;

impl Fabric {
    /// Packet `pkt` reached a switch by its port `ingress` (global id).
    pub(super) fn at_switch(&mut self, ingress: u32, pkt: u32) {
        let s = self.ports[ingress as usize].owner as usize;
        let dst = self.pkts[pkt as usize].dst;
        if dst == u32::MAX {
            self.stats.drops_unroutable += 1;
            self.drop_at(ingress, pkt);
            return;
        }
        let spray = self.cfg.spray;
        // Without spraying the egress is a function of the packet and the
        // switch alone, so the one the prefetch computed is this one.
        let noted = match (spray, self.events.popped_note()) {
            (false, g) if g != NO_NOTE => Some((g, None)),
            _ => None,
        };
        let routed = || self.egress(s, dst, self.path_sel(s, pkt));
        let Some((egress, up)) = noted.or_else(routed) else {
            self.stats.drops_unroutable += 1;
            self.drop_at(ingress, pkt);
            return;
        };
        if let (true, Some(n)) = (spray, up) {
            // Round robin over the live uplinks (over all of them, as
            // before, when none failed).
            let live = self.routes.live(s, dst as usize, n);
            let turn = self.switches[s].spray_next;
            self.switches[s].spray_next = (turn % live + 1) % live;
        }
        let len = self.pkts[pkt as usize].len as u64;
        let trim = match self.trim_at {
            u64::MAX => Trim::Normal,
            _ => self.trims_or_queues_header(s, ingress, egress, pkt, len),
        };
        if trim == Trim::Done {
            return;
        }
        if trim == Trim::Normal && !self.admit(s, ingress, egress, len) {
            self.stats.drops_switch += 1;
            self.drop_at(ingress, pkt);
            return;
        }
        let e = &self.ports[egress as usize];
        let red = match e.class {
            QueueClass::Normal => self.cfg.ecn,
            QueueClass::Degraded => self.degraded.ecn,
            QueueClass::NoEcn => None,
        };
        if let Some(red) = red {
            let q = e.queue_bytes;
            let mark = if q >= red.kmax {
                true
            } else if q > red.kmin {
                let p = red.pmax * (q - red.kmin) as f64 / (red.kmax - red.kmin).max(1) as f64;
                self.rng.chance(p)
            } else {
                false
            };
            let len = len as usize;
            if mark && engine::wire::mark_ce(self.frame_mut(pkt, len)) {
                self.stats.ecn_marks += 1;
            }
        }
        self.hold(s, ingress, pkt, len);
        self.ports[egress as usize].enqueue(pkt, len);
        let i = &mut self.ports[ingress as usize];
        if let Some(pfc) = self.cfg.pfc {
            if !i.xoff_sent && i.ingress_bytes > pfc.xoff {
                self.send_pfc(ingress, true);
            }
        }
        self.switch_try_tx(egress);
    }

    /// What picks switch `s`'s uplink for packet `pkt`: its spraying turn
    /// when the switches spray, else the packet's entropy.
    pub(super) fn path_sel(&self, s: usize, pkt: u32) -> u32 {
        match self.cfg.spray {
            true => self.switches[s].spray_next,
            false => self.pkts[pkt as usize].entropy,
        }
    }

    /// The egress port by which switch `s` sends a packet for host `dst`,
    /// and, when it goes up, how many uplinks it chose among by `sel` (the
    /// packet's entropy, or the spraying turn); `None`: no live uplink
    /// leads there. Reads only: the run loop's prefetch asks it ahead.
    #[inline]
    pub(super) fn egress(&self, s: usize, dst: u32, sel: u32) -> Option<(u32, Option<usize>)> {
        let sw = &self.switches[s];
        let (local, up) =
            match topology::route(sw.role, self.hpl, self.uplinks as usize, dst as usize) {
                Ok(p) => (p as u32, None),
                Err((first, n)) => {
                    let up = self
                        .routes
                        .uplink(s, dst as usize, n, sel, self.cfg.spray)?;
                    (first as u32 + up, Some(n))
                }
            };
        Some((sw.first_port + local, up))
    }

    /// Whether switch `s` has room for `len` bytes from `ingress` to `egress`.
    pub(super) fn admit(&mut self, s: usize, ingress: u32, egress: u32, len: u64) -> bool {
        let sw = &self.switches[s];
        if sw.used + len > sw.capacity {
            return false;
        }
        if self.cfg.link_credits.is_some() {
            // The sender spent credits on it: room was reserved.
            return true;
        }
        if self.cfg.pfc.is_some() {
            let i = &self.ports[ingress as usize];
            let over = i.ingress_bytes + len > i.pfc_limit;
            if over {
                self.stats.drops_headroom += 1;
            }
            return !over;
        }
        let free = (sw.capacity - sw.used) as f64;
        (self.ports[egress as usize].queue_bytes + len) as f64 <= self.cfg.dt_alpha * free
    }

    /// Packet `pkt` of `len` bytes, come in by port `ingress`, now held in
    /// switch `s`'s shared buffer (whichever egress queue it waits in):
    /// the buffer's use and peak, and the ingress port's bytes (PFC's
    /// count), both given back when it leaves.
    pub(super) fn hold(&mut self, s: usize, ingress: u32, pkt: u32, len: u64) {
        self.pkts[pkt as usize].ingress = ingress;
        let sw = &mut self.switches[s];
        sw.used += len;
        sw.peak = sw.peak.max(sw.used);
        self.ports[ingress as usize].ingress_bytes += len;
    }

    /// Frees a dropped packet; on a credit fabric its credit goes back
    /// (a drop there is a bug, but must not leak credit).
    pub(super) fn drop_at(&mut self, ingress: u32, pkt: u32) {
        if self.cfg.link_credits.is_some() {
            let len = self.pkts[pkt as usize].len;
            self.return_credit(ingress, u32::from(len));
        }
        self.free_pkt(pkt);
    }

    fn return_credit(&mut self, ingress: u32, units: u32) {
        let p = &self.ports[ingress as usize];
        let (to, at) = (p.reverse, self.now + p.delay_ns);
        self.events.push(at, Ev::Credit { port: to, units });
    }

    /// Starts serialising the head of egress `g`'s queue if it can.
    pub(super) fn switch_try_tx(&mut self, g: u32) {
        let now = self.now;
        let p = &mut self.ports[g as usize];
        if p.queue.is_empty() && p.hi_bytes == 0 {
            return;
        }
        if p.busy_until > now {
            self.arm_tx_done(g, false);
            return;
        }
        if p.paused {
            return; // the XON wakes it
        }
        // Trimmed headers first (strict priority, `trim.rs`).
        let Some((pkt, hi)) = p.head() else {
            return;
        };
        let len = self.pkts[pkt as usize].len as u64;
        let cost = self.credit_cost(g, len);
        let p = &mut self.ports[g as usize];
        if p.credits < cost {
            return; // a credit return wakes it
        }
        if hi {
            p.hi.pop_front();
            p.hi_bytes -= len;
        } else {
            p.dequeue(len);
        }
        let more = !p.queue.is_empty() || p.hi_bytes > 0;
        if !more {
            // Back to the buffer's start: a queue that drains often reuses
            // its first cache lines rather than walking its whole buffer
            // (`clear` of an empty deque moves its head to 0); `hi` only
            // when it was just used, its line is not otherwise touched.
            p.queue.clear();
            if hi {
                p.hi.clear();
            }
        }
        let sw = self.ports[g as usize].owner as usize;
        self.switches[sw].used -= len;
        let ingress = self.pkts[pkt as usize].ingress;
        let i = &mut self.ports[ingress as usize];
        i.ingress_bytes -= len;
        if let Some(pfc) = self.cfg.pfc {
            if i.xoff_sent && i.ingress_bytes <= pfc.xon {
                self.send_pfc(ingress, false);
            }
        }
        if self.cfg.link_credits.is_some() {
            self.return_credit(ingress, len as u32);
        }
        self.transmit(g, pkt, len, cost);
        if more {
            self.arm_tx_done(g, false);
        }
    }
}
