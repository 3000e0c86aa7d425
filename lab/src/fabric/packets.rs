//! Packets on the fabric: a 16-byte record per packet for the switches,
//! the frames' bytes in one arena (overlapping slots when no payload
//! moves), packet numbers reused last-freed first, and the prefetch that
//! loads the next event's packet and port while the current one runs.

use super::event::{Ev, AHEAD, NO_NOTE};
use super::nic::SRC_IP_AT;
use super::Fabric;
use engine::proto::hint::{prefetch, prefetch_bytes, prefetch_lines, queue_end, queue_front};

/// Events between two stages of the prefetch pipeline, its four stages
/// over the events the queue names ahead: one event (about 150 ns at
/// 1,024 hosts) is too short for a load to land, and the run names events
/// ahead at no cost.
const GAP: usize = (AHEAD - 1) / 3;

/// Bytes per frame slot when the endpoints move no payload bytes
/// ([`HeadersOnly`](super::buffers::HeadersOnly)): they write and read
/// only a frame's headers (at most the
/// RPC headers and a session-management body), so slots overlap past that
/// and the headers of all frames in flight sit in a few hundred kB rather
/// than at 1.5 kB strides over tens of MB (a cache and TLB miss for every
/// frame a switch marks or a host receives). What lies past a frame's
/// headers in its slot is other frames' headers: unspecified bytes, as a
/// a message's are when no payload moves.
pub(super) const HEADERS_ONLY_STRIDE: usize =
    (engine::wire::HEADERS_LEN + engine::wire::SM_BODY_LEN).next_multiple_of(64);

/// What the fabric needs to know of a frame on it, kept apart from the
/// frame's bytes (in [`Fabric::frames`]) so that the switches, which read
/// only this, touch 16 bytes a frame instead of its header's cache lines.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Pkt {
    /// Bytes of the frame (at most a 9,000-byte MTU's).
    pub(super) len: u16,
    /// A switch trimmed it to its headers (`trim.rs`), or it left its NIC
    /// with the trimmed DSCP: what its frame's DSCP says, kept here so that
    /// a hop need not read the frame.
    pub(super) trimmed: bool,
    /// Destination host.
    pub(super) dst: u32,
    /// Global id of the port it entered its current switch by.
    pub(super) ingress: u32,
    /// The entropy the sending NIC gave it (`paths.rs`), which the
    /// switches hash onto an uplink: under ECMP its 5-tuple's hash, taken
    /// while the frame is in cache; 0 on a star or when switches spray.
    pub(super) entropy: u32,
}

impl Fabric {
    /// The run loop's prefetch pipeline, four stages [`GAP`] events apart
    /// over the events the queue names ahead ([`Events::ahead`](super::event::Events::ahead)):
    /// the packet, port and host of the event `3 * GAP` ahead
    /// ([`prefetch_for`](Self::prefetch_for)), what those name for the one
    /// `2 * GAP` ahead ([`prefetch_soon`](Self::prefetch_soon)), what that
    /// names for the one `GAP` ahead ([`prefetch_deep`](Self::prefetch_deep))
    /// and what that names for the next ([`prefetch_last`](Self::prefetch_last)).
    ///
    /// A switch hop's egress port, computed at the second stage, is noted
    /// on its event ([`Events::set_note`](super::event::Events::set_note))
    /// for the third stage and for [`at_switch`](Self::at_switch), so the
    /// routing runs once per hop rather than three times.
    pub(super) fn prefetch_ahead(&mut self) {
        if let Some(ev) = self.events.ahead(0) {
            self.prefetch_last(ev);
        }
        if let Some(ev) = self.events.ahead(GAP) {
            self.prefetch_deep(ev, self.events.note(GAP));
        }
        if let Some(ev) = self.events.ahead(2 * GAP) {
            if let Some(g) = self.prefetch_soon(ev) {
                self.events.set_note(2 * GAP, g);
            }
        }
        if let Some(ev) = self.events.ahead(3 * GAP) {
            self.prefetch_for(ev);
        }
    }

    /// The fourth stage, just before `ev` runs: what an arriving answer
    /// updates in its client request (SACK maps, the packet's send time),
    /// the request slot of the next transmission and, under REPS, the
    /// NIC's entry for the peer it goes to.
    fn prefetch_last(&self, ev: Ev) {
        match ev {
            Ev::AtHost { host, pkt } => {
                if let (Some(h), Some(frame)) = (self.hosts.get(host as usize), self.header(pkt)) {
                    h.ep.prefetch_answer_for_frame(frame);
                }
            }
            Ev::HostTxDone(h) | Ev::HostTimer(h) => {
                let Some(host) = self.hosts.get(h as usize) else {
                    return;
                };
                host.ep.prefetch_deep_for_transmit();
                if self.uplinks > 0 && self.paths.learns() {
                    if let Some(ip) = host.ep.next_tx_peer() {
                        let [_, _, hi, lo] = ip.octets();
                        self.paths
                            .prefetch_peer(h as usize, u32::from_be_bytes([0, 0, hi, lo]));
                    }
                }
            }
            _ => {}
        }
    }

