//! Prefetch hints for a caller that knows which endpoint runs next and
//! can ask ahead of time: a simulator with a thousand endpoints on one
//! thread (the fabric lab) finds every session it touches cold in memory,
//! and its run loop knows the next events before it runs them. Hints only:
//! nothing here changes any state (but for where an empty queue's next
//! entry lands, `rewind_tx_queues`), and a wrong or stale hint costs a
//! wasted load, never a different result. A real link's data path never
//! calls them (one endpoint per core keeps its sessions in cache).

use super::client::TX_TS_RING;
use super::endpoint::Endpoint;
use super::hint::{prefetch, prefetch_lines, queue_end, queue_front};
use super::table::Session;
use super::txq::TxDesc;
use crate::wire::{PktType, RpcHeader, ETHERNET_HEADER_LEN, IPV4_HEADER_LEN, UDP_HEADER_LEN};
use std::net::Ipv4Addr;

/// Where the RPC header sits in a frame.
const RPC_AT: usize = ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN;
/// Where the RPC header's destination session number sits in a frame.
const DEST_SESSION_AT: usize = RPC_AT + 8;

impl Endpoint {
    /// Starts loading the endpoint's own fields that the other hints read
    /// (where the session table, the transmit queues and the timers are)
    /// and those `poll_timeout` reads: call it an event or so before them.
    /// Reads nothing.
    #[inline]
    pub fn prefetch_fields(&self) {
        prefetch_lines(&self.table);
        // All of the queues' lines, their two pacers' among them, which
        // `poll_timeout` reads too.
        prefetch_lines(&self.txq);
        prefetch(&self.timers.heap);
        // What else `poll_timeout`, which a simulated host calls after
        // every event, reads (half its time at 1,024 hosts was waiting on
        // these lines).
        prefetch(&self.pause);
    }

    /// Starts loading the session entry `frame` names (its destination
    /// session number), for a `handle_frame` of it soon after, and the
    /// earliest timer, which the caller's `poll_timeout` after it reads.
    /// Reads the frame's header and the table's and heap's bases.
    #[inline]
    pub fn prefetch_for_frame(&self, frame: &[u8]) {
        self.timers.heap.prefetch_next();
        if let Some(b) = frame.get(DEST_SESSION_AT..DEST_SESSION_AT + 2) {
            self.table.prefetch_entry(u16::from_be_bytes([b[0], b[1]]));
        }
        // Where a server's answer to it will be queued.
        prefetch(queue_end(&self.txq.ctrl));
    }

    /// The step after [`prefetch_for_frame`](Self::prefetch_for_frame),
    /// once the session entry it asked for is loaded: the request slot the
    /// frame's request number falls in (either role) and a client's
    /// congestion state. Reads the frame's header and the entry.
    #[inline]
    pub fn prefetch_deep_for_frame(&self, frame: &[u8]) {
        let Some(h) = rpc_header(frame) else {
            return;
        };
        let r = h.req_num();
        match self.table.by_num(h.dest_session()) {
            Some(Session::Server(s)) if !s.slots.is_empty() => {
                prefetch_lines(&s.slots[s.slot_of(r)]);
            }
            Some(Session::Client(c)) if !c.slots.is_empty() => {
                prefetch_lines(&c.slots[(r % c.slots.len() as u64) as usize]);
                if let Some(cc) = &c.cc {
                    prefetch(&**cc);
                }
            }
            _ => {}
        }
    }

    /// The step after [`prefetch_deep_for_frame`](Self::prefetch_deep_for_frame),
    /// once the request slot and congestion state it asked for are
    /// loaded: what an answer to a client request updates beyond them, the
    /// request's SACK maps (selective) and the answered packet's send time
    /// (Timely, NSCC); for a request packet, its slot's out-of-order window
    /// (selective), boxed apart from the slot. Reads the frame's header,
    /// the entry, the slot and the congestion state.
    #[inline]
    pub fn prefetch_answer_for_frame(&self, frame: &[u8]) {
        let Some(h) = rpc_header(frame) else {
            return;
        };
        let c = match self.table.by_num(h.dest_session()) {
            Some(Session::Client(c)) => c,
            Some(Session::Server(s)) if !s.slots.is_empty() => {
                if let Some(w) = s.slots[s.slot_of(h.req_num())].ooo.as_deref() {
                    prefetch(w);
                }
                return;
            }
            _ => return,
        };
        let i = (h.req_num() % c.slots.len().max(1) as u64) as usize;
        let Some(req) = c.slots.get(i).and_then(|s| s.req.as_ref()) else {
            return;
        };
        if let Some(sel) = req.sel.as_deref() {
            prefetch_lines(sel);
        }
        let k = u32::from(h.pkt_num());
        let idx = match h.pkt_type() {
            PktType::CreditReturn => k,
            _ => (req.n_req + k).saturating_sub(1),
        };
        if let Some(ts) = c.cc.as_ref().and_then(|cc| cc.tx_ts.as_ref()) {
            if let Some(row) = ts.get(i) {
                prefetch(&row[idx as usize % TX_TS_RING]);
            }
        }
    }

