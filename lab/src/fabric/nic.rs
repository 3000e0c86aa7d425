//! A host's side of the fabric: its NIC takes the next frame from the
//! endpoint only when the last has been serialised and the link lets it
//! (not paused, credits left), and its receive ring holds arriving frames
//! until the endpoint takes them (at once, or one per service time on a
//! slow host); a full ring drops, a filling ring sends PFC on a PFC fabric
//! and returns credits as it drains on a credit fabric. The NIC gives each
//! frame its entropy and, under REPS, echoes what it received
//! (`paths.rs`).

use super::event::Ev;
use super::{Fabric, HeadersOnly, NO_TIMER};
use engine::time::Instant;
use engine::wire::{DSCP_TRIMMED, ETHERNET_HEADER_LEN as IP_AT};

/// IPv4 destination address offset in an Ethernet frame.
const DST_IP_AT: usize = IP_AT + 16;
/// IPv4 source address offset in an Ethernet frame.
pub(super) const SRC_IP_AT: usize = IP_AT + 12;
/// IPv4 type-of-service (DSCP and ECN) offset in an Ethernet frame.
const TOS_AT: usize = IP_AT + 1;

impl Fabric {
    /// Lets host `h`'s NIC send the endpoint's next frame if it can.
    pub(super) fn host_try_send(&mut self, h: usize) {
        if self.hosts[h].ep.transmit_idle() {
            // Nothing to send: what follows would poll in vain (a link
            // credit's return wakes an idle NIC once per frame it sent).
            return;
        }
        let now = self.now;
        let p = &self.ports[h];
        if p.busy_until > now {
            if self.hosts[h].ep.has_pending_transmit() {
                self.arm_tx_done(h as u32, true);
            }
            return;
        }
        if p.paused {
            return; // the XON wakes it
        }
        let max_cost = self.credit_cost(h as u32, self.cfg.max_frame());
        if p.credits < max_cost {
            return; // a credit return wakes it
        }
        // The endpoint writes straight into the packet's frame slot.
        let i = self.alloc_pkt();
        let slot = self.frame_range(i, self.tx_len);
        let buf = &mut self.frames[slot];
        let ep = &mut self.hosts[h].ep;
        let sent = match self.headers_only {
            true => ep.poll_transmit_with::<HeadersOnly>(Instant(now), buf),
            false => ep.poll_transmit(Instant(now), buf),
        };
        // Its next answer or client turn lands on a line just used.
        ep.rewind_tx_queues();
        let Some(len) = sent else {
            self.free_pkt(i);
            return;
        };
        self.stats.sim_pkts += 1;
        let frame = &self.frames[self.frame_range(i, len)];
        let dst = frame
            .get(DST_IP_AT..DST_IP_AT + 4)
            .map_or(u32::MAX, |b| u32::from_be_bytes([0, 0, b[2], b[3]]));
        let valid = frame.get(DST_IP_AT..DST_IP_AT + 2) == Some(&[10, 1][..]);
        let trimmed = frame
            .get(TOS_AT)
            .is_some_and(|tos| tos >> 2 == DSCP_TRIMMED);
        let hosts = self.hosts.len();
        let hash = match self.uplinks > 0 && !self.cfg.spray && self.paths.hashes() {
            true => super::topology::flow_hash(frame),
            false => 0,
        };
        let dst = if valid && (dst as usize) < hosts {
            dst
        } else {
            u32::MAX
        };
        let entropy = match self.uplinks > 0 && !self.cfg.spray {
            true => self.paths.on_send(h, dst, hash, i),
            false => 0,
        };
        let pkt = &mut self.pkts[i as usize];
        pkt.entropy = entropy;
        // At most `tx_len`, a 9,000-byte MTU's frame (`FabricConfig::validate`).
        pkt.len = len as u16;
        pkt.trimmed = trimmed;
        pkt.dst = dst;
        let cost = self.credit_cost(h as u32, len as u64);
        if self.cfg.loss > 0.0 && self.rng.chance(self.cfg.loss) {
            // Lost on the wire: the NIC spent the time, nothing arrives.
            self.stats.drops_loss += 1;
            let p = &mut self.ports[h];
            p.busy_until = now + p.ser_ns(len as u64);
            self.free_pkt(i);
        } else {
            self.transmit(h as u32, i, len as u64, cost);
        }
        if self.hosts[h].ep.has_pending_transmit() {
            self.arm_tx_done(h as u32, true);
        }
    }

