//! Transmit queues: the small descriptors queued by the receive path, the
//! handshake and application commands. Nothing is copied when work is
//! queued; a descriptor names what to send by (session, generation,
//! req_num, pkt_num) and is re-checked when popped, so one whose session or
//! request has moved on is skipped.
//!
//! Order: server answers and handshake packets (`ctrl`) first, since they
//! return credits to peers; then client packets, one per client session per
//! turn (`clients`, round-robin), as credits allow. A client session that
//! must wait for its pacing time waits in `pacer`, in neither queue; a
//! server session waiting for RCCC's credit pacer waits in `credit`.

use super::config::EndpointConfig;
use super::ids::SessionId;
use super::pacing::Pacer;
use super::rccc::CreditPacer;
use crate::wire::{MacAddr, SmRepr};
use std::collections::VecDeque;
use std::net::Ipv4Addr;

/// Descriptors pre-sized per endpoint: a full receive burst of requests
/// each needing an answer fits without growing the queue.
const TX_QUEUE_PRESIZE: usize = 1024;

/// What the server sends in answer to a client packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AnswerKind {
    CreditReturn,
    Response,
    /// The application's error answer (an `ErrorResponse` packet).
    Error,
    /// Selective mode: request packet `pkt` arrived out of order.
    Sack,
    /// Go-back-N with NAKs: request packet `pkt` is the first missing.
    Nak,
    /// Request packet `pkt` arrived trimmed (`trim.rs`): resend it.
    TrimNak,
}

/// One queued control packet.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TxDesc {
    /// Server: a credit return or answer packet for a request of a slot.
    Answer {
        session: SessionId,
        req_num: u64,
        kind: AnswerKind,
        pkt: u16,
    },
    /// Client: the ConnectReq of a Connecting session.
    ConnectReq(SessionId),
    /// Client: the DisconnectReq of a Disconnecting session.
    DisconnectReq(SessionId),
    /// Client: a keepalive of an idle Connected session.
    KeepAlive(SessionId),
    /// DCQCN: a congestion notification to server session's client.
    Cnp(SessionId),
    /// Pause mode: a Pause frame of `us` microseconds (0: XON) to the
    /// peer of a link.
    Pause { link: u32, us: u32 },
    /// An SM reply needing no session state (server side: ConnectResp,
    /// DisconnectResp, refusals).
    SmReply(SmReply),
}

/// A self-contained session-management reply.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SmReply {
    pub dst: (MacAddr, Ipv4Addr, u16),
    pub dest_session: u16,
    pub token: u64,
    pub body: SmRepr,
}

/// The endpoint's two transmit queues, and the sessions waiting for
/// their pacing time.
#[derive(Debug)]
pub(crate) struct TxQueues {
    pub ctrl: VecDeque<TxDesc>,
    /// Client sessions that may have request/RFR packets to send.
    pub clients: VecDeque<SessionId>,
    /// Client sessions held until their pacing time.
    pub pacer: Pacer,
    /// RCCC: server sessions waiting for the credit pacer (`rccc.rs`).
    pub credit: CreditPacer,
}

impl TxQueues {
    pub fn new(cfg: &EndpointConfig) -> Self {
        TxQueues {
            ctrl: VecDeque::with_capacity(TX_QUEUE_PRESIZE),
            clients: VecDeque::with_capacity(TX_QUEUE_PRESIZE),
            pacer: Pacer::new(cfg),
            credit: CreditPacer::new(cfg),
        }
    }

    /// Whether both queues are empty (sessions waiting on the pacer are
    /// not counted: they are not ready).
    pub fn is_empty(&self) -> bool {
        self.ctrl.is_empty() && self.clients.is_empty()
    }

    /// Moves each empty queue's head back to its buffer's start (`clear`
    /// of an empty deque does); what they hold, and its order, is
    /// unchanged. A queue that holds a descriptor or two at a time then
    /// reuses its first cache line instead of walking its whole pre-sized
    /// buffer: nothing on one endpoint per core, where the buffer stays in
    /// cache, but a line out of cache at every turn once one thread runs a
    /// thousand endpoints (the fabric lab, which calls it through
    /// `Endpoint::rewind_tx_queues`, off the data path).
    pub fn rewind(&mut self) {
        if self.ctrl.is_empty() {
            self.ctrl.clear();
        }
        if self.clients.is_empty() {
            self.clients.clear();
        }
    }

    pub fn answer(&mut self, session: SessionId, req_num: u64, kind: AnswerKind, pkt: u32) {
        self.ctrl.push_back(TxDesc::Answer {
            session,
            req_num,
            kind,
            pkt: pkt as u16,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cr(req_num: u64) -> TxDesc {
        TxDesc::Answer {
            session: SessionId { num: 1, gen: 1 },
            req_num,
            kind: AnswerKind::CreditReturn,
            pkt: 0,
        }
    }

    fn req_of(d: Option<TxDesc>) -> Option<u64> {
        match d? {
            TxDesc::Answer { req_num, .. } => Some(req_num),
            _ => None,
        }
    }

    #[test]
    fn a_drained_queue_starts_again_at_its_buffer_start() {
        let mut q = TxQueues::new(&EndpointConfig::default());
        let start = q.ctrl.as_slices().0.as_ptr();
        // One descriptor at a time, as a server answering a client does:
        // without the rewind each would sit one place further on.
        for r in 0..100 {
            q.answer(SessionId { num: 1, gen: 1 }, r, AnswerKind::CreditReturn, 0);
            assert_eq!(q.ctrl.as_slices().0.as_ptr(), start, "descriptor {r}");
            assert_eq!(req_of(q.ctrl.pop_front()), Some(r));
            q.rewind();
        }
        // A queue that holds something keeps it, in order.
        for r in 0..3 {
            q.ctrl.push_back(cr(r));
        }
        assert_eq!(req_of(q.ctrl.pop_front()), Some(0));
        q.rewind();
        q.ctrl.push_back(cr(3));
        let got: Vec<_> = std::iter::from_fn(|| req_of(q.ctrl.pop_front())).collect();
        assert_eq!(got, [1, 2, 3]);
        // Not rewound: the next lands further on; rewound: at the start.
        q.ctrl.push_back(cr(4));
        assert_ne!(q.ctrl.as_slices().0.as_ptr(), start);
        q.ctrl.pop_front();
        q.rewind();
        q.ctrl.push_back(cr(5));
        assert_eq!(q.ctrl.as_slices().0.as_ptr(), start);
        q.ctrl.pop_front();
        q.rewind();
        // The client queue likewise.
        let cstart = q.clients.as_slices().0.as_ptr();
        for n in 0..50 {
            q.clients.push_back(SessionId { num: n, gen: 1 });
            assert_eq!(q.clients.as_slices().0.as_ptr(), cstart);
            assert_eq!(q.clients.pop_front().map(|s| s.num), Some(n));
            q.rewind();
        }
        assert!(q.clients.pop_front().is_none() && q.ctrl.pop_front().is_none());
    }
}