    /// The third stage, [`GAP`] events before `ev` runs: the request slot and
    /// congestion state of the session an arriving frame is for, whose
    /// entry [`prefetch_soon`](Self::prefetch_soon) loaded; the session
    /// entry of the next transmission, whose queue heads it loaded; where
    /// a switch's egress queue takes the packet; the ingress port of the
    /// packet at the head of an egress queue.
    fn prefetch_deep(&self, ev: Ev, note: u32) {
        match ev {
            Ev::AtHost { host, pkt } => {
                if let (Some(h), Some(frame)) = (self.hosts.get(host as usize), self.header(pkt)) {
                    h.ep.prefetch_deep_for_frame(frame);
                }
            }
            Ev::HostTxDone(h) | Ev::HostTimer(h) => {
                if let Some(host) = self.hosts.get(h as usize) {
                    host.ep.prefetch_for_transmit();
                }
            }
            Ev::AtSwitch { ingress, pkt } => {
                let g = match note {
                    NO_NOTE => self.egress_hint(ingress, pkt),
                    g => Some(g),
                };
                if let Some(p) = g.and_then(|g| self.ports.get(g as usize)) {
                    prefetch(queue_end(&p.queue));
                    if p.queue_bytes >= self.frame_touch_from {
                        // The IP header, for a CE mark or a trim: only
                        // behind a queue that long (`queues::frame_touch_from`).
                        prefetch(self.frames.as_ptr().wrapping_add(self.frame_at(pkt)));
                    }
                }
            }
            Ev::PortTxDone(g) => {
                let Some(p) = self.ports.get(g as usize) else {
                    return;
                };
                if let Some((k, _)) = p.head() {
                    if let Some(k) = self.pkts.get(k as usize) {
                        self.prefetch_ingress(k.ingress);
                    }
                }
            }
            _ => {}
        }
    }

    /// The egress port the switch that port `ingress` belongs to will send
    /// packet `pkt` by, as [`at_switch`](Self::at_switch) will choose it
    /// (unless a spraying turn moves meanwhile): a hint.
    fn egress_hint(&self, ingress: u32, pkt: u32) -> Option<u32> {
        let s = self.ports.get(ingress as usize)?.owner as usize;
        let dst = self.pkts.get(pkt as usize)?.dst;
        if dst == u32::MAX || s >= self.switches.len() {
            return None;
        }
        self.egress(s, dst, self.path_sel(s, pkt)).map(|(g, _)| g)
    }

    /// Packet `pkt`'s first 128 frame bytes (its headers).
    fn header(&self, pkt: u32) -> Option<&[u8]> {
        let at = self.frame_at(pkt);
        self.frames.get(at..at + 128)
    }

    /// The first stage: starts loading what event `ev` will touch, `3 * GAP` events before it
    /// runs: the packet's metadata and frame header, the port, the host's
    /// endpoint fields. A packet's state was last touched when it was
    /// sent, thousands of events earlier, so without this every arrival
    /// waits on memory.
    pub(super) fn prefetch_for(&self, ev: Ev) {
        match ev {
            Ev::AtSwitch { ingress, pkt } => {
                prefetch(self.pkts.as_ptr().wrapping_add(pkt as usize));
                self.prefetch_ingress(ingress);
            }
            Ev::AtHost { host, pkt } => {
                prefetch(self.pkts.as_ptr().wrapping_add(pkt as usize));
                if self.uplinks > 0 && self.paths.learns() {
                    self.paths.prefetch_echo(pkt);
                }
                let at = self.frame_at(pkt);
                prefetch(self.frames.as_ptr().wrapping_add(at));
                prefetch(self.frames.as_ptr().wrapping_add(at + 64));
                self.prefetch_host(host);
            }
            Ev::HostTxDone(h) => {
                self.prefetch_egress(h);
                self.prefetch_host(h);
            }
            Ev::HostTimer(h) | Ev::HostServe(h) => self.prefetch_host(h),
            Ev::PortTxDone(g) | Ev::Credit { port: g, .. } => self.prefetch_egress(g),
            _ => {}
        }
    }

