//! Prefetch hints for a caller that knows which endpoint runs next and
//! can ask ahead of time: a simulator with a thousand endpoints on one
//! thread (the fabric lab) finds every session it touches cold in memory,
//! and its run loop knows the next events before it runs them. Hints only:
//! nothing here changes any state, and a wrong or stale hint costs a
//! wasted load, never a different result. A real link's data path never
//! calls them (one endpoint per core keeps its sessions in cache).

use super::endpoint::Endpoint;
use super::hint::{prefetch, prefetch_lines};
use super::table::Session;
use super::txq::TxDesc;
use crate::wire::{RpcHeader, ETHERNET_HEADER_LEN, IPV4_HEADER_LEN, UDP_HEADER_LEN};

/// Where the RPC header sits in a frame.
const RPC_AT: usize = ETHERNET_HEADER_LEN + IPV4_HEADER_LEN + UDP_HEADER_LEN;
/// Where the RPC header's destination session number sits in a frame.
const DEST_SESSION_AT: usize = RPC_AT + 8;

impl Endpoint {
    /// Starts loading the endpoint's own fields that the other two hints
    /// read (where the session table, the transmit queues and the timers
    /// are): call it an event or so before them. Reads nothing.
    #[inline]
    pub fn prefetch_fields(&self) {
        prefetch_lines(&self.table);
        prefetch_lines(&self.txq);
        prefetch(&self.timers.heap);
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
    }

    /// The step after [`prefetch_for_frame`](Self::prefetch_for_frame),
    /// once the session entry it asked for is loaded: the request slot the
    /// frame's request number falls in (either role) and a client's
    /// congestion state. Reads the frame's header and the entry.
    #[inline]
    pub fn prefetch_deep_for_frame(&self, frame: &[u8]) {
        let Some(b) = frame.get(RPC_AT..) else {
            return;
        };
        let Ok(h) = RpcHeader::new_checked(b) else {
            return;
        };
        let r = h.req_num();
        match self.table.by_num(h.dest_session()) {
            Some(Session::Server(s)) if !s.slots.is_empty() => {
                prefetch_lines(&s.slots[(r % s.slots.len() as u64) as usize]);
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

    /// Starts loading what the next `poll_transmit` will write from: the
    /// server session of the first queued answer, else the first queued
    /// client session and its timer; and the earliest timer.
    #[inline]
    pub fn prefetch_for_transmit(&self) {
        self.timers.heap.prefetch_next();
        if let Some(TxDesc::Answer { session, .. }) = self.txq.ctrl.front() {
            self.table.prefetch_entry(session.num);
        } else if let Some(s) = self.txq.clients.front() {
            self.table.prefetch_entry(s.num);
            self.timers.heap.prefetch_due(s.num);
        }
    }
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