    /// Packet `pkt` reached host `h`'s NIC.
    pub(super) fn at_host(&mut self, h: usize, pkt: u32) {
        if self.uplinks > 0 && self.paths.learns() {
            self.echo_at_nic(h, pkt);
        }
        let host = &mut self.hosts[h];
        if host.service_ns == 0 && host.ring.is_empty() {
            self.consume(h, pkt);
            return;
        }
        if host.ring.len() >= self.cfg.host_ring {
            self.stats.drops_host_ring += 1;
            self.free_pkt(pkt);
            return;
        }
        host.ring.push_back(pkt);
        if !host.serve_pending {
            host.serve_pending = true;
            let at = host.next_serve_at.max(self.now);
            self.events.push(at, Ev::HostServe(h as u32));
        }
        if self.cfg.pfc.is_some()
            && !self.ports[h].xoff_sent
            && self.hosts[h].ring.len() >= self.host_xoff
        {
            self.send_pfc(h as u32, true);
        }
    }

    /// The NIC's side of REPS for packet `pkt` arriving at host `h`: its
    /// echo is fed to the sender's state, its own entropy and CE mark wait
    /// to be echoed back (`paths.rs`).
    fn echo_at_nic(&mut self, h: usize, pkt: u32) {
        let p = self.pkts[pkt as usize];
        let frame = &self.frames[self.frame_range(pkt, p.len as usize)];
        // Source address 10.1.hi.lo; ECN in the IP header's second byte.
        let (Some(ip), Some(&tos)) = (frame.get(SRC_IP_AT..SRC_IP_AT + 4), frame.get(TOS_AT))
        else {
            return;
        };
        let src = u32::from_be_bytes([0, 0, ip[2], ip[3]]);
        self.paths.on_arrival(h, src, p.entropy, tos & 3 == 3, pkt);
    }

    /// Host `h`'s endpoint takes the next frame from its ring.
    pub(super) fn host_serve(&mut self, h: usize) {
        let host = &mut self.hosts[h];
        host.serve_pending = false;
        let Some(pkt) = host.ring.pop_front() else {
            return;
        };
        host.next_serve_at = self.now + host.service_ns;
        if !host.ring.is_empty() {
            host.serve_pending = true;
            let at = host.next_serve_at;
            self.events.push(at, Ev::HostServe(h as u32));
        }
        if self.ports[h].xoff_sent && self.hosts[h].ring.len() <= self.host_xon {
            self.send_pfc(h as u32, false);
        }
        self.consume(h, pkt);
    }

    /// Hands packet `pkt` to host `h`'s endpoint and frees it.
    fn consume(&mut self, h: usize, pkt: u32) {
        let now = Instant(self.now);
        self.stats.delivered += 1;
        if self.cfg.link_credits.is_some() {
            // The ring entry is free again: one frame of credit back to the
            // switch port that feeds this host.
            let p = &self.ports[h];
            let (to, at) = (p.reverse, self.now + p.delay_ns);
            self.events.push(at, Ev::Credit { port: to, units: 1 });
        }
        let bytes = self.frame_range(pkt, self.pkts[pkt as usize].len as usize);
        let host = &mut self.hosts[h];
        let frame = &self.frames[bytes];
        let d = match self.headers_only {
            true => host.ep.handle_frame_with::<HeadersOnly>(now, frame),
            false => host.ep.handle_frame(now, frame),
        };
        if let Some(d) = d {
            self.app.on_delivery(h, now, &mut host.ep, d);
        }
        self.free_pkt(pkt);
        self.after_ep(h);
    }

    /// After anything changed host `h`'s endpoint: hand its events to the
    /// application, let the NIC send, and re-arm its timer.
    pub(super) fn after_ep(&mut self, h: usize) {
        let now = Instant(self.now);
        while let Some(ev) = self.hosts[h].ep.poll_event() {
            self.app.on_event(h, now, ev);
        }
        self.host_try_send(h);
        self.arm_timer(h);
    }

    /// Arms host `h`'s timer for the endpoint's next deadline, if that is
    /// earlier than the one armed. An event for that time may still be
    /// queued from before (a pacer's earlier deadline fired first, and the
    /// retransmission timeout came back as the next): it is reused, not
    /// pushed again, as that one would fire first anyway, the copy only
    /// to be skipped.
    fn arm_timer(&mut self, h: usize) {
        let host = &mut self.hosts[h];
        if let Some(t) = host.ep.poll_timeout() {
            let t = t.0.max(self.now);
            if t < host.timer_at {
                host.timer_at = t;
                let queued = &mut self.timers_queued[h];
                if queued.contains(&t) {
                    return;
                }
                if let Some(free) = queued.iter_mut().find(|at| **at == NO_TIMER) {
                    *free = t;
                }
                self.events.push(t, Ev::HostTimer(h as u32));
            }
        }
    }

    /// Host `h`'s timer event; stale ones (re-armed earlier since) are skipped.
    pub(super) fn host_timer(&mut self, h: usize) {
        let now = self.now;
        if let Some(at) = self.timers_queued[h].iter_mut().find(|at| **at == now) {
            *at = NO_TIMER;
        }
        if self.hosts[h].timer_at != now {
            return;
        }
        self.hosts[h].timer_at = u64::MAX;
        self.hosts[h].ep.handle_timeout(Instant(self.now));
        self.after_ep(h);
    }
}
