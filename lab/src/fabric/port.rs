//! A switch port or a NIC, one direction of a link: its queues, when it
//! is free to send, its pause and credit state, and the cache-line layout
//! the run loop's prefetch relies on.

use super::queues;
use std::collections::VecDeque;

/// No packet: an empty queue's [`Port::front`].
pub(super) const NO_PKT: u32 = u32::MAX;

/// Where an egress port's frames go: a host, or a switch (which one, and by
/// which port, is the port's `reverse`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Hop {
    Host(u32),
    Switch,
}

/// One direction of a link, seen from its sending end; also, for switch
/// ports and hosts, the receiving side of the opposite direction.
///
/// Laid out by cache line ([`Port::HOT`]): the first line holds all that a
/// hop reads of the port a packet came in by (without PFC or link
/// credits) and the egress queue it joins; the second, the rest of what
/// sending a frame reads and writes; the third, what only trimming and
/// PFC use. At 1,024 hosts the ports do not stay in cache between two
/// hops, and the run loop's prefetch now loads one line of the ingress
/// and two of the egress, where the fields in Rust's order spanned three
/// or four of each (docs/fabric.md, "A hop's cache lines").
#[derive(Debug)]
#[repr(C, align(64))]
pub(super) struct Port {
    // Line 1: the queue, and the ingress role.
    pub(super) queue: VecDeque<u32>,
    pub(super) queue_bytes: u64,
    pub(super) busy_until: u64,
    /// Bytes buffered in this switch that arrived by this port (PFC).
    pub(super) ingress_bytes: u64,
    /// The switch whose egress this is (`u32::MAX` for a host's NIC).
    pub(super) owner: u32,
    /// Which trimming and ECN thresholds this egress queue takes.
    pub(super) class: queues::QueueClass,
    pub(super) paused: bool,
    // Line 2: sending.
    /// The time of the live `PortTxDone`/`HostTxDone` (`u64::MAX`: none).
    /// An event for another time is stale (the port sent meanwhile).
    pub(super) tx_due: u64,
    /// Serialisation cost in picoseconds per byte.
    pub(super) ps_per_byte: u64,
    pub(super) delay_ns: u64,
    pub(super) to: Hop,
    /// The egress port of the opposite direction (where PFC frames and
    /// credit returns for what arrives here go).
    pub(super) reverse: u32,
    /// An XOFF for this ingress is outstanding.
    pub(super) xoff_sent: bool,
    pub(super) ever_paused: bool,
    /// Frames sent (saturating: only whether any were is read).
    pub(super) sent: u32,
    /// The packet at the head of `queue` ([`NO_PKT`]: it is empty), kept
    /// on this line so that asking what the port sends next (the run
    /// loop's prefetch asks it of every tx-done ahead) reads no line of
    /// the queue's buffer. Kept by [`enqueue`](Self::enqueue) and
    /// [`dequeue`](Self::dequeue).
    pub(super) front: u32,
    /// Link-level credits left (bytes, or frames towards a host).
    pub(super) credits: i64,
    /// Bytes in `hi`: 0 exactly when it is empty (a header is never 0
    /// bytes), so the data path asks this line rather than `hi`'s.
    pub(super) hi_bytes: u64,
    // Line 3: trimming's priority queue, PFC's accounting.
    /// Trimmed headers, served before `queue` (`switch.rs`).
    pub(super) hi: VecDeque<u32>,
    /// PFC: the most `ingress_bytes` may reach, XOFF plus the headroom of
    /// this port's link; more is a headroom overflow.
    pub(super) pfc_limit: u64,
    pub(super) paused_since: u64,
}

// The lines `Port`'s layout promises.
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(offset_of!(Port, paused) < 64 && offset_of!(Port, owner) < 64);
    assert!(offset_of!(Port, tx_due) == 64 && offset_of!(Port, hi_bytes) + 8 <= Port::HOT);
    assert!(offset_of!(Port, hi) == Port::HOT && size_of::<Port>() == 3 * 64);
};

impl Port {
    /// Bytes of the lines a hop of a packet reads or writes (the first
    /// two); the third is trimming's and PFC's.
    pub(super) const HOT: usize = 128;

    /// The packet this port sends next: the priority queue's head, else
    /// the queue's. Asked by `hi_bytes` and `front` (line 2), so that an
    /// empty priority queue's line, and the queue's buffer, are not
    /// touched.
    #[inline]
    pub(super) fn head(&self) -> Option<(u32, bool)> {
        match (self.hi_bytes, self.front) {
            (0, NO_PKT) => None,
            (0, p) => Some((p, false)),
            _ => self.hi.front().map(|&p| (p, true)),
        }
    }

    /// Appends packet `pkt` of `len` bytes to the queue.
    #[inline]
    pub(super) fn enqueue(&mut self, pkt: u32, len: u64) {
        if self.queue.is_empty() {
            self.front = pkt;
        }
        self.queue.push_back(pkt);
        self.queue_bytes += len;
    }

    /// Removes the queue's head, of `len` bytes; the next one becomes
    /// `front` (its slot is the head's neighbour in the buffer, on the
    /// line just read or the next).
    #[inline]
    pub(super) fn dequeue(&mut self, len: u64) {
        self.queue.pop_front();
        self.queue_bytes -= len;
        self.front = self.queue.front().copied().unwrap_or(NO_PKT);
    }

    /// Nanoseconds this port takes to serialise `len` bytes (integer
    /// picoseconds per byte: no division by the rate per packet).
    pub(super) fn ser_ns(&self, len: u64) -> u64 {
        (len * self.ps_per_byte).div_ceil(1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port() -> Port {
        Port {
            queue: VecDeque::new(),
            queue_bytes: 0,
            busy_until: 0,
            ingress_bytes: 0,
            owner: 0,
            class: queues::QueueClass::Normal,
            paused: false,
            tx_due: u64::MAX,
            ps_per_byte: 80,
            delay_ns: 1_000,
            to: Hop::Switch,
            reverse: 0,
            xoff_sent: false,
            ever_paused: false,
            sent: 0,
            front: NO_PKT,
            credits: 0,
            hi_bytes: 0,
            hi: VecDeque::new(),
            pfc_limit: 0,
            paused_since: 0,
        }
    }

    #[test]
    fn the_front_on_the_ports_line_is_the_queues_head_through_wraps() {
        // Pushes and pops that wrap the ring buffer and empty it, against
        // the deque's own head; trimmed headers go first.
        let mut p = port();
        assert_eq!(p.head(), None);
        let (mut next, mut wrapped) = (0u32, false);
        for round in 0..50u32 {
            for _ in 0..round % 7 + 1 {
                p.enqueue(next, 100);
                next += 1;
            }
            for _ in 0..round % 5 + 1 {
                if p.queue.is_empty() {
                    break;
                }
                p.dequeue(100);
            }
            wrapped |= !p.queue.as_slices().1.is_empty();
            assert_eq!(p.head().map(|(k, _)| k), p.queue.front().copied());
            assert_eq!(p.queue_bytes, 100 * p.queue.len() as u64);
        }
        assert!(wrapped, "the ring's buffer wrapped at least once");
        p.hi.push_back(999);
        p.hi_bytes = 64;
        assert_eq!(p.head(), Some((999, true)), "a trimmed header first");
        p.hi.clear();
        p.hi_bytes = 0;
        while !p.queue.is_empty() {
            p.dequeue(100);
        }
        assert_eq!((p.head(), p.front), (None, NO_PKT));
    }
}