    /// The lines of port `i` that a packet which came in by it reads there
    /// ([`Port`](super::Port)'s first; all three under PFC or link
    /// credits, whose accounting is on the others).
    fn prefetch_ingress(&self, i: u32) {
        let p = self.ports.as_ptr().wrapping_add(i as usize);
        match self.cfg.pfc.is_some() || self.cfg.link_credits.is_some() {
            true => prefetch_lines(p),
            false => prefetch(p),
        }
    }

    /// The lines of egress port `g` that sending reads and writes
    /// ([`Port::HOT`](super::Port::HOT)), and the third when switches trim
    /// (the priority queue).
    fn prefetch_egress(&self, g: u32) {
        let p = self.ports.as_ptr().wrapping_add(g as usize);
        match self.trim_at {
            u64::MAX => prefetch_bytes(p, super::Port::HOT),
            _ => prefetch_lines(p),
        }
    }

    /// Host `h`'s first line and its endpoint's fields that
    /// [`prefetch_soon`](Self::prefetch_soon) reads.
    fn prefetch_host(&self, h: u32) {
        if let Some(host) = self.hosts.get(h as usize) {
            prefetch(host);
            host.ep.prefetch_fields();
        }
    }

    /// The second stage, `2 * GAP` events before `ev` runs: what
    /// [`prefetch_for`](Self::prefetch_for) loaded names what `ev` will
    /// touch next (the session a frame is for, the heads of the transmit
    /// queues, the egress port a switch sends by, the packet at the head
    /// of a port's queue, the sender's REPS entry), which is now loaded in
    /// turn. Hints only:
    /// nothing here changes the run. Returns the egress port of a switch
    /// hop, for [`prefetch_ahead`](Self::prefetch_ahead) to note.
    pub(super) fn prefetch_soon(&self, ev: Ev) -> Option<u32> {
        match ev {
            Ev::AtHost { host, pkt } => {
                let at = self.frame_at(pkt);
                let (Some(h), Some(frame)) =
                    (self.hosts.get(host as usize), self.frames.get(at..at + 64))
                else {
                    return None;
                };
                h.ep.prefetch_for_frame(frame);
                if self.uplinks > 0 && self.paths.learns() {
                    let ip = &frame[SRC_IP_AT..SRC_IP_AT + 4];
                    let src = u32::from_be_bytes([0, 0, ip[2], ip[3]]);
                    self.paths.prefetch_peer(host as usize, src);
                }
                None
            }
            Ev::HostTxDone(h) | Ev::HostTimer(h) => {
                if let Some(host) = self.hosts.get(h as usize) {
                    host.ep.prefetch_tx_queues();
                }
                None
            }
            Ev::AtSwitch { ingress, pkt } => {
                let g = self.egress_hint(ingress, pkt)?;
                self.prefetch_egress(g);
                Some(g)
            }
            Ev::PortTxDone(g) => {
                let p = self.ports.get(g as usize)?;
                // The queue's head slot, which sending it reads
                // (`Port::dequeue`); `head` itself reads the port's line.
                prefetch(queue_front(&p.queue));
                let (pkt, _) = p.head()?;
                prefetch(self.pkts.as_ptr().wrapping_add(pkt as usize));
                None
            }
            _ => None,
        }
    }

    pub(super) fn alloc_pkt(&mut self) -> u32 {
        match self.free_pkts.pop() {
            Some(i) => i,
            None => {
                self.pkts.push(Pkt::default());
                let i = (self.pkts.len() - 1) as u32;
                // Room for a whole transmit buffer from the last slot on.
                let end = self.frame_range(i, self.tx_len).end;
                self.frames.resize(end, 0);
                i
            }
        }
    }

    /// Where packet `i`'s frame slot starts in `frames`.
    fn frame_at(&self, i: u32) -> usize {
        i as usize * self.frame_stride
    }

    /// Where packet `i`'s first `len` frame bytes sit in `frames` (a range,
    /// so the caller can borrow `frames` beside an endpoint).
    pub(super) fn frame_range(&self, i: u32, len: usize) -> core::ops::Range<usize> {
        let at = self.frame_at(i);
        at..at + len
    }

    /// Packet `i`'s frame, `len` bytes.
    pub(super) fn frame_mut(&mut self, i: u32, len: usize) -> &mut [u8] {
        let r = self.frame_range(i, len);
        &mut self.frames[r]
    }

    pub(super) fn free_pkt(&mut self, i: u32) {
        self.free_pkts.push(i);
    }

    /// Packets still on a link, in a queue or in a ring.
    pub(super) fn pkts_live(&self) -> u64 {
        (self.pkts.len() - self.free_pkts.len()) as u64
    }
}
