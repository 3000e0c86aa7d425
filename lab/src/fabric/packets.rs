//! Packets on the fabric: a 16-byte record per packet for the switches,
//! the frames' bytes in one arena (overlapping slots when no payload
//! moves), packet numbers reused last-freed first, and the prefetch that
//! loads the next event's packet and port while the current one runs.

use super::event::Ev;
use super::nic::SRC_IP_AT;
use super::Fabric;

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
    /// Bytes of the frame.
    pub(super) len: u32,
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
    /// The run loop's prefetch pipeline, one stage per event ahead: the
    /// fourth event's queue node, the third event's packet, port and host
    /// ([`prefetch_for`](Self::prefetch_for)), what those name for the
    /// second ([`prefetch_soon`](Self::prefetch_soon)), and what that names
    /// for the next ([`prefetch_deep`](Self::prefetch_deep)).
    pub(super) fn prefetch_ahead(&self) {
        if let Some(([next, second, third], last)) = self.events.peek_ahead() {
            if let Some(ev) = next {
                self.prefetch_deep(ev);
            }
            if let Some(ev) = second {
                self.prefetch_soon(ev);
            }
            if let Some(ev) = third {
                self.prefetch_for(ev);
            }
            prefetch(last);
        }
    }

    /// The third stage, one event before `ev` runs: the request slot and
    /// congestion state of the session an arriving frame is for, whose
    /// entry [`prefetch_soon`](Self::prefetch_soon) loaded.
    fn prefetch_deep(&self, ev: Ev) {
        if let Ev::AtHost { host, pkt } = ev {
            let at = self.frame_at(pkt);
            if let (Some(h), Some(frame)) =
                (self.hosts.get(host as usize), self.frames.get(at..at + 128))
            {
                h.ep.prefetch_deep_for_frame(frame);
            }
        }
    }

    /// Starts loading what event `ev` will touch, three events before it
    /// runs: the packet's metadata and frame header, the port, the host's
    /// endpoint fields. A packet's state was last touched when it was
    /// sent, thousands of events earlier, so without this every arrival
    /// waits on memory.
    pub(super) fn prefetch_for(&self, ev: Ev) {
        match ev {
            Ev::AtSwitch { ingress, pkt } => {
                prefetch(self.pkts.as_ptr().wrapping_add(pkt as usize));
                prefetch(self.ports.as_ptr().wrapping_add(ingress as usize));
                if self.cfg.ecn.is_some() {
                    // The IP header, for a CE mark.
                    prefetch(self.frames.as_ptr().wrapping_add(self.frame_at(pkt)));
                }
            }
            Ev::AtHost { host, pkt } => {
                prefetch(self.pkts.as_ptr().wrapping_add(pkt as usize));
                let at = self.frame_at(pkt);
                prefetch(self.frames.as_ptr().wrapping_add(at));
                prefetch(self.frames.as_ptr().wrapping_add(at + 64));
                self.prefetch_host(host);
            }
            Ev::HostTxDone(h) => {
                prefetch(self.ports.as_ptr().wrapping_add(h as usize));
                self.prefetch_host(h);
            }
            Ev::HostTimer(h) | Ev::HostServe(h) => self.prefetch_host(h),
            Ev::PortTxDone(g) | Ev::Credit { port: g, .. } => {
                prefetch(self.ports.as_ptr().wrapping_add(g as usize));
            }
            _ => {}
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

    /// The second stage, two events before `ev` runs: what
    /// [`prefetch_for`](Self::prefetch_for) loaded names what `ev` will
    /// touch next (the session a frame is for, the session the next
    /// transmission serves, the packet at the head of a port's queue, the
    /// sender's REPS entry), which is now loaded in turn. Hints only:
    /// nothing here changes the run.
    pub(super) fn prefetch_soon(&self, ev: Ev) {
        match ev {
            Ev::AtHost { host, pkt } => {
                let at = self.frame_at(pkt);
                let (Some(h), Some(frame)) =
                    (self.hosts.get(host as usize), self.frames.get(at..at + 64))
                else {
                    return;
                };
                h.ep.prefetch_for_frame(frame);
                if self.uplinks > 0 && self.paths.learns() {
                    let ip = &frame[SRC_IP_AT..SRC_IP_AT + 4];
                    let src = u32::from_be_bytes([0, 0, ip[2], ip[3]]);
                    self.paths.prefetch_peer(host as usize, src);
                }
            }
            Ev::HostTxDone(h) | Ev::HostTimer(h) => {
                if let Some(host) = self.hosts.get(h as usize) {
                    host.ep.prefetch_for_transmit();
                }
            }
            Ev::PortTxDone(g) => {
                let Some(p) = self.ports.get(g as usize) else {
                    return;
                };
                if let Some(&pkt) = p.hi.front().or(p.queue.front()) {
                    prefetch(self.pkts.as_ptr().wrapping_add(pkt as usize));
                }
            }
            _ => {}
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

/// Asks the CPU to start loading the cache line at `p`; a hint, never a
/// fault, whatever `p` is.
#[inline(always)]
pub(super) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees and
    // cannot fault, even on an address outside any allocation.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p.cast::<i8>(), core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