    /// The first step of a transmission's prefetch, once
    /// [`prefetch_fields`](Self::prefetch_fields) loaded the queues'
    /// fields: the queues' heads (RCCC's credit pacer's too), which
    /// [`prefetch_for_transmit`](Self::prefetch_for_transmit) reads, and
    /// the earliest timer.
    #[inline]
    pub fn prefetch_tx_queues(&self) {
        self.timers.heap.prefetch_next();
        prefetch(queue_front(&self.txq.ctrl));
        prefetch(queue_front(&self.txq.clients));
        // Only a queue with room: an empty one's front is no address.
        if !self.txq.credit.is_empty() {
            prefetch(queue_front(self.txq.credit.waiting()));
        }
    }

    /// Starts loading what the next `poll_transmit` will write from: the
    /// server session of the first queued answer, else the first queued
    /// client session and its timer; the earliest timer; and the server
    /// session RCCC's credit pacer grants next.
    #[inline]
    pub fn prefetch_for_transmit(&self) {
        self.timers.heap.prefetch_next();
        // RCCC's credit pacer releases before anything is sent.
        if let Some(s) = self.txq.credit.waiting().front() {
            self.table.prefetch_entry(s.num);
        }
        if let Some(TxDesc::Answer { session, .. }) = self.txq.ctrl.front() {
            self.table.prefetch_entry(session.num);
        } else if let Some(s) = self.txq.clients.front() {
            self.table.prefetch_entry(s.num);
            self.timers.heap.prefetch_due(s.num);
        }
    }

    /// The step after [`prefetch_for_transmit`](Self::prefetch_for_transmit),
    /// once the session entry it asked for is loaded: the request slot the
    /// next packet comes from (the answer's, or the client's next slot
    /// with work), a client's congestion state, and the receiving slot of
    /// the session RCCC's credit pacer grants next.
    #[inline]
    pub fn prefetch_deep_for_transmit(&self) {
        if let Some(s) = self.txq.credit.waiting().front() {
            if let Some(Session::Server(s)) = self.table.by_num(s.num) {
                // The first slot receiving, which the grant reads.
                if let Some(slot) = s.slots.get(s.receiving.trailing_zeros() as usize) {
                    prefetch_lines(slot);
                }
            }
        }
        if let Some(TxDesc::Answer {
            session, req_num, ..
        }) = self.txq.ctrl.front()
        {
            if let Some(Session::Server(s)) = self.table.by_num(session.num) {
                if !s.slots.is_empty() {
                    prefetch_lines(&s.slots[s.slot_of(*req_num)]);
                }
            }
        } else if let Some(s) = self.txq.clients.front() {
            if let Some(Session::Client(c)) = self.table.by_num(s.num) {
                if let Some(slot) = c.slots.get(c.next_work_slot()) {
                    prefetch_lines(slot);
                }
                if let Some(cc) = &c.cc {
                    prefetch(&**cc);
                }
            }
        }
    }
}

impl Endpoint {
    /// Moves the empty transmit queues' heads back to their buffers'
    /// starts (`TxQueues::rewind`), so the next descriptor lands on a line
    /// the last ones used. Changes no queue's contents or order, hence
    /// nothing the endpoint does; for a caller that runs many endpoints,
    /// after it polled one (the data path never calls it).
    #[inline]
    pub fn rewind_tx_queues(&mut self) {
        self.txq.rewind();
    }

    /// The peer the next `poll_transmit` most likely sends to (the first
    /// queued answer's client, else the first queued client session's
    /// server), for a caller that prefetches its own per-peer state: a
    /// hint, read once [`prefetch_for_transmit`](Self::prefetch_for_transmit)
    /// has loaded the session entry.
    #[inline]
    pub fn next_tx_peer(&self) -> Option<Ipv4Addr> {
        let num = match self.txq.ctrl.front() {
            Some(TxDesc::Answer { session, .. }) => session.num,
            Some(_) => return None,
            None => self.txq.clients.front()?.num,
        };
        self.table.by_num(num).map(|s| s.common().peer.ip)
    }
}

/// The RPC header of `frame`, if it holds one.
#[inline]
fn rpc_header(frame: &[u8]) -> Option<RpcHeader<&[u8]>> {
    RpcHeader::new_checked(frame.get(RPC_AT..)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::HEADERS_LEN;

    #[test]
    fn the_destination_session_is_read_where_the_rpc_header_puts_it() {
        // An RPC header emitted by the wire module: its dest_session at
        // the offset the frame hint reads.
        let mut frame = [0u8; HEADERS_LEN];
        let at = ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN;
        let mut h = crate::wire::RpcHeader::new_unchecked(&mut frame[at..]);
        h.set_dest_session(0x1234);
        assert_eq!(
            u16::from_be_bytes([frame[DEST_SESSION_AT], frame[DEST_SESSION_AT + 1]]),
            0x1234
        );
    }
}
